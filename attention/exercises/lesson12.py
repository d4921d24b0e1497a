"""Self-checking exercises for lesson 12: reading a real model's attention, numbers per head.

Each `check_*` runs the learner's function on small fixed attention maps (built here so that the
checks need no model: a few heads carry a planted sink, previous-token or induction pattern),
compares with the reference through the kit in `_checking` and prints one line, naming the
mistake when it is a known one. The chat template is compared as text with the model package's
own `format_chat`. Reference solutions are in `attention.exercises.solutions.lesson12`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ._checking import Wrong, call, checker, compare, expect_tensor, refuse_unaveraged

LESSON = "12_real_model_attention"
__all__ = [
    "check_chat_prompt",
    "check_induction_score",
    "check_previous_token_score",
    "check_sampling_probs",
    "check_sink_share",
    "check_top_k_filter",
]


def _causal_weights(shape: tuple[int, ...], seed: int, bias: Tensor | None = None) -> Tensor:
    """Softmax of random scores (+ bias) under a causal mask: (..., T, T), rows sum to 1."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(*shape, generator=g) * 1.5  # (..., T, T)
    if bias is not None:
        scores = scores + bias
    t = shape[-1]
    future = torch.ones(t, t, dtype=torch.bool).triu(1)  # (T, T) True above the diagonal
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)


def _diagonal(weights: Tensor, offset: int) -> Tensor:
    return torch.diagonal(weights, offset=offset, dim1=-2, dim2=-1)


def _band(t: int, offset: int, strength: float) -> Tensor:
    """(T, T) scores bias: `strength` on the diagonal `offset` (negative: below the diagonal)."""
    return torch.diag(torch.full((t - abs(offset),), strength), offset)


# --- the attention sink --------------------------------------------------------------------------


@checker("one share per layer; a layer with a sink keeps it high for queries at every distance.")
def check_sink_share(fn: Callable[[Tensor], Tensor]) -> None:
    """Check fn(weights (L, H, T, T)) -> (L,): mean weight on key 0 over heads, queries 1..T-1."""
    n_layers, n_heads, t = 4, 3, 9
    sink = torch.zeros(n_layers, 1, 1, t)
    sink[..., 0] = torch.tensor([0.0, 1.0, 2.5, 4.0])[:, None, None]  # deeper: a stronger sink
    weights = _causal_weights((n_layers, n_heads, t, t), seed=12, bias=sink)
    want = weights[..., 1:, 0].mean((1, 2))  # (L,)
    got = expect_tensor(call(fn, weights), what="sink share")
    advice = "that is one per head; average over the heads too"
    refuse_unaveraged(got, want, (n_layers, n_heads), "number per layer", advice)
    mistakes = [
        (
            weights[..., :, 0].mean((1, 2)),
            "you included query 0: in a causal model it can only attend to itself, so its "
            "weight on the first token is always 1; average over queries 1..T-1",
        ),
        (
            weights[..., 0, :].mean((1, 2)),
            "you read the first query's row (weights[..., 0, :]); the sink is the first key's "
            "column, weights[..., 1:, 0]",
        ),
        (
            weights[..., 1:, -1].mean((1, 2)),
            "you read the last key's column; the sink is the first token, key 0",
        ),
        (
            weights[..., 1:, 0].sum((1, 2)),
            "you summed over heads and queries; take the mean, a share between 0 and 1",
        ),
    ]
    compare(got, want, mistakes, what="sink share")


# --- heads with a job ----------------------------------------------------------------------------


@checker("a previous-token head puts its weight on key i - 1; averaged over queries 1..T-1.")
def check_previous_token_score(fn: Callable[[Tensor], Tensor]) -> None:
    """Check fn(weights (H, T, T)) -> (H,): mean weight of query i on key i - 1, i = 1..T-1."""
    n_heads, t = 5, 10
    bias = torch.stack(
        [_band(t, -1, s) for s in (0.0, 1.0, 3.0, 6.0)] + [_band(t, 0, 4.0)]
    )  # (H, T, T): heads 1-3 lean on the previous token, head 4 on itself
    weights = _causal_weights((n_heads, t, t), seed=13, bias=bias)
    want = _diagonal(weights, -1).mean(-1)  # (H,)
    got = expect_tensor(call(fn, weights), what="previous-token score")
    mistakes = [
        (
            _diagonal(weights, 0).mean(-1),
            "you read the diagonal, each query's weight on itself; the previous token is one "
            "below it: torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1)",
        ),
        (
            _diagonal(weights, 1).mean(-1),
            "you read the weight on the next token (offset +1), which a causal model never "
            "sees: all zeros. The previous token is offset -1",
        ),
        (
            _diagonal(weights, -1).sum(-1) / t,
            f"you divided by T = {t}; only T - 1 = {t - 1} queries have a previous token",
        ),
        (
            _diagonal(weights, -1).sum(-1),
            "you summed the weights; take their mean, a score between 0 and 1",
        ),
    ]
    compare(got, want, mistakes, what="previous-token score")


