"""One number per head, read off its attention weights: what job does the head do?

    sink_share(weights)               mean weight on the first token
    previous_token_score(weights)     mean weight on the token just before
    induction_score(weights, n)       on a sequence that repeats with period n: mean weight on
                                      the token after the earlier occurrence of the current one

The same functions score SmolLM2's heads (attention.explore.model_view, lesson 12) and the toy
model that learns induction heads in front of you (attention.models.toy.induction, lesson 17).
All take weights (..., T, T) of a causal model and return (...): one score per leading index.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _check_weights(weights: Tensor) -> None:
    if (
        not isinstance(weights, Tensor)
        or weights.dim() < 2
        or weights.shape[-1] != weights.shape[-2]
    ):
        shape = tuple(weights.shape) if isinstance(weights, Tensor) else type(weights).__name__
        raise ValueError(f"weights: expected a (..., T, T) tensor, got {shape}")


def sink_share(weights: Tensor) -> Tensor:
    """Mean weight on the first token, over queries 1..T-1: (..., T, T) -> (...).

    Query 0 is left out: in a causal model it can only attend to itself (weight 1).
    """
    return weights[..., 1:, 0].mean(-1)


def previous_token_score(weights: Tensor) -> Tensor:
    """Mean weight on the token just before, over queries 1..T-1: (..., T, T) -> (...)."""
    return torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1).mean(-1)


def induction_score(weights: Tensor, n: int, start: int = 0) -> Tensor:
    """Mean weight of the repeated part's queries on the token after their earlier occurrence.

    The sequence holds n tokens from position `start` on (anything before it, e.g. a BOS
    token, takes no part), then repeats them: the token at i >= start + n is the one at i - n.
    An induction head looks at what came next then, key i - n + 1, to predict what comes now.
    With start=0 and T = 2n: n tokens repeated twice, queries n..2n-1.
    weights (..., T, T) -> (...).

    Raises:
        ValueError: n < 1, start < 0, or no repeated query (start + n >= T).
    """
    _check_weights(weights)
    t = weights.shape[-1]
    if n < 1 or start < 0 or start + n >= t:
        raise ValueError(
            f"n, start: expected n >= 1, start >= 0 and start + n < T = {t} (a repeated query), "
            f"got n={n}, start={start}"
        )
    # entry j of the diagonal at offset -(n - 1) is query j + n - 1 on key j
    return torch.diagonal(weights, offset=-(n - 1), dim1=-2, dim2=-1)[..., start + 1 :].mean(-1)
