"""Multi-head attention: one big projection per role, split into heads, attend, merge, project.

q, k, v = X W_q, X W_k, X W_v                       (B, T, M) each
split:    (B, T, M) -> (B, T, H, D) -> (B, H, T, D)   D = M / H
per head: softmax(q k^T / sqrt(D)) v                (B, H, Tq, D)
merge:    (B, H, Tq, D) -> (B, Tq, H*D); output = merged W_o
With n_kv_heads = Hkv < H (grouped-query attention) W_k, W_v project to Hkv * D only: each
key/value head serves H / Hkv query heads and the key/value cache shrinks by the same factor.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ._checks import check_divisible, check_positive_int, check_tensor, divisors, shape_str
from .functional import scaled_dot_product_attention


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """(B, T, M) -> (B, H, T, M // H): each head gets its own slice of the width."""
    check_tensor("x", x, ndims=(3,), finite=False)
    b, t, m = x.shape
    check_divisible("x's width", m, n_heads)
    return x.view(b, t, n_heads, m // n_heads).transpose(1, 2)  # (B, H, T, D)


def merge_heads(x: Tensor) -> Tensor:
    """(B, H, T, D) -> (B, T, H * D): concatenate the heads' outputs along the width."""
    check_tensor("x", x, ndims=(4,), finite=False)
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)  # (B, T, H*D)


@dataclass(frozen=True)
class MultiHeadResult:
    """Every intermediate of one multi-head attention call."""

    q: Tensor  # (B, H, Tq, D)
    k: Tensor  # (B, Hkv, Tk, D) including any cached keys; Hkv = H unless grouped
    v: Tensor  # (B, Hkv, Tk, D)
    scores: Tensor  # (B, H, Tq, Tk) scaled; masked entries are -inf
    weights: Tensor  # (B, H, Tq, Tk)
    fully_masked: Tensor  # (B, H, Tq) bool
    heads: Tensor  # (B, H, Tq, D) each head's output
    concat: Tensor  # (B, Tq, M) heads merged, before the output projection
    output: Tensor  # (B, Tq, M)


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention for self- and cross-attention.

    Args:
        d_model: model width M (queries' width and the output width).
        n_heads: number of heads H; must divide d_model (D = M / H per head).
        n_kv_heads: key/value heads Hkv (default H); must divide H. Hkv < H is grouped-query
            attention, Hkv = 1 multi-query attention.
        bias: add biases to the four projections.
        kdim, vdim: widths of key and value inputs for cross-attention (default d_model).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_kv_heads: int | None = None,
        *,
        bias: bool = True,
        kdim: int | None = None,
        vdim: int | None = None,
    ) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("n_heads", n_heads)
        check_divisible("d_model", d_model, n_heads)
        n_kv_heads = n_heads if n_kv_heads is None else check_positive_int("n_kv_heads", n_kv_heads)
        if n_heads % n_kv_heads:
            raise ValueError(
                f"n_kv_heads={n_kv_heads} does not divide n_heads={n_heads}; "
                f"choose n_kv_heads from {divisors(n_heads)}"
            )
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.n_kv_heads = n_kv_heads
        self.kdim, self.vdim = kdim or d_model, vdim or d_model
        kv_width = n_kv_heads * self.d_head
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(self.kdim, kv_width, bias=bias)
        self.v_proj = nn.Linear(self.vdim, kv_width, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        mask: Tensor | None = None,
        *,
        past_kv: tuple[Tensor, Tensor] | None = None,
    ) -> MultiHeadResult:
        """Attend from query (B, Tq, M) to key (B, Tk, kdim) / value (B, Tk, vdim).

        key=None means self-attention (key = value = query). `mask` (True = may attend)
        broadcasts to (B, Tq, Tk) and is shared by all heads, or is 4-D (B, H, Tq, Tk).
        `past_kv` holds the projected (k, v) of earlier decoding steps, each (B, Hkv, Tpast, D);
        the new keys and values are appended to them (a key/value cache). To reuse keys and
        values that need no new projection at all, call `attend(q, k, v, mask)`.
        """
        check_tensor("query", query, ndims=(3,))
        if query.shape[-1] != self.d_model:
            raise ValueError(
                f"query: expected width d_model={self.d_model}, got shape {shape_str(query.shape)}"
            )
        if key is None and value is None:
            key = value = query
        elif key is None or value is None:
            raise ValueError("key and value: give both (cross-attention) or neither (self)")
        check_tensor("key", key, ndims=(3,))
        check_tensor("value", value, ndims=(3,))
        for name, x, width in (("key", key, self.kdim), ("value", value, self.vdim)):
            if x.shape[-1] != width:
                raise ValueError(f"{name}: expected width {width}, got shape {shape_str(x.shape)}")
            if x.shape[0] != query.shape[0]:
                raise ValueError(
                    f"{name}: batch {x.shape[0]} differs from query's batch {query.shape[0]}"
                )
        if key.shape[1] != value.shape[1]:
            raise ValueError(
                f"value: length {value.shape[1]} differs from key's length {key.shape[1]}"
            )
        q = split_heads(self.q_proj(query), self.n_heads)  # (B, H, Tq, D)
        k = split_heads(self.k_proj(key), self.n_kv_heads)  # (B, Hkv, Tk, D)
        v = split_heads(self.v_proj(value), self.n_kv_heads)  # (B, Hkv, Tk, D)
        if past_kv is not None:
            for name, past in zip("kv", past_kv, strict=True):
                if past.dim() != 4 or past.shape[:2] != k.shape[:2] or past.shape[3] != k.shape[3]:
                    b, hkv, _, d = k.shape
                    raise ValueError(
                        f"past_kv: cached {name} must be (B, Hkv, Tpast, D) = ({b}, {hkv}, "
                        f"Tpast, {d}), got {shape_str(past.shape)}"
                    )
            k = torch.cat([past_kv[0], k], dim=2)  # (B, Hkv, Tpast + Tk, D)
            v = torch.cat([past_kv[1], v], dim=2)
        return self.attend(q, k, v, mask)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> MultiHeadResult:
        """Attend per head over projected q (B, H, Tq, D), k, v (B, Hkv, Tk, D); merge; project."""
        if mask is not None and mask.dim() < 4:
            mask = mask.unsqueeze(-3)  # (B, 1, Tq, Tk): one mask for all heads
        att = scaled_dot_product_attention(q, k, v, mask)
        concat = merge_heads(att.output)  # (B, Tq, M)
        return MultiHeadResult(
            q=q,
            k=k,
            v=v,
            scores=att.scores,
            weights=att.weights,
            fully_masked=att.fully_masked,
            heads=att.output,
            concat=concat,
            output=self.out_proj(concat),  # (B, Tq, M)
        )

    @torch.no_grad()
    def load_torch_weights(self, mha: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy the weights of a torch.nn.MultiheadAttention with the same sizes into this one."""
        if not isinstance(mha, nn.MultiheadAttention):
            raise TypeError(f"mha: expected nn.MultiheadAttention, got {type(mha).__name__}")
        if self.n_kv_heads != self.n_heads:
            raise ValueError(
                f"mha: nn.MultiheadAttention has no grouped key/value heads; loading needs "
                f"n_kv_heads == n_heads, got n_kv_heads={self.n_kv_heads}, n_heads={self.n_heads}"
            )
        if (mha.embed_dim, mha.num_heads, mha.kdim, mha.vdim) != (
            self.d_model,
            self.n_heads,
            self.kdim,
            self.vdim,
        ):
            raise ValueError(
                f"mha: expected embed_dim={self.d_model}, num_heads={self.n_heads}, "
                f"kdim={self.kdim}, vdim={self.vdim}; got {mha.embed_dim}, {mha.num_heads}, "
                f"{mha.kdim}, {mha.vdim}"
            )
        if mha.in_proj_weight is not None:
            w_q, w_k, w_v = mha.in_proj_weight.chunk(3)  # each (M, M)
        else:
            w_q, w_k, w_v = mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight
        self.q_proj.weight.copy_(w_q)
        self.k_proj.weight.copy_(w_k)
        self.v_proj.weight.copy_(w_v)
        self.out_proj.weight.copy_(mha.out_proj.weight)
        if (mha.in_proj_bias is not None) != (self.q_proj.bias is not None):
            raise ValueError("mha: bias setting differs from this module's")
        if mha.in_proj_bias is not None:
            b_q, b_k, b_v = mha.in_proj_bias.chunk(3)
            self.q_proj.bias.copy_(b_q)
            self.k_proj.bias.copy_(b_k)
            self.v_proj.bias.copy_(b_v)
            self.out_proj.bias.copy_(mha.out_proj.bias)
        return self

    @classmethod
    def from_torch(cls, mha: nn.MultiheadAttention) -> MultiHeadAttention:
        """Build a MultiHeadAttention with the sizes and weights of a torch one."""
        model = cls(
            mha.embed_dim,
            mha.num_heads,
            bias=mha.in_proj_bias is not None,
            kdim=mha.kdim,
            vdim=mha.vdim,
        )
        return model.load_torch_weights(mha)
