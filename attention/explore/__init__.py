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
    ModelView                   ModelViewParams  -> explore_model_view    -> ModelViewResult
    HeadView                    HeadViewParams   -> explore_head_view     -> HeadViewResult
    NeuronView                  NeuronParams     -> explore_neuron        -> NeuronResult
    FlashExplorer               FlashParams      -> explore_flash         -> FlashStepperResult
    KVCacheExplorer             KVCacheParams    -> explore_kv_cache      -> KVCacheResult
    RopeExplorer                RopeParams       -> explore_rope          -> RopeResult

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
from .attention_map import (
    TEMPERATURE_RANGE,
    AttentionExploration,
    AttentionParams,
    explore_attention,
)
from .flash_stepper import FlashParams, FlashStepperResult, explore_flash
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
from .kv_cache import (
    KV_DTYPES,
    KV_PRESETS,
    DecodingSpeed,
    KVCacheParams,
    KVCacheResult,
    explore_kv_cache,
    measure_decoding,
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
from .positions import RopeParams, RopeResult, explore_rope
from .pretrained import (
    DEFAULT_TEXTS,
    LOSS_MASKS,
    MODEL_MAX_TOKENS,
    MODEL_NAMES,
    THUMB_SIZE,
    ChatResult,
    HeadSummary,
    HeadViewParams,
    HeadViewResult,
    InductionResult,
    LossParams,
    LossResult,
    ModelMaps,
    ModelViewParams,
    ModelViewResult,
    NeuronParams,
    NeuronResult,
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
    "FlashStepperResult",
    "HeadSummary",
    "HeadViewParams",
    "HeadViewResult",
    "HeadsParams",
    "HeadsPath",
    "HeadsResult",
    "InductionResult",
    "KVCacheParams",
    "KVCacheResult",
    "LossParams",
    "LossResult",
    "Mask",
    "MaskConventions",
    "MaskParams",
    "ModelMaps",
    "ModelViewParams",
    "ModelViewResult",
    "NeuronParams",
    "NeuronResult",
    "PositionalParams",
    "PositionalResult",
    "RopeParams",
    "RopeResult",
    "ScalingParams",
    "ScalingResult",
    "ScalingSide",
    "ShuffleCheck",
    "TokenAttention",
    "TokenModelParams",
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
    "token_self_attention",
    "token_view",
    "tokenize",
    "window_experiment",
    "window_run",
]
