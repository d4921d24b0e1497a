"""Reference solutions to the exercises of lesson 9 (checked by attention.exercises.lesson09).

Lesson 9 (positional encoding) shows the same code in hidden cells tagged `solution` and runs
its checker on it; tests/exercises/test_solution_copies.py keeps the two equal. The core
(`import attention as A`) has the same operations, tested against torch.
"""

from __future__ import annotations

import torch


def solution_is_permutation_equivariant(f, x: torch.Tensor, perm: torch.Tensor) -> bool:
    """Does shuffling the positions of x (B, T, M) only shuffle f's output the same way?"""
    return torch.allclose(f(x[:, perm]), f(x)[:, perm], atol=1e-5)


def solution_sinusoidal_pe(seq_len: int, d_model: int) -> torch.Tensor:
    """(seq_len, d_model): column 2i is sin(pos / 10000^(2i/d_model)), column 2i+1 its cos."""
    pos = torch.arange(seq_len, dtype=torch.float32)[:, None]  # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (M/2,)
    angle = pos / 10000 ** (two_i / d_model)  # (T, M/2)
    pe = torch.zeros(seq_len, d_model)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe
