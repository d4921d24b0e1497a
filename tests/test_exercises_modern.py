"""The checkers of lessons 13-15 name typical mistakes (what all checkers do: test_exercises.py)."""

from __future__ import annotations

import math

import pytest
import torch

import attention.exercises as E
from attention.exercises import modern as M
from attention.exercises import solution_modern as S
from attention.masks import sliding_window_mask
from attention.positional import apply_rope
from tests.checker_answers import run, wrong_answer


def test_there_are_ten_new_checkers_each_with_a_solution(capsys):
    checks = M.__all__
    assert len(checks) == 10 and set(checks) <= set(E.__all__)
    for name in checks:
        ok, out = run(getattr(E, name), getattr(S, name.replace("check_", "solution_")), capsys)
        assert ok, out


# --- lesson 13 ------------------------------------------------------------------------------------


def _update(rescale, *, shift_old=False, raw=False, keep_old_max=True):
    def my_update(m, l, chunk):
        m_new = torch.maximum(m, chunk.max()) if keep_old_max else chunk.max()
        if raw:
            return m_new, l + torch.exp(chunk).sum()
        ref = m if shift_old else m_new
        return m_new, l * rescale(m, m_new) + torch.exp(chunk - ref).sum()

    return my_update


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_update(lambda m, n: 1.0), "you forgot to rescale the old sum"),
        (_update(lambda m, n: torch.exp(n - m)), "the rescale is upside down"),
        (_update(lambda m, n: 1.0, raw=True), "subtract the running max inside the exp"),
        (_update(lambda m, n: torch.exp(m - n), shift_old=True), "relative to the new max"),
        (_update(lambda m, n: torch.exp(m - n), keep_old_max=False), "keep the old max too"),
        (lambda m, l, chunk: (m, l), "wrong value"),
        (lambda m, l, chunk: torch.stack(S.solution_online_softmax_update(m, l, chunk)), "tuple"),
    ],
)
def test_online_softmax_update_mistakes(wrong, message, capsys):
    wrong_answer(E.check_online_softmax_update, wrong, message, capsys)


def _tile(*, rescale_acc=True, normalise=False, tile_softmax=False, rescale_l=True):
    def my_tile(m, l, acc, scores, v):
        m_new = torch.maximum(m, scores.amax(-1))
        c = torch.exp(m - m_new)
        p = torch.exp(scores - m_new[:, None])
        l_new = (c * l if rescale_l else l) + p.sum(-1)
        pv = torch.softmax(scores, -1) @ v if tile_softmax else p @ v
        acc_new = (c[:, None] * acc if rescale_acc else acc) + pv
        return m_new, l_new, acc_new / l_new[:, None] if normalise else acc_new

    return my_tile


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_tile(rescale_acc=False), "acc was not rescaled"),
        (_tile(normalise=True), "you divided by l inside the loop"),
        (_tile(tile_softmax=True), "not the tile's own softmax"),
        (_tile(rescale_l=False), "l was not rescaled by exp(m - m_new)"),
    ],
)
def test_flash_tile_update_mistakes(wrong, message, capsys):
    wrong_answer(E.check_flash_tile_update, wrong, message, capsys)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda b, h, t, n: b * h * t * t * n, "you counted one (T, T) matrix"),
        (lambda b, h, t, n: 2 * b * h * t * n, "T x T entries, not T"),
        (lambda b, h, t, n: 2 * b * t * t * n, "multiply by n_heads"),
        (lambda b, h, t, n: 2 * h * t * t * n, "x batch"),
        (lambda b, h, t, n: 2 * b * h * t * t, "numbers, not bytes"),
        (lambda b, h, t, n: "lots", "expected an int, got str"),
        (lambda b, h, t, n: 2 * b * h * t * t * n + 1, "expected 200, got 201"),
    ],
)
def test_attention_matrix_bytes_mistakes(wrong, message, capsys):
    wrong_answer(E.check_attention_matrix_bytes, wrong, message, capsys)


# --- lesson 14 ------------------------------------------------------------------------------------


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


# --- lesson 15 ------------------------------------------------------------------------------------


