"""HeadsExplorer: multi-head attention step by step, and again with the transpose forgotten.

The wrong path splits the heads with q.view(B, H, T, D) instead of
q.view(B, T, H, D).transpose(1, 2): the same shapes, scrambled contents.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .._checks import check_divisible
from ..functional import scaled_dot_product_attention
from ..multihead import divisors
from ._util import SEEDS, bounded, check_fields, seeded_mha

__all__ = [
    "HEADS_BATCH_MAX",
    "HEADS_D_MODELS",
    "HEADS_MAX",
    "HEADS_SEQ_MAX",
    "HeadsExploration",
    "HeadsParams",
    "HeadsPath",
    "explore_heads",
    "head_choices",
]

HEADS_D_MODELS = (4, 6, 8, 12, 16, 24, 32, 48, 64)  # widths the heads explorer offers
HEADS_MAX = 16  # more heads than this do not fit as small multiples
HEADS_SEQ_MAX = 16
HEADS_BATCH_MAX = 4


def head_choices(d_model: int) -> list[int]:
    """The head counts the heads explorer offers for a width: divisors up to HEADS_MAX."""
    return [h for h in divisors(d_model) if h <= HEADS_MAX]


@dataclass(frozen=True)
class HeadsParams:
    """Settings of the heads explorer: d_model from HEADS_D_MODELS, n_heads dividing it."""

    d_model: int = bounded(16, 1, max(HEADS_D_MODELS), choices=HEADS_D_MODELS)
    n_heads: int = bounded(4, 1, HEADS_MAX)
    seq_len: int = bounded(6, 1, HEADS_SEQ_MAX)
    batch: int = bounded(2, 1, HEADS_BATCH_MAX)
    seed: int = bounded(0, *SEEDS)

    def __post_init__(self) -> None:
        check_fields(self)
        check_divisible("d_model", self.d_model, self.n_heads)


@dataclass(frozen=True)
class HeadsPath:
    """One way through multi-head attention, from the split to the output."""

    q: Tensor  # (B, H, T, D) queries as the heads see them
    k: Tensor  # (B, H, T, D)
    v: Tensor  # (B, H, T, D)
    weights: Tensor  # (B, H, T, T)
    heads: Tensor  # (B, H, T, D) each head's output
    concat: Tensor  # (B, T, M) heads merged, before the output projection
    output: Tensor  # (B, T, M)
    shapes: tuple[tuple[str, tuple[int, ...]], ...]  # (step, shape) from input to output
    source_token: Tensor  # (H, T) long: the token whose q, k, v row (h, t) holds
    source_chunk: Tensor  # (H, T) long: which D-wide slice of that token's width


@dataclass(frozen=True)
class HeadsExploration:
    """Every step of multi-head attention, done right and with the transpose forgotten."""

    params: HeadsParams
    x: Tensor  # (B, T, M) input
    q_proj: Tensor  # (B, T, M) the big projections x W_q, x W_k, x W_v (one matmul each)
    k_proj: Tensor
    v_proj: Tensor
    q_split: Tensor  # (B, T, H, D) q_proj.view(B, T, H, D), before the transpose
    right: HeadsPath  # view(B, T, H, D).transpose(1, 2), as MultiHeadAttention does
    wrong: HeadsPath  # view(B, H, T, D) straight away: same shapes, scrambled contents
    weights_max_diff: float  # max |wrong.weights - right.weights|
    output_max_diff: float  # max |wrong.output - right.output|


def _right_sources(h: int, t: int) -> tuple[Tensor, Tensor]:
    token = torch.arange(t).expand(h, t)  # head h, row t reads token t ...
    chunk = torch.arange(h)[:, None].expand(h, t)  # ... in its own slice h
    return token.clone(), chunk.clone()


def _wrong_sources(h: int, t: int) -> tuple[Tensor, Tensor]:
    # .view(B, H, T, D) cuts the flat (T * M) row-major buffer into H * T rows of D numbers:
    # row (h, t) is the (h * T + t)-th D-chunk, i.e. token (h*T + t) // H, slice (h*T + t) % H.
    flat = torch.arange(h * t).view(h, t)
    return flat // h, flat % h


def _explore_heads(p: HeadsParams) -> HeadsExploration:
    b, t, m, h = p.batch, p.seq_len, p.d_model, p.n_heads
    d = m // h
    mha = seeded_mha(m, h, p.seed)
    g = torch.Generator().manual_seed(p.seed)
    x = torch.randn(b, t, m, generator=g)  # (B, T, M)
    with torch.no_grad():
        res = mha(x)  # the reference: split_heads, attend, merge_heads, project
        q_proj, k_proj, v_proj = mha.q_proj(x), mha.k_proj(x), mha.v_proj(x)  # (B, T, M) each
        wq, wk, wv = (z.view(b, h, t, d) for z in (q_proj, k_proj, v_proj))  # (B, H, T, D) wrong
        att = scaled_dot_product_attention(wq, wk, wv)  # (B, H, T, T) weights
        wrong_concat = att.output.reshape(b, t, m)  # the merge forgets its transpose too
        wrong_output = mha.out_proj(wrong_concat)  # (B, T, M)
    steps = [("x", (b, t, m)), ("q = x W_q", (b, t, m))]
    right_shapes = (
        *steps,
        ("q.view(B, T, H, D)", (b, t, h, d)),
        (".transpose(1, 2)", (b, h, t, d)),
        ("weights = softmax(q k^T / sqrt(D))", (b, h, t, t)),
        ("heads = weights v", (b, h, t, d)),
        ("heads.transpose(1, 2)", (b, t, h, d)),
        ("concat = .reshape(B, T, M)", (b, t, m)),
        ("output = concat W_o", (b, t, m)),
    )
    wrong_shapes = (
        *steps,
        ("q.view(B, H, T, D)", (b, h, t, d)),
        ("weights = softmax(q k^T / sqrt(D))", (b, h, t, t)),
        ("heads = weights v", (b, h, t, d)),
        ("concat = heads.reshape(B, T, M)", (b, t, m)),
        ("output = concat W_o", (b, t, m)),
    )
    # in HeadsPath's order: q, k, v, weights, heads, concat, output
    right_tensors = (res.q, res.k, res.v, res.weights, res.heads, res.concat, res.output)
    wrong_tensors = (wq, wk, wv, att.weights, att.output, wrong_concat, wrong_output)
    right = HeadsPath(*right_tensors, right_shapes, *_right_sources(h, t))
    wrong = HeadsPath(*wrong_tensors, wrong_shapes, *_wrong_sources(h, t))
    return HeadsExploration(
        params=p,
        x=x,
        q_proj=q_proj,
        k_proj=k_proj,
        v_proj=v_proj,
        q_split=q_proj.view(b, t, h, d),
        right=right,
        wrong=wrong,
        weights_max_diff=float((wrong.weights - right.weights).abs().max()),
        output_max_diff=float((wrong.output - right.output).abs().max()),
    )


def explore_heads(params: HeadsParams | None = None) -> HeadsExploration:
    """Run multi-head attention step by step, and again with the split's transpose forgotten."""
    return _explore_heads(params or HeadsParams())
