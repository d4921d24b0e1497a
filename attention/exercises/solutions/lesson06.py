"""Reference solutions to the exercises of lesson 6 (checked by attention.exercises.lesson06).

Lesson 6 (masks) shows the same code in hidden cells tagged `solution` and runs its checker on
it; tests/exercises/test_solution_copies.py keeps the two equal. The core
(`import attention as A`) has the same operations, tested against torch.
"""

from __future__ import annotations

import torch


def solution_causal_mask(n: int) -> torch.Tensor:
    """(n, n) bool, True where query i may attend to key j, i.e. j <= i."""
    return torch.tril(torch.ones(n, n, dtype=torch.bool))  # (Tq, Tk) lower triangle


def solution_masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim keeping only entries where mask is True; empty rows give 0."""
    scores = scores.masked_fill(~mask, float("-inf"))  # blocked keys can never win
    empty = ~mask.any(dim=-1, keepdim=True)  # (..., Tq, 1) rows with no allowed key
    weights = torch.softmax(scores.masked_fill(empty, 0.0), dim=-1)  # no all -inf row left
    return weights.masked_fill(empty, 0.0)  # nothing to attend to: all weights 0


def solution_to_key_padding_mask(mask: torch.Tensor) -> torch.Tensor:
    """Ours (B, 1, Tk), True = may attend -> nn.MultiheadAttention's (B, Tk), True = ignore."""
    return ~mask[:, 0]  # (B, Tk)
