"""Masks and the conversions between the conventions a learner meets.

Ours (and torch.nn.functional.scaled_dot_product_attention's): bool, True = may attend.
Masks built here: causal (look-ahead), sliding window (+ sinks), key padding, prefix-LM and
document masks (packed sequences). FlexAttention's functions evaluated on every cell:
mask_from_mod (a mask_mod -> the dense mask) and scores_from_mod (a score_mod -> new scores);
block_counts says how many blocks of a mask are empty, full or partial.
Others: nn.MultiheadAttention's key_padding_mask (bool, True = ignore), an additive float mask
(0 where allowed, -inf where not) and d2l's valid_lens (how many leading keys are real).
"""

import torch
from torch import Tensor

from ._checks import check_bool, check_int, check_ints, check_positive_int, check_sizes, shape_str


def causal_mask(tq: int, tk: int | None = None, *, offset: int = 0, device=None) -> Tensor:
    """Look-ahead mask (Tq, Tk): query i may attend to key j only when j <= i + offset.

    With tk > tq and offset = tk - tq the queries are the last tq positions (decoding with a
    key/value cache).
    """
    check_sizes(tq=tq, tk=tk)
    i, j = _positions(tq, tq if tk is None else tk, device)  # (Tq, 1), (1, Tk)
    return j <= i + offset  # (Tq, Tk)


def _positions(tq: int, tk: int, device=None) -> tuple[Tensor, Tensor]:
    return torch.arange(tq, device=device)[:, None], torch.arange(tk, device=device)[None, :]


def sliding_window_mask(seq_len: int, window: int, *, sinks: int = 0, device=None) -> Tensor:
    """Causal local mask (T, T): query i sees the last `window` keys, itself included, + sinks.

    mask[i, j] = j <= i and (i - window < j or j < sinks)
    so window=1 sees only itself, window >= seq_len equals causal_mask(seq_len), and the first
    `sinks` keys (attention sinks, as in StreamingLLM) stay visible to every later query.
    Each row has at most window + sinks True entries: the cost is O(T * W), not O(T^2).
    """
    check_sizes(seq_len=seq_len, window=window)
    check_int("sinks", sinks, minimum=0)
    i, j = _positions(seq_len, seq_len, device)  # (T, 1), (1, T)
    return (j <= i) & ((j > i - window) | (j < sinks))  # (T, T)


def prefix_lm_mask(seq_len: int, prefix: int, *, device=None) -> Tensor:
    """Prefix-LM mask (T, T): the first `prefix` tokens see each other both ways, the rest
    causally. mask[i, j] = j <= i or j < prefix: every query sees the whole prefix (a prompt
    read bidirectionally, as in T5's prefix LM and PaliGemma), and the tokens after it are
    generated left to right. prefix=0 or 1 is causal_mask(seq_len).
    """
    check_positive_int("seq_len", seq_len)
    if not 0 <= check_int("prefix", prefix) <= seq_len:
        raise ValueError(f"prefix: expected an int in [0, seq_len={seq_len}], got {prefix}")
    i, j = _positions(seq_len, seq_len, device)  # (T, 1), (1, T)
    return (j <= i) | (j < prefix)  # (T, T)


def document_mask(doc_ids: Tensor | list[int], *, causal: bool = True) -> Tensor:
    """Mask (T, T) for packed sequences: token i may attend to token j only in its own document.

    doc_ids (T,) gives each position's document (several short texts packed into one row of a
    batch); mask[i, j] = doc_ids[i] == doc_ids[j], and j <= i when causal. Without it, a token
    would attend to the end of the previous, unrelated document.
    """
    ids = check_ints("doc_ids", doc_ids, (1,), "a non-empty 1-D tensor of ints (T,)")
    same = ids[:, None] == ids[None, :]  # (T, T)
    return same & causal_mask(len(ids), device=ids.device) if causal else same


def _index_args(tq: int, tk: int, b: int, h: int, device=None) -> tuple[Tensor, ...]:
    check_int("b", b, minimum=0)
    check_int("h", h, minimum=0)
    q_idx, kv_idx = _positions(tq, tk, device)  # (Tq, 1), (1, Tk)
    return torch.tensor(b, device=device), torch.tensor(h, device=device), q_idx, kv_idx


def _fit(name: str, out: object, tq: int, tk: int) -> Tensor:
    if not isinstance(out, Tensor):
        raise TypeError(
            f"{name}: expected it to return a tensor, got {type(out).__name__}; build it from "
            "the index tensors q_idx and kv_idx"
        )
    try:
        return out.expand(tq, tk)  # (Tq, Tk)
    except RuntimeError:
        raise ValueError(
            f"{name}: returned shape {shape_str(out.shape)}, which does not broadcast to "
            f"(Tq, Tk) = {(tq, tk)}"
        ) from None


def mask_from_mod(mask_mod, tq: int, tk: int | None = None, *, b: int = 0, h: int = 0) -> Tensor:
    """Evaluate a FlexAttention mask_mod(b, h, q_idx, kv_idx) -> bool on every (query, key).

    Returns the dense (Tq, Tk) mask of batch entry b and head h, True = may attend. The indices
    are tensors that broadcast: q_idx (Tq, 1), kv_idx (1, Tk), b and h 0-d; so one call covers
    every cell, the same cells FlexAttention's create_mask visits one at a time with vmap. As
    there, `and`, `or`, `not` and `if` on them fail: write &, |, ~ and torch.where.
    """
    check_sizes(tq=tq, tk=tk)
    tk = tq if tk is None else tk
    out = mask_mod(*_index_args(tq, tk, b, h))
    if isinstance(out, Tensor) and out.dtype != torch.bool:
        raise TypeError(
            f"mask_mod: expected bools (True = may attend), got {out.dtype}; return a "
            "comparison such as q_idx >= kv_idx"
        )
    return _fit("mask_mod", out, tq, tk).clone()


