"""SmolLM2-135M-Instruct, a LLaMA-style decoder, with every attention map computed by the core.

One block, 30 times (pre-norm, residual around each half):
    h = x + out_proj(attention(RMSNorm(x)))    9 query heads share 3 key/value heads (GQA),
                                               q and k rotated by RoPE, causal mask
    y = h + down(silu(gate(RMSNorm(h))) * up(RMSNorm(h)))          SwiGLU feed-forward
logits = RMSNorm(y) @ embed.T                   tied: the input embedding is the output layer
RMSNorm(x) = x / sqrt(mean(x^2) + eps) * weight    (no mean subtracted, no bias)

The attention is the core's MultiHeadAttention(n_kv_heads=3): the model hands it RoPE for the
tokens' positions (one rotation function per forward pass), the mask and the attention
function, and each block returns what it computed (q and k before and after RoPE, v, weights,
each head's output) in `out.layers`; hooks and ablation work as .blocks describes.

The weights come from a GGUF file. Its q and k rows are ordered for RoPE's interleaved pairs
(2i, 2i + 1), so the rotation uses layout="interleaved"; the attention weights equal those of
Hugging Face's model, which reorders the rows and rotates halves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..._checks import check_mask
from ...masks import causal_mask
from ...multihead import AttentionFn, MultiHeadAttention, MultiHeadResult
from ...positional import apply_rope
from . import points
from .blocks import (
    Emit,
    Hook,
    ModelOutput,
    ModelSizes,
    PretrainedModel,
    StackRun,
    prepare_hooks,
    run_blocks,
)
from .checks import check_ids


@dataclass(frozen=True)
class SmolLM2Config(ModelSizes):
    """Sizes of a LLaMA-style decoder. SmolLM2-135M: vocab_size 49152, d_model 576, 30 layers,
    9 heads sharing 3 key/value heads, d_ff 1536 (the defaults below are its own)."""

    n_kv_heads: int = 3  # Hkv, dividing H
    rope_base: float = 100000.0
    norm_eps: float = 1e-5
    max_seq_len: int = 8192

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
class CausalLMOutput(ModelOutput):
    """What one forward pass of the decoder computed: `layers` (q, k, v, weights, heads of each
    layer), `hidden_states`, `attentions` (each layer's weights), and:"""

    logits: Tensor  # (B, T, V) scores for the token after each position; (B, 1, V) if last_only
    cache: KVCache | None  # keys/values up to this call's last token, if use_cache


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight, over the last dim."""

    def __init__(self, d_model: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


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
    """Pre-norm block: x + attention(norm(x)), then + feed_forward(norm(.)).

    The attention is the core's MultiHeadAttention with H query heads sharing Hkv key/value
    heads (grouped-query attention), RoPE passed in as its `rope` step, no biases.
    """

    def __init__(self, cfg: SmolLM2Config) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.n_kv_heads, bias=False)
        self.ffn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.ffn = SwiGLU(cfg)

    def forward(self, x: Tensor, emit: Emit, **attn: Any) -> tuple[Tensor, MultiHeadResult]:
        """x (B, T, M) -> (output (B, T, M), what the attention computed), emitting the block's
        points; attn: the keywords of MultiHeadAttention.forward (mask, past_kv, rope, ...)."""
        a = self.attn(emit("attn_norm", self.attn_norm(x)), **emit.attention(attn))
        h = emit("resid_mid", x + emit("attn_out", a.output))  # (B, T, M)
        return h + emit("ffn", self.ffn(emit("ffn_norm", self.ffn_norm(h)))), a


class SmolLM2(PretrainedModel, family="smollm2", causal=True, rotary=True):
    """The decoder; build it with `load_pretrained("smollm2")` or `from_gguf_tensors`."""

    def __init__(self, cfg: SmolLM2Config) -> None:
        super().__init__(cfg)
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
        ablate: Iterable[tuple[int, int]] | None = None,
        hooks: Mapping[str, Hook] | None = None,
        attention_fn: AttentionFn | None = None,
        mask: Tensor | None = None,
        rope_layout: str = "interleaved",
    ) -> CausalLMOutput:
        """Next-token logits for every position of `ids`, with what every layer computed.

        Args:
            ids: (B, T) token ids.
            cache: keys/values of earlier tokens (from a previous call with use_cache=True);
                `ids` then holds only the new tokens, at positions cache.length onwards.
            use_cache: return the keys/values up to the last token in `.cache`.
            need_weights: keep each layer's result (q, k, v, weights, heads); False saves
                memory when generating.
            last_only: compute logits for the last position only, (B, 1, V): all that
                generation needs, and the output layer is a quarter of the work.
            ablate: (layer, head) pairs whose head output is zeroed; None or empty changes
                nothing, bit for bit. A shorthand for heads hooks.
            hooks: {hook point: fn} to read or replace activations (see .blocks; the names
                are model.hook_names()). None or {} is the plain forward pass, bit for bit.
            attention_fn: the attention function of every layer (see MultiHeadAttention):
                None is the core's scaled_dot_product_attention; attention.flash_attention,
                or a function of your own, fn(q, k, v, mask) -> output.
            mask: bool, (T, Tpast + T) or broadcasting to it, True = may attend, instead of
                the causal mask the model was trained with (an experiment: a sliding window,
                sinks, a removed key). None is the causal mask.
            rope_layout: which features RoPE pairs. The file's q and k rows are ordered for
                "interleaved"; "half" shows what rotating the wrong pairs does.

        Raises:
            TypeError / ValueError: ids not a (B, T) integer tensor of ids in [0, V), a cache
                of another batch size, bad `ablate` pairs or hooks, a mask of another shape or
                dtype, or an unknown rope_layout.
        """
        cfg = self.cfg
        past = 0 if cache is None else cache.length
        check_ids(ids, vocab_size=cfg.vocab_size, max_len=cfg.max_seq_len - past)
        if cache is not None and cache.keys[0].shape[0] != ids.shape[0]:
            raise ValueError(
                f"cache: holds a batch of {cache.keys[0].shape[0]}, got ids of batch {ids.shape[0]}"
            )
        run = self.run_from(
            0,
            self.embed(ids),  # (B, T, M)
            hooks=prepare_hooks(self, hooks, ablate),
            keep=points.DEFAULT if need_weights else (),
            cache=cache,
            attention_fn=attention_fn,
            mask=mask,
            rope_layout=rope_layout,
        )
        x = run.output[:, -1:] if last_only else run.output  # (B, T, M) or (B, 1, M)
        logits = self.head(x)  # (B, T, V)
        return CausalLMOutput(
            layers=run.layers,
            hidden_states=run.hidden_states,
            logits=logits,
            cache=KVCache(*zip(*run.kv, strict=True)) if use_cache else None,  # keys, values
        )

    def run_from(
        self,
        layer: int,
        x: Tensor,
        *,
        hooks: Mapping[str, Hook] | None = None,
        keep: Iterable[str] = (),
        cache: KVCache | None = None,
        attention_fn: AttentionFn | None = None,
        mask: Tensor | None = None,
        rope_layout: str = "interleaved",
    ) -> StackRun:
        """Blocks `layer` .. n_layers - 1 on the residual stream x (B, T, M) entering block
        `layer`: the forward pass from there (forward calls it with layer 0 and the embedded
        ids). In a causal model the blocks before `layer` do not depend on what comes after,
        so an intervention at `layer` may resume here from their output.

        hooks are named as in forward (blocks before `layer` are never reached); keep: the
        points each layer's result keeps (q_raw, ..., heads, resid_pre, ...: .points); cache,
        attention_fn, mask and rope_layout as forward takes them. Returns the blocks' StackRun
        (output, hidden states from `layer` on, the layer results, each layer's keys and values).
        """
        cfg = self.cfg
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < cfg.n_layers:
            raise ValueError(f"layer: expected an integer in [0, {cfg.n_layers}), got {layer!r}")
        keep, emitted = tuple(keep), (*points.ATTENTION, *points.hook_points(self.family))
        unknown = [p for p in keep if p not in emitted]
        if unknown:
            raise ValueError(f"keep: expected points among {list(emitted)}, got {unknown}")
        past = 0 if cache is None else cache.length
        t = x.shape[1]
        if mask is None:
            mask = causal_mask(t, past + t, offset=past, device=x.device)  # (T, Tpast + T)
        else:
            check_mask(mask, (t, past + t))
        if rope_layout not in ("half", "interleaved"):
            raise ValueError(f"rope_layout: expected 'half' or 'interleaved', got {rope_layout!r}")
        positions = torch.arange(past, past + t, device=x.device)  # (T,)
        pasts = None if cache is None else tuple(zip(cache.keys, cache.values, strict=True))
        return run_blocks(
            self.layers[layer:],
            x,
            prepare_hooks(self, hooks, None),
            keep=keep,
            first=layer,
            pasts=None if pasts is None else pasts[layer:],
            mask=mask,
            rope=partial(apply_rope, positions=positions, base=cfg.rope_base, layout=rope_layout),
            attention_fn=attention_fn,
            check_finite=False,  # the inputs are finite by construction (checked ids)
        )

    def head(self, x: Tensor) -> Tensor:
        """The output layer: the last block's output (B, T, M) -> next-token logits (B, T, V).

        Row by row, so a long text's logits may be made a few positions at a time, each row
        bit for bit the same (the forward pass calls this on every position at once)."""
        return F.linear(self.norm(x), self.embed.weight)  # (B, T, V), tied weights

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
            "attn_output": "attn.out_proj",
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
        return cls._from_named_tensors(cfg, tensors, names)


def plain_weights(model: SmolLM2) -> dict[str, Tensor]:
    """The model's weights as a plain dict of float32 tensors, each used as `x @ w`:

        embed                (V, M)        row i is token i's vector; also the output layer (tied)
        norm                 (M,)          the final RMSNorm's weight
        blocks.{i}.attn_norm (M,)          i = 0 .. n_layers - 1
        blocks.{i}.w_q       (M, H * D)    q = x @ w_q; D = M / H, columns ordered head by head,
        blocks.{i}.w_k       (M, Hkv * D)    each head's D columns for RoPE's interleaved pairs
        blocks.{i}.w_v       (M, Hkv * D)
        blocks.{i}.w_o       (H * D, M)    output = merged heads @ w_o
        blocks.{i}.ffn_norm  (M,)
        blocks.{i}.w_gate    (M, F)        F = d_ff
        blocks.{i}.w_up      (M, F)
        blocks.{i}.w_down    (F, M)

    The tensors are views of the model's own (transposed nn.Linear weights, no copy): read
    them, do not change them in place.
    """
    weights = {"embed": model.embed.weight, "norm": model.norm.weight}
    for i, block in enumerate(model.layers):
        attn, ffn = block.attn, block.ffn
        own = {
            "attn_norm": block.attn_norm.weight,
            "w_q": attn.q_proj.weight.T,
            "w_k": attn.k_proj.weight.T,
            "w_v": attn.v_proj.weight.T,
            "w_o": attn.out_proj.weight.T,
            "ffn_norm": block.ffn_norm.weight,
            "w_gate": ffn.gate.weight.T,
            "w_up": ffn.up.weight.T,
            "w_down": ffn.down.weight.T,
        }
        weights |= {points.block_key(i, name): w for name, w in own.items()}
    return weights
