"""Sliding windows and attention sinks on a real model: perplexity under a chosen mask.

SmolLM2 was trained with a causal mask and RoPE's "interleaved" layout. To measure what a
sliding window (attention.masks.sliding_window_mask), kept sink tokens (StreamingLLM) or a
wrong RoPE layout does, `masked_logits` runs the model with a mask and a layout of our
choosing (its forward's `mask` and `rope_layout`); by default it equals model(ids).logits.

    perplexity = exp(mean over positions t of -log p(token t+1 | tokens the mask lets t see))

token_losses and perplexity are attention.models.pretrained's (.loss), the same that
attention/experiments/loss.py's text_loss scores with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ..masks import causal_mask, sliding_window_mask
from ..models.pretrained import perplexity, token_losses

__all__ = [
    "WindowRun",
    "first_token_attention",
    "masked_logits",
    "token_losses",
    "window_experiment",
    "window_run",
]


@torch.no_grad()
def masked_logits(
    model: Any, ids: Tensor, mask: Tensor | None = None, *, rope_layout: str = "interleaved"
) -> Tensor:
    """SmolLM2's logits (B, T, V) with `mask` (T, T) instead of the causal mask.

    Args:
        model: a SmolLM2 (attention.models.pretrained.load_pretrained(DECODER)).
        ids: (B, T) token ids.
        mask: bool (T, T), True = may attend; None is causal_mask(T).
        rope_layout: "interleaved" (how the file's weights are ordered) or "half" (wrong here).
    """
    return model(ids, mask=mask, rope_layout=rope_layout, need_weights=False).logits


@dataclass(frozen=True)
class WindowRun:
    """Perplexity of the text under one attention pattern."""

    name: str  # "full", "window 64", "window 64 + 1 sink", "window 64 + 4 sinks"
    window: int | None  # None = full causal attention
    sinks: int
    perplexity: float  # over the predictions of tokens start + 1 .. T - 1
    losses: Tensor  # (T - 1,) nats per predicted token


def window_run(
    model: Any, ids: Tensor, window: int | None, sinks: int = 0, *, start: int = 0
) -> WindowRun:
    """Perplexity of ids (1, T) when each token sees the last `window` tokens (+ `sinks`).

    start: score only the tokens after position `start` (the ones a window has cut off from
    the beginning when start >= window), so short contexts do not dilute the comparison.
    """
    t = ids.shape[1]
    if window is None:
        mask, name = causal_mask(t), "full"
    else:
        mask = sliding_window_mask(t, window, sinks=sinks)
        plural = "s" if sinks > 1 else ""
        name = f"window {window}" + (f" + {sinks} sink{plural}" if sinks else "")
    losses = token_losses(masked_logits(model, ids, mask), ids)[0]  # (T - 1,)
    return WindowRun(
        name=name,
        window=window,
        sinks=sinks,
        perplexity=perplexity(losses[start:]),
        losses=losses,
    )


def window_experiment(
    model: Any, ids: Tensor, windows: Sequence[int], *, sinks: int = 4, start: int = 0
) -> list[WindowRun]:
    """Full attention, then each window alone and with `sinks` sink tokens, on the same text."""
    runs = [window_run(model, ids, None, start=start)]
    for w in windows:
        runs.append(window_run(model, ids, w, start=start))
        runs.append(window_run(model, ids, w, sinks, start=start))
    return runs


def first_token_attention(attentions: Sequence[Tensor], *, skip: int = 8) -> Tensor:
    """(n_layers,) mean weight that queries at positions >= skip give to key 0, per layer.

    attentions: the model's per-layer (B, H, T, T) maps. Uniform attention would give key 0
    about 1 / position; much more is an attention sink.
    """
    return torch.stack([a[:, :, skip:, 0].mean() for a in attentions])
