"""The checkers of lesson 6 (masks) name typical mistakes (what all checkers do:
test_kit.py)."""

from __future__ import annotations

import pytest
import torch

import attention as A
import attention.exercises as E
from attention.exercises.solutions import lesson06 as S
from tests.exercises.checker_answers import run


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool), 1), "True = may attend"),
        (lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool)), "see the future"),
        (lambda n: torch.tril(torch.ones(n, n, dtype=torch.bool), -1), "masked the diagonal"),
        (lambda n: torch.tril(torch.ones(n, n)), "wrong dtype: expected torch.bool"),
        (lambda n: A.to_additive_mask(A.causal_mask(n)), "additive mask (0 and -inf)"),
        (lambda n: torch.ones(n, n, dtype=torch.bool), "wrong value at position (0, 1)"),
        (lambda n: A.causal_mask(n)[None], "wrong shape: expected (5, 5), got (1, 5, 5)"),
    ],
)
def test_causal_mask_mistakes(wrong, message, capsys):
    ok, out = run(E.check_causal_mask, wrong, capsys)
    assert ok is False
    assert message in out


def _softmax_filled(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda s, m: torch.softmax(s.masked_fill(~m, float("-inf")), -1), "is NaN"),
        (_softmax_filled, "sums to 1 (uniform weights)"),
        (lambda s, m: torch.softmax(s, -1), "never applied the mask"),
        (lambda s, m: torch.softmax(s, -1) * m, "masked after the softmax"),
        (lambda s, m: S.solution_masked_softmax(s, ~m), "True in the mask means keep"),
        (lambda s, m: A.masked_softmax(s, m, dim=-2), "wrong axis"),
        (lambda s, m: S.solution_masked_softmax(s, m)[..., :4], "wrong shape: expected (2, 3, 5)"),
    ],
)
def test_masked_softmax_mistakes(wrong, message, capsys):
    ok, out = run(E.check_masked_softmax, wrong, capsys)
    assert ok is False
    assert message in out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda m: m[:, 0], "True = ignore this key. Invert it"),
        (lambda m: ~m, "got (3, 1, 6). key_padding_mask has no query axis"),
        (lambda m: (~m[:, 0]).float(), "wrong dtype: expected torch.bool (True = ignore)"),
        (lambda m: ~m[:, 0, :-1], "wrong shape: expected (3, 6), got (3, 5)"),
    ],
)
def test_key_padding_mask_mistakes(wrong, message, capsys):
    ok, out = run(E.check_key_padding_mask, wrong, capsys)
    assert ok is False
    assert message in out


def test_checkers_do_not_let_the_learner_change_their_inputs(capsys):
    def vandal(scores, mask):
        weights = S.solution_masked_softmax(scores, mask)
        scores.zero_()
        mask.fill_(True)
        return weights

    assert E.check_masked_softmax(vandal) is True
