"""Reference solutions to the exercises of lesson 15 (checked by attention.exercises.lesson15).

Lesson 15 (RoPE, windows and sinks, ALiBi, perplexity) shows the same code in hidden cells
tagged `solution` and runs its checker on it; tests/exercises/test_solution_copies.py keeps the
two equal.
"""

import math

import torch


def solution_rope_half(x: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (D/2,) pair i's speed
    angles = (positions[:, None] * theta).float()  # (T, D/2)
    a, b = x[:, : d // 2], x[:, d // 2 :]  # pair i = (x_i, x_(i + D/2))
    cos, sin = angles.cos(), angles.sin()
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)  # (T, D)


def solution_sliding_window_mask(seq_len: int, window: int, sinks: int) -> torch.Tensor:
    i = torch.arange(seq_len)[:, None]  # (T, 1) query positions
    j = torch.arange(seq_len)[None, :]  # (1, T) key positions
    in_window = j > i - window  # the last `window` keys, the query itself included
    return (j <= i) & (in_window | (j < sinks))  # (T, T), never the future


def solution_alibi_bias(slopes: torch.Tensor, seq_len: int) -> torch.Tensor:
    pos = torch.arange(seq_len)
    distance = (pos[:, None] - pos[None, :]).abs()  # (T, T)
    return -slopes[:, None, None] * distance  # (H, T, T)


def solution_perplexity(logits: torch.Tensor, ids: torch.Tensor) -> float:
    logp = torch.log_softmax(logits[:-1], dim=-1)  # (T - 1, V): position t predicts t + 1
    nll = -logp.gather(-1, ids[1:, None]).squeeze(-1)  # (T - 1,) nats per token
    return math.exp(nll.mean().item())
