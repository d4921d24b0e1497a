"""The decoder's induction heads measured (lessons 12 and 17): n random tokens read twice.

    induction_scores(n=40)   per-head induction and previous-token scores, and the loss on each
                             copy, optionally with some heads silenced

The scores are attention/models/head_scores.py's; the model is attention.models.cache's DECODER.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..models.cache import pretrained_model
from ..models.head_scores import induction_score, previous_token_score
from ..models.pretrained import DECODER, token_losses
from ..sandbox.limits import check_int

__all__ = ["InductionResult", "induction_scores"]

N_MAX = 64  # n at most: the 2n tokens fit the 128 the model views take


@dataclass(frozen=True)
class InductionResult:
    """The decoder reading n random tokens twice: per-head induction scores and the loss."""

    ids: tuple[int, ...]  # 2n ids: n random ones, then the same n again
    n: int
    scores: Tensor  # (L, H) induction_score of every head
    previous_token: Tensor  # (L, H) previous_token_score on the same sequence
    loss_first: float  # mean next-token loss while reading the first copy (nats)
    loss_second: float  # ... and the second copy, which an induction head can predict
    ablate: tuple[tuple[int, int], ...]  # the (layer, head) pairs silenced


@torch.no_grad()
def induction_scores(
    n: int = 40, seed: int = 0, ablate: tuple[tuple[int, int], ...] = ()
) -> InductionResult:
    """Per-head induction scores of the decoder on n random tokens (ids 1000..19999) repeated."""
    check_int("n", n, 2, N_MAX)
    check_int("seed", seed, 0, 2**31 - 1)
    g = torch.Generator().manual_seed(seed)
    first = torch.randint(1000, 20000, (n,), generator=g)  # (n,) ordinary word pieces
    ids = torch.cat([first, first])[None]  # (1, 2n)
    model, _ = pretrained_model(DECODER)
    out = model(ids, ablate=ablate)
    weights = torch.stack([a[0] for a in out.attentions])  # (L, H, 2n, 2n)
    losses = token_losses(out.logits, ids)[0]  # (2n - 1,)
    return InductionResult(
        ids=tuple(ids[0].tolist()),
        n=n,
        scores=induction_score(weights, n),
        previous_token=previous_token_score(weights),
        loss_first=float(losses[: n - 1].mean()),
        loss_second=float(losses[n - 1 :].mean()),
        ablate=tuple(ablate),
    )
