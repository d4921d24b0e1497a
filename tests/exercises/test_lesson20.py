"""The checkers of lesson 20 name typical mistakes (what all checkers do: test_kit.py)."""

from __future__ import annotations

import pytest
import torch

import attention.exercises as E
from tests.exercises.checker_answers import run, wrong_answer


def window(rule):
    """A factory (window, sinks) -> mask_mod from rule(q, k, window, sinks)."""
    return lambda w, s: lambda b, h, q, k: rule(q, k, w, s)


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            lambda q, k, w, s: (q >= k) & ((q - k <= w) | (k < s)),
            "off by one: each query sees 4 keys; a window of 3 is q_idx - kv_idx < window",
        ),
        (
            lambda q, k, w, s: (q > k) & ((q - k < w) | (k < s)),
            "q_idx > kv_idx leaves out the diagonal",
        ),
        (lambda q, k, w, s: (q >= k) & ((q - k < w - 1) | (k < s)), "sees only 2 keys"),
        (lambda q, k, w, s: ((q >= k) & (q - k < w)) | (k < s), "the sinks see the future"),
        (lambda q, k, w, s: (q >= k) & (q - k < w), "the sinks are missing"),
        (lambda q, k, w, s: ((q - k).abs() < w) | ((k < s) & (q >= k)), "looks ahead too"),
        (lambda q, k, w, s: (k >= q) & ((k - q < w) | (q < s)), "you swapped q_idx and kv_idx"),
        (lambda q, k, w, s: ~((q >= k) & ((q - k < w) | (k < s))), "your mask is inverted"),
        (lambda q, k, w, s: q >= k and q - k < w, "use & | ~ with parentheses"),
        (lambda q, k, w, s: (q - k < w).int(), "mask_mod: expected bools (True = may attend)"),
        (
            lambda q, k, w, s: torch.stack([q >= k, q >= k]),
            "does not broadcast to (Tq, Tk) = (10, 10)",
        ),
    ],
)
def test_window_mistakes(rule, message, capsys):
    wrong_answer(E.check_window_sinks_mask_mod, window(rule), message, capsys)


def test_a_factory_must_return_the_function_not_a_mask(capsys):
    wrong_answer(
        E.check_window_sinks_mask_mod,
        lambda w, s: torch.ones(3, 3, dtype=torch.bool),
        "should return the function mask_mod itself (not its result), got Tensor",
        capsys,
    )
    wrong_answer(E.check_document_mask_mod, lambda ids: None, "returned None", capsys)


def test_an_error_inside_the_mask_mod_names_it(capsys):
    def my_window(w, s):
        def mask_mod(b, h, q_idx, kv_idx):
            return undefined_name  # noqa: F821

        return mask_mod

    wrong_answer(
        E.check_window_sinks_mask_mod,
        my_window,
        "mask_mod raised NameError: name 'undefined_name' is not defined",
        capsys,
    )


def document(rule):
    return lambda ids: lambda b, h, q, k: rule(ids, q, k)


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            lambda d, q, k: q >= k,
            "the mask leaks across documents: query 3 (document 1) sees key 2 of document 0",
        ),
        (lambda d, q, k: d[q] == d[k], "inside a document the mask must still be causal"),
        (lambda d, q, k: (d[q] == d[k]) & (q > k), "q_idx > kv_idx leaves out the diagonal"),
        (lambda d, q, k: (d[q] == d[k]) & (k >= q), "you swapped q_idx and kv_idx"),
        (lambda d, q, k: (d[q] >= d[k]) & (q >= k), "the mask leaks across documents"),
    ],
)
def test_document_mistakes(rule, message, capsys):
    wrong_answer(E.check_document_mask_mod, document(rule), message, capsys)


def alibi(bias):
    """A factory n_heads -> score_mod adding bias(slope, q, k) to the score."""

    def make(n):
        def score_mod(score, b, h, q, k):
            return score + bias(2.0 ** (-8.0 * (h + 1) / n), q, k, h, n)

        return score_mod

    return make


def test_the_alibi_checker_also_takes_flexattentions_signed_form(capsys):
    signed = alibi(lambda m, q, k, h, n: m * (k - q))  # FlexAttention's example: + m (k - q)
    ok, out = run(E.check_alibi_score_mod, signed, capsys)
    assert ok, out


@pytest.mark.parametrize(
    ("bias", "message"),
    [
        (lambda m, q, k, h, n: m * (q - k).abs(), "the sign of the slope"),
        (lambda m, q, k, h, n: -(2.0 ** (-8.0 / n)) * (q - k).abs(), "head 0's slope"),
        (lambda m, q, k, h, n: -(2.0 ** (-8.0 * h / n)) * (q - k).abs(), "off by one head"),
        (lambda m, q, k, h, n: -m * (q - k).abs() * 2, "wrong value at position"),
    ],
)
def test_alibi_mistakes(bias, message, capsys):
    wrong_answer(E.check_alibi_score_mod, alibi(bias), message, capsys)


def test_alibi_returning_the_bias_alone_is_named(capsys):
    def make(n):
        return lambda score, b, h, q, k: -(2.0 ** (-8.0 * (h + 1) / n)) * (q - k).abs()

    wrong_answer(E.check_alibi_score_mod, make, "not the bias alone", capsys)


def test_alibi_with_an_integer_score_is_refused_by_the_core(capsys):
    wrong_answer(
        E.check_alibi_score_mod,
        lambda n: lambda score, b, h, q, k: q - k,
        "score_mod: expected floating scores, got torch.int64",
        capsys,
    )


@pytest.mark.parametrize(
    ("mod", "message"),
    [
        (lambda c: lambda s, b, h, q, k: c * torch.tanh(s), "divide inside too"),
        (lambda c: lambda s, b, h, q, k: torch.tanh(s / c), "multiply by cap again"),
        (lambda c: lambda s, b, h, q, k: s.clamp(-c, c), "that is a hard clamp"),
        (lambda c: lambda s, b, h, q, k: torch.tanh(s) / c, "not tanh(score) / cap"),
        (lambda c: lambda s, b, h, q, k: s, "returned the scores unchanged"),
        (lambda c: lambda s, b, h, q, k: c * torch.tanh(s / c) + 1, "wrong value at position"),
    ],
)
def test_softcap_mistakes(mod, message, capsys):
    wrong_answer(E.check_softcap_score_mod, mod, message, capsys)


def test_a_stub_is_not_attempted(capsys):
    def my_document_mask_mod(doc_ids):
        raise NotImplementedError

    ok, out = run(E.check_document_mask_mod, my_document_mask_mod, capsys)
    assert ok is False
    assert out == "Not attempted yet: write my_document_mask_mod above, then run this cell\n"
