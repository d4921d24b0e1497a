"""Real trained models read by the course's own attention code: maps, heads' jobs, one pair.

    model_maps(ENCODER, text)         every layer's (H, T, T) weights, q and k of a text, cached
    explore_model_view / explore_head_view / explore_neuron    the three views' maths
    sink_share, previous_token_score  one number per head (attention/models/head_scores.py)

Each model is loaded once per kernel (attention.models.cache.pretrained_model), and the maps of
a text once per text (`model_maps`), so every explorer and lesson cell shares them. Loading
SmolLM2 takes a few seconds, one forward pass of 128 tokens about one second on one CPU thread.
What lesson 12 measures on the decoder (induction scores, losses with heads ablated or the mask
changed, a chat answer) is in attention/experiments/.

Nothing here depends on which model it is: the registry (attention.models.pretrained.MODELS)
gives each model's demo text, the model says whether it is causal and rotates q and k
(`model.causal`, `model.rotary`), and its forward pass returns each layer's q and k before and
after RoPE, which the neuron view shows as they are. ENCODER and DECODER name the models that
the views open on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import Tensor

from ..masks import causal_mask
from ..models.cache import MODEL_NAMES, check_model, pretrained_model
from ..models.head_scores import previous_token_score, sink_share
from ..models.pretrained import DECODER, ENCODER, MODELS
from ._util import bounded, check_fields, check_int

__all__ = [
    "DEFAULT_TEXTS",
    "MODEL_MAX_TOKENS",
    "MODEL_NAMES",
    "THUMB_SIZE",
    "HeadSummary",
    "HeadViewExploration",
    "HeadViewParams",
    "ModelMaps",
    "ModelViewExploration",
    "ModelViewParams",
    "NeuronExploration",
    "NeuronParams",
    "encode_text",
    "explore_head_view",
    "explore_model_view",
    "explore_neuron",
    "maps_of_ids",
    "model_maps",
    "model_shape",
    "thumbnail_maps",
]

MODEL_MAX_TOKENS = 128  # longest text the views take: 30 x 9 maps of 128 x 128 are 17.7 MB
THUMB_SIZE = 32  # thumbnails of longer texts are max-pooled down to at most this many cells
DEFAULT_TEXTS = {name: files.demo_text for name, files in MODELS.items()}


def model_shape(name: str) -> tuple[int, int]:
    """(n_layers, n_heads) of a model (loading it, if this kernel has not yet)."""
    cfg = pretrained_model(name)[0].cfg
    return cfg.n_layers, cfg.n_heads


# --- every attention map of a text ------------------------------------------------------------


@dataclass(frozen=True)
class ModelMaps:
    """One forward pass over a text: every head's attention, queries and keys, layer inputs."""

    name: str
    ids: tuple[int, ...]  # T token ids
    tokens: tuple[str, ...]  # T readable tokens
    weights: Tensor  # (L, H, T, T) each row sums to 1; causal models: 0 right of the diagonal
    hidden_states: tuple[Tensor, ...]  # L + 1 x (T, M): the input of layer l is [l]
    causal: bool  # a token sees only itself and earlier tokens (model.causal)
    rotary: bool  # q and k are rotated by their positions (RoPE; model.rotary)
    q_raw: Tensor  # (L, H, T, D) queries before RoPE (q itself without RoPE)
    k_raw: Tensor  # (L, Hkv, T, D) keys before RoPE; Hkv = H unless heads share keys
    q: Tensor  # (L, H, T, D) the queries the scores were made of
    k: Tensor  # (L, Hkv, T, D)

    @property
    def n_layers(self) -> int:
        return self.weights.shape[0]

    @property
    def n_heads(self) -> int:
        return self.weights.shape[1]

    @property
    def seq_len(self) -> int:
        return self.weights.shape[2]


def encode_text(name: str, text: str, max_tokens: int = MODEL_MAX_TOKENS) -> tuple[int, ...]:
    """The token ids of text (MiniLM adds [CLS] ... [SEP]); ValueError if empty or too long."""
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    tok = pretrained_model(name)[1]
    if not tok.encode(text, add_special_tokens=False):  # [CLS] and [SEP] alone are no text
        raise ValueError("text: expected at least one token, got an empty text")
    ids = tuple(tok.encode(text))
    if len(ids) > max_tokens:
        raise ValueError(
            f"text: expected at most {max_tokens} tokens, got {len(ids)}; shorten the text"
        )
    return ids


