"""Reference solutions to the exercises of lesson 3 (checked by attention.exercises.lesson03).

Lesson 3 (scoring functions) shows the same code in hidden cells tagged `solution` and runs its
checker on it; tests/exercises/test_solution_copies.py keeps the two equal.
"""

import math

import torch


def solution_additive_scores(
    query: torch.Tensor, key: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor
) -> torch.Tensor:
    q = (query @ w_q).unsqueeze(2)  # (B, Tq, 1, h)
    k = (key @ w_k).unsqueeze(1)  # (B, 1, Tk, h)
    return torch.tanh(q + k) @ w_v  # (B, Tq, Tk, h) @ (h,) -> (B, Tq, Tk)


def solution_bilinear_scores(
    query: torch.Tensor, key: torch.Tensor, w: torch.Tensor
) -> torch.Tensor:
    projected = query @ w  # (B, Tq, Dk): now the query has the key's width
    return projected @ key.transpose(-2, -1) / math.sqrt(key.shape[-1])  # (B, Tq, Tk)
