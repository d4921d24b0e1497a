"""Reference solutions to the exercises of lesson 12 (checked by attention.exercises.lesson12).

The lesson shows the same code in hidden cells tagged `solution`;
tests/exercises/test_solution_copies.py keeps the two equal.
"""

from __future__ import annotations

import torch


def solution_sink_share(weights: torch.Tensor) -> torch.Tensor:
    """(L, H, T, T) causal weights -> (L,) mean weight on the first key, per layer."""
    first_key = weights[..., 1:, 0]  # (L, H, T - 1): query 0 can only attend to itself
    return first_key.mean(dim=(1, 2))  # (L,) over heads and queries


def solution_previous_token_score(weights: torch.Tensor) -> torch.Tensor:
    """(H, T, T) -> (H,) mean weight of query i on key i - 1, over queries 1..T-1."""
    previous = torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1)  # (H, T - 1)
    return previous.mean(dim=-1)  # (H,)


def solution_induction_score(weights: torch.Tensor, n: int) -> torch.Tensor:
    """(H, 2n, 2n) weights on n tokens repeated twice -> (H,) induction score per head."""
    after_earlier = torch.diagonal(weights, offset=-(n - 1), dim1=-2, dim2=-1)  # (H, n + 1)
    return after_earlier[..., 1:].mean(dim=-1)  # (H,) queries n..2n-1: the second copy only


def solution_top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """(B, V) -> (B, V): the k largest logits of each row kept, the others -inf."""
    kth = logits.topk(k, dim=-1).values[..., -1:]  # (B, 1) the k-th largest of each row
    return logits.masked_fill(logits < kth, float("-inf"))  # softmax gives them 0


def solution_sampling_probs(
    logits: torch.Tensor, temperature: float, top_k: int | None
) -> torch.Tensor:
    """(B, V) logits -> (B, V) the distribution to sample from, with temperature and top-k."""
    scores = logits / temperature  # (B, V): below 1 sharpens, above 1 flattens
    if top_k is not None:
        kth = scores.topk(top_k, dim=-1).values[..., -1:]  # (B, 1) the k-th largest
        scores = scores.masked_fill(scores < kth, float("-inf"))  # the others get exactly 0
    return torch.softmax(scores, dim=-1)  # (B, V) rows sum to 1


def solution_chat_prompt(question: str) -> str:
    """SmolLM2's chat template for one user question, ready for the assistant to answer."""
    system = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    return (
        f"<|im_start|>system\n{system}<|im_end|>\n"  # the default system turn
        f"<|im_start|>user\n{question}<|im_end|>\n"
        "<|im_start|>assistant\n"  # an open turn: the model writes from here
    )
