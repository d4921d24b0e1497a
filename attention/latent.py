"""Multi-head latent attention (MLA, DeepSeek-V2/V3): cache one small latent, not keys and values.

Per token the layer caches only a latent c (width R) and one rotated key part k_rope (width Dr)
shared by every head; each head's keys and values are rebuilt from c:
    c       = x W_dkv                      (B, T, R)      cached
    k_rope  = rope(x W_kr)                 (B, T, Dr)     cached, one for all heads
    k_h     = [c W_uk_h ; k_rope]          (B, H, T, Dn + Dr)
    v_h     = c W_uv_h                     (B, H, T, Dv)
    q_h     = [x W_qn_h ; rope(x W_qr_h)]  (B, H, T, Dn + Dr)
    out     = concat_h softmax(q_h k_h^T / sqrt(Dn + Dr)) v_h   W_o
RoPE is "decoupled": rotating c W_uk_h would tie the rotation to every key's position, so the
content part (Dn) carries no position and a separate small part (Dr) carries it all.

Absorbed form (what makes decoding cheap): q_nope_h . (c W_uk_h) = (q_nope_h W_uk_h^T) . c, so
fold W_uk_h into the query and score the latent itself; likewise apply W_uv_h after averaging the
latents. That is multi-query attention with one shared key [c ; k_rope] and value c, width R:
    q_lat_h = [q_nope_h W_uk_h^T ; q_rope_h]       (B, H, Tq, R + Dr)
    o_lat_h = softmax(q_lat_h [c ; k_rope]^T / sqrt(Dn + Dr)) c      (B, H, Tq, R)
    o_h     = o_lat_h W_uv_h                       (B, H, Tq, Dv)
Both forms give the same output (tests/core/test_latent.py). DeepSeek also compresses the queries
(q_lora_rank) and normalises c (RMSNorm); both leave the cache as it is and are left out here.
Cache per token and layer: R + Dr numbers (DeepSeek-V3: 512 + 64), against 2 H D for MHA.
"""

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ._checks import check_batch, check_positive_int, check_sizes, check_tensor, shape_str
from .functional import scaled_dot_product_attention
from .multihead import merge_heads, split_heads
from .positional import apply_rope


@dataclass(frozen=True)
class LatentResult:
    """Every intermediate of one multi-head latent attention call."""

    latent: Tensor  # (B, Tk, R) c, the cache's content part, past tokens included
    k_rope: Tensor  # (B, Tk, Dr) the cache's rotated key part, shared by all heads
    q: Tensor  # (B, H, Tq, Dn + Dr) queries as scored (explicit form): content then rope part
    k: Tensor | None  # (B, H, Tk, Dn + Dr) rebuilt keys; None in the absorbed form (never built)
    v: Tensor | None  # (B, H, Tk, Dv) rebuilt values; None in the absorbed form
    scores: Tensor  # (B, H, Tq, Tk) scaled, -inf where masked
    weights: Tensor  # (B, H, Tq, Tk)
    heads: Tensor  # (B, H, Tq, Dv) each head's output
    output: Tensor  # (B, Tq, M)

    @property
    def cache(self) -> tuple[Tensor, Tensor]:
        """(latent, k_rope): all a decoder keeps per token; pass it back as `past`."""
        return self.latent, self.k_rope


