"""The checkers of lesson 7 (self-attention) name typical mistakes (what all checkers do:
test_kit.py)."""

from __future__ import annotations

import math

import pytest
import torch

import attention as A
import attention.exercises as E
from attention.exercises.solutions import lesson07 as S
from tests.exercises.checker_answers import run


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


def test_the_core_layer_agrees_with_the_solution():
    slots = A.MemorySlots(6, n_slots=3, d_k=4, d_v=2)
    x = torch.randn(2, 5, 6)
    got = S.solution_memory_slots(x, slots.q_proj.weight.T, slots.slot_keys, slots.slot_values)
    torch.testing.assert_close(got, slots(x).output)

    layer = A.TanhAttention(4, 3)
    # the exercise has no biases; the layer's start at zero, so the two compute the same
    x, mask = torch.randn(3, 5, 4), A.padding_mask([5, 3, 2], 5)[:, 0]
    ws = [lin.weight.T for lin in (layer.w_q, layer.w_k, layer.w_v)]
    torch.testing.assert_close(
        S.solution_tanh_attention(x, mask, *ws), layer(x, mask).global_feature
    )


def _slots_wrong_dim(x, w_q, keys, values):
    scores = x @ w_q @ keys.T / math.sqrt(keys.shape[-1])
    return torch.softmax(scores, dim=-2) @ values


def _slots_sqrt_m(x, w_q, keys, values):
    return torch.softmax(x @ w_q @ keys.T / math.sqrt(x.shape[-1]), dim=-1) @ values


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_slots_wrong_dim, "softmax over the positions (dim=-2)"),
        (_slots_sqrt_m, "you divided by sqrt(M) = sqrt(6), the input width"),
        (
            lambda x, w, k, v: torch.softmax(x @ w @ k.T, dim=-1) @ v,
            "the scores are not scaled: divide them by sqrt(d_k) = sqrt(4)",
        ),
        (
            lambda x, w, k, v: torch.softmax(x @ w @ k.T / math.sqrt(k.shape[-1]), dim=-1),
            "that is one weight per slot; multiply the weights by the slot values",
        ),
    ],
)
def test_memory_slots_mistakes(wrong, message, capsys):
    ok, out = run(E.check_memory_slots, wrong, capsys)
    assert ok is False
    assert message in out


def _tanh(x, mask, w_q, w_k, w_v, *, squash=True, key_mask=True, scale=1.0, rows="real", how="sum"):
    f = torch.tanh if squash else (lambda u: u)
    q, k, v = f(x @ w_q), f(x @ w_k), f(x @ w_v)
    scores = q @ k.transpose(-2, -1) * scale
    if key_mask:
        scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
    z = torch.softmax(scores, dim=-1) @ v
    if rows == "all":
        return z.sum(1)
    if rows == "none":
        return z
    g = (z * mask[..., None]).sum(1)
    return g / mask.sum(1, keepdim=True) if how == "mean" else g


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"rows": "all"}, "the padded positions were summed too"),
        ({"how": "mean"}, "that is the mean over the real positions; the layer sums them"),
        ({"key_mask": False}, "padding leaked in: mask the padded keys"),
        ({"squash": False}, "no tanh: apply tanh to each projection"),
        ({"scale": 3**-0.5}, "you divided the scores by sqrt(d_att)"),
        ({"rows": "none"}, "wrong shape: expected (3, 3), got (3, 5, 3): sum over the positions"),
    ],
)
def test_tanh_attention_mistakes(options, message, capsys):
    ok, out = run(E.check_tanh_attention, lambda *a: _tanh(*a, **options), capsys)
    assert ok is False
    assert message in out


def test_tanh_attention_reference_variant_passes(capsys):
    ok, out = run(E.check_tanh_attention, _tanh, capsys)
    assert ok is True, out
