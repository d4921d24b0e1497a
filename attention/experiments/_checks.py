"""Argument checks the experiments' params share (each error names the field and its range)."""

from __future__ import annotations

from ..sandbox.limits import check_int


def check_lengths(name: str, values: tuple[int, ...], high: int) -> None:
    if not isinstance(values, tuple) or not values:
        raise TypeError(f"{name}: expected a non-empty tuple of ints, got {values!r}")
    for v in values:
        check_int(name, v, 1, high)


def check_rate(name: str, value: object) -> float:
    """Raise ValueError unless value is a float in (0, 1) (a learning rate); return it."""
    if not (isinstance(value, float) and 0 < value < 1):
        raise ValueError(f"{name}: expected a float in (0, 1), got {value!r}")
    return value
