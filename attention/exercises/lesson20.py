"""Self-checking exercises for lesson 20: masks and biases you write, FlexAttention's way.

Each exercise is a factory that returns a FlexAttention function: a mask_mod
(b, h, q_idx, kv_idx) -> bool, or a score_mod (score, b, h, q_idx, kv_idx) -> score. A checker
evaluates it on every cell at once with index tensors that broadcast (attention.masks:
mask_from_mod, scores_from_mod) and compares with the course's own masks and biases, naming the
known mistakes: a window one key too wide or too narrow, q_idx > kv_idx (the diagonal lost),
sinks that see the future, a mask that leaks across documents, ALiBi's slope with the wrong sign
or the wrong head, softcapping without the division or the multiplication. Reference solutions
are in `attention.exercises.solutions.lesson20`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..masks import causal_mask, document_mask, mask_from_mod, scores_from_mod, sliding_window_mask
from ..positional import alibi_bias
from ._checking import Wrong, attempt, call, checker, compare, name_of, raised, randn

LESSON = "20_masks_you_write"
__all__ = [
    "check_alibi_score_mod",
    "check_document_mask_mod",
    "check_softcap_score_mod",
    "check_window_sinks_mask_mod",
]

AND_OR = (
    "`and`, `or`, `not` and `if` need a single True or False, but q_idx and kv_idx are index "
    "tensors here (as inside FlexAttention's vmap): use & | ~ with parentheses, and torch.where "
    "instead of if"
)


def _function(got: Any, fn: Callable[..., Any], kind: str) -> Callable[..., Any]:
    if got is None:
        raise Wrong(f"{name_of(fn)} returned None; did you forget `return {kind}`?")
    if not callable(got):
        raise Wrong(
            f"{name_of(fn)} should return the function {kind} itself (not its result), got "
            f"{type(got).__name__}"
        )
    return got


def _run(mod: Callable[..., Any], evaluate: Callable[[], Tensor]) -> Tensor:
    """evaluate() under the checker's deadline; the learner's error, explained."""

    def run() -> Tensor:
        return evaluate()

    run.__name__ = name_of(mod)
    got, error = attempt(run)
    if error is None:
        return got
    text = str(error)
    if "Boolean value of Tensor" in text:
        raise Wrong(AND_OR)
    if text.startswith(("mask_mod:", "score_mod:")):  # the core's check of what it returned
        raise Wrong(text)
    raise Wrong(raised(mod, error))


def _mask(fn: Callable[..., Any], args: tuple[Any, ...], t: int) -> Tensor:
    mod = _function(call(fn, *args), fn, "mask_mod")
    return _run(mod, lambda: mask_from_mod(mod, t))


@checker("a window of W keys, the query included, plus the first sinks keys, all causal.")
def check_window_sinks_mask_mod(fn: Callable[[int, int], Callable[..., Tensor]]) -> None:
    """Check fn(window, sinks) -> mask_mod(b, h, q_idx, kv_idx) against sliding_window_mask."""
    for t, w, s in ((10, 3, 1), (12, 4, 2), (6, 1, 0), (7, 9, 1)):
        want = sliding_window_mask(t, w, sinks=s)
        i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
        diagonal = torch.eye(t, dtype=torch.bool)
        mistakes = [
            (
                sliding_window_mask(t, w + 1, sinks=s),
                f"off by one: each query sees {w + 1} keys; a window of {w} is "
                "q_idx - kv_idx < window, the query itself included (not <=)",
            ),
            (
                want & ~diagonal,
                "q_idx > kv_idx leaves out the diagonal: a token may attend to itself; use >=",
            ),
            (
                (j <= i) & ((j > i - w + 1) | (j < s)),
                f"off by one: each query sees only {w - 1} keys; the window includes the query "
                "itself: q_idx - kv_idx < window",
            ),
            (
                ((j <= i) & (j > i - w)) | (j < s),
                "the sinks see the future: query 0 may not see sink 1 ahead of it; keep "
                "q_idx >= kv_idx for the sinks too: causal & (in_window | is_sink)",
            ),
            (
                sliding_window_mask(t, w),
                "the sinks are missing: the first `sinks` keys stay visible to every later query "
                "(kv_idx < sinks)",
            ),
            (
                ((i - j).abs() < w) | ((j < s) & (j <= i)),
                "your window looks ahead too: add q_idx >= kv_idx",
            ),
            (want.T, "you swapped q_idx and kv_idx: each query sees later keys"),
            (~want, "True means 'may attend': your mask is inverted"),
        ]
        compare(_mask(fn, (w, s), t), want, mistakes, what=f"T={t}, window={w}, sinks={s}")


@checker("same document and causal: packed texts never see each other.")
def check_document_mask_mod(fn: Callable[[Tensor], Callable[..., Tensor]]) -> None:
    """Check fn(doc_ids (T,)) -> mask_mod: doc_ids[q] == doc_ids[k] and q >= k."""
    for ids in ([0, 0, 0, 1, 1, 2, 2, 2, 2], [0, 1, 1, 1, 2, 2], [5, 5, 9, 9, 9, 3, 3]):
        doc = torch.tensor(ids)
        t = len(ids)
        want = document_mask(doc)
        first = next(i for i in range(1, t) if ids[i] != ids[i - 1])
        mistakes = [
            (
                causal_mask(t),
                f"the mask leaks across documents: query {first} (document {ids[first]}) sees "
                f"key {first - 1} of document {ids[first - 1]}; add "
                "doc_ids[q_idx] == doc_ids[kv_idx]",
            ),
            (
                document_mask(doc, causal=False),
                "inside a document the mask must still be causal: add q_idx >= kv_idx",
            ),
            (
                want & ~torch.eye(t, dtype=torch.bool),
                "q_idx > kv_idx leaves out the diagonal: a token may attend to itself; use >=",
            ),
            (want.T, "you swapped q_idx and kv_idx: each query sees later keys"),
            (~want, "True means 'may attend': your mask is inverted"),
        ]
        compare(_mask(fn, (doc,), t), want, mistakes, what=f"doc_ids={ids}")


def _heads(fn: Callable[..., Any], args: tuple[Any, ...], scores: Tensor, n: int) -> Tensor:
    mod = _function(call(fn, *args), fn, "score_mod")
    return torch.stack([_run(mod, lambda h=h: scores_from_mod(mod, scores, h=h)) for h in range(n)])


@checker("score - slope_h * |q_idx - kv_idx|: every head its own slope, far keys lose.")
def check_alibi_score_mod(fn: Callable[[int], Callable[..., Tensor]]) -> None:
    """Check fn(n_heads) -> score_mod(score, b, h, q_idx, kv_idx) adding ALiBi's bias.

    slope_h = 2 ** (-8 * (h + 1) / n_heads) (n_heads a power of two), as alibi_slopes. Keys
    after the query may get -slope * |q - k| (the course's alibi_bias) or +slope * (k - q)
    (FlexAttention's example): a causal mask hides them.
    """
    g = torch.Generator().manual_seed(20)
    for n, t in ((4, 7), (8, 5)):
        scores = randn(g, t, t)
        bias = alibi_bias(n, t, t)  # (H, T, T) = -slope_h * |i - j|
        want = scores + bias
        got = _heads(fn, (n,), scores, n)
        signed = scores + torch.where(causal_mask(t), bias, -bias)  # -slope * (i - j)
        if torch.allclose(got, signed, atol=1e-5, rtol=1e-4):
            continue
        slopes = -bias[:, 1, 0]  # (H,) slope_h
        steps = torch.arange(n, dtype=torch.float32)
        shifted = 2 ** (-8 * steps / n) / slopes  # slope of head h - 1 (head 0: 1)
        mistakes = [
            (scores - bias, "the sign of the slope: ALiBi subtracts slope * distance"),
            (bias, "return the score plus the bias, not the bias alone"),
            (
                scores + bias[:1].expand(n, t, t),
                "every head used head 0's slope: the slope depends on h",
            ),
            (
                scores + bias * shifted[:, None, None],
                "off by one head: slope_h = 2 ** (-8 * (h + 1) / n_heads), so head 0's slope is "
                "2 ** (-8 / n_heads), not 1",
            ),
        ]
        compare(got, want, mistakes, what=f"n_heads={n}, T={t}")


@checker("cap * tanh(score / cap): small scores pass unchanged, none passes +-cap.")
def check_softcap_score_mod(fn: Callable[[float], Callable[..., Tensor]]) -> None:
    """Check fn(cap) -> score_mod returning cap * tanh(score / cap) (Gemma 2's softcapping)."""
    g = torch.Generator().manual_seed(21)
    for cap in (20.0, 5.0):
        scores = randn(g, 6, 6, scale=3 * cap)
        want = cap * torch.tanh(scores / cap)
        mistakes = [
            (cap * torch.tanh(scores), "divide inside too: cap * tanh(score / cap)"),
            (
                torch.tanh(scores / cap),
                "multiply by cap again: tanh alone squeezes every score into (-1, 1)",
            ),
            (
                scores.clamp(-cap, cap),
                "that is a hard clamp: softcapping is smooth, cap * tanh(score / cap), so large "
                "scores still differ a little and gradients still flow",
            ),
            (torch.tanh(scores) / cap, "cap * tanh(score / cap), not tanh(score) / cap"),
            (scores, "your function returned the scores unchanged"),
        ]
        compare(_heads(fn, (cap,), scores, 1)[0], want, mistakes, what=f"cap={cap:g}")
