"""Checkers of lesson 17 (induction heads in a toy model), each naming the typical mistakes.

check_toy_induction_score   the induction score on BOS + n tokens + the same n again
check_batch_previous_token_score   a previous-token score per head over a batch
check_ablate_head           the model's forward pass with one head of one layer silenced
check_repeated_loss         the loss the toy trains on: next-token cross-entropy, repeats only
check_k_composition         Elhage et al. (2021)'s K-composition score of two heads' weights

Reference solutions are in `attention.exercises.solutions.lesson17`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..models.head_scores import induction_score, previous_token_score
from ..models.toy.induction import (
    InductionConfig,
    InductionTask,
    composition_score,
    make_model,
    make_sequences,
    repeated_loss,
)
from ._checking import (
    call,
    checker,
    compare,
    expect_number,
    expect_tensor,
    randn,
    refuse_unaveraged,
)
from .lesson12 import _band, _causal_weights  # random causal maps, as lesson 12's checkers use

LESSON = "17_induction_heads"
__all__ = [
    "check_ablate_head",
    "check_batch_previous_token_score",
    "check_k_composition",
    "check_repeated_loss",
    "check_toy_induction_score",
]


def _diagonal(weights: Tensor, offset: int) -> Tensor:
    return torch.diagonal(weights, offset=offset, dim1=-2, dim2=-1)


@checker("query i of the second copy reads key i - n + 1, the token after the earlier occurrence.")
def check_toy_induction_score(fn: Callable[[Tensor, int], Tensor]) -> None:
    """Check fn(weights (H, T, T), n) -> (H,) on BOS + n tokens + the same n (T = 2n + 1)."""
    n, n_heads = 5, 4
    t = 2 * n + 1
    bias = torch.stack(
        [
            _band(t, -(n - 1), 5.0),  # an induction head
            _band(t, -n, 5.0),  # a duplicate-token head: the earlier occurrence itself
            _band(t, -1, 5.0),  # a previous-token head
            torch.zeros(t, t),
        ]
    )  # (H, T, T)
    weights = _causal_weights((n_heads, t, t), seed=17, bias=bias)
    want = induction_score(weights, n, start=1)  # (H,) queries n + 1 .. 2n
    got = expect_tensor(call(fn, weights, n), what="induction score")
    mistakes = [
        (
            _diagonal(weights, -n)[..., 1:].mean(-1),
            "off by one position: you read key i - n, the earlier occurrence of the same token "
            "(a duplicate-token head); an induction head reads the token after it, key i - n + 1",
        ),
        (
            _diagonal(weights, -(n - 2))[..., 3:].mean(-1),
            "off by one position: you read key i - n + 2, one past the token to copy; the "
            "induction key is i - n + 1",
        ),
        (
            _diagonal(weights, -(n - 1))[..., 1:].mean(-1),
            "you included query n, the last token of the first copy (BOS shifts everything by "
            "one): average over the second copy's queries n + 1 .. 2n only",
        ),
        (
            _diagonal(weights, -(n - 1))[..., 1:-1].mean(-1),
            "you forgot the BOS shift: queries n .. 2n - 1 are the second copy of n tokens "
            "*without* BOS (lesson 12); here BOS sits at 0, so the second copy is queries "
            "n + 1 .. 2n (key i - n + 1 for each)",
        ),
        (
            _diagonal(weights, -(n - 1))[..., 2:].sum(-1),
            "you summed the weights; take their mean, a score between 0 and 1",
        ),
    ]
    compare(got, want, mistakes, what="induction score")


@checker("the weight on key i - 1, averaged over queries 1..T-1 and over the batch.")
def check_batch_previous_token_score(fn: Callable[[Tensor], Tensor]) -> None:
    """Check fn(weights (B, H, T, T)) -> (H,): previous-token score per head, batch averaged."""
    b, n_heads, t = 3, 3, 7
    bias = torch.stack([_band(t, -1, 4.0), _band(t, 0, 4.0), torch.zeros(t, t)])  # (H, T, T)
    weights = _causal_weights((b, n_heads, t, t), seed=18, bias=bias)
    want = previous_token_score(weights).mean(0)  # (H,)
    got = expect_tensor(call(fn, weights), what="previous-token score")
    advice = "one per sequence and head; average over the batch (dim 0) too"
    refuse_unaveraged(got, want, (b, n_heads), "score per head", advice)
    mistakes = [
        (
            _diagonal(weights, 0).mean((0, -1)),
            "you counted the diagonal, each query's weight on itself; the previous token is one "
            "below it (offset -1)",
        ),
        (
            (_diagonal(weights, 0)[..., 1:] + _diagonal(weights, -1)).mean((0, -1)),
            "you counted the diagonal too (the weight on the token itself plus the one before); "
            "keep only offset -1",
        ),
        (
            _diagonal(weights, -1).sum(-1).mean(0) / t,
            f"you divided by T = {t}; only T - 1 = {t - 1} queries have a previous token",
        ),
    ]
    compare(got, want, mistakes, what="previous-token score")


@checker("only the chosen head of the chosen layer is silenced; everything else runs as before.")
def check_ablate_head(fn: Callable[..., Tensor]) -> None:
    """Check fn(model, tokens, layer, head) -> logits (B, T, V + 1) with that head zeroed."""
    task = InductionTask(vocab=16, min_repeat=3, max_repeat=5)
    model = make_model(task, InductionConfig(n_layers=3, n_heads=2, seed=17)).eval()
    tokens = make_sequences(task, [3, 4, 5], torch.Generator().manual_seed(17)).tokens  # (3, T)
    layer, head = 1, 1

    def silenced(*pairs: tuple[int, int]) -> Tensor:
        with torch.no_grad():
            return model(tokens, ablate=pairs).logits  # (B, T, V + 1)

    @torch.no_grad()
    def no_residual(layers: range | list[int]) -> Tensor:
        """Head `head` of `layer` silenced, and x = attention's output (not x + it) in `layers`."""
        x = model.embed_tokens(tokens)  # (B, T, M)
        for i in range(model.config.n_layers):
            out = model.attend(i, x, ablate=[head] if i == layer else []).output  # (B, T, M)
            x = model.after_attention(i, out if i in layers else x + out)
        return model.unembed(model.norm_out(x))  # (B, T, V + 1)

    with torch.no_grad():
        got = call(fn, model, tokens.clone(), layer, head)
    got = expect_tensor(got, what="logits").detach()
    want = silenced((layer, head))
    mistakes = [
        (silenced(), "nothing was silenced: zero the head's output before the heads are merged"),
        (
            silenced((layer - 1, head)),
            f"you silenced layer {layer - 1}'s head {head}, the wrong layer: layers count from 0, "
            f"silence head {head} of layer {layer}",
        ),
        (
            silenced((layer + 1, head)),
            f"you silenced layer {layer + 1}'s head {head}, the wrong layer: layers count from 0, "
            f"silence head {head} of layer {layer}",
        ),
        (
            silenced(*((i, head) for i in range(3))),
            f"you silenced head {head} in every layer; only layer {layer}'s",
        ),
        (silenced((layer, 1 - head)), f"you silenced head {1 - head}; the head asked is {head}"),
        (
            no_residual([layer]),
            f"you forgot the residual in layer {layer}: x = attention's output replaces the "
            "stream; keep it and add to it, x = x + att.output (silencing a head removes only "
            "what that head adds)",
        ),
        (
            no_residual(range(3)),
            "you forgot the residual: x = attention's output replaces the stream in every "
            "layer; each layer adds to it, x = x + att.output",
        ),
    ]
    compare(got, want, mistakes, what="logits")


