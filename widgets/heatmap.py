"""Heatmaps and token lines drawn in the browser from the numbers (anywidget + <canvas>).

Why: a kernel-side matplotlib redraw costs 100-300 ms per slider move; sending the numbers and
drawing them in the browser keeps a slider move at the round-trip floor (~30 ms measured).

`Heatmap` - one matrix, or a grid of small multiples (e.g. per-head weights):

    hm = Heatmap(title="weights", colormap="viridis", vmin=0.0)
    hm.set_data(weights,                 # (R, C) or (P, R, C): torch tensor, numpy or lists
                masked=mask,             # bool, True = masked (drawn hatched); broadcasts
                fully_masked=None,       # (P, R) or (R,) bool rows drawn grey; default:
                                         #   rows whose every cell is masked
                row_labels=q_tokens, col_labels=k_tokens,
                panel_titles=["head 0", "head 1"])
    hm.on_click(lambda row, col, panel: ...)   # clicks (and Enter/Space on a focused cell)
    hm.values        # what the browser holds: float32 (P, R, C); -inf and NaN kept
    hm.limits        # [lo, hi] of the colour scale actually used

Traits (set several at once with `set_data(..., **traits)` or `with hm.hold_sync():` so a
change is one message): values, masked, fully_masked, row_labels, col_labels, panel_titles,
title, colormap (one of widgets._common.COLORMAPS), vmin / vmax (None = automatic from the
finite unmasked values) and symmetric (automatic limits centred on 0, for diverging maps),
which stay in the kernel and set the synced `limits`,
show_numbers (values printed in cells of >= 16 px), show_colorbar, colorbar_label, columns
(small multiples per row; 0 = automatic), cell_size (px; 0 = fit panel_size, see
`auto_cell_size`), panel_size, highlight_row (outline one row in every panel; -1 = none),
clickable, digits.

Layout: the colour bar spans the grids exactly (top of the first to bottom of the last). Every
row and column is labelled in cells of >= 7 px (LABELLED_CELL_MIN; the font shrinks from 11 to
7 px), e.g. all 32 rows of a 224 px grid; smaller cells label every second (third, ...) row.

`TokenLines` - query tokens on the left, key tokens on the right, a line for every weight
(opacity and width = weight), like BertViz's head view; hover or click a query token to see only
its lines. `tl.set_data(weights (Tq, Tk), query_tokens, key_tokens=None)`; `tl.selected` is the
clicked query (-1 = all) and syncs back from the browser.

Browser tests: the widget root has the class `ac-heatmap` / `ac-token-lines` plus any classes
added with add_class, its `data-redraws` attribute counts the redraws, and `data-layout` (JSON)
holds the last layout: cell, labelStep, labelPx, gridLeft, gridTop, gridBottom, barX, barTop,
barH, width, height (px). `heatmapLayout` in static/heatmap.js computes it without a browser.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anywidget
import numpy as np
import traitlets as t

from ._common import COLORMAPS, DEFAULT_CMAP, css

_STATIC = Path(__file__).parent / "static"

ClickHandler = Callable[[int, int, int], None]


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


_ARRAY = {"sync": True, "to_json": _array_to_json, "from_json": _array_from_json}


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


CELL_MIN, CELL_MAX = 2, 40  # px; the browser clamps every cell size to this range
LABELLED_CELL_MIN = 7  # px; from here up every row and column gets a label (7-11 px font)


def auto_cell_size(panel_size: int, rows: int, cols: int) -> int:
    """The cell size (px) the browser draws with `cell_size=0`: panel_size / max(rows, cols)."""
    return max(CELL_MIN, min(panel_size // max(rows, cols, 1), CELL_MAX))


def _labels(labels: Sequence[Any] | None, n: int, name: str) -> list[str]:
    if labels is None:
        return []
    labels = [str(s) for s in labels]
    if len(labels) != n:
        raise ValueError(f"{name}: expected {n} labels, got {len(labels)}")
    return labels


class Heatmap(anywidget.AnyWidget):
    """A heatmap (or a grid of them) drawn on a canvas in the browser; see the module docstring.

    Args:
        values: optional initial (R, C) or (P, R, C) matrix.
        **traits: any trait (title, colormap, vmin, vmax, show_numbers, ...).
    """

    _esm = _STATIC / "heatmap.js"
    _css = _STATIC / "heatmap.css"
    _kind = t.Unicode("heatmap").tag(sync=True)

    values = t.Any(None, allow_none=True).tag(**_ARRAY)  # float32 (P, R, C)
    masked = t.Any(None, allow_none=True).tag(**_ARRAY)  # bool (P, R, C), True = masked
    fully_masked = t.Any(None, allow_none=True).tag(**_ARRAY)  # bool (P, R)
    row_labels = t.List(t.Unicode()).tag(sync=True)
    col_labels = t.List(t.Unicode()).tag(sync=True)
    panel_titles = t.List(t.Unicode()).tag(sync=True)
    title = t.Unicode("").tag(sync=True)
    colormap = t.Enum(COLORMAPS, DEFAULT_CMAP).tag(sync=True)
    vmin = t.Float(None, allow_none=True)
    vmax = t.Float(None, allow_none=True)
    symmetric = t.Bool(False)
    limits = t.List(t.Float(), [0.0, 1.0], minlen=2, maxlen=2).tag(sync=True)
    show_numbers = t.Bool(False).tag(sync=True)
    show_colorbar = t.Bool(True).tag(sync=True)
    colorbar_label = t.Unicode("").tag(sync=True)
    columns = t.Int(0, min=0).tag(sync=True)
    cell_size = t.Int(0, min=0).tag(sync=True)
    panel_size = t.Int(280, min=8).tag(sync=True)
    highlight_row = t.Int(-1).tag(sync=True)
    clickable = t.Bool(False).tag(sync=True)
    digits = t.Int(2, min=0, max=6).tag(sync=True)

    def __init__(self, values: Any = None, **traits: Any) -> None:
        super().__init__(**traits)
        self._click_handlers: list[ClickHandler] = []
        self.on_msg(self._handle_message)
        self.add_class(css("heatmap"))
        # copies of the masks last synced: compared by value, as the arrays may be changed in
        # place (or share memory with a tensor) after they were set
        self._sent_masks: dict[str, np.ndarray | None] = {
            "masked": _copy(self.masked),
            "fully_masked": _copy(self.fully_masked),
        }
        if values is not None:
            self.set_data(values)

    # Data -----------------------------------------------------------------------------------
    def set_data(
        self,
        values: Any,
        masked: Any = None,
        fully_masked: Any = None,
        *,
        row_labels: Sequence[Any] | None = None,
        col_labels: Sequence[Any] | None = None,
        panel_titles: Sequence[Any] | None = None,
        **traits: Any,
    ) -> None:
        """Replace the numbers (and optionally labels and other traits) in one message.

        Args:
            values: (R, C) or (P, R, C) numbers; -inf/NaN allowed (drawn hatched).
            masked: bool, True = masked; broadcastable to values' shape. None = nothing masked.
            fully_masked: bool rows (R,) or (P, R) drawn grey; None = rows whose every cell is
                masked.
            row_labels, col_labels: R and C labels; None keeps the old ones if they still fit.
            panel_titles: P titles for small multiples; None keeps the old ones if they fit.
            **traits: other traits to change in the same message (title, vmax, ...).

        Raises:
            ValueError: values not 2-D or 3-D or empty, masks or labels of the wrong shape.
        """
        v = to_numpy(values)
        if v.ndim == 2:
            v = v[None]  # (1, R, C)
        if v.ndim != 3 or v.size == 0:
            raise ValueError(
                f"values: expected a non-empty (R, C) or (P, R, C) array, got shape {v.shape}"
            )
        p, r, c = v.shape
        m = None
        if masked is not None:
            m = to_numpy(masked, bool)
            try:
                m = np.ascontiguousarray(np.broadcast_to(m, v.shape))
            except ValueError:
                raise ValueError(
                    f"masked: shape {m.shape} does not broadcast to values' shape {v.shape}"
                ) from None
        if fully_masked is not None:
            f = to_numpy(fully_masked, bool)
            try:
                f = np.ascontiguousarray(np.broadcast_to(f, (p, r)))
            except ValueError:
                raise ValueError(
                    f"fully_masked: shape {f.shape} does not broadcast to (P, R) = {(p, r)}"
                ) from None
        elif m is not None:
            f = m.all(axis=-1)  # (P, R)
        else:
            f = None
        rows = _labels(row_labels, r, "row_labels")
        cols = _labels(col_labels, c, "col_labels")
        titles = _labels(panel_titles, p, "panel_titles")
        with self.hold_sync():
            for name, value in traits.items():
                if not self.has_trait(name):
                    raise ValueError(f"set_data: unknown trait {name!r}")
                setattr(self, name, value)
            self.set_trait("values", v)
            # an unchanged mask is not re-sent (a seed change keeps it): arrays never compare
            # equal to traitlets, so it would travel with every update
            for name, mask in (("masked", m), ("fully_masked", f)):
                if not _same_array(self._sent_masks.get(name), mask):
                    self.set_trait(name, mask)
            # assign only changes: validating 64 labels per panel per update costs ~1 ms
            for name, new, n in (
                ("row_labels", rows if row_labels is not None else None, r),
                ("col_labels", cols if col_labels is not None else None, c),
                ("panel_titles", titles if panel_titles is not None else None, p),
            ):
                value = new if new is not None else _keep(getattr(self, name), n)
                if value != getattr(self, name):
                    setattr(self, name, value)

    @property
    def matrix(self) -> np.ndarray:
        """The single panel (R, C); ValueError for small multiples (use `values`)."""
        if self.values is None:
            raise ValueError("matrix: no data yet; call set_data(values) first")
        if self.values.shape[0] != 1:
            raise ValueError(f"matrix: this heatmap has {self.values.shape[0]} panels; use values")
        return self.values[0]

    @t.validate("values")
    def _validate_values(self, proposal: Any) -> np.ndarray | None:
        v = proposal["value"]
        if v is None:
            return None
        v = to_numpy(v)
        if v.ndim == 2:
            v = v[None]
        if v.ndim != 3:
            raise t.TraitError(f"values: expected (R, C) or (P, R, C), got shape {v.shape}")
        return v

    @t.validate("masked", "fully_masked")
    def _validate_mask(self, proposal: Any) -> np.ndarray | None:
        v = proposal["value"]
        return None if v is None else to_numpy(v, bool)

    @t.observe("masked", "fully_masked")
    def _mask_changed(self, change: Any) -> None:
        if hasattr(self, "_sent_masks"):  # not while __init__ sets the starting traits
            self._sent_masks[change["name"]] = _copy(change["new"])

    @t.observe("vmin", "vmax", "symmetric", "values", "masked")
    def _limits_inputs_changed(self, _change: Any) -> None:
        self._update_limits()

    def _update_limits(self) -> None:
        if self.values is None:
            return
        m = self.masked
        if m is not None and m.shape != self.values.shape:
            m = None  # set_data is midway: the new mask arrives next
        lo, hi = color_limits(self.values, m, self.vmin, self.vmax, self.symmetric)
        self.limits = [lo, hi]

    # Clicks --------------------------------------------------------------------------------
    def on_click(self, handler: ClickHandler, remove: bool = False) -> None:
        """Call handler(row, col, panel) when a cell is clicked (makes the heatmap clickable)."""
        if remove:
            self._click_handlers.remove(handler)
        else:
            self._click_handlers.append(handler)
        self.clickable = bool(self._click_handlers)

    def click(self, row: int, col: int, panel: int = 0) -> None:
        """Act as if the learner clicked a cell (what the browser sends); for tests and code."""
        self._handle_message(self, {"event": "click", "panel": panel, "row": row, "col": col}, [])

    def _handle_message(self, _widget: Any, content: dict, _buffers: list) -> None:
        if content.get("event") != "click" or self.values is None:
            return
        p, r, c = self.values.shape
        panel, row, col = int(content["panel"]), int(content["row"]), int(content["col"])
        if not (0 <= panel < p and 0 <= row < r and 0 <= col < c):
            raise ValueError(f"click: cell {(panel, row, col)} outside (P, R, C) = {(p, r, c)}")
        for handler in list(self._click_handlers):
            handler(row, col, panel)


def _same_array(old: np.ndarray | None, new: np.ndarray | None) -> bool:
    """Both arrays and equal in shape, dtype and every element (None never counts as same)."""
    return (
        old is not None
        and new is not None
        and old.shape == new.shape
        and old.dtype == new.dtype
        and np.array_equal(old, new)
    )


def _copy(value: np.ndarray | None) -> np.ndarray | None:
    return None if value is None else value.copy()


def _keep(labels: list[str], n: int) -> list[str]:
    return labels if len(labels) == n else []


class TokenLines(anywidget.AnyWidget):
    """Lines from each query token to each key token, opacity and width = attention weight.

    Args:
        weights: optional initial (Tq, Tk) weights.
        query_tokens: Tq strings; key_tokens: Tk strings (default: the query tokens).
        **traits: title, color (a CSS colour), selected (query index, -1 = all).
    """

    _esm = _STATIC / "heatmap.js"
    _css = _STATIC / "heatmap.css"
    _kind = t.Unicode("lines").tag(sync=True)

    weights = t.Any(None, allow_none=True).tag(**_ARRAY)  # float32 (Tq, Tk)
    masked = t.Any(None, allow_none=True).tag(**_ARRAY)  # bool (Tq, Tk)
    query_tokens = t.List(t.Unicode()).tag(sync=True)
    key_tokens = t.List(t.Unicode()).tag(sync=True)
    selected = t.Int(-1).tag(sync=True)
    title = t.Unicode("").tag(sync=True)
    color = t.Unicode("#1f77b4").tag(sync=True)

    def __init__(
        self,
        weights: Any = None,
        query_tokens: Sequence[str] | None = None,
        key_tokens: Sequence[str] | None = None,
        **traits: Any,
    ) -> None:
        super().__init__(**traits)
        self.add_class(css("token-lines"))
        if weights is not None:
            self.set_data(weights, query_tokens, key_tokens)

    def set_data(
        self,
        weights: Any,
        query_tokens: Sequence[Any] | None = None,
        key_tokens: Sequence[Any] | None = None,
        masked: Any = None,
        **traits: Any,
    ) -> None:
        """Replace weights (Tq, Tk) and tokens in one message; `selected` is kept if in range.

        Raises:
            ValueError: weights not 2-D, or token lists whose lengths differ from Tq / Tk.
        """
        w = to_numpy(weights)
        if w.ndim != 2 or w.size == 0:
            raise ValueError(f"weights: expected a non-empty (Tq, Tk) array, got shape {w.shape}")
        tq, tk = w.shape
        if query_tokens is None:
            query_tokens = [str(i) for i in range(tq)]
        if key_tokens is None:
            key_tokens = query_tokens if tk == tq else [str(j) for j in range(tk)]
        qt = _labels(query_tokens, tq, "query_tokens")
        kt = _labels(key_tokens, tk, "key_tokens")
        m = None
        if masked is not None:
            m = np.ascontiguousarray(np.broadcast_to(to_numpy(masked, bool), w.shape))
        with self.hold_sync():
            for name, value in traits.items():
                setattr(self, name, value)
            self.set_trait("weights", w)
            self.set_trait("masked", m)
            self.query_tokens = qt
            self.key_tokens = kt
            if self.selected >= tq:
                self.selected = -1
