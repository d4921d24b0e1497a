"""Reference solutions to the exercises of lesson 18 (checked by attention.exercises.lesson18).

The lesson shows the same code in hidden cells tagged `solution`;
tests/exercises/test_solution_copies.py keeps the two equal.
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


def solution_read_head(model, ids: torch.Tensor, layer: int, head: int) -> torch.Tensor:
    """ids (B, T) -> (B, T, D) the output of one head, read by a hook as the model runs."""
    seen = {}

    def keep(x):  # x (B, H, T, D): every head's output at this layer
        seen["head"] = x[:, head].clone()  # a copy of one head: (B, T, D)
        # no return (None): the run goes on with x as it was

    model(ids, hooks={f"blocks.{layer}.heads": keep})
    return seen["head"]


def solution_patch_head(
    model, clean: torch.Tensor, corrupted: torch.Tensor, layer: int, head: int, pos: int
) -> torch.Tensor:
    """The corrupted run's logits (B, T, V), one head at one position copied from the clean run."""
    point = f"blocks.{layer}.heads"
    source = {}

    def keep(x):  # the clean run: store, change nothing
        source["heads"] = x.clone()  # (B, H, T, D)

    def restore(x):  # the corrupted run: a copy with the clean value at (head, pos)
        x = x.clone()  # never edit the tensor the model handed us
        x[:, head, pos] = source["heads"][:, head, pos]  # (B, D)
        return x  # the model goes on with what the hook returns

    model(clean, hooks={point: keep})
    return model(corrupted, hooks={point: restore}).logits


def solution_mean_ablate(
    model, clean: torch.Tensor, corrupted: torch.Tensor, layer: int, head: int
) -> torch.Tensor:
    """The clean run's logits (B, T, V) with one head replaced by its balanced mean."""
    point = f"blocks.{layer}.heads"
    seen = []

    def keep(x):
        seen.append(x[:, head].clone())  # (B, T, D)

    for ids in (clean, corrupted):  # both runs: the mean carries neither's answer
        model(ids, hooks={point: keep})
    mean = torch.cat(seen).mean((0, 1))  # (D,) over the sequences and the positions

    def ablate(x):
        x = x.clone()
        x[:, head] = mean  # every sequence, every position
        return x

    return model(clean, hooks={point: ablate}).logits
