"""Reference solutions to the exercises of lesson 2 (checked by attention.exercises.lesson02).

Lesson 2 (attention as weighted averaging) shows the same code in hidden cells tagged `solution`
and runs its checker on it; tests/exercises/test_solution_copies.py keeps the two equal.
"""

import torch


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
