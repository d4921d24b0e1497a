"""Small helpers shared by every explorer: CSS names, colormaps, controls, errors, a base class.

The shape of an explorer (the house style):

    controls --(read)--> frozen params dataclass --(pure core function)--> result dataclass
             --(draw)--> views (Heatmap / TokenLines), each updated by one message

`Explorer` wires that loop once; a subclass provides `_read_params`, `_compute` and `_draw`:

    class MyExplorer(Explorer):
        def __init__(self):
            self.n = int_slider("n", 1, 16, 4, name="n")
            self.map = Heatmap(title="weights")
            super().__init__(controls=[self.n], body=[self.map], name="my-explorer")
            self.refresh()

        def _read_params(self):  return MyParams(n=self.n.value)
        def _compute(self, params):  return my_pure_function(params)
        def _draw(self, result):  self.map.set_data(result.weights)
        def _views(self):  return {"weights": self.map}   # what the Export button saves

Any exception inside refresh() is shown in `explorer.error` (an HTML area), never as a
traceback; `explorer.result` holds the last good result for code to read.
`with explorer.hold_refresh(): ...` changes several controls with one refresh after;
`_compute` runs under `one_thread()` (from `attention.explore`; its docstring says why). The
Export button saves `_views()` to exports/<name>_<view>.png/.svg/.csv (widgets.export).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from attention import divisors as divisors  # re-exported: the head counts a width allows
from attention.explore import one_thread

CSS_PREFIX = "ac"

DEFAULT_CMAP = "viridis"
"""Sequential, perceptually uniform and colour-blind safe: the default for weights."""

DIVERGING_CMAP = "RdBu_r"
"""Colour-blind-safe diverging map (ColorBrewer), for scores that can be negative."""

COLORMAPS = ("viridis", "cividis", "magma", "RdBu_r", "PuOr_r", "gray_r")
"""Colormaps the browser component implements; matplotlib knows them by the same names."""

MASKED_FACE = "#eeeeee"  # background of a masked cell, under grey hatching
MASKED_HATCH = "#9a9a9a"
FULLY_MASKED_FACE = "#7a7a7a"  # a query row that may attend to nothing

DEFAULT_EXPORT_DIR = "exports"


def css(name: str) -> str:
    """Stable CSS class for browser tests and styling: css("heatmap") -> "ac-heatmap"."""
    return f"{CSS_PREFIX}-{name}"


def shape_str(shape: Iterable[int]) -> str:
    """(2, 3) -> "(2, 3)"; works for torch.Size, numpy shapes and tuples."""
    return str(tuple(int(s) for s in shape))


def entropy_nats(probs: Sequence[float]) -> float:
    """Shannon entropy in nats of one weight row (0 * log 0 counts as 0)."""
    return float(-sum(p * math.log(p) for p in probs if p > 0))


# --- controls -------------------------------------------------------------------------------

_STYLE = {"description_width": "initial"}
_LAYOUT = {"width": "260px"}


def int_slider(description: str, min: int, max: int, value: int, *, name: str) -> widgets.IntSlider:
    """A keyboard-operable integer slider that updates while dragging, with class ac-<name>."""
    w = widgets.IntSlider(
        value=value,
        min=min,
        max=max,
        description=description,
        continuous_update=True,
        style=_STYLE,
        layout=_LAYOUT,
    )
    w.add_class(css(name))
    return w


def float_slider(
    description: str,
    min: float,
    max: float,
    value: float,
    *,
    name: str,
    step: float = 0.01,
    log: bool = False,
) -> widgets.FloatSlider | widgets.FloatLogSlider:
    """A float slider (log10 scale when `log`, then min/max are the values, not exponents)."""
    if log:
        w = widgets.FloatLogSlider(
            value=value,
            base=10,
            min=math.log10(min),
            max=math.log10(max),
            step=step,
            description=description,
            continuous_update=True,
            readout_format=".3g",
            style=_STYLE,
            layout=_LAYOUT,
        )
    else:
        w = widgets.FloatSlider(
            value=value,
            min=min,
            max=max,
            step=step,
            description=description,
            continuous_update=True,
            style=_STYLE,
            layout=_LAYOUT,
        )
    w.add_class(css(name))
    return w


def dropdown(
    description: str, options: Sequence[Any], value: Any, *, name: str
) -> widgets.Dropdown:
    """A dropdown whose options can be replaced later (e.g. the divisors of a width)."""
    w = widgets.Dropdown(
        options=list(options), value=value, description=description, style=_STYLE, layout=_LAYOUT
    )
    w.add_class(css(name))
    return w


def toggle(description: str, value: bool, *, name: str) -> widgets.Checkbox:
    """A checkbox (keyboard: Tab then Space)."""
    w = widgets.Checkbox(value=value, description=description, indent=False, style=_STYLE)
    w.add_class(css(name))
    return w


def buttons(
    description: str, options: Sequence[Any], value: Any, *, name: str
) -> widgets.ToggleButtons:
    """A row of toggle buttons for a few named choices."""
    w = widgets.ToggleButtons(
        options=list(options),
        value=value,
        description=description,
        style={"description_width": "initial", "button_width": "auto"},
    )
    w.add_class(css(name))
    return w


def set_options(dropdown_: widgets.Dropdown, options: Sequence[Any], prefer: Any) -> None:
    """Replace a dropdown's options, keeping `prefer` when allowed, else the nearest option."""
    options = list(options)
    if list(dropdown_.options) == options and dropdown_.value == prefer:
        return
    if prefer not in options:
        prefer = min(options, key=lambda o: (abs(o - prefer), o))
    with dropdown_.hold_sync():  # one message; trait notifications stay immediate
        dropdown_.options = options
        dropdown_.value = prefer


