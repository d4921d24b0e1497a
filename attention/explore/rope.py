"""RopeExplorer: rotary position embedding (RoPE) and ALiBi, as numbers.

RoPE: the same query vector q is placed at every position m and the same key vector k at every
position n; scores[m, n] = rope(q, m) . rope(k, n). When q and k are rotated with the same
layout the score depends only on the offset m - n (constant along each diagonal); rotate them
with different layouts (one "half", one "interleaved") and that property is lost.
ALiBi: no rotation; each head adds -slope_h * distance to its scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from ..masks import causal_mask
from ..positional import alibi_bias, alibi_slopes, apply_rope
from ._util import SEEDS, bounded, bounded_float, check_fields, check_int

__all__ = ["RopeExploration", "RopeParams", "explore_rope"]

ROPE_LAYOUTS = ("half", "interleaved")
ROPE_D_MAX = 64
ROPE_SEQ_MAX = 64
ALIBI_HEADS_MAX = 16
ROPE_BASE_RANGE = (10.0, 1e6)


def last_pair(d_head: int) -> int:
    """The last of the D/2 pairs a head of width D rotates (the params' check and the slider)."""
    return d_head // 2 - 1


def pair_features(d_head: int, pair: int, layout: str) -> tuple[int, int]:
    """The two features that rotate together as pair `pair`: (i, i + D/2) or (2i, 2i + 1)."""
    return (pair, pair + d_head // 2) if layout == "half" else (2 * pair, 2 * pair + 1)


@dataclass(frozen=True)
class RopeParams:
    """Settings of the position explorer.

    d_head: width of q and k (even, 2..64). seq_len: positions 0..T-1 (2..64). base: RoPE's
    base (pair i turns by base^(-2i / D) radians per position). pair: which pair the rotation
    chart follows (0..D/2 - 1). seed: q and k. alibi_heads: heads of the ALiBi panels (1..16).
    """

    d_head: int = bounded(16, 2, ROPE_D_MAX)
    seq_len: int = bounded(16, 2, ROPE_SEQ_MAX)
    base: float = bounded_float(10000.0, *ROPE_BASE_RANGE)
    pair: int = 1
    seed: int = bounded(0, *SEEDS)
    alibi_heads: int = bounded(4, 1, ALIBI_HEADS_MAX)

    def __post_init__(self) -> None:
        check_fields(self)
        if self.d_head % 2:
            raise ValueError(f"d_head: RoPE rotates pairs, so it must be even, got {self.d_head}")
        check_int("pair", self.pair, 0, last_pair(self.d_head))


@dataclass(frozen=True)
class RopeScores:
    """scores[m, n] = rope(q, m) . rope(k, n) for one choice of the two layouts."""

    query_layout: str
    key_layout: str
    scores: Tensor  # (T, T)
    offsets: Tensor  # (2T - 1,) m - n from -(T - 1) to T - 1
    offset_mean: Tensor  # (2T - 1,) mean score on each diagonal m - n = offset
    offset_min: Tensor  # (2T - 1,)
    offset_max: Tensor  # (2T - 1,)
    spread: float  # max over diagonals of (max - min): ~1e-6 when the score is relative
    norm_product: float  # |q| |k|, the largest |score| any rotation can give

    @property
    def name(self) -> str:
        if self.query_layout == self.key_layout:
            return f"q and k both {self.query_layout}"
        return f"q {self.query_layout}, k {self.key_layout} (mixed up)"

    @property
    def relative(self) -> bool:
        """The score depends only on m - n, up to float32 rounding (~1e-6 of |q| |k|)."""
        return self.spread <= 1e-4 * self.norm_product


@dataclass(frozen=True)
class RopeExploration:
    """Everything explore_rope computed."""

    params: RopeParams
    query: Tensor  # (D,)
    key: Tensor  # (D,)
    angles: Tensor  # (D/2,) theta_i = base^(-2i / D), radians per position
    rotated_query: dict[str, Tensor]  # layout -> (T, D) rope(q, m) for m = 0..T-1
    pairing: dict[str, Tensor]  # layout -> (D, D/2) 1 where feature f belongs to pair i
    matched: dict[str, RopeScores]  # layout -> q and k rotated with that layout
    mixed: RopeScores  # q "half", k "interleaved"
    pair_xy: Tensor  # (T, 2) the chosen pair of rope(q, m), "half" layout, against m
    pair_radius: float  # its length, the same at every m
    alibi_slopes: Tensor  # (H,)
    alibi_bias: Tensor  # (H, T, T) -slope_h * |m - n|, the causal part only (0 above)
    alibi_weights: Tensor  # (H, T) softmax over keys of the last query, bias alone, causal
    causal: Tensor  # (T, T) bool, True = may attend: where the ALiBi bias applies
    pair_marks: Tensor  # (2, D, D/2) pairing of "half" then "interleaved", 2 on the chosen pair


def _diagonals(scores: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Mean, min and max of scores (T, T) on each diagonal m - n = offset, in one pass each."""
    t = scores.shape[0]
    offsets = torch.arange(-(t - 1), t)  # (2T - 1,)
    pos = torch.arange(t)
    index = (pos[:, None] - pos[None, :] + t - 1).flatten()  # (T*T,) which diagonal each entry
    flat = scores.flatten()
    stats = [
        torch.zeros(2 * t - 1, dtype=scores.dtype).scatter_reduce(
            0, index, flat, reduce=how, include_self=False
        )
        for how in ("mean", "amin", "amax")
    ]
    return offsets, *stats


def _rope_scores(q: Tensor, k: Tensor, q_layout: str, k_layout: str, base: float) -> RopeScores:
    t = q.shape[0]
    positions = torch.arange(t)
    rq = apply_rope(q, positions, base=base, layout=q_layout)  # (T, D)
    rk = apply_rope(k, positions, base=base, layout=k_layout)  # (T, D)
    scores = rq @ rk.T  # (T, T): row m = query position, column n = key position
    offsets, mean, lo, hi = _diagonals(scores)
    return RopeScores(
        query_layout=q_layout,
        key_layout=k_layout,
        scores=scores,
        offsets=offsets,
        offset_mean=mean,
        offset_min=lo,
        offset_max=hi,
        spread=float((hi - lo).max()),
        norm_product=float(q[0].norm() * k[0].norm()),
    )


@lru_cache(maxsize=8)
def _vectors(d_head: int, seed: int) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(d_head, generator=g), torch.randn(d_head, generator=g)


def _pairing(d_head: int, layout: str) -> Tensor:
    out = torch.zeros(d_head, d_head // 2)
    for i in range(d_head // 2):
        for f in pair_features(d_head, i, layout):
            out[f, i] = 1.0
    return out


def explore_rope(params: RopeParams | None = None) -> RopeExploration:
    """RoPE scores for matched and mixed layouts, one pair's rotation, and ALiBi's biases."""
    p = params or RopeParams()
    t, d = p.seq_len, p.d_head
    q, k = _vectors(d, p.seed)
    qs, ks = q.expand(t, d), k.expand(t, d)  # the same vectors at every position
    positions = torch.arange(t)
    rotated = {lay: apply_rope(qs, positions, base=p.base, layout=lay) for lay in ROPE_LAYOUTS}
    a, b = pair_features(d, p.pair, "half")
    pair_xy = rotated["half"][:, [a, b]]  # (T, 2)
    causal = causal_mask(t)  # (T, T)
    bias = alibi_bias(p.alibi_heads, t, t).masked_fill(~causal, 0.0)  # (H, T, T)
    last = bias[:, -1, :]  # (H, T): the last query sees every key
    pairing = {lay: _pairing(d, lay) for lay in ROPE_LAYOUTS}
    marks = torch.stack([pairing[lay] for lay in ROPE_LAYOUTS])  # (2, D, D/2)
    for panel, lay in enumerate(ROPE_LAYOUTS):
        marks[panel, list(pair_features(d, p.pair, lay)), p.pair] = 2.0
    return RopeExploration(
        params=p,
        query=q,
        key=k,
        angles=p.base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d),
        rotated_query=rotated,
        pairing=pairing,
        matched={lay: _rope_scores(qs, ks, lay, lay, p.base) for lay in ROPE_LAYOUTS},
        mixed=_rope_scores(qs, ks, "half", "interleaved", p.base),
        pair_xy=pair_xy,
        pair_radius=float(torch.hypot(q[a], q[b])),
        alibi_slopes=alibi_slopes(p.alibi_heads),
        alibi_bias=bias,
        alibi_weights=torch.softmax(last, dim=-1),
        causal=causal,
        pair_marks=marks,
    )
