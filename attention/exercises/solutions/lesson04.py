"""Reference solutions to the exercises of lesson 4 (checked by attention.exercises.lesson04).

Lesson 4 (scaled dot-product attention) shows the same code in hidden cells tagged `solution`
and runs its checker on it; tests/exercises/test_solution_copies.py keeps the two equal.
"""

import math

import torch


def solution_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    d_k = query.shape[-1]
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (..., Tq, Tk)
    weights = torch.softmax(scores, dim=-1)  # (..., Tq, Tk), rows sum to 1
    return weights @ value  # (..., Tq, Dv)


def solution_attention_shapes(q_shape: tuple, k_shape: tuple, v_shape: tuple) -> tuple:
    *lead, tq, d = q_shape
    tk, d_k = k_shape[-2:]
    tv, dv = v_shape[-2:]
    if d != d_k:
        raise ValueError(f"query width {d} != key width {d_k}")
    if tk != tv:
        raise ValueError(f"key length {tk} != value length {tv}")
    return (*lead, tq, tk), (*lead, tq, dv)
