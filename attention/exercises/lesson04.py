"""Checkers of lesson 4 (scaled dot-product attention): attention itself, its shapes.

Named mistakes include a forgotten scale, softmax over the queries. Reference solutions are in
`attention.exercises.solutions.lesson04`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..functional import scaled_dot_product_attention
from ._checking import (
    Wrong,
    attempt,
    call,
    checker,
    close,
    compare,
    name_mistake,
    name_of,
    raised,
    randn,
    scale_mistakes,
)

LESSON = "04_scaled_dot_product"
__all__ = ["check_attention", "check_attention_shapes"]


def _attention_mistakes(q: Tensor, k: Tensor, v: Tensor) -> list[tuple[Tensor, str]]:
    d, dv = q.shape[-1], v.shape[-1]
    raw = q @ k.transpose(-2, -1)  # (..., Tq, Tk)
    return [
        *scale_mistakes(lambda c: torch.softmax(raw * c, -1) @ v, "d_k", d),
        (
            torch.softmax(raw / math.sqrt(dv), -1) @ v,
            f"you divided by sqrt(d_v) = sqrt({dv}), "
            f"the value width; the scale is sqrt(d_k) = sqrt({d}), the query/key width",
        ),
        (
            torch.softmax(raw / math.sqrt(d), -2) @ v,
            "softmax over the queries (dim=-2): each "
            "query's weights must sum to 1 over the keys, use dim=-1",
        ),
        (
            torch.softmax(raw / math.sqrt(d), -1),
            "you returned the weights (..., Tq, Tk); return weights @ value (..., Tq, Dv)",
        ),
    ]


@checker("your function matches A.scaled_dot_product_attention and torch's own on 2-D and 4-D.")
def check_attention(fn: Callable[[Tensor, Tensor, Tensor], Tensor]) -> None:
    """Check fn(query (..., Tq, D), key (..., Tk, D), value (..., Tk, Dv)) -> (..., Tq, Dv)."""
    g = torch.Generator().manual_seed(6)
    cases = [((), 4, 6, 8, 3), ((2, 2), 4, 6, 8, 3)]  # (lead, Tq, Tk, D, Dv)
    for lead, tq, tk, d, dv in cases:
        q, k, v = randn(g, *lead, tq, d), randn(g, *lead, tk, d), randn(g, *lead, tk, dv)
        want = scaled_dot_product_attention(q, k, v).output
        torch.testing.assert_close(want, torch.nn.functional.scaled_dot_product_attention(q, k, v))
        hint = ""
        if lead:
            hint = (
                "; it must work for (B, H, T, D) too: use key.transpose(-2, -1) rather "
                "than key.T, and softmax(dim=-1)"
            )
        got = call(fn, q, k, v, hint=hint)
        what = f"output for query {tuple(q.shape)}, key {tuple(k.shape)}, value {tuple(v.shape)}"
        compare(got, want, _attention_mistakes(q, k, v), what=what)


SHAPE_CASES = [
    ((5, 16), (7, 16), (7, 32)),
    ((2, 5, 16), (2, 7, 16), (2, 7, 4)),
    ((2, 4, 10, 8), (2, 4, 10, 8), (2, 4, 10, 8)),
    ((1, 3), (9, 3), (9, 2)),
    ((5, 16), (7, 8), (7, 16)),  # widths of query and key differ
    ((5, 16), (7, 16), (6, 16)),  # lengths of key and value differ
]


def _true_shapes(qs: tuple[int, ...], ks: tuple[int, ...], vs: tuple[int, ...]) -> Any:
    """Ask the core: (scores shape, output shape), or None when it refuses with ValueError."""
    try:
        r = scaled_dot_product_attention(torch.zeros(qs), torch.zeros(ks), torch.zeros(vs))
    except ValueError:
        return None
    return tuple(r.scores.shape), tuple(r.output.shape)


def _as_shape(x: Any) -> Tensor | None:
    """A shape as a 1-d tensor, so the kit can compare it with the known wrong shapes."""
    try:
        return torch.tensor([int(s) for s in x])
    except (TypeError, ValueError):
        return None


def _expect_refusal(fn: Callable[..., Any], shapes: tuple, got: Any, error: Any) -> None:
    """Shapes attention cannot take: fn must raise ValueError."""
    (qs, ks, vs), label = shapes, f"{name_of(fn)}{shapes}"
    if isinstance(error, ValueError):
        return
    if error is not None:
        raise Wrong(f"{label} raised {type(error).__name__}; raise ValueError")
    if qs[-1] != ks[-1]:
        raise Wrong(
            f"{label} returned {got}, but query width {qs[-1]} and key width "
            f"{ks[-1]} differ, so q . k is undefined: raise ValueError"
        )
    raise Wrong(
        f"{label} returned {got}, but key has {ks[-2]} positions and value "
        f"{vs[-2]}: each key needs exactly one value, raise ValueError"
    )


@checker("output length follows the queries, output width follows the values.")
def check_attention_shapes(fn: Callable[..., Any]) -> None:
    """Check fn(q_shape, k_shape, v_shape) -> (scores_shape, output_shape), or ValueError."""
    for qs, ks, vs in SHAPE_CASES:
        label, want = f"{name_of(fn)}{(qs, ks, vs)}", _true_shapes(qs, ks, vs)
        got, error = attempt(fn, qs, ks, vs)
        if want is None:
            _expect_refusal(fn, (qs, ks, vs), got, error)
            continue
        *lead, tq, d = qs
        tk, dv = ks[-2], vs[-1]
        if isinstance(error, ValueError) and tq != tk:
            _, again = attempt(fn, (*lead, tk, d), ks, vs)  # the same, with Tq = Tk
            if again is None:
                raise Wrong(
                    f"{label} raised ValueError, but queries and keys may have different "
                    f"lengths (Tq = {tq}, Tk = {tk}), as in cross-attention, where the decoder's "
                    "queries read the encoder's keys: the scores are (..., Tq, Tk). Only q and k "
                    "must share a width, and k and v a length"
                )
        if error is not None:
            raise Wrong(f"{raised(fn, error)}, but these shapes are valid: expected {want}")
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise Wrong(f"{label} returned {got!r}; return a pair (scores_shape, output_shape)")
        scores, output = (_as_shape(s) for s in got)
        if scores is None or output is None:
            raise Wrong(
                f"{label} returned {got!r}; return a pair of shapes (scores_shape, output_shape)"
            )
        (want_scores, want_output), shown = want, [tuple(x.tolist()) for x in (scores, output)]
        if not close(scores, torch.tensor(want_scores)):
            transposed = (
                f"{label}: scores are (..., Tq, Tk) = {want_scores}, one row per query; "
                f"you gave {shown[0]}"
            )
            name_mistake(scores, [(torch.tensor((*lead, tk, tq)), transposed)])
            raise Wrong(f"{label}: scores shape: expected {want_scores}, got {shown[0]}")
        if not close(output, torch.tensor(want_output)):
            mistakes = [
                (
                    torch.tensor((*lead, tk, dv)),
                    f"{label}: the output has one row per query (Tq = {tq}), not per "
                    f"key (Tk = {tk}): expected {want_output}, got {shown[1]}",
                ),
                (
                    torch.tensor((*lead, tq, d)),
                    f"{label}: the output width follows the values (Dv = {dv}), not "
                    f"the queries (D = {d}): expected {want_output}, got {shown[1]}",
                ),
            ]
            name_mistake(output, mistakes)
            raise Wrong(f"{label}: output shape: expected {want_output}, got {shown[1]}")
