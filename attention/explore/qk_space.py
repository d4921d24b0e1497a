"""The query-key space of one head: its queries and keys as points of one 2-D picture.

    explore_qk_space(QKSpaceParams("minilm", text, layer=2, head=5))
    explore_qk_space(QKSpaceParams("smollm2", text, layer=4, head=1, before_rope=True))

After AttentionViz (Yeh et al., IEEE VIS 2023): each token of the text gives a query point and
a key point of the head; the two clouds are projected *together* by one PCA, so a query sits
near the keys it scores highly when the dot product follows distance. Before projecting, two
changes that leave every attention weight as it was (AttentionViz's normalisation):

    scale      q' = c q,  k'' = k / c,  c = sqrt(mean|k| / mean|q|)   mean |q'| = mean |k''|
    translate  k' = k'' + v,  v = mean(q') - mean(k'')                mean key = mean query

What this keeps, exactly: q' . k'_j = q . k_j + c (q . v), the same constant added to every score
of query q; so each query's ranking of the keys by dot product, and its softmax weights (over
the keys it may see), are those of the model. What it does not keep: dot products between two
queries or two keys, and distances: |q' - k'_j|^2 = |q'|^2 + |k'_j|^2 - 2 q' . k'_j orders the
keys as the dot product does only where keys have equal norms. The 2-D PCA then keeps the two
directions of largest spread (`explained`), not the scores. `nearest_agrees` measures how often
the picture still tells the truth: the key nearest a query (in the plane, and in all D
dimensions) is the key it attends to most (`nearest_by_chance`: how often a key picked at random
among those the query sees would be).

The model runs once per (model, text) (model_view.model_maps, cached); a layer, head or
before/after-RoPE change only normalises and projects one head's 2T points (cached too), so a
slider moves in milliseconds. SmolLM2 rotates q and k by their positions (RoPE): "after" is what
its scores are made of; "before" shows the vectors as the projections made them, while the
weights (the model's own) still come from the rotated ones. Its 9 query heads share 3 key heads
(grouped-query attention): head h reads the keys of key head h // 3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from ..masks import causal_mask
from ._util import bounded, check_int, flag
from .model_view import ModelHeadParams, ModelMaps, encode_text, maps_of_ids

__all__ = ["QK_MAX_TOKENS", "QKSpaceExploration", "QKSpaceParams", "explore_qk_space"]

QK_MAX_TOKENS = 64  # longest text the picture takes: 128 points, each still findable by hover
QK_TOP_KEYS = 5  # keys the result lists for the chosen query


@dataclass(frozen=True)
class QKSpaceParams(ModelHeadParams):
    """A model, a text, one head of one layer; q and k before or after RoPE; a chosen query."""

    before_rope: bool = flag(False)  # SmolLM2 only: q and k before the rotation by positions
    query: int = bounded(-1, -1, QK_MAX_TOKENS - 1)  # the query whose top keys are listed; -1: none


@dataclass(frozen=True)
class Normalised:
    """AttentionViz's normalisation of one head's queries and keys (the module docstring)."""

    q: Tensor  # (T, D) c * q
    k: Tensor  # (T, D) k / c + shift
    scale: float  # c
    shift: Tensor  # (D,) v, added to every key after scaling


@dataclass(frozen=True)
class QKSpaceExploration:
    """Queries and keys of one head as 2-D points, with the model's weights between them."""

    params: QKSpaceParams
    tokens: tuple[str, ...]  # T readable tokens: point i of the queries and of the keys
    causal: bool  # query i sees keys 0..i only (SmolLM2)
    rotary: bool  # the model rotates q and k (RoPE)
    kv_head: int  # the key head this head reads (= head unless heads share keys)
    n_kv_heads: int  # key heads of the layer (fewer than its heads: grouped-query attention)
    q: Tensor  # (T, D) the head's queries as shown (before or after RoPE)
    k: Tensor  # (T, D) its keys
    normalised: Normalised
    points: Tensor  # (2T, 2) PCA of the normalised [queries; keys]: queries first
    components: Tensor  # (D, 2) the two principal directions (unit, orthogonal)
    explained: tuple[float, float]  # share of the 2T points' variance along each direction
    weights: Tensor  # (T, T) the model's attention weights: row i = query i over the keys
    nearest_agrees: tuple[float, float]  # share of queries whose nearest key is their top key:
    # (in the plane, in all D dimensions), among the keys each query may see
    nearest_by_chance: float  # the same share if the nearest key were a visible key at random
    top_keys: tuple[tuple[int, str, float], ...]  # the chosen query's (key, token, weight)

    @property
    def queries(self) -> Tensor:
        """(T, 2) the queries' points."""
        return self.points[: len(self.tokens)]

    @property
    def keys(self) -> Tensor:
        """(T, 2) the keys' points."""
        return self.points[len(self.tokens) :]


def head_qk(maps: ModelMaps, layer: int, head: int, before_rope: bool) -> tuple[Tensor, Tensor]:
    """(q, k), each (T, D), of one head as the model's forward pass made them.

    The key head of a query head is head // (H / Hkv) (grouped-query attention).
    """
    kv_head = head // (maps.n_heads // maps.k.shape[1])
    if before_rope:
        return maps.q_raw[layer, head], maps.k_raw[layer, kv_head]
    return maps.q[layer, head], maps.k[layer, kv_head]


