"""Input checks of the core's public functions, kept here so that each function reads as its maths.

Every error names the argument, what was expected and what was given. Tests match these texts and
attention/language/zh.toml translates some of them: a changed message is changed there too.
"""

import math

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


def check_batch(
    name: str, x: object, width: int, label: str = "", *, finite: bool = True
) -> Tensor:
    """check_tensor for a batch (B, T, width); `label` names the width: "width d_model=8"."""
    check_tensor(name, x, ndims=(3,), finite=finite)
    if x.shape[-1] != width:
        raise ValueError(f"{name}: expected width {label}{width}, got shape {shape_str(x.shape)}")
    return x


def check_int(name: str, value: object, *, minimum: int | None = None) -> int:
    """Check that `value` is an int (bools are refused), at least `minimum` when given."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}: expected an int >= {minimum}, got {value}")
    return value


def check_positive_int(name: str, value: object) -> int:
    """Check that a size argument is a positive int (bools are refused)."""
    if check_int(name, value) < 1:
        raise ValueError(f"{name}: expected a positive int, got {value}")
    return value


def check_sizes(**sizes: object) -> None:
    """check_positive_int for each keyword; None (a size left to its default) passes."""
    for name, value in sizes.items():
        if value is not None:
            check_positive_int(name, value)


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


def check_attention_inputs(
    query: Tensor, key: Tensor, value: Tensor, mask: object, scale: float | None, finite: bool
) -> tuple[int, float]:
    """Check q, k, v and mask as scaled_dot_product_attention takes them -> (n_rep, scale).

    n_rep = H / Hkv query heads per key/value head (1 unless 4-D key/value have fewer heads).
    """
    check_tensor("query", query, ndims=(2, 3, 4), finite=finite)
    check_tensor("key", key, ndims=(query.dim(),), finite=finite)
    check_tensor("value", value, ndims=(query.dim(),), finite=finite)
    for name, x in (("key", key), ("value", value)):  # no silent promotion: refuse the mix
        if x.dtype != query.dtype:
            raise TypeError(
                f"{name}: expected query's dtype {query.dtype}, got {x.dtype}; convert one, "
                f"e.g. {name}.to(query.dtype)"
            )
    *lead, _, d = query.shape
    if key.shape[-1] != d:
        raise ValueError(
            f"key: last dim must equal query's width D={d}, got key shape {shape_str(key.shape)}"
        )
    if value.shape[-2] != key.shape[-2]:
        raise ValueError(
            f"value: length must equal key's length Tk={key.shape[-2]}, got value shape "
            f"{shape_str(value.shape)}"
        )
    for name, x in (("key", key), ("value", value)):
        grouped = x.dim() == 4 and x.shape[0] == lead[0]  # (B, Hkv, Tk, D): maybe fewer heads
        if tuple(x.shape[:-2]) != tuple(lead) and not grouped:
            raise ValueError(
                f"{name}: leading dims {shape_str(x.shape[:-2])} must equal query's {tuple(lead)}"
            )
    if value.shape[:-2] != key.shape[:-2]:
        raise ValueError(
            f"value: leading dims {shape_str(value.shape[:-2])} must equal key's "
            f"{shape_str(key.shape[:-2])}"
        )
    n_rep = 1
    if query.dim() == 4 and key.shape[1] != query.shape[1]:
        h, hkv = query.shape[1], key.shape[1]
        if h % hkv:
            raise ValueError(
                f"key: {hkv} heads do not divide query's {h} heads; grouped-query attention "
                f"needs H divisible by Hkv, choose Hkv from {divisors(h)}"
            )
        n_rep = h // hkv
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    elif not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale: expected a positive finite number, got {scale}")
    if mask is not None:
        check_mask(mask, (*lead, query.shape[-2], key.shape[-2]))  # (..., Tq, Tk)
    return n_rep, scale


def check_overflow(scores: Tensor, query: Tensor, key: Tensor) -> None:
    """Refuse finite inputs whose q . k overflows (|q|, |k| ~ 1e19 in float32): NaN weights."""
    if bool(torch.isfinite(scores.sum())) or bool(torch.isfinite(scores).all()):
        return  # every score is finite (only the sum may have overflowed)
    big = max(float(query.detach().abs().max()), float(key.detach().abs().max()))
    raise ValueError(
        f"scores: q @ k.T overflows {scores.dtype} (largest |entry| of query or key: {big:.3g}), "
        "which would make the weights NaN; expected inputs small enough for their products to "
        "be finite: scale them down or use float64"
    )


def check_base(base: object) -> float:
    """A positional base must be a positive finite number: base <= 0 gives NaN angles."""
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise TypeError(f"base: expected a number (e.g. 10000.0), got {type(base).__name__}")
    if not (math.isfinite(base) and base > 0):
        raise ValueError(f"base: expected a positive finite number (e.g. 10000.0), got {base}")
    return float(base)


def check_rope_inputs(x: Tensor, positions: object, base: object, layout: object) -> None:
    """Check apply_rope's arguments: x (..., T, D) with D even, integer positions (T,)."""
    check_tensor("x", x, ndims=tuple(range(2, 9)), finite=False)
    *_, t, d = x.shape
    if d % 2:
        raise ValueError(f"x: RoPE rotates pairs of features, so D must be even, got D={d}")
    if layout not in ("half", "interleaved"):
        raise ValueError(f"layout: expected 'half' or 'interleaved', got {layout!r}")
    check_base(base)
    integer = isinstance(positions, Tensor) and not (
        positions.is_floating_point() or positions.is_complex() or positions.dtype == torch.bool
    )
    if not integer:
        got = positions.dtype if isinstance(positions, Tensor) else type(positions).__name__
        raise TypeError(f"positions: expected an integer tensor, got {got}; e.g. torch.arange(T)")
    if positions.shape != (t,):
        raise ValueError(
            f"positions: expected shape ({t},) to match x's T={t}, got {shape_str(positions.shape)}"
        )


