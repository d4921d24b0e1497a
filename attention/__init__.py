"""attention: a small, exact attention core that returns every intermediate.

Shape legend (batch first, like PyTorch):
    B batch, H heads, Tq query positions, Tk key positions,
    D per-head width (d_head), Dv value width, M d_model = H * D.

Mask convention (the same as torch.nn.functional.scaled_dot_product_attention):
    a bool tensor, True = may attend, broadcastable to (..., Tq, Tk). Masked scores become -inf
    before the softmax; a query row whose keys are all masked gets weights 0 and output 0, never
    NaN, and `AttentionResult.fully_masked` says which rows these are. Converters translate to
    and from nn.MultiheadAttention's key_padding_mask (True = ignore), additive 0/-inf float
    masks and d2l's valid_lens.

Reading order: functional (the attention function), masks, additive, multihead, positional,
transformer.
"""

from .additive import AdditiveAttention
from .functional import AttentionResult, masked_softmax, scaled_dot_product_attention
from .masks import (
    causal_mask,
    from_additive_mask,
    from_key_padding_mask,
    mask_to_valid_lens,
    padding_mask,
    to_additive_mask,
    to_key_padding_mask,
    valid_lens_to_mask,
)
from .multihead import MultiHeadAttention, MultiHeadResult, divisors, merge_heads, split_heads
from .positional import sinusoidal_positional_encoding
from .transformer import (
    Decoder,
    DecoderLayer,
    DecoderLayerResult,
    DecoderResult,
    Encoder,
    EncoderLayer,
    EncoderLayerResult,
    EncoderResult,
    FeedForward,
    Transformer,
    TransformerConfig,
    TransformerResult,
    count_parameters,
    parameter_formula,
)

__all__ = [
    "AdditiveAttention",
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
    "MultiHeadAttention",
    "MultiHeadResult",
    "Transformer",
    "TransformerConfig",
    "TransformerResult",
    "causal_mask",
    "count_parameters",
    "divisors",
    "from_additive_mask",
    "from_key_padding_mask",
    "mask_to_valid_lens",
    "masked_softmax",
    "merge_heads",
    "padding_mask",
    "parameter_formula",
    "scaled_dot_product_attention",
    "sinusoidal_positional_encoding",
    "split_heads",
    "to_additive_mask",
    "to_key_padding_mask",
    "valid_lens_to_mask",
]