def clamp_slider(slider: widgets.IntSlider, max_: int) -> None:
    """Set an int slider's max, moving its value inside the new range if needed."""
    if slider.max != max_:
        if slider.value > max_:
            slider.value = max_
        slider.max = max_


def refuse_clamped(name: str, control: widgets.Widget, requested: float) -> None:
    """Raise if a control clamped a starting value instead of taking it (sliders do silently)."""
    if math.isclose(float(control.value), float(requested), rel_tol=1e-9, abs_tol=1e-12):
        return
    lo, hi = control.min, control.max
    if isinstance(control, widgets.FloatLogSlider):
        lo, hi = control.base**lo, control.base**hi
    raise ValueError(f"{name}: expected a value in [{lo:g}, {hi:g}], got {requested}")


def panel_row(children: Sequence[widgets.Widget]) -> widgets.HBox:
    """Panels side by side, wrapping onto the next line when the page is narrow."""
    for child in children:
        child.layout.margin = "0 16px 8px 0"  # ipywidgets' Layout has no flex `gap`
    return widgets.HBox(list(children), layout=widgets.Layout(flex_flow="row wrap"))


# --- readouts and errors --------------------------------------------------------------------


def table_html(rows: Iterable[Sequence[Any]], header: Sequence[str] | None = None) -> str:
    """A small HTML table (cells are escaped) for readouts beside the plots."""
    cell = 'style="padding:1px 8px 1px 0;line-height:1.35;text-align:left"'
    out = [f'<table class="{css("table")}" style="border-collapse:collapse">']
    if header:
        out.append(
            "<tr>" + "".join(f"<th {cell}>{html.escape(str(h))}</th>" for h in header) + "</tr>"
        )
    for row in rows:
        out.append(
            "<tr>" + "".join(f"<td {cell}>{html.escape(str(c))}</td>" for c in row) + "</tr>"
        )
    out.append("</table>")
    return "".join(out)


class ErrorArea(widgets.HTML):
    """Shows the message of an exception in red instead of a traceback; hidden when empty."""

    def __init__(self) -> None:
        super().__init__(value="")
        self.add_class(css("error"))
        self.layout.display = "none"
        self.message = ""

    def show(self, exc: BaseException) -> None:
        self.message = f"{type(exc).__name__}: {exc}"
        self.value = f'<span style="color:#b00020">{html.escape(self.message)}</span>'
        self.layout.display = None

    def clear(self) -> None:
        if self.message:
            self.message = ""
            self.value = ""
            self.layout.display = "none"


# --- the explorer base class ----------------------------------------------------------------