@lru_cache(maxsize=8)
@torch.no_grad()
def maps_of_ids(name: str, ids: tuple[int, ...]) -> ModelMaps:
    """Run the model once over token ids; keep every map, q and k (cached per ids)."""
    model, tok = pretrained_model(check_model(name))
    out = model(torch.tensor([ids]))

    def stack(part: str) -> Tensor:  # (L, H or Hkv, T, D) of batch item 0
        return torch.stack([getattr(layer, part)[0] for layer in out.layers])

    q, k = stack("q"), stack("k")
    return ModelMaps(
        name=name,
        ids=ids,
        tokens=tuple(tok.tokens(list(ids))),
        weights=torch.stack([a[0] for a in out.attentions]),  # (L, H, T, T)
        hidden_states=tuple(h[0] for h in out.hidden_states),  # L + 1 x (T, M)
        causal=model.causal,
        rotary=model.rotary,
        q_raw=stack("q_raw") if model.rotary else q,
        k_raw=stack("k_raw") if model.rotary else k,
        q=q,
        k=k,
    )


def model_maps(name: str, text: str, max_tokens: int = MODEL_MAX_TOKENS) -> ModelMaps:
    """Every attention map of `text` in model `name` (cached: each text runs once)."""
    return maps_of_ids(check_model(name), encode_text(name, text, max_tokens))


# --- one number per head ----------------------------------------------------------------------


# sink_share, previous_token_score: attention/models/head_scores.py


# --- the model view, the head view --------------------------------------------------------------


def thumbnail_maps(weights: Tensor, size: int = THUMB_SIZE) -> Tensor:
    """(L, H, T, T) -> (L * H, r, r) small maps, r <= size: max over blocks when T > size.

    The maximum keeps a one-token-wide pattern (a diagonal, a sink column) visible where a
    mean would fade it; the large view always shows the exact weights.
    """
    n_layers, n_heads, t, _ = weights.shape
    flat = weights.reshape(n_layers * n_heads, t, t)  # (P, T, T)
    if t <= size:
        return flat
    block = math.ceil(t / size)
    return F.max_pool2d(flat[:, None], block, ceil_mode=True)[:, 0]  # (P, r, r)


@lru_cache(maxsize=8)
def _cached_thumbnails(name: str, ids: tuple[int, ...], size: int) -> Tensor:
    # pooling 270 maps of 128 x 128 costs ~15 ms: once per text, not per head picked
    return thumbnail_maps(maps_of_ids(name, ids).weights, size)


@dataclass(frozen=True)
class ModelHeadParams:
    """A model, a text, and one head of one layer: what the three views' params start with."""

    model: str = ENCODER
    text: str = DEFAULT_TEXTS[ENCODER]
    layer: int = 0
    head: int = 0

    def __post_init__(self) -> None:
        check_model(self.model)
        check_fields(self)  # the fields each subclass adds


@dataclass(frozen=True)
class ModelViewParams(ModelHeadParams):
    """Every head of a model over a text, one head opened large."""

    thumb_size: int = bounded(THUMB_SIZE, 4, MODEL_MAX_TOKENS)


@dataclass(frozen=True)
class HeadSummary:
    """What one head does on this text, in numbers."""

    sink_share: float  # mean weight on the first token (queries 1..T-1)
    previous_token: float  # mean weight on the token just before
    self_weight: float  # mean weight on the query's own token
    max_weight: float  # the largest weight in the map


@dataclass(frozen=True)
class ModelViewExploration:
    params: ModelViewParams
    maps: ModelMaps
    thumbnails: Tensor  # (L * H, r, r) panel p = layer * H + head
    weights: Tensor  # (T, T) the opened head's map
    summary: HeadSummary
    sink_share: Tensor  # (L, H) of every head
    previous_token: Tensor  # (L, H)


def _check_head(maps: ModelMaps, layer: int, head: int) -> None:
    check_int("layer", layer, 0, maps.n_layers - 1)
    check_int("head", head, 0, maps.n_heads - 1)


def _summary(w: Tensor) -> HeadSummary:
    t = w.shape[-1]
    return HeadSummary(
        sink_share=float(sink_share(w)) if t > 1 else 1.0,
        previous_token=float(previous_token_score(w)) if t > 1 else 0.0,
        self_weight=float(torch.diagonal(w).mean()),
        max_weight=float(w.max()),
    )


def explore_model_view(params: ModelViewParams) -> ModelViewExploration:
    """All L x H maps as thumbnails, and the chosen head's full map with its numbers."""
    maps = model_maps(params.model, params.text)
    _check_head(maps, params.layer, params.head)
    w = maps.weights[params.layer, params.head]  # (T, T)
    one = maps.seq_len > 1
    return ModelViewExploration(
        params=params,
        maps=maps,
        thumbnails=_cached_thumbnails(maps.name, maps.ids, params.thumb_size),
        weights=w,
        summary=_summary(w),
        sink_share=sink_share(maps.weights) if one else torch.ones(maps.weights.shape[:2]),
        previous_token=(
            previous_token_score(maps.weights) if one else torch.zeros(maps.weights.shape[:2])
        ),
    )


@dataclass(frozen=True)
class HeadViewParams(ModelHeadParams):
    """One head of one layer over a text; `query` is the token whose top keys are listed."""

    query: int = -1  # -1: none chosen
    top_k: int = bounded(5, 1, MODEL_MAX_TOKENS)


