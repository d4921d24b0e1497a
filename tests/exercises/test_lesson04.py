"""The checkers of lesson 4 (scaled dot-product attention) name typical mistakes (what all checkers
do: test_kit.py)."""

from __future__ import annotations

import math

import pytest
import torch

from attention.exercises import check_attention, check_attention_shapes
from attention.exercises.solutions import lesson04 as S
from tests.exercises.checker_answers import run


def attention(scale=lambda d, dv: math.sqrt(d), dim=-1, weights_only=False, use_T=False):
    def my_attention(query, key, value):
        k_t = key.T if use_T else key.transpose(-2, -1)
        weights = torch.softmax(query @ k_t / scale(query.shape[-1], value.shape[-1]), dim=dim)
        return weights if weights_only else weights @ value

    return my_attention


@pytest.mark.parametrize(
    "fn, message",
    [
        (attention(scale=lambda d, dv: 1.0), "not scaled: divide them by sqrt(d_k) = sqrt(8)"),
        (attention(scale=lambda d, dv: d), "you divided by d_k = 8 itself; divide by its square"),
        (
            attention(scale=lambda d, dv: 1 / math.sqrt(d)),
            "you multiplied the scores by sqrt(d_k) = sqrt(8) instead of dividing",
        ),
        (attention(scale=lambda d, dv: math.sqrt(dv)), "you divided by sqrt(d_v) = sqrt(3)"),
        (attention(dim=-2), "softmax over the queries (dim=-2)"),
        (attention(weights_only=True), "you returned the weights (..., Tq, Tk)"),
        (attention(use_T=True), "use key.transpose(-2, -1) rather than key.T"),
    ],
)
@pytest.mark.filterwarnings("ignore:The use of `x.T`:UserWarning")  # the key.T mistake
def test_attention_mistakes(fn, message, capsys):
    ok, out = run(check_attention, fn, capsys)
    assert not ok and message in out, out


def test_attention_wrong_values_name_a_position(capsys):
    ok, out = run(check_attention, lambda q, k, v: attention()(q, k, v) * 1.5, capsys)
    assert not ok
    assert (
        "output for query (4, 8), key (6, 8), value (6, 3): wrong value at position (0, 0)" in out
    )


def shapes(output=None, scores=None, check=True):
    def my_shapes(q_shape, k_shape, v_shape):
        if check:
            S.solution_attention_shapes(q_shape, k_shape, v_shape)
        *lead, tq, d = q_shape
        tk, dv = k_shape[-2], v_shape[-1]
        s = scores(lead, tq, tk) if scores else (*lead, tq, tk)
        o = output(lead, tq, tk, d, dv) if output else (*lead, tq, dv)
        return s, o

    return my_shapes


def requires_equal_lengths(q_shape, k_shape, v_shape):
    if q_shape[-2] != k_shape[-2]:
        raise ValueError  # no message: the checker must still say what is wrong
    return S.solution_attention_shapes(q_shape, k_shape, v_shape)


def refuses_everything(q_shape, k_shape, v_shape):
    raise ValueError("no")


@pytest.mark.parametrize(
    "fn, message",
    [
        (shapes(output=lambda lead, tq, tk, d, dv: (*lead, tk, dv)), "not per key (Tk = 7)"),
        (shapes(output=lambda lead, tq, tk, d, dv: (*lead, tq, d)), "follows the values (Dv = 32)"),
        (shapes(scores=lambda lead, tq, tk: (*lead, tk, tq)), "one row per query; you gave (7, 5)"),
        (shapes(check=False), "query width 16 and key width 8 differ"),
        (lambda q, k, v: (q, v), "scores shape: expected (5, 7), got (5, 16)"),
        (lambda q, k, v: q, "return a pair of shapes (scores_shape, output_shape)"),
        (lambda q, k, v: 3, "return a pair (scores_shape, output_shape)"),
        (
            requires_equal_lengths,
            "requires_equal_lengths((5, 16), (7, 16), (7, 32)) raised ValueError, but queries "
            "and keys may have different lengths (Tq = 5, Tk = 7), as in cross-attention",
        ),
        (
            refuses_everything,
            "refuses_everything raised ValueError: no, but these shapes are valid: "
            "expected ((5, 7), (5, 32))",
        ),
    ],
)
def test_attention_shapes_mistakes(fn, message, capsys):
    ok, out = run(check_attention_shapes, fn, capsys)
    assert not ok and message in out, out


def test_attention_shapes_must_raise_value_error_for_unequal_lengths(capsys):
    def my_shapes(q_shape, k_shape, v_shape):
        if q_shape[-1] != k_shape[-1]:
            raise ValueError("widths")
        *lead, tq, _ = q_shape
        return (*lead, tq, k_shape[-2]), (*lead, tq, v_shape[-1])

    ok, out = run(check_attention_shapes, my_shapes, capsys)
    assert not ok and "key has 7 positions and value 6" in out, out

    def raises_type_error(q_shape, k_shape, v_shape):
        if q_shape[-1] != k_shape[-1]:
            raise TypeError("widths")
        return S.solution_attention_shapes(q_shape, k_shape, v_shape)

    ok, out = run(check_attention_shapes, raises_type_error, capsys)
    assert not ok and "raised TypeError; raise ValueError" in out, out


def test_attention_shapes_accepts_lists_and_torch_sizes(capsys):
    def my_shapes(q_shape, k_shape, v_shape):
        s, o = S.solution_attention_shapes(q_shape, k_shape, v_shape)
        return [list(s), torch.Size(o)]

    ok, out = run(check_attention_shapes, my_shapes, capsys)
    assert ok, out
