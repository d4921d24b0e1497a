"""Input checks shared by the public functions: each error names the argument, expected and got."""

from __future__ import annotations

import torch
from torch import Tensor


def shape_str(shape: torch.Size | tuple[int, ...]) -> str:
    """Format a shape as `(2, 3)`; a 1-tuple as `(5,)` like Python does."""
    return str(tuple(shape))


def check_tensor(name: str, x: object, *, ndims: tuple[int, ...], finite: bool = True) -> Tensor:
    """Check that `x` is a non-empty floating tensor with one of the allowed ranks."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name}: expected a floating tensor, got {x.dtype}; use {name}.float()")
    if x.dim() not in ndims:
        ranks = " or ".join(f"{n}-D" for n in ndims)
        raise ValueError(f"{name}: expected a {ranks} tensor, got shape {shape_str(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"{name}: expected a non-empty tensor, got shape {shape_str(x.shape)}")
    # A finite sum means every entry is finite (inf or NaN anywhere makes the sum inf or NaN);
    # one reduction is several times cheaper than isfinite(x).all() on every call.
    if finite and not bool(torch.isfinite(x.sum())) and not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return x


def check_mask(mask: object, target: tuple[int, ...]) -> Tensor:
    """Check a boolean mask (True = may attend) that broadcasts to the scores' shape `target`."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"mask: expected a torch.Tensor of bool, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        hint = "use mask.bool()" if not mask.is_floating_point() else "use from_additive_mask(mask)"
        raise TypeError(f"mask: expected torch.bool (True = may attend), got {mask.dtype}; {hint}")
    # broadcasts to target without changing it: each of its dims, from the right, is 1 or
    # target's (torch.broadcast_shapes says the same, several times slower)
    fits = mask.dim() <= len(target) and all(
        m in (1, t) for m, t in zip(reversed(mask.shape), reversed(target), strict=False)
    )
    if not fits:
        raise ValueError(
            f"mask: shape {shape_str(mask.shape)} does not broadcast to the scores' shape "
            f"{shape_str(target)}"
        )
    return mask


def check_positive_int(name: str, value: object) -> int:
    """Check that a size argument is a positive int (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name}: expected a positive int, got {value}")
    return value


def divisors(n: int) -> list[int]:
    """All divisors of n in increasing order (the head counts a width allows)."""
    return [h for h in range(1, n + 1) if n % h == 0]


def check_divisible(name: str, width: int, n_heads: int) -> None:
    """Raise unless `width` splits evenly into `n_heads` heads; the hint lists the head counts."""
    if width % n_heads:
        raise ValueError(
            f"{name}={width} is not divisible by n_heads={n_heads}; "
            f"choose n_heads from {divisors(width)}"
        )
