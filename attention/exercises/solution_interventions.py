"""Reference solutions to the exercises of lesson 18 (checked by attention.exercises.interventions).

The lesson shows the same code in hidden cells tagged `solution`;
tests/test_solution_copies.py keeps the two equal.
"""

from __future__ import annotations

import torch


def solution_rollout(weights: torch.Tensor) -> torch.Tensor:
    """(L, H, T, T) attention weights, first layer first -> (T, T) attention rollout."""
    eye = torch.eye(weights.shape[-1])
    rollout = eye
    for layer in weights:  # first layer first
        a = 0.5 * layer.mean(0) + 0.5 * eye  # (T, T) heads averaged, the residual added
        a = a / a.sum(-1, keepdim=True)  # rows sum to 1 again
        rollout = a @ rollout  # the later layer on the left
    return rollout


def solution_patching_effect(
    clean: torch.Tensor, corrupted: torch.Tensor, patched: torch.Tensor, answer: int, other: int
) -> torch.Tensor:
    """Logits (V,) of three runs -> how much of the logit difference the patch restored."""

    def diff(logits: torch.Tensor) -> torch.Tensor:
        return logits[answer] - logits[other]

    return (diff(patched) - diff(corrupted)) / (diff(clean) - diff(corrupted))


def solution_occlusion(score, ids: torch.Tensor, blank_id: int) -> torch.Tensor:
    """score((B, T) ids) -> (B,); ids (T,) -> (T,) how much the score drops without each token."""
    full = score(ids[None])[0]
    drops = []
    for pos in range(len(ids)):
        blanked = ids.clone()  # a fresh copy: one token blanked at a time
        blanked[pos] = blank_id
        drops.append(full - score(blanked[None])[0])
    return torch.stack(drops)  # (T,) positive: the token supported the score
