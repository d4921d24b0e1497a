"""Masks and the conversions between the conventions a learner meets.

Ours (and torch.nn.functional.scaled_dot_product_attention's): bool, True = may attend.
Masks built here: causal (look-ahead), sliding window (+ sinks) and key padding.
Others: nn.MultiheadAttention's key_padding_mask (bool, True = ignore), an additive float mask
(0 where allowed, -inf where not) and d2l's valid_lens (how many leading keys are real).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._checks import check_positive_int, shape_str


def causal_mask(tq: int, tk: int | None = None, *, offset: int = 0, device=None) -> Tensor:
    """Look-ahead mask: query i may attend to key j only when j <= i + offset.

    With tk > tq and offset = tk - tq the queries are the last tq positions (decoding with a
    key/value cache). Returns a (Tq, Tk) bool tensor.
    """
    check_positive_int("tq", tq)
    tk = tq if tk is None else check_positive_int("tk", tk)
    i = torch.arange(tq, device=device)[:, None]  # (Tq, 1)
    j = torch.arange(tk, device=device)[None, :]  # (1, Tk)
    return j <= i + offset  # (Tq, Tk)


def sliding_window_mask(seq_len: int, window: int, *, sinks: int = 0, device=None) -> Tensor:
    """Causal local mask: query i sees the last `window` keys, itself included, plus the sinks.

    mask[i, j] = j <= i and (i - window < j or j < sinks)
    so window=1 sees only itself, window >= seq_len equals causal_mask(seq_len), and the first
    `sinks` keys (attention sinks, as in StreamingLLM) stay visible to every later query.
    Each row has at most window + sinks True entries: the cost is O(T * W), not O(T^2).
    Returns a (T, T) bool tensor, True = may attend.
    """
    check_positive_int("seq_len", seq_len)
    check_positive_int("window", window)
    if isinstance(sinks, bool) or not isinstance(sinks, int):
        raise TypeError(f"sinks: expected an int, got {type(sinks).__name__}")
    if sinks < 0:
        raise ValueError(f"sinks: expected an int >= 0, got {sinks}")
    i = torch.arange(seq_len, device=device)[:, None]  # (T, 1)
    j = torch.arange(seq_len, device=device)[None, :]  # (1, T)
    return (j <= i) & ((j > i - window) | (j < sinks))  # (T, T)


def padding_mask(lengths: Tensor | list[int], max_len: int) -> Tensor:
    """Key padding mask from sequence lengths: True for the first `length` keys of each row.

    Returns (B, 1, max_len), ready to broadcast over the queries of (B, Tq, Tk) scores;
    for per-head scores (B, H, Tq, Tk) use `.unsqueeze(1)`.
    """
    check_positive_int("max_len", max_len)
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1 or lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
        raise ValueError(
            f"lengths: expected a 1-D tensor of ints (B,), got {lengths.dtype} of shape "
            f"{shape_str(lengths.shape)}"
        )
    if bool((lengths < 0).any()) or bool((lengths > max_len).any()):
        raise ValueError(
            f"lengths: expected values in [0, max_len={max_len}], got {lengths.tolist()}"
        )
    keys = torch.arange(max_len, device=lengths.device)
    return (keys[None, :] < lengths[:, None]).unsqueeze(1)  # (B, 1, max_len)


def _check_bool(name: str, mask: Tensor) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise TypeError(f"{name}: expected a torch.bool tensor, got {got}")
    return mask


def as_bool_mask(mask: object, name: str = "mask") -> Tensor:
    """A bool tensor, or nested lists / an integer tensor of 0 and 1 -> a bool mask (a copy).

    Nothing else is guessed: 2 or NaN is not "True", and a float mask may be additive (0 means
    *allowed* there), so floats are refused with the converter to use.
    """
    if isinstance(mask, Tensor) and mask.dtype == torch.bool:
        return mask.clone()
    try:
        t = torch.as_tensor(mask)
    except (TypeError, ValueError, RuntimeError, OverflowError):
        raise TypeError(
            f"{name}: expected bools (True = may attend), got {type(mask).__name__}"
        ) from None
    if t.dtype.is_floating_point or t.dtype.is_complex:
        raise TypeError(
            f"{name}: expected bools or 0/1 ints (True = may attend), got {t.dtype}; an additive "
            "mask of 0 and -inf converts with from_additive_mask"
        )
    bad = (t != 0) & (t != 1)
    if bool(bad.any()):
        where = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"{name}: expected only True/False (or 1/0), got {t[where].item()} at position {where}"
        )
    return t == 1


def to_key_padding_mask(mask: Tensor) -> Tensor:
    """Our key mask (B, 1, Tk) or (B, Tk), True = may attend -> (B, Tk), True = ignore."""
    _check_bool("mask", mask)
    if mask.dim() == 3 and mask.shape[1] == 1:
        mask = mask[:, 0]  # (B, Tk)
    if mask.dim() != 2:
        raise ValueError(
            f"mask: expected a key mask of shape (B, 1, Tk) or (B, Tk), got {shape_str(mask.shape)}"
        )
    return ~mask


def from_key_padding_mask(key_padding_mask: Tensor) -> Tensor:
    """nn.MultiheadAttention's key_padding_mask (B, Tk), True = ignore -> ours (B, 1, Tk)."""
    _check_bool("key_padding_mask", key_padding_mask)
    if key_padding_mask.dim() != 2:
        raise ValueError(
            f"key_padding_mask: expected shape (B, Tk), got {shape_str(key_padding_mask.shape)}"
        )
    return (~key_padding_mask).unsqueeze(1)  # (B, 1, Tk)


