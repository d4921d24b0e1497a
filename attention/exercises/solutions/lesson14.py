"""Reference solutions to the exercises of lesson 14 (checked by attention.exercises.lesson14).

Lesson 14 (KV cache, MQA and GQA) shows the same code in hidden cells tagged `solution` and runs
its checker on it; tests/exercises/test_solution_copies.py keeps the two equal.
"""

import math

import torch


def solution_kv_cache_bytes(
    n_layers: int,
    n_heads: int,
    n_kv_heads: int,
    d_head: int,
    seq_len: int,
    batch: int,
    bytes_per_value: float,
) -> int:
    # a key and a value per layer, kv head, position and sequence; n_heads does not matter
    return int(2 * n_layers * n_kv_heads * d_head * seq_len * batch * bytes_per_value)


def solution_repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    return x.repeat_interleave(n_rep, dim=1)  # (B, Hkv, T, D) -> (B, Hkv * n_rep, T, D)


def solution_cached_attention(
    q_new: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    k_new: torch.Tensor,
    v_new: torch.Tensor,
) -> torch.Tensor:
    k = torch.cat([k_cache, k_new])  # (T + 1, D): the cache, then the new token itself
    v = torch.cat([v_cache, v_new])  # (T + 1, D)
    weights = torch.softmax(q_new @ k.T / math.sqrt(q_new.shape[-1]), dim=-1)  # (1, T + 1)
    return weights @ v  # (1, D)
