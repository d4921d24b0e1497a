"""Checkers of lesson 5 (why divide by sqrt(d_k)): the dot product's variance, softmax's Jacobian.

Named mistakes include the square root of the wrong width. Reference solutions are in
`attention.exercises.solutions.lesson05`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from ..functional import masked_softmax
from ._checking import (
    Wrong,
    call,
    checker,
    close,
    compare,
    expect_number,
    name_mistake,
    name_of,
    randn,
)

LESSON = "05_why_sqrt_dk"
__all__ = ["check_dot_product_variance", "check_softmax_jacobian"]


VARIANCE_CASES = [(64, 1.0, 1.0), (16, 2.0, 0.5), (10, 3.0, 1.0), (1, 0.5, 0.5), (8, 1.0, 2.0)]


@checker("var(q.k) = d_k for unit entries, so its spread is sqrt(d_k): hence the division.")
def check_dot_product_variance(fn: Callable[[int, float, float], float]) -> None:
    """Check fn(d_k, std_q, std_k) -> var(q . k) for independent zero-mean entries."""
    answers = []
    for d, a, b in VARIANCE_CASES:
        got = call(fn, d, a, b)  # a str such as "64.0" is not a number, though float() takes it
        answers.append(expect_number(got, what=f"{name_of(fn)}({d}, {a}, {b})"))

    def table(formula: Callable[[int, float, float], float]) -> Tensor:  # one value per case
        return torch.tensor([formula(*case) for case in VARIANCE_CASES], dtype=torch.float64)

    got, want = torch.tensor(answers, dtype=torch.float64), table(lambda d, a, b: d * a**2 * b**2)
    mistakes = [
        (
            table(lambda d, a, b: math.sqrt(d) * a * b),
            "you returned the standard deviation; the variance is its square: "
            "d_k * std_q**2 * std_k**2",
        ),
        (
            table(lambda d, a, b: d * a * b),
            "the stds must be squared: var(q_i k_i) = var(q_i) var(k_i) = std_q**2 std_k**2",
        ),
        (
            table(lambda d, a, b: float(d)),
            "the spread of the entries matters too: each term q_i k_i has variance "
            "std_q**2 * std_k**2",
        ),
        (
            table(lambda d, a, b: d * (a**2 + b**2)),
            "variances of a product multiply, they do not add: d_k * std_q**2 * std_k**2",
        ),
    ]
    if close(got, want, atol=0.0, rtol=1e-6):
        return
    name_mistake(got, mistakes, atol=0.0, rtol=1e-6)
    i = int((~torch.isclose(got, want, atol=0.0, rtol=1e-6)).nonzero()[0])
    raise Wrong(f"{name_of(fn)}{VARIANCE_CASES[i]}: expected {want[i]:g}, got {got[i]:g}")


@checker("when p is nearly one-hot, diag(p) - p p^T is nearly 0: the gradient vanishes.")
def check_softmax_jacobian(fn: Callable[[Tensor], Tensor]) -> None:
    """Check fn(p (K,)) -> J (K, K) with J[i, j] = d softmax_i / d score_j = p_i (1[i=j] - p_j)."""
    g = torch.Generator().manual_seed(7)
    for scores in (randn(g, 5), torch.tensor([8.0, 0.0, -1.0, 0.5])):
        p = torch.softmax(scores, dim=0)
        want = torch.autograd.functional.jacobian(lambda s: masked_softmax(s), scores)  # (K, K)
        outer = torch.outer(p, p)
        mistakes = [
            (torch.diag(p), "only the diagonal part: subtract the outer product p p^T"),
            (-outer, "the diagonal term diag(p) is missing: J = diag(p) - p p^T"),
            (outer - torch.diag(p), "the sign is flipped: J = diag(p) - p p^T"),
            (torch.diag(p * (1 - p)), "off-diagonal entries are -p_i p_j, not 0"),
        ]
        what = f"Jacobian at p = {[round(x, 3) for x in p.tolist()]}"
        compare(call(fn, p), want, mistakes, what=what)
