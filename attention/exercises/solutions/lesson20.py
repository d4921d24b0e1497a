"""Reference solutions to the exercises of lesson 20 (checked by attention.exercises.lesson20).

The lesson shows the same code in hidden cells tagged `solution`;
tests/exercises/test_solution_copies.py keeps the two equal.
"""

import torch


def solution_window_sinks_mask_mod(window: int, sinks: int):
    def mask_mod(b, h, q_idx, kv_idx):
        causal = q_idx >= kv_idx
        in_window = q_idx - kv_idx < window  # the last `window` keys, the query included
        return causal & (in_window | (kv_idx < sinks))  # & and |, never `and`/`or`

    return mask_mod


def solution_document_mask_mod(doc_ids: torch.Tensor):
    def mask_mod(b, h, q_idx, kv_idx):
        same_doc = doc_ids[q_idx] == doc_ids[kv_idx]  # a lookup in a captured table
        return same_doc & (q_idx >= kv_idx)

    return mask_mod


def solution_alibi_score_mod(n_heads: int):
    def score_mod(score, b, h, q_idx, kv_idx):
        slope = 2.0 ** (-8.0 * (h + 1) / n_heads)  # head h's slope (n_heads a power of two)
        return score - slope * (q_idx - kv_idx).abs()

    return score_mod


def solution_softcap_score_mod(cap: float):
    def score_mod(score, b, h, q_idx, kv_idx):
        return cap * torch.tanh(score / cap)  # about score when small, never past +-cap

    return score_mod
