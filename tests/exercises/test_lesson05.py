"""The checkers of lesson 5 (why divide by sqrt(d_k)) name typical mistakes (what all checkers do:
test_kit.py)."""

from __future__ import annotations

import math

import pytest
import torch

from attention.exercises import check_dot_product_variance, check_softmax_jacobian
from attention.exercises import lesson05 as M
from attention.exercises.solutions import lesson05 as S
from tests.exercises.checker_answers import run


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda d, a, b: math.sqrt(d) * a * b, "you returned the standard deviation"),
        (lambda d, a, b: d * a * b, "the stds must be squared"),
        (lambda d, a, b: d, "the spread of the entries matters too"),
        (lambda d, a, b: d * (a**2 + b**2), "variances of a product multiply"),
        (lambda d, a, b: d * a**2 * b**2 + 1, "(64, 1.0, 1.0): expected 64, got 65"),
        (lambda d, a, b: "d_k", "(64, 1.0, 1.0): expected a number, got str 'd_k'"),
    ],
)
def test_dot_product_variance_mistakes(fn, message, capsys):
    ok, out = run(check_dot_product_variance, fn, capsys)
    assert not ok and message in out, out


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda p: torch.diag(p), "only the diagonal part"),
        (lambda p: -torch.outer(p, p), "the diagonal term diag(p) is missing"),
        (lambda p: torch.outer(p, p) - torch.diag(p), "the sign is flipped"),
        (lambda p: torch.diag(p * (1 - p)), "off-diagonal entries are -p_i p_j"),
        (lambda p: torch.eye(len(p)), "wrong value at position (0, 0)"),
    ],
)
def test_softmax_jacobian_mistakes(fn, message, capsys):
    ok, out = run(check_softmax_jacobian, fn, capsys)
    assert not ok and message in out, out


def test_the_variance_formula_matches_samples():
    """The checker's formula is true: var(q . k) = d_k std_q^2 std_k^2 within sampling error."""
    g = torch.Generator().manual_seed(0)
    for d, a, b in M.VARIANCE_CASES:
        q = torch.randn(200_000, d, generator=g) * a
        k = torch.randn(200_000, d, generator=g) * b
        want = S.solution_dot_product_variance(d, a, b)
        assert (q * k).sum(-1).var().item() == pytest.approx(want, rel=0.03)
