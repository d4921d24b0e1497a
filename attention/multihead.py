"""Multi-head attention: one big projection per role, split into heads, attend, merge, project.

q, k, v = X W_q, X W_k, X W_v                       (B, T, M) each
split:    (B, T, M) -> (B, T, H, D) -> (B, H, T, D)   D = M / H
rotate:   q, k = rope(q), rope(k)                   only with `rope` (positions by rotation)
per head: softmax(q k^T / sqrt(D)) v                (B, H, Tq, D), or any `attention_fn`
merge:    (B, H, Tq, D) -> (B, Tq, H*D); output = merged W_o
With n_kv_heads = Hkv < H (grouped-query attention) W_k, W_v project to Hkv * D only: each
key/value head serves H / Hkv query heads and the key/value cache shrinks by the same factor.

The steps a pretrained model changes are arguments of forward, so that LLaMA-style and
BERT-style layers are this one module: `rope` rotates q and k between projection and
attention, `attention_fn` replaces the attention function (FlashAttention, or a learner's
own), `head_hook` reads or replaces each head's output before the heads are merged.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ._checks import check_batch, check_divisible, check_sizes, check_tensor, divisors, shape_str
from .functional import scaled_dot_product_attention

AttentionFn = Callable[[Tensor, Tensor, Tensor, Tensor | None], object]
"""fn(q (B, H, Tq, D), k, v (B, Hkv, Tk, D), mask or None) -> (B, H, Tq, Dv) output, or a
result with `.output` (and `.scores`, `.weights`, `.fully_masked` when it has them). The mask
broadcasts to (B, H, Tq, Tk); k and v keep their Hkv heads (repeat_kv gives each query head one)."""


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
    """Every intermediate of one multi-head attention call; scores, weights and fully_masked are
    None when an `attention_fn` does not return them (flash_attention never holds weights)."""

    q: Tensor  # (B, H, Tq, D) as attended: after rope, if any
    k: Tensor  # (B, Hkv, Tk, D) including any cached keys, after rope; Hkv = H unless grouped
    v: Tensor  # (B, Hkv, Tk, D)
    scores: Tensor | None  # (B, H, Tq, Tk) scaled; masked entries are -inf
    weights: Tensor | None  # (B, H, Tq, Tk)
    fully_masked: Tensor | None  # (B, H, Tq) bool
    heads: Tensor  # (B, H, Tq, D) each head's output, as merged (after any head_hook)
    concat: Tensor  # (B, Tq, M) heads merged, before the output projection
    output: Tensor  # (B, Tq, M)
    q_raw: Tensor  # (B, H, Tq, D) before rope; q itself without rope
    k_raw: Tensor  # (B, Hkv, Tnew, D) the keys this call projected, before rope; no cache


class MultiHeadAttention(nn.Module):
    """Self- and cross-attention by the steps above; n_heads divides d_model, n_kv_heads (default
    n_heads) divides n_heads; kdim, vdim: key/value input widths (default d_model)."""

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
        check_sizes(d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads, kdim=kdim, vdim=vdim)
        check_divisible("d_model", d_model, n_heads)
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if n_heads % n_kv_heads:
            raise ValueError(
                f"n_kv_heads={n_kv_heads} does not divide n_heads={n_heads}; "
                f"choose n_kv_heads from {divisors(n_heads)}"
            )
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.n_kv_heads = n_kv_heads
        self.kdim = d_model if kdim is None else kdim  # 0 was refused, not read as the default
        self.vdim = d_model if vdim is None else vdim
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
        rope: Callable[[Tensor], Tensor] | None = None,
        attention_fn: AttentionFn | None = None,
        head_hook: Callable[[Tensor], Tensor] | None = None,
        check_finite: bool = True,
    ) -> MultiHeadResult:
        """Attend from query (B, Tq, M) to key (B, Tk, kdim) / value (B, Tk, vdim).

        key=None means self-attention (key = value = query). `mask` broadcasts to (B, Tq, Tk),
        shared by all heads, or is 4-D (B, H, Tq, Tk). `past_kv`: the projected (k, v) of earlier
        decoding steps (B, Hkv, Tpast, D), to which the new ones are appended (a key/value cache);
        `attend(q, k, v, mask)` reuses keys and values with no projection. `rope` rotates q and the
        new k (e.g. apply_rope with the tokens' positions) before the cache and the attention.
        check_finite=False skips the NaN/inf scans; for attention_fn and head_hook see attend.
        """
        key, value = self._check_inputs(query, key, value, past_kv, check_finite)
        q_raw = split_heads(self.q_proj(query), self.n_heads)  # (B, H, Tq, D)
        k_raw = split_heads(self.k_proj(key), self.n_kv_heads)  # (B, Hkv, Tk, D)
        v = split_heads(self.v_proj(value), self.n_kv_heads)  # (B, Hkv, Tk, D)
        q, k = (q_raw, k_raw) if rope is None else (rope(q_raw), rope(k_raw))
        if past_kv is not None:
            k = torch.cat([past_kv[0], k], dim=2)  # (B, Hkv, Tpast + Tk, D)
            v = torch.cat([past_kv[1], v], dim=2)
        steps = {"attention_fn": attention_fn, "head_hook": head_hook, "check_finite": check_finite}
        return self.attend(q, k, v, mask, raw=(q_raw, k_raw), **steps)

    def _check_inputs(self, query, key, value, past_kv, finite: bool) -> tuple[Tensor, Tensor]:
        """Check forward's inputs against the layer's sizes -> (key, value); self: query twice."""
        check_batch("query", query, self.d_model, "d_model=", finite=finite)
        w = self.q_proj.weight.dtype
        for name, x in (("query", query), ("key", key), ("value", value)):
            if x is not None and x.dtype != w:
                raise TypeError(
                    f"{name}: expected the layer's dtype {w}, got {x.dtype}; convert the input "
                    f"(e.g. {name}.to({w})) or the layer (layer.to({x.dtype}))"
                )
        if key is None and value is None:
            key = value = query
        elif key is None or value is None:
            raise ValueError("key and value: give both (cross-attention) or neither (self)")
        else:
            for name, x, width in (("key", key, self.kdim), ("value", value, self.vdim)):
                check_batch(name, x, width, finite=finite)
                if x.shape[0] != query.shape[0]:
                    raise ValueError(
                        f"{name}: batch {x.shape[0]} differs from query's batch {query.shape[0]}"
                    )
            if key.shape[1] != value.shape[1]:
                raise ValueError(
                    f"value: length {value.shape[1]} differs from key's length {key.shape[1]}"
                )
        b, hkv, d = query.shape[0], self.n_kv_heads, self.d_head  # the new k is (B, Hkv, Tk, D)
        for name, past in [] if past_kv is None else zip("kv", past_kv, strict=True):
            if past.dim() != 4 or (past.shape[0], past.shape[1], past.shape[3]) != (b, hkv, d):
                raise ValueError(
                    f"past_kv: cached {name} must be (B, Hkv, Tpast, D) = ({b}, {hkv}, "
                    f"Tpast, {d}), got {shape_str(past.shape)}"
                )
        return key, value

    def attend(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        mask: Tensor | None,
        *,
        attention_fn: AttentionFn | None = None,
        head_hook: Callable[[Tensor], Tensor] | None = None,
        check_finite: bool = True,
        raw: tuple[Tensor, Tensor] | None = None,
    ) -> MultiHeadResult:
        """Attend per head over projected q (B, H, Tq, D), k, v (B, Hkv, Tk, D); merge; project.

        attention_fn: None is scaled_dot_product_attention; else see AttentionFn.
        head_hook: maps the heads' outputs (B, H, Tq, D) to a tensor of the same shape before
            they are merged: zero a head to silence it, or patch in another run's.
        raw: (q_raw, k_raw), q and k before rope (None: q and k themselves).
        """
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(-3)  # (B, 1, Tq, Tk): one mask for all heads
        if attention_fn is None:
            att = scaled_dot_product_attention(q, k, v, mask, check_finite=check_finite)
            heads = att.output  # (B, H, Tq, D)
        else:
            att = attention_fn(q, k, v, mask)
            heads = att if isinstance(att, Tensor) else att.output  # (B, H, Tq, Dv)
            want = (*q.shape[:-1], v.shape[-1])
            if tuple(heads.shape) != want:
                raise ValueError(
                    f"attention_fn: expected an output of shape (B, H, Tq, Dv) = "
                    f"{shape_str(want)}, got {shape_str(heads.shape)}"
                )
        if head_hook is not None:
            heads = head_hook(heads)
        concat = merge_heads(heads)  # (B, Tq, M)
        output = self.out_proj(concat)  # (B, Tq, M)
        maps = [getattr(att, n, None) for n in ("scores", "weights", "fully_masked")]
        q_raw, k_raw = (q, k) if raw is None else raw
        return MultiHeadResult(q, k, v, *maps, heads, concat, output, q_raw, k_raw)

    @torch.no_grad()
    def load_torch_weights(self, mha: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy the weights of a torch.nn.MultiheadAttention with the same sizes into this one."""
        if not isinstance(mha, nn.MultiheadAttention):
            raise TypeError(f"mha: expected nn.MultiheadAttention, got {type(mha).__name__}")
        if self.n_kv_heads != self.n_heads:
            raise ValueError(
                f"mha: nn.MultiheadAttention has no grouped key/value heads; loading needs "
                f"n_kv_heads == n_heads, got n_kv_heads={self.n_kv_heads}, n_heads={self.n_heads}"
            )
        sizes = (mha.embed_dim, mha.num_heads, mha.kdim, mha.vdim)
        if sizes != (self.d_model, self.n_heads, self.kdim, self.vdim):
            raise ValueError(
                f"mha: expected embed_dim={self.d_model}, num_heads={self.n_heads}, "
                f"kdim={self.kdim}, vdim={self.vdim}; got {mha.embed_dim}, {mha.num_heads}, "
                f"{mha.kdim}, {mha.vdim}"
            )
        weights = (mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight)  # W_q, W_k, W_v
        if mha.in_proj_weight is not None:  # packed as one (3M, M) matrix
            weights = mha.in_proj_weight.chunk(3)
        if (mha.in_proj_bias is not None) != (self.q_proj.bias is not None):
            raise ValueError("mha: bias setting differs from this module's")
        biases = (None,) * 3 if mha.in_proj_bias is None else mha.in_proj_bias.chunk(3)
        weights, biases = (*weights, mha.out_proj.weight), (*biases, mha.out_proj.bias)
        projections = (self.q_proj, self.k_proj, self.v_proj, self.out_proj)
        for proj, w, b in zip(projections, weights, biases, strict=True):
            proj.weight.copy_(w)
            if b is not None:
                proj.bias.copy_(b)
        return self

    @classmethod
    def from_torch(cls, mha: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Build a MultiHeadAttention with the sizes and weights of a torch one."""
        bias = mha.in_proj_bias is not None
        model = cls(mha.embed_dim, mha.num_heads, bias=bias, kdim=mha.kdim, vdim=mha.vdim)
        return model.load_torch_weights(mha)
