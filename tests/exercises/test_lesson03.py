"""The checkers of lesson 3 (scoring functions) name typical mistakes (what all checkers do:
test_kit.py)."""

from __future__ import annotations

import math

import pytest
import torch

from attention.exercises import check_additive_scores, check_bilinear_scores
from attention.exercises.solutions import lesson03 as S
from tests.exercises.checker_answers import run


def additive(inner, outer=lambda f, w_v: torch.tanh(f) @ w_v, transpose=False):
    def my_scores(query, key, w_q, w_k, w_v):
        scores = outer(inner((query @ w_q).unsqueeze(2), (key @ w_k).unsqueeze(1)), w_v)
        return scores.transpose(1, 2) if transpose else scores

    return my_scores


@pytest.mark.parametrize(
    "fn, message",
    [
        (additive(torch.add, outer=lambda f, w_v: f @ w_v), "the tanh is missing"),
        (additive(torch.add, outer=lambda f, w_v: torch.tanh(f @ w_v)), "tanh goes inside"),
        (additive(torch.mul), "added, not multiplied"),
        (additive(torch.add, transpose=True), "yours are transposed"),
        (
            lambda *a: torch.softmax(S.solution_additive_scores(*a), -1),
            "you returned the softmax weights",
        ),
    ],
)
def test_additive_mistakes(fn, message, capsys):
    ok, out = run(check_additive_scores, fn, capsys)
    assert not ok and message in out, out


@pytest.mark.parametrize(
    "fn, message",
    [
        (
            lambda q, k, w: q @ w @ k.transpose(1, 2),
            "not scaled: divide them by sqrt(Dk) = sqrt(8)",
        ),
        (lambda q, k, w: q @ w @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), "not by sqrt(Dq)"),
        (lambda q, k, w: q @ w @ k.transpose(1, 2) / k.shape[-1], "you divided by Dk = 8 itself"),
        (
            lambda q, k, w: q @ w @ k.transpose(1, 2) * math.sqrt(k.shape[-1]),
            "you multiplied the scores by sqrt(Dk) = sqrt(8) instead of dividing",
        ),
        (lambda q, k, w: k @ (q @ w).transpose(1, 2) / math.sqrt(8), "yours are transposed"),
        (lambda q, k, w: q @ (k @ w.T).transpose(1, 2), "not scaled"),
    ],
)
def test_bilinear_mistakes(fn, message, capsys):
    ok, out = run(check_bilinear_scores, fn, capsys)
    assert not ok and message in out, out
