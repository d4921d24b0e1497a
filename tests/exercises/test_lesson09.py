"""The checkers of lesson 9 (positional encoding) name typical mistakes (what all checkers do:
test_kit.py)."""

from __future__ import annotations

import pytest
import torch

import attention as A
import attention.exercises as E
from tests.exercises.checker_answers import run

INVARIANCE = "reverse order: shuffling its input leaves every sum, mean or sorted list over the "


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda f, x, p: torch.allclose(f(x[:, p]), f(x), atol=1e-5), "said False for plain"),
        (lambda f, x, p: bool((f(x[:, p]) == f(x)[:, p]).all()), "said False for plain"),
        (lambda f, x, p: torch.allclose(f(x[:, p]), f(x)[:, p.argsort()]), "said False"),
        (lambda f, x, p: True, "you said True for self-attention with positional encodings"),
        (lambda f, x, p: f(x[:, p]), "expected a bool"),
        # tests of invariance, the misconception the exercise is about: rejected and named
        (lambda f, x, p: torch.allclose(f(x[:, p]).sum(1), f(x).sum(1), atol=1e-5), INVARIANCE),
        (lambda f, x, p: torch.allclose(f(x[:, p]).mean(1), f(x).mean(1), atol=1e-6), INVARIANCE),
        (
            lambda f, x, p: torch.allclose(f(x[:, p]).sort(1).values, f(x).sort(1).values),
            INVARIANCE,
        ),
    ],
)
def test_permutation_equivariance_mistakes(wrong, message, capsys):
    ok, out = run(E.check_permutation_equivariance, wrong, capsys)
    assert ok is False
    assert message in out


def _pe_per_column_exponent(t, m):
    """The j/d mistake: column j gets the angle pos / 10000^(j/M), even columns sin, odd cos."""
    pos = torch.arange(t, dtype=torch.float32)[:, None]  # (T, 1)
    j = torch.arange(m, dtype=torch.float32)  # (M,)
    angle = pos / 10000 ** (j / m)  # (T, M)
    return torch.where(j % 2 == 0, torch.sin(angle), torch.cos(angle))


def test_positional_encoding_exponent_per_column_is_named(capsys):
    ok, out = run(E.check_positional_encoding, _pe_per_column_exponent, capsys)
    assert ok is False
    assert "column j used the exponent j / d_model, so each cosine got its own frequency" in out


def _pe_table(t, m, *, sin_first=True, interleave=True, exponent_scale=1.0, start=0):
    pos = torch.arange(start, start + t, dtype=torch.float32)[:, None]  # (T, 1)
    two_i = torch.arange(0, m, 2, dtype=torch.float32)  # (M/2,)
    angle = pos / 10000 ** (exponent_scale * two_i / m)  # (T, M/2)
    a, b = (
        (torch.sin(angle), torch.cos(angle)) if sin_first else (torch.cos(angle), torch.sin(angle))
    )
    return torch.stack([a, b], -1).reshape(t, m) if interleave else torch.cat([a, b], -1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sin_first": False}, "sine and cosine are swapped"),
        ({"interleave": False}, "all the sines first"),
        ({"exponent_scale": 0.5}, "the exponent is 2i / d_model"),
        ({"start": 1}, "positions start at 0, not 1"),
        ({"exponent_scale": 2.0}, "wrong value at position"),
    ],
)
def test_positional_encoding_mistakes(kwargs, message, capsys):
    ok, out = run(E.check_positional_encoding, lambda t, m: _pe_table(t, m, **kwargs), capsys)
    assert ok is False
    assert message in out


def test_positional_encoding_helper_matches_the_core_when_right():
    torch.testing.assert_close(_pe_table(7, 10), A.sinusoidal_positional_encoding(7, 10))
