"""Scaled dot-product attention as a pure function that returns every intermediate.

scores  = q @ k.T * scale                 scale = 1 / sqrt(D) unless given
scores  = -inf where the mask is False    (masking happens before softmax)
weights = softmax(scores) over keys       each row sums to 1, or is all 0
output  = weights @ v
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from ._checks import check_mask, check_tensor, shape_str


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
    return _softmax_or_zero(scores, torch.isneginf(scores).all(dim=dim, keepdim=True), dim)


def _softmax_or_zero(scores: Tensor, empty: Tensor, dim: int = -1) -> Tensor:
    # Softmax of an all -inf row is 0/0; give such rows harmless zeros, then zero the result.
    if not bool(empty.any()):
        return torch.softmax(scores, dim=dim)
    return torch.softmax(scores.masked_fill(empty, 0.0), dim=dim).masked_fill(empty, 0.0)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    *,
    scale: float | None = None,
) -> AttentionResult:
    """Attend from each query to every key and average the values by the softmax weights.

    Args:
        query: (Tq, D), (B, Tq, D) or (B, H, Tq, D).
        key: same rank as query, (..., Tk, D); Tk may differ from Tq (cross-attention).
        value: (..., Tk, Dv); Dv may differ from D.
        mask: bool, True = may attend, broadcastable to (..., Tq, Tk). None attends everywhere.
        scale: multiplies q @ k.T; None means 1 / sqrt(D).

    Returns:
        AttentionResult with scores, weights, output and the fully-masked rows.

    Raises:
        TypeError: a non-tensor, non-floating input, or a non-bool mask.
        ValueError: ranks or widths or lengths that do not match, an empty sequence,
            non-finite inputs, or a mask that does not broadcast.
    """
    check_tensor("query", query, ndims=(2, 3, 4))
    check_tensor("key", key, ndims=(query.dim(),))
    check_tensor("value", value, ndims=(query.dim(),))
    *lead, tq, d = query.shape
    tk = key.shape[-2]
    if key.shape[-1] != d:
        raise ValueError(
            f"key: last dim must equal query's width D={d}, got key shape {shape_str(key.shape)}"
        )
    if value.shape[-2] != tk:
        raise ValueError(
            f"value: length must equal key's length Tk={tk}, got value shape "
            f"{shape_str(value.shape)}"
        )
    for name, x in (("key", key), ("value", value)):
        if tuple(x.shape[:-2]) != tuple(lead):
            raise ValueError(
                f"{name}: leading dims {shape_str(x.shape[:-2])} must equal query's "
                f"{shape_str(lead)}"
            )
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    elif not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale: expected a positive finite number, got {scale}")
    target = (*lead, tq, tk)

    scores = query @ key.transpose(-2, -1) * scale  # (..., Tq, Tk)
    if mask is None:
        fully_masked = torch.zeros(target[:-1], dtype=torch.bool, device=query.device)
    else:
        check_mask(mask, target)
        mask = mask.to(query.device)
        scores = scores.masked_fill(~mask, float("-inf"))
        fully_masked = torch.isneginf(scores).all(dim=-1)  # (..., Tq)
    weights = _softmax_or_zero(scores, fully_masked.unsqueeze(-1))  # (..., Tq, Tk)
    output = weights @ value  # (..., Tq, Dv)
    return AttentionResult(scores=scores, weights=weights, output=output, fully_masked=fully_masked)
