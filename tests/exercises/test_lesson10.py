"""The checkers of lesson 10 (the Transformer block) name typical mistakes (what all checkers do:
test_kit.py)."""

from __future__ import annotations

import pytest

import attention as A
import attention.exercises as E
from attention.exercises.solutions import lesson10 as S
from tests.exercises.checker_answers import run


def _norm(x, gamma, beta, eps, dims=-1, correction=0, eps_inside=True, scale=True, shift=True):
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, keepdim=True, correction=correction)
    y = (x - mean) / ((var + eps).sqrt() if eps_inside else var.sqrt() + eps)
    return y * (gamma if scale else 1) + (beta if shift else 0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dims": 0}, "over the batch (dim 0): that is BatchNorm's axis"),
        ({"dims": (0, 1)}, "that is BatchNorm1d"),
        ({"dims": 1}, "over the positions (dim 1)"),
        ({"correction": 1}, "unbiased variance"),
        ({"eps_inside": False}, "eps is in the wrong place"),
        ({"scale": False, "shift": False}, "forgot gamma and beta"),
        ({"shift": False}, "you scaled by gamma but forgot the shift beta"),
        ({"scale": False}, "you shifted by beta but forgot the scale gamma"),
    ],
)
def test_layer_norm_mistakes(kwargs, message, capsys):
    def wrong(x, gamma, beta, eps):
        return _norm(x, gamma, beta, eps, **kwargs)

    ok, out = run(E.check_layer_norm, wrong, capsys)
    assert ok is False
    assert message in out


def test_layer_norm_without_eps_is_named(capsys):
    def no_eps(x, gamma, beta, eps):
        return (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True, correction=0) * gamma + beta

    ok, out = run(E.check_layer_norm, no_eps, capsys)
    assert ok is False
    assert "NaN or inf for the constant token" in out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda m, f: 12 * m * m, "the textbook 12 M^2"),
        (lambda m, f: 4 * m * m + 2 * m * f, "counted the weight matrices only"),
        (
            lambda m, f: (
                12 * m * m if f != 4 * m else S.solution_encoder_layer_parameter_count(m, f)
            ),
            "12 M^2 is the textbook estimate",
        ),
        (lambda m, f: 4 * m * m + 4 * m + 2 * m * f + f + m, "Add the two LayerNorms"),
        (
            lambda m, f: 4 * m * m + 4 * m + 2 * m * f + f + m + 2 * m,  # two gammas, no beta
            "each has a gamma (scale) AND a beta (shift) of size M, did you forget beta?",
        ),
        (
            lambda m, f: S.solution_encoder_layer_parameter_count(m, 4 * m),
            "You assumed d_ff = 4 * d_model",
        ),
        (
            lambda m, f: S.solution_encoder_layer_parameter_count(m, f) + 1,
            "for d_model=8, d_ff=32: expected 872, got 873",
        ),
    ],
)
def test_parameter_count_mistakes(wrong, message, capsys):
    ok, out = run(E.check_parameter_count, wrong, capsys)
    assert ok is False
    assert message in out


def test_parameter_count_reference_agrees_with_the_formula_at_4x():
    m = 64
    exact = S.solution_encoder_layer_parameter_count(m, 4 * m)
    biases_and_norms = 4 * m + (4 * m + m) + 2 * 2 * m
    assert exact - biases_and_norms == A.parameter_formula(m)["encoder_layer"]
