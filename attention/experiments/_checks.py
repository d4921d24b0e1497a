"""Argument checks the experiments' params share (each error names the field and its range)."""

from __future__ import annotations

from ..sandbox.limits import check_int

SEEDS = (0, 2**31 - 1)  # the seeds torch.manual_seed and Generator take


def check_lengths(name: str, values: tuple[int, ...], high: int) -> None:
    if not isinstance(values, tuple) or not values:
        raise TypeError(f"{name}: expected a non-empty tuple of ints, got {values!r}")
    for v in values:
        check_int(name, v, 1, high)


def check_ints(params: object, **ranges: tuple[int, int]) -> None:
    """check_int each named field of params against its range: name=(low, high), inclusive."""
    for name, (low, high) in ranges.items():
        check_int(name, getattr(params, name), low, high)
