"""transformers' LlamaForCausalLM around the course's SmolLM2 weights: the tests' reference.

    hf = reference_llama(model)            # model: a loaded SmolLM2
    hf(ids, output_attentions=True)        # .logits (B, T, V), .attentions: L x (B, H, T, T)

This is a test-only reference, never the course's forward pass: an independent implementation
(Hugging Face's Llama code: its RMSNorm, its RoPE on rotated halves, its grouped-query attention,
its SwiGLU) computing from the same float32 weights, so a lesson can check the course's logits
and maps against it without a second copy of the model in memory. It shares the course's
tensors (embedding, norms, v/o/gate/up/down projections: no copy); only q_proj and k_proj are
copies, with their rows reordered, because the GGUF file (and the course) order each head's
q/k rows for RoPE's interleaved pairs (2i, 2i + 1) while transformers' Llama rotates halves
(i, i + D/2). That is the reordering transformers itself applies when it reads a GGUF file.

It checks the computation, not the reading of the file: tests/models/test_pretrained.py checks that
its logits equal those of transformers' model loaded from the GGUF file by transformers' own
reader, and tests/models/test_pretrained.py that the weights are the same, bit for bit.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from .smollm2 import SmolLM2


def half_layout_rows(weight: Tensor, n_heads: int, out: Tensor | None = None) -> Tensor:
    """Reorder a q or k projection's rows from interleaved RoPE pairs to rotated halves.

    Row 2i + j of each head (pair i, member j) goes to row j * D/2 + i: the inverse of
    llama.cpp's permutation when it writes a GGUF file. Writes into `out` (a contiguous
    tensor of weight's shape) if given, else into a new tensor, and returns it.

    Shapes:
        weight (n_heads * D, M) -> (n_heads * D, M)
    """
    rows, m = weight.shape
    d = rows // n_heads
    out = torch.empty_like(weight, memory_format=torch.contiguous_format) if out is None else out
    pairs = weight.detach().reshape(n_heads, d // 2, 2, m)  # (H, D/2, 2, M) pair i, member j
    out.view(n_heads, 2, d // 2, m).copy_(pairs.transpose(1, 2))  # (H, 2, D/2, M) halves
    return out


def reference_llama(model: SmolLM2) -> Any:
    """Build transformers' LlamaForCausalLM (eager attention) on the course model's weights.

    Args:
        model: a SmolLM2 (from load_pretrained("smollm2")); its tensors are shared, not
            copied, except q_proj and k_proj (reordered copies, about 53 MB for SmolLM2-135M).

    Returns:
        A transformers.LlamaForCausalLM in eval mode without gradients; call it with
        output_attentions=True for the maps. Do not change its weights in place: they are the
        course model's.

    Raises:
        TypeError: model is not a SmolLM2.
        ImportError: transformers is not installed.
    """
    if not isinstance(model, SmolLM2):
        raise TypeError(
            f"model: expected a SmolLM2 (load_pretrained('smollm2')), got {type(model).__name__}"
        )
    try:
        import transformers
    except ImportError as err:
        raise ImportError(
            "reference_llama needs transformers, the tests' reference; "
            "`pip install transformers gguf` adds it (make lab does)"
        ) from err
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    cfg = model.cfg
    d_head = cfg.d_model // cfg.n_heads
    q_rows, k_rows = cfg.n_heads * d_head, cfg.n_kv_heads * d_head
    config = transformers.LlamaConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        intermediate_size=cfg.d_ff,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_kv_heads,
        head_dim=d_head,
        hidden_act="silu",
        max_position_embeddings=cfg.max_seq_len,
        rms_norm_eps=cfg.norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": cfg.rope_base},
        tie_word_embeddings=True,
        attention_bias=False,
        mlp_bias=False,
        dtype=torch.float32,
    )
    config._attn_implementation = "eager"  # the maps are returned only by eager attention
    with torch.device("meta"):  # no memory, no random initialisation
        hf = transformers.LlamaForCausalLM(config)

    # the reordered q/k rows of every layer in one buffer: one large allocation, which the
    # allocator gives back to the system when the reference is deleted (small ones linger)
    buffer = torch.empty(cfg.n_layers, q_rows + k_rows, cfg.d_model)  # (L, (H + Hkv) * D, M)

    embed = model.embed.weight.detach()
    state = {
        "model.embed_tokens.weight": embed,
        "lm_head.weight": embed,  # tied, as in the course model
        "model.norm.weight": model.norm.weight.detach(),
    }
    for i, block in enumerate(model.layers):
        attn, ffn, at = block.attn, block.ffn, f"model.layers.{i}."
        state |= {
            at + "input_layernorm.weight": block.attn_norm.weight.detach(),
            at + "self_attn.q_proj.weight": half_layout_rows(
                attn.q_proj.weight, cfg.n_heads, out=buffer[i, :q_rows]
            ),
            at + "self_attn.k_proj.weight": half_layout_rows(
                attn.k_proj.weight, cfg.n_kv_heads, out=buffer[i, q_rows:]
            ),
            at + "self_attn.v_proj.weight": attn.v_proj.weight.detach(),
            at + "self_attn.o_proj.weight": attn.out_proj.weight.detach(),
            at + "post_attention_layernorm.weight": block.ffn_norm.weight.detach(),
            at + "mlp.gate_proj.weight": ffn.gate.weight.detach(),
            at + "mlp.up_proj.weight": ffn.up.weight.detach(),
            at + "mlp.down_proj.weight": ffn.down.weight.detach(),
        }
    hf.load_state_dict(state, strict=True, assign=True)
    hf.lm_head.weight = hf.model.embed_tokens.weight  # tied: one parameter, as transformers ties
    # the rotary tables are a buffer outside the state dict: compute them for real
    hf.model.rotary_emb = LlamaRotaryEmbedding(config)
    meta = [name for name, t in [*hf.named_parameters(), *hf.named_buffers()] if t.is_meta]
    assert not meta, f"left on the meta device: {meta[:3]}"
    return hf.eval().requires_grad_(False)
