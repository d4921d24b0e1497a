"""What every exercise checker shares: run the learner's function safely, print one line.

A check body calls the learner's function through `call` and then either returns None (right),
returns a message or raises `Wrong(message)` (wrong, and how), while `call` turns a stub that
still raises NotImplementedError into "Not attempted yet". The `checker` decorator prints
"Correct: ...", "Not yet: ..." or "Not attempted yet: ..." and returns True or False; it never
raises, so a notebook that runs every cell keeps going, and it leaves the learner's random state
untouched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor


class NotAttempted(Exception):
    """The learner's function still raises NotImplementedError; the message is its name."""


class Wrong(Exception):
    """The learner's answer is wrong; the message says how."""


def name_of(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__name__", "your function")


def checker(success: str) -> Callable[[Callable[..., str | None]], Callable[..., bool]]:
    """Wrap `body(fn) -> None | message` (or raising Wrong) into `check(fn) -> bool`."""

    def decorate(body: Callable[..., str | None]) -> Callable[..., bool]:
        @functools.wraps(body)
        def check(fn: Callable[..., Any]) -> bool:
            if not callable(fn):
                print(
                    f"Not yet: expected a function, got {type(fn).__name__}; pass the function "
                    "itself (my_function, not my_function(...))"
                )
                return False
            try:
                with torch.random.fork_rng(devices=[]):  # checks draw no global numbers
                    message = body(fn)
            except NotAttempted as exc:
                print(f"Not attempted yet: write {exc} above, then run this cell")
                return False
            except Wrong as exc:
                message = str(exc)
            if message is not None:
                print(f"Not yet: {message}")
                return False
            print(f"Correct: {success}")
            return True

        return check

    return decorate


def call(fn: Callable[..., Any], *args: Any, hint: str = "") -> Any:
    """Call fn on copies of the tensor args, so in-place edits cannot spoil the reference."""
    copies = [a.clone() if isinstance(a, Tensor) else a for a in args]
    try:
        return fn(*copies)
    except NotImplementedError:
        raise NotAttempted(name_of(fn)) from None
    except Exception as exc:  # noqa: BLE001 - reported to the learner, not raised
        raise Wrong(f"{name_of(fn)} raised {type(exc).__name__}: {exc}{hint}") from None
