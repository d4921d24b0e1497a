"""Reference solutions to the exercises of lessons 1-5 (checked by attention.exercises.basics).

Each lesson shows the same code in a hidden cell tagged `solution`;
tests/test_solution_copies.py keeps the two equal.
"""

import math

import torch


def solution_rnn_final_state(x: torch.Tensor, w_x: torch.Tensor, w_h: torch.Tensor) -> torch.Tensor:
    h = torch.zeros(w_h.shape[0])  # h_0 = 0, shape (D_h,)
    for x_t in x:  # one step per position: step t needs the state of step t - 1
        h = torch.tanh(x_t @ w_x + h @ w_h)  # (D_h,)
    return h


def solution_vocabulary() -> dict[str, str]:
    return {
        "SDPA": "function",  # no weights: softmax(Q K^T / sqrt(d_k)) V
        "MHA": "layer",  # learned projections around SDPA, one call per head
        "self-attention": "usage",  # query, key and value from the same sequence
        "Transformer": "architecture",  # the whole encoder-decoder model
    }


def solution_softmax(scores: torch.Tensor) -> torch.Tensor:
    shifted = scores - scores.amax(dim=-1, keepdim=True)  # same softmax, largest exponent is 0
    e = shifted.exp()
    return e / e.sum(dim=-1, keepdim=True)


def solution_gaussian_pooling(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, width: float
) -> torch.Tensor:
    scores = -((queries[:, None] - keys[None, :]) ** 2) / (2 * width**2)  # (Tq, Tk)
    weights = torch.softmax(scores, dim=-1)  # each row sums to 1
    return weights @ values  # (Tq,)


def solution_additive_scores(
    query: torch.Tensor, key: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor
) -> torch.Tensor:
    q = (query @ w_q).unsqueeze(2)  # (B, Tq, 1, h)
    k = (key @ w_k).unsqueeze(1)  # (B, 1, Tk, h)
    return torch.tanh(q + k) @ w_v  # (B, Tq, Tk, h) @ (h,) -> (B, Tq, Tk)


def solution_bilinear_scores(
    query: torch.Tensor, key: torch.Tensor, w: torch.Tensor
) -> torch.Tensor:
    projected = query @ w  # (B, Tq, Dk): now the query has the key's width
    return projected @ key.transpose(-2, -1) / math.sqrt(key.shape[-1])  # (B, Tq, Tk)


def solution_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    d_k = query.shape[-1]
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (..., Tq, Tk)
    weights = torch.softmax(scores, dim=-1)  # (..., Tq, Tk), rows sum to 1
    return weights @ value  # (..., Tq, Dv)


def solution_attention_shapes(q_shape: tuple, k_shape: tuple, v_shape: tuple) -> tuple:
    *lead, tq, d = q_shape
    tk, d_k = k_shape[-2:]
    tv, dv = v_shape[-2:]
    if d != d_k:
        raise ValueError(f"query width {d} != key width {d_k}")
    if tk != tv:
        raise ValueError(f"key length {tk} != value length {tv}")
    return (*lead, tq, tk), (*lead, tq, dv)


def solution_dot_product_variance(d_k: int, std_q: float, std_k: float) -> float:
    # q . k is a sum of d_k independent terms q_i k_i, each with variance std_q**2 * std_k**2
    return d_k * std_q**2 * std_k**2


def solution_softmax_jacobian(p: torch.Tensor) -> torch.Tensor:
    return torch.diag(p) - torch.outer(p, p)  # J[i, j] = p_i * (1[i = j] - p_j)
