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
"""

from .additive import AdditiveAttention
from .flash import (
    FlashResult,
    FlashStep,
    SoftmaxState,
    flash_attention,
    flash_attention_steps,
    online_softmax,
    online_softmax_steps,
)
from .functional import AttentionResult, masked_softmax, repeat_kv, scaled_dot_product_attention
from .layers import DecoderLayer, DecoderLayerResult, EncoderLayer, EncoderLayerResult, FeedForward
from .masks import (
    causal_mask,
    from_additive_mask,
    from_key_padding_mask,
    mask_to_valid_lens,
    padding_mask,
    sliding_window_mask,
    to_additive_mask,
    to_key_padding_mask,
    valid_lens_to_mask,
)
from .memory import (
    MemoryTraffic,
    cache_bytes,
    flash_attention_traffic,
    kv_cache_bytes,
    naive_attention_traffic,
)
from .multihead import MultiHeadAttention, MultiHeadResult, divisors, merge_heads, split_heads
from .pooling import AttentionPool, MemorySlots, PoolingResult, TanhAttention, TanhAttentionResult
from .positional import (
    alibi_bias,
    alibi_slopes,
    apply_rope,
    sinusoidal_positional_encoding,
)
from .transformer import (
    Decoder,
    DecoderResult,
    Encoder,
    EncoderResult,
    Transformer,
    TransformerConfig,
    TransformerResult,
    count_parameters,
    parameter_formula,
)

__all__ = [
    "AdditiveAttention",
    "AttentionPool",
    "AttentionResult",
    "Decoder",
    "DecoderLayer",
    "DecoderLayerResult",
    "DecoderResult",
    "Encoder",
    "EncoderLayer",
    "EncoderLayerResult",
    "EncoderResult",
    "FeedForward",
    "FlashResult",
    "FlashStep",
    "MemorySlots",
    "MemoryTraffic",
    "MultiHeadAttention",
    "MultiHeadResult",
    "PoolingResult",
    "SoftmaxState",
    "TanhAttention",
    "TanhAttentionResult",
    "Transformer",
    "TransformerConfig",
    "TransformerResult",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "cache_bytes",
    "causal_mask",
    "count_parameters",
    "divisors",
    "flash_attention",
    "flash_attention_steps",
    "flash_attention_traffic",
    "from_additive_mask",
    "from_key_padding_mask",
    "kv_cache_bytes",
    "mask_to_valid_lens",
    "masked_softmax",
    "merge_heads",
    "naive_attention_traffic",
    "online_softmax",
    "online_softmax_steps",
    "padding_mask",
    "parameter_formula",
    "repeat_kv",
    "scaled_dot_product_attention",
    "sinusoidal_positional_encoding",
    "sliding_window_mask",
    "split_heads",
    "to_additive_mask",
    "to_key_padding_mask",
    "valid_lens_to_mask",
]
