"""Heatmaps drawn in the browser from the numbers (anywidget + <canvas>).

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
title, colormap (one of widgets.views.style.COLORMAPS), vmin / vmax (None = automatic from the
finite unmasked values) and symmetric (automatic limits centred on 0, for diverging maps),
which stay in the kernel and set the synced `limits`, categories (kernel-side too:
[(value, name), ...] for values that name categories; pictures draw a legend of them),
show_numbers (values printed in cells of >= 16 px), show_colorbar, colorbar_label, columns
(small multiples per row; 0 = automatic), cell_size (px; 0 = fit panel_size, see
`auto_cell_size`), panel_size, highlight_row (outline one row in every panel; -1 = none),
clickable, digits, zoom (every length on the canvas times this: presenter mode).

Layout: the colour bar spans the grids exactly (top of the first to bottom of the last). Every
row and column is labelled in cells of >= 7 px (LABELLED_CELL_MIN; the font shrinks from 11 to
7 px), e.g. all 32 rows of a 224 px grid; smaller cells label every second (third, ...) row.

Token lines (token_lines.py) and charts (chart.py) are the other canvas views; all three share
zoom, export and pictures through `CanvasView` (canvas.py).

Browser tests: the widget root has the class `ac-heatmap` plus any classes
added with add_class, its `data-redraws` attribute counts the redraws, `data-draw-ms` times the
last one, and `data-layout` (JSON) holds the last layout: cell, labelStep, labelPx, gridLeft,
gridTop, gridBottom, barX, barTop, barH, width, height (px). `heatmapLayout` in
static/heatmap.js computes it without a browser.

Accessibility: the canvas is an image named by its title ("weights, head 0: 1 x 6 x 6") and
described by a visually hidden summary and table of its first 8 rows and 12 columns (`.ac-sr`,
written when the page is idle); a clickable heatmap is a keyboard stop (arrows, Enter).
A canvas that shrinks keeps its size while a slider moves and fits when the learner pauses: a
resized canvas costs a bitmap and a layout of the whole page (static/common.js: setupCanvas).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import traitlets as t

from .arrays import ARRAY, check_labels, color_limits, to_numpy
from .canvas import CanvasView
from .style import CELL_MAX, CELL_MIN, COLORMAPS, DEFAULT_CMAP, css, esm
from .text import Text, translated

CSV_HEADER = (
    "panel",
    "panel_title",
    "row",
    "row_label",
    "col",
    "col_label",
    "value",
    "masked",
    "row_fully_masked",
)

ClickHandler = Callable[[int, int, int], None]


class _Labels(t.List):
    """A list of str, checked in one pass when it is one: List(Unicode) validates each element
    through traitlets, ~1.5 ms of a 64-token explorer update's ~8 ms in the kernel."""

    def validate_elements(self, obj: Any, value: Any) -> Any:
        if all(type(s) is str for s in value):
            return value
        return super().validate_elements(obj, value)


class _TextLabels(_Labels):
    """Labels a learner reads (panel titles): in the course's language (views/text.py)."""

    def validate_elements(self, obj: Any, value: Any) -> Any:
        return translated(super().validate_elements(obj, value))


