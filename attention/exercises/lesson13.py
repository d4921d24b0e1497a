"""Checkers of lesson 13 (FlashAttention): the online-softmax update, one tile of FlashAttention,
the bytes of the score matrix.

Named mistakes include the rescale forgotten. Reference solutions are in
`attention.exercises.solutions.lesson13`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..flash import online_softmax_steps
from ..functional import scaled_dot_product_attention
from ._checking import Wrong, call, checker, compare, expect_int, name_mistake, randn

LESSON = "13_flash_attention"
__all__ = ["check_attention_matrix_bytes", "check_flash_tile_update", "check_online_softmax_update"]


def _pair(got: Any, names: str, n: int = 2) -> tuple[Any, ...]:
    """The learner's result as a tuple of n items (names them in the message if it is not)."""
    if got is None:
        raise Wrong("your function returned None; did you forget `return`?")
    if not isinstance(got, (tuple, list)) or len(got) != n:
        raise Wrong(f"expected a tuple ({names}), got {type(got).__name__}")
    return tuple(got)


def _fold(m: Tensor, l: Tensor, chunk: Tensor) -> tuple[Tensor, Tensor]:
    """The reference update: the core's online softmax, run from (m, l) over one more chunk."""
    m_new = torch.maximum(m, chunk.max())
    return m_new, l * torch.exp(m - m_new) + torch.exp(chunk - m_new).sum()


@checker("l is rescaled by exp(m - m_new) whenever the max grows: one pass, exact softmax.")
def check_online_softmax_update(fn: Callable[[Tensor, Tensor, Tensor], tuple]) -> None:
    """Check fn(m, l, chunk) -> (m_new, l_new): fold a chunk (n,) into a running max and sum.

    m_new = max(m, max(chunk));  l_new = l * exp(m - m_new) + sum(exp(chunk - m_new)).
    Then runs fn over a whole row from (m, l) = (-inf, 0) and compares with the core's
    online_softmax_steps and with torch.softmax.
    """
    m, l = torch.tensor(1.5), torch.tensor(2.0)
    # first a chunk whose max is larger than m (the rescale matters), then one below m
    for chunk in (torch.tensor([0.3, 2.7, -1.0]), torch.tensor([0.3, -1.0, 1.2])):
        m_new, l_new = _fold(m, l, chunk)
        got_m, got_l = _pair(call(fn, m, l, chunk), "m_new, l_new")
        what = f"from m = 1.5, l = 2 and the chunk {chunk.tolist()}"
        compare(
            got_m,
            m_new,
            [(chunk.max(), "m_new must keep the old max too: m_new = max(m, max(chunk))")],
            what=f"m_new {what}",
        )
        mistakes = [
            (
                l + torch.exp(chunk - m_new).sum(),
                "you forgot to rescale the old sum: l was summed relative to the old max m, so "
                "multiply it by exp(m - m_new) before adding the chunk",
            ),
            (
                l * torch.exp(m_new - m) + torch.exp(chunk - m_new).sum(),
                "the rescale is upside down: the max grew, so the old terms shrink by "
                "exp(m - m_new) <= 1, not grow by exp(m_new - m)",
            ),
            (
                l + torch.exp(chunk).sum(),
                "subtract the running max inside the exp (exp(chunk - m_new)) and rescale l: "
                "exp of raw scores overflows for large scores",
            ),
            (
                l * torch.exp(m - m_new) + torch.exp(chunk - m).sum(),
                "the chunk's exponentials must be taken relative to the new max m_new, the "
                "same reference as the rescaled l",
            ),
        ]
        compare(got_l, l_new, mistakes, what=f"l_new {what}")
    g = torch.Generator().manual_seed(13)
    row = randn(g, 10, scale=3.0)  # (T,)
    m, l = torch.tensor(float("-inf")), torch.tensor(0.0)
    for start in range(0, 10, 3):
        m, l = _pair(call(fn, m, l, row[start : start + 3]), "m_new, l_new")
        m, l = torch.as_tensor(m), torch.as_tensor(l)
    *_, (_, want_m, want_l) = online_softmax_steps(row, chunk_size=3)
    compare(m, want_m, what="m after the whole row in chunks of 3, from m = -inf")
    compare(l, want_l, what="l after the whole row in chunks of 3, from l = 0")
    compare(torch.exp(row - m) / l, torch.softmax(row, 0), what="exp(x - m) / l")