class Explorer(widgets.VBox):
    """Base for explorers: watches controls, recomputes a pure function, redraws the views.

    Subclasses implement `_read_params() -> params`, `_compute(params) -> result`,
    `_draw(result)` and optionally `_sync_controls()` (adjust ranges that depend on other
    controls, e.g. head counts offered = divisors of the width) and `_views()` (the heatmaps
    that the Export button saves).

    Attributes:
        result: the last computed result dataclass (None before the first refresh).
        params: the params dataclass that produced `result`.
        error: the ErrorArea where a failed refresh shows its message.
    """

    def __init__(
        self,
        *,
        controls: Sequence[widgets.Widget],
        body: Sequence[widgets.Widget],
        name: str,
        header: widgets.Widget | None = None,
        export_dir: str | Path = DEFAULT_EXPORT_DIR,
    ) -> None:
        self.explorer_name = name
        self.result: Any = None
        self.params: Any = None
        self.error = ErrorArea()
        self.export_dir = Path(export_dir)
        self.export_button = widgets.Button(
            description="Export", icon="download", tooltip=("Save the panels as PNG, SVG and CSV")
        )
        self.export_button.add_class(css("export"))
        self.export_status = widgets.HTML("")
        self.export_status.add_class(css("export-status"))
        self.export_button.on_click(lambda _b: self._export_clicked())
        self._busy = False
        self.refreshes = 0
        footer = widgets.HBox([self.export_button, self.export_status])
        children = [header] if header is not None else []
        wrap = widgets.Layout(display="flex", flex_flow="row wrap", align_items="flex-start")
        children += [widgets.Box(list(controls), layout=wrap), self.error, *body, footer]
        super().__init__(children)
        self.add_class(css("explorer"))
        self.add_class(css(name))
        self._watch(controls)

    def _watch(self, controls: Iterable[widgets.Widget]) -> None:
        for c in controls:
            if isinstance(c, widgets.Box):
                self._watch(c.children)
            elif hasattr(c, "value"):
                c.observe(lambda _change: self.refresh(), names="value")

    # Subclass hooks ------------------------------------------------------------------------
    def _sync_controls(self) -> None:
        """Adjust control ranges that depend on other controls (called before reading)."""

    def _read_params(self) -> Any:
        raise NotImplementedError

    def _compute(self, params: Any) -> Any:
        raise NotImplementedError

    def _draw(self, result: Any) -> None:
        raise NotImplementedError

    def _views(self) -> dict[str, Any]:
        """Name -> Heatmap of the panels the Export button saves."""
        return {}

    # The loop ------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the controls, recompute and redraw; errors go to `self.error`."""
        if self._busy:  # a control changed by _sync_controls; the outer refresh covers it
            return
        self._busy = True
        try:
            self._sync_controls()
            params = self._read_params()
            with one_thread():
                result = self._compute(params)
            self._draw(result)
        except Exception as exc:  # noqa: BLE001 - shown to the learner, not raised into the UI
            self.error.show(exc)
        else:
            self.params, self.result = params, result
            self.refreshes += 1
            self.error.clear()
        finally:
            self._busy = False

    @contextmanager
    def hold_refresh(self) -> Iterator[None]:
        """Change several controls without a refresh per change; call refresh() after."""
        busy, self._busy = self._busy, True
        try:
            yield
        finally:
            self._busy = busy

    def export(self, folder: str | Path | None = None) -> list[Path]:
        """Save every panel of `_views()` as PNG, SVG and CSV into `folder`; return the paths."""
        from .export import export_heatmap  # matplotlib is imported only when exporting

        folder = Path(folder) if folder is not None else self.export_dir
        paths: list[Path] = []
        for view_name, view in self._views().items():
            paths += export_heatmap(view, folder, f"{self.explorer_name}_{view_name}")
        return paths

    def _export_clicked(self) -> None:
        try:
            paths = self.export()
        except Exception as exc:  # noqa: BLE001
            self.error.show(exc)
            return
        folder = paths[0].parent if paths else self.export_dir
        self.export_status.value = html.escape(f"saved {len(paths)} files to {folder}/")


def on_change(widget: widgets.Widget, fn: Callable[[Any], None]) -> None:
    """Call fn(new_value) whenever the widget's value changes."""
    widget.observe(lambda change: fn(change["new"]), names="value")