def check_ints(name: str, x: object, ndims: tuple[int, ...], what: str, **high: int) -> Tensor:
    """x as ints of a rank in `ndims`, in [0, n] for a `high` such as max_len=n, else non-empty."""
    t = torch.as_tensor(x)
    empty = t.numel() == 0 and not high
    if t.dim() not in ndims or empty or t.dtype.is_floating_point or t.dtype == torch.bool:
        raise ValueError(f"{name}: expected {what}, got {t.dtype} of shape {shape_str(t.shape)}")
    for bound, n in high.items():  # one entry, e.g. max_len=8
        if bool((t < 0).any()) or bool((t > n).any()):
            raise ValueError(f"{name}: expected values in [0, {bound}={n}], got {t.tolist()}")
    return t


def check_bool(name: str, mask: Tensor, ndim: int | None = None, shape: str = "") -> Tensor:
    """A bool tensor, of `ndim` dims when given (`shape` names them in the error)."""
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise TypeError(f"{name}: expected a torch.bool tensor, got {got}")
    if ndim is not None and mask.dim() != ndim:
        raise ValueError(f"{name}: expected shape {shape}, got {shape_str(mask.shape)}")
    return mask


def check_lam(lam: Tensor, shape: torch.Size) -> None:
    """Differential attention's lambda: finite, and broadcast to the weights' shape unchanged."""
    if not bool(torch.isfinite(lam).all()):
        raise ValueError(f"lam: expected a finite number, got {lam}")
    try:
        got = torch.broadcast_shapes(lam.shape, shape)
    except RuntimeError:
        raise ValueError(
            f"lam: shape {shape_str(lam.shape)} does not broadcast to the weights' shape "
            f"{shape_str(shape)}"
        ) from None
    if got != shape:
        raise ValueError(
            f"lam: shape {shape_str(lam.shape)} would change the weights' shape "
            f"{shape_str(shape)} to {shape_str(got)}"
        )


def check_token_ids(name: str, tokens: object, n_vocab: int, max_len: int, offset: int) -> None:
    """Token ids (B, T): torch.long, in [0, n_vocab), at positions offset + t below max_len."""
    if not isinstance(tokens, Tensor) or tokens.dtype != torch.long or tokens.dim() != 2:
        got = type(tokens).__name__
        if isinstance(tokens, Tensor):
            got = f"{tokens.dtype} of shape {shape_str(tokens.shape)}"
        raise TypeError(f"{name}: expected token ids, a torch.long tensor (B, T), got {got}")
    if tokens.shape[1] == 0:
        raise ValueError(f"{name}: expected at least one token, got shape (B, 0)")
    if offset + tokens.shape[1] > max_len:
        raise ValueError(f"{name}: length {offset + tokens.shape[1]} exceeds max_len={max_len}")
    if bool((tokens < 0).any()) or bool((tokens >= n_vocab).any()):
        raise ValueError(f"{name}: token ids must lie in [0, {n_vocab})")
