"""Checkers of lesson 18 (the intervention lab), each naming the typical mistakes.

check_rollout             attention rollout (Abnar & Zuidema) over the layers of one text
check_patching_effect     the normalised effect of an activation patch on a logit difference
check_occlusion           how much a score drops when each token in turn is blanked out
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ._checking import Wrong, call, checker, compare, expect_tensor

__all__ = ["check_occlusion", "check_patching_effect", "check_rollout"]


def _weights(n_layers: int, n_heads: int, t: int, seed: int) -> Tensor:
    """(L, H, T, T) random attention weights whose rows sum to 1 (bidirectional)."""
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(2.0 * torch.randn(n_layers, n_heads, t, t, generator=g), dim=-1)


def _rollout(weights: Tensor, *, identity: bool = True, scale: float = 0.5) -> Tensor:
    eye = torch.eye(weights.shape[-1])
    out = eye
    for layer in weights:
        a = layer.mean(0)
        if identity:
            a = scale * a + scale * eye if scale == 0.5 else a + eye
            if scale == 0.5:
                a = a / a.sum(-1, keepdim=True)
        out = a @ out
    return out


@checker("rows of the rollout sum to 1, the residual counted, the last layer on the left.")
def check_rollout(fn: Callable[[Tensor], Tensor]) -> None:
    """Check fn(weights (L, H, T, T)) -> (T, T)."""
    weights = _weights(3, 4, 5, seed=18)
    want = _rollout(weights)
    got = expect_tensor(call(fn, weights), what="rollout", shape=(5, 5))
    eye = torch.eye(5)
    wrong_order = eye
    for layer in weights:
        a = 0.5 * layer.mean(0) + 0.5 * eye
        wrong_order = wrong_order @ (a / a.sum(-1, keepdim=True))
    max_heads = eye
    for layer in weights:
        a = 0.5 * layer.amax(0) + 0.5 * eye
        max_heads = (a / a.sum(-1, keepdim=True)) @ max_heads
    mistakes = [
        (
            _rollout(weights, identity=False),
            "you left out the identity term: the residual connection carries each token past "
            "the attention, so add it, A = 0.5 W + 0.5 I, before chaining the layers",
        ),
        (
            _rollout(weights, scale=1.0),
            "you added the identity without renormalising: W + I has rows that sum to 2, and "
            "the product grows by 2 per layer; divide each row by its sum (or use 0.5 W + 0.5 I)",
        ),
        (
            wrong_order,
            "you multiplied in the wrong order: the later layer reads what the earlier one "
            "wrote, so rollout = A_L ... A_2 A_1 (the new layer on the left: a @ rollout)",
        ),
        (
            max_heads,
            "you took the largest weight over the heads; Abnar & Zuidema average the heads",
        ),
    ]
    compare(got, want, mistakes, what="rollout")


@checker("0 = the corrupted run's logit difference, 1 = the clean run's.")
def check_patching_effect(fn: Callable[..., Tensor]) -> None:
    """Check fn(clean, corrupted, patched (V,) logits, answer, other) -> a number."""
    g = torch.Generator().manual_seed(30)
    clean, corrupted, patched = torch.randn(3, 12, generator=g)
    answer, other = 3, 7
    clean[answer], clean[other] = 4.0, -1.0  # clean prefers the answer by 5
    corrupted[answer], corrupted[other] = -0.5, 1.5  # corrupted prefers the other by 2
    patched[answer], patched[other] = 2.0, 0.6  # the patch restores part of it

    def diff(x: Tensor) -> Tensor:
        return x[answer] - x[other]

    want = (diff(patched) - diff(corrupted)) / (diff(clean) - diff(corrupted))
    got = call(fn, clean, corrupted, patched, answer, other)
    if isinstance(got, (int, float)):
        got = torch.tensor(float(got))
    got = expect_tensor(got, what="patching effect")
    if got.dim() != 0:
        raise Wrong(f"expected one number (a 0-d tensor), got shape {tuple(got.shape)}")
    p = [torch.softmax(x, -1) for x in (clean, corrupted, patched)]
    mistakes = [
        (
            (diff(clean) - diff(patched)) / (diff(clean) - diff(corrupted)),
            "you measured the wrong direction: how far the patch is from the clean run "
            "(1 - effect); measure how far it moved the corrupted run towards the clean one",
        ),
        (
            diff(patched) - diff(corrupted),
            "you did not normalise: divide by clean - corrupted, so that 1 means all restored",
        ),
        (
            (patched[answer] - corrupted[answer]) / (clean[answer] - corrupted[answer]),
            "you used the answer's logit alone; use the logit difference answer - other, which "
            "ignores what shifts every logit alike",
        ),
        (
            (p[2][answer] - p[1][answer]) / (p[0][answer] - p[1][answer]),
            "you used probabilities; the exercise measures the logit difference",
        ),
    ]
    compare(got, want, mistakes, what="patching effect")


def _score_model(seed: int) -> Callable[[Tensor], Tensor]:
    """A small nonlinear score of (B, T) ids -> (B,)."""
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(20, 4, generator=g)
    w = torch.randn(4, generator=g)

    def score(ids: Tensor) -> Tensor:
        x = table[ids]  # (B, T, 4)
        return torch.tanh(x.sum(1)) @ w  # (B,)

    return score


@checker("each token blanked on its own, the score's drop positive when the token helped.")
def check_occlusion(fn: Callable[..., Tensor]) -> None:
    """Check fn(score, ids (T,), blank_id) -> (T,)."""
    score = _score_model(18)
    ids = torch.tensor([3, 8, 1, 14, 5, 9])
    blank = 0
    full = score(ids[None])[0]

    def blanked(pos: int, cumulative: bool) -> Tensor:
        x = ids.clone()
        if cumulative:
            x[: pos + 1] = blank
        else:
            x[pos] = blank
        return score(x[None])[0]

    want = torch.stack([full - blanked(i, False) for i in range(len(ids))])
    got = expect_tensor(call(fn, score, ids, blank), what="occlusion", shape=(len(ids),))
    mistakes = [
        (
            -want,
            "the sign is flipped: occlusion is score(with the token) - score(without it), "
            "positive when the token supported the score",
        ),
        (
            torch.stack([full - blanked(i, True) for i in range(len(ids))]),
            "your blanks pile up: each position must be blanked on its own, in a fresh copy of "
            "the ids (ids.clone() inside the loop), the other tokens as they were",
        ),
        (
            torch.stack([blanked(i, False) for i in range(len(ids))]),
            "you returned the score without each token; occlusion is the drop, full - that",
        ),
    ]
    compare(got, want, mistakes, what="occlusion")
