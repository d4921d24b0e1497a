"""Attention that pools: learned queries, learned keys and values, and a tanh-projected layer.

    AttentionPool   queries = a learned table (Tq, M); keys = values = x
                    (B, Tk, M) -> (B, Tq, M): any number of tokens -> Tq = n_queries vectors
    MemorySlots     queries = x W_q; keys, values = a learned table of Ns slots
                    (B, T, M) -> (B, T, Dv): each position becomes a mixture of the slots
    TanhAttention   q, k, v = tanh(x W + b); z = softmax(q @ k.T) @ v; g = sum over positions of z
                    (B, T, d_in) -> z (B, T, d_att) and one global feature g (B, d_att)

All three call the core's scaled_dot_product_attention. A padding mask is a bool tensor
(B, Tk) or (B, 1, Tk), True = a real token (may be attended to), as `padding_mask` returns.
The pooled vector and the global feature do not depend on the order of the tokens, and padded
positions change neither.
"""

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ._checks import check_batch, check_mask, check_sizes, shape_str
from .functional import scaled_dot_product_attention


@dataclass(frozen=True)
class PoolingResult:
    """One pooling call: scores and weights over the keys, and the output."""

    scores: Tensor  # (B, Tq, Tk) scaled, before softmax; masked entries are -inf
    weights: Tensor  # (B, Tq, Tk) each row sums to 1 over the real keys
    output: Tensor  # (B, Tq, Dv)


@dataclass(frozen=True)
class TanhAttentionResult:
    """One TanhAttention call: the bounded projections, the attention, the global feature."""

    q: Tensor  # (B, T, d_att) entries in (-1, 1)
    k: Tensor  # (B, T, d_att)
    v: Tensor  # (B, T, d_att)
    scores: Tensor  # (B, T, T) masked entries are -inf
    weights: Tensor  # (B, T, T)
    output: Tensor  # (B, T, d_att) z, one row per position
    global_feature: Tensor  # (B, d_att) sum of z over the real positions


def _padding(mask: Tensor | None, x: Tensor) -> Tensor | None:
    """A (B, Tk) or (B, 1, Tk) padding mask -> (B, 1, Tk), checked against x (B, Tk, M)."""
    if mask is None:
        return None
    b, t, _ = x.shape
    keep = mask.unsqueeze(1) if isinstance(mask, Tensor) and mask.dim() == 2 else mask
    try:
        check_mask(keep, (b, 1, t))  # also refuses a non-bool mask (TypeError)
    except ValueError:
        raise ValueError(
            f"mask: expected a padding mask (B, Tk) = {shape_str((b, t))} or (B, 1, Tk), "
            f"got shape {shape_str(mask.shape)}"
        ) from None
    return keep.expand(b, 1, t)  # (B, 1, Tk)


class AttentionPool(nn.Module):
    """Pool any number of tokens into n_queries vectors with learned queries; keys and values are
    the tokens themselves, so the pooled vectors live in the tokens' space."""

    def __init__(self, d_model: int, n_queries: int = 1) -> None:
        super().__init__()
        check_sizes(d_model=d_model, n_queries=n_queries)
        self.query = nn.Parameter(torch.randn(n_queries, d_model))  # (Tq, M) learned

    def forward(self, x: Tensor, mask: Tensor | None = None) -> PoolingResult:
        """x (B, Tk, M), mask (B, Tk) True = real token -> output (B, Tq, M)."""
        check_batch("x", x, self.query.shape[-1], "M=")
        query = self.query.expand(x.shape[0], -1, -1)  # (B, Tq, M): the same for every input
        r = scaled_dot_product_attention(query, x, x, _padding(mask, x))
        return PoolingResult(scores=r.scores, weights=r.weights, output=r.output)


class MemorySlots(nn.Module):
    """Let every position read a learned table of n_slots keys and values ("memory slots"); the
    output keeps the input's length, and no mask is needed, since every slot is real."""

    def __init__(self, d_model: int, n_slots: int, d_k: int | None = None, d_v: int | None = None):
        super().__init__()
        check_sizes(d_model=d_model, n_slots=n_slots, d_k=d_k, d_v=d_v)
        d_k, d_v = d_k or d_model, d_v or d_model
        self.q_proj = nn.Linear(d_model, d_k, bias=False)
        self.slot_keys = nn.Parameter(torch.randn(n_slots, d_k))  # (Ns, d_k)
        self.slot_values = nn.Parameter(torch.randn(n_slots, d_v))  # (Ns, Dv)

    def forward(self, x: Tensor) -> PoolingResult:
        """x (B, T, M) -> output (B, T, Dv), weights (B, T, Ns)."""
        check_batch("x", x, self.q_proj.in_features, "M=")
        b = x.shape[0]
        q = self.q_proj(x)  # (B, T, d_k)
        k = self.slot_keys.expand(b, -1, -1)  # (B, Ns, d_k)
        v = self.slot_values.expand(b, -1, -1)  # (B, Ns, Dv)
        r = scaled_dot_product_attention(q, k, v)
        return PoolingResult(scores=r.scores, weights=r.weights, output=r.output)


class TanhAttention(nn.Module):
    """Self-attention over a set with tanh-bounded projections and a summed global feature.

    From Xu, Zhong and Wang (NeurIPS 2020), a layer inside each agent that reads a set of targets:
        q, k, v = tanh(x W_q + b_q), tanh(x W_k + b_k), tanh(x W_v + b_v)
        z = softmax(q @ k.T * scale) @ v;  g = sum over the real positions of z
    scaled=False (the default) uses scale = 1, as the paper's code does: there is no division by
    sqrt(d_att). The tanh keeps every entry in (-1, 1), so |q . k| < d_att whatever the inputs,
    and at the paper's small widths the scores cannot grow large enough to saturate. The bound
    grows with the width, though: at a large d_att pass scaled=True to divide by sqrt(d_att)
    as the Transformer does. Weights start Xavier-uniform with zero biases, as in the paper.
    """

    def __init__(self, d_in: int, d_att: int, *, scaled: bool = False) -> None:
        super().__init__()
        check_sizes(d_in=d_in, d_att=d_att)
        self.scale = 1.0 / math.sqrt(d_att) if scaled else 1.0
        self.w_q, self.w_k, self.w_v = (nn.Linear(d_in, d_att) for _ in range(3))
        for lin in (self.w_q, self.w_k, self.w_v):
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> TanhAttentionResult:
        """x (B, T, d_in), mask (B, T) True = real -> z (B, T, d_att), g (B, d_att)."""
        check_batch("x", x, self.w_q.in_features, "d_in=")
        keep = _padding(mask, x)  # (B, 1, T) or None
        q, k, v = (torch.tanh(w(x)) for w in (self.w_q, self.w_k, self.w_v))  # (B, T, d_att)
        r = scaled_dot_product_attention(q, k, v, keep, scale=self.scale)
        z = r.output  # (B, T, d_att)
        z_real = z if keep is None else z * keep.transpose(1, 2)  # padded rows left out of the sum
        g = z_real.sum(dim=1)  # (B, d_att)
        return TanhAttentionResult(q, k, v, r.scores, r.weights, z, g)
