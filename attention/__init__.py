"""attention: a small, exact attention core that returns every intermediate.

Shape legend (batch first, like PyTorch):
    B batch, H heads, Tq query positions, Tk key positions,
    D per-head width (d_head), Dv value width, M d_model = H * D.
    Hkv key/value heads: H, or fewer in grouped-query attention (query head h uses h // (H/Hkv)).

Mask convention (the same as torch.nn.functional.scaled_dot_product_attention):
    a bool tensor, True = may attend, broadcastable to (..., Tq, Tk). Masked scores become -inf
    before the softmax; a query row whose keys are all masked gets weights 0 and output 0, never
    NaN, and `AttentionResult.fully_masked` says which rows these are. Converters translate to
    and from nn.MultiheadAttention's key_padding_mask (True = ignore), additive 0/-inf float
    masks and d2l's valid_lens.

Reading order: functional (the attention function), masks, additive, pooling (learned queries,
memory slots, the tanh layer), multihead, positional, layers (feed-forward, encoder and decoder
layers), transformer, flash (the same attention tile by tile in O(T) memory), memory (KV cache
bytes, naive vs flash memory traffic).
After 2024: latent (multi-head latent attention, DeepSeek's MLA), linear (linear attention as an
RNN, the gated delta rule), differential (one softmax map minus another), sparse (top-k),
paged (a block table over a paged KV cache).
Every public function first calls the input checks of _checks, then reads as its maths.
"""

# ruff: noqa: F401, I001 - the imports are the public API (__all__ below), one line or two a module
from .additive import AdditiveAttention
from .differential import DifferentialResult, differential_attention, differential_lambda
from .differential import lambda_init
from .flash import FlashResult, FlashStep, SoftmaxState, flash_attention, flash_attention_steps
from .flash import online_softmax, online_softmax_steps
from .functional import AttentionResult, masked_softmax, repeat_kv, scaled_dot_product_attention
from .latent import LatentResult, MultiHeadLatentAttention
from .layers import DecoderLayer, DecoderLayerResult, EncoderLayer, EncoderLayerResult, FeedForward
from .linear import LinearAttentionResult, delta_rule, delta_rule_recurrent, elu_plus_one
from .linear import linear_attention, linear_attention_recurrent
from .masks import causal_mask, from_additive_mask, from_key_padding_mask, mask_to_valid_lens
from .masks import padding_mask, sliding_window_mask, to_additive_mask, to_key_padding_mask
from .masks import valid_lens_to_mask
from .memory import MemoryTraffic, cache_bytes, cache_bytes_by_kind, flash_attention_traffic
from .memory import kv_cache_bytes, linear_state_bytes, mla_cache_bytes, naive_attention_traffic
from .multihead import MultiHeadAttention, MultiHeadResult, divisors, merge_heads, split_heads
from .paged import PagedKVCache, PagingMemory, paged_attention, paging_memory
from .pooling import AttentionPool, MemorySlots, PoolingResult, TanhAttention, TanhAttentionResult
from .positional import alibi_bias, alibi_slopes, apply_rope, sinusoidal_positional_encoding
from .sparse import TopKResult, topk_attention
from .transformer import Decoder, DecoderResult, Encoder, EncoderResult, Transformer
from .transformer import TransformerConfig, TransformerResult, count_parameters, parameter_formula

__all__ = sorted(  # every class and function imported above (not the modules themselves)
    n for n, o in vars().items() if getattr(o, "__module__", "").startswith("attention.")
)
