"""Bytes that attention keeps and moves: the key/value cache, and naive vs flash traffic.

KV cache: when decoding, each layer keeps one key and one value vector per kv head per token:
    bytes = 2 x n_layers x n_kv_heads x d_head x seq_len x batch x bytes_per_value
Grouped-query attention divides it by H / Hkv. `cache_bytes` measures what a real cache holds.
Multi-head latent attention (latent.py) caches R + Dr numbers per token and layer, shared by all
heads; linear attention (linear.py) keeps a (D, Dv) state per head whatever the length; a sliding
window keeps the last W tokens. `cache_bytes_by_kind` puts them side by side for one model size.

Traffic between main memory (HBM) and fast on-chip memory (SRAM) for one (batch, head) slice,
under flash.py's memory model: naive attention stores S and P, (Tq, Tk) each; flash only lse (Tq,).
"""

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from ._checks import check_positive_int, check_sizes


def _value_bytes(dtype: torch.dtype | None, bytes_per_value: float | None) -> float:
    if dtype is not None and bytes_per_value is not None:
        raise ValueError("dtype and bytes_per_value: give one, not both")
    if bytes_per_value is not None:
        ok = isinstance(bytes_per_value, (int, float)) and not isinstance(bytes_per_value, bool)
        if not ok or not 0 < bytes_per_value < math.inf:
            raise ValueError(
                f"bytes_per_value: expected a positive number (0.5 for 4-bit), "
                f"got {bytes_per_value}"
            )
        return bytes_per_value
    dtype = torch.float32 if dtype is None else dtype
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype: expected a torch.dtype such as torch.float16, got {dtype!r}")
    return dtype.itemsize


def _bytes(n_values: int, dtype: torch.dtype | None, bytes_per_value: float | None) -> int | float:
    """n_values x the bytes of one value; an int when whole."""
    n = n_values * _value_bytes(dtype, bytes_per_value)
    return int(n) if float(n).is_integer() else n


def kv_cache_bytes(
    *,
    n_layers: int,
    n_kv_heads: int,
    d_head: int,
    seq_len: int,
    batch: int = 1,
    dtype: torch.dtype | None = None,
    bytes_per_value: float | None = None,
) -> int | float:
    """Bytes of a decoder's key/value cache after seq_len tokens (the formula above).

    Give dtype (default torch.float32) or bytes_per_value (e.g. 0.5 for 4-bit values), not both.
    """
    check_sizes(
        n_layers=n_layers, n_kv_heads=n_kv_heads, d_head=d_head, seq_len=seq_len, batch=batch
    )
    return _bytes(2 * n_layers * n_kv_heads * d_head * seq_len * batch, dtype, bytes_per_value)


def mla_cache_bytes(
    *,
    n_layers: int,
    kv_rank: int,
    d_rope: int,
    seq_len: int,
    batch: int = 1,
    dtype: torch.dtype | None = None,
    bytes_per_value: float | None = None,
) -> int | float:
    """Bytes of a multi-head latent attention cache: n_layers x (R + Dr) x seq_len x batch x bytes,
    whatever the number of heads (latent.py)."""
    check_sizes(n_layers=n_layers, kv_rank=kv_rank, d_rope=d_rope, seq_len=seq_len, batch=batch)
    return _bytes(n_layers * (kv_rank + d_rope) * seq_len * batch, dtype, bytes_per_value)


def linear_state_bytes(
    *,
    n_layers: int,
    n_heads: int,
    d_key: int,
    d_value: int,
    batch: int = 1,
    normalizer: bool = False,
    dtype: torch.dtype | None = None,
    bytes_per_value: float | None = None,
) -> int | float:
    """Bytes of linear attention's recurrent state: n_layers x H x D x (Dv [+ 1]) x batch x bytes.

    No seq_len: the state S (D, Dv) per head has the same size after 10 tokens or 10 million.
    normalizer=True adds the running sum z (D,) of normalised linear attention.
    """
    check_sizes(n_layers=n_layers, n_heads=n_heads, d_key=d_key, d_value=d_value, batch=batch)
    width = d_value + (1 if normalizer else 0)
    return _bytes(n_layers * n_heads * d_key * width * batch, dtype, bytes_per_value)


