"""Checkers of lesson 2 (attention as weighted averaging): softmax, Gaussian pooling.

Named mistakes include softmax over the wrong dim, an average that is not normalised. Reference
solutions are in `attention.exercises.solutions.lesson02`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ._checking import Wrong, call, checker, compare, name_mistake, randn

LESSON = "02_weighted_averaging"
__all__ = ["check_gaussian_pooling", "check_softmax"]


@checker("each row is now non-negative and sums to 1: a probability distribution over keys.")
def check_softmax(fn: Callable[[Tensor], Tensor]) -> None:
    """Check fn(scores (..., Tk)) -> softmax over the last dim, also for huge scores."""
    g = torch.Generator().manual_seed(2)
    for scores in (randn(g, 3, 5, scale=2.0), randn(g, 2, 3, 4, scale=2.0)):
        e = scores.exp()
        mistakes = [
            (
                torch.softmax(scores, dim=0),
                "softmax over dim=0 (each column sums to 1); "
                "attention normalises each row over the keys: use dim=-1",
            ),
            (
                torch.softmax(scores, dim=1),
                "softmax over dim=1 works for 2-D scores only; "
                "use dim=-1 so any leading (batch, head) dims are left alone",
            ),
            (e, "you took exp but did not divide by the row sum: rows must sum to 1"),
            (
                scores / scores.sum(-1, keepdim=True),
                "the exp is missing: softmax(s)_j = "
                "exp(s_j) / sum_i exp(s_i); dividing raw scores by their sum can go negative",
            ),
        ]
        what = f"softmax of a {tuple(scores.shape)} tensor"
        compare(call(fn, scores), torch.softmax(scores, dim=-1), mistakes, what=what)
    huge = torch.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -999.0]])
    got = call(fn, huge)
    whole = (huge - huge.max()).exp()  # the max of the whole tensor: row 2 underflows to 0 / 0
    mistake = (
        whole / whole.sum(-1, keepdim=True),
        "you subtracted the max of the whole tensor, not each row's own: the second row "
        "[-1000, -1000, -999] lies 2000 below it, every exp underflows to 0 and 0 / 0 is NaN. "
        "Subtract s.amax(dim=-1, keepdim=True)",
    )
    name_mistake(got, [mistake])
    if isinstance(got, Tensor) and not bool(torch.isfinite(got).all()):
        raise Wrong(
            "scores like 1000 give NaN: exp(1000) overflows to inf and inf / inf is "
            "NaN. Subtract each row's max first (softmax(s) = softmax(s - max(s)))"
        )
    what = "softmax of [[1000, 1001, 1002], [-1000, -1000, -999]]"
    compare(got, torch.softmax(huge, dim=-1), what=what)
    # Shifting by the row's minimum passes the rows above (their spread is small) but not these.
    spread = torch.tensor([[0.0, 1000.0], [1000.0, 0.0]])
    shifted = (spread - spread.amin(-1, keepdim=True)).exp()  # [1, inf]: exp overflows
    mistake = (
        shifted / shifted.sum(-1, keepdim=True),
        "subtract the row's maximum, not its minimum: exp overflows. For scores [0, 1000], "
        "s - min(s) = [0, 1000] and exp(1000) = inf; s - max(s) = [-1000, 0] keeps every "
        "exponent <= 0",
    )
    what = "softmax of [[0, 1000], [1000, 0]]"
    compare(call(fn, spread), torch.softmax(spread, dim=-1), [mistake], what=what)


def _pooling_mistakes(q: Tensor, k: Tensor, v: Tensor, width: float) -> list[tuple[Tensor, str]]:
    diff = q[:, None] - k[None, :]  # (Tq, Tk)
    sq = diff**2

    def pool(scores: Tensor, dim: int = -1) -> Tensor:
        return torch.softmax(scores, dim=dim) @ v

    return [
        (
            torch.exp(-sq / (2 * width**2)) @ v,
            "the kernel weights are not normalised: divide "
            "by their sum over the keys (that is what the softmax does), so the weights sum to 1",
        ),
        (pool(-diff.abs() / (2 * width**2)), "use the squared distance (q - k)**2, not |q - k|"),
        (
            pool(-sq / (2 * width)),
            "divide by 2 * width**2: the width is a standard deviation, so it enters squared",
        ),
        (
            pool(-sq / width**2),
            "the Gaussian kernel has a factor 1/2: exp(-(q - k)**2 / (2 * width**2))",
        ),
        (
            pool(sq / (2 * width**2)),
            "the score must be minus the squared distance: near keys "
            "get large weights, far keys small ones",
        ),
        (
            pool(-sq / (2 * width**2), dim=0),
            "softmax over the queries (dim=0): normalise each query's row over the keys (dim=-1)",
        ),
        (
            torch.softmax(-sq / (2 * width**2), dim=-1),
            "you returned the weights (Tq, Tk); "
            "return the weighted average of the values, weights @ values",
        ),
    ]


@checker("each prediction is an average of the targets, weighted by closeness to the query.")
def check_gaussian_pooling(fn: Callable[[Tensor, Tensor, Tensor, float], Tensor]) -> None:
    """Check fn(queries (Tq,), keys (Tk,), values (Tk,), width) -> (Tq,) Nadaraya-Watson.

    weights[i, j] = softmax over j of -(queries[i] - keys[j])**2 / (2 * width**2)
    """
    g = torch.Generator().manual_seed(3)
    keys = torch.rand(12, generator=g) * 5
    values = torch.sin(keys) + 0.1 * randn(g, 12)
    queries = torch.linspace(0, 5, 7)
    for width in (0.5, 2.0):
        kernel = torch.exp(-((queries[:, None] - keys[None, :]).double() ** 2) / (2 * width**2))
        want = (kernel / kernel.sum(-1, keepdim=True) @ values.double()).float()  # (Tq,)
        got = call(fn, queries, keys, values, width)
        what = f"predictions for width={width}"
        compare(got, want, _pooling_mistakes(queries, keys, values, width), what=what)
