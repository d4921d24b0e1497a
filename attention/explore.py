"""Pure computations behind the attention, mask and token explorers.

Each explorer is a frozen params dataclass -> a pure function -> a frozen result dataclass, so
a notebook can call the function without any widget, and a test can compare a widget's view
with the function's result for the same params. Tensors drop the batch dimension (B = 1);
`shapes` records the shapes the core saw, batch included.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass, field
from functools import lru_cache

import torch
from torch import Tensor

from .functional import scaled_dot_product_attention
from .masks import (
    causal_mask,
    mask_to_valid_lens,
    padding_mask,
    to_additive_mask,
    to_key_padding_mask,
)
from .multihead import MultiHeadAttention, divisors, merge_heads, split_heads
from .positional import sinusoidal_positional_encoding

MASK_KINDS = ("none", "causal", "padding", "custom")
MAX_LEN = 64  # longest query or key sequence the explorers offer
MAX_WIDTH = 256  # widest d_k
TEMPERATURE_RANGE = (0.1, 10.0)

Mask = tuple[tuple[bool, ...], ...]  # (Tq, Tk) nested tuples, True = may attend: hashable


def _check_int(name: str, value: int, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name}: expected an int in [{lo}, {hi}], got {value!r}")


def _check_mask_tuple(mask: Mask, tq: int, tk: int) -> None:
    shape = (len(mask), len(mask[0]) if mask else 0)
    if shape != (tq, tk) or any(len(row) != tk for row in mask):
        raise ValueError(f"custom_mask: expected {tq} rows of {tk} bools, got shape {shape}")


def mask_to_tuple(mask: Tensor) -> Mask:
    """A (Tq, Tk) bool tensor -> nested tuples, for a frozen params dataclass."""
    return tuple(tuple(bool(x) for x in row) for row in mask.tolist())


def preset_mask(kind: str, tq: int, tk: int, pad_len: int = 0) -> Tensor:
    """The (Tq, Tk) bool mask (True = may attend) of a preset, built by the core's functions.

    "none": all True; "causal": query i sees keys j <= i; "padding": the last pad_len keys are
    padding, hidden from every query.
    """
    if kind == "none":
        return torch.ones(tq, tk, dtype=torch.bool)
    if kind == "causal":
        return causal_mask(tq, tk)  # (Tq, Tk)
    if kind == "padding":
        _check_int("pad_len", pad_len, 0, tk)
        return padding_mask([tk - pad_len], tk)[0].expand(tq, tk)  # (1, Tk) -> (Tq, Tk)
    raise ValueError(f"mask: expected one of ('none', 'causal', 'padding'), got {kind!r}")


# --- AttentionExplorer ------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionParams:
    """Settings of AttentionExplorer. Q and K have width d_k, split into n_heads heads."""

    seq_len: int = 6  # Tq, number of queries (and of keys in self-attention)
    d_k: int = 16  # width of q and k before the split into heads, M
    n_heads: int = 1  # H, must divide d_k; each head has width D = d_k / H
    mask: str = "none"  # one of MASK_KINDS
    pad_len: int = 1  # "padding": the last pad_len keys are padding
    custom_mask: Mask | None = None  # "custom": (Tq, Tk), True = may attend
    scaled: bool = True  # divide the scores by sqrt(D)
    temperature: float = 1.0  # then divide by the temperature
    seed: int = 0
    query_row: int = 0  # the query whose weights the readouts describe
    head: int = 0  # the head shown in the single-head panels
    cross: bool = False  # keys and values from a second sequence of length key_len
    key_len: int = 6

    def __post_init__(self) -> None:
        _check_int("seq_len", self.seq_len, 1, MAX_LEN)
        _check_int("key_len", self.key_len, 1, MAX_LEN)
        _check_int("d_k", self.d_k, 1, MAX_WIDTH)
        if self.n_heads not in divisors(self.d_k):
            raise ValueError(
                f"d_k={self.d_k} is not divisible by n_heads={self.n_heads}; "
                f"choose n_heads from {divisors(self.d_k)}"
            )
        if self.mask not in MASK_KINDS:
            raise ValueError(f"mask: expected one of {MASK_KINDS}, got {self.mask!r}")
        _check_int("pad_len", self.pad_len, 0, self.tk)
        if self.mask == "custom" and self.custom_mask is not None:
            _check_mask_tuple(self.custom_mask, self.seq_len, self.tk)
        lo, hi = TEMPERATURE_RANGE
        if not lo * (1 - 1e-9) <= self.temperature <= hi * (1 + 1e-9):  # a log slider's ends
            raise ValueError(
                f"temperature: expected a value in [{lo}, {hi}], got {self.temperature}"
            )
        _check_int("seed", self.seed, 0, 2**31 - 1)
        _check_int("query_row", self.query_row, 0, self.seq_len - 1)
        _check_int("head", self.head, 0, self.n_heads - 1)

    @property
    def tk(self) -> int:
        """Number of keys: key_len for cross-attention, seq_len for self-attention."""
        return self.key_len if self.cross else self.seq_len

    @property
    def d_head(self) -> int:
        return self.d_k // self.n_heads


@dataclass(frozen=True)
class AttentionExploration:
    """Every stage of one AttentionExplorer computation (batch dimension dropped)."""

    params: AttentionParams
    query_tokens: tuple[str, ...]  # Tq names: q0, q1, ...
    key_tokens: tuple[str, ...]  # Tk names: k0, k1, ...
    q: Tensor  # (H, Tq, D) queries, per head
    k: Tensor  # (H, Tk, D)
    v: Tensor  # (H, Tk, D)
    raw_scores: Tensor  # (H, Tq, Tk) q @ k.T: no scale, no mask
    scores: Tensor  # (H, Tq, Tk) times scale; -inf where masked
    weights: Tensor  # (H, Tq, Tk) softmax over keys; 0 where masked
    fully_masked: Tensor  # (H, Tq) bool, rows that may attend to nothing
    mask: Tensor  # (Tq, Tk) bool, True = may attend (all True for "none")
    heads: Tensor  # (H, Tq, D) each head's output
    output: Tensor  # (Tq, M) heads merged
    scale: float  # the factor applied to q @ k.T
    row_entropy: float  # nats, of weights[head, query_row]
    max_entropy: float  # log(number of keys that row may attend to); 0 if none
    max_weight: float  # largest weight in that row
    argmax_key: int  # its key, -1 for a fully masked row
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)


@lru_cache(maxsize=8)
def _draws(seed: int) -> tuple[Tensor, ...]:
    # Drawn at the largest sizes and sliced, so adding a token or widening d_k leaves the
    # existing numbers unchanged: the learner sees only the effect of the control they moved.
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(MAX_LEN, MAX_WIDTH, generator=g)  # query-side tokens
    y = torch.randn(MAX_LEN, MAX_WIDTH, generator=g)  # a second sequence for cross-attention
    w = torch.randn(3, MAX_WIDTH, MAX_WIDTH, generator=g)  # W_q, W_k, W_v
    return x, y, w


def explore_attention(params: AttentionParams) -> AttentionExploration:
    """Project random tokens to q, k, v and run the core's scaled dot-product attention.

    q = x W_q, k = s W_k, v = s W_v with s = x (self-attention) or a second sequence (cross);
    entries of x and of sqrt(M) * W are N(0, 1), so q and k entries have variance 1 and q . k
    has variance D: the reason for dividing by sqrt(D).
    scores = q @ k.T * scale, scale = (1 / sqrt(D) if scaled else 1) / temperature.
    """
    p = params
    tq, tk, m, h = p.seq_len, p.tk, p.d_k, p.n_heads
    x_all, y_all, w_all = _draws(p.seed)
    x = x_all[:tq, :m]  # (Tq, M)
    source = (y_all if p.cross else x_all)[:tk, :m]  # (Tk, M)
    w_q, w_k, w_v = w_all[:, :m, :m] / math.sqrt(m)  # each (M, M)
    q = split_heads((x @ w_q)[None], h)  # (1, H, Tq, D)
    k = split_heads((source @ w_k)[None], h)  # (1, H, Tk, D)
    v = split_heads((source @ w_v)[None], h)  # (1, H, Tk, D)

    if p.mask == "custom":
        mask = torch.tensor(p.custom_mask) if p.custom_mask else torch.ones(tq, tk, dtype=bool)
    else:
        mask = preset_mask(p.mask, tq, tk, p.pad_len)  # (Tq, Tk)
    scale = (1.0 / math.sqrt(p.d_head) if p.scaled else 1.0) / p.temperature
    raw = q @ k.transpose(-2, -1)  # (1, H, Tq, Tk) the core's scores before scale and mask
    att = scaled_dot_product_attention(q, k, v, None if p.mask == "none" else mask, scale=scale)
    output = merge_heads(att.output)  # (1, Tq, M)

    row = att.weights[0, p.head, p.query_row]  # (Tk,)
    allowed = int(mask[p.query_row].sum())
    full = bool(att.fully_masked[0, p.head, p.query_row])
    shapes = {
        "x (B, Tq, M)": (1, tq, m),
        "source (B, Tk, M)": (1, tk, m),
        "q (B, H, Tq, D)": tuple(q.shape),
        "k (B, H, Tk, D)": tuple(k.shape),
        "v (B, H, Tk, D)": tuple(v.shape),
        "mask (Tq, Tk)": tuple(mask.shape),
        "scores (B, H, Tq, Tk)": tuple(att.scores.shape),
        "weights (B, H, Tq, Tk)": tuple(att.weights.shape),
        "heads (B, H, Tq, D)": tuple(att.output.shape),
        "output (B, Tq, M)": tuple(output.shape),
    }
    positive = row[row > 0]
    return AttentionExploration(
        params=p,
        query_tokens=tuple(f"q{i}" for i in range(tq)),
        key_tokens=tuple(f"k{j}" for j in range(tk)),
        q=q[0],
        k=k[0],
        v=v[0],
        raw_scores=raw[0],
        scores=att.scores[0],
        weights=att.weights[0],
        fully_masked=att.fully_masked[0],
        mask=mask,
        heads=att.output[0],
        output=output[0],
        scale=scale,
        row_entropy=max(0.0, float(-(positive * positive.log()).sum())),
        max_entropy=math.log(allowed) if allowed else 0.0,
        max_weight=float(row.max()),
        argmax_key=-1 if full else int(row.argmax()),
        shapes=shapes,
    )


# --- MaskExplorer -----------------------------------------------------------------------------


@dataclass(frozen=True)
class MaskParams:
    """A (Tq, Tk) mask to show in every convention, and the seed of the q, k, v it masks."""

    mask: Mask = ((True,) * 5,) * 5
    seed: int = 0
    d: int = 4  # width of the random q, k, v

    def __post_init__(self) -> None:
        tq = len(self.mask)
        tk = len(self.mask[0]) if tq else 0
        _check_int("Tq", tq, 1, MAX_LEN)
        _check_int("Tk", tk, 1, MAX_LEN)
        _check_mask_tuple(self.mask, tq, tk)
        _check_int("seed", self.seed, 0, 2**31 - 1)
        _check_int("d", self.d, 1, MAX_WIDTH)


@dataclass(frozen=True)
class MaskConventions:
    """One mask in each convention a learner meets, and the attention it produces."""

    params: MaskParams
    mask: Tensor  # (Tq, Tk) bool, ours and SDPA's: True = may attend
    additive: Tensor  # (Tq, Tk) float: 0 = may attend, -inf = blocked
    key_padding_mask: Tensor | None  # (B, Tk) = (1, Tk), True = ignore; None if rows differ
    key_padding_note: str  # what it means, or why this mask has none
    valid_lens: Tensor | None  # (B, Tq) = (1, Tq) keys each query sees; None if not a prefix
    valid_lens_note: str
    scores: Tensor  # (Tq, Tk) scaled, -inf where masked
    weights: Tensor  # (Tq, Tk)
    fully_masked: Tensor  # (Tq,) bool


def explore_mask(params: MaskParams) -> MaskConventions:
    """Convert the mask with the core's converters and attend random q, k, v through it."""
    mask = torch.tensor(params.mask, dtype=torch.bool)  # (Tq, Tk)
    tq, tk = mask.shape
    additive = to_additive_mask(mask)  # (Tq, Tk)
    if bool((mask == mask[:1]).all()):
        key_padding = to_key_padding_mask(mask[:1])  # (1, Tk), True = ignore
        kp_note = "every query hides the same keys, so one row (B, Tk) says it all"
    else:
        key_padding = None
        kp_note = (
            "rows differ, so no key_padding_mask exists: it hides the same keys from every "
            "query; nn.MultiheadAttention takes such a mask as attn_mask (True = blocked)"
        )
    try:
        # (1, Tq); the core reads a (1, 1, Tk) mask as a key mask and returns (1,): reshape
        valid_lens = mask_to_valid_lens(mask[None]).reshape(1, tq)
        vl_note = "each query sees its first valid_lens keys"
    except ValueError as exc:
        valid_lens, vl_note = None, str(exc)
    g = torch.Generator().manual_seed(params.seed)
    q = torch.randn(tq, params.d, generator=g)  # (Tq, D)
    k = torch.randn(tk, params.d, generator=g)  # (Tk, D)
    v = torch.randn(tk, params.d, generator=g)  # (Tk, D)
    att = scaled_dot_product_attention(q, k, v, mask)
    return MaskConventions(
        params=params,
        mask=mask,
        additive=additive,
        key_padding_mask=key_padding,
        key_padding_note=kp_note,
        valid_lens=valid_lens,
        valid_lens_note=vl_note,
        scores=att.scores,
        weights=att.weights,
        fully_masked=att.fully_masked,
    )