class MultiHeadLatentAttention(nn.Module):
    """Multi-head latent attention: keys and values rebuilt per head from a shared latent.

    Sizes, with DeepSeek's names: d_model M, n_heads H, kv_rank R (kv_lora_rank), d_nope Dn
    (qk_nope_head_dim, the content part of q and k per head), d_rope Dr (qk_rope_head_dim, the
    rotated part; even, as RoPE turns pairs), d_v Dv (v_head_dim, default d_nope).
    No biases: folding W_uk into the query (the absorbed form) needs purely linear maps.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        kv_rank: int,
        d_nope: int,
        d_rope: int,
        d_v: int | None = None,
        *,
        rope_base: float = 10000.0,
    ) -> None:
        super().__init__()
        check_sizes(d_model=d_model, n_heads=n_heads, kv_rank=kv_rank, d_nope=d_nope, d_rope=d_rope)
        if d_rope % 2:
            raise ValueError(f"d_rope: RoPE rotates pairs, so d_rope must be even, got {d_rope}")
        d_v = d_nope if d_v is None else check_positive_int("d_v", d_v)
        self.d_model, self.n_heads, self.kv_rank = d_model, n_heads, kv_rank
        self.d_nope, self.d_rope, self.d_v, self.rope_base = d_nope, d_rope, d_v, rope_base
        h = n_heads
        self.q_proj = nn.Linear(d_model, h * (d_nope + d_rope), bias=False)  # W_qn, W_qr
        self.kv_down = nn.Linear(d_model, kv_rank, bias=False)  # W_dkv: x -> c
        self.k_rope_proj = nn.Linear(d_model, d_rope, bias=False)  # W_kr, one for all heads
        self.k_up = nn.Linear(kv_rank, h * d_nope, bias=False)  # W_uk: c -> content keys
        self.v_up = nn.Linear(kv_rank, h * d_v, bias=False)  # W_uv: c -> values
        self.out_proj = nn.Linear(h * d_v, d_model, bias=False)

    def cache_numbers_per_token(self) -> int:
        """Numbers cached per token by this layer: R + Dr (MHA would keep 2 H D)."""
        return self.kv_rank + self.d_rope

    def _rope(self, x: Tensor, start: int) -> Tensor:
        positions = torch.arange(start, start + x.shape[-2], device=x.device)
        return apply_rope(x, positions, base=self.rope_base)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        *,
        past: tuple[Tensor, Tensor] | None = None,
        absorbed: bool = False,
    ) -> LatentResult:
        """Self-attention of x (B, Tq, M), after the cached tokens in `past`, if any.

        mask broadcasts to (B, H, Tq, Tk); a decoder passes causal_mask(Tq, Tk, offset=Tk - Tq).
        past: (latent (B, Tpast, R), k_rope (B, Tpast, Dr)) from an earlier result's `.cache`;
            the new tokens sit at positions Tpast .. Tpast + Tq - 1.
        absorbed: score the latent itself (the absorbed form above); the same output.
        """
        check_batch("x", x, self.d_model, "d_model=")
        b, h, dn, dr, r = x.shape[0], self.n_heads, self.d_nope, self.d_rope, self.kv_rank
        t_past = 0 if past is None else self._check_past(past, b)
        q = split_heads(self.q_proj(x), h)  # (B, H, Tq, Dn + Dr)
        q_nope, q_rope = q[..., :dn], self._rope(q[..., dn:], t_past)  # (B, H, Tq, Dn), (.., Dr)
        latent = self.kv_down(x)  # (B, Tq, R)
        k_rope = self._rope(self.k_rope_proj(x), t_past)  # (B, Tq, Dr) rotated once, then cached
        if past is not None:
            latent = torch.cat([past[0], latent], dim=1)  # (B, Tk, R)
            k_rope = torch.cat([past[1], k_rope], dim=1)  # (B, Tk, Dr)
        tk = latent.shape[1]
        scale = (dn + dr) ** -0.5
        q_full = torch.cat([q_nope, q_rope], dim=-1)  # (B, H, Tq, Dn + Dr)
        if not absorbed:
            k_nope = self.k_up(latent).view(b, tk, h, dn).transpose(1, 2)  # (B, H, Tk, Dn)
            k_shared = k_rope[:, None].expand(b, h, tk, dr)  # (B, H, Tk, Dr) same for each head
            k = torch.cat([k_nope, k_shared], dim=-1)  # (B, H, Tk, Dn + Dr)
            v = self.v_up(latent).view(b, tk, h, self.d_v).transpose(1, 2)  # (B, H, Tk, Dv)
            att = scaled_dot_product_attention(q_full, k, v, mask, scale=scale)
            heads = att.output  # (B, H, Tq, Dv)
        else:
            k = v = None
            w_uk = self.k_up.weight.view(h, dn, r)  # (H, Dn, R): head h's c -> its content key
            w_uv = self.v_up.weight.view(h, self.d_v, r)  # (H, Dv, R)
            q_lat = q_nope @ w_uk  # (B, H, Tq, R): W_uk folded into the query
            q_abs = torch.cat([q_lat, q_rope], dim=-1)  # (B, H, Tq, R + Dr)
            key = torch.cat([latent, k_rope], dim=-1)[:, None]  # (B, 1, Tk, R + Dr): one kv head
            att = scaled_dot_product_attention(q_abs, key, latent[:, None], mask, scale=scale)
            heads = att.output @ w_uv.transpose(-2, -1)  # (B, H, Tq, R) -> (B, H, Tq, Dv)
        output = self.out_proj(merge_heads(heads))  # (B, Tq, M)
        return LatentResult(latent, k_rope, q_full, k, v, att.scores, att.weights, heads, output)

    def _check_past(self, past: tuple[Tensor, Tensor], b: int) -> int:
        if not isinstance(past, (tuple, list)) or len(past) != 2:
            raise TypeError(f"past: expected (latent, k_rope), got {type(past).__name__}")
        latent, k_rope = past
        check_tensor("past latent", latent, ndims=(3,))
        check_tensor("past k_rope", k_rope, ndims=(3,))
        t = latent.shape[1]
        for name, x, width in (("latent", latent, self.kv_rank), ("k_rope", k_rope, self.d_rope)):
            if tuple(x.shape) != (b, t, width):
                raise ValueError(
                    f"past: cached {name} must be (B, Tpast, {width}) = ({b}, {t}, {width}), "
                    f"got {shape_str(x.shape)}"
                )
        return t
