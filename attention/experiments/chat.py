"""The decoder answers a question, and where its answer looked in the prompt (lesson 12).

    chat_answer(question)   greedy answer in the chat template; the answer tokens' attention
                            over the prompt, averaged over every layer and head

The model is DECODER (SmolLM2-135M-Instruct), loaded once by attention.models.cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import torch
from torch import Tensor

from ..models.cache import pretrained_model
from ..models.pretrained import DECODER, generate
from ..sandbox.limits import check_int

__all__ = ["ChatResult", "chat_answer"]


@dataclass(frozen=True)
class ChatResult:
    """A question in the decoder's chat template, its greedy answer, and where the answer looked."""

    question: str
    prompt: str  # the template's text: special tokens, roles, newlines, the question
    prompt_tokens: tuple[str, ...]  # Tp
    answer: str
    answer_tokens: tuple[str, ...]  # Ta, the end-of-turn token included if reached
    # (Ta, Tp): for each answer token, the attention of the position that predicted it over the
    # prompt, averaged over every layer and head (the rest of its weight went to the answer)
    weights: Tensor = field(repr=False)


@lru_cache(maxsize=8)
@torch.no_grad()
def chat_answer(question: str, max_new_tokens: int = 24) -> ChatResult:
    """Ask the decoder one question (greedy decoding); average its attention over the prompt."""
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"question: expected a non-empty str, got {question!r}")
    check_int("max_new_tokens", max_new_tokens, 1, 256)
    model, tok = pretrained_model(DECODER)
    gen = generate(
        model, tok, [{"role": "user", "content": question}], max_new_tokens=max_new_tokens
    )
    p, a = len(gen.prompt_ids), len(gen.new_ids)
    out = model(torch.tensor([gen.prompt_ids + gen.new_ids]))
    mean = torch.stack([w[0] for w in out.attentions]).mean((0, 1))  # (T, T) all layers, heads
    return ChatResult(
        question=question,
        prompt=tok.decode(gen.prompt_ids),
        prompt_tokens=tuple(tok.tokens(gen.prompt_ids)),
        answer=gen.text,
        answer_tokens=tuple(tok.tokens(gen.new_ids)),
        weights=mean[p - 1 : p - 1 + a, :p],  # (Ta, Tp)
    )
