"""The checkers of lesson 17 name typical mistakes (what all checkers do: test_exercises.py)."""

from __future__ import annotations

import pytest
import torch

import attention.exercises as E
from attention.exercises import induction as M
from attention.exercises import solution_induction as S
from tests.checker_answers import run, wrong_answer


def test_three_checkers_each_with_a_solution(capsys):
    assert len(M.__all__) == 3 and set(M.__all__) <= set(E.__all__)
    for name in M.__all__:
        ok, out = run(getattr(E, name), getattr(S, name.replace("check_", "solution_")), capsys)
        assert ok, out


def _diag(w, offset):
    return torch.diagonal(w, offset=offset, dim1=-2, dim2=-1)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda w, n: _diag(w, -n)[..., 1:].mean(-1), "off by one position: you read key i - n,"),
        (lambda w, n: _diag(w, -(n - 2))[..., 3:].mean(-1), "you read key i - n + 2"),
        (lambda w, n: _diag(w, -(n - 1))[..., 1:].mean(-1), "you included query n"),
        (lambda w, n: _diag(w, -(n - 1))[..., 2:].sum(-1), "you summed the weights"),
        (lambda w, n: _diag(w, -1).mean(-1), "wrong value"),
    ],
)
def test_induction_score_mistakes(wrong, message, capsys):
    wrong_answer(E.check_toy_induction_score, wrong, message, capsys)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda w: _diag(w, 0).mean((0, -1)), "you counted the diagonal, each query's weight"),
        (
            lambda w: (_diag(w, 0)[..., 1:] + _diag(w, -1)).mean((0, -1)),
            "you counted the diagonal too",
        ),
        (lambda w: _diag(w, -1).sum(-1).mean(0) / w.shape[-1], "you divided by T = 7"),
        (lambda w: _diag(w, -1).mean(-1), "average over the batch (dim 0) too"),
    ],
)
def test_previous_token_score_mistakes(wrong, message, capsys):
    wrong_answer(E.check_batch_previous_token_score, wrong, message, capsys)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda m, t, layer, head: m(t).logits, "nothing was silenced"),
        (
            lambda m, t, layer, head: m(t, ablate=[(layer - 1, head)]).logits,
            "you silenced layer 0's head 1, the wrong layer",
        ),
        (
            lambda m, t, layer, head: m(t, ablate=[(layer + 1, head)]).logits,
            "you silenced layer 2's head 1, the wrong layer",
        ),
        (
            lambda m, t, layer, head: m(t, ablate=[(i, head) for i in range(3)]).logits,
            "in every layer",
        ),
        (lambda m, t, layer, head: m(t, ablate=[(layer, 0)]).logits, "you silenced head 0"),
        (lambda m, t, layer, head: None, "returned None"),
    ],
)
def test_ablation_mistakes(wrong, message, capsys):
    wrong_answer(E.check_ablate_head, wrong, message, capsys)


def test_a_stub_is_not_attempted(capsys):
    def my_ablate_head(model, tokens, layer, head):
        raise NotImplementedError

    ok, out = run(E.check_ablate_head, my_ablate_head, capsys)
    assert ok is False and out.startswith("Not attempted yet: write my_ablate_head")
