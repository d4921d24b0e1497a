"""SmolLM2-135M-Instruct, a LLaMA-style decoder, with every attention map computed by the core.

One block, 30 times (pre-norm, residual around each half):
    h = x + o_proj(attention(RMSNorm(x)))      9 query heads share 3 key/value heads (GQA),
                                               q and k rotated by RoPE, causal mask
    y = h + down(silu(gate(RMSNorm(h))) * up(RMSNorm(h)))          SwiGLU feed-forward
logits = RMSNorm(y) @ embed.T                   tied: the input embedding is the output layer
RMSNorm(x) = x / sqrt(mean(x^2) + eps) * weight    (no mean subtracted, no bias)

The weights come from a GGUF file. Its q and k rows are ordered for RoPE's interleaved pairs
(2i, 2i + 1), so the rotation uses layout="interleaved"; the attention weights equal those of
Hugging Face's model, which reorders the rows and rotates halves.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..._checks import check_mask
from ...functional import scaled_dot_product_attention
from ...masks import causal_mask
from ...multihead import merge_heads, split_heads
from ...positional import apply_rope
from .checks import check_ids, heads_to_keep


@dataclass(frozen=True)
class SmolLM2Config:
    """Sizes of a LLaMA-style decoder (defaults: SmolLM2-135M)."""

    vocab_size: int = 49152
    d_model: int = 576
    n_layers: int = 30
    n_heads: int = 9
    n_kv_heads: int = 3
    d_ff: int = 1536
    rope_base: float = 100000.0
    norm_eps: float = 1e-5
    max_seq_len: int = 8192

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @classmethod
    def from_gguf(cls, metadata: dict[str, object]) -> SmolLM2Config:
        """Read the sizes from a GGUF file's llama.* metadata."""
        arch = metadata["general.architecture"]
        if arch != "llama":
            raise ValueError(f"expected a GGUF file of a 'llama' model, got {arch!r}")
        return cls(
            vocab_size=len(metadata["tokenizer.ggml.tokens"]),
            d_model=metadata["llama.embedding_length"],
            n_layers=metadata["llama.block_count"],
            n_heads=metadata["llama.attention.head_count"],
            n_kv_heads=metadata["llama.attention.head_count_kv"],
            d_ff=metadata["llama.feed_forward_length"],
            rope_base=float(metadata["llama.rope.freq_base"]),
            norm_eps=float(metadata["llama.attention.layer_norm_rms_epsilon"]),
            max_seq_len=metadata["llama.context_length"],
        )


@dataclass(frozen=True)
class KVCache:
    """Keys (after RoPE) and values of the tokens seen so far, one pair per layer."""

    keys: tuple[Tensor, ...]  # n_layers x (B, Hkv, Tpast, D)
    values: tuple[Tensor, ...]  # n_layers x (B, Hkv, Tpast, D)

    @property
    def length(self) -> int:
        """How many positions are cached (Tpast)."""
        return self.keys[0].shape[2]


