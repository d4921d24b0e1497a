"""Numbers on their way to a view: numpy arrays, their binary wire format, colour limits, labels.

Arrays travel to the browser as binary buffers beside the JSON message (ipywidgets extracts
memoryviews), not as JSON lists: a (30 x 9) x 128 x 128 stack of attention maps is 17 MB as
float32 and far more as JSON text, and -inf and NaN survive the trip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def to_numpy(x: Any, dtype: type | np.dtype = np.float32) -> np.ndarray:
    """A torch tensor, numpy array or nested list -> a C-contiguous numpy array of `dtype`."""
    if hasattr(x, "detach"):  # torch.Tensor, without importing torch here
        x = x.detach().cpu().numpy()
    return np.ascontiguousarray(np.asarray(x, dtype=dtype))


def _array_to_json(value: np.ndarray | None, _widget: Any) -> dict | None:
    # The buffer travels as a binary frame beside the JSON (ipywidgets extracts memoryviews).
    if value is None:
        return None
    dtype = "float32" if value.dtype == np.float32 else "uint8"
    wire = value if dtype == "float32" else value.astype(np.uint8, copy=False)
    return {"shape": list(value.shape), "dtype": dtype, "buffer": memoryview(wire.reshape(-1))}


def _array_from_json(value: dict | None, _widget: Any) -> np.ndarray | None:
    if value is None:
        return None
    dtype = np.float32 if value["dtype"] == "float32" else np.uint8
    arr = np.frombuffer(bytes(value["buffer"]), dtype=dtype).reshape(value["shape"])
    return arr if dtype == np.float32 else arr.astype(bool)


ARRAY = {"sync": True, "to_json": _array_to_json, "from_json": _array_from_json}


def color_limits(
    values: np.ndarray,
    masked: np.ndarray | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
    symmetric: bool = False,
) -> tuple[float, float]:
    """The colour scale [lo, hi]: given limits, else the range of finite unmasked values.

    `symmetric` centres automatic limits on 0 (for diverging colormaps). A constant matrix gets
    a range of width 1 around its value so it still maps to a colour.
    """
    keep = np.isfinite(values)
    if masked is not None:
        keep &= ~masked
    finite = values[keep]
    if finite.size:
        lo, hi = float(finite.min()), float(finite.max())
    else:
        lo, hi = 0.0, 1.0
    if symmetric:
        m = max(abs(lo), abs(hi))
        lo, hi = -m, m
    lo = float(vmin) if vmin is not None else lo
    hi = float(vmax) if vmax is not None else hi
    if hi <= lo:  # constant data, or one given limit beyond all the data
        if vmin is None and vmax is None:
            lo, hi = lo - 0.5, lo + 0.5
        elif vmax is None:
            hi = lo + 1.0
        else:
            lo = hi - 1.0
    return lo, hi


def check_labels(labels: Sequence[Any] | None, n: int, name: str) -> list[str]:
    if labels is None:
        return []
    labels = [str(s) for s in labels]
    if len(labels) != n:
        raise ValueError(f"{name}: expected {n} labels, got {len(labels)}")
    return labels