@checker("an induction head reads the token after the earlier occurrence: key i - n + 1.")
def check_induction_score(fn: Callable[[Tensor, int], Tensor]) -> None:
    """Check fn(weights (H, 2n, 2n), n) -> (H,): mean weight of query i (n <= i < 2n) on key
    i - n + 1."""
    n, n_heads = 6, 4
    t = 2 * n
    bias = torch.stack(
        [
            torch.zeros(t, t),
            _band(t, -(n - 1), 5.0),  # an induction head
            _band(t, -n, 5.0),  # a duplicate-token head: the earlier copy itself
            _band(t, -1, 5.0),  # a previous-token head
        ]
    )  # (H, 2n, 2n)
    weights = _causal_weights((n_heads, t, t), seed=14, bias=bias)
    want = _diagonal(weights, -(n - 1))[..., 1:].mean(-1)  # (H,)
    got = expect_tensor(call(fn, weights, n), what="induction score")
    mistakes = [
        (
            _diagonal(weights, -n).mean(-1),
            "you read key i - n, the earlier occurrence of the same token (a duplicate-token "
            "head); an induction head reads the token after it, key i - n + 1",
        ),
        (
            _diagonal(weights, -(n - 1)).mean(-1),
            "you included query n - 1, the last token of the first copy: nothing has repeated "
            "there yet. Average over the second copy's queries n..2n-1 only",
        ),
        (
            _diagonal(weights, -1)[..., n - 1 :].mean(-1),
            "you read the previous token (key i - 1); the induction key is i - n + 1",
        ),
        (
            _diagonal(weights, -(n - 1))[..., 1:].sum(-1),
            "you summed the weights; take their mean, a score between 0 and 1",
        ),
    ]
    compare(got, want, mistakes, what="induction score")


# --- generation ----------------------------------------------------------------------------------


@checker("only the k best tokens compete; -inf makes the softmax give the others exactly 0.")
def check_top_k_filter(fn: Callable[[Tensor, int], Tensor]) -> None:
    """Check fn(logits (B, V), k) -> (B, V): the k largest of each row kept, the rest -inf."""
    g = torch.Generator().manual_seed(15)
    b, v, k = 3, 12, 4
    logits = torch.randn(b, v, generator=g) * 2.0  # (B, V) no ties
    inf = float("-inf")

    def keep(n: int) -> Tensor:
        kth = logits.topk(n, dim=-1).values[..., -1:]  # (B, 1)
        return logits.masked_fill(logits < kth, inf)

    want = keep(k)
    got = expect_tensor(call(fn, logits, k), what="filtered logits")
    if tuple(got.shape) == (b, k):
        raise Wrong(
            f"expected shape {(b, v)}, got {(b, k)}: you returned only the k values. Keep every "
            "position (the position is the token id) and set the others to -inf"
        )
    everywhere = logits.flatten().topk(k).values[-1]  # the k-th largest of the whole batch
    smallest = -(-logits).topk(k, dim=-1).values[..., -1:]  # (B, 1) the k-th smallest
    mistakes = [
        (keep(k + 1), f"you kept {k + 1} logits per row; keep exactly k = {k}"),
        (
            keep(k - 1),
            f"you kept {k - 1} logits per row; keep exactly k = {k}: the k-th largest stays "
            "(mask logits < kth, not <= kth)",
        ),
        (
            logits.masked_fill(logits < logits.topk(k, -1).values[..., -1:], 0.0),
            "you set the others to 0, but softmax gives a logit of 0 a share too; use -inf",
        ),
        (
            torch.softmax(want, dim=-1),
            "you returned probabilities; return the filtered logits (sampling takes the softmax)",
        ),
        (
            logits.masked_fill(logits > smallest, inf),
            "you kept the k smallest logits; keep the k largest",
        ),
        (
            logits.masked_fill(logits < everywhere, inf),
            "you took the top k of the whole batch; each row is its own distribution: "
            "topk(k, dim=-1)",
        ),
    ]
    compare(got, want, mistakes, what="filtered logits")


