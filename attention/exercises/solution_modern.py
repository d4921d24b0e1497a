"""Reference solutions to the exercises of lessons 13-15 (checked by attention.exercises.modern).

Each lesson shows the same code in a hidden cell tagged `solution`;
tests/test_solution_copies.py keeps the two equal.
"""

import math

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
