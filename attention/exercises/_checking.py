"""The one checking kit every exercise checker uses: run the learner's function, compare, explain.

A check body runs the learner's function through `call`, then either returns (right) or raises
`Wrong(message)` (wrong, and how); `call` turns a stub that still raises NotImplementedError
into "Not attempted yet". The `checker` decorator prints "Correct: ...", "Not yet: ..." or
"Not attempted yet: ..." and returns True or False; it never raises, so a notebook that runs
every cell keeps going, and it restores the learner's random state, so a body may seed freely.

Every call of the learner's function runs under a deadline (TIME_LIMIT seconds): a loop that
never ends is stopped with a message instead of hanging the notebook. The stop is an exception
raised in the calling thread between two Python instructions (PyThreadState_SetAsyncExc, from a
watcher thread), so it works in any kernel thread; a single long C call (a huge matmul, a
sleep) is stopped when it returns. Anything else a check body raises (an answer of 10**400, a
complex, meta or sparse tensor) is "Not yet" with the error, never a traceback.

Comparing is `compare(got, want, mistakes)`: right type, close to the reference, else the first
known mistake whose wrong result `got` matches (its message names the misconception), else the
wrong shape, dtype, a NaN, or the first wrong value with its index, expected and received value.

Every verdict is also appended to the learner's own records (`records`): the exercise, passed or
the mistake, the time. A record that cannot be written never changes the verdict.
"""

from __future__ import annotations

import ctypes
import functools
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from ..language import translate
from . import records

RTOL, ATOL = 1e-4, 1e-5
TIME_LIMIT = 10.0  # seconds one call of the learner's function may run before it is stopped

# (the result a known wrong answer gives, the message that names that mistake)
Mistakes = Sequence[tuple[Any, str]]


class NotAttempted(Exception):
    """The learner's function still raises NotImplementedError; the message is its name."""


class Wrong(Exception):
    """The learner's answer is wrong; the message says how.

    named=True: the message names a known misconception (a row of a table of mistakes); the
    records count those per exercise for the teacher.
    """

    def __init__(self, message: str, *, named: bool = False) -> None:
        super().__init__(message)
        self.named = named


class _OutOfTime(BaseException):
    """Raised inside the learner's function at its deadline (BaseException: `except Exception`
    in the learner's code does not swallow it)."""


