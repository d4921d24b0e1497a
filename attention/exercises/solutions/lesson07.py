"""Reference solutions to the exercises of lesson 7 (checked by attention.exercises.lesson07).

Lesson 7 (self-attention) shows the same code in hidden cells tagged `solution` and runs its
checker on it; tests/exercises/test_solution_copies.py keeps the two equal. The core
(`import attention as A`) has the same operations, tested against torch. The pooling layers are
modules there too (`attention.MemorySlots`, `attention.TanhAttention`), tested in
tests/core/test_pooling.py.
"""

from __future__ import annotations

import math

import torch


def solution_self_attention(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor
) -> torch.Tensor:
    """x (B, T, M) -> (B, T, Dv): project to queries, keys, values, then attend."""
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (B, T, D), (B, T, D), (B, T, Dv)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, T, T)
    return torch.softmax(scores, dim=-1) @ v  # (B, T, Dv)


def solution_attention_pool(
    x: torch.Tensor, query: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """x (B, T, M), one learned query (M,), mask (B, T) True = real token -> (B, M)."""
    scores = x @ query / math.sqrt(x.shape[-1])  # (B, T) one score per token
    scores = scores.masked_fill(~mask, float("-inf"))  # padding gets weight 0
    weights = torch.softmax(scores, dim=-1)  # (B, T)
    return (weights.unsqueeze(-1) * x).sum(dim=1)  # (B, M)


def solution_memory_slots(
    x: torch.Tensor, w_q: torch.Tensor, slot_keys: torch.Tensor, slot_values: torch.Tensor
) -> torch.Tensor:
    """x (B, T, M) -> (B, T, Dv): every position reads a mixture of Ns learned slots."""
    q = x @ w_q  # (B, T, D) queries from the input
    scores = q @ slot_keys.T / math.sqrt(q.shape[-1])  # (B, T, Ns) one score per slot
    weights = torch.softmax(scores, dim=-1)  # (B, T, Ns) each position shares 1 among the slots
    return weights @ slot_values  # (B, T, Dv)


def solution_tanh_attention(
    x: torch.Tensor, mask: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor
) -> torch.Tensor:
    """x (B, T, d_in), mask (B, T) True = real -> global feature (B, d_att)."""
    q, k, v = torch.tanh(x @ w_q), torch.tanh(x @ w_k), torch.tanh(x @ w_v)  # (B, T, d_att)
    scores = q @ k.transpose(-2, -1)  # (B, T, T), no 1/sqrt(d_att): |scores| <= d_att anyway
    scores = scores.masked_fill(~mask[:, None, :], float("-inf"))  # padded keys get weight 0
    z = torch.softmax(scores, dim=-1) @ v  # (B, T, d_att) one row per set member
    return (z * mask[..., None]).sum(dim=1)  # (B, d_att) padded rows left out of the sum
