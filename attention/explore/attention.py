"""AttentionExplorer: random tokens projected to q, k, v, through the core's attention, per head.

Tensors drop the batch dimension (B = 1); `shapes` records the shapes the core saw, batch
included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import torch
from torch import Tensor

from ..functional import scaled_dot_product_attention
from ..multihead import merge_heads, split_heads
from ._util import MAX_LEN, MAX_WIDTH, SEEDS, bounded, check_fields, check_int
from .mask import MASK_KINDS, Mask, check_mask_tuple, preset_mask

__all__ = [
    "TEMPERATURE_RANGE",
    "AttentionExploration",
    "AttentionParams",
    "explore_attention",
    "max_heads",
]

TEMPERATURE_RANGE = (0.1, 10.0)


def max_heads(d_k: int) -> int:
    """The most heads of width d_k: H * d_k <= MAX_WIDTH (the params' check and the slider)."""
    return MAX_WIDTH // d_k


@dataclass(frozen=True)
class AttentionParams:
    """Settings of AttentionExplorer. Each of n_heads heads has queries and keys of width d_k.

    d_k is the per-head width D (the width the scores divide by, as in ScalingExplorer); the
    tokens and the merged output are d_model = n_heads * d_k wide (at most MAX_WIDTH).
    """

    seq_len: int = bounded(6, 1, MAX_LEN)  # Tq, number of queries (and of keys in self-attention)
    d_k: int = bounded(16, 1, MAX_WIDTH)  # D, the width of q and k in each head
    n_heads: int = bounded(1, 1, MAX_WIDTH)  # H; the model width is d_model = H * d_k
    mask: str = "none"  # one of MASK_KINDS
    pad_len: int = 1  # "padding": the last pad_len keys are padding
    custom_mask: Mask | None = None  # "custom": (Tq, Tk), True = may attend
    scaled: bool = True  # divide the scores by sqrt(D)
    temperature: float = 1.0  # then divide by the temperature
    seed: int = bounded(0, *SEEDS)
    query_row: int = 0  # the query whose weights the readouts describe
    head: int = 0  # the head shown in the single-head panels
    cross: bool = False  # keys and values from a second sequence of length key_len
    key_len: int = bounded(6, 1, MAX_LEN)

    def __post_init__(self) -> None:
        check_fields(self)
        if self.d_model > MAX_WIDTH:
            raise ValueError(
                f"d_model = n_heads * d_k = {self.n_heads} * {self.d_k} = {self.d_model} exceeds "
                f"{MAX_WIDTH}; choose n_heads <= {max_heads(self.d_k)}"
            )
        if self.mask not in MASK_KINDS:  # not one_of: this message shows the tuple
            raise ValueError(f"mask: expected one of {MASK_KINDS}, got {self.mask!r}")
        check_int("pad_len", self.pad_len, 0, self.tk)
        if self.mask == "custom" and self.custom_mask is not None:
            check_mask_tuple(self.custom_mask, self.seq_len, self.tk)
        lo, hi = TEMPERATURE_RANGE
        if not lo * (1 - 1e-9) <= self.temperature <= hi * (1 + 1e-9):  # a log slider's ends
            raise ValueError(
                f"temperature: expected a value in [{lo}, {hi}], got {self.temperature}"
            )
        check_int("query_row", self.query_row, 0, self.seq_len - 1)
        check_int("head", self.head, 0, self.n_heads - 1)

    @property
    def tk(self) -> int:
        """Number of keys: key_len for cross-attention, seq_len for self-attention."""
        return self.key_len if self.cross else self.seq_len

    @property
    def d_model(self) -> int:
        """M = H * d_k, the width of the tokens and of the merged output."""
        return self.n_heads * self.d_k


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
    # Drawn at the largest sizes and sliced, so adding a token (or, with one head, widening
    # d_k) leaves the existing numbers unchanged: the learner sees the effect of one control.
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(MAX_LEN, MAX_WIDTH, generator=g)  # query-side tokens
    y = torch.randn(MAX_LEN, MAX_WIDTH, generator=g)  # a second sequence for cross-attention
    w = torch.randn(3, MAX_WIDTH, MAX_WIDTH, generator=g)  # W_q, W_k, W_v
    return x, y, w


def explore_attention(params: AttentionParams) -> AttentionExploration:
    """Project random tokens to q, k, v and run the core's scaled dot-product attention.

    q = x W_q, k = s W_k, v = s W_v with s = x (self-attention) or a second sequence (cross);
    x and W are M = H * d_k wide; entries of x and of sqrt(M) * W are N(0, 1), so q and k
    entries have variance 1 and each head's q . k has variance d_k: the reason for dividing
    by sqrt(d_k). scores = q @ k.T * scale, scale = (1 / sqrt(d_k) if scaled else 1) / temperature.
    """
    p = params
    tq, tk, m, h = p.seq_len, p.tk, p.d_model, p.n_heads
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
    scale = (1.0 / math.sqrt(p.d_k) if p.scaled else 1.0) / p.temperature
    raw = q @ k.transpose(-2, -1)  # (1, H, Tq, Tk) the core's scores before scale and mask
    att = scaled_dot_product_attention(q, k, v, None if p.mask == "none" else mask, scale=scale)
    output = merge_heads(att.output)  # (1, Tq, M)

    row = att.weights[0, p.head, p.query_row]  # (Tk,)
    allowed = int(mask[p.query_row].sum())
    full = bool(att.fully_masked[0, p.head, p.query_row])
    shapes = {
        "x (B, Tq, d_model)": (1, tq, m),
        "source (B, Tk, d_model)": (1, tk, m),
        "q (B, H, Tq, d_k)": tuple(q.shape),
        "k (B, H, Tk, d_k)": tuple(k.shape),
        "v (B, H, Tk, d_v)": tuple(v.shape),
        "mask (Tq, Tk)": tuple(mask.shape),
        "scores (B, H, Tq, Tk)": tuple(att.scores.shape),
        "weights (B, H, Tq, Tk)": tuple(att.weights.shape),
        "heads (B, H, Tq, d_v)": tuple(att.output.shape),
        "output (B, Tq, d_model)": tuple(output.shape),
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