def _async_raise(thread_id: int, exc: type[BaseException] | None) -> None:
    """Raise exc in thread `thread_id` at its next Python instruction; None drops a pending one."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc is not None else None
    )


def _with_deadline(fn: Callable[..., Any], args: Sequence[Any], seconds: float) -> Any:
    """fn(*args), stopped with _OutOfTime if it is still running after `seconds`."""
    target, lock, stop = threading.get_ident(), threading.Lock(), threading.Event()
    running = [True]

    def watch() -> None:
        if stop.wait(seconds):
            return
        while True:  # again every 0.5 s, in case a bare `except:` swallowed it
            with lock:  # check and raise together: the caller's barrier below waits for both
                if not running[0]:
                    return
                _async_raise(target, _OutOfTime)
            if stop.wait(0.5):
                return

    watcher = threading.Thread(target=watch, name="checker-deadline", daemon=True)
    watcher.start()
    try:
        return fn(*args)
    finally:
        running[0] = False  # first: a plain store, no instruction boundary can raise before it
        with lock:  # a watcher in the middle of raising finishes first
            pass
        _async_raise(target, None)  # drop a raise that was set but not yet delivered
        stop.set()


def name_of(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__name__", "your function")


def checker(success: str) -> Callable[[Callable[..., None]], Callable[..., bool]]:
    """Wrap a check body `body(fn) -> None` that raises Wrong into `check(fn) -> bool`."""

    def decorate(body: Callable[..., None]) -> Callable[..., bool]:
        @functools.wraps(body)
        def check(fn: Callable[..., Any]) -> bool:
            outcome, message = _verdict(body, fn, success)
            print(translate(f"{_PREFIX[outcome]}: {message}"))  # English unless set_language
            records.record(body.__name__, outcome, message)
            return outcome == "passed"

        return check

    return decorate


_PREFIX = {
    "passed": "Correct",
    "mistake": "Not yet",
    "wrong": "Not yet",
    "not attempted": "Not attempted yet",
}


def _verdict(body: Callable[..., None], fn: Any, success: str) -> tuple[str, str]:
    """Run a check body on fn -> (outcome, message), outcome one of records.OUTCOMES."""
    if not callable(fn):
        return "wrong", (
            f"expected a function, got {type(fn).__name__}; pass the function "
            "itself (my_function, not my_function(...))"
        )
    try:
        # checks may seed, and the learner's random numbers stay as they were; they run on the
        # CPU (their generators' device) whatever default device the learner set, e.g.
        # torch.set_default_device("cuda"): the same verdict anywhere
        with torch.random.fork_rng(devices=[]), torch.device("cpu"):
            body(fn)
    except NotAttempted as exc:
        return "not attempted", f"write {exc} above, then run this cell"
    except Wrong as exc:
        return ("mistake" if exc.named else "wrong"), str(exc)
    except _OutOfTime:  # delivered just after the function returned: still too slow
        return "wrong", _too_slow(fn)
    except Exception as exc:  # noqa: BLE001 - what was returned broke the comparison
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        return "wrong", (
            f"the check could not use what {name_of(fn)} returned "
            f"({type(exc).__name__}{': ' + detail if detail else ''}); return a "
            "tensor or number of the kind the exercise asks for"
        )
    return "passed", success


def attempt(fn: Callable[..., Any], *args: Any) -> tuple[Any, Exception | None]:
    """Call fn on copies of the tensor args: (result, None), or (None, the exception raised).

    Copies, so in-place edits cannot spoil the reference; a stub raises NotAttempted.
    """
    copies = [a.clone() if isinstance(a, Tensor) else a for a in args]
    try:
        return _with_deadline(fn, copies, TIME_LIMIT), None
    except NotImplementedError:
        raise NotAttempted(name_of(fn)) from None
    except _OutOfTime:
        raise Wrong(_too_slow(fn)) from None
    except Exception as exc:  # noqa: BLE001 - reported to the learner, not raised
        return None, exc


def _too_slow(fn: Callable[..., Any]) -> str:
    return (
        f"{name_of(fn)} was stopped after running for {TIME_LIMIT:g} s (the limit of one call); "
        "does a loop never end?"
    )


def raised(fn: Callable[..., Any], error: Exception) -> str:
    """ "my_fn raised KeyError: 'x'" (no colon when the exception has no message)."""
    detail = f": {error}" if str(error) else ""
    return f"{name_of(fn)} raised {type(error).__name__}{detail}"


def call(fn: Callable[..., Any], *args: Any, hint: str = "") -> Any:
    """Call fn like `attempt`, turning an exception into Wrong ("my_fn raised KeyError: ...")."""
    result, error = attempt(fn, *args)
    if error is not None:
        raise Wrong(raised(fn, error) + hint)
    return result


def _prefixed(what: str, message: str) -> str:
    return f"{what}: {message}" if what else message


def _shape(x: Tensor) -> tuple[int, ...]:
    return tuple(int(s) for s in x.shape)


def expect_tensor(got: Any, *, what: str = "", shape: Sequence[int] | None = None) -> Tensor:
    """Return got if it is a tensor (of `shape`, when given); else raise Wrong saying why."""
    if got is None:
        raise Wrong(_prefixed(what, "your function returned None; did you forget `return`?"))
    if not isinstance(got, Tensor):
        raise Wrong(_prefixed(what, f"expected a torch.Tensor, got {type(got).__name__}"))
    if got.layout != torch.strided or got.is_nested:
        layout = "nested" if got.is_nested else str(got.layout)
        raise Wrong(
            _prefixed(what, f"expected a dense tensor, got layout {layout}; use .to_dense()")
        )
    if got.device.type == "meta":
        raise Wrong(_prefixed(what, "got a tensor on the meta device, which holds no values"))
    if got.is_complex():
        raise Wrong(_prefixed(what, f"expected real numbers, got dtype {got.dtype}"))
    if shape is not None and _shape(got) != tuple(shape):
        raise Wrong(_prefixed(what, f"wrong shape: expected {tuple(shape)}, got {_shape(got)}"))
    return got


def refuse_unaveraged(
    got: Tensor, want: Tensor, unaveraged: Sequence[int], one: str, advice: str
) -> None:
    """Raise Wrong if got has the shape `unaveraged` of an answer one average short of want:
    "expected one {one}, shape {want's}, got {got's}: {advice}"."""
    if _shape(got) == tuple(unaveraged):
        raise Wrong(f"expected one {one}, shape {_shape(want)}, got {_shape(got)}: {advice}")


def as_int(got: Any) -> Any:
    """Accept 12, 12.0 and tensor(12) as the count 12; anything else is returned unchanged."""
    if isinstance(got, Tensor) and got.numel() == 1 and got.layout == torch.strided:
        if got.device.type == "meta" or got.is_complex():
            return got
        got = got.item()
    if isinstance(got, float) and got.is_integer():
        got = int(got)
    return got


def expect_int(got: Any, *, what: str = "") -> int:
    """Return got as an int (12, 12.0 and tensor(12) all count); else raise Wrong."""
    got = as_int(got)
    if not isinstance(got, int) or isinstance(got, bool):
        raise Wrong(_prefixed(what, f"expected an int, got {type(got).__name__}"))
    if abs(got) >= 2**63:
        digits = len(str(abs(got)))
        raise Wrong(
            _prefixed(
                what, f"expected an int below 2**63, got {str(got)[:12]}... ({digits} digits)"
            )
        )
    return got


def expect_number(got: Any, *, what: str = "") -> float:
    """Return got as a float (an int, a float or a one-element real tensor); else raise Wrong.

    A str such as "64" is not a number here, nor a bool, nor one too large for a float.
    """
    if isinstance(got, Tensor):
        if got.numel() != 1:
            raise Wrong(
                _prefixed(what, f"expected one number, got a tensor of shape {_shape(got)}")
            )
        expect_tensor(got, what=what)  # refuses meta, sparse and complex tensors
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        raise Wrong(_prefixed(what, f"expected a number, got {type(got).__name__} {got!r:.30}"))
    try:
        return float(got)
    except OverflowError:
        raise Wrong(_prefixed(what, f"got {str(got)[:12]}..., too large for a float")) from None


def close(got: Any, want: Any, *, atol: float = ATOL, rtol: float = RTOL) -> bool:
    """Same shape and values (numbers count as 0-d tensors); bools must be bools and equal.

    NaN matches only NaN, so a known mistake that yields NaN is recognised by where it does.
    """
    if not isinstance(got, (Tensor, int, float)) or not isinstance(want, (Tensor, int, float)):
        return False
    try:  # 10**400 does not fit a tensor; a meta or sparse tensor has no values to compare
        got, want = torch.as_tensor(got).detach(), torch.as_tensor(want).detach()
        if any(x.layout != torch.strided or x.device.type == "meta" for x in (got, want)):
            return False
    except (OverflowError, RuntimeError, TypeError):
        return False
    if _shape(got) != _shape(want):
        return False
    if got.dtype == torch.bool or want.dtype == torch.bool:
        return got.dtype == want.dtype and bool(torch.equal(got, want))
    if got.is_complex() or want.is_complex():
        return False
    return bool(torch.allclose(got.double(), want.double(), rtol=rtol, atol=atol, equal_nan=True))


def _show(x: Tensor) -> str:
    value = x.item()
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def first_difference(got: Tensor, want: Tensor, *, atol: float = ATOL, rtol: float = RTOL) -> str:
    """Name the first position where got and want (same shape) differ, with both values."""
    if got.dtype == torch.bool or want.dtype == torch.bool:
        wrong = got != want
    else:
        wrong = ~torch.isclose(got.detach().double(), want.double(), rtol=rtol, atol=atol)
    if got.dim() == 0:
        return f"wrong value: expected {_show(want)}, got {_show(got)}"
    index = tuple(int(i) for i in wrong.nonzero()[0])
    return (
        f"wrong value at position {index}: expected {_show(want[index])}, got {_show(got[index])}"
    )


def name_mistake(got: Any, mistakes: Mistakes, *, atol: float = ATOL, rtol: float = RTOL) -> None:
    """Raise Wrong with the message of the first known mistake whose result got matches."""
    for wrong, message in mistakes:
        if close(got, wrong, atol=atol, rtol=rtol):
            raise Wrong(message, named=True)


def compare(
    got: Any,
    want: Tensor,
    mistakes: Mistakes = (),
    *,
    what: str = "",
    atol: float = ATOL,
    rtol: float = RTOL,
) -> None:
    """Return if got matches want; else raise Wrong naming the known mistake, or the problem.

    In order: not a tensor; a known mistake (a table of (wrong result, message)); wrong shape;
    bool against non-bool; NaN or inf where every expected value is finite; the first wrong value.
    """
    got = expect_tensor(got, what=what)
    if close(got, want, atol=atol, rtol=rtol):
        return
    name_mistake(got, mistakes, atol=atol, rtol=rtol)
    if _shape(got) != _shape(want):
        raise Wrong(_prefixed(what, f"wrong shape: expected {_shape(want)}, got {_shape(got)}"))
    if (got.dtype == torch.bool) != (want.dtype == torch.bool):
        raise Wrong(_prefixed(what, f"wrong dtype: expected {want.dtype}, got {got.dtype}"))
    if got.is_floating_point() and bool(torch.isfinite(want).all()):
        if not bool(torch.isfinite(got).all()):
            raise Wrong(_prefixed(what, "contains NaN or inf; every expected value is finite"))
    raise Wrong(_prefixed(what, first_difference(got, want, atol=atol, rtol=rtol)))


def scale_mistakes(
    attend: Callable[[float], Tensor], width: str, d: int
) -> list[tuple[Tensor, str]]:
    """The ways to get attention's 1 / sqrt(d) wrong; attend(c) is the result with scores * c.

    width names d in the messages ("d_k", "d_head", "M").
    """
    return [
        (attend(1.0), f"the scores are not scaled: divide them by sqrt({width}) = sqrt({d})"),
        (attend(1 / d), f"you divided by {width} = {d} itself; divide by its square root"),
        (
            attend(math.sqrt(d)),
            f"you multiplied the scores by sqrt({width}) = sqrt({d}) instead of dividing: the "
            "softmax gets sharper, not calmer",
        ),
    ]


def randn(g: torch.Generator, *shape: int, scale: float = 1.0) -> Tensor:
    """Test inputs: normal numbers of the given shape and spread, from the checker's generator."""
    return torch.randn(*shape, generator=g) * scale
