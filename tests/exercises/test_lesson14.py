"""The checkers of lesson 14 (KV cache, MQA and GQA) name typical mistakes (what all checkers do:
test_kit.py)."""

from __future__ import annotations

import math

import pytest
import torch

import attention.exercises as E
from attention.exercises.solutions import lesson14 as S
from tests.exercises.checker_answers import run, wrong_answer


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda n, h, hkv, d, t, b, nb: 2 * n * h * d * t * b * nb, "you counted the query heads"),
        (lambda n, h, hkv, d, t, b, nb: n * hkv * d * t * b * nb, "a key AND a value"),
        (lambda n, h, hkv, d, t, b, nb: 2 * hkv * d * t * b * nb, "x n_layers"),
        (lambda n, h, hkv, d, t, b, nb: 2 * n * hkv * d * t * nb, "x batch"),
        (lambda n, h, hkv, d, t, b, nb: 2 * n * hkv * d * t * b, "numbers, not bytes"),
        (lambda n, h, hkv, d, t, b, nb: 1.5, "expected an int, got float"),
    ],
)
def test_kv_cache_bytes_mistakes(wrong, message, capsys):
    wrong_answer(E.check_kv_cache_bytes, wrong, message, capsys)


def test_kv_cache_bytes_accepts_a_float_count(capsys):
    ok, out = run(E.check_kv_cache_bytes, lambda *a: float(S.solution_kv_cache_bytes(*a)), capsys)
    assert ok, out


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda x, n: x.repeat(1, n, 1, 1), "the heads are tiled"),
        (lambda x, n: x.repeat_interleave(n, dim=2), "you repeated the positions"),
        (lambda x, n: x, "wrong shape: expected (2, 9, 4, 5), got (2, 3, 4, 5)"),
    ],
)
def test_repeat_kv_mistakes(wrong, message, capsys):
    wrong_answer(E.check_repeat_kv, wrong, message, capsys)


def _attend(q, k, v, scale=None):
    s = q @ k.T * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    return torch.softmax(s, -1) @ v


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda q, kc, vc, kn, vn: _attend(q, kc, vc), "attends only to the cache"),
        (lambda q, kc, vc, kn, vn: vn, "you returned v_new"),
        (
            lambda q, kc, vc, kn, vn: _attend(q, torch.cat([kc, kn]), torch.cat([vc, vn]), 1.0),
            "the scores are not scaled",
        ),
        (lambda q, kc, vc, kn, vn: _attend(q, kn, vn)[0], "wrong shape: expected (1, 8), got (8,)"),
    ],
)
def test_cached_attention_mistakes(wrong, message, capsys):
    wrong_answer(E.check_cached_attention, wrong, message, capsys)
