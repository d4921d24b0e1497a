"""Reference solutions to the exercises of lesson 13 (checked by attention.exercises.lesson13).

Lesson 13 (FlashAttention) shows the same code in hidden cells tagged `solution` and runs its
checker on it; tests/exercises/test_solution_copies.py keeps the two equal.
"""

import torch


def solution_online_softmax_update(
    m: torch.Tensor, l: torch.Tensor, chunk: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    m_new = torch.maximum(m, chunk.max())  # the largest score seen so far
    # the old sum was taken relative to m: shrink it to the new reference m_new
    l_new = l * torch.exp(m - m_new) + torch.exp(chunk - m_new).sum()
    return m_new, l_new


def solution_flash_tile_update(
    m: torch.Tensor, l: torch.Tensor, acc: torch.Tensor, scores: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    m_new = torch.maximum(m, scores.amax(dim=-1))  # (bq,)
    c = torch.exp(m - m_new)  # (bq,) rescales everything summed under the old max
    p = torch.exp(scores - m_new[:, None])  # (bq, bk)
    l_new = c * l + p.sum(dim=-1)  # (bq,)
    acc_new = c[:, None] * acc + p @ v  # (bq, Dv), divided by l only after the last tile
    return m_new, l_new, acc_new


def solution_attention_matrix_bytes(
    batch: int, n_heads: int, seq_len: int, bytes_per_value: float
) -> int:
    # S (scores) and P (weights): two (T, T) matrices per sequence and head
    return int(2 * batch * n_heads * seq_len * seq_len * bytes_per_value)
