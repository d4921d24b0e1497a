"""Checkers of lesson 10 (the Transformer block): LayerNorm, an encoder layer's parameters.

Named mistakes include "you normalised over the batch". Reference solutions are in
`attention.exercises.solutions.lesson10`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

import attention as A

from ._checking import Wrong, call, checker, compare, expect_int, name_mistake

LESSON = "10_transformer_block"
__all__ = ["check_layer_norm", "check_parameter_count"]


@checker(
    "each token is normalised over its own features, then scaled by gamma and shifted by beta."
)
def check_layer_norm(fn: Callable[[Tensor, Tensor, Tensor, float], Tensor]) -> None:
    """Check `fn(x (B, T, M), gamma (M,), beta (M,), eps) -> (B, T, M)` against F.layer_norm."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(3, 4, 6, generator=g) * 3 + 1  # (B, T, M)
    x[0, 0] = 2.5  # a constant token: its variance is 0
    x[1, 2] = torch.tensor([1, -1, 1, -1, 1, -1]) * 3e-3  # a token with a tiny variance
    gamma = torch.rand(6, generator=g) + 0.5
    beta = torch.randn(6, generator=g)
    eps = 1e-5
    got = call(fn, x, gamma, beta, eps)
    want = F.layer_norm(x, (6,), gamma, beta, eps)
    if isinstance(got, Tensor) and got.shape == want.shape and not bool(torch.isfinite(got).all()):
        raise Wrong(
            "NaN or inf for the constant token (batch 0, position 0): its variance is 0, so "
            "add eps inside the square root: (x - mean) / sqrt(var + eps)"
        )

    def norm(dims=-1, correction=0, eps_inside=True, scale=gamma, shift=beta) -> Tensor:
        var = x.var(dims, keepdim=True, correction=correction)
        den = (var + eps).sqrt() if eps_inside else var.sqrt() + eps
        return (x - x.mean(dims, keepdim=True)) / den * scale + shift

    mistakes = [
        (
            norm(0),
            "you normalised over the batch (dim 0): that is BatchNorm's axis, not LayerNorm's",
        ),
        (
            norm((0, 1)),
            "you normalised each feature over batch and positions: that is BatchNorm1d; "
            "LayerNorm uses each token's own features (dim -1)",
        ),
        (
            norm(1),
            "you normalised over the positions (dim 1); LayerNorm uses the features (dim -1)",
        ),
        (
            norm(correction=1),
            "you used the unbiased variance (divides by M - 1); LayerNorm divides by M: "
            "x.var(-1, unbiased=False) or correction=0",
        ),
        (
            norm(eps_inside=False),
            "eps is in the wrong place: (x - mean) / (std + eps) differs for tokens with tiny "
            "variance (batch 1, position 2); use (x - mean) / sqrt(var + eps)",
        ),
        (
            norm(scale=1.0, shift=0.0),
            "you normalised correctly but forgot gamma and beta: return y * gamma + beta",
        ),
        (norm(shift=0.0), "you scaled by gamma but forgot the shift beta: return y * gamma + beta"),
        (
            norm(scale=1.0),
            "you shifted by beta but forgot the scale gamma: return y * gamma + beta",
        ),
    ]
    compare(got, want, mistakes, what="output", atol=1e-4)


@checker("4 M^2 + 4 M for attention, 2 M d_ff + d_ff + M for the FFN, 4 M for two LayerNorms.")
def check_parameter_count(fn: Callable[[int, int], int]) -> None:
    """Check `fn(d_model, d_ff) -> int`, every trainable parameter of one encoder layer."""
    for m, d_ff in ((8, 32), (16, 24), (512, 2048)):
        got = expect_int(call(fn, m, d_ff))
        want = A.count_parameters(A.EncoderLayer(m, 1, d_ff))
        if got == want:
            continue
        where = f"for d_model={m}, d_ff={d_ff}: expected {want}, got {got}"
        mistakes = [
            (
                4 * m * m + 2 * m * d_ff,
                f"{where}. You counted the weight matrices only (the textbook 12 M^2 when "
                "d_ff = 4 M): add the biases (4 M in attention, d_ff + M in the FFN) and the "
                "two LayerNorms (2 M each)",
            ),
            (
                12 * m * m,
                f"{where}. 12 M^2 is the textbook estimate: it leaves out biases and LayerNorms "
                "and assumes d_ff = 4 M. Count exactly, with the d_ff you are given",
            ),
            (
                want - 4 * m,
                f"{where}. Add the two LayerNorms: each has a weight and a bias of size M",
            ),
            (
                want - 2 * m,
                f"{where}. You are 2 M short in the LayerNorms: each has a gamma (scale) AND a "
                "beta (shift) of size M, did you forget beta? There are two LayerNorms, one "
                "per sub-layer, so 4 M in all",
            ),
            (
                4 * m * m + 4 * m + 2 * m * 4 * m + 4 * m + m + 4 * m,
                f"{where}. You assumed d_ff = 4 * d_model; use the d_ff argument",
            ),
        ]
        name_mistake(got, mistakes)
        raise Wrong(where)
