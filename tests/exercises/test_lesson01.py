"""The checkers of lesson 1 (why attention) name typical mistakes (what all checkers do:
test_kit.py)."""

from __future__ import annotations

import pytest
import torch

from attention.exercises import check_rnn_final_state, check_vocabulary
from attention.exercises.solutions import lesson01 as S
from tests.exercises.checker_answers import run


def rnn_all_states(x, w_x, w_h):
    h, states = torch.zeros(w_h.shape[0]), []
    for x_t in x:
        h = torch.tanh(x_t @ w_x + h @ w_h)
        states.append(h)
    return torch.stack(states)


def rnn_no_tanh(x, w_x, w_h):
    h = torch.zeros(w_h.shape[0])
    for x_t in x:
        h = x_t @ w_x + h @ w_h
    return h


def rnn_no_recurrence(x, w_x, w_h):
    return torch.tanh(x[-1] @ w_x)


def rnn_off_by_a_bit(x, w_x, w_h):
    return S.solution_rnn_final_state(x, w_x, w_h) + 0.01


@pytest.mark.parametrize(
    "fn, message",
    [
        (rnn_all_states, "you returned every state h_1..h_T"),
        (rnn_no_tanh, "the tanh is missing"),
        (rnn_no_recurrence, "h_T ignores the previous state"),
        (rnn_off_by_a_bit, "final state: wrong value at position (0,): expected "),
    ],
)
def test_rnn_mistakes(fn, message, capsys):
    ok, out = run(check_rnn_final_state, fn, capsys)
    assert not ok and message in out, out


def test_vocabulary_mistakes(capsys):
    answers = S.solution_vocabulary() | {"self-attention": "layer"}
    ok, out = run(check_vocabulary, lambda: answers, capsys)
    assert not ok
    assert "self-attention is not 'layer': self-attention is a way of using" in out
    assert "SDPA" not in out  # only the wrong term is explained

    ok, out = run(check_vocabulary, lambda: {"SDPA": "function"}, capsys)
    assert not ok and "missing term 'MHA'" in out

    answers = S.solution_vocabulary() | {"MHA": "a module"}
    ok, out = run(check_vocabulary, lambda: answers, capsys)
    assert not ok and "MHA: 'a module' is not one of" in out


def test_vocabulary_accepts_case_and_spacing(capsys):
    answers = {
        "sdpa": "Function ",
        "mha": "LAYER",
        "Self attention": "usage",
        "transformer": "architecture",
    }
    ok, out = run(check_vocabulary, lambda: answers, capsys)
    assert ok, out
