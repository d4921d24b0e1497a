"""Top-k sparse attention: each query keeps only its k largest scores, the rest are masked.

    scores = q @ k.T * scale                    as in dense attention (masked entries -inf)
    kept   = the k largest allowed scores of each query row
    weights = softmax over the kept scores only, 0 elsewhere;  output = weights @ v
With k >= Tk every allowed key is kept and the result is dense attention exactly. The softmax
puts most weight on a few keys, so a small k often loses little; what is lost is the tail
mass sum of the dropped weights. Here the true scores choose the keys, so all of them are
still computed: real systems (DeepSeek's sparse attention) pick the keys with a cheap indexer
and then read only those. Ties at the k-th score are broken by torch.topk's order.
"""

from dataclasses import dataclass

import torch
from torch import Tensor

from ._checks import check_positive_int
from .functional import scaled_dot_product_attention


@dataclass(frozen=True)
class TopKResult:
    """Dense scores, which keys each query kept, and attention over those alone."""

    scores: Tensor  # (..., Tq, Tk) all scaled scores, -inf where the mask forbids
    kept: Tensor  # (..., Tq, Tk) bool, True for the (at most) k keys each query keeps
    weights: Tensor  # (..., Tq, Tk) softmax over the kept keys, 0 elsewhere
    output: Tensor  # (..., Tq, Dv)
    dropped_mass: Tensor  # (..., Tq) weight dense attention gave the keys top-k dropped


def topk_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    top_k: int,
    mask: Tensor | None = None,
    *,
    scale: float | None = None,
) -> TopKResult:
    """Attention where each query attends to its top_k highest-scoring allowed keys only.

    The arguments are scaled_dot_product_attention's, plus top_k; top_k >= Tk is dense attention.
    Gradients flow through the kept scores (the choice of keys itself has none).
    """
    check_positive_int("top_k", top_k)
    dense = scaled_dot_product_attention(query, key, value, mask, scale=scale)
    scores = dense.scores  # (..., Tq, Tk), query's heads
    k = min(top_k, scores.shape[-1])
    top = scores.topk(k, dim=-1).indices  # (..., Tq, k)
    kept = torch.zeros_like(scores, dtype=torch.bool).scatter(-1, top, True)
    kept = kept & (scores != float("-inf"))  # a row with fewer than k allowed keys keeps those
    sparse = scaled_dot_product_attention(query, key, value, kept, scale=scale)
    dropped = (dense.weights * ~kept).sum(dim=-1)  # (..., Tq)
    return TopKResult(scores, kept, sparse.weights, sparse.output, dropped)