# --- TokenAttentionView -----------------------------------------------------------------------

DEFAULT_SENTENCE = "The animal didn't cross the street because it was too tired"


def tokenize(sentence: str) -> tuple[str, ...]:
    """Split into words (keeping "didn't" whole) and punctuation marks."""
    return tuple(re.findall(r"\w+(?:'\w+)?|[^\w\s]", sentence))


@dataclass(frozen=True)
class TokenModelParams:
    """A small untrained self-attention layer over a typed sentence (deterministic)."""

    sentence: str = DEFAULT_SENTENCE
    d_model: int = 32
    n_heads: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        n = len(tokenize(self.sentence))
        if not 1 <= n <= MAX_LEN:
            raise ValueError(f"sentence: expected 1 to {MAX_LEN} tokens, got {n}")
        _check_int("d_model", self.d_model, 1, MAX_WIDTH)
        if self.n_heads not in divisors(self.d_model):
            raise ValueError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                f"choose n_heads from {divisors(self.d_model)}"
            )
        _check_int("seed", self.seed, 0, 2**31 - 1)


@dataclass(frozen=True)
class TokenAttention:
    tokens: tuple[str, ...]  # T tokens
    weights: Tensor  # (H, T, T) self-attention weights


QK_GAIN = 1.5  # std of W_q, W_k entries is QK_GAIN / sqrt(d_model)


