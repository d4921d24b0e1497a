"""Shared by the exercise tests: what a checker says to an answer (run, wrong_answer), and every
checker paired with its reference solution (PAIRS)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import attention.exercises as E
import attention.exercises.solutions


def run(check, fn, capsys) -> tuple[bool, str]:
    """Call check(fn); return its verdict and what it printed."""
    ok = check(fn)
    return ok, capsys.readouterr().out


def wrong_answer(check, fn, message, capsys) -> None:
    """The checker rejects fn and names the mistake with `message`."""
    ok, out = run(check, fn, capsys)
    assert ok is False, out
    assert message in out, out


LESSON_MODULES = [  # attention.exercises.lesson01, ...: each lesson's checkers
    importlib.import_module(f"attention.exercises.{info.name}")
    for info in pkgutil.iter_modules(E.__path__)
    if info.name.startswith("lesson")
]
SOLUTION_MODULES = [  # solutions.lesson01, ...: one per lesson, named as its checkers' module
    importlib.import_module(f"attention.exercises.solutions.{info.name}")
    for info in pkgutil.iter_modules(attention.exercises.solutions.__path__)
]
SOLUTIONS = {
    name: fn
    for module in SOLUTION_MODULES
    for name, fn in inspect.getmembers(module, inspect.isfunction)
    if name.startswith("solution_") and fn.__module__ == module.__name__
}
# check_foo is solved by solution_foo, except where the lesson names the function otherwise
RENAMED = {
    "check_key_padding_mask": "solution_to_key_padding_mask",
    "check_permutation_equivariance": "solution_is_permutation_equivariant",
    "check_positional_encoding": "solution_sinusoidal_pe",
    "check_parameter_count": "solution_encoder_layer_parameter_count",
}
PAIRS = [
    (getattr(E, name), SOLUTIONS[RENAMED.get(name, name.replace("check_", "solution_", 1))])
    for name in sorted(E.__all__)
]
IDS = [check.__name__ for check, _ in PAIRS]
