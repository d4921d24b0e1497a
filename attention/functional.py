"""Scaled dot-product attention as a pure function that returns every intermediate.

scores  = q @ k.T * scale                 scale = 1 / sqrt(D) unless given
scores  = -inf where the mask is False    (masking happens before softmax)
weights = softmax(scores) over keys       each row sums to 1, or is all 0
output  = weights @ v
Grouped-query attention (GQA, MQA when Hkv = 1): H query heads share Hkv key/value heads,
query head h reads key/value head h // (H / Hkv), the same as repeating each kv head H / Hkv times.
"""

from dataclasses import dataclass

import torch
from torch import Tensor

from ._checks import check_attention_inputs, check_overflow, check_positive_int, check_tensor


@dataclass(frozen=True)
class AttentionResult:
    """Everything scaled dot-product attention computed, for lessons and widgets to show."""

    scores: Tensor  # (..., Tq, Tk) scaled, before softmax; masked entries are -inf
    weights: Tensor  # (..., Tq, Tk) each row sums to 1 (0 where a row may attend to nothing)
    output: Tensor  # (..., Tq, Dv)
    fully_masked: Tensor  # (..., Tq) bool, True for query rows whose every key is masked


def masked_softmax(scores: Tensor, mask: Tensor | None = None, dim: int = -1) -> Tensor:
    """Softmax over `dim` that ignores masked entries (mask True = keep).

    A slice with every entry masked (or already -inf) gets all-zero weights instead of NaN,
    as torch's own scaled_dot_product_attention does. Gradients stay finite.
    """
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError(f"mask: expected torch.bool (True = may attend), got {mask.dtype}")
        scores = scores.masked_fill(~mask, float("-inf"))
    return _softmax_or_zero(scores, _all_neginf(scores, dim, keepdim=True), dim)


def _all_neginf(scores: Tensor, dim: int = -1, keepdim: bool = False) -> Tensor:
    # A slice is all -inf exactly when its largest entry is -inf (a NaN makes both False);
    # amax is several times faster than isneginf(scores).all(dim).
    return scores.amax(dim=dim, keepdim=keepdim) == float("-inf")


def _softmax_or_zero(scores: Tensor, empty: Tensor, dim: int = -1) -> Tensor:
    # Softmax of an all -inf row is 0/0; give such rows harmless zeros, then zero the result.
    if not bool(empty.any()):
        return torch.softmax(scores, dim=dim)
    return torch.softmax(scores.masked_fill(empty, 0.0), dim=dim).masked_fill(empty, 0.0)


def repeat_kv(x: Tensor, n_rep: int) -> Tensor:
    """(B, Hkv, T, D) -> (B, Hkv * n_rep, T, D): head h is x's head h // n_rep, so each key/value
    head serves n_rep query heads (as x.repeat_interleave(n_rep, dim=1))."""
    check_tensor("x", x, ndims=(4,), finite=False)
    check_positive_int("n_rep", n_rep)
    b, hkv, t, d = x.shape
    return x[:, :, None].expand(b, hkv, n_rep, t, d).reshape(b, hkv * n_rep, t, d)  # (B, H, T, D)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    *,
    scale: float | None = None,
    check_finite: bool = True,
) -> AttentionResult:
    """Attend from each query to every key and average the values by the softmax weights.

    Args:
        query: (Tq, D), (B, Tq, D) or (B, H, Tq, D); key: the same rank, (..., Tk, D), Tk may
            differ from Tq (cross-attention); 4-D key/value may have Hkv heads (GQA, above).
        value: (..., Tk, Dv); Dv may differ from D.
        mask: bool, True = may attend, broadcastable to (..., Tq, Tk); scale: None = 1 / sqrt(D).
        check_finite: scan q, k and v for NaN and inf first, one more read of every input (1-2%
            of SmolLM2's forward on the CPU); a pretrained model's layers, fed from checked token
            ids and finite weights, turn it off. Every other check still runs.

    Returns the AttentionResult with the query's heads: weights (B, H, Tq, Tk) under GQA too.
    """
    n_rep, scale = check_attention_inputs(query, key, value, mask, scale, check_finite)
    if n_rep > 1:
        key, value = repeat_kv(key, n_rep), repeat_kv(value, n_rep)  # (B, H, Tk, D)
    scores = query @ key.transpose(-2, -1) * scale  # (..., Tq, Tk)
    if check_finite:
        check_overflow(scores, query, key)
    if mask is None:
        fully_masked = torch.zeros(query.shape[:-1], dtype=torch.bool, device=query.device)
    else:
        scores = scores.masked_fill(~mask.to(query.device), float("-inf"))
        fully_masked = _all_neginf(scores)  # (..., Tq)
    weights = _softmax_or_zero(scores, fully_masked.unsqueeze(-1))  # (..., Tq, Tk)
    output = weights @ value  # (..., Tq, Dv)
    return AttentionResult(scores=scores, weights=weights, output=output, fully_masked=fully_masked)
