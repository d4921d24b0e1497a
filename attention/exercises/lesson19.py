"""Self-checking exercises for lesson 19: attention after 2024.

The bytes a latent (MLA) cache holds; MLA's absorbed scores; one step of linear attention as an
RNN; one gated delta-rule step; the keys top-k sparse attention keeps; the weights of
differential attention, from scores or from a split query and key; where a paged cache keeps a
token. Each `check_*` runs the learner's function on fixed inputs, compares with the core
(attention.memory, latent, linear, sparse, differential, paged) through the kit in `_checking`
and prints one line, naming the mistake when it is a known one (the latent counted per head or
twice, W_uk not transposed, the state read before it is written, the gate forgotten, the
smallest scores kept, the difference taken before the softmax, the logical block used instead
of the table's).

Reference solutions are in `attention.exercises.solutions.lesson19`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..differential import differential_attention
from ..latent import MultiHeadLatentAttention
from ..linear import delta_rule_recurrent, linear_attention_recurrent
from ..memory import mla_cache_bytes
from ..paged import PagedKVCache
from ._checking import (
    Wrong,
    call,
    checker,
    compare,
    expect_int,
    expect_tensor,
    name_mistake,
    randn,
    scale_mistakes,
)

LESSON = "19_attention_after_2024"
__all__ = [
    "check_differential_map",
    "check_differential_weights",
    "check_gated_delta_step",
    "check_linear_attention_step",
    "check_mla_absorbed_scores",
    "check_mla_cache_bytes",
    "check_paged_slot",
    "check_topk_keep",
]


def _tuple(got: Any, names: str, n: int) -> tuple[Any, ...]:
    if got is None:
        raise Wrong("your function returned None; did you forget `return`?")
    if not isinstance(got, (tuple, list)) or len(got) != n:
        raise Wrong(f"expected a tuple ({names}), got {type(got).__name__}")
    return tuple(got)


_MLA_CASES = (  # n_layers, n_heads, kv_rank, d_rope, seq_len, batch, bytes_per_value
    (61, 128, 512, 64, 4096, 1, 2),  # DeepSeek-V3's attention sizes
    (2, 4, 8, 2, 10, 3, 4),
    (1, 16, 32, 16, 7, 2, 0.5),
)


@checker("one latent and one rotated key part per token and layer, shared by every head.")
def check_mla_cache_bytes(fn: Callable[..., Any]) -> None:
    """Check fn(n_layers, n_heads, kv_rank, d_rope, seq_len, batch, bytes_per_value) -> int."""
    for n_layers, h, r, dr, t, b, nb in _MLA_CASES:
        got = expect_int(call(fn, n_layers, h, r, dr, t, b, nb))
        sizes = dict(n_layers=n_layers, seq_len=t, batch=b, bytes_per_value=nb)
        want = mla_cache_bytes(kv_rank=r, d_rope=dr, **sizes)
        if got == want:
            continue
        where = (
            f"for n_layers={n_layers}, n_heads={h}, kv_rank={r}, d_rope={dr}, seq_len={t}, "
            f"batch={b}, bytes_per_value={nb}: expected {want}"
        )
        per_token = n_layers * t * b * nb
        mistakes = [
            (want * h, f"{where}; you counted it per head: the latent is shared by all heads"),
            (
                2 * want,
                f"{where}; no separate keys and values: one latent c rebuilds both, so no factor 2",
            ),
            (
                mla_cache_bytes(kv_rank=r, d_rope=dr * h, **sizes),
                f"{where}; the rotated key part k_rope is one vector shared by every head",
            ),
            (
                int(r * per_token),
                f"{where}; the rotated key part (d_rope numbers a token) is cached too",
            ),
            (want // nb, f"{where}; that is numbers, not bytes: x bytes_per_value"),
        ]
        name_mistake(got, mistakes)
        raise Wrong(f"{where}, got {got}")


def _mla_inputs(kv_rank: int, d_nope: int) -> tuple[tuple[Tensor, ...], Tensor]:
    """(q_nope, q_rope, latent, k_rope, w_uk) of a small MLA layer, and its explicit scores.

    w_uk is (H, R, Dn), head h's content key being c @ w_uk[h], as the lesson writes c W_uk^h.
    """
    torch.manual_seed(19)  # nn.Linear draws from the global generator; the checker forks it
    h, dr, t = 3, 4, 5
    mla = MultiHeadLatentAttention(d_model=16, n_heads=h, kv_rank=kv_rank, d_nope=d_nope, d_rope=dr)
    with torch.no_grad():
        r = mla(torch.randn(1, t, 16))  # no mask: every score is finite
        w_uk = mla.k_up.weight.view(h, d_nope, kv_rank).transpose(1, 2)  # (H, R, Dn)
    q = r.q[0]  # (H, T, Dn + Dr), its rotated part already rotated
    inputs = (q[..., :d_nope], q[..., d_nope:], r.latent[0], r.k_rope[0], w_uk)
    return tuple(x.detach().clone() for x in inputs), r.scores[0].detach()  # (H, T, T)


@checker("fold W_uk^T into the query, score [c; k_rope]: the same scores, no per-head keys.")
def check_mla_absorbed_scores(fn: Callable[..., Any]) -> None:
    """Check fn(q_nope, q_rope, latent, k_rope, w_uk) -> (q_absorbed (H, Tq, R + Dr), scores).

    q_nope (H, Tq, Dn), q_rope (H, Tq, Dr), latent (Tk, R), k_rope (Tk, Dr), w_uk (H, R, Dn).
    The scores (H, Tq, Tk) must equal the explicit pass's, scaled by 1 / sqrt(Dn + Dr).
    """
    for r, dn in ((8, 8), (12, 6)):  # R = Dn first: a missing transpose still runs
        (q_nope, q_rope, latent, k_rope, w_uk), explicit = _mla_inputs(r, dn)
        dr = q_rope.shape[-1]
        where = f"R={r}, Dn={dn}, Dr={dr}"
        q_lat = q_nope @ w_uk.transpose(-2, -1)  # (H, Tq, R)
        q_abs = torch.cat([q_lat, q_rope], dim=-1)  # (H, Tq, R + Dr)
        key = torch.cat([latent, k_rope], dim=-1)  # (Tk, R + Dr)
        got = _tuple(call(fn, q_nope, q_rope, latent, k_rope, w_uk), "q_absorbed, scores", 2)
        got_q = expect_tensor(got[0], what=f"q_absorbed ({where})")
        if got_q.shape[-1] == dn + dr and dn != r:
            raise Wrong(
                f"q_absorbed ({where}): width Dn + Dr = {dn + dr} is the query before absorbing; "
                f"fold W_uk into its content part, q_nope @ W_uk^T, width R + Dr = {r + dr}"
            )
        q_mistakes = [
            (q_lat, "the rotated part is missing: append q_rope, as the key is [c; k_rope]"),
            (
                torch.cat([q_rope, q_lat], dim=-1),
                "content part first, then the rotated one, in the order of the key [c; k_rope]",
            ),
        ]
        if r == dn:
            q_mistakes += [
                (
                    torch.cat([q_nope @ w_uk, q_rope], dim=-1),
                    "transpose W_uk: k^C = c W_uk, so q^C . k^C = (q^C W_uk^T) . c",
                ),
                (
                    torch.cat([q_nope, q_rope], dim=-1),
                    "that is the query before absorbing: fold W_uk into it, q_nope @ W_uk^T",
                ),
            ]
        compare(got_q, q_abs, q_mistakes, what=f"q_absorbed ({where})")

        def scored(query: Tensor, c: float = (dn + dr) ** -0.5, key: Tensor = key) -> Tensor:
            return query @ key.T * c  # (H, Tq, Tk)

        mistakes = [
            *scale_mistakes(lambda c, q_abs=q_abs: scored(q_abs, c), "Dn + Dr", dn + dr),
            (
                scored(q_abs, (r + dr) ** -0.5),
                f"scale by 1/sqrt(Dn + Dr) = 1/sqrt({dn + dr}), the head's width: absorbing "
                f"changes how a score is computed, not its value (not 1/sqrt(R + Dr))",
            ),
            (
                q_lat @ latent.T * (dn + dr) ** -0.5,
                "add the rotated part's score q_rope . k_rope (the key is [c; k_rope])",
            ),
        ]
        if r == dn:
            mistakes += [
                (
                    scored(torch.cat([q_nope @ w_uk, q_rope], dim=-1)),
                    "transpose W_uk: k^C = c W_uk, so q^C . k^C = (q^C W_uk^T) . c",
                ),
                (
                    (q_lat @ (latent @ w_uk).transpose(-2, -1) + q_rope @ k_rope.T)
                    * (dn + dr) ** -0.5,
                    "W_uk is used once: folded into the query, it scores the latent c itself, "
                    "not keys rebuilt from it",
                ),
            ]
        compare(got[1], explicit, mistakes, what=f"scores ({where}), against the explicit pass")


@checker("write first (S += k v^T, z += k), then read: the output sees the token itself.")
def check_linear_attention_step(fn: Callable[..., Any]) -> None:
    """Check fn(state (D, Dv), z (D,), q (D,), k (D,), v (Dv,)) -> (state, z, out (Dv,)).

    q and k are already feature-mapped (positive). Then runs fn over a whole sequence from
    zeros and compares with the core's linear_attention_recurrent.
    """
    g = torch.Generator().manual_seed(19)
    d, dv, t = 4, 3, 6
    q, k = torch.rand(t, d, generator=g) + 0.1, torch.rand(t, d, generator=g) + 0.1  # phi(.) > 0
    v = randn(g, t, dv)
    s, z = randn(g, d, dv).abs(), torch.rand(d, generator=g) + 0.5
    s_new, z_new = s + torch.outer(k[0], v[0]), z + k[0]
    got_s, got_z, got_o = _tuple(call(fn, s, z, q[0], k[0], v[0]), "state, z, out", 3)
    compare(
        got_s,
        s_new,
        [(torch.outer(k[0], v[0]), "add to the old state: state + outer(k, v)")],
        what="state",
    )
    compare(got_z, z_new, [(z, "z must grow too: z_new = z + k")], what="z")
    out = q[0] @ s_new / (q[0] @ z_new)
    mistakes = [
        (q[0] @ s / (q[0] @ z), "you read the state before writing the token into it"),
        (q[0] @ s_new, "divide by q . z_new: without it the output grows with every token"),
        (q[0] @ s_new / (q[0] @ z), "divide by q . z_new, the sum including this token's key"),
    ]
    compare(got_o, out, mistakes, what="out")
    s, z, outs = torch.zeros(d, dv), torch.zeros(d), []
    for i in range(t):
        s, z, o = _tuple(call(fn, s, z, q[i], k[i], v[i]), "state, z, out", 3)
        outs.append(torch.as_tensor(o))
    want = linear_attention_recurrent(q, k, v, feature_map=None)
    compare(torch.stack(outs), want.output, what="outputs over 6 tokens from a zero state")


def _delta(state: Tensor, k: Tensor, v: Tensor, alpha: float, beta: float, **wrong: bool) -> Tensor:
    """One gated delta-rule write, S = alpha (I - beta k k^T) S + beta k v^T, or a known slip."""
    eye = torch.eye(k.shape[0])
    erase = eye - (1.0 if wrong.get("erase_no_beta") else beta) * torch.outer(k, k)  # (D, D)
    if wrong.get("sign"):
        erase = eye + beta * torch.outer(k, k)
    if wrong.get("no_erase"):
        erase = eye
    kept = state @ erase if wrong.get("right") else erase @ state  # (D, Dv)
    if wrong.get("erase_ungated"):
        kept = alpha * state - beta * torch.outer(k, k) @ state
    elif not wrong.get("no_gate"):
        kept = alpha * kept
    write = torch.outer(v, k) if wrong.get("vk") else torch.outer(k, v)  # (D, Dv)
    new = kept + (1.0 if wrong.get("write_no_beta") else beta) * write
    return alpha * (erase @ state + beta * write) if wrong.get("gate_all") else new


@checker("decay by alpha, erase what k reads, write beta k v^T, then read S^T q.")
def check_gated_delta_step(fn: Callable[..., Any]) -> None:
    """Check fn(state (D, Dv), q (D,), k (D,) unit, v (Dv,), alpha, beta) -> (state, out (Dv,)).

    One step of S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T, o_t = S_t^T q_t;
    then runs fn over 6 tokens from zeros and compares with the core's delta_rule_recurrent.
    """
    g = torch.Generator().manual_seed(22)
    d = 4
    state, q, v = randn(g, d, d), randn(g, d), randn(g, d)  # D = Dv: orientation slips still run
    k = torch.nn.functional.normalize(randn(g, d), dim=-1)
    alpha, beta = 0.8, 0.6
    got_s, got_o = _tuple(call(fn, state, q, k, v, alpha, beta), "state, out", 2)
    want = _delta(state, k, v, alpha, beta)
    named = [
        ("no_gate", "the gate is missing: alpha multiplies the old state, every pair fades"),
        ("gate_all", "alpha decays the old state only, not this token's write beta k v^T"),
        ("sign", "the sign of the delta term: subtract beta k (k^T S), what k already reads"),
        ("vk", "the write is outer(k, v) = k v^T: the state is (D, Dv), rows are key features"),
        (
            "right",
            "(I - beta k k^T) multiplies S from the left here, where S is (D, Dv); the paper's "
            "S is (Dv, D) and has it on the right",
        ),
        ("no_erase", "that is gated linear attention: first erase beta k (k^T S) from S"),
        ("erase_no_beta", "beta scales the erase too: (I - beta k k^T)"),
        ("write_no_beta", "beta scales the write too: + beta k v^T"),
        ("erase_ungated", "decay first, then erase: alpha multiplies (I - beta k k^T) S whole"),
    ]
    mistakes = [(_delta(state, k, v, alpha, beta, **{key: True}), m) for key, m in named]
    compare(got_s, want, mistakes, what="state after one step")
    compare(
        got_o,
        q @ want,
        [
            (q @ state, "read after writing: o_t = S_t^T q_t, the state with this token in it"),
            (want @ q, "read S^T q, that is q @ state: the state's rows are key features"),
        ],
        what="out",
    )
    t, dv = 6, 3
    qs, vs = randn(g, t, d), randn(g, t, dv)
    ks = torch.nn.functional.normalize(randn(g, t, d), dim=-1)
    alphas, betas = 0.7 + 0.3 * torch.rand(t, generator=g), torch.rand(t, generator=g)
    s, outs = torch.zeros(d, dv), []
    for i in range(t):
        args = (s, qs[i], ks[i], vs[i], float(alphas[i]), float(betas[i]))
        s, o = _tuple(call(fn, *args), "state, out", 2)
        s = expect_tensor(s, what=f"state at token {i}", shape=(d, dv))
        outs.append(expect_tensor(o, what=f"out at token {i}"))
    ref = delta_rule_recurrent(qs, ks, vs, betas, alphas)
    compare(torch.stack(outs), ref.output, what="outputs over 6 tokens (D=4, Dv=3) from zeros")


@checker("two softmax maps, then the difference: common weight cancels, rows sum to 1 - lambda.")
def check_differential_weights(fn: Callable[[Tensor, Tensor, float], Tensor]) -> None:
    """Check fn(s1, s2, lam) -> softmax(s1) - lam softmax(s2), over the keys (scores given)."""
    g = torch.Generator().manual_seed(21)
    s1, s2 = randn(g, 3, 5, scale=2.0), randn(g, 3, 5, scale=2.0)
    for lam in (0.5, 0.8):
        eye = torch.eye(5)  # one-hot keys: q @ k.T is the given scores themselves
        want = differential_attention(s1, eye, s2, eye, eye, lam, scale=1.0).weights
        p1, p2 = torch.softmax(s1, -1), torch.softmax(s2, -1)
        mistakes = [
            (torch.softmax(s1 - lam * s2, -1), "subtract after the softmax, not before it"),
            (p1 - p2, "multiply the second map by lambda"),
            ((p1 - lam * p2) / (1 - lam), "do not renormalise: the rows sum to 1 - lambda"),
            (
                torch.softmax(s1, 0) - lam * torch.softmax(s2, 0),
                "softmax over the keys (dim=-1), not the queries",
            ),
            (lam * p1 - p2, "lambda scales the second map, the one subtracted"),
        ]
        compare(call(fn, s1, s2, lam), want, mistakes, what=f"lambda = {lam}")


@checker("split q and k in halves, two softmax maps scaled by 1/sqrt(d), the second times lambda.")
def check_differential_map(fn: Callable[[Tensor, Tensor, float], Tensor]) -> None:
    """Check fn(q (Tq, 2d), k (Tk, 2d), lam) -> the differential weights (Tq, Tk).

    softmax(q1 k1^T / sqrt(d)) - lam softmax(q2 k2^T / sqrt(d)), where q1, k1 are the first d
    features of q and k, and q2, k2 the last d.
    """
    g = torch.Generator().manual_seed(23)
    d = 4
    q, k = randn(g, 3, 2 * d), randn(g, 5, 2 * d)
    eye = torch.eye(5)  # as values: the output is the weights themselves

    def dmap(q1, k1, q2, k2, lam, c=d**-0.5, dim=-1):
        s1, s2 = q1 @ k1.T * c, q2 @ k2.T * c  # (Tq, Tk)
        return torch.softmax(s1, dim) - lam * torch.softmax(s2, dim)

    halves = (q[:, :d], k[:, :d], q[:, d:], k[:, d:])
    for lam in (0.5, 0.8):
        want = differential_attention(*halves, eye, lam).weights
        q1, k1, q2, k2 = halves
        p1, p2 = torch.softmax(q1 @ k1.T / d**0.5, -1), torch.softmax(q2 @ k2.T / d**0.5, -1)
        mistakes = [
            *scale_mistakes(lambda c, lam=lam: dmap(*halves, lam, c), "d", d),
            (
                dmap(*halves, lam, (2 * d) ** -0.5),
                f"each map scores d-wide halves: scale by 1/sqrt(d) = 1/sqrt({d}), not 1/sqrt(2d)",
            ),
            (
                dmap(q[:, 0::2], k[:, 0::2], q[:, 1::2], k[:, 1::2], lam),
                "split into halves, q1 = q[:, :d] and q2 = q[:, d:], not alternate features",
            ),
            (dmap(q1, k2, q2, k1, lam), "pair the halves: q1 with k1, q2 with k2"),
            (dmap(q2, k2, q1, k1, lam), "the first half's map is kept, the second's subtracted"),
            (
                torch.softmax(q1 @ k1.T / d**0.5 - lam * q2 @ k2.T / d**0.5, -1),
                "subtract after the softmax, not before it",
            ),
            (p1 - p2, "multiply the second map by lambda"),
            ((p1 - lam * p2) / (1 - lam), "do not renormalise: the rows sum to 1 - lambda"),
            (dmap(*halves, lam, dim=0), "softmax over the keys (dim=-1), not the queries"),
            (lam * p1 - p2, "lambda scales the second map, the one subtracted"),
        ]
        compare(call(fn, q, k, lam), want, mistakes, what=f"lambda = {lam}")


def _keep(scores: Tensor, idx: Tensor, dim: int = -1) -> Tensor:
    return torch.zeros_like(scores, dtype=torch.bool).scatter(dim, idx, True)


@checker("each query keeps its k highest scores; with k >= Tk that is dense attention again.")
def check_topk_keep(fn: Callable[[Tensor, int], Tensor]) -> None:
    """Check fn(scores (Tq, Tk), k) -> bool (Tq, Tk), True for each row's k largest scores."""
    g = torch.Generator().manual_seed(20)
    for tq, tk, k in ((4, 7, 2), (3, 5, 1), (2, 6, 6)):
        scores = randn(g, tq, tk)
        want = _keep(scores, scores.topk(k, dim=-1).indices)
        mistakes = [
            (_keep(scores, scores.topk(k, -1, largest=False).indices), "you kept the smallest"),
            (~want, "True must mark the keys kept, not the ones dropped"),
            (_keep(scores, scores.topk(min(k + 1, tk), -1).indices), "keep exactly k, not k + 1"),
            (want.float(), "return a bool mask (True = kept), not floats"),
        ]
        if k <= tq:
            per_key = _keep(scores, scores.topk(k, dim=0).indices, dim=0)
            mistakes.append((per_key, "top-k per query: over dim=-1, the keys, not dim=0"))
        compare(call(fn, scores, k), want, mistakes, what=f"scores {tq}x{tk}, k={k}")