@dataclass(frozen=True)
class HeadViewExploration:
    params: HeadViewParams
    maps: ModelMaps
    weights: Tensor  # (T, T)
    summary: HeadSummary
    top_keys: tuple[tuple[int, str, float], ...]  # the query's top_k (key, token, weight)


def explore_head_view(params: HeadViewParams) -> HeadViewExploration:
    """The chosen head's map, and the keys the chosen query attends to most."""
    maps = model_maps(params.model, params.text)
    _check_head(maps, params.layer, params.head)
    check_int("query", params.query, -1, maps.seq_len - 1)
    w = maps.weights[params.layer, params.head]  # (T, T)
    top: tuple[tuple[int, str, float], ...] = ()
    if params.query >= 0:
        k = min(params.top_k, maps.seq_len)
        values, keys = w[params.query].topk(k)
        top = tuple(
            (int(j), maps.tokens[int(j)], float(v)) for v, j in zip(values, keys, strict=True)
        )
    return HeadViewExploration(params, maps, w, _summary(w), top)


# --- the neuron view: one query-key pair, dimension by dimension ---------------------------------


@dataclass(frozen=True)
class NeuronParams(ModelHeadParams):
    """One query token and one key token in one head of one layer."""

    model: str = DECODER  # a model with RoPE shows q and k before and after the rotation
    text: str = DEFAULT_TEXTS[DECODER]
    query: int = 1
    key: int = 0


@dataclass(frozen=True)
class NeuronExploration:
    """How the score of one (query, key) pair is made: q * k, summed, scaled, softmaxed.

    A model with RoPE (SmolLM2) rotates q and k by their positions before the product; "raw"
    is before the rotation, the plain names after. Without RoPE (MiniLM) both are the same.
    """

    params: NeuronParams
    query_token: str
    key_token: str
    rope: bool  # whether the model rotates q and k
    q_raw: Tensor  # (D,) the query vector of this head, before RoPE
    k_raw: Tensor  # (D,) the key vector (of the key/value head this head shares, if grouped)
    q: Tensor  # (D,) after RoPE (= q_raw without RoPE)
    k: Tensor  # (D,)
    product_raw: Tensor  # (D,) q_raw * k_raw
    product: Tensor  # (D,) q * k: its sum is the score the model uses
    pair_raw: Tensor  # (D/2,) product_raw summed over each RoPE pair (2i, 2i + 1)
    pair: Tensor  # (D/2,) product summed over each pair
    score_raw: float  # sum(product_raw): what the score would be without positions
    score: float  # sum(product) = q . k
    scaled: float  # score / sqrt(D)
    weight: float  # softmax over the query's visible keys; 0 for a masked (future) key
    model_weight: float  # the same weight as the model's forward pass returned it
    masked: bool  # the key is in the query's future (causal model)
    row_scores: Tensor  # (T,) the query's scaled scores over every key; -inf where masked


def _query_key(maps: ModelMaps, layer: int, head: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(q_raw, k_raw, q, k), each (T, D), of one head, as the model's forward pass made them."""
    kv_head = head // (maps.n_heads // maps.k.shape[1])  # grouped-query: the shared key head
    return (
        maps.q_raw[layer, head],
        maps.k_raw[layer, kv_head],
        maps.q[layer, head],
        maps.k[layer, kv_head],
    )


@torch.no_grad()
def explore_neuron(params: NeuronParams) -> NeuronExploration:
    """q, k, q * k and its sum for one pair, before and after RoPE; and the weight it gets."""
    maps = model_maps(params.model, params.text)
    _check_head(maps, params.layer, params.head)
    t = maps.seq_len
    check_int("query", params.query, 0, t - 1)
    check_int("key", params.key, 0, t - 1)
    q_raw, k_raw, q, k = _query_key(maps, params.layer, params.head)  # (T, D) each
    i, j = params.query, params.key
    d = q.shape[-1]
    row = q[i] @ k.T / math.sqrt(d)  # (T,) scaled scores of query i over every key
    if maps.causal:
        row = row.masked_fill(~causal_mask(t)[i], float("-inf"))
    product_raw, product = q_raw[i] * k_raw[j], q[i] * k[j]  # (D,) each
    return NeuronExploration(
        params=params,
        query_token=maps.tokens[i],
        key_token=maps.tokens[j],
        rope=maps.rotary,
        q_raw=q_raw[i],
        k_raw=k_raw[j],
        q=q[i],
        k=k[j],
        product_raw=product_raw,
        product=product,
        pair_raw=product_raw.view(d // 2, 2).sum(-1),
        pair=product.view(d // 2, 2).sum(-1),
        score_raw=float(product_raw.sum()),
        score=float(product.sum()),
        scaled=float(product.sum()) / math.sqrt(d),
        weight=float(torch.softmax(row, -1)[j]),
        model_weight=float(maps.weights[params.layer, params.head, i, j]),
        masked=bool(maps.causal and j > i),
        row_scores=row,
    )
