"""Checkers of lesson 3 (scoring functions): additive and bilinear scores.

Named mistakes include the tanh in the wrong place, a transposed weight. Reference solutions are
in `attention.exercises.solutions.lesson03`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from ..additive import AdditiveAttention
from ..functional import scaled_dot_product_attention
from ._checking import call, checker, compare, randn, scale_mistakes

LESSON = "03_scoring_functions"
__all__ = ["check_additive_scores", "check_bilinear_scores"]


@checker("query (width 5) and key (width 6) never had to share a width: each is projected first.")
def check_additive_scores(fn: Callable[..., Tensor]) -> None:
    """Check fn(query (B, Tq, Dq), key (B, Tk, Dk), w_q (Dq, h), w_k (Dk, h), w_v (h,)).

    Expected scores (B, Tq, Tk): w_v . tanh(query_i @ w_q + key_j @ w_k); the reference is
    attention.AdditiveAttention with the same weights.
    """
    g = torch.Generator().manual_seed(4)
    b, tq, tk, dq, dk, h = 2, 3, 4, 5, 6, 7
    query, key = randn(g, b, tq, dq), randn(g, b, tk, dk)
    w_q, w_k, w_v = randn(g, dq, h, scale=0.5), randn(g, dk, h, scale=0.5), randn(g, h)
    module = AdditiveAttention(dq, dk, h)
    with torch.no_grad():
        module.w_q.weight.copy_(w_q.T)  # nn.Linear stores (out, in)
        module.w_k.weight.copy_(w_k.T)
        module.w_v.weight.copy_(w_v[None, :])
        want = module(query, key, torch.zeros(b, tk, 1)).scores  # (B, Tq, Tk)
    features = (query @ w_q).unsqueeze(2) + (key @ w_k).unsqueeze(1)  # (B, Tq, Tk, h)
    mistakes = [
        (features @ w_v, "the tanh is missing: w_v . tanh(q W_q + k W_k)"),
        (torch.tanh(features @ w_v), "tanh goes inside, before w_v: w_v . tanh(q W_q + k W_k)"),
        (torch.softmax(want, dim=-1), "you returned the softmax weights; return the scores"),
        (
            want.transpose(1, 2),
            "scores are (B, Tq, Tk): one row per query, one column per key; yours are transposed",
        ),
        (
            torch.tanh((query @ w_q).unsqueeze(2) * (key @ w_k).unsqueeze(1)) @ w_v,
            "the projected query and key are added, not multiplied, inside the tanh",
        ),
    ]
    compare(call(fn, query, key, w_q, w_k, w_v), want, mistakes, what="additive scores")


@checker("projecting q to the key width makes a plain (scaled) dot product possible.")
def check_bilinear_scores(fn: Callable[[Tensor, Tensor, Tensor], Tensor]) -> None:
    """Check fn(query (B, Tq, Dq), key (B, Tk, Dk), w (Dq, Dk)) -> (q @ w) @ k^T / sqrt(Dk)."""
    g = torch.Generator().manual_seed(5)
    b, tq, tk, dq, dk = 2, 3, 4, 5, 8
    query, key, w = randn(g, b, tq, dq), randn(g, b, tk, dk), randn(g, dq, dk, scale=0.4)
    projected = query @ w  # (B, Tq, Dk)
    want = scaled_dot_product_attention(projected, key, key).scores  # (B, Tq, Tk)
    raw = projected @ key.transpose(1, 2)
    mistakes = [
        *scale_mistakes(lambda c: raw * c, "Dk", dk),
        (
            raw / math.sqrt(dq),
            f"q @ w has the key width Dk = {dk}: divide by sqrt({dk}), "
            f"not by sqrt(Dq) = sqrt({dq})",
        ),
        (want.transpose(1, 2), "scores are (B, Tq, Tk); yours are transposed"),
    ]
    compare(call(fn, query, key, w), want, mistakes, what="bilinear scores")