@lru_cache(maxsize=16)
@torch.no_grad()
def _token_layer(d_model: int, n_heads: int, seed: int) -> MultiHeadAttention:
    # nn.Linear's default init gives scores so small that every row is nearly uniform (mean
    # largest weight 0.16 on the default sentence); a larger W_q, W_k spreads them as a trained
    # layer's are (0.59), so the lines have something to show.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = MultiHeadAttention(d_model, n_heads).eval()
        for proj in (layer.q_proj, layer.k_proj):
            proj.weight.normal_(0.0, QK_GAIN / math.sqrt(d_model))
    return layer


def _embed(token: str, d_model: int, seed: int) -> Tensor:
    # The same word (ignoring case) always gets the same vector: a stand-in for a learned table.
    g = torch.Generator().manual_seed(zlib.crc32(token.lower().encode()) ^ seed)
    return torch.randn(d_model, generator=g)  # (M,)


@torch.no_grad()
def token_self_attention(params: TokenModelParams) -> TokenAttention:
    """Embed each token (+ sinusoidal positions) and run one untrained MultiHeadAttention."""
    tokens = tokenize(params.sentence)
    m = params.d_model
    emb = torch.stack([_embed(t, m, params.seed) for t in tokens])  # (T, M)
    x = emb + sinusoidal_positional_encoding(len(tokens), m)  # (T, M)
    result = _token_layer(m, params.n_heads, params.seed)(x[None])
    return TokenAttention(tokens=tokens, weights=result.weights[0])  # (H, T, T)


