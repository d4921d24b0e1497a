"""Pure computations behind the explorers in `widgets/`, one module per explorer.

Each explorer is a frozen params dataclass -> a pure function -> a frozen result dataclass, so
a notebook can call the function without any widget, a test can compare a widget's view with
the function's result for the same params, and `explorer.result` is the maths. The same params
always give the same numbers (every random draw is seeded).

    AttentionExplorer           AttentionParams  -> explore_attention     -> AttentionExploration
    MaskExplorer                MaskParams       -> explore_mask          -> MaskExploration
    TokenAttentionView          TokensParams -> explore_tokens  -> TokensExploration
                                token_view(weights, tokens, head)         -> TokenView
    ScalingExplorer             ScalingParams    -> explore_scaling       -> ScalingExploration
    HeadsExplorer               HeadsParams      -> explore_heads         -> HeadsExploration
    PositionalEncodingExplorer  PositionalParams -> explore_positional    -> PositionalExploration
    ModelView                   ModelViewParams  -> explore_model_view    -> ModelViewExploration
    HeadView                    HeadViewParams   -> explore_head_view     -> HeadViewExploration
    NeuronView                  NeuronParams     -> explore_neuron        -> NeuronExploration
    FlashExplorer               FlashParams      -> explore_flash         -> FlashExploration
    KVCacheExplorer             KVCacheParams    -> explore_kv_cache      -> KVCacheExploration
    RopeExplorer                RopeParams       -> explore_rope          -> RopeExploration

Modules: attention_map, masks, tokens, scaling, heads, positional; _util holds the size limits,
argument checks, the seeded MultiHeadAttention they share and `one_thread` (applied once, by
the widgets' Explorer base, around every update).
pretrained: real trained models (maps cached per text, per-head scores, losses with heads
ablated or the mask changed, a chat answer), loaded once per kernel.
flash_stepper, kv_cache, positions: FlashAttention's tiles step by step, key/value cache bytes
(and `measure_decoding` on a real model), RoPE and ALiBi. windows: perplexity of SmolLM2 under
a sliding window, with and without sink tokens, or with the wrong RoPE layout.
"""

from ._util import MAX_LEN, MAX_WIDTH, one_thread
from .attention import (
    TEMPERATURE_RANGE,
    AttentionExploration,
    AttentionParams,
    explore_attention,
    max_heads,
)
from .flash import FlashExploration, FlashParams, explore_flash
from .heads import (
    HEADS_BATCH_MAX,
    HEADS_D_MODELS,
    HEADS_MAX,
    HEADS_SEQ_MAX,
    HeadsExploration,
    HeadsParams,
    HeadsPath,
    explore_heads,
    head_choices,
)
from .kv_cache import (
    KV_DTYPES,
    KV_PRESETS,
    DecodingSpeed,
    KVCacheExploration,
    KVCacheParams,
    explore_kv_cache,
    measure_decoding,
)
from .mask import (
    MASK_KINDS,
    Mask,
    MaskExploration,
    MaskParams,
    explore_mask,
    mask_to_tuple,
    preset_mask,
)
from .model_view import (
    DEFAULT_TEXTS,
    LOSS_MASKS,
    MODEL_MAX_TOKENS,
    MODEL_NAMES,
    THUMB_SIZE,
    ChatResult,
    HeadSummary,
    HeadViewExploration,
    HeadViewParams,
    InductionResult,
    LossParams,
    LossResult,
    ModelMaps,
    ModelViewExploration,
    ModelViewParams,
    NeuronExploration,
    NeuronParams,
    chat_answer,
    encode_text,
    explore_head_view,
    explore_model_view,
    explore_neuron,
    induction_score,
    induction_scores,
    loss_mask,
    maps_of_ids,
    model_maps,
    model_shape,
    pretrained_model,
    previous_token_score,
    sink_share,
    text_loss,
    thumbnail_maps,
)
from .positional import (
    PE_D_MODEL_MAX,
    PE_DIMS_MAX,
    PE_SEQ_MAX,
    PositionalExploration,
    PositionalParams,
    ShuffleCheck,
    explore_positional,
    shuffle_permutation,
)
from .rope import RopeExploration, RopeParams, explore_rope
from .scaling import (
    D_K_MAX,
    N_KEYS_MAX,
    ScalingExploration,
    ScalingParams,
    ScalingSide,
    explore_scaling,
)
from .tokens import (
    DEFAULT_SENTENCE,
    QK_GAIN,
    TokensExploration,
    TokensParams,
    TokenView,
    as_head_weights,
    explore_tokens,
    token_view,
    tokenize,
)
from .windows import WindowRun, masked_logits, window_experiment, window_run

__all__ = [
    "D_K_MAX",
    "DEFAULT_SENTENCE",
    "DEFAULT_TEXTS",
    "HEADS_BATCH_MAX",
    "HEADS_D_MODELS",
    "HEADS_MAX",
    "HEADS_SEQ_MAX",
    "KV_DTYPES",
    "KV_PRESETS",
    "LOSS_MASKS",
    "MASK_KINDS",
    "MAX_LEN",
    "MAX_WIDTH",
    "MODEL_MAX_TOKENS",
    "MODEL_NAMES",
    "N_KEYS_MAX",
    "PE_DIMS_MAX",
    "PE_D_MODEL_MAX",
    "PE_SEQ_MAX",
    "QK_GAIN",
    "TEMPERATURE_RANGE",
    "THUMB_SIZE",
    "AttentionExploration",
    "AttentionParams",
    "ChatResult",
    "DecodingSpeed",
    "FlashParams",
    "FlashExploration",
    "HeadSummary",
    "HeadViewParams",
    "HeadViewExploration",
    "HeadsParams",
    "HeadsPath",
    "HeadsExploration",
    "InductionResult",
    "KVCacheParams",
    "KVCacheExploration",
    "LossParams",
    "LossResult",
    "Mask",
    "MaskExploration",
    "MaskParams",
    "ModelMaps",
    "ModelViewParams",
    "ModelViewExploration",
    "NeuronParams",
    "NeuronExploration",
    "PositionalParams",
    "PositionalExploration",
    "RopeParams",
    "RopeExploration",
    "ScalingParams",
    "ScalingExploration",
    "ScalingSide",
    "ShuffleCheck",
    "TokensExploration",
    "TokensParams",
    "TokenView",
    "WindowRun",
    "as_head_weights",
    "chat_answer",
    "encode_text",
    "explore_attention",
    "explore_flash",
    "explore_head_view",
    "explore_heads",
    "explore_kv_cache",
    "explore_mask",
    "explore_model_view",
    "explore_neuron",
    "explore_positional",
    "explore_rope",
    "explore_scaling",
    "head_choices",
    "induction_score",
    "induction_scores",
    "loss_mask",
    "maps_of_ids",
    "mask_to_tuple",
    "masked_logits",
    "max_heads",
    "measure_decoding",
    "model_maps",
    "model_shape",
    "one_thread",
    "preset_mask",
    "pretrained_model",
    "previous_token_score",
    "shuffle_permutation",
    "sink_share",
    "text_loss",
    "thumbnail_maps",
    "explore_tokens",
    "token_view",
    "tokenize",
    "window_experiment",
    "window_run",
]