def _rope_wrong_theta(x, positions, base):
    d = x.shape[-1]
    theta = base ** (-torch.arange(d // 2, dtype=torch.float64) / d)
    angles = (positions[:, None] * theta).float()
    a, b = x[:, : d // 2], x[:, d // 2 :]
    return torch.cat([a * angles.cos() - b * angles.sin(), b * angles.cos() + a * angles.sin()], -1)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda x, p, b: apply_rope(x, p, base=b, layout="interleaved"), "interleaved layout"),
        (lambda x, p, b: apply_rope(x, -p, base=b, layout="half"), "you turned the wrong way"),
        (_rope_wrong_theta, "the exponent has 2i, not i"),
        (lambda x, p, b: x, "nothing was rotated"),
        (lambda x, p, b: apply_rope(x, p + 1, base=b, layout="half"), "wrong value at position"),
    ],
)
def test_rope_half_mistakes(wrong, message, capsys):
    wrong_answer(E.check_rope_half, wrong, message, capsys)


def _mask(rule):
    def my_mask(t, w, s):
        i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
        return rule(i, j, w, s)

    return my_mask


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_mask(lambda i, j, w, s: (j <= i) & ((j >= i - w) | (j < s))), "each query sees 4 keys"),
        (_mask(lambda i, j, w, s: (j <= i) & ((j > i - w + 1) | (j < s))), "sees only 2 keys"),
        (_mask(lambda i, j, w, s: ((i - j).abs() < w) | ((j < s) & (j <= i))), "looks ahead"),
        (_mask(lambda i, j, w, s: ((j <= i) & (j > i - w)) | (j < s)), "a sink is still a key"),
        (lambda t, w, s: ~sliding_window_mask(t, w, sinks=s), "your mask is inverted"),
        (lambda t, w, s: sliding_window_mask(t, w, sinks=s).int(), "wrong dtype"),
        (lambda t, w, s: sliding_window_mask(t, w), "sinks=2"),  # the sinks forgotten
    ],
)
def test_sliding_window_mask_mistakes(wrong, message, capsys):
    wrong_answer(E.check_sliding_window_mask, wrong, message, capsys)


def _alibi(rule):
    def my_alibi(slopes, t):
        i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
        return rule(slopes[:, None, None], i, j)

    return my_alibi


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_alibi(lambda s, i, j: s * (i - j).abs()), "the sign is wrong"),
        (_alibi(lambda s, i, j: -s * (i - j)), "use the distance |i - j|"),
        (_alibi(lambda s, i, j: -s.flip(0) * (i - j).abs()), "the slopes are in the wrong order"),
        (_alibi(lambda s, i, j: -(i - j).abs().float().expand(len(s), -1, -1)), "its own slope"),
        (_alibi(lambda s, i, j: (-s * (i - j).abs())[0]), "wrong shape: expected (4, 6, 6)"),
    ],
)
def test_alibi_bias_mistakes(wrong, message, capsys):
    wrong_answer(E.check_alibi_bias, wrong, message, capsys)


def _nll(logits, ids, shift=True):
    lp = torch.log_softmax(logits[:-1] if shift else logits, -1)
    target = ids[1:] if shift else ids
    return -lp.gather(-1, target[:, None]).squeeze(-1)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda lg, ids: math.exp(_nll(lg, ids, shift=False).mean()), "predict the NEXT token"),
        (lambda lg, ids: _nll(lg, ids).mean(), "that is the mean negative log-likelihood"),
        (lambda lg, ids: math.exp(_nll(lg, ids).sum()), "average the losses"),
        (lambda lg, ids: 2 ** _nll(lg, ids).mean().item(), "use exp, not 2 **"),
        (lambda lg, ids: math.exp(-_nll(lg, ids).mean()), "at least 1, not a probability"),
        (lambda lg, ids: [1.0], "return one number"),
        (lambda lg, ids: torch.exp(_nll(lg, ids).mean()), None),  # a 0-d tensor is accepted
    ],
)
def test_perplexity_mistakes(wrong, message, capsys):
    if message is None:
        ok, out = run(E.check_perplexity, wrong, capsys)
        assert ok, out
        return
    wrong_answer(E.check_perplexity, wrong, message, capsys)
