"""KVCacheExplorer: the bytes a decoder's key/value cache holds, MHA against GQA against MQA.

    bytes = 2 x n_layers x n_kv_heads x d_head x seq_len x batch x bytes_per_value

`explore_kv_cache` is arithmetic only (instant). attention/experiments/decoding.py's
`measure_decoding` times a real model's generation with and without the cache; a lesson runs it
once and can hand its numbers to the explorer, which never runs a model itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._checks import divisors
from ..memory import kv_cache_bytes
from ._util import bounded, check_fields, check_int, one_of

__all__ = [
    "KV_DTYPES",
    "KV_PRESETS",
    "KVCacheExploration",
    "KVCacheParams",
    "explore_kv_cache",
]

KV_DTYPES: dict[str, float] = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int8": 1,
    "4-bit": 0.5,
}
"""Bytes per cached number for each storage type the explorer offers."""

KV_CONTEXTS = tuple(2**p for p in range(6, 18))  # 64 .. 131072 tokens
KV_LAYERS_MAX = 128
KV_HEADS_MAX = 128
KV_D_HEAD_MAX = 256
KV_BATCH_MAX = 256
KV_CONTEXT_MAX = KV_CONTEXTS[-1]


@dataclass(frozen=True)
class ModelShape:
    """The sizes that decide a model's key/value cache."""

    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_head: int


KV_PRESETS: dict[str, ModelShape] = {
    "SmolLM2-135M": ModelShape(n_layers=30, n_heads=9, n_kv_heads=3, d_head=64),
    "Llama-2-7B": ModelShape(n_layers=32, n_heads=32, n_kv_heads=32, d_head=128),
    "Llama-3-8B": ModelShape(n_layers=32, n_heads=32, n_kv_heads=8, d_head=128),
    "Falcon-7B": ModelShape(n_layers=32, n_heads=71, n_kv_heads=1, d_head=64),
}
"""Published shapes: SmolLM2 (GQA, 3 groups of 3), Llama-2-7B (MHA), Llama-3-8B (GQA, 8 kv
heads), Falcon-7B (MQA, one kv head for 71 query heads)."""


def attention_kind(n_heads: int, n_kv_heads: int) -> str:
    """ "MHA" when every query head has its own kv head, "MQA" for one kv head, else "GQA"."""
    if n_kv_heads == n_heads:
        return "MHA"
    return "MQA" if n_kv_heads == 1 else "GQA"


def human_bytes(n: float) -> str:
    """1536 -> "1.50 KiB"; powers of 1024, three significant digits."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} B" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class KVCacheParams:
    """Settings of the KV-cache explorer (defaults: SmolLM2-135M, 2048 tokens, float32).

    n_kv_heads must divide n_heads (grouped-query attention); dtype is a key of KV_DTYPES.
    """

    n_layers: int = bounded(30, 1, KV_LAYERS_MAX)
    n_heads: int = bounded(9, 1, KV_HEADS_MAX)
    n_kv_heads: int = 3
    d_head: int = bounded(64, 1, KV_D_HEAD_MAX)
    seq_len: int = bounded(2048, 1, KV_CONTEXT_MAX)
    batch: int = bounded(1, 1, KV_BATCH_MAX)
    dtype: str = one_of("float32", KV_DTYPES)

    def __post_init__(self) -> None:
        check_fields(self)
        check_int("n_kv_heads", self.n_kv_heads, 1, self.n_heads)
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_kv_heads={self.n_kv_heads} does not divide n_heads={self.n_heads}; "
                f"choose n_kv_heads from {divisors(self.n_heads)}"
            )


@dataclass(frozen=True)
class CacheVariant:
    """The same model with another number of key/value heads."""

    name: str  # "MHA (9)", "GQA (3)", "MQA (1)"
    n_kv_heads: int
    bytes: float  # the cache at the params' length, batch and dtype
    by_context: tuple[float, ...]  # the cache at each of KV_CONTEXTS


@dataclass(frozen=True)
class KVCacheExploration:
    """What the cache holds for the params, and for every other kv head count the model allows."""

    params: KVCacheParams
    kind: str  # "MHA", "GQA" or "MQA"
    bytes: float  # the whole cache
    bytes_per_token: float  # one more token of context, whole batch
    bytes_per_layer: float
    group_size: int  # query heads per kv head, H / Hkv: the saving against MHA
    variants: tuple[CacheVariant, ...]  # one per divisor of n_heads, from MQA (1) to MHA (H)
    contexts: tuple[int, ...]  # KV_CONTEXTS

    @property
    def mha_bytes(self) -> float:
        return self.variants[-1].bytes


def explore_kv_cache(params: KVCacheParams | None = None) -> KVCacheExploration:
    """Cache bytes for the params (attention.memory.kv_cache_bytes) and for each kv head count."""
    p = params or KVCacheParams()
    per_value = KV_DTYPES[p.dtype]

    def size(n_kv_heads: int, seq_len: int) -> float:
        return float(
            kv_cache_bytes(
                n_layers=p.n_layers,
                n_kv_heads=n_kv_heads,
                d_head=p.d_head,
                seq_len=seq_len,
                batch=p.batch,
                bytes_per_value=per_value,
            )
        )

    variants = tuple(
        CacheVariant(
            name=f"{attention_kind(p.n_heads, h)} ({h})",
            n_kv_heads=h,
            bytes=size(h, p.seq_len),
            by_context=tuple(size(h, t) for t in KV_CONTEXTS),
        )
        for h in divisors(p.n_heads)
    )
    total = size(p.n_kv_heads, p.seq_len)
    return KVCacheExploration(
        params=p,
        kind=attention_kind(p.n_heads, p.n_kv_heads),
        bytes=total,
        bytes_per_token=total / p.seq_len,
        bytes_per_layer=total / p.n_layers,
        group_size=p.n_heads // p.n_kv_heads,
        variants=variants,
        contexts=KV_CONTEXTS,
    )
