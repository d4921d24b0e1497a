"""LatentExplorer: what multi-head latent attention caches, beside MHA, GQA and MQA.

For a published MLA model (DeepSeek-V3, -V2, -V2-Lite: layers, heads and head widths from their
config.json files) and your latent width R and rotated width Dr, the cache after seq_len tokens:
    MLA  n_layers x (R + Dr) numbers a token                    (attention.mla_cache_bytes)
    MHA  n_layers x H x (Dk + Dv),  Dk = Dn + Dr, the same heads with their own keys and values
    GQA  n_layers x G x (Dk + Dv),  G key/value heads;  MQA: G = 1   (attention.kv_cache_bytes)
and, on a small layer (A.MultiHeadLatentAttention with random weights, toy_rank = its R), the
singular values of every head's content keys stacked side by side (T, H x Dn): however many
heads, they are rebuilt from an R-wide latent, so at most R of them are not zero. Arithmetic and
one small SVD: every update is instant.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from .._checks import divisors
from ..latent import MultiHeadLatentAttention
from ..memory import kv_cache_bytes, mla_cache_bytes
from ._util import SEEDS, bounded, check_fields, check_int, one_of
from .kv_cache import KV_CONTEXTS, KV_DTYPES

__all__ = ["LatentExploration", "LatentParams", "explore_latent"]


@dataclass(frozen=True)
class MLAConfig:
    """The sizes of a published MLA model that decide its cache (from its config.json)."""

    n_layers: int  # num_hidden_layers
    n_heads: int  # num_attention_heads
    d_nope: int  # qk_nope_head_dim
    d_v: int  # v_head_dim
    kv_rank: int  # kv_lora_rank
    d_rope: int  # qk_rope_head_dim


MLA_PRESETS: dict[str, MLAConfig] = {
    "DeepSeek-V3": MLAConfig(n_layers=61, n_heads=128, d_nope=128, d_v=128, kv_rank=512, d_rope=64),
    "DeepSeek-V2": MLAConfig(n_layers=60, n_heads=128, d_nope=128, d_v=128, kv_rank=512, d_rope=64),
    "DeepSeek-V2-Lite": MLAConfig(
        n_layers=27, n_heads=16, d_nope=128, d_v=128, kv_rank=512, d_rope=64
    ),
}
"""DeepSeek-V3 (671B), -V2 (236B) and -V2-Lite (16B): the same attention widths, R = 512 and
Dr = 64; they differ in layers and heads."""

LATENT_RANKS = (16, 32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048)
ROPE_WIDTHS = (16, 32, 64, 128)
TOY_HEADS, TOY_D_NOPE, TOY_TOKENS, TOY_D_MODEL = 8, 8, 96, 64
TOY_RANK_MAX = TOY_HEADS * TOY_D_NOPE  # 64 content-key columns
RANK_TOL = 1e-4  # a singular value below RANK_TOL x the largest counts as zero


@dataclass(frozen=True)
class LatentParams:
    """Settings of the latent explorer (defaults: DeepSeek-V3 as published, 32k tokens, bf16).

    config: a key of MLA_PRESETS. kv_rank: R, one of LATENT_RANKS. d_rope: Dr, one of
    ROPE_WIDTHS. n_kv_heads: G for the GQA bar, a divisor of the config's heads. seq_len: one of
    KV_CONTEXTS. dtype: a key of KV_DTYPES. toy_rank: the small layer's R (1..64). seed: its
    weights and tokens.
    """

    config: str = one_of("DeepSeek-V3", MLA_PRESETS)
    kv_rank: int = bounded(512, 1, LATENT_RANKS[-1], choices=LATENT_RANKS)
    d_rope: int = bounded(64, 1, ROPE_WIDTHS[-1], choices=ROPE_WIDTHS)
    n_kv_heads: int = 8
    seq_len: int = bounded(32768, 1, KV_CONTEXTS[-1], choices=KV_CONTEXTS)
    dtype: str = one_of("bfloat16", KV_DTYPES)
    toy_rank: int = bounded(16, 1, TOY_RANK_MAX)
    seed: int = bounded(0, *SEEDS)

    def __post_init__(self) -> None:
        check_fields(self)
        h = MLA_PRESETS[self.config].n_heads
        check_int("n_kv_heads", self.n_kv_heads, 1, h)
        if h % self.n_kv_heads:
            raise ValueError(
                f"n_kv_heads={self.n_kv_heads} does not divide {self.config}'s {h} heads; "
                f"choose n_kv_heads from {divisors(h)}"
            )


@dataclass(frozen=True)
class CacheKind:
    """One way to attend with the config's heads, and what it caches."""

    name: str  # "MHA (128)", "GQA (8)", "MQA (1)", "MLA (R=512, Dr=64)"
    numbers_per_token: int  # per layer
    bytes: float  # all layers, at the params' length
    by_context: tuple[float, ...]  # all layers, at each of KV_CONTEXTS


