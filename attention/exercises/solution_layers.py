"""Reference solutions to the exercises of lessons 6-10, written out by hand to be read.

Each lesson shows the same code in a hidden cell tagged `solution` and runs its checker on it;
tests/test_solution_copies.py keeps the two equal. The core (`import attention as A`) has the
same operations, tested against torch.
"""

from __future__ import annotations

import math

import torch

import attention as A

# --- lesson 6: masks --------------------------------------------------------------------------


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


# --- lesson 7: self-attention and projections -------------------------------------------------


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


# --- lesson 8: multi-head attention -----------------------------------------------------------


def solution_split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, M) -> (B, H, T, D) with D = M // H; head h owns columns h*D .. (h+1)*D - 1."""
    b, t, m = x.shape
    return x.view(b, t, n_heads, m // n_heads).transpose(1, 2)  # (B, H, T, D)


def solution_multi_head_scores(q: torch.Tensor, k: torch.Tensor, n_heads: int) -> torch.Tensor:
    """q (B, Tq, M), k (B, Tk, M) -> per-head scores (B, H, Tq, Tk), scaled by sqrt(d_head)."""
    d_head = q.shape[-1] // n_heads
    qh, kh = A.split_heads(q, n_heads), A.split_heads(k, n_heads)  # (B, H, Tq, D), (B, H, Tk, D)
    return qh @ kh.transpose(-2, -1) / math.sqrt(d_head)  # (B, H, Tq, Tk)


def solution_mha_parameter_count(d_model: int, n_heads: int, bias: bool) -> int:
    """W_q, W_k, W_v, W_o are each d_model x d_model (plus d_model biases); heads do not matter."""
    per_projection = d_model * d_model + (d_model if bias else 0)
    return 4 * per_projection


# --- lesson 9: positional encoding ------------------------------------------------------------


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


# --- lesson 10: the Transformer block ---------------------------------------------------------


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
