"""Pure computations behind the explorers in `widgets/`, one module per explorer.

Each explorer is a frozen params dataclass -> a pure function -> a frozen result dataclass, so
a notebook can call the function without any widget, a test can compare a widget's view with
the function's result for the same params, and `explorer.result` is the maths. The same params
always give the same numbers (every random draw is seeded).

    AttentionExplorer           AttentionParams  -> explore_attention     -> AttentionExploration
    MaskExplorer                MaskParams       -> explore_mask          -> MaskConventions
    TokenAttentionView          TokenModelParams -> token_self_attention  -> TokenAttention
                                token_view(weights, tokens, head)         -> TokenView
    ScalingExplorer             ScalingParams    -> explore_scaling       -> ScalingResult
    HeadsExplorer               HeadsParams      -> explore_heads         -> HeadsResult
    PositionalEncodingExplorer  PositionalParams -> explore_positional    -> PositionalResult

Modules: attention_map, masks, tokens, scaling, heads, positional; _util holds the size limits,
argument checks, the seeded MultiHeadAttention they share and `one_thread` (applied once, by
the widgets' Explorer base, around every update).
"""

from ._util import MAX_LEN, MAX_WIDTH, one_thread
from .attention_map import (
    TEMPERATURE_RANGE,
    AttentionExploration,
    AttentionParams,
    explore_attention,
)
from .heads import (
    HEADS_BATCH_MAX,
    HEADS_D_MODELS,
    HEADS_MAX,
    HEADS_SEQ_MAX,
    HeadsParams,
    HeadsPath,
    HeadsResult,
    explore_heads,
    head_choices,
)
from .masks import (
    MASK_KINDS,
    Mask,
    MaskConventions,
    MaskParams,
    explore_mask,
    mask_to_tuple,
    preset_mask,
)
from .positional import (
    PE_D_MODEL_MAX,
    PE_DIMS_MAX,
    PE_SEQ_MAX,
    PositionalParams,
    PositionalResult,
    ShuffleCheck,
    explore_positional,
    shuffle_permutation,
)
from .scaling import (
    D_K_MAX,
    N_KEYS_MAX,
    ScalingParams,
    ScalingResult,
    ScalingSide,
    explore_scaling,
)
from .tokens import (
    DEFAULT_SENTENCE,
    QK_GAIN,
    TokenAttention,
    TokenModelParams,
    TokenView,
    as_head_weights,
    token_self_attention,
    token_view,
    tokenize,
)

__all__ = [
    "D_K_MAX",
    "DEFAULT_SENTENCE",
    "HEADS_BATCH_MAX",
    "HEADS_D_MODELS",
    "HEADS_MAX",
    "HEADS_SEQ_MAX",
    "MASK_KINDS",
    "MAX_LEN",
    "MAX_WIDTH",
    "N_KEYS_MAX",
    "PE_DIMS_MAX",
    "PE_D_MODEL_MAX",
    "PE_SEQ_MAX",
    "QK_GAIN",
    "TEMPERATURE_RANGE",
    "AttentionExploration",
    "AttentionParams",
    "HeadsParams",
    "HeadsPath",
    "HeadsResult",
    "Mask",
    "MaskConventions",
    "MaskParams",
    "PositionalParams",
    "PositionalResult",
    "ScalingParams",
    "ScalingResult",
    "ScalingSide",
    "ShuffleCheck",
    "TokenAttention",
    "TokenModelParams",
    "TokenView",
    "as_head_weights",
    "explore_attention",
    "explore_heads",
    "explore_mask",
    "explore_positional",
    "explore_scaling",
    "head_choices",
    "mask_to_tuple",
    "one_thread",
    "preset_mask",
    "shuffle_permutation",
    "token_self_attention",
    "token_view",
    "tokenize",
]