@checker("the mean next-token loss over the repeated part only, each sequence with its own n.")
def check_repeated_loss(fn: Callable[[Tensor, Tensor, Tensor], Tensor]) -> None:
    """Check fn(logits (B, T, V + 1), tokens (B, T), repeat (B,)) -> the loss, one number."""
    task = InductionTask(vocab=16, min_repeat=2, max_repeat=6)
    batch = make_sequences(task, [2, 3, 5, 6], torch.Generator().manual_seed(19))  # T = 13
    logits = randn(torch.Generator().manual_seed(19), 4, task.seq_len, task.vocab + 1, scale=2.0)
    want = repeated_loss(logits, batch)
    got = expect_number(call(fn, logits, batch.tokens, batch.repeat), what="loss")
    b, t, v = logits.shape
    q = torch.arange(t - 1)[None, :]  # (1, T - 1) logit positions
    n = batch.repeat[:, None]  # (B, 1)
    ce = torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, v), batch.tokens[:, 1:].reshape(-1), reduction="none"
    ).view(b, t - 1)  # (B, T - 1) position q predicting token q + 1
    same = torch.nn.functional.cross_entropy(
        logits.reshape(-1, v), batch.tokens.reshape(-1), reduction="none"
    ).view(b, t)  # (B, T) position q scored on its own token q

    def mean_where(losses: Tensor, keep: Tensor) -> Tensor:
        return losses[keep.expand_as(losses)].mean()

    mistakes = [
        (
            mean_where(same[:, :-1], q >= n),
            "you scored position q's logits on token q itself; they predict the next token: "
            "compare logits[:, :-1] with tokens[:, 1:]",
        ),
        (
            mean_where(same[:, 1:], q + 1 >= n),
            "you scored position q's logits on token q itself; they predict the next token: "
            "compare logits[:, :-1] with tokens[:, 1:]",
        ),
        (
            ce.mean(),
            "you averaged over every position, the first copy too; nothing predicts the first "
            "copy: keep the logit positions q >= n (they predict the repeats)",
        ),
        (
            mean_where(ce, q >= n - 1),
            "you included logit position n - 1, which predicts token n, the last of the first "
            "copy (BOS shifts the tokens by one): keep q >= n",
        ),
        (
            mean_where(ce, q >= n + 1),
            "you left out logit position n, which predicts token n + 1, the first repeat (BOS "
            "shifts the tokens by one): keep q >= n",
        ),
        (
            mean_where(ce, q >= batch.repeat[0]),
            f"you used the first sequence's n = {int(batch.repeat[0])} for every sequence; each "
            "has its own n (repeat[b])",
        ),
        (
            ce[(q >= n).expand_as(ce)].sum(),
            "you summed the losses; take their mean over the kept positions",
        ),
        (
            torch.stack([ce[i][q[0] >= n[i]].mean() for i in range(b)]).mean(),
            "you averaged each sequence first, then the sequences: a short n has more repeats "
            "and should weigh more; average over all kept positions at once",
        ),
    ]
    compare(torch.tensor(got), want, mistakes, what="loss")


