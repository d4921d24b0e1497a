"""Checkers of lesson 1 (why attention): the RNN's final state, attention's vocabulary.

Named mistakes include every state returned instead of the last, the tanh forgotten. Reference
solutions are in `attention.exercises.solutions.lesson01`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ._checking import Wrong, call, checker, compare, randn

LESSON = "01_why_attention"
__all__ = ["check_rnn_final_state", "check_vocabulary"]


@checker("h_t needs h_(t-1), so the T steps run one after another: no parallelism over time.")
def check_rnn_final_state(fn: Callable[[Tensor, Tensor, Tensor], Tensor]) -> None:
    """Check fn(x (T, D_in), w_x (D_in, D_h), w_h (D_h, D_h)) -> the final state h_T (D_h,).

    h_0 = 0 and h_t = tanh(x_t @ w_x + h_(t-1) @ w_h); the reference is torch.nn.RNN.
    """
    g = torch.Generator().manual_seed(1)
    t, d_in, d_h = 6, 3, 4
    x, w_x, w_h = randn(g, t, d_in), randn(g, d_in, d_h, scale=0.6), randn(g, d_h, d_h)
    rnn = torch.nn.RNN(d_in, d_h, bias=False, batch_first=True)
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(w_x.T)  # torch computes x @ W_ih^T
        rnn.weight_hh_l0.copy_(w_h.T)
        states, last = rnn(x.unsqueeze(0))  # (1, T, D_h), (1, 1, D_h)
    linear = torch.zeros(d_h)
    for step in x:
        linear = step @ w_x + linear @ w_h
    mistakes = [
        (states[0], "you returned every state h_1..h_T (T, D_h); the encoder hands over only h_T"),
        (states[0, 0], "you returned h_1, the first state; return the state after the last step"),
        (linear, "the tanh is missing: h_t = tanh(x_t @ w_x + h_(t-1) @ w_h)"),
        (
            torch.tanh(x[-1] @ w_x),
            "h_T ignores the previous state: each step must add h_(t-1) @ w_h before the tanh",
        ),
    ]
    compare(call(fn, x, w_x, w_h), last.reshape(d_h), mistakes, what="final state")


VOCABULARY = {
    "SDPA": (
        "function",
        "SDPA is a function with no learned weights: softmax(Q K^T / sqrt(d_k)) V.",
    ),
    "MHA": (
        "layer",
        "MHA is a layer: it owns learned W_q, W_k, W_v, W_o and runs SDPA once per head.",
    ),
    "self-attention": (
        "usage",
        "self-attention is a way of using an attention layer (usage): query, key and value all "
        "come from the same sequence; the same layer fed another sequence's keys is "
        "cross-attention.",
    ),
    "Transformer": (
        "architecture",
        "the Transformer is an architecture: stacked blocks of attention, feed-forward layers, "
        "residual connections and LayerNorm, plus positional encoding.",
    ),
}


@checker("four names, four different kinds of thing: a function, a layer, a usage, a model.")
def check_vocabulary(fn: Callable[[], dict[str, str]]) -> None:
    """Check fn() -> {term: kind} with kinds from "function", "layer", "usage", "architecture"."""
    got = call(fn)
    if not isinstance(got, dict):
        raise Wrong(f"expected a dict {{term: kind}}, got {type(got).__name__}")
    kinds = [kind for kind, _ in VOCABULARY.values()]
    answers = {str(k).strip().lower().replace(" ", "-"): v for k, v in got.items()}
    wrong = []
    for term, (kind, explanation) in VOCABULARY.items():
        if term.lower() not in answers:
            raise Wrong(f"missing term {term!r}; expected the keys {list(VOCABULARY)}")
        answer = str(answers[term.lower()]).strip().lower()
        if answer not in kinds:
            raise Wrong(f"{term}: {answers[term.lower()]!r} is not one of {kinds}")
        if answer != kind:
            wrong.append(f"{term} is not {answer!r}: {explanation}")
    if wrong:
        raise Wrong(" | ".join(wrong))
