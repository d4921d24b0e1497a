"""Differential attention (Differential Transformer, 2024): one softmax map minus another.

Two query/key pairs score the same keys; the second map, scaled by lambda, is subtracted:
    A1 = softmax(q1 k1^T / sqrt(D)),  A2 = softmax(q2 k2^T / sqrt(D))
    weights = A1 - lambda A2,          output = weights @ v
Weight that both maps put on the same keys (common-mode "attention noise" spread over
irrelevant context) cancels; what only A1 puts somewhere survives. Rows now sum to 1 - lambda
and may go negative. lambda is learned per layer, re-parametrised as
    lambda = exp(lq1 . lk1) - exp(lq2 . lk2) + lambda_init
    lambda_init = 0.8 - 0.6 exp(-0.3 (l - 1))   for layer l = 1, 2, ...
The paper then normalises each head (RMSNorm) and multiplies it by 1 - lambda_init; that is the
layer's business, outside this function.
"""

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from ._checks import check_lam, check_positive_int, check_tensor, shape_str
from .functional import AttentionResult, scaled_dot_product_attention


@dataclass(frozen=True)
class DifferentialResult:
    """Both softmax maps, lambda, their difference and the output."""

    first: AttentionResult  # softmax(q1 k1^T / sqrt(D)) and its scores
    second: AttentionResult  # softmax(q2 k2^T / sqrt(D))
    lam: Tensor  # () or broadcastable to weights, e.g. (H, 1, 1)
    weights: Tensor  # (..., Tq, Tk) first.weights - lam * second.weights; rows sum to 1 - lam
    output: Tensor  # (..., Tq, Dv) weights @ v


def lambda_init(layer: int) -> float:
    """The paper's starting lambda for layer l (counted from 1): 0.8 - 0.6 exp(-0.3 (l - 1))."""
    check_positive_int("layer", layer)
    return 0.8 - 0.6 * math.exp(-0.3 * (layer - 1))


def differential_lambda(lq1: Tensor, lk1: Tensor, lq2: Tensor, lk2: Tensor, init: float) -> Tensor:
    """lambda = exp(lq1 . lk1) - exp(lq2 . lk2) + init, from four learned (D,) vectors."""
    for name, x in (("lq1", lq1), ("lk1", lk1), ("lq2", lq2), ("lk2", lk2)):
        check_tensor(name, x, ndims=(1,))
        if x.shape != lq1.shape:
            raise ValueError(
                f"{name}: expected shape {shape_str(lq1.shape)} like lq1's, "
                f"got {shape_str(x.shape)}"
            )
    return torch.exp(lq1 @ lk1) - torch.exp(lq2 @ lk2) + init


def differential_attention(
    q1: Tensor,
    k1: Tensor,
    q2: Tensor,
    k2: Tensor,
    value: Tensor,
    lam: float | Tensor,
    mask: Tensor | None = None,
    *,
    scale: float | None = None,
) -> DifferentialResult:
    """Subtract lambda times a second softmax map from the first, then average the values.

    q1, q2 (..., Tq, D) and k1, k2 (..., Tk, D) score the same keys; value (..., Tk, Dv) is
    shared by both maps (the paper's value is 2D wide per head); mask and scale go to both.
    lam: a finite number or a tensor broadcastable to the weights (e.g. (H, 1, 1)).
    """
    if q2.shape != q1.shape or k2.shape != k1.shape:
        raise ValueError(
            f"q2, k2: expected the shapes of q1 {shape_str(q1.shape)} and k1 "
            f"{shape_str(k1.shape)}, got {shape_str(q2.shape)} and {shape_str(k2.shape)}"
        )
    first = scaled_dot_product_attention(q1, k1, value, mask, scale=scale)
    second = scaled_dot_product_attention(q2, k2, value, mask, scale=scale)
    lam = torch.as_tensor(lam, dtype=first.weights.dtype, device=first.weights.device)
    check_lam(lam, first.weights.shape)
    weights = first.weights - lam * second.weights  # (..., Tq, Tk)
    return DifferentialResult(first, second, lam, weights, weights @ value)
