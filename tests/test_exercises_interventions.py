"""The checkers of lesson 18 name typical mistakes (what all checkers do: test_exercises.py)."""

from __future__ import annotations

import pytest
import torch

import attention.exercises as E
from attention.exercises import interventions as M
from attention.exercises import solution_interventions as S
from attention.models.interventions import attention_rollout
from tests.checker_answers import run, wrong_answer


def test_three_checkers_each_with_a_solution(capsys):
    assert len(M.__all__) == 3 and set(M.__all__) <= set(E.__all__)
    for name in M.__all__:
        ok, out = run(getattr(E, name), getattr(S, name.replace("check_", "solution_")), capsys)
        assert ok, out


def test_the_solution_is_the_packaged_rollout():
    w = torch.softmax(torch.randn(4, 3, 6, 6, generator=torch.Generator().manual_seed(1)), -1)
    torch.testing.assert_close(S.solution_rollout(w), attention_rollout(w[:, None])[0])


def _chain(weights, step, order="left"):
    out = torch.eye(weights.shape[-1])
    for layer in weights:
        a = step(layer)
        out = a @ out if order == "left" else out @ a
    return out


def _half(layer):
    a = 0.5 * layer.mean(0) + 0.5 * torch.eye(layer.shape[-1])
    return a / a.sum(-1, keepdim=True)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda w: _chain(w, lambda x: x.mean(0)), "you left out the identity term"),
        (
            lambda w: _chain(w, lambda x: x.mean(0) + torch.eye(x.shape[-1])),
            "you added the identity without renormalising",
        ),
        (lambda w: _chain(w, _half, order="right"), "you multiplied in the wrong order"),
        (
            lambda w: _chain(w, lambda x: _half(x.amax(0)[None])),
            "you took the largest weight over the heads",
        ),
        (lambda w: _chain(w, _half)[:, :-1], "shape"),
        (lambda w: _chain(w, _half) * 1.1, "wrong value"),
    ],
)
def test_rollout_mistakes(wrong, message, capsys):
    wrong_answer(E.check_rollout, wrong, message, capsys)


def _d(x, a, b):
    return x[a] - x[b]


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (
            lambda c, k, p, a, b: (_d(c, a, b) - _d(p, a, b)) / (_d(c, a, b) - _d(k, a, b)),
            "you measured the wrong direction",
        ),
        (lambda c, k, p, a, b: _d(p, a, b) - _d(k, a, b), "you did not normalise"),
        (
            lambda c, k, p, a, b: (p[a] - k[a]) / (c[a] - k[a]),
            "you used the answer's logit alone",
        ),
        (
            lambda c, k, p, a, b: (
                (p.softmax(-1)[a] - k.softmax(-1)[a]) / (c.softmax(-1)[a] - k.softmax(-1)[a])
            ),
            "you used probabilities",
        ),
        (lambda c, k, p, a, b: torch.zeros(2), "expected one number"),
    ],
)
def test_patching_effect_mistakes(wrong, message, capsys):
    wrong_answer(E.check_patching_effect, wrong, message, capsys)


def test_patching_effect_accepts_a_float(capsys):
    def as_float(c, k, p, a, b):
        return float(S.solution_patching_effect(c, k, p, a, b))

    ok, out = run(E.check_patching_effect, as_float, capsys)
    assert ok, out


def _occlusion_piling_up(score, ids, blank):
    full = score(ids[None])[0]
    x = ids.clone()
    out = []
    for pos in range(len(ids)):
        x[pos] = blank  # never restored
        out.append(full - score(x[None])[0])
    return torch.stack(out)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda s, i, b: -S.solution_occlusion(s, i, b), "the sign is flipped"),
        (_occlusion_piling_up, "your blanks pile up"),
        (
            lambda s, i, b: s(i[None])[0] - S.solution_occlusion(s, i, b),
            "you returned the score without each token",
        ),
        (lambda s, i, b: S.solution_occlusion(s, i, b)[:-1], "shape"),
    ],
)
def test_occlusion_mistakes(wrong, message, capsys):
    wrong_answer(E.check_occlusion, wrong, message, capsys)


def test_a_stub_is_not_attempted(capsys):
    def my_rollout(weights):
        raise NotImplementedError

    ok, out = run(E.check_rollout, my_rollout, capsys)
    assert not ok and "Not attempted yet" in out
