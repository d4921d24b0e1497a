"""Checkers of lessons 1-5: references pass, stubs are "not attempted", typical mistakes named."""

import math

import pytest
import torch

from attention.exercises import basics
from attention.exercises import solution_basics as S
from attention.exercises.basics import (
    check_additive_scores,
    check_attention,
    check_attention_shapes,
    check_bilinear_scores,
    check_dot_product_variance,
    check_gaussian_pooling,
    check_rnn_final_state,
    check_softmax,
    check_softmax_jacobian,
    check_vocabulary,
)


def run(check, fn, capsys):
    """Run a checker; return (its bool, what it printed)."""
    ok = check(fn)
    return ok, capsys.readouterr().out


def test_returning_a_non_tensor_is_named(capsys):
    ok, out = run(check_softmax, lambda scores: scores.tolist(), capsys)
    assert not ok and "expected a torch.Tensor, got list" in out


# --- lesson 1 ----------------------------------------------------------------------------------


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


# --- lesson 2 ----------------------------------------------------------------------------------


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


# --- lesson 3 ----------------------------------------------------------------------------------


def additive(inner, outer=lambda f, w_v: torch.tanh(f) @ w_v, transpose=False):
    def my_scores(query, key, w_q, w_k, w_v):
        scores = outer(inner((query @ w_q).unsqueeze(2), (key @ w_k).unsqueeze(1)), w_v)
        return scores.transpose(1, 2) if transpose else scores

    return my_scores


@pytest.mark.parametrize(
    "fn, message",
    [
        (additive(torch.add, outer=lambda f, w_v: f @ w_v), "the tanh is missing"),
        (additive(torch.add, outer=lambda f, w_v: torch.tanh(f @ w_v)), "tanh goes inside"),
        (additive(torch.mul), "added, not multiplied"),
        (additive(torch.add, transpose=True), "yours are transposed"),
        (
            lambda *a: torch.softmax(S.solution_additive_scores(*a), -1),
            "you returned the softmax weights",
        ),
    ],
)
def test_additive_mistakes(fn, message, capsys):
    ok, out = run(check_additive_scores, fn, capsys)
    assert not ok and message in out, out


@pytest.mark.parametrize(
    "fn, message",
    [
        (
            lambda q, k, w: q @ w @ k.transpose(1, 2),
            "not scaled: divide them by sqrt(Dk) = sqrt(8)",
        ),
        (lambda q, k, w: q @ w @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), "not by sqrt(Dq)"),
        (lambda q, k, w: q @ w @ k.transpose(1, 2) / k.shape[-1], "you divided by Dk = 8 itself"),
        (
            lambda q, k, w: q @ w @ k.transpose(1, 2) * math.sqrt(k.shape[-1]),
            "you multiplied the scores by sqrt(Dk) = sqrt(8) instead of dividing",
        ),
        (lambda q, k, w: k @ (q @ w).transpose(1, 2) / math.sqrt(8), "yours are transposed"),
        (lambda q, k, w: q @ (k @ w.T).transpose(1, 2), "not scaled"),
    ],
)
def test_bilinear_mistakes(fn, message, capsys):
    ok, out = run(check_bilinear_scores, fn, capsys)
    assert not ok and message in out, out


# --- lesson 4 ----------------------------------------------------------------------------------


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


# --- lesson 5 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda d, a, b: math.sqrt(d) * a * b, "you returned the standard deviation"),
        (lambda d, a, b: d * a * b, "the stds must be squared"),
        (lambda d, a, b: d, "the spread of the entries matters too"),
        (lambda d, a, b: d * (a**2 + b**2), "variances of a product multiply"),
        (lambda d, a, b: d * a**2 * b**2 + 1, "(64, 1.0, 1.0): expected 64, got 65"),
        (lambda d, a, b: "d_k", "(64, 1.0, 1.0): expected a number, got str 'd_k'"),
    ],
)
def test_dot_product_variance_mistakes(fn, message, capsys):
    ok, out = run(check_dot_product_variance, fn, capsys)
    assert not ok and message in out, out


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda p: torch.diag(p), "only the diagonal part"),
        (lambda p: -torch.outer(p, p), "the diagonal term diag(p) is missing"),
        (lambda p: torch.outer(p, p) - torch.diag(p), "the sign is flipped"),
        (lambda p: torch.diag(p * (1 - p)), "off-diagonal entries are -p_i p_j"),
        (lambda p: torch.eye(len(p)), "wrong value at position (0, 0)"),
    ],
)
def test_softmax_jacobian_mistakes(fn, message, capsys):
    ok, out = run(check_softmax_jacobian, fn, capsys)
    assert not ok and message in out, out


def test_the_variance_formula_matches_samples():
    """The checker's formula is true: var(q . k) = d_k std_q^2 std_k^2 within sampling error."""
    g = torch.Generator().manual_seed(0)
    for d, a, b in basics.VARIANCE_CASES:
        q = torch.randn(200_000, d, generator=g) * a
        k = torch.randn(200_000, d, generator=g) * b
        want = S.solution_dot_product_variance(d, a, b)
        assert (q * k).sum(-1).var().item() == pytest.approx(want, rel=0.03)