def scores_from_mod(score_mod, scores: Tensor, *, b: int = 0, h: int = 0) -> Tensor:
    """Apply a FlexAttention score_mod(score, b, h, q_idx, kv_idx) -> score to (Tq, Tk) scores,
    passed whole with broadcasting indices as in mask_from_mod (-inf where the function masks)."""
    if not isinstance(scores, Tensor) or not scores.is_floating_point() or scores.dim() != 2:
        got = type(scores).__name__
        if isinstance(scores, Tensor):
            got = f"shape {shape_str(scores.shape)} {scores.dtype}"
        raise TypeError(f"scores: expected a 2-D floating tensor (Tq, Tk), got {got}")
    tq, tk = scores.shape
    out = score_mod(scores.clone(), *_index_args(tq, tk, b, h, scores.device))
    if isinstance(out, Tensor) and not out.is_floating_point():
        raise TypeError(
            f"score_mod: expected floating scores, got {out.dtype}; return the new score, e.g. "
            "score - slope * (q_idx - kv_idx)"
        )
    return _fit("score_mod", out, tq, tk).clone()


def block_counts(mask: Tensor, block_size: int) -> tuple[int, int, int]:
    """(empty, full, partial): how many block_size x block_size tiles of a (Tq, Tk) mask are
    all False, all True, or mixed. An attention kernel skips the empty ones, runs the full ones
    without reading any mask, and evaluates the mask only inside the partial ones (what
    FlexAttention's BlockMask records: kv_num_blocks partial, full_kv_num_blocks full).
    """
    check_bool("mask", mask)
    check_positive_int("block_size", block_size)
    if mask.dim() != 2 or mask.shape[0] % block_size or mask.shape[1] % block_size:
        raise ValueError(
            f"mask: expected (Tq, Tk), both multiples of block_size={block_size}, got shape "
            f"{shape_str(mask.shape)}"
        )
    tq, tk = mask.shape
    tiles = mask.reshape(tq // block_size, block_size, tk // block_size, block_size)
    allowed = tiles.sum(dim=(1, 3))  # (Tq / bs, Tk / bs) cells allowed per tile
    empty = int((allowed == 0).sum())
    full = int((allowed == block_size * block_size).sum())
    return empty, full, allowed.numel() - empty - full


def padding_mask(lengths: Tensor | list[int], max_len: int) -> Tensor:
    """Key padding mask (B, 1, max_len) from sequence lengths: True for each row's first `length`
    keys, ready to broadcast over (B, Tq, Tk) scores; `.unsqueeze(1)` for (B, H, Tq, Tk)."""
    check_positive_int("max_len", max_len)
    lengths = check_ints("lengths", lengths, (1,), "a 1-D tensor of ints (B,)", max_len=max_len)
    keys = torch.arange(max_len, device=lengths.device)
    return (keys[None, :] < lengths[:, None]).unsqueeze(1)  # (B, 1, max_len)


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
    check_bool("mask", mask)
    if mask.dim() == 3 and mask.shape[1] == 1:
        mask = mask[:, 0]  # (B, Tk)
    if mask.dim() != 2:
        raise ValueError(
            f"mask: expected a key mask of shape (B, 1, Tk) or (B, Tk), got {shape_str(mask.shape)}"
        )
    return ~mask


def from_key_padding_mask(key_padding_mask: Tensor) -> Tensor:
    """nn.MultiheadAttention's key_padding_mask (B, Tk), True = ignore -> ours (B, 1, Tk)."""
    check_bool("key_padding_mask", key_padding_mask, 2, "(B, Tk)")
    return (~key_padding_mask).unsqueeze(1)  # (B, 1, Tk)


def to_additive_mask(mask: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """Our bool mask -> a float mask added to the scores: 0 where allowed, -inf where not."""
    check_bool("mask", mask)
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
    lens = check_ints("valid_lens", valid_lens, (1, 2), "ints of shape (B,) or (B, Tq)", tk=tk)
    keys = torch.arange(tk, device=lens.device)
    if lens.dim() == 1:
        return (keys[None, :] < lens[:, None]).unsqueeze(1)  # (B, 1, Tk)
    return keys[None, None, :] < lens[:, :, None]  # (B, Tq, Tk)


def mask_to_valid_lens(mask: Tensor) -> Tensor:
    """Our prefix mask (B, 1, Tk) or (B, Tq, Tk) -> valid_lens (B,) or (B, Tq).

    Raises ValueError when a row is not a prefix (True..True False..False), e.g. a causal
    mask's transpose: valid_lens can only say "the first n keys".
    """
    check_bool("mask", mask, 3, "(B, 1, Tk) or (B, Tq, Tk)")
    lens = mask.sum(dim=-1)  # (B, Tq')
    prefix = torch.arange(mask.shape[-1], device=mask.device) < lens[..., None]
    if not torch.equal(prefix, mask):
        raise ValueError(
            "mask: some row is not a prefix (True...True then False...False); "
            "valid_lens cannot express it"
        )
    return lens[:, 0] if mask.shape[1] == 1 else lens