def _tile_reference(m, l, acc, s, v) -> tuple[Tensor, Tensor, Tensor]:
    m_new = torch.maximum(m, s.amax(-1))  # (bq,)
    c = torch.exp(m - m_new)  # (bq,)
    p = torch.exp(s - m_new[:, None])  # (bq, bk)
    return m_new, c * l + p.sum(-1), c[:, None] * acc + p @ v


@checker("acc and l are rescaled by the same exp(m - m_new); divide by l only at the very end.")
def check_flash_tile_update(fn: Callable[..., tuple]) -> None:
    """Check fn(m, l, acc, scores, v) -> (m_new, l_new, acc_new) for one key tile.

    m, l (bq,); acc (bq, Dv); scores (bq, bk) = this tile's q k^T / sqrt(D); v (bk, Dv).
    Then folds every key tile of a small problem and compares acc / l with softmax(S) V.
    """
    g = torch.Generator().manual_seed(14)
    bq, bk, dv = 3, 4, 5
    m = randn(g, bq)
    l = torch.rand(bq, generator=g) * 3 + 1
    acc = randn(g, bq, dv)
    s = randn(g, bq, bk, scale=2.0) + 1.0  # raises the max of most rows
    v = randn(g, bk, dv)
    m_new, l_new, acc_new = _tile_reference(m, l, acc, s, v)
    got = _pair(call(fn, m, l, acc, s, v), "m_new, l_new, acc_new", 3)
    compare(got[0], m_new, [(s.amax(-1), "m_new = max(m, rowmax(scores)): keep the old max")])
    compare(
        got[1],
        l_new,
        [(l + torch.exp(s - m_new[:, None]).sum(-1), "l was not rescaled by exp(m - m_new)")],
        what="l_new",
    )
    p = torch.exp(s - m_new[:, None])  # (bq, bk)
    c = torch.exp(m - m_new)[:, None]
    mistakes = [
        (
            acc + p @ v,
            "acc was not rescaled: it was summed under the old max, so multiply it by "
            "exp(m - m_new) (one factor per row) before adding p @ v",
        ),
        (
            (c * acc + p @ v) / l_new[:, None],
            "you divided by l inside the loop: keep acc unnormalised and divide by l once, "
            "after the last tile",
        ),
        (
            c * acc + torch.softmax(s, -1) @ v,
            "use p = exp(scores - m_new), not the tile's own softmax: the tile's rows do not "
            "sum to 1 on their own",
        ),
    ]
    compare(got[2], acc_new, mistakes, what="acc_new")
    q, k, vv = randn(g, 4, 6), randn(g, 8, 6), randn(g, 8, 5)
    scores = q @ k.T / math.sqrt(6)  # (4, 8)
    m, l, acc = torch.full((4,), float("-inf")), torch.zeros(4), torch.zeros(4, 5)
    for c0 in (0, 3, 6):
        out = _pair(call(fn, m, l, acc, scores[:, c0 : c0 + 3], vv[c0 : c0 + 3]), "m, l, acc", 3)
        m, l, acc = (torch.as_tensor(x) for x in out)
    want = scaled_dot_product_attention(q, k, vv).output
    compare(acc / l[:, None], want, what="acc / l after three key tiles, from m = -inf")


@checker("S and P are each B x H x T x T numbers: the memory of naive attention grows as T^2.")
def check_attention_matrix_bytes(fn: Callable[[int, int, int, float], int]) -> None:
    """Check fn(batch, n_heads, seq_len, bytes_per_value) -> bytes of S and P together."""
    for b, h, t, nb in ((1, 1, 5, 4), (3, 5, 7, 2), (2, 9, 1024, 2)):
        got = expect_int(call(fn, b, h, t, nb))
        want = 2 * b * h * t * t * nb
        if got == want:
            continue
        where = f"for batch={b}, n_heads={h}, seq_len={t}, bytes_per_value={nb}: expected {want}"
        mistakes = [
            (want // 2, f"{where}; you counted one (T, T) matrix: S and P are both stored"),
            (2 * b * h * t * nb, f"{where}; a score matrix has T x T entries, not T"),
            (2 * b * t * t * nb, f"{where}; every head has its own S and P: multiply by n_heads"),
            (2 * h * t * t * nb, f"{where}; every sequence of the batch has its own: x batch"),
            (2 * b * h * t * t, f"{where}; that is numbers, not bytes: x bytes_per_value"),
        ]
        name_mistake(got, mistakes)
        raise Wrong(f"{where}, got {got}")
