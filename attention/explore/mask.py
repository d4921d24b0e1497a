"""MaskExplorer: one mask in every convention a learner meets, and the attention it produces.

Also the mask helpers AttentionExplorer shares: the presets and the hashable nested-tuple form
a frozen params dataclass can hold.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..functional import scaled_dot_product_attention
from ..masks import (
    causal_mask,
    mask_to_valid_lens,
    padding_mask,
    to_additive_mask,
    to_key_padding_mask,
)
from ._util import MAX_LEN, MAX_WIDTH, SEEDS, bounded, check_fields, check_int

__all__ = [
    "MASK_KINDS",
    "Mask",
    "MaskExploration",
    "MaskParams",
    "explore_mask",
    "mask_to_tuple",
    "preset_mask",
]

MASK_KINDS = ("none", "causal", "padding", "custom")

Mask = tuple[tuple[bool, ...], ...]  # (Tq, Tk) nested tuples, True = may attend: hashable


def check_mask_tuple(mask: Mask, tq: int, tk: int) -> None:
    shape = (len(mask), len(mask[0]) if mask else 0)
    if shape != (tq, tk) or any(len(row) != tk for row in mask):
        raise ValueError(f"custom_mask: expected {tq} rows of {tk} bools, got shape {shape}")
    for i, row in enumerate(mask):
        for j, x in enumerate(row):
            if type(x) is not bool:  # 2 or NaN would become True in a bool tensor
                raise ValueError(f"custom_mask: expected True or False, got {x!r} at ({i}, {j})")


def mask_to_tuple(mask: Tensor) -> Mask:
    """A (Tq, Tk) bool tensor -> nested tuples, for a frozen params dataclass."""
    return tuple(tuple(bool(x) for x in row) for row in mask.tolist())


def preset_mask(kind: str, tq: int, tk: int, pad_len: int = 0) -> Tensor:
    """The (Tq, Tk) bool mask (True = may attend) of a preset, built by the core's functions.

    "none": all True; "causal": query i sees keys j <= i; "padding": the last pad_len keys are
    padding, hidden from every query; "left pad + causal": the first pad_len keys are padding
    and the mask is causal too, so the first pad_len queries may attend to nothing at all.
    """
    if kind == "none":
        return torch.ones(tq, tk, dtype=torch.bool)
    if kind == "causal":
        return causal_mask(tq, tk)  # (Tq, Tk)
    if kind == "padding":
        check_int("pad_len", pad_len, 0, tk)
        return padding_mask([tk - pad_len], tk)[0].expand(tq, tk)  # (1, Tk) -> (Tq, Tk)
    if kind == "left pad + causal":
        check_int("pad_len", pad_len, 0, tk)
        return causal_mask(tq, tk) & ~padding_mask([pad_len], tk)[0]  # (Tq, Tk)
    raise ValueError(
        f"mask: expected one of ('none', 'causal', 'padding', 'left pad + causal'), got {kind!r}"
    )


@dataclass(frozen=True)
class MaskParams:
    """A (Tq, Tk) mask to show in every convention, and the seed of the q, k, v it masks."""

    mask: Mask = ((True,) * 5,) * 5
    seed: int = bounded(0, *SEEDS)
    d: int = bounded(4, 1, MAX_WIDTH)  # width of the random q, k, v

    def __post_init__(self) -> None:
        tq = len(self.mask)
        tk = len(self.mask[0]) if tq else 0
        check_int("Tq", tq, 1, MAX_LEN)
        check_int("Tk", tk, 1, MAX_LEN)
        check_mask_tuple(self.mask, tq, tk)
        check_fields(self)


@dataclass(frozen=True)
class MaskExploration:
    """One mask in each convention a learner meets, and the attention it produces."""

    params: MaskParams
    mask: Tensor  # (Tq, Tk) bool, ours and SDPA's: True = may attend
    additive: Tensor  # (Tq, Tk) float: 0 = may attend, -inf = blocked
    key_padding_mask: Tensor | None  # (B, Tk) = (1, Tk), True = ignore; None if rows differ
    key_padding_note: str  # what it means, or why this mask has none
    valid_lens: Tensor | None  # (B, Tq) = (1, Tq) keys each query sees; None if not a prefix
    valid_lens_note: str
    scores: Tensor  # (Tq, Tk) scaled, -inf where masked
    weights: Tensor  # (Tq, Tk)
    fully_masked: Tensor  # (Tq,) bool


def explore_mask(params: MaskParams) -> MaskExploration:
    """Convert the mask with the core's converters and attend random q, k, v through it."""
    mask = torch.tensor(params.mask, dtype=torch.bool)  # (Tq, Tk)
    tq, tk = mask.shape
    additive = to_additive_mask(mask)  # (Tq, Tk)
    if bool((mask == mask[:1]).all()):
        key_padding = to_key_padding_mask(mask[:1])  # (1, Tk), True = ignore
        kp_note = "every query hides the same keys, so one row (B, Tk) says it all"
    else:
        key_padding = None
        kp_note = (
            "rows differ, so no key_padding_mask exists: it hides the same keys from every "
            "query; nn.MultiheadAttention takes such a mask as attn_mask (True = blocked)"
        )
    try:
        # (1, Tq); the core reads a (1, 1, Tk) mask as a key mask and returns (1,): reshape
        valid_lens = mask_to_valid_lens(mask[None]).reshape(1, tq)
        vl_note = "each query sees its first valid_lens keys"
    except ValueError as exc:
        valid_lens, vl_note = None, str(exc)
    g = torch.Generator().manual_seed(params.seed)
    q = torch.randn(tq, params.d, generator=g)  # (Tq, D)
    k = torch.randn(tk, params.d, generator=g)  # (Tk, D)
    v = torch.randn(tk, params.d, generator=g)  # (Tk, D)
    att = scaled_dot_product_attention(q, k, v, mask)
    return MaskExploration(
        params=params,
        mask=mask,
        additive=additive,
        key_padding_mask=key_padding,
        key_padding_note=kp_note,
        valid_lens=valid_lens,
        valid_lens_note=vl_note,
        scores=att.scores,
        weights=att.weights,
        fully_masked=att.fully_masked,
    )