@checker("logical position p lives in block table[p // block_size] at offset p % block_size.")
def check_paged_slot(fn: Callable[[list, int, int], Any]) -> None:
    """Check fn(block_table, block_size, position) -> (physical block, offset)."""
    cache = PagedKVCache(n_blocks=9, block_size=4, n_kv_heads=1, d_head=1)
    for seq, n in (("x", 5), ("y", 3), ("z", 8), ("y", 9)):  # interleaved: tables scattered
        cache.append(seq, torch.zeros(1, n, 1), torch.zeros(1, n, 1))
    for seq in ("y", "z"):
        table = list(cache.block_tables[seq])
        for position in range(cache.lengths[seq]):
            want = cache.slot(seq, position)
            got = _tuple(call(fn, list(table), 4, position), "block, offset", 2)
            got = tuple(expect_int(x, what="block and offset") for x in got)
            if got == want:
                continue
            where = f"table {table}, block_size 4, position {position}: expected {want}"
            b, o = divmod(position, 4)
            for wrong, message in (
                ((b, o), "that is the logical block number: look it up in the table"),
                ((want[1], want[0]), "return (block, offset) in that order"),
                ((table[b], position), "the offset is position % block_size, not position"),
            ):
                if got == wrong:
                    raise Wrong(f"{where}, got {got}; {message}")
            raise Wrong(f"{where}, got {got}")
