"""SeriesChart: a small canvas chart of bars and lines over one shared x, drawn in the browser.

Histograms and curves are heights, which a 1-row heatmap strip would show as colours only.
The JavaScript is static/chart.js; `chart.export(folder, stem)` saves what a chart shows as
PNG and SVG (matplotlib) and CSV, and `zoom` scales it for presenter mode, like every canvas
view (canvas.py: CanvasView).

    chart = SeriesChart(name="histogram", width=420, height=230)
    chart.set_data(centers, [{"name": "q·k", "values": hist, "color": "#D55E00", "kind": "bar"}],
                   x_label="score", y_label="fraction of pairs")
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import traitlets

from attention.language import language

from .canvas import CanvasView
from .style import PALETTE as PALETTE  # re-exported: the series colours explorers use
from .style import css, esm
from .text import Text, translated


class SeriesChart(CanvasView):
    """A small canvas chart of bars and lines over one shared x, drawn in the browser.

    Set everything at once with `set_data(x, series, **options)`; one message per update.
    `series` is a list of dicts: {"name", "values" (one per x), "color", "kind": "bar"|"line",
    optional "dash": True}. Empty `x_range` / `y_range` mean "fit the data".
    """

    _esm = esm("chart")
    x = traitlets.List(traitlets.Float()).tag(sync=True)
    series = traitlets.List(traitlets.Dict()).tag(sync=True)
    title = Text("").tag(sync=True)
    x_label = Text("").tag(sync=True)
    y_label = Text("").tag(sync=True)
    x_range = traitlets.List(traitlets.Float()).tag(sync=True)
    y_range = traitlets.List(traitlets.Float()).tag(sync=True)
    x_log = traitlets.Bool(False).tag(sync=True)
    y_log = traitlets.Bool(False).tag(sync=True)
    x_ticks = traitlets.List(traitlets.Float()).tag(sync=True)
    x_tick_labels = traitlets.List(traitlets.Unicode()).tag(sync=True)
    y_ticks = traitlets.List(traitlets.Float()).tag(sync=True)
    markers = traitlets.List(traitlets.Dict()).tag(sync=True)  # [{"x": 64, "label": "d_k=64"}]
    bar_mode = traitlets.Unicode("overlay").tag(sync=True)  # or "group": bars side by side
    legend = traitlets.Unicode("top-right").tag(sync=True)  # or "top-left", "right" (outside)
    width = traitlets.Int(380).tag(sync=True)
    height = traitlets.Int(220).tag(sync=True)

    def __init__(self, *, name: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_class(css("chart"))
        self.add_class(css(name))

    def set_data(self, x: Sequence[float], series: Sequence[dict], **options) -> None:
        """Replace the data (and any options such as markers) in one synced update."""
        clean = [{**s, "values": [_finite(v) for v in s["values"]]} for s in series]
        if language() != "en":  # the legend and the markers' labels in the course's language
            names = translated([s.get("name") for s in clean])
            clean = [
                {**s, "name": n} if "name" in s else s for s, n in zip(clean, names, strict=True)
            ]
            if options.get("markers"):
                labels = translated([m.get("label") for m in options["markers"]])
                options["markers"] = [
                    {**m, "label": n} if "label" in m else m
                    for m, n in zip(options["markers"], labels, strict=True)
                ]
        with self.hold_sync():
            self.x = [float(v) for v in x]
            self.series = clean
            for key, value in options.items():
                setattr(self, key, value)

    def figure(self) -> Any:
        """A matplotlib Figure of the chart: the same series, ranges, ticks and markers."""
        from .figures import chart_figure  # matplotlib only when a figure is asked for

        return chart_figure(
            self.x,
            self.series,
            **{name: getattr(self, name) for name in _FIGURE_TRAITS},
        )

    def csv_table(self) -> tuple[list[str], list[list]]:
        """One row per x, one column per series (empty where a value is missing)."""
        header = [self.x_label or "x", *(s["name"] for s in self.series)]
        rows = [
            [
                repr(x),
                *("" if s["values"][i] is None else repr(s["values"][i]) for s in self.series),
            ]
            for i, x in enumerate(self.x)
        ]
        return header, rows


_FIGURE_TRAITS = (
    "title",
    "x_label",
    "y_label",
    "x_range",
    "y_range",
    "x_log",
    "y_log",
    "x_ticks",
    "x_tick_labels",
    "y_ticks",
    "markers",
    "bar_mode",
    "legend",
    "width",
    "height",
)


def _finite(v: float) -> float | None:
    """JSON has no NaN: a non-finite value is sent as null and drawn as a gap."""
    v = float(v)
    return v if math.isfinite(v) else None


def decade_ticks(values: Sequence[float]) -> list[float]:
    """Powers of ten spanning the (positive) values: the y_ticks of a log axis."""
    low = math.floor(math.log10(min(values)))
    high = math.ceil(math.log10(max(values)))
    return [10.0**k for k in range(low, high + 1)]