def cache_bytes_by_kind(
    *,
    n_layers: int,
    n_heads: int,
    d_head: int,
    seq_len: int,
    n_kv_heads: int,
    kv_rank: int,
    d_rope: int,
    window: int,
    batch: int = 1,
    dtype: torch.dtype | None = None,
    bytes_per_value: float | None = None,
) -> dict[str, int | float]:
    """What one layer stack of this size caches after seq_len tokens, {kind: bytes}: MHA (H kv
    heads), GQA (n_kv_heads), MQA (1), MLA (kv_rank + d_rope a token), a sliding window (MHA
    heads, at most `window` tokens kept) and a linear state of (d_head, d_head) per head."""
    common = dict(n_layers=n_layers, batch=batch, dtype=dtype, bytes_per_value=bytes_per_value)
    check_positive_int("window", window)
    kv = dict(d_head=d_head, seq_len=seq_len, **common)
    return {
        "MHA": kv_cache_bytes(n_kv_heads=n_heads, **kv),
        "GQA": kv_cache_bytes(n_kv_heads=n_kv_heads, **kv),
        "MQA": kv_cache_bytes(n_kv_heads=1, **kv),
        "MLA": mla_cache_bytes(kv_rank=kv_rank, d_rope=d_rope, seq_len=seq_len, **common),
        "sliding window": kv_cache_bytes(
            n_kv_heads=n_heads, d_head=d_head, seq_len=min(seq_len, window), **common
        ),
        "linear state": linear_state_bytes(n_heads=n_heads, d_key=d_head, d_value=d_head, **common),
    }


def cache_bytes(cache: object) -> int:
    """Bytes a real cache holds: the sum of t.element_size() * t.numel() over its tensors, nested
    in tuples, lists, dicts in any way (a (k, v) past_kv, a DecoderResult.cache); None counts 0."""
    if isinstance(cache, Tensor):
        return cache.element_size() * cache.numel()
    if isinstance(cache, dict):
        return sum(cache_bytes(v) for v in cache.values())
    if isinstance(cache, (tuple, list)):
        return sum(cache_bytes(v) for v in cache)
    return 0


@dataclass(frozen=True)
class MemoryTraffic:
    """Bytes one attention call moves for one (batch, head) slice, and what it stores."""

    bytes_read: int | float  # main memory (HBM) -> on-chip memory (SRAM)
    bytes_written: int | float  # SRAM -> HBM
    extra_bytes: int | float  # kept in HBM besides q, k, v and the output: S and P, or lse


def naive_attention_traffic(
    tq: int,
    tk: int,
    d: int,
    dv: int | None = None,
    *,
    dtype: torch.dtype | None = None,
    bytes_per_value: float | None = None,
) -> MemoryTraffic:
    """Traffic of attention that stores S = q @ k.T and P = softmax(S) in main memory.

    reads  = (Tq*D + Tk*D + Tq*Tk + Tq*Tk + Tk*Dv) x bytes   q, k; S; P, v
    writes = (Tq*Tk + Tq*Tk + Tq*Dv) x bytes                 S; P; O
    extra  = 2 * Tq * Tk x bytes: grows as T^2
    """
    check_sizes(tq=tq, tk=tk, d=d, dv=dv)
    dv, unit = d if dv is None else dv, (dtype, bytes_per_value)
    return MemoryTraffic(
        bytes_read=_bytes(tq * d + tk * d + 2 * tq * tk + tk * dv, *unit),
        bytes_written=_bytes(2 * tq * tk + tq * dv, *unit),
        extra_bytes=_bytes(2 * tq * tk, *unit),
    )


def flash_attention_traffic(
    tq: int,
    tk: int,
    d: int,
    dv: int | None = None,
    *,
    block_size: int | tuple[int, int] = 128,
    dtype: torch.dtype | None = None,
    bytes_per_value: float | None = None,
) -> MemoryTraffic:
    """Traffic of flash_attention without a mask tensor or causal skipping (= its steps' sum).

    reads  = (Tq*D + n_q_tiles * Tk * (D + Dv)) x bytes    n_q_tiles = ceil(Tq / block_q)
    writes = (Tq*Dv + Tq) x bytes                            the output and one lse per row
    extra  = Tq x bytes: grows as T
    """
    check_sizes(tq=tq, tk=tk, d=d, dv=dv)
    dv = d if dv is None else dv
    block_q = block_size[0] if isinstance(block_size, tuple) else block_size
    n_q_tiles = math.ceil(tq / check_positive_int("block_size", block_q))
    unit = (dtype, bytes_per_value)  # what one value weighs
    return MemoryTraffic(
        bytes_read=_bytes(tq * d + n_q_tiles * tk * (d + dv), *unit),
        bytes_written=_bytes(tq * dv + tq, *unit),
        extra_bytes=_bytes(tq, *unit),
    )
