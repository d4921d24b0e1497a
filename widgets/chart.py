"""SeriesChart: a small canvas chart of bars and lines over one shared x, drawn in the browser.

Histograms and curves are heights, which a 1-row heatmap strip would show as colours only.
The JavaScript is widgets/static/chart.js; `export_chart` saves what a chart shows as PNG and
SVG (matplotlib) and CSV.

    chart = SeriesChart(name="histogram", width=420, height=230)
    chart.set_data(centers, [{"name": "q·k", "values": hist, "color": "#D55E00", "kind": "bar"}],
                   x_label="score", y_label="fraction of pairs")
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

import anywidget
import numpy as np
import traitlets

from ._common import css

# Okabe-Ito colours: distinguishable with every common form of colour blindness.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")


class SeriesChart(anywidget.AnyWidget):
    """A small canvas chart of bars and lines over one shared x, drawn in the browser.

    Set everything at once with `set_data(x, series, **options)`; one message per update.
    `series` is a list of dicts: {"name", "values" (one per x), "color", "kind": "bar"|"line",
    optional "dash": True}. Empty `x_range` / `y_range` mean "fit the data".
    """

    _esm = Path(__file__).parent / "static" / "chart.js"
    x = traitlets.List(traitlets.Float()).tag(sync=True)
    series = traitlets.List(traitlets.Dict()).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    x_label = traitlets.Unicode("").tag(sync=True)
    y_label = traitlets.Unicode("").tag(sync=True)
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
        with self.hold_sync():
            self.x = [float(v) for v in x]
            self.series = clean
            for key, value in options.items():
                setattr(self, key, value)


def export_chart(chart: SeriesChart, folder: str | Path, stem: str) -> list[Path]:
    """Save what a SeriesChart shows as folder/stem.png, .svg (matplotlib) and .csv (its data).

    The CSV has one line per x with one column per series (empty where a value is missing).
    """
    from matplotlib.figure import Figure  # imported only when exporting

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    csv_path = folder / f"{stem}.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([chart.x_label or "x", *(s["name"] for s in chart.series)])
        for i, x in enumerate(chart.x):
            row = [s["values"][i] for s in chart.series]
            writer.writerow([repr(x), *("" if v is None else repr(v) for v in row)])
    fig = Figure(figsize=(chart.width / 80, chart.height / 80), layout="constrained")
    ax = fig.add_subplot()
    x = np.asarray(chart.x, dtype=float)
    bars = [s for s in chart.series if s["kind"] == "bar"]
    step = float(np.min(np.diff(x))) if x.size > 1 else 1.0
    group = chart.bar_mode == "group" and len(bars) > 1
    for s in chart.series:
        y = np.array([np.nan if v is None else v for v in s["values"]], dtype=float)
        if s["kind"] == "bar":
            k, width = bars.index(s), 0.9 * step / (len(bars) if group else 1)
            left = x - 0.45 * step + (k * width if group else 0.0)
            ax.bar(
                left, y, width=width, align="edge", color=s["color"], alpha=0.9 if group else 0.55
            )
        else:
            style = "--" if s.get("dash") else "-"
            ax.plot(x, y, style, color=s["color"], lw=1.5)
        ax.plot([], [], color=s["color"], lw=6, label=s["name"])  # a legend swatch per series
    for m in chart.markers:
        ax.axvline(m["x"], color="black", ls=":", lw=1)
        ax.annotate(m["label"], (m["x"], 0.02), xycoords=("data", "axes fraction"), fontsize=8)
    ax.set_xscale("log" if chart.x_log else "linear")
    ax.set_yscale("log" if chart.y_log else "linear")
    if chart.x_range:
        ax.set_xlim(*chart.x_range)
    if chart.y_range:
        ax.set_ylim(*chart.y_range)
    if chart.x_ticks:
        ax.set_xticks(chart.x_ticks, chart.x_tick_labels or [f"{t:g}" for t in chart.x_ticks])
    if chart.y_ticks:
        ax.set_yticks(chart.y_ticks, [f"{t:g}" for t in chart.y_ticks])
    ax.set(title=chart.title, xlabel=chart.x_label, ylabel=chart.y_label)
    ax.legend(fontsize=8, loc="upper left" if chart.legend == "top-left" else "best")
    paths = [csv_path]
    for fmt in ("png", "svg"):
        paths.append(folder / f"{stem}.{fmt}")
        fig.savefig(paths[-1], dpi=120)
    return paths


def _finite(v: float) -> float | None:
    """JSON has no NaN: a non-finite value is sent as null and drawn as a gap."""
    v = float(v)
    return v if math.isfinite(v) else None
