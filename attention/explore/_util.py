"""Helpers shared by the explorers' pure functions: size limits, argument checks, one thread.

The checks, the self-checking dataclass fields (bounded, one_of, ...) and one_thread live in
attention/sandbox/limits.py (the lessons' experiments use them too); they are imported here so
that every explorer module reads them from one neighbour.
"""

from __future__ import annotations

from functools import lru_cache

import torch

from ..multihead import MultiHeadAttention
from ..sandbox.limits import (
    SEEDS,
    bounded,
    bounded_float,
    check_bool,
    check_choice,
    check_fields,
    check_int,
    flag,
    one_of,
    one_thread,
)

__all__ = [
    "MAX_LEN",
    "MAX_WIDTH",
    "SEEDS",
    "bounded",
    "bounded_float",
    "check_bool",
    "check_choice",
    "check_fields",
    "check_int",
    "flag",
    "one_of",
    "one_thread",
    "seeded_mha",
]

MAX_LEN = 64  # longest query or key sequence the attention, mask and token explorers offer
MAX_WIDTH = 256  # widest d_k / d_model they offer


@lru_cache(maxsize=16)
def seeded_mha(d_model: int, n_heads: int, seed: int) -> MultiHeadAttention:
    """A MultiHeadAttention whose initial weights depend only on the seed."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MultiHeadAttention(d_model, n_heads).eval()
