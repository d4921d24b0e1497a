"""Bounds on what runs on a learner's behalf: argument ranges, and torch on one thread.

The range checks come in two forms: check_int and friends for one argument, and dataclass fields
that carry their check (`d_head: int = bounded(16, 2, 64)`), run by check_fields(self) in the
params' __post_init__.

Shared by the sandbox, the explorers' pure functions (attention.explore) and the lessons'
experiments (attention.experiments), which sit side by side above it and may not import each
other.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import field, fields
from functools import partial
from typing import Any

import torch

SEEDS = (0, 2**31 - 1)  # the seeds torch.manual_seed and Generator take


def check_int(name: str, value: object, low: int, high: int) -> int:
    """Raise TypeError unless value is an int (not a bool), ValueError unless in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name}: expected an int in [{low}, {high}], got {value}")
    return value


def check_float(name: str, value: object, low: float, high: float) -> float:
    """Raise TypeError unless value is an int or a float (not a bool), ValueError unless it is
    finite and in [low, high]; return it as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: expected a float, got {type(value).__name__}")
    if not (math.isfinite(value) and low <= value <= high):
        raise ValueError(f"{name}: expected a float in [{low:g}, {high:g}], got {value}")
    return float(value)


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


# Fields that carry their own check: a params dataclass states a field's name, default and bounds
# on one line, and its __post_init__ calls check_fields(self) before any check that relates two
# fields (pair <= d_head / 2 - 1, n_heads divides d_model).


def checked(default: object, *checks: Callable[[str, object], object]) -> Any:
    """A dataclass field whose value check_fields hands to each check(name, value) in turn."""
    return field(default=default, metadata={"checks": checks})


def bounded(default: int, low: int, high: int, *, choices: Collection[int] = ()) -> Any:
    """A dataclass field holding an int in [low, high] (check_int), and one of choices if given."""
    checks = [partial(check_int, low=low, high=high)]
    if choices:
        checks.append(partial(check_choice, choices=choices))
    return checked(default, *checks)


def bounded_float(default: float, low: float, high: float) -> Any:
    """A dataclass field holding a finite float in [low, high] (check_float)."""
    return checked(default, partial(check_float, low=low, high=high))


def one_of(default: object, choices: Collection[object]) -> Any:
    """A dataclass field holding one of choices (check_choice)."""
    return checked(default, partial(check_choice, choices=choices))


def flag(default: bool) -> Any:
    """A dataclass field holding a bool (check_bool)."""
    return checked(default, check_bool)


def check_fields(params: object) -> None:
    """Run the checks of params' fields (made by bounded, bounded_float, one_of, flag or checked)
    in the order the fields are declared; each error names the field."""
    for f in fields(params):
        for check in f.metadata.get("checks", ()):
            check(f.name, getattr(params, f.name))


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