@checker("||W_QK W_OV||_F / (||W_QK||_F ||W_OV||_F), W_QK = w_q.T @ w_k, W_OV = w_o @ w_v.")
def check_k_composition(fn: Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]) -> None:
    """Check fn(w_q, w_k (D, M) of the later head, w_v (D, M), w_o (M, D) of the earlier one)."""
    d, m = 4, 12
    g = torch.Generator().manual_seed(21)
    w_q, w_k, w_v = (randn(g, d, m) for _ in range(3))  # (D, M) each
    w_o = randn(g, m, d)  # (M, D)
    w_qk, w_ov = w_q.T @ w_k, w_o @ w_v  # (M, M) each
    want = composition_score(w_qk, w_ov)
    hint = (
        "; w_q, w_k and w_v are (D, M) as nn.Linear stores them and w_o is (M, D): "
        "W_QK = w_q.T @ w_k and W_OV = w_o @ w_v are both (M, M)"
    )
    got = expect_number(call(fn, w_q, w_k, w_v, w_o, hint=hint), what="K-composition")
    norm = torch.linalg.norm
    mistakes = [
        (
            composition_score(w_qk.T, w_ov),
            "you used W_QK transposed (w_k.T @ w_q): that is Q-composition, the later head's "
            "queries reading the earlier head; K-composition is W_QK @ W_OV (its keys read it)",
        ),
        (
            composition_score(w_qk, w_ov.T),  # the same norm as W_OV @ W_QK.T
            "you used W_OV transposed (w_v.T @ w_o.T), or W_OV @ W_QK.T: the earlier head "
            "writes W_OV x = w_o @ (w_v @ x), so W_OV = w_o @ w_v, and K-composition is "
            "W_QK @ W_OV",
        ),
        (
            composition_score(w_ov, w_qk),
            "you multiplied in the wrong order, W_OV @ W_QK: the later head reads what the "
            "earlier one wrote, so W_OV acts first (on the right): W_QK @ W_OV",
        ),
        (
            norm(w_qk @ w_ov),
            "you did not normalise: divide ||W_QK W_OV||_F by ||W_QK||_F * ||W_OV||_F, so the "
            "score lies in [0, 1] whatever the weights' scale",
        ),
        (
            norm(w_qk @ w_ov) / (norm(w_q) * norm(w_k) * norm(w_v) * norm(w_o)),
            "you divided by the norms of the four weight matrices; divide by the norms of the "
            "two products, ||W_QK||_F * ||W_OV||_F",
        ),
        (
            norm(w_qk @ w_ov) ** 2 / (norm(w_qk) ** 2 * norm(w_ov) ** 2),
            "you squared the norms; the Frobenius norm is the square root of the sum of squares",
        ),
        (
            torch.linalg.matrix_norm(w_qk @ w_ov, ord=2)
            / (torch.linalg.matrix_norm(w_qk, ord=2) * torch.linalg.matrix_norm(w_ov, ord=2)),
            "you used the spectral norm (ord=2); Elhage et al. (2021) use the Frobenius norm, "
            "torch.linalg.norm(A) for a matrix",
        ),
    ]
    compare(torch.tensor(got), want, mistakes, what="K-composition")
