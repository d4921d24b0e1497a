"""Checkers of lesson 15 (RoPE, windows and sinks, ALiBi, perplexity): RoPE's rotation in the
"half" layout, a sliding-window mask with sinks, ALiBi's bias, perplexity.

Named mistakes include the interleaved layout instead of the half one, a window one too wide,
logits not shifted. Reference solutions are in `attention.exercises.solutions.lesson15`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..masks import sliding_window_mask
from ..positional import alibi_slopes, apply_rope
from ._checking import Wrong, call, checker, compare, name_of, randn

LESSON = "15_rope_alibi_windows"
__all__ = ["check_alibi_bias", "check_perplexity", "check_rope_half", "check_sliding_window_mask"]


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
