"""Checks at the pretrained models' public boundary: token ids and the heads to ablate."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor

from ..._checks import shape_str


def check_ids(ids: object, *, vocab_size: int, max_len: int) -> Tensor:
    """Check a (B, T) integer tensor of token ids in [0, vocab_size) with 1 <= T <= max_len."""
    if not isinstance(ids, Tensor):
        raise TypeError(
            f"ids: expected a (B, T) torch.Tensor of token ids, got {type(ids).__name__}; "
            "use torch.tensor([ids])"
        )
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise TypeError(f"ids: expected an integer tensor of token ids, got {ids.dtype}")
    if ids.dtype not in (torch.int64, torch.int32):  # what an embedding table can index with
        raise TypeError(
            f"ids: expected torch.int64 (or int32) token ids, got {ids.dtype}; use ids.long()"
        )
    if ids.dim() != 2:
        hint = "; use ids.unsqueeze(0) for one sequence" if ids.dim() == 1 else ""
        raise ValueError(f"ids: expected shape (B, T), got {shape_str(ids.shape)}{hint}")
    if ids.numel() == 0:
        raise ValueError(f"ids: expected at least one token, got shape {shape_str(ids.shape)}")
    if ids.shape[1] > max_len:
        raise ValueError(f"ids: the model reads at most {max_len} positions, got T={ids.shape[1]}")
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(
            f"ids: token ids must lie in [0, {vocab_size}), got values from {low} to {high}; "
            "was it encoded by this model's tokenizer?"
        )
    return ids


def heads_to_keep(
    ablate: Iterable[tuple[int, int]] | None, n_layers: int, n_heads: int
) -> dict[int, Tensor]:
    """Turn {(layer, head), ...} into {layer: (H,) float tensor, 0 for ablated heads, else 1}.

    Layers without ablated heads are left out, so they run exactly as without `ablate`.
    """
    keep: dict[int, Tensor] = {}
    for pair in ablate or ():
        if not (isinstance(pair, tuple) and len(pair) == 2 and all(type(i) is int for i in pair)):
            raise TypeError(f"ablate: expected (layer, head) pairs of ints, got {pair!r}")
        layer, head = pair
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ValueError(
                f"ablate: expected layer in [0, {n_layers}) and head in [0, {n_heads}), "
                f"got ({layer}, {head})"
            )
        keep.setdefault(layer, torch.ones(n_heads))[head] = 0.0
    return keep