@dataclass(frozen=True)
class CausalLMOutput:
    """What one forward pass of the decoder computed."""

    logits: Tensor  # (B, T, V) scores for the token after each position; (B, 1, V) if last_only
    attentions: tuple[Tensor, ...]  # n_layers x (B, H, T, Tpast + T); () if need_weights=False
    hidden_states: tuple[Tensor, ...]  # n_layers + 1 x (B, T, M): embeddings, then each block
    cache: KVCache | None  # keys/values up to this call's last token, if use_cache


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight, over the last dim."""

    def __init__(self, d_model: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class GroupedQueryAttention(nn.Module):
    """Causal self-attention whose H query heads share Hkv key/value heads, with RoPE."""

    def __init__(self, cfg: SmolLM2Config) -> None:
        super().__init__()
        self.cfg = cfg
        d_kv = cfg.n_kv_heads * cfg.d_head
        self.q_proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.k_proj = nn.Linear(cfg.d_model, d_kv, bias=False)
        self.v_proj = nn.Linear(cfg.d_model, d_kv, bias=False)
        self.o_proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False)

    def forward(
        self,
        x: Tensor,
        positions: Tensor,
        mask: Tensor,
        past: tuple[Tensor, Tensor] | None,
        keep: Tensor | None,
        rope_layout: str = "interleaved",
    ) -> tuple[Tensor, Tensor, tuple[Tensor, Tensor]]:
        """x (B, T, M) -> (output (B, T, M), weights (B, H, T, Tk), (k, v) incl. the past)."""
        cfg = self.cfg
        rope = {"base": cfg.rope_base, "layout": rope_layout}
        q = apply_rope(split_heads(self.q_proj(x), cfg.n_heads), positions, **rope)  # (B,H,T,D)
        k = apply_rope(split_heads(self.k_proj(x), cfg.n_kv_heads), positions, **rope)  # Hkv
        v = split_heads(self.v_proj(x), cfg.n_kv_heads)  # (B, Hkv, T, D)
        if past is not None:
            k = torch.cat([past[0], k], dim=2)  # (B, Hkv, Tpast + T, D)
            v = torch.cat([past[1], v], dim=2)
        # GQA: the core shares the kv heads; the inputs are finite by construction (checked ids)
        att = scaled_dot_product_attention(q, k, v, mask, check_finite=False)
        heads = att.output  # (B, H, T, D)
        if keep is not None:  # ablation: silence chosen heads before they are mixed
            heads = heads * keep.to(heads)[:, None, None]
        return self.o_proj(merge_heads(heads)), att.weights, (k, v)  # (B, T, M)


class SwiGLU(nn.Module):
    """down(silu(gate(x)) * up(x)): a gated feed-forward layer."""

    def __init__(self, cfg: SmolLM2Config) -> None:
        super().__init__()
        self.gate = nn.Linear(cfg.d_model, cfg.d_ff, bias=False)
        self.up = nn.Linear(cfg.d_model, cfg.d_ff, bias=False)
        self.down = nn.Linear(cfg.d_ff, cfg.d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))  # (B, T, M)


class DecoderBlock(nn.Module):
    """Pre-norm block: x + attention(norm(x)), then + feed_forward(norm(.))."""

    def __init__(self, cfg: SmolLM2Config) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = GroupedQueryAttention(cfg)
        self.ffn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.ffn = SwiGLU(cfg)

    def forward(
        self,
        x: Tensor,
        positions: Tensor,
        mask: Tensor,
        past: tuple[Tensor, Tensor] | None,
        keep: Tensor | None,
        rope_layout: str = "interleaved",
    ) -> tuple[Tensor, Tensor, tuple[Tensor, Tensor]]:
        """x (B, T, M) -> (output (B, T, M), weights (B, H, T, Tk), (k, v)); see the attention."""
        a, weights, kv = self.attn(self.attn_norm(x), positions, mask, past, keep, rope_layout)
        h = x + a  # (B, T, M)
        return h + self.ffn(self.ffn_norm(h)), weights, kv


class SmolLM2(nn.Module):
    """The decoder; build it with `load_pretrained("smollm2")` or `from_gguf_tensors`."""

    def __init__(self, cfg: SmolLM2Config) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(DecoderBlock(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)

    @torch.no_grad()
    def forward(
        self,
        ids: Tensor,
        *,
        cache: KVCache | None = None,
        use_cache: bool = False,
        need_weights: bool = True,
        last_only: bool = False,
        ablate: set[tuple[int, int]] | None = None,
        mask: Tensor | None = None,
        rope_layout: str = "interleaved",
    ) -> CausalLMOutput:
        """Next-token logits for every position of `ids`, with every layer's attention maps.

        Args:
            ids: (B, T) token ids.
            cache: keys/values of earlier tokens (from a previous call with use_cache=True);
                `ids` then holds only the new tokens, at positions cache.length onwards.
            use_cache: return the keys/values up to the last token in `.cache`.
            need_weights: keep the attention maps (False saves memory when generating).
            last_only: compute logits for the last position only, (B, 1, V): all that
                generation needs, and the output layer is a quarter of the work.
            ablate: (layer, head) pairs whose head output is zeroed; None or empty changes
                nothing, bit for bit.
            mask: bool, (T, Tpast + T) or broadcasting to it, True = may attend, instead of
                the causal mask the model was trained with (an experiment: a sliding window,
                sinks, a removed key). None is the causal mask.
            rope_layout: which features RoPE pairs. The file's q and k rows are ordered for
                "interleaved"; "half" shows what rotating the wrong pairs does.

        Raises:
            TypeError / ValueError: ids not a (B, T) integer tensor of ids in [0, V), a cache
                of another batch size, bad `ablate` pairs, a mask of another shape or dtype,
                or an unknown rope_layout.
        """
        cfg = self.cfg
        past = 0 if cache is None else cache.length
        check_ids(ids, vocab_size=cfg.vocab_size, max_len=cfg.max_seq_len - past)
        if cache is not None and cache.keys[0].shape[0] != ids.shape[0]:
            raise ValueError(
                f"cache: holds a batch of {cache.keys[0].shape[0]}, got ids of batch {ids.shape[0]}"
            )
        keep = heads_to_keep(ablate, cfg.n_layers, cfg.n_heads)
        t = ids.shape[1]
        positions = torch.arange(past, past + t, device=ids.device)  # (T,)
        if mask is None:
            mask = causal_mask(t, past + t, offset=past, device=ids.device)  # (T, Tpast + T)
        else:
            check_mask(mask, (t, past + t))
        if rope_layout not in ("half", "interleaved"):
            raise ValueError(f"rope_layout: expected 'half' or 'interleaved', got {rope_layout!r}")
        x = self.embed(ids)  # (B, T, M)
        hidden, maps, keys, values = [x], [], [], []
        for i, layer in enumerate(self.layers):
            layer_past = None if cache is None else (cache.keys[i], cache.values[i])
            x, weights, (k, v) = layer(x, positions, mask, layer_past, keep.get(i), rope_layout)
            hidden.append(x)
            if need_weights:
                maps.append(weights)  # (B, H, T, Tpast + T)
            keys.append(k)
            values.append(v)
        if last_only:
            x = x[:, -1:]  # (B, 1, M)
        logits = F.linear(self.norm(x), self.embed.weight)  # (B, T, V), tied weights
        return CausalLMOutput(
            logits=logits,
            attentions=tuple(maps),
            hidden_states=tuple(hidden),
            cache=KVCache(tuple(keys), tuple(values)) if use_cache else None,
        )

    @classmethod
    def from_gguf_tensors(cls, cfg: SmolLM2Config, tensors: dict[str, Tensor]) -> SmolLM2:
        """Build the model around GGUF-named float32 tensors without copying them.

        The modules are made on the meta device (no memory, no random init) and then take
        the given tensors as their parameters: one copy of the weights in memory.
        """
        names = {"token_embd.weight": "embed.weight", "output_norm.weight": "norm.weight"}
        parts = {
            "attn_norm": "attn_norm",
            "attn_q": "attn.q_proj",
            "attn_k": "attn.k_proj",
            "attn_v": "attn.v_proj",
            "attn_output": "attn.o_proj",
            "ffn_norm": "ffn_norm",
            "ffn_gate": "ffn.gate",
            "ffn_up": "ffn.up",
            "ffn_down": "ffn.down",
        }
        for i in range(cfg.n_layers):
            for gguf_name, ours in parts.items():
                names[f"blk.{i}.{gguf_name}.weight"] = f"layers.{i}.{ours}.weight"
        output = tensors.get("output.weight")
        if output is not None and not torch.equal(output, tensors["token_embd.weight"]):
            raise ValueError("expected tied embeddings (no separate output.weight)")
        missing = sorted(set(names) - set(tensors))
        if missing:
            raise ValueError(f"tensors: missing {missing[:3]} ({len(missing)} in all)")
        with torch.device("meta"):
            model = cls(cfg)
        state = {ours: tensors[theirs] for theirs, ours in names.items()}
        model.load_state_dict(state, strict=True, assign=True)
        return model.eval().requires_grad_(False)
