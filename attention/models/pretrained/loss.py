"""How well a language model predicts a text: the next-token loss and the perplexity.

    loss_t     = -log p(token t+1 | the tokens position t may see)       in nats
    perplexity = exp(mean loss): the model is as unsure as a uniform choice among this many

One definition for every experiment that scores a text (windows, masks, ablated heads).
"""

from __future__ import annotations

import math

import torch.nn.functional as F
from torch import Tensor

from ..._checks import shape_str


def token_losses(logits: Tensor, ids: Tensor) -> Tensor:
    """-log p(ids[:, t + 1]) from logits[:, t]: logits (B, T, V), ids (B, T) -> (B, T - 1) nats."""
    if logits.dim() != 3 or logits.shape[:2] != ids.shape:
        raise ValueError(
            f"logits: expected (B, T, V) with (B, T) = ids' shape {shape_str(ids.shape)}, "
            f"got {shape_str(logits.shape)}"
        )
    b, t, v = logits.shape
    # (N, V) rows: with logits transposed to (B, V, T) the loss drifted 3e-5 from float64
    flat = F.cross_entropy(logits[:, :-1].reshape(-1, v), ids[:, 1:].reshape(-1), reduction="none")
    return flat.view(b, t - 1)  # (B, T - 1)


def perplexity(losses: Tensor) -> float:
    """exp(mean of the per-token losses) over every entry of `losses` (nats)."""
    return math.exp(float(losses.mean()))
