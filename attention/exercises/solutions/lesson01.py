"""Reference solutions to the exercises of lesson 1 (checked by attention.exercises.lesson01).

Lesson 1 (why attention) shows the same code in hidden cells tagged `solution` and runs its
checker on it; tests/exercises/test_solution_copies.py keeps the two equal.
"""

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
