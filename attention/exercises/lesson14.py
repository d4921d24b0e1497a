"""Checkers of lesson 14 (KV cache, MQA and GQA): the cache's size, repeating kv heads, attention
of one new token over a cache.

Named mistakes include query heads counted instead of kv heads, tiled instead of repeated heads.
Reference solutions are in `attention.exercises.solutions.lesson14`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..functional import repeat_kv, scaled_dot_product_attention
from ..memory import kv_cache_bytes
from ._checking import Wrong, call, checker, compare, expect_int, name_mistake, randn

LESSON = "14_kv_cache_gqa"
__all__ = ["check_cached_attention", "check_kv_cache_bytes", "check_repeat_kv"]


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
