"""Reference solutions to the exercises of lesson 8 (checked by attention.exercises.lesson08).

Lesson 8 (multi-head attention) shows the same code in hidden cells tagged `solution` and runs
its checker on it; tests/exercises/test_solution_copies.py keeps the two equal. The core
(`import attention as A`) has the same operations, tested against torch.
"""

from __future__ import annotations

import math

import torch

import attention as A


def solution_split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, M) -> (B, H, T, D) with D = M // H; head h owns columns h*D .. (h+1)*D - 1."""
    b, t, m = x.shape
    return x.view(b, t, n_heads, m // n_heads).transpose(1, 2)  # (B, H, T, D)


def solution_multi_head_scores(q: torch.Tensor, k: torch.Tensor, n_heads: int) -> torch.Tensor:
    """q (B, Tq, M), k (B, Tk, M) -> per-head scores (B, H, Tq, Tk), scaled by sqrt(d_head)."""
    d_head = q.shape[-1] // n_heads
    qh, kh = A.split_heads(q, n_heads), A.split_heads(k, n_heads)  # (B, H, Tq, D), (B, H, Tk, D)
    return qh @ kh.transpose(-2, -1) / math.sqrt(d_head)  # (B, H, Tq, Tk)


def solution_mha_parameter_count(d_model: int, n_heads: int, bias: bool) -> int:
    """W_q, W_k, W_v, W_o are each d_model x d_model (plus d_model biases); heads do not matter."""
    per_projection = d_model * d_model + (d_model if bias else 0)
    return 4 * per_projection
