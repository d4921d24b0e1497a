"""The checkers of lesson 15 (RoPE, windows and sinks, ALiBi, perplexity) name typical mistakes
(what all checkers do: test_kit.py)."""

from __future__ import annotations

import math

import pytest
import torch

import attention.exercises as E
from attention.masks import sliding_window_mask
from attention.positional import apply_rope
from tests.exercises.checker_answers import run, wrong_answer


def _rope_wrong_theta(x, positions, base):
    d = x.shape[-1]
    theta = base ** (-torch.arange(d // 2, dtype=torch.float64) / d)
    angles = (positions[:, None] * theta).float()
    a, b = x[:, : d // 2], x[:, d // 2 :]
    return torch.cat([a * angles.cos() - b * angles.sin(), b * angles.cos() + a * angles.sin()], -1)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda x, p, b: apply_rope(x, p, base=b, layout="interleaved"), "interleaved layout"),
        (lambda x, p, b: apply_rope(x, -p, base=b, layout="half"), "you turned the wrong way"),
        (_rope_wrong_theta, "the exponent has 2i, not i"),
        (lambda x, p, b: x, "nothing was rotated"),
        (lambda x, p, b: apply_rope(x, p + 1, base=b, layout="half"), "wrong value at position"),
    ],
)
def test_rope_half_mistakes(wrong, message, capsys):
    wrong_answer(E.check_rope_half, wrong, message, capsys)


def _mask(rule):
    def my_mask(t, w, s):
        i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
        return rule(i, j, w, s)

    return my_mask


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_mask(lambda i, j, w, s: (j <= i) & ((j >= i - w) | (j < s))), "each query sees 4 keys"),
        (_mask(lambda i, j, w, s: (j <= i) & ((j > i - w + 1) | (j < s))), "sees only 2 keys"),
        (_mask(lambda i, j, w, s: ((i - j).abs() < w) | ((j < s) & (j <= i))), "looks ahead"),
        (_mask(lambda i, j, w, s: ((j <= i) & (j > i - w)) | (j < s)), "a sink is still a key"),
        (lambda t, w, s: ~sliding_window_mask(t, w, sinks=s), "your mask is inverted"),
        (lambda t, w, s: sliding_window_mask(t, w, sinks=s).int(), "wrong dtype"),
        (lambda t, w, s: sliding_window_mask(t, w), "sinks=2"),  # the sinks forgotten
    ],
)
def test_sliding_window_mask_mistakes(wrong, message, capsys):
    wrong_answer(E.check_sliding_window_mask, wrong, message, capsys)


def _alibi(rule):
    def my_alibi(slopes, t):
        i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
        return rule(slopes[:, None, None], i, j)

    return my_alibi


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_alibi(lambda s, i, j: s * (i - j).abs()), "the sign is wrong"),
        (_alibi(lambda s, i, j: -s * (i - j)), "use the distance |i - j|"),
        (_alibi(lambda s, i, j: -s.flip(0) * (i - j).abs()), "the slopes are in the wrong order"),
        (_alibi(lambda s, i, j: -(i - j).abs().float().expand(len(s), -1, -1)), "its own slope"),
        (_alibi(lambda s, i, j: (-s * (i - j).abs())[0]), "wrong shape: expected (4, 6, 6)"),
    ],
)
def test_alibi_bias_mistakes(wrong, message, capsys):
    wrong_answer(E.check_alibi_bias, wrong, message, capsys)


def _nll(logits, ids, shift=True):
    lp = torch.log_softmax(logits[:-1] if shift else logits, -1)
    target = ids[1:] if shift else ids
    return -lp.gather(-1, target[:, None]).squeeze(-1)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda lg, ids: math.exp(_nll(lg, ids, shift=False).mean()), "predict the NEXT token"),
        (lambda lg, ids: _nll(lg, ids).mean(), "that is the mean negative log-likelihood"),
        (lambda lg, ids: math.exp(_nll(lg, ids).sum()), "average the losses"),
        (lambda lg, ids: 2 ** _nll(lg, ids).mean().item(), "use exp, not 2 **"),
        (lambda lg, ids: math.exp(-_nll(lg, ids).mean()), "at least 1, not a probability"),
        (lambda lg, ids: [1.0], "return one number"),
        (lambda lg, ids: torch.exp(_nll(lg, ids).mean()), None),  # a 0-d tensor is accepted
    ],
)
def test_perplexity_mistakes(wrong, message, capsys):
    if message is None:
        ok, out = run(E.check_perplexity, wrong, capsys)
        assert ok, out
        return
    wrong_answer(E.check_perplexity, wrong, message, capsys)
