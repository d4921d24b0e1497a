"""Self-checking exercises for lesson 7's attention that pools: memory slots and the tanh layer.

Each `check_*` runs the learner's function on small fixed inputs, compares with the `attention`
core through the kit in `_checking` and prints one line, naming the misconception when it is a
known one ("softmax over the positions", "the padded rows were summed too"), else the first
wrong position with the expected and the received value.

Reference solutions are in `attention.exercises.solution_pooling`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

import attention as A

from ._checking import Wrong, call, checker, compare, scale_mistakes

__all__ = ["check_memory_slots", "check_tanh_attention"]


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


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
