"""The checkers of lesson 8 (multi-head attention) name typical mistakes (what all checkers do:
test_kit.py)."""

from __future__ import annotations

import math

import pytest
import torch

import attention as A
import attention.exercises as E
from attention.exercises.solutions import lesson08 as S
from tests.exercises.checker_answers import run


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1), "right shape, wrong contents"),
        (lambda x, h: x.view(*x.shape[:2], h, -1), "forgot .transpose(1, 2)"),
        (lambda x, h: x.view(*x.shape[:2], -1, h).permute(0, 3, 1, 2), "every H-th column"),
        (lambda x, h: x.view(*x.shape[:2], h, -1).permute(0, 2, 3, 1), "wrong shape"),
    ],
)
def test_split_heads_mistakes(wrong, message, capsys):
    ok, out = run(E.check_split_heads, wrong, capsys)
    assert ok is False
    assert message in out


def _scores(q, k, h, divide_by, split=A.split_heads):
    return split(q, h) @ split(k, h).transpose(-2, -1) / divide_by


def _reshape_split(x, h):
    return x.reshape(x.shape[0], h, x.shape[1], -1)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (
            lambda q, k, h: _scores(q, k, h, math.sqrt(q.shape[-1])),
            "divided by sqrt(d_model) = sqrt(12) instead of sqrt(d_head) = sqrt(12 / 3)",
        ),
        (lambda q, k, h: _scores(q, k, h, 1.0), "the scores are not scaled"),
        (lambda q, k, h: _scores(q, k, h, q.shape[-1] // h), "by d_head = 4 itself"),
        (
            lambda q, k, h: _scores(q, k, h, 0.5),
            "you multiplied the scores by sqrt(d_head) = sqrt(4) instead of dividing",
        ),
        (lambda q, k, h: _scores(q, k, h, 2.0).transpose(-2, -1), "your scores are transposed"),
        (lambda q, k, h: _scores(q, k, h, 2.0, _reshape_split), "heads are mixed up"),
    ],
)
def test_multi_head_scores_mistakes(wrong, message, capsys):
    ok, out = run(E.check_multi_head_scores, wrong, capsys)
    assert ok is False
    assert message in out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda m, h, b: 4 * m * m, "left out the biases"),
        (lambda m, h, b: 3 * m * m + 3 * m * b, "forgot the output projection"),
        (lambda m, h, b: 4 * m * m // h + 4 * m * b, "changes with n_heads"),
        (lambda m, h, b: 4 * m * m + 4 * m, "no biases to count"),
        (lambda m, h, b: "4 M^2", "expected an int, got str"),
    ],
)
def test_mha_parameter_count_mistakes(wrong, message, capsys):
    ok, out = run(E.check_mha_parameter_count, wrong, capsys)
    assert ok is False
    assert message in out


def test_mha_parameter_count_accepts_a_tensor_or_float(capsys):
    assert E.check_mha_parameter_count(
        lambda m, h, b: float(S.solution_mha_parameter_count(m, h, b))
    )
    assert E.check_mha_parameter_count(lambda m, h, b: torch.tensor(4 * m * m + 4 * m * b))
