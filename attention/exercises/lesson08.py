"""Checkers of lesson 8 (multi-head attention): splitting heads, per-head scores, MHA's parameter
count.

Named mistakes include "you divided by sqrt(d_model) instead of sqrt(d_head)". Reference
solutions are in `attention.exercises.solutions.lesson08`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

import attention as A

from ._checking import Wrong, call, checker, compare, expect_int, name_mistake, scale_mistakes
from .lesson06 import _seeded

LESSON = "08_multi_head"
__all__ = ["check_mha_parameter_count", "check_multi_head_scores", "check_split_heads"]


@checker("head h gets columns h*D .. (h+1)*D - 1 of every position, shaped (B, H, T, D).")
def check_split_heads(fn: Callable[[Tensor, int], Tensor]) -> None:
    """Check `fn(x (B, T, M), n_heads) -> (B, H, T, M // H)`."""
    for b, t, m, h in ((2, 5, 12, 3), (1, 4, 6, 1), (2, 3, 8, 8)):
        x = torch.randn(b, t, m, generator=_seeded(m))  # (B, T, M)
        d = m // h
        got = call(fn, x, h)
        if isinstance(got, Tensor) and tuple(got.shape) == (b, t, h, d) and t != h:
            raise Wrong(
                f"wrong shape: expected (B, H, T, D) = {(b, h, t, d)}, got {(b, t, h, d)}: "
                "you forgot .transpose(1, 2) after the view"
            )
        mistakes = [
            (
                x.reshape(b, h, t, d),
                "right shape, wrong contents: reshaping (B, T, M) straight to (B, H, T, D) "
                "cuts the memory in the wrong order, so one head mixes pieces of different "
                "tokens. View as (B, T, H, D) first, then .transpose(1, 2)",
            ),
            (
                x.reshape(b, t, d, h).permute(0, 3, 1, 2),
                "each head got every H-th column; head h should get the contiguous slice "
                "h*D .. (h+1)*D - 1: view as (B, T, H, D), not (B, T, D, H)",
            ),
        ]
        what = f"with x of shape {(b, t, m)} and n_heads={h}"
        compare(got, A.split_heads(x, h), mistakes, what=what)


@checker("each head's scores are divided by sqrt(d_head), the width that head works with.")
def check_multi_head_scores(fn: Callable[[Tensor, Tensor, int], Tensor]) -> None:
    """Check `fn(q (B, Tq, M), k (B, Tk, M), n_heads) -> scores (B, H, Tq, Tk)`, before softmax."""
    g = _seeded(9)
    q, k = torch.randn(2, 3, 12, generator=g), torch.randn(2, 4, 12, generator=g)
    h, d = 3, 4
    qh, kh = A.split_heads(q, h), A.split_heads(k, h)  # (B, H, Tq, D), (B, H, Tk, D)
    dots = qh @ kh.transpose(-2, -1)  # (B, H, Tq, Tk)
    want = dots / math.sqrt(d)
    mistakes = [
        (
            dots / math.sqrt(12),
            "you divided by sqrt(d_model) = sqrt(12) instead of sqrt(d_head) = sqrt(12 / 3): "
            "each head's dot products add up only d_head terms, so their spread is sqrt(d_head). "
            "Your scores are sqrt(n_heads) times too small and every softmax too flat",
        ),
        *scale_mistakes(lambda c: dots * c, "d_head", d),
        (
            q.reshape(2, h, 3, d) @ k.reshape(2, h, 4, d).transpose(-2, -1) / math.sqrt(d),
            "the scale is right but the heads are mixed up: split with .view(B, T, H, D) then "
            ".transpose(1, 2) (or A.split_heads)",
        ),
        (
            want.transpose(-2, -1),
            "your scores are transposed: they are (B, H, Tq, Tk), one row per query, "
            "q @ k.transpose(-2, -1)",
        ),
    ]
    compare(call(fn, q, k, h), want, mistakes, what="scores")


@checker("4 projections of M x M weights plus 4 M biases, whatever the number of heads.")
def check_mha_parameter_count(fn: Callable[[int, int, bool], int]) -> None:
    """Check `fn(d_model, n_heads, bias) -> int`: trainable parameters of multi-head attention."""
    for m, h, bias in ((8, 2, True), (8, 4, True), (12, 3, False), (64, 8, True)):
        got = expect_int(call(fn, m, h, bias))
        want = A.count_parameters(A.MultiHeadAttention(m, h, bias=bias))
        if got == want:
            continue
        where = f"for d_model={m}, n_heads={h}, bias={bias}: expected {want}, got {got}"
        if expect_int(call(fn, m, 1, bias)) != got:
            raise Wrong(
                f"{where}. Your count changes with n_heads, but splitting into heads only "
                "reshapes the same four M x M projections"
            )
        no_w_o = f"{where}. You forgot the output projection W_O (the fourth M x M matrix)"
        mistakes = [(3 * m * m, no_w_o), (3 * m * m + 3 * m * bias, no_w_o)]
        if bias:
            biases = f"{where}. You left out the biases: each of the 4 projections has M of them"
            mistakes.append((4 * m * m, biases))
        else:
            mistakes.append(
                (4 * m * m + 4 * m, f"{where}. With bias=False there are no biases to count")
            )
        name_mistake(got, mistakes)
        raise Wrong(where)
