"""Reference solutions to the exercises of lesson 10 (checked by attention.exercises.lesson10).

Lesson 10 (the Transformer block) shows the same code in hidden cells tagged `solution` and runs
its checker on it; tests/exercises/test_solution_copies.py keeps the two equal. The core
(`import attention as A`) has the same operations, tested against torch.
"""

from __future__ import annotations

import torch


def solution_layer_norm(
    x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    """Normalise each token (B, T, M) over its own M features, then scale and shift."""
    mean = x.mean(dim=-1, keepdim=True)  # (B, T, 1)
    var = x.var(dim=-1, keepdim=True, correction=0)  # (B, T, 1) divides by M, not M - 1
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta  # (B, T, M)


def solution_encoder_layer_parameter_count(d_model: int, d_ff: int) -> int:
    """Self-attention + feed-forward + two LayerNorms, biases included."""
    attention = 4 * d_model * d_model + 4 * d_model  # W_q, W_k, W_v, W_o and their biases
    ffn = d_model * d_ff + d_ff + d_ff * d_model + d_model  # W_1, b_1, W_2, b_2
    norms = 2 * (2 * d_model)  # two LayerNorms, each a gamma and a beta of size M
    return attention + ffn + norms