@dataclass(frozen=True)
class LatentExploration:
    """Cache sizes for the params and the rank of a small layer's rebuilt keys."""

    params: LatentParams
    config: MLAConfig
    kinds: tuple[CacheKind, ...]  # MHA, GQA, MQA, MLA (yours), in that order
    mla_bytes_per_token: float  # all layers
    mha_over_mla: float  # how many times more MHA caches than your MLA
    published_mla_bytes: float  # the config's own R and Dr, at the params' length
    contexts: tuple[int, ...]  # KV_CONTEXTS
    singular_values: Tensor  # (TOY_RANK_MAX,) of the small MLA layer's stacked content keys
    mha_singular_values: Tensor  # (TOY_RANK_MAX,) the same with full-rank key projections
    key_rank: int  # numerical rank of the MLA keys: min(toy_rank, TOY_TOKENS, H Dn)
    mha_key_rank: int


def _mha_like(p: LatentParams, c: MLAConfig, n_kv_heads: int, seq_len: int) -> float:
    """Keys of width Dn + Dr and values of width Dv for n_kv_heads heads (kv_cache_bytes counts
    a key and a value of one width, so half of each width's count)."""
    common = dict(
        n_layers=c.n_layers,
        n_kv_heads=n_kv_heads,
        seq_len=seq_len,
        bytes_per_value=KV_DTYPES[p.dtype],
    )
    keys = kv_cache_bytes(d_head=c.d_nope + p.d_rope, **common) / 2
    values = kv_cache_bytes(d_head=c.d_v, **common) / 2
    return float(keys + values)


def _mla(p: LatentParams, c: MLAConfig, kv_rank: int, d_rope: int, seq_len: int) -> float:
    return float(
        mla_cache_bytes(
            n_layers=c.n_layers,
            kv_rank=kv_rank,
            d_rope=d_rope,
            seq_len=seq_len,
            bytes_per_value=KV_DTYPES[p.dtype],
        )
    )


@lru_cache(maxsize=64)
def _toy_keys(toy_rank: int, seed: int) -> tuple[Tensor, Tensor]:
    """Singular values of a small MLA layer's content keys, all heads side by side, and of the
    same keys from a full-rank projection (what MHA would build): each (TOY_RANK_MAX,)."""
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = MultiHeadLatentAttention(
            TOY_D_MODEL, TOY_HEADS, kv_rank=toy_rank, d_nope=TOY_D_NOPE, d_rope=2
        )
    x = torch.randn(1, TOY_TOKENS, TOY_D_MODEL, generator=g)  # (1, T, M)
    with torch.no_grad():
        keys = layer(x).k[0, :, :, :TOY_D_NOPE]  # (H, T, Dn) content parts, rebuilt from c
        stacked = keys.transpose(0, 1).reshape(TOY_TOKENS, -1)  # (T, H Dn)
        w_full = torch.randn(TOY_D_MODEL, TOY_RANK_MAX, generator=g) / TOY_D_MODEL**0.5
        full = x[0] @ w_full  # (T, H Dn): every head its own projection, as in MHA
    pad = torch.zeros(TOY_RANK_MAX)

    def values(m: Tensor) -> Tensor:
        s = torch.linalg.svdvals(m)  # (min(T, H Dn),)
        return torch.cat([s, pad])[:TOY_RANK_MAX]

    return values(stacked), values(full)


def numerical_rank(singular_values: Tensor, tol: float = RANK_TOL) -> int:
    """How many singular values exceed tol x the largest."""
    top = float(singular_values.max())
    return int((singular_values > tol * top).sum()) if top > 0 else 0


def explore_latent(params: LatentParams | None = None) -> LatentExploration:
    """Cache bytes of MHA, GQA, MQA and MLA for the params' config; the toy layer's key rank."""
    p = params or LatentParams()
    c = MLA_PRESETS[p.config]

    def kind(name: str, per_token: int, size) -> CacheKind:
        return CacheKind(name, per_token, size(p.seq_len), tuple(size(t) for t in KV_CONTEXTS))

    d_k = c.d_nope + p.d_rope
    kinds = (
        kind(
            f"MHA ({c.n_heads})", c.n_heads * (d_k + c.d_v), lambda t: _mha_like(p, c, c.n_heads, t)
        ),
        kind(
            f"GQA ({p.n_kv_heads})",
            p.n_kv_heads * (d_k + c.d_v),
            lambda t: _mha_like(p, c, p.n_kv_heads, t),
        ),
        kind("MQA (1)", d_k + c.d_v, lambda t: _mha_like(p, c, 1, t)),
        kind(
            f"MLA (R={p.kv_rank}, Dr={p.d_rope})",
            p.kv_rank + p.d_rope,
            lambda t: _mla(p, c, p.kv_rank, p.d_rope, t),
        ),
    )
    mla_sv, mha_sv = _toy_keys(p.toy_rank, p.seed)
    return LatentExploration(
        params=p,
        config=c,
        kinds=kinds,
        mla_bytes_per_token=_mla(p, c, p.kv_rank, p.d_rope, 1),
        mha_over_mla=kinds[0].bytes / kinds[-1].bytes,
        published_mla_bytes=_mla(p, c, c.kv_rank, c.d_rope, p.seq_len),
        contexts=KV_CONTEXTS,
        singular_values=mla_sv,
        mha_singular_values=mha_sv,
        key_rank=numerical_rank(mla_sv),
        mha_key_rank=numerical_rank(mha_sv),
    )
