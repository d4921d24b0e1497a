"""Self-checking exercises: each `check_*` runs your function and says what is right or wrong.

    from attention.exercises import check_causal_mask
    check_causal_mask(my_causal_mask)   # prints "Correct: ..." or names the mistake

A checker never raises, so a notebook that runs every cell keeps going; it returns True or
False. All checkers are built on one kit, `_checking`.
Lesson N's checkers are in `lessonNN`, its reference solutions in `solutions.lessonNN`.
Read the solutions after you have tried.

Every verdict is also kept in your own folder (`records`: ~/.attention-course/records.jsonl, or
the folder $ATTENTION_COURSE_RECORDS names; "off" keeps nothing); `progress()` prints what you
have tried and passed, lesson by lesson. A teacher on a hub collects the class's records into
one table per exercise: `python -m attention.exercises.class_report --homes /home`.
"""

from .lesson01 import check_rnn_final_state, check_vocabulary
from .lesson02 import check_gaussian_pooling, check_softmax
from .lesson03 import check_additive_scores, check_bilinear_scores
from .lesson04 import check_attention, check_attention_shapes
from .lesson05 import check_dot_product_variance, check_softmax_jacobian
from .lesson06 import check_causal_mask, check_key_padding_mask, check_masked_softmax
from .lesson07 import (
    check_attention_pool,
    check_memory_slots,
    check_self_attention,
    check_tanh_attention,
)
from .lesson08 import check_mha_parameter_count, check_multi_head_scores, check_split_heads
from .lesson09 import check_permutation_equivariance, check_positional_encoding
from .lesson10 import check_layer_norm, check_parameter_count
from .lesson11 import check_greedy_step, check_sequence_loss, check_shift_right
from .lesson12 import (
    check_chat_prompt,
    check_induction_score,
    check_previous_token_score,
    check_sampling_probs,
    check_sink_share,
    check_top_k_filter,
)
from .lesson13 import (
    check_attention_matrix_bytes,
    check_flash_tile_update,
    check_online_softmax_update,
)
from .lesson14 import check_cached_attention, check_kv_cache_bytes, check_repeat_kv
from .lesson15 import check_alibi_bias, check_perplexity, check_rope_half, check_sliding_window_mask
from .lesson16 import (
    check_attention_layer,
    check_cached_causal_mask,
    check_decoder_block,
    check_generate,
    check_gqa_attention,
    check_output_layer,
    check_rms_norm,
    check_rope_interleaved,
    check_swiglu,
)
from .lesson17 import (
    check_ablate_head,
    check_batch_previous_token_score,
    check_k_composition,
    check_repeated_loss,
    check_toy_induction_score,
)
from .lesson18 import (
    check_mean_ablate,
    check_occlusion,
    check_patch_head,
    check_patching_effect,
    check_read_head,
    check_rollout,
)
from .lesson19 import (
    check_differential_map,
    check_differential_weights,
    check_gated_delta_step,
    check_linear_attention_step,
    check_mla_absorbed_scores,
    check_mla_cache_bytes,
    check_paged_slot,
    check_topk_keep,
)
from .lesson20 import (
    check_alibi_score_mod,
    check_document_mask_mod,
    check_softcap_score_mod,
    check_window_sinks_mask_mod,
)
from .records import progress  # noqa: F401 - `from attention.exercises import progress`

__all__ = [
    "check_ablate_head",
    "check_additive_scores",
    "check_alibi_bias",
    "check_alibi_score_mod",
    "check_attention",
    "check_attention_layer",
    "check_attention_matrix_bytes",
    "check_attention_pool",
    "check_attention_shapes",
    "check_batch_previous_token_score",
    "check_bilinear_scores",
    "check_cached_attention",
    "check_cached_causal_mask",
    "check_causal_mask",
    "check_chat_prompt",
    "check_decoder_block",
    "check_differential_map",
    "check_differential_weights",
    "check_document_mask_mod",
    "check_dot_product_variance",
    "check_flash_tile_update",
    "check_gated_delta_step",
    "check_gaussian_pooling",
    "check_generate",
    "check_gqa_attention",
    "check_greedy_step",
    "check_induction_score",
    "check_k_composition",
    "check_key_padding_mask",
    "check_kv_cache_bytes",
    "check_layer_norm",
    "check_linear_attention_step",
    "check_masked_softmax",
    "check_mean_ablate",
    "check_memory_slots",
    "check_mha_parameter_count",
    "check_mla_absorbed_scores",
    "check_mla_cache_bytes",
    "check_multi_head_scores",
    "check_occlusion",
    "check_online_softmax_update",
    "check_output_layer",
    "check_paged_slot",
    "check_parameter_count",
    "check_patch_head",
    "check_patching_effect",
    "check_permutation_equivariance",
    "check_perplexity",
    "check_positional_encoding",
    "check_previous_token_score",
    "check_read_head",
    "check_repeat_kv",
    "check_repeated_loss",
    "check_rms_norm",
    "check_rnn_final_state",
    "check_rollout",
    "check_rope_half",
    "check_rope_interleaved",
    "check_sampling_probs",
    "check_self_attention",
    "check_sequence_loss",
    "check_shift_right",
    "check_sink_share",
    "check_sliding_window_mask",
    "check_softcap_score_mod",
    "check_softmax",
    "check_softmax_jacobian",
    "check_split_heads",
    "check_swiglu",
    "check_tanh_attention",
    "check_top_k_filter",
    "check_topk_keep",
    "check_toy_induction_score",
    "check_vocabulary",
    "check_window_sinks_mask_mod",
]