def to_additive_mask(mask: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """Our bool mask -> a float mask added to the scores: 0 where allowed, -inf where not."""
    _check_bool("mask", mask)
    zeros = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return zeros.masked_fill(~mask, float("-inf"))


def from_additive_mask(additive: Tensor) -> Tensor:
    """A float mask of 0 (allowed) and -inf (blocked) -> our bool mask, True = may attend."""
    if not isinstance(additive, Tensor) or not additive.is_floating_point():
        got = additive.dtype if isinstance(additive, Tensor) else type(additive).__name__
        raise TypeError(f"additive: expected a floating tensor of 0 and -inf, got {got}")
    blocked = torch.isneginf(additive)
    if bool((additive[~blocked] != 0).any()):
        raise ValueError(
            "additive: expected only 0 and -inf, got other values; a float mask that adds a bias "
            "to the scores cannot become a bool mask"
        )
    return ~blocked


def valid_lens_to_mask(valid_lens: Tensor | list[int], tk: int) -> Tensor:
    """d2l's valid_lens -> our mask: (B,) gives (B, 1, Tk); (B, Tq) gives (B, Tq, Tk).

    Note d2l's own masked_softmax fills with -1e6, so a row with valid_len 0 gets uniform weights
    there; with ours it gets all-zero weights.
    """
    check_positive_int("tk", tk)
    lens = torch.as_tensor(valid_lens)
    if lens.dim() not in (1, 2) or lens.dtype.is_floating_point or lens.dtype == torch.bool:
        raise ValueError(
            f"valid_lens: expected ints of shape (B,) or (B, Tq), got {lens.dtype} of shape "
            f"{shape_str(lens.shape)}"
        )
    if bool((lens < 0).any()) or bool((lens > tk).any()):
        raise ValueError(f"valid_lens: expected values in [0, tk={tk}], got {lens.tolist()}")
    keys = torch.arange(tk, device=lens.device)
    if lens.dim() == 1:
        return (keys[None, :] < lens[:, None]).unsqueeze(1)  # (B, 1, Tk)
    return keys[None, None, :] < lens[:, :, None]  # (B, Tq, Tk)


def mask_to_valid_lens(mask: Tensor) -> Tensor:
    """Our prefix mask (B, 1, Tk) or (B, Tq, Tk) -> valid_lens (B,) or (B, Tq).

    Raises ValueError when a row is not a prefix (True..True False..False), e.g. a causal
    mask's transpose: valid_lens can only say "the first n keys".
    """
    _check_bool("mask", mask)
    if mask.dim() != 3:
        raise ValueError(
            f"mask: expected shape (B, 1, Tk) or (B, Tq, Tk), got {shape_str(mask.shape)}"
        )
    lens = mask.sum(dim=-1)  # (B, Tq')
    prefix = torch.arange(mask.shape[-1], device=mask.device) < lens[..., None]
    if not torch.equal(prefix, mask):
        raise ValueError(
            "mask: some row is not a prefix (True...True then False...False); "
            "valid_lens cannot express it"
        )
    return lens[:, 0] if mask.shape[1] == 1 else lens
