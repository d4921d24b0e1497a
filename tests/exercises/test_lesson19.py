"""The checkers of lesson 19 name typical mistakes (what all checkers do: test_kit.py)."""

from __future__ import annotations

import pytest
import torch

import attention as A
import attention.exercises as E
from attention.exercises import lesson19 as M
from attention.exercises.solutions import lesson19 as S


def wrong_answer(check, fn, message, capsys) -> None:
    ok = check(fn)
    out = capsys.readouterr().out
    assert ok is False, out
    assert message in out, out


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


# --- the absorbed MLA scores ---------------------------------------------------------------


def test_the_absorbed_scores_are_the_explicit_layers_scores():
    """The checker's reference is MultiHeadLatentAttention's explicit pass; absorbing W_uk
    into the query scores the latent to the same numbers (a hand computation of the identity)."""
    (q_nope, q_rope, latent, k_rope, w_uk), explicit = M._mla_inputs(12, 6)
    keys = torch.cat([(latent @ w_uk), k_rope.expand(3, -1, -1)], dim=-1)  # (H, Tk, Dn + Dr)
    by_hand = torch.cat([q_nope, q_rope], dim=-1) @ keys.transpose(-2, -1) / (6 + 4) ** 0.5
    torch.testing.assert_close(explicit, by_hand)
    _, scores = S.solution_mla_absorbed_scores(q_nope, q_rope, latent, k_rope, w_uk)
    torch.testing.assert_close(scores, explicit)


def _absorbed(*, transpose=True, rope=True, rope_first=False, scale="head", twice=False, k=False):
    def my_absorbed_scores(q_nope, q_rope, latent, k_rope, w_uk):
        w = w_uk.transpose(-2, -1) if transpose else w_uk
        q_lat = q_nope @ w  # (H, Tq, R)
        parts = [q_lat, q_rope] if rope else [q_lat]
        q_abs = torch.cat(parts[::-1] if rope_first else parts, dim=-1)
        if k:  # the per-head keys rebuilt, the query left as it was
            q_abs = torch.cat([q_nope, q_rope], dim=-1)
            keys = torch.cat([latent @ w_uk, k_rope.expand(q_nope.shape[0], -1, -1)], dim=-1)
            return q_abs, q_abs @ keys.transpose(-2, -1) / q_abs.shape[-1] ** 0.5
        key = torch.cat([latent, k_rope] if rope else [latent], dim=-1)
        width = {"head": q_nope.shape[-1] + q_rope.shape[-1], "absorbed": q_abs.shape[-1]}
        c = {"none": 1.0, "d": 1 / width["head"]}.get(scale, width.get(scale, 1) ** -0.5)
        if twice:  # the latent up-projected again, after W_uk went into the query
            h, tk = q_nope.shape[0], latent.shape[0]
            key = torch.cat([latent @ w_uk, k_rope.expand(h, tk, -1)], dim=-1)  # (H, Tk, Dn + Dr)
        return q_abs, q_abs @ key.transpose(-2, -1) * c

    return my_absorbed_scores


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_absorbed(transpose=False), "transpose W_uk: k^C = c W_uk"),
        (_absorbed(rope=False), "the rotated part is missing: append q_rope"),
        (_absorbed(rope_first=True), "content part first, then the rotated one"),
        (_absorbed(k=True), "that is the query before absorbing"),
        (_absorbed(scale="absorbed"), "not 1/sqrt(R + Dr)"),
        (_absorbed(scale="none"), "the scores are not scaled: divide them by sqrt(Dn + Dr)"),
        (_absorbed(scale="d"), "you divided by Dn + Dr = 12 itself"),
        (_absorbed(twice=True), "W_uk is used once"),
        (lambda *a: S.solution_mla_absorbed_scores(*a)[1], "expected a tuple (q_absorbed"),
        (
            lambda *a: (S.solution_mla_absorbed_scores(*a)[0], a[0].sum(-1)),
            "scores (R=8, Dn=8, Dr=4), against the explicit pass: wrong shape",
        ),
    ],
)
def test_mla_absorbed_scores_mistakes(wrong, message, capsys):
    wrong_answer(M.check_mla_absorbed_scores, wrong, message, capsys)


def test_mla_absorbed_scores_names_the_unabsorbed_query_where_the_widths_differ(capsys):
    """At R != Dn the query before absorbing has the wrong width: that is named, not a shape."""

    def my_absorbed_scores(q_nope, q_rope, latent, k_rope, w_uk):
        if q_nope.shape[-1] == w_uk.shape[-2]:  # R = Dn: pass the first case
            return S.solution_mla_absorbed_scores(q_nope, q_rope, latent, k_rope, w_uk)
        return torch.cat([q_nope, q_rope], dim=-1), None

    wrong_answer(
        M.check_mla_absorbed_scores,
        my_absorbed_scores,
        "Dn + Dr = 10 is the query before absorbing; fold W_uk into its content part",
        capsys,
    )


# --- one gated delta-rule step -------------------------------------------------------------


def test_the_gated_delta_step_is_the_papers_update():
    """S = alpha (I - beta k k^T) S + beta k v^T, written as matrices, against the solution."""
    g = torch.Generator().manual_seed(0)
    s, q, v = (
        torch.randn(4, 3, generator=g),
        torch.randn(4, generator=g),
        torch.randn(3, generator=g),
    )
    k = torch.nn.functional.normalize(torch.randn(4, generator=g), dim=-1)
    want = 0.9 * (torch.eye(4) - 0.3 * torch.outer(k, k)) @ s + 0.3 * torch.outer(k, v)
    got_s, got_o = S.solution_gated_delta_step(s, q, k, v, 0.9, 0.3)
    torch.testing.assert_close(got_s, want)
    torch.testing.assert_close(got_o, want.T @ q)
    torch.testing.assert_close(M._delta(s, k, v, 0.9, 0.3), want)


