"""Reference solutions to the exercises of lesson 17 (checked by attention.exercises.lesson17).

The lesson shows the same code in hidden cells tagged `solution`;
tests/exercises/test_solution_copies.py keeps the two equal.
"""

from __future__ import annotations

import torch


def solution_toy_induction_score(weights: torch.Tensor, n: int) -> torch.Tensor:
    """(H, 2n + 1, 2n + 1) weights on BOS + n tokens + the same n -> (H,) induction scores."""
    after_earlier = torch.diagonal(weights, offset=-(n - 1), dim1=-2, dim2=-1)  # (H, n + 2)
    return after_earlier[..., 2:].mean(dim=-1)  # (H,) queries n + 1 .. 2n: the second copy


def solution_batch_previous_token_score(weights: torch.Tensor) -> torch.Tensor:
    """(B, H, T, T) -> (H,) mean weight of query i on key i - 1, over queries and the batch."""
    previous = torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1)  # (B, H, T - 1)
    return previous.mean(dim=(0, -1))  # (H,)


def solution_ablate_head(model, tokens: torch.Tensor, layer: int, head: int) -> torch.Tensor:
    """The toy model's logits (B, T, V + 1) with head `head` of layer `layer` silenced."""
    x = model.embed_tokens(tokens)  # (B, T, M)
    for i in range(model.config.n_layers):
        silenced = [head] if i == layer else []  # only this layer loses a head
        att = model.attend(i, x, ablate=silenced)
        x = model.after_attention(i, x + att.output)  # the residual stream goes on
    return model.unembed(model.norm_out(x))  # (B, T, V + 1)


def solution_repeated_loss(
    logits: torch.Tensor, tokens: torch.Tensor, repeat: torch.Tensor
) -> torch.Tensor:
    """Mean next-token cross-entropy over the repeated part: logit positions q >= n, per row."""
    v = logits.shape[-1]
    losses = torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, v), tokens[:, 1:].reshape(-1), reduction="none"
    ).view(tokens.shape[0], -1)  # (B, T - 1): position q predicts token q + 1
    q = torch.arange(losses.shape[1])  # (T - 1,)
    keep = q[None, :] >= repeat[:, None]  # (B, T - 1) each sequence's own n
    return losses[keep].mean()


def solution_k_composition(
    w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, w_o: torch.Tensor
) -> torch.Tensor:
    """K-composition (Elhage et al. 2021) of a later head (w_q, w_k) with an earlier (w_v, w_o)."""
    w_qk = w_q.T @ w_k  # (M, M): score = x_i.T @ w_qk @ x_j
    w_ov = w_o @ w_v  # (M, M): the earlier head writes w_ov @ x_j
    norm = torch.linalg.norm  # Frobenius for a matrix
    return norm(w_qk @ w_ov) / (norm(w_qk) * norm(w_ov))