def attention_weights(q: Tensor, k: Tensor, causal: bool) -> Tensor:
    """softmax(q @ k.T / sqrt(D)) over each query's visible keys: (T, D), (T, D) -> (T, T)."""
    scores = q @ k.T / math.sqrt(q.shape[-1])  # (T, T)
    if causal:
        scores = scores.masked_fill(~causal_mask(q.shape[0]), float("-inf"))
    return torch.softmax(scores, dim=-1)


def normalise(q: Tensor, k: Tensor) -> Normalised:
    """Scale q by c and k by 1/c so their mean norms match, then move the keys' mean onto the
    queries' mean (AttentionViz). Each q' . k'_j is q . k_j plus a constant per query."""
    q_norm, k_norm = q.norm(dim=-1).mean(), k.norm(dim=-1).mean()  # () each
    if not (q_norm > 0 and k_norm > 0):
        raise ValueError("q, k: expected non-zero vectors, got a head whose queries or keys are 0")
    c = float(torch.sqrt(k_norm / q_norm))
    q2, k2 = q * c, k / c  # (T, D) each
    shift = q2.mean(0) - k2.mean(0)  # (D,)
    return Normalised(q2, k2 + shift, c, shift)


def pca_2d(x: Tensor) -> tuple[Tensor, Tensor, tuple[float, float]]:
    """The points x (N, D) on their two principal directions: (N, 2), (D, 2), variance shares.

    Centred on the mean of x; each direction's sign is chosen so that its largest entry (in
    absolute value) is positive, so the same points always give the same picture.
    """
    centred = x - x.mean(0)  # (N, D)
    _, s, vh = torch.linalg.svd(centred.double(), full_matrices=False)  # vh: (r, D)
    directions = vh[:2].T  # (D, 2); r >= 2 as N >= 2
    biggest = directions.abs().argmax(0)  # (2,)
    signs = torch.sign(directions[biggest, torch.arange(2)])  # (2,)
    directions = directions * torch.where(signs == 0, 1.0, signs)
    total = float((s**2).sum())
    shares = tuple(float(v) / total if total > 0 else 0.0 for v in s[:2] ** 2)
    return (centred.double() @ directions).float(), directions.float(), shares  # type: ignore[return-value]


def _nearest_agrees(qs: Tensor, ks: Tensor, weights: Tensor, causal: bool) -> float:
    """Share of queries whose nearest visible key (Euclidean, in qs/ks' space) is their top key."""
    t = qs.shape[0]
    dist = torch.cdist(qs.double(), ks.double())  # (T, T)
    w = weights.clone()
    if causal:
        hidden = ~causal_mask(t)
        dist = dist.masked_fill(hidden, float("inf"))
        w = w.masked_fill(hidden, float("-inf"))
    return float((dist.argmin(-1) == w.argmax(-1)).double().mean())


@dataclass(frozen=True)
class _Projection:
    q: Tensor
    k: Tensor
    normalised: Normalised
    points: Tensor
    components: Tensor
    explained: tuple[float, float]
    nearest_agrees: tuple[float, float]


@lru_cache(maxsize=64)
@torch.no_grad()
def _project(name: str, ids: tuple[int, ...], layer: int, head: int, before: bool) -> _Projection:
    # once per head and setting: a click on a query only reads the cached numbers
    maps = maps_of_ids(name, ids)
    q, k = head_qk(maps, layer, head, before)  # (T, D) each
    n = normalise(q, k)
    points, components, explained = pca_2d(torch.cat([n.q, n.k]))  # (2T, 2)
    t = q.shape[0]
    w = maps.weights[layer, head]  # (T, T)
    agrees = (
        _nearest_agrees(points[:t], points[t:], w, maps.causal),
        _nearest_agrees(n.q, n.k, w, maps.causal),
    )
    return _Projection(q, k, n, points, components, explained, agrees)


def explore_qk_space(params: QKSpaceParams) -> QKSpaceExploration:
    """One head's queries and keys, normalised and projected together to 2-D, with weights."""
    maps = maps_of_ids(params.model, encode_text(params.model, params.text, QK_MAX_TOKENS))
    check_int("layer", params.layer, 0, maps.n_layers - 1)
    check_int("head", params.head, 0, maps.n_heads - 1)
    if params.before_rope and not maps.rotary:
        raise ValueError(
            f"before_rope: expected False for {params.model!r}, which has no RoPE (q and k are "
            "never rotated), got True"
        )
    t = maps.seq_len
    check_int("query", params.query, -1, t - 1)
    p = _project(maps.name, maps.ids, params.layer, params.head, params.before_rope)
    w = maps.weights[params.layer, params.head]  # (T, T)
    top: tuple[tuple[int, str, float], ...] = ()
    if params.query >= 0:
        values, keys = w[params.query].topk(min(QK_TOP_KEYS, t))
        top = tuple(
            (int(j), maps.tokens[int(j)], float(v)) for v, j in zip(values, keys, strict=True)
        )
    return QKSpaceExploration(
        params=params,
        tokens=maps.tokens,
        causal=maps.causal,
        rotary=maps.rotary,
        kv_head=params.head // (maps.n_heads // maps.k.shape[1]),
        n_kv_heads=maps.k.shape[1],
        **vars(p),  # q, k, normalised, points, components, explained, nearest_agrees
        weights=w,
        nearest_by_chance=(
            float((1 / torch.arange(1, t + 1, dtype=torch.float64)).mean())
            if maps.causal
            else 1 / t
        ),
        top_keys=top,
    )
