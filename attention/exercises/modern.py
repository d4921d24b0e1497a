"""Self-checking exercises for lessons 13-15: attention as it runs today.

Lesson 13 (FlashAttention): the online-softmax update, one tile of FlashAttention, the bytes of
the score matrix. Lesson 14 (KV cache, GQA): the cache's size, repeating kv heads, attention of
one new token over a cache. Lesson 15 (positions, windows): RoPE's rotation in the "half"
layout, a sliding-window mask with sinks, ALiBi's bias, perplexity.

Each `check_*` runs the learner's function on fixed seeded inputs, compares with a reference from
the core (attention.flash, memory, functional, positional, masks) through the kit in
`_checking` and prints one line, naming the mistake when it is a known one (the rescale
forgotten, query heads counted instead of kv heads, tiled instead of interleaved heads, the
interleaved layout instead of the half one, a window one too wide, logits not shifted).

Reference solutions are in `attention.exercises.solution_modern`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..flash import online_softmax_steps
from ..functional import repeat_kv, scaled_dot_product_attention
from ..masks import sliding_window_mask
from ..memory import kv_cache_bytes
from ..positional import alibi_slopes, apply_rope
from ._checking import (
    Wrong,
    call,
    checker,
    compare,
    expect_int,
    name_mistake,
    name_of,
    randn,
)

__all__ = [
    "check_alibi_bias",
    "check_attention_matrix_bytes",
    "check_cached_attention",
    "check_flash_tile_update",
    "check_kv_cache_bytes",
    "check_online_softmax_update",
    "check_perplexity",
    "check_repeat_kv",
    "check_rope_half",
    "check_sliding_window_mask",
]


def _pair(got: Any, names: str, n: int = 2) -> tuple[Any, ...]:
    """The learner's result as a tuple of n items (names them in the message if it is not)."""
    if got is None:
        raise Wrong("your function returned None; did you forget `return`?")
    if not isinstance(got, (tuple, list)) or len(got) != n:
        raise Wrong(f"expected a tuple ({names}), got {type(got).__name__}")
    return tuple(got)


# --- lesson 13: FlashAttention ------------------------------------------------------------------


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


# --- lesson 14: KV cache, MQA and GQA -------------------------------------------------------------

_CACHE_CASES = (  # n_layers, n_heads, n_kv_heads, d_head, seq_len, batch, bytes_per_value
    (30, 9, 3, 64, 2048, 1, 4),  # SmolLM2-135M in float32
    (3, 10, 2, 7, 11, 5, 2),
    (32, 32, 8, 128, 8192, 2, 2),  # Llama-3-8B in bfloat16
)


