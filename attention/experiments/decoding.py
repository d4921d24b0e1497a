"""Decoding speed measured on a real model, with and without the key/value cache (lesson 14).

    measure_decoding(model, tokenizer, prompt, new_tokens)   a DecodingSpeed: seconds per
        token both ways, the tokens written (the same both ways), the bytes the cache held

Slow (a real model generates twice): the lesson runs it once and can hand the result to the
KVCacheExplorer (attention/explore/kv_cache.py), which never runs a model itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..memory import cache_bytes
from ..sandbox.limits import check_int

__all__ = ["DecodingSpeed", "measure_decoding"]


@dataclass(frozen=True)
class DecodingSpeed:
    """Tokens per second of greedy generation with and without the key/value cache."""

    prompt_tokens: int
    new_tokens: int
    seconds_cached: float
    seconds_uncached: float
    same_tokens: bool  # both runs wrote the same ids (they must)
    cached_tokens: int  # prompt + new - 1: the last new token was never fed back
    cache_bytes: int  # what the real cache held at the end (attention.memory.cache_bytes)
    text: str  # what the model wrote
    step_seconds_cached: tuple[float, ...] = ()  # per new token; the first one reads the prompt
    step_seconds_uncached: tuple[float, ...] = ()  # per new token, each a pass over everything

    @property
    def next_token_seconds(self) -> tuple[float, float]:
        """Mean seconds per new token after the first, (with the cache, without): the cost of
        one more token once the prompt has been read."""
        later = (self.step_seconds_cached[1:], self.step_seconds_uncached[1:])
        return tuple(sum(s) / len(s) if s else float("nan") for s in later)

    @property
    def cached_tokens_per_s(self) -> float:
        return self.new_tokens / self.seconds_cached

    @property
    def uncached_tokens_per_s(self) -> float:
        return self.new_tokens / self.seconds_uncached

    @property
    def speedup(self) -> float:
        return self.seconds_uncached / self.seconds_cached


def measure_decoding(model: Any, tokenizer: Any, prompt: str, new_tokens: int) -> DecodingSpeed:
    """Time greedy generation of exactly `new_tokens` tokens with and without the cache.

    model: a SmolLM2 (attention.models.pretrained). Greedy decoding is deterministic, so both
    runs must write the same tokens; only the time differs. The loop is written out (rather than
    calling generate) so that it never stops early at an end-of-text token.
    """
    import torch

    check_int("new_tokens", new_tokens, 1, 4096)
    prompt_ids = tokenizer.encode(prompt)
    ids = torch.tensor([prompt_ids])  # (1, T)

    def run(use_cache: bool) -> tuple[list[float], list[int], Any]:
        seq, cache, step, out_ids, seconds = ids, None, ids, [], []
        for _ in range(new_tokens):
            start = time.perf_counter()
            if use_cache:  # only the tokens the cache has not seen
                out = model(step, cache=cache, use_cache=True, need_weights=False)
                cache = out.cache
            else:  # the whole sequence, every time
                out = model(seq, need_weights=False)
            step = out.logits[:, -1].argmax(-1, keepdim=True)  # (1, 1) greedy
            out_ids.append(int(step))
            seq = torch.cat([seq, step], dim=1)  # (1, T + 1)
            seconds.append(time.perf_counter() - start)
        return seconds, out_ids, cache

    cached_s, cached_ids, cache = run(True)
    uncached_s, uncached_ids, _ = run(False)
    return DecodingSpeed(
        prompt_tokens=len(prompt_ids),
        new_tokens=new_tokens,
        seconds_cached=sum(cached_s),
        seconds_uncached=sum(uncached_s),
        same_tokens=cached_ids == uncached_ids,
        cached_tokens=cache.length,
        cache_bytes=cache_bytes((cache.keys, cache.values)),
        text=tokenizer.decode(cached_ids),
        step_seconds_cached=tuple(cached_s),
        step_seconds_uncached=tuple(uncached_s),
    )
