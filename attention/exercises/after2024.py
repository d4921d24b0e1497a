"""Self-checking exercises for lesson 19: attention after 2024.

The bytes a latent (MLA) cache holds; one step of linear attention as an RNN; the keys top-k
sparse attention keeps; the weights of differential attention; where a paged cache keeps a
token. Each `check_*` runs the learner's function on fixed inputs, compares with the core
(attention.memory, linear, sparse, differential, paged) through the kit in `_checking` and
prints one line, naming the mistake when it is a known one (the latent counted per head or
twice, the state read before it is written, the smallest scores kept, the difference taken
before the softmax, the logical block used instead of the table's).

Reference solutions are in `attention.exercises.solution_after2024`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..differential import differential_attention
from ..linear import linear_attention_recurrent
from ..memory import mla_cache_bytes
from ..paged import PagedKVCache
from ._checking import Wrong, call, checker, compare, expect_int, name_mistake, randn

__all__ = [
    "check_differential_weights",
    "check_linear_attention_step",
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
