"""The checkers of lesson 13 (FlashAttention) name typical mistakes (what all checkers do:
test_kit.py)."""

from __future__ import annotations

import pytest
import torch

import attention.exercises as E
from attention.exercises.solutions import lesson13 as S
from tests.exercises.checker_answers import wrong_answer


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
