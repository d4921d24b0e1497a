"""Reference solutions to the exercises of lesson 5 (checked by attention.exercises.lesson05).

Lesson 5 (why divide by sqrt(d_k)) shows the same code in hidden cells tagged `solution` and
runs its checker on it; tests/exercises/test_solution_copies.py keeps the two equal.
"""

import torch


def solution_dot_product_variance(d_k: int, std_q: float, std_k: float) -> float:
    # q . k is a sum of d_k independent terms q_i k_i, each with variance std_q**2 * std_k**2
    return d_k * std_q**2 * std_k**2


def solution_softmax_jacobian(p: torch.Tensor) -> torch.Tensor:
    return torch.diag(p) - torch.outer(p, p)  # J[i, j] = p_i * (1[i = j] - p_j)
