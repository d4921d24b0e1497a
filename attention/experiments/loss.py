"""The decoder's next-token loss on a text with heads silenced or the mask changed (lesson 12).

    text_loss(LossParams(text, ablate=((layer, head), ...)))    loss and perplexity
    text_loss(LossParams(text, mask="window", window=16, sinks=4))

token_losses and perplexity are attention.models.pretrained's (loss.py), the same that
attention/experiments/windows.py scores with.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..masks import causal_mask, sliding_window_mask
from ..models.cache import pretrained_model
from ..models.pretrained import DECODER, perplexity, token_losses
from ..sandbox.limits import bounded, check_fields, one_of

__all__ = ["LOSS_MASKS", "LossParams", "LossResult", "loss_mask", "text_loss"]

LOSS_MASKS = ("causal", "no-sink", "window")


@dataclass(frozen=True)
class LossParams:
    """The decoder's next-token loss on a text, with some heads silenced or another mask.

    mask: "causal" (as trained); "no-sink": no query but the first may attend to token 0;
    "window": each query sees the last `window` tokens, plus the first `sinks` tokens.
    """

    text: str
    max_tokens: int = bounded(160, 2, 1024)
    ablate: tuple[tuple[int, int], ...] = ()
    mask: str = one_of("causal", LOSS_MASKS)
    window: int = bounded(16, 1, 1024)
    sinks: int = bounded(0, 0, 1024)

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class LossResult:
    params: LossParams
    n_tokens: int  # tokens read (the text, cut to max_tokens)
    loss: float  # mean -log p(next token) over the n_tokens - 1 predictions, in nats
    perplexity: float  # exp(loss): as unsure as a uniform choice among this many tokens
    first_keys_share: Tensor  # (L, 4) mean weight on keys 0..3 over queries 4.., all heads


def loss_mask(params: LossParams, t: int) -> Tensor:
    """The (T, T) bool mask (True = may attend) that `params.mask` names."""
    if params.mask == "window":
        return sliding_window_mask(t, params.window, sinks=params.sinks)
    mask = causal_mask(t)
    if params.mask == "no-sink":
        mask = mask.clone()
        mask[1:, 0] = False  # query 0 keeps its only key, itself
    return mask


@torch.no_grad()
def text_loss(params: LossParams) -> LossResult:
    """The mean next-token loss of the decoder on params.text under the chosen change."""
    model, tok = pretrained_model(DECODER)
    ids = torch.tensor([tok.encode(params.text)[: params.max_tokens]])  # (1, T)
    t = ids.shape[1]
    if t < 5:
        raise ValueError(f"text: expected at least 5 tokens, got {t}")
    if params.ablate and params.mask != "causal":
        raise ValueError("ablate: only with mask='causal'; change one thing at a time")
    mask = None if params.mask == "causal" else loss_mask(params, t)  # None: the model's own
    out = model(ids, ablate=params.ablate, mask=mask)
    losses = token_losses(out.logits, ids)  # (1, T - 1)
    share = torch.stack([w[0, :, 4:, :4].mean((0, 1)) for w in out.attentions])  # (L, 4)
    return LossResult(params, t, float(losses.mean()), perplexity(losses), share)
