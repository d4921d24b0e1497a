"""Helpers shared by the explorers' pure functions: size limits, argument checks, one thread."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

import torch

from ..multihead import MultiHeadAttention

MAX_LEN = 64  # longest query or key sequence the attention, mask and token explorers offer
MAX_WIDTH = 256  # widest d_k / d_model they offer


def check_int(name: str, value: object, low: int, high: int) -> int:
    """Raise TypeError unless value is an int (not a bool), ValueError unless in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name}: expected an int in [{low}, {high}], got {value}")
    return value


def check_bool(name: str, value: object) -> bool:
    """Raise TypeError unless value is a bool; return it."""
    if not isinstance(value, bool):
        raise TypeError(f"{name}: expected a bool, got {type(value).__name__}")
    return value


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread inside the block, then restore the setting.

    An update is many tiny tensor ops; on a busy 2-core machine torch's second thread spins and
    waits. Measured at AttentionExplorer's largest setting, load 5: 65 ms with 2 threads, 2 ms
    with 1; one heads update: ~1 ms with 1 thread against ~13 ms median (spikes of ~300 ms).
    """
    n = torch.get_num_threads()
    if n == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


@lru_cache(maxsize=16)
def seeded_mha(d_model: int, n_heads: int, seed: int) -> MultiHeadAttention:
    """A MultiHeadAttention whose initial weights depend only on the seed."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MultiHeadAttention(d_model, n_heads).eval()