@checker("2 x layers x kv heads x width x tokens x batch x bytes: GQA divides it by H / Hkv.")
def check_kv_cache_bytes(fn: Callable[..., int]) -> None:
    """Check fn(n_layers, n_heads, n_kv_heads, d_head, seq_len, batch, bytes_per_value) -> int."""
    for n_layers, h, hkv, d, t, b, nb in _CACHE_CASES:
        got = expect_int(call(fn, n_layers, h, hkv, d, t, b, nb))
        want = kv_cache_bytes(
            n_layers=n_layers, n_kv_heads=hkv, d_head=d, seq_len=t, batch=b, bytes_per_value=nb
        )
        if got == want:
            continue
        where = (
            f"for n_layers={n_layers}, n_heads={h}, n_kv_heads={hkv}, d_head={d}, "
            f"seq_len={t}, batch={b}, bytes_per_value={nb}: expected {want}"
        )
        mistakes = [
            (
                want // hkv * h,
                f"{where}; you counted the query heads: only the {hkv} key/value heads are "
                "cached, each shared by H / Hkv query heads",
            ),
            (want // 2, f"{where}; a key AND a value per head and token: the factor 2"),
            (want // n_layers, f"{where}; every layer keeps its own keys and values: x n_layers"),
            (want // b, f"{where}; every sequence of the batch has its own cache: x batch"),
            (want // nb, f"{where}; that is numbers, not bytes: x bytes_per_value"),
            (want // hkv * h * 2, f"{where}; counted query heads and then also doubled q"),
        ]
        name_mistake(got, mistakes)
        raise Wrong(f"{where}, got {got}")


@checker("query head h reads kv head h // n_rep: each kv head serves n_rep neighbouring heads.")
def check_repeat_kv(fn: Callable[[Tensor, int], Tensor]) -> None:
    """Check fn(x (B, Hkv, T, D), n_rep) -> (B, Hkv * n_rep, T, D), head h = x[:, h // n_rep]."""
    g = torch.Generator().manual_seed(15)
    for shape, n_rep in (((2, 3, 4, 5), 3), ((1, 2, 3, 2), 4), ((2, 4, 1, 3), 1)):
        x = randn(g, *shape)
        want = repeat_kv(x, n_rep)
        mistakes = [
            (
                x.repeat(1, n_rep, 1, 1),
                "the heads are tiled (0, 1, 2, 0, 1, 2, ...): query heads 0 .. n_rep-1 must "
                "share kv head 0, so repeat each head in place (repeat_interleave on dim 1)",
            ),
            (
                x.repeat_interleave(n_rep, dim=2),
                "you repeated the positions (dim 2), not the heads (dim 1)",
            ),
        ]
        compare(call(fn, x, n_rep), want, mistakes, what=f"x of shape {shape}, n_rep={n_rep}")


@checker("the new token's query reads every cached key and its own: append first, then attend.")
def check_cached_attention(fn: Callable[..., Tensor]) -> None:
    """Check fn(q_new (1, D), k_cache (T, D), v_cache (T, D), k_new (1, D), v_new (1, D)) -> (1, D).

    The output of attention for the newest token over the T cached positions and itself.
    """
    g = torch.Generator().manual_seed(16)
    d, t = 8, 6
    q, k_cache, v_cache = randn(g, 1, d), randn(g, t, d), randn(g, t, d)
    k_new, v_new = randn(g, 1, d), randn(g, 1, d)
    k_all, v_all = torch.cat([k_cache, k_new]), torch.cat([v_cache, v_new])  # (T + 1, D)
    want = scaled_dot_product_attention(q, k_all, v_all).output  # (1, D)
    mistakes = [
        (
            scaled_dot_product_attention(q, k_cache, v_cache).output,
            "the new token attends only to the cache: append k_new and v_new to it first, a "
            "token always sees itself",
        ),
        (v_new, "you returned v_new: the new token reads every cached value as well"),
        (
            scaled_dot_product_attention(q, k_all, v_all, scale=1.0).output,
            f"the scores are not scaled: divide them by sqrt(D) = sqrt({d})",
        ),
    ]
    compare(call(fn, q, k_cache, v_cache, k_new, v_new), want, mistakes, what="output")


# --- lesson 15: RoPE, windows and sinks, ALiBi, perplexity ----------------------------------------


@checker("pair i = (x_i, x_(i + D/2)) turns by m * base^(-2i/D): the rotate-half layout.")
def check_rope_half(fn: Callable[[Tensor, Tensor, float], Tensor]) -> None:
    """Check fn(x (T, D), positions (T,), base) -> RoPE of x in the "half" layout."""
    g = torch.Generator().manual_seed(17)
    for t, d, base in ((5, 8, 10000.0), (4, 6, 100.0)):
        x = randn(g, t, d)
        positions = torch.arange(3, 3 + t)
        want = apply_rope(x, positions, base=base, layout="half")
        half = d // 2
        slow = base ** (-torch.arange(half, dtype=torch.float64) / d)  # base^(-i/D)
        angles = (positions[:, None] * slow).float()
        a, b = x[:, :half], x[:, half:]
        wrong_theta = torch.cat(
            [a * angles.cos() - b * angles.sin(), b * angles.cos() + a * angles.sin()], -1
        )
        mistakes = [
            (
                apply_rope(x, positions, base=base, layout="interleaved"),
                "you paired neighbours (x_2i, x_2i+1): that is the interleaved layout. Here "
                "pair i is (x_i, x_(i + D/2)), the rotate-half layout of HF transformers",
            ),
            (
                apply_rope(x, -positions, base=base, layout="half"),
                "you turned the wrong way: (a, b) -> (a cos - b sin, b cos + a sin), the "
                "minus sign goes on the second feature's term",
            ),
            (
                wrong_theta,
                "the frequencies are off: theta_i = base^(-2i / D) for pair i = 0 .. D/2 - 1 "
                "(the exponent has 2i, not i)",
            ),
            (x, "nothing was rotated: every pair turns by its position times theta_i"),
        ]
        what = f"RoPE of x ({t}, {d}) at positions {positions.tolist()}, base={base:g}"
        compare(call(fn, x, positions, base), want, mistakes, what=what, atol=1e-4)


@checker("query i sees keys i - W + 1 .. i (W of them) plus the first S keys, never the future.")
def check_sliding_window_mask(fn: Callable[[int, int, int], Tensor]) -> None:
    """Check fn(seq_len, window, sinks) -> (T, T) bool, True = may attend."""
    for t, w, s in ((8, 3, 0), (9, 4, 2), (5, 1, 0), (6, 10, 1)):
        want = sliding_window_mask(t, w, sinks=s)
        i = torch.arange(t)[:, None]
        j = torch.arange(t)[None, :]
        mistakes = [
            (
                sliding_window_mask(t, w + 1, sinks=s),
                f"each query sees {w + 1} keys: a window of W={w} is keys i - W + 1 .. i, "
                "itself included (j > i - W)",
            ),
            (
                (j <= i) & ((j > i - w + 1) | (j < s)),
                f"each query sees only {w - 1} keys: the window W={w} includes the query "
                "itself (j > i - W, not j > i - W + 1)",
            ),
            (
                ((i - j).abs() < w) | ((j < s) & (j <= i)),
                "your window looks ahead too: a causal window needs j <= i",
            ),
            (
                ((j <= i) & (j > i - w)) | (j < s),
                "a sink is still a key: query i may see sink j only when j <= i; the early "
                "queries must not see sinks in their future",
            ),
            (~want, "True means 'may attend' here: your mask is inverted"),
        ]
        what = f"seq_len={t}, window={w}, sinks={s}"
        compare(call(fn, t, w, s), want, mistakes, what=what)


@checker("each head subtracts its slope times the distance: far keys lose, steep heads look near.")
def check_alibi_bias(fn: Callable[[Tensor, int], Tensor]) -> None:
    """Check fn(slopes (H,), seq_len) -> (H, T, T) bias[h, i, j] = -slopes[h] * |i - j|."""
    for h, t in ((4, 6), (3, 5)):
        slopes = alibi_slopes(h)
        i = torch.arange(t)[:, None]
        j = torch.arange(t)[None, :]
        distance = (i - j).abs().float()  # (T, T)
        want = -slopes[:, None, None] * distance  # (H, T, T)
        mistakes = [
            (-want, "the sign is wrong: ALiBi penalises distance, bias = -slope * |i - j|"),
            (
                -slopes[:, None, None] * (i - j).float(),
                "use the distance |i - j|: i - j is negative above the diagonal, which would "
                "reward keys in the future",
            ),
            (
                -slopes.flip(0)[:, None, None] * distance,
                "the slopes are in the wrong order: head h uses slopes[h]",
            ),
            (
                -distance.expand(h, t, t),
                "every head has its own slope: multiply the distance by slopes[h]",
            ),
        ]
        compare(call(fn, slopes, t), want, mistakes, what=f"{h} heads, seq_len={t}")


@checker("token t + 1 is scored by the logits at t: exp(mean negative log-likelihood).")
def check_perplexity(fn: Callable[[Tensor, Tensor], float]) -> None:
    """Check fn(logits (T, V), ids (T,)) -> perplexity of ids[1:] under logits[:-1] (a number)."""
    g = torch.Generator().manual_seed(18)
    t, v = 12, 7
    logits = randn(g, t, v, scale=2.0)
    ids = torch.randint(0, v, (t,), generator=g)
    logp = torch.log_softmax(logits, -1)
    nll = -logp[:-1].gather(-1, ids[1:, None]).squeeze(-1)  # (T - 1,)
    want = torch.exp(nll.mean())
    got = call(fn, logits, ids)
    if isinstance(got, Tensor) and got.numel() == 1:
        got = got.reshape(())
    elif not isinstance(got, (int, float)) or isinstance(got, bool):
        raise Wrong(f"{name_of(fn)} returned {type(got).__name__}; return one number")
    same = -logp.gather(-1, ids[:, None]).squeeze(-1)  # (T,) no shift
    mistakes = [
        (
            torch.exp(same.mean()),
            "the logits at position t predict the NEXT token: score ids[1:] with logits[:-1]",
        ),
        (nll.mean(), "that is the mean negative log-likelihood (the loss); perplexity is its exp"),
        (torch.exp(nll.sum()), "average the losses over the tokens (mean), do not sum them"),
        (2 ** nll.mean(), "the losses are natural logs (nats): use exp, not 2 **"),
        (torch.exp(-nll.mean()), "perplexity is exp(+mean loss): at least 1, not a probability"),
    ]
    compare(torch.as_tensor(float(got)), want, mistakes, what="perplexity", rtol=1e-4)
