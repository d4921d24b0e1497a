"""The checkers of lesson 19 name typical mistakes (what all checkers do: test_exercises.py)."""

from __future__ import annotations

import pytest
import torch

import attention.exercises as E
from attention.exercises import after2024 as M
from attention.exercises import solution_after2024 as S


def wrong_answer(check, fn, message, capsys) -> None:
    ok = check(fn)
    out = capsys.readouterr().out
    assert ok is False, out
    assert message in out, out


def test_five_checkers_each_with_a_solution(capsys):
    assert len(M.__all__) == 5 and set(M.__all__) <= set(E.__all__)
    for name in M.__all__:
        assert getattr(E, name)(getattr(S, name.replace("check_", "solution_"))), (
            capsys.readouterr()
        )


def _mla(factor=1, *, rope=True, heads=False, rope_per_head=False, numbers=False):
    def my_mla_cache_bytes(n_layers, n_heads, kv_rank, d_rope, seq_len, batch, bytes_per_value):
        dr = (d_rope * n_heads if rope_per_head else d_rope) if rope else 0
        per = (kv_rank + dr) * (n_heads if heads else 1) * factor
        return int(n_layers * per * seq_len * batch * (1 if numbers else bytes_per_value))

    return my_mla_cache_bytes


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_mla(heads=True), "you counted it per head"),
        (_mla(2), "no separate keys and values"),
        (_mla(rope_per_head=True), "k_rope is one vector shared by every head"),
        (_mla(rope=False), "the rotated key part (d_rope numbers a token) is cached too"),
        (_mla(numbers=True), "that is numbers, not bytes"),
        (lambda *a: 7, "for n_layers=61, n_heads=128, kv_rank=512, d_rope=64, seq_len=4096"),
        (lambda *a: "many", "expected an int, got str"),
    ],
)
def test_mla_cache_bytes_mistakes(wrong, message, capsys):
    wrong_answer(E.check_mla_cache_bytes, wrong, message, capsys)


def _step(*, read_first=False, normalise=True, new_z=True, keep_old=True):
    def my_step(state, z, q, k, v):
        new_state = (state if keep_old else 0) + torch.outer(k, v)
        new = z + k
        read = state if read_first else new_state
        out = q @ read
        if normalise:
            out = out / (q @ ((z if read_first else new) if new_z else z))
        return new_state, new, out

    return my_step


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_step(read_first=True), "you read the state before writing the token into it"),
        (_step(normalise=False), "without it the output grows"),
        (_step(new_z=False), "divide by q . z_new, the sum including this token's key"),
        (_step(keep_old=False), "add to the old state"),
        (lambda s, z, q, k, v: (s + torch.outer(k, v), z, q @ s), "z must grow too"),
        (lambda s, z, q, k, v: q @ s, "expected a tuple (state, z, out)"),
        (lambda s, z, q, k, v: (s + torch.outer(v, k).T, z + k), "expected a tuple"),
    ],
)
def test_linear_attention_step_mistakes(wrong, message, capsys):
    wrong_answer(E.check_linear_attention_step, wrong, message, capsys)


def _keep(k_of, **topk):
    def my_topk_keep(scores, k):
        idx = scores.topk(k_of(k, scores), **topk).indices
        return torch.zeros_like(scores, dtype=torch.bool).scatter(topk.get("dim", -1), idx, True)

    return my_topk_keep


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_keep(lambda k, s: k, dim=-1, largest=False), "you kept the smallest"),
        (_keep(lambda k, s: min(k + 1, s.shape[-1]), dim=-1), "keep exactly k, not k + 1"),
        (_keep(lambda k, s: k, dim=0), "top-k per query: over dim=-1"),
        (lambda s, k: ~S.solution_topk_keep(s, k), "True must mark the keys kept"),
        (lambda s, k: S.solution_topk_keep(s, k).float(), "return a bool mask"),
        (lambda s, k: s > 0, "scores 4x7, k=2: wrong value at position"),
    ],
)
def test_topk_keep_mistakes(wrong, message, capsys):
    wrong_answer(E.check_topk_keep, wrong, message, capsys)


sm = torch.softmax


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda a, b, lam: sm(a - lam * b, -1), "subtract after the softmax"),
        (lambda a, b, lam: sm(a, -1) - sm(b, -1), "multiply the second map by lambda"),
        (lambda a, b, lam: (sm(a, -1) - lam * sm(b, -1)) / (1 - lam), "do not renormalise"),
        (lambda a, b, lam: sm(a, 0) - lam * sm(b, 0), "softmax over the keys (dim=-1)"),
        (lambda a, b, lam: lam * sm(a, -1) - sm(b, -1), "lambda scales the second map"),
        (lambda a, b, lam: sm(a, -1), "lambda = 0.5: wrong value at position"),
    ],
)
def test_differential_weights_mistakes(wrong, message, capsys):
    wrong_answer(E.check_differential_weights, wrong, message, capsys)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda table, bs, p: divmod(p, bs), "that is the logical block number"),
        (lambda table, bs, p: (p % bs, table[p // bs]), "return (block, offset) in that order"),
        (lambda table, bs, p: (table[p // bs], p), "the offset is position % block_size"),
        (
            lambda table, bs, p: (table[0], p % bs),
            "table [2, 5, 6], block_size 4, position 4: expected (5, 0), got (2, 0)",
        ),
        (lambda table, bs, p: table[p // bs], "expected a tuple (block, offset)"),
    ],
)
def test_paged_slot_mistakes(wrong, message, capsys):
    wrong_answer(E.check_paged_slot, wrong, message, capsys)
