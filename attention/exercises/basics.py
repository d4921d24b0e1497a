"""Self-checking exercises for lessons 1-5: RNN steps, vocabulary, softmax, pooling, scores, SDPA.

Each `check_*` runs the learner's function on fixed seeded inputs, compares with a reference
from the core or torch through the kit in `_checking` and prints one line, naming the mistake
when it is a known one (softmax over the wrong dim, forgotten scale, sqrt of the wrong width).

Reference solutions are in `attention.exercises.solution_basics`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..additive import AdditiveAttention
from ..functional import masked_softmax, scaled_dot_product_attention
from ._checking import (
    Wrong,
    attempt,
    call,
    checker,
    close,
    compare,
    expect_number,
    name_mistake,
    name_of,
    raised,
    randn,
    scale_mistakes,
)

__all__ = [
    "check_additive_scores",
    "check_attention",
    "check_attention_shapes",
    "check_bilinear_scores",
    "check_dot_product_variance",
    "check_gaussian_pooling",
    "check_rnn_final_state",
    "check_softmax",
    "check_softmax_jacobian",
    "check_vocabulary",
]


# --- lesson 1: why attention -----------------------------------------------------------------


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


# --- lesson 2: attention as weighted averaging -----------------------------------------------


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


# --- lesson 3: scoring functions --------------------------------------------------------------


@checker("query (width 5) and key (width 6) never had to share a width: each is projected first.")
def check_additive_scores(fn: Callable[..., Tensor]) -> None:
    """Check fn(query (B, Tq, Dq), key (B, Tk, Dk), w_q (Dq, h), w_k (Dk, h), w_v (h,)).

    Expected scores (B, Tq, Tk): w_v . tanh(query_i @ w_q + key_j @ w_k); the reference is
    attention.AdditiveAttention with the same weights.
    """
    g = torch.Generator().manual_seed(4)
    b, tq, tk, dq, dk, h = 2, 3, 4, 5, 6, 7
    query, key = randn(g, b, tq, dq), randn(g, b, tk, dk)
    w_q, w_k, w_v = randn(g, dq, h, scale=0.5), randn(g, dk, h, scale=0.5), randn(g, h)
    module = AdditiveAttention(dq, dk, h)
    with torch.no_grad():
        module.w_q.weight.copy_(w_q.T)  # nn.Linear stores (out, in)
        module.w_k.weight.copy_(w_k.T)
        module.w_v.weight.copy_(w_v[None, :])
        want = module(query, key, torch.zeros(b, tk, 1)).scores  # (B, Tq, Tk)
    features = (query @ w_q).unsqueeze(2) + (key @ w_k).unsqueeze(1)  # (B, Tq, Tk, h)
    mistakes = [
        (features @ w_v, "the tanh is missing: w_v . tanh(q W_q + k W_k)"),
        (torch.tanh(features @ w_v), "tanh goes inside, before w_v: w_v . tanh(q W_q + k W_k)"),
        (torch.softmax(want, dim=-1), "you returned the softmax weights; return the scores"),
        (
            want.transpose(1, 2),
            "scores are (B, Tq, Tk): one row per query, one column per key; yours are transposed",
        ),
        (
            torch.tanh((query @ w_q).unsqueeze(2) * (key @ w_k).unsqueeze(1)) @ w_v,
            "the projected query and key are added, not multiplied, inside the tanh",
        ),
    ]
    compare(call(fn, query, key, w_q, w_k, w_v), want, mistakes, what="additive scores")


@checker("projecting q to the key width makes a plain (scaled) dot product possible.")
def check_bilinear_scores(fn: Callable[[Tensor, Tensor, Tensor], Tensor]) -> None:
    """Check fn(query (B, Tq, Dq), key (B, Tk, Dk), w (Dq, Dk)) -> (q @ w) @ k^T / sqrt(Dk)."""
    g = torch.Generator().manual_seed(5)
    b, tq, tk, dq, dk = 2, 3, 4, 5, 8
    query, key, w = randn(g, b, tq, dq), randn(g, b, tk, dk), randn(g, dq, dk, scale=0.4)
    projected = query @ w  # (B, Tq, Dk)
    want = scaled_dot_product_attention(projected, key, key).scores  # (B, Tq, Tk)
    raw = projected @ key.transpose(1, 2)
    mistakes = [
        *scale_mistakes(lambda c: raw * c, "Dk", dk),
        (
            raw / math.sqrt(dq),
            f"q @ w has the key width Dk = {dk}: divide by sqrt({dk}), "
            f"not by sqrt(Dq) = sqrt({dq})",
        ),
        (want.transpose(1, 2), "scores are (B, Tq, Tk); yours are transposed"),
    ]
    compare(call(fn, query, key, w), want, mistakes, what="bilinear scores")


# --- lesson 4: scaled dot-product attention ---------------------------------------------------


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


# --- lesson 5: why divide by sqrt(d_k) --------------------------------------------------------

VARIANCE_CASES = [(64, 1.0, 1.0), (16, 2.0, 0.5), (10, 3.0, 1.0), (1, 0.5, 0.5), (8, 1.0, 2.0)]


@checker("var(q.k) = d_k for unit entries, so its spread is sqrt(d_k): hence the division.")
def check_dot_product_variance(fn: Callable[[int, float, float], float]) -> None:
    """Check fn(d_k, std_q, std_k) -> var(q . k) for independent zero-mean entries."""
    answers = []
    for d, a, b in VARIANCE_CASES:
        got = call(fn, d, a, b)  # a str such as "64.0" is not a number, though float() takes it
        answers.append(expect_number(got, what=f"{name_of(fn)}({d}, {a}, {b})"))

    def table(formula: Callable[[int, float, float], float]) -> Tensor:  # one value per case
        return torch.tensor([formula(*case) for case in VARIANCE_CASES], dtype=torch.float64)

    got, want = torch.tensor(answers, dtype=torch.float64), table(lambda d, a, b: d * a**2 * b**2)
    mistakes = [
        (
            table(lambda d, a, b: math.sqrt(d) * a * b),
            "you returned the standard deviation; the variance is its square: "
            "d_k * std_q**2 * std_k**2",
        ),
        (
            table(lambda d, a, b: d * a * b),
            "the stds must be squared: var(q_i k_i) = var(q_i) var(k_i) = std_q**2 std_k**2",
        ),
        (
            table(lambda d, a, b: float(d)),
            "the spread of the entries matters too: each term q_i k_i has variance "
            "std_q**2 * std_k**2",
        ),
        (
            table(lambda d, a, b: d * (a**2 + b**2)),
            "variances of a product multiply, they do not add: d_k * std_q**2 * std_k**2",
        ),
    ]
    if close(got, want, atol=0.0, rtol=1e-6):
        return
    name_mistake(got, mistakes, atol=0.0, rtol=1e-6)
    i = int((~torch.isclose(got, want, atol=0.0, rtol=1e-6)).nonzero()[0])
    raise Wrong(f"{name_of(fn)}{VARIANCE_CASES[i]}: expected {want[i]:g}, got {got[i]:g}")


@checker("when p is nearly one-hot, diag(p) - p p^T is nearly 0: the gradient vanishes.")
def check_softmax_jacobian(fn: Callable[[Tensor], Tensor]) -> None:
    """Check fn(p (K,)) -> J (K, K) with J[i, j] = d softmax_i / d score_j = p_i (1[i=j] - p_j)."""
    g = torch.Generator().manual_seed(7)
    for scores in (randn(g, 5), torch.tensor([8.0, 0.0, -1.0, 0.5])):
        p = torch.softmax(scores, dim=0)
        want = torch.autograd.functional.jacobian(lambda s: masked_softmax(s), scores)  # (K, K)
        outer = torch.outer(p, p)
        mistakes = [
            (torch.diag(p), "only the diagonal part: subtract the outer product p p^T"),
            (-outer, "the diagonal term diag(p) is missing: J = diag(p) - p p^T"),
            (outer - torch.diag(p), "the sign is flipped: J = diag(p) - p p^T"),
            (torch.diag(p * (1 - p)), "off-diagonal entries are -p_i p_j, not 0"),
        ]
        what = f"Jacobian at p = {[round(x, 3) for x in p.tolist()]}"
        compare(call(fn, p), want, mistakes, what=what)