def _gated(**wrong):
    def my_gated_delta_step(state, q, k, v, alpha, beta):
        new = M._delta(state, k, v, alpha, beta, **wrong)
        return new, q @ new

    return my_gated_delta_step


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_gated(no_gate=True), "the gate is missing"),
        (_gated(gate_all=True), "alpha decays the old state only"),
        (_gated(sign=True), "the sign of the delta term"),
        (_gated(vk=True), "the write is outer(k, v) = k v^T"),
        (_gated(right=True), "(I - beta k k^T) multiplies S from the left here"),
        (_gated(no_erase=True), "that is gated linear attention"),
        (_gated(erase_no_beta=True), "beta scales the erase too"),
        (_gated(write_no_beta=True), "beta scales the write too"),
        (_gated(erase_ungated=True), "decay first, then erase"),
        (
            lambda s, q, k, v, a, b: (S.solution_gated_delta_step(s, q, k, v, a, b)[0], q @ s),
            "read after writing",
        ),
        (
            lambda s, q, k, v, a, b: (
                S.solution_gated_delta_step(s, q, k, v, a, b)[0],
                S.solution_gated_delta_step(s, q, k, v, a, b)[0] @ q,
            ),
            "read S^T q, that is q @ state",
        ),
        (lambda s, q, k, v, a, b: q @ s, "expected a tuple (state, out)"),
        (
            lambda s, q, k, v, a, b: (
                S.solution_gated_delta_step(s, q, k, v, a, b)
                if s.shape[-1] == s.shape[0]
                else (torch.zeros(4, 4), q)
            ),
            "state at token 0: wrong shape: expected (4, 3), got (4, 4)",
        ),
    ],
)
def test_gated_delta_step_mistakes(wrong, message, capsys):
    wrong_answer(M.check_gated_delta_step, wrong, message, capsys)


def test_gated_delta_step_is_run_over_a_sequence_with_changing_gates(capsys):
    """A step that ignores the alpha and beta it is given passes no fixed-gate shortcut."""

    def my_gated_delta_step(state, q, k, v, alpha, beta):
        return S.solution_gated_delta_step(state, q, k, v, 0.8, 0.6)

    wrong_answer(M.check_gated_delta_step, my_gated_delta_step, "outputs over 6 tokens", capsys)


# --- the differential map from a split query and key --------------------------------------


def _split(q, k, n=2):
    d = q.shape[-1] // 2
    return q[:, :d], k[:, :d], q[:, d:], k[:, d:]


def _dmap(*, c=None, interleave=False, cross=False, swap=False, before=False, dim=-1, lam_at=2):
    def my_differential_map(q, k, lam):
        d = q.shape[-1] // 2
        q1, k1, q2, k2 = _split(q, k)
        if interleave:
            q1, k1, q2, k2 = q[:, 0::2], k[:, 0::2], q[:, 1::2], k[:, 1::2]
        if cross:
            k1, k2 = k2, k1
        if swap:
            q1, k1, q2, k2 = q2, k2, q1, k1
        scale = d**-0.5 if c is None else c(d)
        s1, s2 = q1 @ k1.T * scale, q2 @ k2.T * scale
        if before:
            return torch.softmax(s1 - lam * s2, dim)
        p1, p2 = torch.softmax(s1, dim), torch.softmax(s2, dim)
        return {2: p1 - lam * p2, 1: lam * p1 - p2, 0: p1 - p2}[lam_at]

    return my_differential_map


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_dmap(c=lambda d: (2 * d) ** -0.5), "scale by 1/sqrt(d) = 1/sqrt(4), not 1/sqrt(2d)"),
        (_dmap(c=lambda d: 1.0), "the scores are not scaled: divide them by sqrt(d)"),
        (_dmap(c=lambda d: d**0.5), "you multiplied the scores by sqrt(d)"),
        (_dmap(interleave=True), "split into halves, q1 = q[:, :d]"),
        (_dmap(cross=True), "pair the halves: q1 with k1"),
        (_dmap(swap=True), "the first half's map is kept"),
        (_dmap(before=True), "subtract after the softmax"),
        (_dmap(lam_at=0), "multiply the second map by lambda"),
        (_dmap(lam_at=1), "lambda scales the second map"),
        (_dmap(dim=0), "softmax over the keys (dim=-1)"),
        (
            lambda q, k, lam: S.solution_differential_map(q, k, lam) / (1 - lam),
            "do not renormalise",
        ),
        (lambda q, k, lam: q @ k.T, "lambda = 0.5: wrong value at position"),
    ],
)
def test_differential_map_mistakes(wrong, message, capsys):
    wrong_answer(M.check_differential_map, wrong, message, capsys)


def test_the_differential_map_is_the_cores_differential_attention():
    g = torch.Generator().manual_seed(1)
    q, k, v = torch.randn(3, 6, generator=g), torch.randn(4, 6, generator=g), torch.randn(4, 2)
    want = A.differential_attention(*_split(q, k), v, 0.7)
    torch.testing.assert_close(S.solution_differential_map(q, k, 0.7), want.weights)
