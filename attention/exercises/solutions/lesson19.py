"""Reference solutions to the exercises of lesson 19 (checked by attention.exercises.lesson19).

The lesson shows the same code in hidden cells tagged `solution`;
tests/exercises/test_solution_copies.py keeps the two equal.
"""

import torch


def solution_mla_cache_bytes(
    n_layers: int,
    n_heads: int,
    kv_rank: int,
    d_rope: int,
    seq_len: int,
    batch: int,
    bytes_per_value: float,
) -> int:
    # one latent (kv_rank) and one rotated key part (d_rope) per token and layer, for all heads
    return int(n_layers * (kv_rank + d_rope) * seq_len * batch * bytes_per_value)


def solution_mla_absorbed_scores(
    q_nope: torch.Tensor,
    q_rope: torch.Tensor,
    latent: torch.Tensor,
    k_rope: torch.Tensor,
    w_uk: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    d_head = q_nope.shape[-1] + q_rope.shape[-1]  # Dn + Dr: the scale of the explicit scores
    q_latent = q_nope @ w_uk.transpose(-2, -1)  # (H, Tq, R): q^C W_uk^T, W_uk folded in
    q_absorbed = torch.cat([q_latent, q_rope], dim=-1)  # (H, Tq, R + Dr)
    key = torch.cat([latent, k_rope], dim=-1)  # (Tk, R + Dr): one key shared by every head
    return q_absorbed, q_absorbed @ key.T / d_head**0.5  # (H, Tq, Tk)


def solution_linear_attention_step(
    state: torch.Tensor, z: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    state = state + torch.outer(k, v)  # (D, Dv) write the token first
    z = z + k  # (D,) the running sum of keys, for the normaliser
    out = (q @ state) / (q @ z)  # (Dv,) then read it with the query
    return state, z, out


def solution_gated_delta_step(
    state: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    alpha: float,
    beta: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    state = alpha * state  # (D, Dv) the gate: every stored pair fades a little
    state = state - beta * torch.outer(k, k @ state)  # erase what k reads now, k (k^T S)
    state = state + beta * torch.outer(k, v)  # and write v in its place, k v^T
    return state, q @ state  # (D, Dv), (Dv,): o = S^T q, read after writing


def solution_differential_weights(s1: torch.Tensor, s2: torch.Tensor, lam: float) -> torch.Tensor:
    # two ordinary softmax maps over the keys, then the difference
    return torch.softmax(s1, dim=-1) - lam * torch.softmax(s2, dim=-1)


def solution_differential_map(q: torch.Tensor, k: torch.Tensor, lam: float) -> torch.Tensor:
    d = q.shape[-1] // 2  # each map scores d-wide halves
    first = torch.softmax(q[:, :d] @ k[:, :d].T / d**0.5, dim=-1)  # (Tq, Tk)
    second = torch.softmax(q[:, d:] @ k[:, d:].T / d**0.5, dim=-1)  # (Tq, Tk)
    return first - lam * second  # rows sum to 1 - lambda


def solution_topk_keep(scores: torch.Tensor, k: int) -> torch.Tensor:
    top = scores.topk(k, dim=-1).indices  # (Tq, k) the k largest scores of each row
    return torch.zeros_like(scores, dtype=torch.bool).scatter(-1, top, True)  # (Tq, Tk)


def solution_paged_slot(block_table: list, block_size: int, position: int) -> tuple[int, int]:
    logical_block, offset = divmod(position, block_size)
    return block_table[logical_block], offset  # the table says where that block really is
