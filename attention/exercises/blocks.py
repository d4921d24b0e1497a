"""Self-checking exercises for lessons 9-10: positional encoding and the Transformer block.

Each `check_*` runs the learner's function on small fixed inputs, compares with the `attention`
core (or torch) through the kit in `_checking` and prints one line, naming the misconception
when it is a known one ("sine and cosine are swapped", "you normalised over the batch"), else
the first wrong position with the expected and the received value.

Reference solutions are in `attention.exercises.solution_layers`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

import attention as A

from ._checking import Wrong, call, checker, compare, expect_int, expect_tensor, name_mistake

__all__ = [
    "check_layer_norm",
    "check_parameter_count",
    "check_permutation_equivariance",
    "check_positional_encoding",
]


# --- lesson 9: positional encoding ------------------------------------------------------------

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


# --- lesson 10: the Transformer block ---------------------------------------------------------


@checker(
    "each token is normalised over its own features, then scaled by gamma and shifted by beta."
)
def check_layer_norm(fn: Callable[[Tensor, Tensor, Tensor, float], Tensor]) -> None:
    """Check `fn(x (B, T, M), gamma (M,), beta (M,), eps) -> (B, T, M)` against F.layer_norm."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(3, 4, 6, generator=g) * 3 + 1  # (B, T, M)
    x[0, 0] = 2.5  # a constant token: its variance is 0
    x[1, 2] = torch.tensor([1, -1, 1, -1, 1, -1]) * 3e-3  # a token with a tiny variance
    gamma = torch.rand(6, generator=g) + 0.5
    beta = torch.randn(6, generator=g)
    eps = 1e-5
    got = call(fn, x, gamma, beta, eps)
    want = F.layer_norm(x, (6,), gamma, beta, eps)
    if isinstance(got, Tensor) and got.shape == want.shape and not bool(torch.isfinite(got).all()):
        raise Wrong(
            "NaN or inf for the constant token (batch 0, position 0): its variance is 0, so "
            "add eps inside the square root: (x - mean) / sqrt(var + eps)"
        )

    def norm(dims=-1, correction=0, eps_inside=True, scale=gamma, shift=beta) -> Tensor:
        var = x.var(dims, keepdim=True, correction=correction)
        den = (var + eps).sqrt() if eps_inside else var.sqrt() + eps
        return (x - x.mean(dims, keepdim=True)) / den * scale + shift

    mistakes = [
        (
            norm(0),
            "you normalised over the batch (dim 0): that is BatchNorm's axis, not LayerNorm's",
        ),
        (
            norm((0, 1)),
            "you normalised each feature over batch and positions: that is BatchNorm1d; "
            "LayerNorm uses each token's own features (dim -1)",
        ),
        (
            norm(1),
            "you normalised over the positions (dim 1); LayerNorm uses the features (dim -1)",
        ),
        (
            norm(correction=1),
            "you used the unbiased variance (divides by M - 1); LayerNorm divides by M: "
            "x.var(-1, unbiased=False) or correction=0",
        ),
        (
            norm(eps_inside=False),
            "eps is in the wrong place: (x - mean) / (std + eps) differs for tokens with tiny "
            "variance (batch 1, position 2); use (x - mean) / sqrt(var + eps)",
        ),
        (
            norm(scale=1.0, shift=0.0),
            "you normalised correctly but forgot gamma and beta: return y * gamma + beta",
        ),
        (norm(shift=0.0), "you scaled by gamma but forgot the shift beta: return y * gamma + beta"),
        (
            norm(scale=1.0),
            "you shifted by beta but forgot the scale gamma: return y * gamma + beta",
        ),
    ]
    compare(got, want, mistakes, what="output", atol=1e-4)


@checker("4 M^2 + 4 M for attention, 2 M d_ff + d_ff + M for the FFN, 4 M for two LayerNorms.")
def check_parameter_count(fn: Callable[[int, int], int]) -> None:
    """Check `fn(d_model, d_ff) -> int`, every trainable parameter of one encoder layer."""
    for m, d_ff in ((8, 32), (16, 24), (512, 2048)):
        got = expect_int(call(fn, m, d_ff))
        want = A.count_parameters(A.EncoderLayer(m, 1, d_ff))
        if got == want:
            continue
        where = f"for d_model={m}, d_ff={d_ff}: expected {want}, got {got}"
        mistakes = [
            (
                4 * m * m + 2 * m * d_ff,
                f"{where}. You counted the weight matrices only (the textbook 12 M^2 when "
                "d_ff = 4 M): add the biases (4 M in attention, d_ff + M in the FFN) and the "
                "two LayerNorms (2 M each)",
            ),
            (
                12 * m * m,
                f"{where}. 12 M^2 is the textbook estimate: it leaves out biases and LayerNorms "
                "and assumes d_ff = 4 M. Count exactly, with the d_ff you are given",
            ),
            (
                want - 4 * m,
                f"{where}. Add the two LayerNorms: each has a weight and a bias of size M",
            ),
            (
                want - 2 * m,
                f"{where}. You are 2 M short in the LayerNorms: each has a gamma (scale) AND a "
                "beta (shift) of size M, did you forget beta? There are two LayerNorms, one "
                "per sub-layer, so 4 M in all",
            ),
            (
                4 * m * m + 4 * m + 2 * m * 4 * m + 4 * m + m + 4 * m,
                f"{where}. You assumed d_ff = 4 * d_model; use the d_ff argument",
            ),
        ]
        name_mistake(got, mistakes)
        raise Wrong(where)
