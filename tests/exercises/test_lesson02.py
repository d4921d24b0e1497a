"""The checkers of lesson 2 (attention as weighted averaging) name typical mistakes (what all
checkers do: test_kit.py)."""

from __future__ import annotations

import pytest
import torch

from attention.exercises import check_gaussian_pooling, check_softmax
from tests.exercises.checker_answers import run


def test_returning_a_non_tensor_is_named(capsys):
    ok, out = run(check_softmax, lambda scores: scores.tolist(), capsys)
    assert not ok and "expected a torch.Tensor, got list" in out


def softmax_shifted_by_min(scores):
    e = (scores - scores.amin(-1, keepdim=True)).exp()  # fine for small spreads only
    return e / e.sum(-1, keepdim=True)


def softmax_shifted_by_global_max(scores):
    e = (scores - scores.max()).exp()  # one max for the whole tensor, not one per row
    return e / e.sum(-1, keepdim=True)


def test_shifting_by_the_min_passes_everything_but_a_wide_spread():
    """Why check_softmax needs the [0, 1000] row: the min shift is right on the other inputs."""
    huge = torch.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -999.0]])
    torch.testing.assert_close(softmax_shifted_by_min(huge), torch.softmax(huge, -1))
    assert softmax_shifted_by_min(torch.tensor([0.0, 1000.0])).isnan().any()


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda s: torch.softmax(s, dim=0), "softmax over dim=0"),
        (lambda s: s.exp() / s.exp().sum(dim=1, keepdim=True), "softmax over dim=1 works for 2-D"),
        (lambda s: s.exp(), "did not divide by the row sum"),
        (lambda s: s / s.sum(-1, keepdim=True), "the exp is missing"),
        (lambda s: s.exp() / s.exp().sum(-1, keepdim=True), "exp(1000) overflows"),
        (softmax_shifted_by_min, "subtract the row's maximum, not its minimum: exp overflows"),
        (softmax_shifted_by_global_max, "you subtracted the max of the whole tensor"),
    ],
)
def test_softmax_mistakes(fn, message, capsys):
    ok, out = run(check_softmax, fn, capsys)
    assert not ok and message in out, out


def pooling(score, dim=-1, normalise=True):
    def my_pooling(queries, keys, values, width):
        s = score(queries[:, None] - keys[None, :], width)
        w = torch.softmax(s, dim=dim) if normalise else s.exp()
        return w @ values

    return my_pooling


@pytest.mark.parametrize(
    "fn, message",
    [
        (pooling(lambda d, w: -(d**2) / (2 * w**2), normalise=False), "are not normalised"),
        (pooling(lambda d, w: -d.abs() / (2 * w**2)), "use the squared distance"),
        (pooling(lambda d, w: -(d**2) / (2 * w)), "it enters squared"),
        (pooling(lambda d, w: -(d**2) / w**2), "has a factor 1/2"),
        (pooling(lambda d, w: d**2 / (2 * w**2)), "must be minus the squared distance"),
        (pooling(lambda d, w: -(d**2) / (2 * w**2), dim=0), "softmax over the queries"),
        (
            lambda q, k, v, w: torch.softmax(-((q[:, None] - k) ** 2) / (2 * w**2), -1),
            "you returned the weights (Tq, Tk)",
        ),
        (lambda q, k, v, w: torch.full_like(q, v.mean()), "wrong value at position (0,)"),
    ],
)
def test_gaussian_pooling_mistakes(fn, message, capsys):
    ok, out = run(check_gaussian_pooling, fn, capsys)
    assert not ok and message in out, out
