"""Sampling from a language model: temperature and top-k, measured on the decoder.

Each step draws the next token from

    p = softmax(top_k(logits / temperature))      top_k: all but the k largest set to -inf

(temperature 0 is greedy: all the probability on the argmax). `sampling_probs` writes that
distribution; `sample_continuations` draws n continuations of one prompt at once (a batch of n
copies, the key/value cache reused) and measures what the setting does:

    entropy     mean over steps and samples of -sum p log p (nats) of the distribution drawn
                from: 0 for greedy, ln k at most with top-k
    distinct    how many of the n continuations differ
    distinct-2  distinct token bigrams / all token bigrams of the n continuations: 1/n when
                every continuation is the same, near 1 when they share nothing

The draws are those of attention.models.pretrained.sample_next, seeded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ..models.pretrained import sample_next
from ..sandbox.limits import check_int

__all__ = ["SamplingRun", "sample_continuations", "sampling_probs"]


def sampling_probs(logits: Tensor, temperature: float, top_k: int | None = None) -> Tensor:
    """(B, V) logits -> (B, V) the probabilities sample_next draws from (rows sum to 1)."""
    if not temperature >= 0:
        raise ValueError(f"temperature: expected a number >= 0 (0 = greedy), got {temperature}")
    if top_k is not None:
        check_int("top_k", top_k, 1, logits.shape[-1])
    if temperature == 0:  # greedy: everything on the argmax
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    scores = logits / temperature  # (B, V)
    if top_k is not None:
        kth = scores.topk(top_k, dim=-1).values[..., -1:]  # (B, 1) the k-th largest
        scores = scores.masked_fill(scores < kth, float("-inf"))
    return torch.softmax(scores, dim=-1)  # (B, V)


@dataclass(frozen=True)
class SamplingRun:
    """n continuations of one prompt under one temperature and top-k, and their spread."""

    temperature: float
    top_k: int | None
    texts: tuple[str, ...]  # n continuations, special tokens left out
    ids: Tensor  # (n, new_tokens) the drawn token ids
    entropy: float  # nats, mean over steps and samples of the distribution drawn from
    distinct: int  # how many of the n continuations differ
    distinct_2: float  # distinct bigrams / all bigrams, over the n continuations

    @property
    def name(self) -> str:
        if self.temperature == 0:
            return "greedy"
        k = "" if self.top_k is None else f", top-k {self.top_k}"
        return f"temperature {self.temperature:g}{k}"


@torch.no_grad()
def sample_continuations(
    model: Any,
    tokenizer: Any,
    prompt: str,
    *,
    temperature: float,
    top_k: int | None = None,
    n: int = 8,
    new_tokens: int = 16,
    seed: int = 0,
) -> SamplingRun:
    """Draw n continuations of `prompt`, new_tokens each (an end token does not stop them)."""
    check_int("n", n, 1, 64)
    check_int("new_tokens", new_tokens, 2, 256)
    prompt_ids = tokenizer.encode(prompt)
    if not prompt_ids:
        raise ValueError("prompt: expected at least one token, got an empty text")
    g = torch.Generator().manual_seed(seed)
    step = torch.tensor([prompt_ids]).repeat(n, 1)  # (n, T): the prompt, n times
    cache, drawn, entropies = None, [], []
    for _ in range(new_tokens):
        out = model(step, cache=cache, use_cache=True, need_weights=False, last_only=True)
        cache, logits = out.cache, out.logits[:, -1]  # (n, V)
        probs = sampling_probs(logits, temperature, top_k)  # (n, V)
        entropies.append(torch.special.entr(probs).sum(-1))  # (n,) nats
        nxt = sample_next(logits, temperature=temperature, top_k=top_k, generator=g)  # (n,)
        drawn.append(nxt)
        step = nxt[:, None]  # (n, 1)
    ids = torch.stack(drawn, dim=1)  # (n, new_tokens)
    rows = [tuple(r) for r in ids.tolist()]
    bigrams = [pair for r in rows for pair in zip(r, r[1:], strict=False)]
    return SamplingRun(
        temperature=temperature,
        top_k=top_k,
        texts=tuple(tokenizer.decode(list(r), skip_special_tokens=True) for r in rows),
        ids=ids,
        entropy=float(torch.stack(entropies).mean()),
        distinct=len(set(rows)),
        distinct_2=len(set(bigrams)) / len(bigrams),
    )
