"""Bounds on what runs on a learner's behalf: argument ranges, and torch on one thread.

Shared by the sandbox, the explorers' pure functions (attention.explore) and the lessons'
experiments (attention.experiments), which sit side by side above it and may not import each
other.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager

import torch


def check_int(name: str, value: object, low: int, high: int) -> int:
    """Raise TypeError unless value is an int (not a bool), ValueError unless in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name}: expected an int in [{low}, {high}], got {value}")
    return value


def check_choice(name: str, value: object, choices: Collection[object]) -> object:
    """Raise ValueError unless value is one of choices (a tuple, or a dict's keys); return it."""
    if value not in choices:
        raise ValueError(f"{name}: expected one of {list(choices)}, got {value!r}")
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
