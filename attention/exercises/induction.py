"""Checkers of lesson 17 (induction heads in a toy model), each naming the typical mistakes.

check_toy_induction_score   the induction score on BOS + n tokens + the same n again
check_batch_previous_token_score   a previous-token score per head over a batch
check_ablate_head           the model's forward pass with one head of one layer silenced
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..models.head_scores import induction_score, previous_token_score
from ..models.toy.induction import InductionConfig, InductionTask, make_model, make_sequences
from ._checking import Wrong, call, checker, compare, expect_tensor
from .models import _band, _causal_weights  # random causal maps, as lesson 12's checkers use

__all__ = [
    "check_ablate_head",
    "check_batch_previous_token_score",
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
    if tuple(got.shape) == (b, n_heads):
        raise Wrong(
            f"expected one score per head, shape ({n_heads},), got {tuple(got.shape)}: one per "
            "sequence and head; average over the batch (dim 0) too"
        )
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
    ]
    compare(got, want, mistakes, what="logits")
