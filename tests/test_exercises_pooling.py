"""The checkers of lesson 7's pooling exercises name typical mistakes (what all checkers do:
test_exercises.py)."""

from __future__ import annotations

import math

import pytest
import torch

import attention as A
import attention.exercises as E
from attention.exercises import solution_pooling as S


def run(check, fn, capsys) -> tuple[bool, str]:
    ok = check(fn)
    return ok, capsys.readouterr().out


@pytest.mark.parametrize(
    ("check", "solution"),
    [
        (E.check_memory_slots, S.solution_memory_slots),
        (E.check_tanh_attention, S.solution_tanh_attention),
    ],
)
def test_forgetting_return_is_named(check, solution, capsys):
    def my_answer(*args):
        solution(*args)  # computes, but returns nothing

    ok, out = run(check, my_answer, capsys)
    assert ok is False
    assert "returned None; did you forget `return`?" in out


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