def _sampling_cases() -> list[tuple[Tensor, float, int | None]]:
    g = torch.Generator().manual_seed(16)
    logits = torch.randn(3, 12, generator=g) * 2.0  # (B, V) no ties
    return [(logits, 0.5, 4), (logits, 2.0, None), (logits, 2.0, 3)]


@checker("divide the logits by the temperature, keep the k best, softmax: below 1 sharpens.")
def check_sampling_probs(fn: Callable[[Tensor, float, int | None], Tensor]) -> None:
    """Check fn(logits (B, V), temperature, top_k or None) -> (B, V) probabilities to sample."""
    inf = float("-inf")

    def keep(x: Tensor, n: int | None) -> Tensor:
        if n is None:
            return x
        kth = x.topk(n, dim=-1).values[..., -1:]  # (B, 1)
        return x.masked_fill(x < kth, inf)

    for logits, t, k in _sampling_cases():
        want = torch.softmax(keep(logits / t, k), dim=-1)  # (B, V)
        got = expect_tensor(call(fn, logits, t, k), what=f"probabilities (T={t}, top_k={k})")
        plain = torch.softmax(logits, dim=-1)
        mistakes = [
            (
                torch.softmax(keep(logits, k), dim=-1),
                f"the temperature changed nothing: divide the logits by it ({t}) before the "
                "softmax (dividing the probabilities and renormalising undoes it)",
            ),
            (
                torch.softmax(keep(logits, k), dim=-1) / t,
                "you divided the probabilities by the temperature after the softmax: the rows no "
                "longer sum to 1. Divide the logits, before the softmax",
            ),
            (
                torch.softmax(keep(logits * t, k), dim=-1),
                f"you multiplied the logits by the temperature {t}; divide them: below 1 sharpens",
            ),
            (
                keep(logits / t, k),
                "you returned the (filtered) logits; return probabilities: softmax them",
            ),
            (
                plain,
                "you returned softmax(logits): apply the temperature and the top-k filter",
            ),
        ]
        if k is not None:
            probs = torch.softmax(logits / t, dim=-1)
            mistakes += [
                (
                    torch.softmax(keep(logits / t, k - 1), dim=-1),
                    f"you kept {k - 1} tokens; keep exactly k = {k} (mask scores < kth, not <=)",
                ),
                (
                    torch.softmax(keep(logits / t, k + 1), dim=-1),
                    f"you kept {k + 1} tokens; keep exactly k = {k}",
                ),
                (
                    probs.masked_fill(keep(logits, k) == inf, 0.0),
                    "you zeroed the other tokens after the softmax without renormalising: the "
                    "rows sum to less than 1. Filter the logits (-inf), then softmax",
                ),
                (
                    torch.softmax(logits / t, dim=-1),
                    f"top_k = {k} was ignored: only the k largest logits may keep a probability",
                ),
            ]
        compare(got, want, mistakes, what=f"probabilities (T={t}, top_k={k})")


# --- the chat template ---------------------------------------------------------------------------

_QUESTIONS = ("What is the capital of France?", "Why is the sky blue?")


def _first_difference(got: str, want: str) -> str:
    pairs = enumerate(zip(got, want, strict=False))
    i = next((i for i, (a, b) in pairs if a != b), min(len(got), len(want)))
    return (
        f"the text differs from character {i} on: expected {want[i : i + 24]!r}, "
        f"got {got[i : i + 24]!r}"
    )


@checker("a chat is one text: special tokens mark each turn, and the model continues it.")
def check_chat_prompt(fn: Callable[[str], str]) -> None:
    """Check fn(question) -> SmolLM2's chat prompt: system turn, user turn, open assistant turn."""
    from ..models.pretrained.generate import DEFAULT_SYSTEM, format_chat

    for question in _QUESTIONS:
        want = format_chat([{"role": "user", "content": question}])
        got = call(fn, question)
        if got is None:
            raise Wrong("your function returned None; did you forget `return`?")
        if not isinstance(got, str):
            raise Wrong(f"expected a str (the prompt's text), got {type(got).__name__}")
        if got == want:
            continue
        system = f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n"
        if question not in got:
            raise Wrong(f"the prompt for {question!r} does not contain the question")
        if got == want.removeprefix(system):
            raise Wrong(
                "the system turn is missing: SmolLM2's template starts with a default one, "
                f"{system!r}, when no system message is given"
            )
        if got == want.removesuffix("<|im_start|>assistant\n"):
            raise Wrong(
                "end with an open assistant turn, '<|im_start|>assistant\\n': it is what tells "
                "the model that it is its turn to write"
            )
        if got + "\n" == want:
            raise Wrong("the last newline is missing: the template ends with 'assistant\\n'")
        raise Wrong(_first_difference(got, want))
