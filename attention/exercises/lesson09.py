"""Checkers of lesson 9 (positional encoding): permutation equivariance, sinusoidal encoding.

Named mistakes include "sine and cosine are swapped". Reference solutions are in
`attention.exercises.solutions.lesson09`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

import attention as A

from ._checking import Wrong, call, checker, compare, expect_tensor

LESSON = "09_positional_encoding"
__all__ = ["check_permutation_equivariance", "check_positional_encoding"]


# A case that is permutation-invariant but not equivariant: it catches a test of invariance.
_REVERSED = "self-attention whose output rows come out in reverse order"


@checker("shuffling the tokens only shuffles attention's output; positions break that.")
def check_permutation_equivariance(fn: Callable[[Callable, Tensor, Tensor], bool]) -> None:
    """Check `fn(f, x (B, T, M), perm (T,)) -> bool`: is f(x[:, perm]) == f(x)[:, perm]?"""
    torch.manual_seed(10)  # the checker restores the learner's random state
    mha = A.MultiHeadAttention(8, 2).eval()
    x = torch.randn(2, 5, 8)
    pe = A.sinusoidal_positional_encoding(5, 8)  # (T, M)

    def attention(mask: Tensor | None = None, positions: Tensor | float = 0.0):
        def f(x: Tensor) -> Tensor:
            with torch.no_grad():
                return mha(x + positions, mask=mask).output

        return f

    def reversed_rows(x: Tensor) -> Tensor:
        return attention()(x).flip(1)  # row i answers token T-1-i: the rows no longer follow

    perm = torch.tensor([1, 2, 0, 4, 3])  # a 3-cycle, so perm and its inverse differ
    cases = (
        (attention(), True, "plain self-attention"),
        (attention(positions=pe), False, "self-attention with positional encodings added"),
        (attention(mask=A.causal_mask(5)), False, "causal self-attention"),
        # invariant (any sum, mean or sort over the positions is unchanged) but not equivariant
        (reversed_rows, False, _REVERSED),
    )
    for f, want, label in cases:
        got = call(fn, f, x, perm)
        if isinstance(got, Tensor) and got.numel() == 1 and got.dtype == torch.bool:
            got = bool(got)
        if not isinstance(got, bool):
            raise Wrong(f"expected a bool (e.g. from torch.allclose), got {type(got).__name__}")
        if got == want:
            continue
        if want:
            raise Wrong(
                f"you said False for {label}, which is equivariant. Compare f(x[:, perm]) with "
                "f(x)[:, perm] (the output shuffled the same way, not f(x) itself and not the "
                "inverse shuffle), using torch.allclose: sums in another order differ in the "
                "last bits, so == is too strict"
            )
        if label == _REVERSED:
            raise Wrong(
                f"you said True for {label}: shuffling its input leaves every sum, mean or "
                "sorted list over the positions unchanged, but its rows do not follow the "
                "tokens. That is permutation invariance (f(x[:, perm]) summarised equals f(x) "
                "summarised); equivariance compares position by position, "
                "f(x[:, perm]) with f(x)[:, perm], with no summary over the positions"
            )
        raise Wrong(
            f"you said True for {label}, which is not equivariant: position now matters. "
            "Does your function really call f on the shuffled input?"
        )


def _sinusoids(t: int, exponents: Tensor, start: int = 0) -> tuple[Tensor, Tensor]:
    """sin and cos of pos / 10000^exponent, each (T, len(exponents)), in float64."""
    pos = torch.arange(start, start + t, dtype=torch.float64)[:, None]  # (T, 1)
    angle = pos / 10000**exponents  # (T, E)
    return torch.sin(angle), torch.cos(angle)


def _interleave(a: Tensor, b: Tensor) -> Tensor:
    """Columns a0, b0, a1, b1, ...: (T, M/2) and (T, M/2) -> (T, M)."""
    return torch.stack([a, b], -1).flatten(-2)


@checker("PE[pos, 2i] = sin(pos / 10000^(2i/M)), PE[pos, 2i+1] = cos(the same angle).")
def check_positional_encoding(fn: Callable[[int, int], Tensor]) -> None:
    """Check `fn(seq_len, d_model) -> (seq_len, d_model)`, the sinusoidal table."""
    for t, m in ((6, 8), (50, 16)):
        got = expect_tensor(call(fn, t, m), what=f"for seq_len={t}, d_model={m}")
        if not got.is_floating_point():
            raise Wrong(f"expected a floating tensor, got {got.dtype}")
        two_i = torch.arange(0, m, 2, dtype=torch.float64) / m  # (M/2,) the exponents 2i/M
        sin, cos = _sinusoids(t, two_i)
        sin_j, cos_j = _sinusoids(t, torch.arange(m, dtype=torch.float64) / m)  # (T, M)
        mistakes = [
            (
                _interleave(cos, sin),
                "sine and cosine are swapped: even columns (2i) hold sin, odd ones cos",
            ),
            (
                torch.cat([sin, cos], -1),
                "you put all the sines first and all the cosines after; they interleave: "
                "column 2i is a sine and column 2i+1 the cosine of the same angle",
            ),
            (
                _interleave(*_sinusoids(t, two_i / 2)),
                "the frequencies are off: the exponent is 2i / d_model, where 2i is the even "
                "column index (i counts pairs of columns)",
            ),
            (
                torch.where(torch.arange(m) % 2 == 0, sin_j, cos_j),
                "column j used the exponent j / d_model, so each cosine got its own frequency: "
                "a sin/cos pair shares one angle, column 2i and 2i+1 both use 10000^(2i/d_model)",
            ),
            (_interleave(*_sinusoids(t, two_i, start=1)), "positions start at 0, not 1"),
        ]
        want = A.sinusoidal_positional_encoding(t, m)  # (T, M)
        compare(got, want, mistakes, what=f"for seq_len={t}, d_model={m}", atol=1e-4)