def auto_cell_size(panel_size: int, rows: int, cols: int) -> int:
    """The cell size (px) the browser draws with `cell_size=0`: panel_size / max(rows, cols)."""
    return max(CELL_MIN, min(panel_size // max(rows, cols, 1), CELL_MAX))


class Heatmap(CanvasView):
    """A heatmap (or a grid of them) drawn on a canvas in the browser; see the module docstring.

    Args:
        values: optional initial (R, C) or (P, R, C) matrix.
        **traits: any trait (title, colormap, vmin, vmax, show_numbers, ...).
    """

    _esm = esm("heatmap")

    values = t.Any(None, allow_none=True).tag(**ARRAY)  # float32 (P, R, C)
    masked = t.Any(None, allow_none=True).tag(**ARRAY)  # bool (P, R, C), True = masked
    fully_masked = t.Any(None, allow_none=True).tag(**ARRAY)  # bool (P, R)
    row_labels = _Labels(t.Unicode()).tag(sync=True)
    col_labels = _Labels(t.Unicode()).tag(sync=True)
    panel_titles = _TextLabels(t.Unicode()).tag(sync=True)
    title = Text("").tag(sync=True)
    colormap = t.Enum(COLORMAPS, DEFAULT_CMAP).tag(sync=True)
    vmin = t.Float(None, allow_none=True)
    vmax = t.Float(None, allow_none=True)
    symmetric = t.Bool(False)
    limits = t.List(t.Float(), [0.0, 1.0], minlen=2, maxlen=2).tag(sync=True)
    show_numbers = t.Bool(False).tag(sync=True)
    show_colorbar = t.Bool(True).tag(sync=True)
    colorbar_label = Text("").tag(sync=True)
    columns = t.Int(0, min=0).tag(sync=True)
    cell_size = t.Int(0, min=0).tag(sync=True)
    panel_size = t.Int(280, min=8).tag(sync=True)
    highlight_row = t.Int(-1).tag(sync=True)
    clickable = t.Bool(False).tag(sync=True)
    digits = t.Int(2, min=0, max=6).tag(sync=True)
    # kernel-side: values that are categories, [(value, name), ...]; pictures and exports draw
    # a legend swatch per category instead of a colour bar (the browser's readout names them)
    categories = t.List(t.Tuple(t.Float(), Text()), [])

    def __init__(
        self, values: Any = None, masked: Any = None, fully_masked: Any = None, **traits: Any
    ) -> None:
        """Heatmap(values, masked, fully_masked, **traits): the arguments of set_data."""
        if values is None and (masked is not None or fully_masked is not None):
            raise ValueError("masked, fully_masked: expected values to go with them, got none")
        super().__init__(**traits)
        self._click_handlers: list[ClickHandler] = []
        self.on_msg(self._handle_message)
        self.add_class(css("heatmap"))
        # copies of the arrays last synced: compared by value, as the arrays may be changed in
        # place (or share memory with a tensor) after they were set
        self._sent_arrays: dict[str, np.ndarray | None] = {
            name: _copy(getattr(self, name)) for name in ("values", "masked", "fully_masked")
        }
        if values is not None:
            self.set_data(values, masked, fully_masked)

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
        rows = check_labels(row_labels, r, "row_labels")
        cols = check_labels(col_labels, c, "col_labels")
        titles = translated(check_labels(panel_titles, p, "panel_titles"))
        with self.hold_sync():
            for name, value in traits.items():
                if not self.has_trait(name):
                    raise ValueError(f"set_data: unknown trait {name!r}")
                setattr(self, name, value)
            # unchanged numbers (and masks) are not re-sent, so the panel is not redrawn: a
            # mask change keeps Q and K, a seed change keeps the mask. Arrays never compare
            # equal to traitlets, so without this they would travel with every update.
            if not _same_array(self._sent_arrays.get("values"), v):
                self.set_trait("values", v)
            for name, mask in (("masked", m), ("fully_masked", f)):
                if not _same_array(self._sent_arrays.get(name), mask):
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

    @t.observe("values", "masked", "fully_masked")
    def _array_changed(self, change: Any) -> None:
        if hasattr(self, "_sent_arrays"):  # not while __init__ sets the starting traits
            self._sent_arrays[change["name"]] = _copy(change["new"])

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

    # Export (the protocol of views/export.py) ---------------------------------------------
    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.values is None:
            raise ValueError("heatmap: nothing to export; call set_data(values) first")
        v = self.values  # (P, R, C)
        m = self.masked if self.masked is not None else np.zeros(v.shape, bool)
        f = self.fully_masked if self.fully_masked is not None else np.zeros(v.shape[:2], bool)
        return v, m, f

    def figure(self) -> Any:
        """A matplotlib Figure of what the browser shows: same colours, hatching and labels."""
        from .figures import heatmap_figure  # matplotlib only when a figure is asked for

        v, m, f = self._arrays()
        return heatmap_figure(
            v,
            m,
            f,
            row_labels=self.row_labels,
            col_labels=self.col_labels,
            panel_titles=self.panel_titles,
            title=self.title,
            colormap=self.colormap,
            limits=tuple(self.limits),
            show_numbers=self.show_numbers,
            digits=self.digits,
            colorbar_label=self.colorbar_label,
            columns=self.columns,
            colorbar=self.show_colorbar,
            categories=[tuple(c) for c in self.categories],
        )

    def csv_table(self) -> tuple[tuple[str, ...], list[tuple]]:
        """One row per cell in CSV_HEADER order; -inf is kept (written as "-inf")."""
        v, m, f = self._arrays()
        p, r, c = v.shape
        titles, rl, cl = self.panel_titles, self.row_labels, self.col_labels
        rows = [
            (
                k,
                titles[k] if len(titles) == p else "",
                i,
                rl[i] if len(rl) == r else "",
                j,
                cl[j] if len(cl) == c else "",
                float(v[k, i, j]),
                int(m[k, i, j]),
                int(f[k, i]),
            )
            for k in range(p)
            for i in range(r)
            for j in range(c)
        ]
        return CSV_HEADER, rows

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
    """Both arrays and equal in shape, dtype and every element, NaN matching NaN (None never
    counts as the same)."""
    return (
        old is not None
        and new is not None
        and old.shape == new.shape
        and old.dtype == new.dtype
        and np.array_equal(old, new, equal_nan=old.dtype.kind == "f")
    )


def _copy(value: np.ndarray | None) -> np.ndarray | None:
    return None if value is None else value.copy()


def _keep(labels: list[str], n: int) -> list[str]:
    return labels if len(labels) == n else []
