"""Self-checking exercises: each `check_*` runs your function and says what is right or wrong.

    from attention.exercises import check_causal_mask
    check_causal_mask(my_causal_mask)   # prints "Correct: ..." or names the mistake

A checker never raises, so a notebook that runs every cell keeps going; it returns True or
False. Reference solutions live beside the checkers (`basics_solutions`, `layers_solutions`,
`training_solutions`): read them after you have tried.

Lessons 1-5 (basics), 6-10 (layers), 11 (training).
"""

from .basics import (
    check_additive_scores,
    check_attention,
    check_attention_shapes,
    check_bilinear_scores,
    check_dot_product_variance,
    check_gaussian_pooling,
    check_rnn_final_state,
    check_softmax,
    check_softmax_jacobian,
    check_vocabulary,
)
from .layers import (
    check_attention_pool,
    check_causal_mask,
    check_key_padding_mask,
    check_layer_norm,
    check_masked_softmax,
    check_mha_parameter_count,
    check_multi_head_scores,
    check_parameter_count,
    check_permutation_equivariance,
    check_positional_encoding,
    check_self_attention,
    check_split_heads,
)
from .training import check_greedy_step, check_sequence_loss, check_shift_right

__all__ = [
    "check_additive_scores",
    "check_attention",
    "check_attention_pool",
    "check_attention_shapes",
    "check_bilinear_scores",
    "check_causal_mask",
    "check_dot_product_variance",
    "check_gaussian_pooling",
    "check_greedy_step",
    "check_key_padding_mask",
    "check_layer_norm",
    "check_masked_softmax",
    "check_mha_parameter_count",
    "check_multi_head_scores",
    "check_parameter_count",
    "check_permutation_equivariance",
    "check_positional_encoding",
    "check_rnn_final_state",
    "check_self_attention",
    "check_sequence_loss",
    "check_shift_right",
    "check_softmax",
    "check_softmax_jacobian",
    "check_split_heads",
    "check_vocabulary",
]