def as_head_weights(weights: Tensor) -> Tensor:
    """Accept (Tq, Tk), (H, Tq, Tk) or (1, H, Tq, Tk) weights -> (H, Tq, Tk) float.

    Raises:
        TypeError: not a tensor (numpy arrays and lists are converted).
        ValueError: another rank, an empty tensor, or a batch larger than 1.
    """
    w = torch.as_tensor(weights, dtype=torch.float32)
    if w.dim() == 4:
        if w.shape[0] != 1:
            raise ValueError(f"weights: expected batch 1 in (B, H, Tq, Tk), got {tuple(w.shape)}")
        w = w[0]
    if w.dim() == 2:
        w = w[None]  # (1, Tq, Tk)
    if w.dim() != 3 or w.numel() == 0:
        raise ValueError(
            f"weights: expected (Tq, Tk), (H, Tq, Tk) or (1, H, Tq, Tk), got {tuple(w.shape)}"
        )
    return w


@dataclass(frozen=True)
class TokenView:
    """What TokenAttentionView shows: one head's weights between two token lists."""

    query_tokens: tuple[str, ...]  # Tq
    key_tokens: tuple[str, ...]  # Tk
    weights: Tensor  # (H, Tq, Tk) every head
    head: int  # the head drawn

    @property
    def head_weights(self) -> Tensor:
        """(Tq, Tk) weights of the chosen head."""
        return self.weights[self.head]


def token_view(
    weights: Tensor,
    query_tokens: tuple[str, ...],
    key_tokens: tuple[str, ...] | None = None,
    head: int = 0,
) -> TokenView:
    """Check weights against the tokens and pick a head.

    Raises:
        ValueError: token counts that differ from Tq / Tk, or a head outside [0, H).
    """
    w = as_head_weights(weights)  # (H, Tq, Tk)
    n_heads, tq, tk = w.shape
    key_tokens = query_tokens if key_tokens is None else key_tokens
    if len(query_tokens) != tq:
        raise ValueError(
            f"tokens: expected {tq} query tokens for weights {tuple(w.shape)}, "
            f"got {len(query_tokens)}"
        )
    if len(key_tokens) != tk:
        raise ValueError(
            f"key_tokens: expected {tk} key tokens for weights {tuple(w.shape)}, "
            f"got {len(key_tokens)}"
        )
    _check_int("head", head, 0, n_heads - 1)
    return TokenView(tuple(map(str, query_tokens)), tuple(map(str, key_tokens)), w, head)
