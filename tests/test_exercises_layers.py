"""The checkers of lessons 6-10 name typical mistakes (what all checkers do: test_exercises.py)."""

from __future__ import annotations

import math

import pytest
import torch

import attention as A
import attention.exercises as E
from attention.exercises import solution_layers as S

RETURNING_TENSORS = [
    (E.check_causal_mask, S.solution_causal_mask),
    (E.check_masked_softmax, S.solution_masked_softmax),
    (E.check_key_padding_mask, S.solution_to_key_padding_mask),
    (E.check_self_attention, S.solution_self_attention),
    (E.check_attention_pool, S.solution_attention_pool),
    (E.check_split_heads, S.solution_split_heads),
    (E.check_multi_head_scores, S.solution_multi_head_scores),
    (E.check_permutation_equivariance, S.solution_is_permutation_equivariant),
    (E.check_positional_encoding, S.solution_sinusoidal_pe),
    (E.check_layer_norm, S.solution_layer_norm),
]


def run(check, fn, capsys) -> tuple[bool, str]:
    ok = check(fn)
    return ok, capsys.readouterr().out


@pytest.mark.parametrize(
    ("check", "solution"), RETURNING_TENSORS, ids=[c[0].__name__ for c in RETURNING_TENSORS]
)
def test_forgetting_return_is_named(check, solution, capsys):
    def my_answer(*args):
        solution(*args)  # computes, but returns nothing

    ok, out = run(check, my_answer, capsys)
    assert ok is False
    assert "returned None; did you forget `return`?" in out or "expected a bool" in out


# --- lesson 6 ---------------------------------------------------------------------------------


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


# --- lesson 7 ---------------------------------------------------------------------------------


def _attend(q, k, v, scale, dim=-1):
    return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=dim) @ v


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda x, wq, wk, wv: _attend(x @ wq, x @ wk, x @ wv, 1.0), "scores are not scaled"),
        (lambda x, wq, wk, wv: _attend(x @ wq, x @ wk, x @ wv, 6**-0.5), "the input width"),
        (lambda x, wq, wk, wv: _attend(x @ wq, x @ wk, x @ wv, 1 / 3), "d_k = 3 itself"),
        (
            lambda x, wq, wk, wv: _attend(x @ wq, x @ wk, x @ wv, 3**0.5),
            "you multiplied the scores by sqrt(d_k) = sqrt(3) instead of dividing",
        ),
        (
            lambda x, wq, wk, wv: _attend(x @ wk, x @ wq, x @ wv, 3**-0.5),
            "your scores are transposed: k @ q^T puts the keys on the rows",
        ),
        (lambda x, wq, wk, wv: _attend(x @ wq, x @ wk, x @ wv, 3**-0.5, -2), "wrong axis"),
        (lambda x, wq, wk, wv: _attend(x @ wq, x @ wq, x @ wv, 3**-0.5), "K = X W_k"),
        (lambda x, wq, wk, wv: _attend(x @ wq, x @ wk, x, 3**-0.5), "project the values"),
    ],
)
def test_self_attention_mistakes(wrong, message, capsys):
    ok, out = run(E.check_self_attention, wrong, capsys)
    assert ok is False
    assert message in out


def _mean_pool(x, query, mask):
    return (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda x, q, m: S.solution_attention_pool(x, q, torch.ones_like(m)), "padding leaked in"),
        (_mean_pool, "mean pooling"),
        (lambda x, q, m: S.solution_attention_pool(x, q, m)[:, None], "drop the query axis"),
    ],
)
def test_attention_pool_mistakes(wrong, message, capsys):
    ok, out = run(E.check_attention_pool, wrong, capsys)
    assert ok is False
    assert message in out


@pytest.mark.parametrize(
    ("factor", "message"),
    [
        (2.0, "the scores are not scaled: divide them by sqrt(M) = sqrt(4)"),
        (4.0, "you multiplied the scores by sqrt(M) = sqrt(4) instead of dividing"),
    ],
)
def test_attention_pool_scale_mistakes(factor, message, capsys):
    def wrong_scale(x, query, mask):  # the solution divides by sqrt(M) = 2
        return S.solution_attention_pool(x, query * factor, mask)

    ok, out = run(E.check_attention_pool, wrong_scale, capsys)
    assert ok is False
    assert message in out


# --- lesson 8 ---------------------------------------------------------------------------------


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


# --- lesson 9 ---------------------------------------------------------------------------------

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


# --- lesson 10 --------------------------------------------------------------------------------


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


def test_checkers_do_not_let_the_learner_change_their_inputs(capsys):
    def vandal(scores, mask):
        weights = S.solution_masked_softmax(scores, mask)
        scores.zero_()
        mask.fill_(True)
        return weights

    assert E.check_masked_softmax(vandal) is True
