"""Checkers of lesson 7 (self-attention): self-attention from X, attention pooling, memory slots
and the tanh layer.

Named mistakes include "softmax over the positions", "the padded rows were summed too". Reference
solutions are in `attention.exercises.solutions.lesson07`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

import attention as A

from ._checking import Wrong, call, checker, close, compare, scale_mistakes
from .lesson06 import _seeded

LESSON = "07_self_attention"
__all__ = [
    "check_attention_pool",
    "check_memory_slots",
    "check_self_attention",
    "check_tanh_attention",
]


@checker("Q = X W_q, K = X W_k, V = X W_v, then softmax(Q K^T / sqrt(d_k)) V.")
def check_self_attention(fn: Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]) -> None:
    """Check `fn(x (B, T, M), w_q (M, D), w_k (M, D), w_v (M, Dv)) -> output (B, T, Dv)`."""
    g = _seeded(7)
    x = torch.randn(2, 4, 6, generator=g)  # (B, T, M)
    w_q, w_k = torch.randn(6, 3, generator=g), torch.randn(6, 3, generator=g)  # (M, D)
    w_v = torch.randn(6, 5, generator=g)  # (M, Dv)
    got = call(fn, x, w_q, w_k, w_v)
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (B, T, D), (B, T, D), (B, T, Dv)
    if isinstance(got, Tensor) and tuple(got.shape) == (2, 4, 6):
        raise Wrong(
            "wrong shape: expected (2, 4, 5), got (2, 4, 6): the output's width is the values' "
            "width, so project the values with w_v"
        )

    def attend(q: Tensor, k: Tensor, scale: float = 3**-0.5, dim: int = -1) -> Tensor:
        return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=dim) @ v  # (B, T, Dv)

    mistakes = [
        *scale_mistakes(lambda c: attend(q, k, scale=c), "d_k", 3),
        (
            attend(q, k, scale=6**-0.5),
            "you divided by sqrt(6), the input width; d_k is the width of q and k (3 here)",
        ),
        (
            attend(q, k, dim=-2),
            "softmax over the wrong axis: each query's weights sum to 1 over the keys (dim=-1)",
        ),
        (
            attend(k, q),
            "your scores are transposed: k @ q^T puts the keys on the rows. Row i must be "
            "query i against every key, q @ k.transpose(-2, -1), before the softmax over dim=-1",
        ),
        (attend(q, q), "your keys look like they were made with w_q: K = X W_k"),
    ]
    compare(got, A.scaled_dot_product_attention(q, k, v).output, mistakes, what="output")


@checker("one learned query turns any number of tokens into one vector, padding ignored.")
def check_attention_pool(fn: Callable[[Tensor, Tensor, Tensor], Tensor]) -> None:
    """Check `fn(x (B, T, M), query (M,), mask (B, T) True = real token) -> (B, M)`.

    weights = softmax over real tokens of (x @ query) / sqrt(M); output = weights @ x.
    """
    g = _seeded(8)
    x = torch.randn(3, 5, 4, generator=g)  # (B, T, M)
    query = torch.randn(4, generator=g) * 2  # (M,)
    mask = A.padding_mask([5, 2, 3], 5)[:, 0]  # (B, T)
    got = call(fn, x, query, mask)

    def pool(scale: float) -> Tensor:
        queries = query.expand(3, 1, 4)  # (B, 1, M) the same learned query for every sequence
        result = A.scaled_dot_product_attention(queries, x, x, mask[:, None], scale=scale)
        return result.output[:, 0]  # (B, M)

    want = pool(4**-0.5)
    if isinstance(got, Tensor) and tuple(got.shape) == (3, 1, 4):
        raise Wrong(
            "wrong shape: expected (3, 4), got (3, 1, 4): drop the query axis (.squeeze(1))"
        )
    if isinstance(got, Tensor) and not close(got, want):
        noisy = x.clone()
        noisy[~mask] = 100.0  # change only the padding
        moved = call(fn, noisy, query, mask)
        if isinstance(moved, Tensor) and not close(moved, got):
            raise Wrong("padding leaked in: your result changes when only the padded tokens change")
    mistakes = [
        (
            (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True),
            "that is mean pooling: every real token got the same weight. Let the query score "
            "the tokens: softmax(x @ query / sqrt(M))",
        ),
        *scale_mistakes(pool, "M", 4),
    ]
    compare(got, want, mistakes, what="pooled output")


@checker("every position reads a mixture of the learned slots; the length stays T.")
def check_memory_slots(fn: Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]) -> None:
    """Check `fn(x (B, T, M), w_q (M, d_k), slot_keys (Ns, d_k), slot_values (Ns, d_v))`.

    -> (B, T, d_v): softmax over the slots of (x @ w_q) @ slot_keys.T / sqrt(d_k), times values.
    """
    b, t, m, d_k, s, d_v = 2, 5, 6, 4, 3, 2
    g = _seeded(17)
    x = torch.randn(b, t, m, generator=g)  # (B, T, M)
    w_q = torch.randn(m, d_k, generator=g)  # (M, d_k)
    keys = torch.randn(s, d_k, generator=g)  # (Ns, d_k)
    values = torch.randn(s, d_v, generator=g)  # (Ns, d_v)
    got = call(fn, x, w_q, keys, values)
    q = x @ w_q  # (B, T, d_k)

    def attend(scale: float) -> Tensor:
        k, v = keys.expand(b, s, d_k), values.expand(b, s, d_v)  # the same slots for every input
        return A.scaled_dot_product_attention(q, k, v, scale=scale).output  # (B, T, d_v)

    want = attend(d_k**-0.5)
    scores = q @ keys.T / math.sqrt(d_k)  # (B, T, Ns)
    if isinstance(got, Tensor) and tuple(got.shape) == (b, t, s):
        raise Wrong(
            f"wrong shape: expected {(b, t, d_v)}, got {(b, t, s)}: that is one weight per slot; "
            "multiply the weights by the slot values"
        )
    mistakes = [
        (
            torch.softmax(scores, dim=-2) @ values,
            "softmax over the positions (dim=-2): each position must share its weight among "
            "the slots, so normalise over the last dimension",
        ),
        (
            torch.softmax(q @ keys.T / math.sqrt(m), dim=-1) @ values,
            f"you divided by sqrt(M) = sqrt({m}), the input width; the dot product multiplies "
            f"vectors of width d_k = {d_k}",
        ),
        *scale_mistakes(attend, "d_k", d_k),
    ]
    compare(got, want, mistakes, what="slots output")


@checker("one global feature per set, whatever its size and order, with the padding left out.")
def check_tanh_attention(fn: Callable[..., Tensor]) -> None:
    """Check `fn(x (B, T, d_in), mask (B, T) True = real, w_q, w_k, w_v (d_in, d_att))`.

    -> g (B, d_att): q, k, v = tanh(x @ w); z = softmax(q @ k.T, padded keys masked) @ v, no
    scaling (as the paper); g = sum of z over the real positions.
    """
    b, t, d_in, d_att = 3, 5, 4, 3
    g = _seeded(23)
    x = torch.randn(b, t, d_in, generator=g)  # (B, T, d_in)
    mask = A.padding_mask([5, 3, 2], t)[:, 0]  # (B, T)
    w_q, w_k, w_v = (torch.randn(d_in, d_att, generator=g) for _ in range(3))
    got = call(fn, x, mask, w_q, w_k, w_v)

    def layer(squash: bool, keys_masked: bool, scale: float) -> Tensor:
        f = torch.tanh if squash else (lambda u: u)
        q, k, v = f(x @ w_q), f(x @ w_k), f(x @ w_v)  # (B, T, d_att)
        keep = mask[:, None] if keys_masked else None  # (B, 1, T)
        return A.scaled_dot_product_attention(q, k, v, keep, scale=scale).output  # (B, T, d_att)

    z = layer(True, True, 1.0)
    real = mask[..., None].float()  # (B, T, 1)
    want = (z * real).sum(1)  # (B, d_att)
    mistakes = [
        (
            z.sum(1),
            "the padded positions were summed too: their rows of z are not real set members, "
            "leave them out of the sum",
        ),
        (
            want / mask.sum(1, keepdim=True),
            "that is the mean over the real positions; the layer sums them",
        ),
        (
            (layer(True, False, 1.0) * real).sum(1),
            "padding leaked in: mask the padded keys before the softmax",
        ),
        (
            (layer(False, True, 1.0) * real).sum(1),
            "no tanh: apply tanh to each projection, q = tanh(x @ w_q) and so on",
        ),
        (
            (layer(True, True, d_att**-0.5) * real).sum(1),
            "you divided the scores by sqrt(d_att); this layer does not (tanh already bounds "
            "|q . k| by d_att)",
        ),
        (z, f"wrong shape: expected {(b, d_att)}, got {(b, t, d_att)}: sum over the positions"),
    ]
    compare(got, want, mistakes, what="global feature")
