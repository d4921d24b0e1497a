"""ScalingExplorer: why attention divides q·k by sqrt(d_k), seen while d_k moves.

Panels (all drawn in the browser from the numbers, so a slider step costs one small message):
the histograms of q·k and q·k / sqrt(d_k) over many random pairs, the softmax of one row
(unscaled beside scaled), the variance of both against every d_k (log-log: the unscaled line
climbs like d_k, the scaled one stays at 1), and a readout of entropy, largest weight and the
size of the gradient that reaches the scores through the softmax.

Histograms and curves are drawn by `SeriesChart`, a small canvas bar/line chart defined here:
a histogram is a set of heights, which a 1-row heatmap strip would show as colours only.

    from widgets.scaling_explorer import ScalingExplorer
    ScalingExplorer(d_k=256)   # then move d_k; `explorer.result` holds the numbers
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

import anywidget
import ipywidgets as widgets
import numpy as np
import traitlets

from attention.explore_more import (
    D_K_MAX,
    N_KEYS_MAX,
    ScalingParams,
    ScalingResult,
    explore_scaling,
)

from ._common import Explorer, css, float_slider, int_slider, table_html, toggle

# Okabe-Ito colours: distinguishable with every common form of colour blindness.
UNSCALED_COLOR = "#D55E00"  # vermillion
SCALED_COLOR = "#0072B2"  # blue
REFERENCE_COLOR = "#777777"
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")

_CHART_ESM = r"""
function niceTicks(lo, hi, n) {
  const span = hi - lo;
  if (!(span > 0)) return [lo];
  const raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map(m => m * mag).find(s => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    out.push(+v.toPrecision(12));
  }
  return out;
}
function fmt(v) {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e4 || a < 1e-3) return v.toExponential(1);
  return +v.toPrecision(3) + "";
}
function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "ac-chart-root";
  root.style.position = "relative";
  root.style.display = "inline-block";
  const title = document.createElement("div");
  title.className = "ac-chart-title";
  title.style.cssText = "font: 600 12px sans-serif; margin: 2px 0 2px 48px;";
  const canvas = document.createElement("canvas");
  canvas.className = "ac-chart-canvas";
  const tip = document.createElement("div");
  tip.className = "ac-chart-tip";
  tip.style.cssText = "position:absolute; pointer-events:none; display:none; background:#fff;" +
    "border:1px solid #999; padding:2px 5px; font:11px sans-serif; white-space:pre;";
  root.append(title, canvas, tip);
  el.appendChild(root);
  const pad = { l: 48, r: 10, t: 6, b: 32 };
  const legendWidth = (ctx, series) => {
    ctx.font = "11px sans-serif";
    return Math.max(0, ...series.map(s => ctx.measureText(s.name).width)) + 24;
  };
  let geom = null;

  function draw() {
    const W = model.get("width"), H = model.get("height"), dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
    canvas.style.width = W + "px"; canvas.style.height = H + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    title.textContent = model.get("title");
    const xs = model.get("x"), series = model.get("series");
    const xlog = model.get("x_log"), ylog = model.get("y_log");
    const tx = v => (xlog ? Math.log10(v) : v), ty = v => (ylog ? Math.log10(v) : v);
    const bars = series.filter(s => s.kind === "bar");
    let step = 1;
    for (let i = 1; i < xs.length; i++) {
      step = i === 1 ? xs[1] - xs[0] : Math.min(step, xs[i] - xs[i - 1]);
    }
    let [xa, xb] = model.get("x_range").length ? model.get("x_range") : [xs[0], xs[xs.length - 1]];
    if (bars.length && !model.get("x_range").length) { xa -= step / 2; xb += step / 2; }
    if (!(xb > xa)) { xa -= 0.5; xb += 0.5; }
    let [ya, yb] = model.get("y_range");
    if (!model.get("y_range").length) {
      const all = series.flatMap(s => s.values).filter(v => Number.isFinite(v) && (!ylog || v > 0));
      ya = all.length ? Math.min(...all) : 0; yb = all.length ? Math.max(...all) : 1;
      if (!ylog) { ya = Math.min(ya, 0); yb = yb + 0.05 * (yb - ya); }
      if (!(yb > ya)) yb = ya + 1;
    }
    const X0 = tx(xa), X1 = tx(xb), Y0 = ty(ya), Y1 = ty(yb);
    const outside = model.get("legend") === "right";
    pad.r = outside ? legendWidth(ctx, series) + 8 : 10;
    const pw = W - pad.l - pad.r, ph = H - pad.t - pad.b;
    const px = v => pad.l + ((tx(v) - X0) / (X1 - X0)) * pw;
    const clampY = v => Math.min(Math.max(v, ylog ? ya : -Infinity), yb);
    const py = v => pad.t + ph - ((ty(clampY(v)) - Y0) / (Y1 - Y0)) * ph;
    geom = { px, xs, pad, pw, ph };
    // axes and ticks
    ctx.strokeStyle = "#444"; ctx.fillStyle = "#222"; ctx.lineWidth = 1;
    ctx.font = "11px sans-serif";
    ctx.beginPath(); ctx.moveTo(pad.l, pad.t); ctx.lineTo(pad.l, pad.t + ph);
    ctx.lineTo(pad.l + pw, pad.t + ph); ctx.stroke();
    const xt = model.get("x_ticks").length ? model.get("x_ticks")
      : niceTicks(xa, xb, Math.max(2, pw / 70));
    const labels = model.get("x_tick_labels");
    ctx.textAlign = "center"; ctx.textBaseline = "top";
    let lastX = -Infinity;
    xt.forEach((v, i) => {
      const p = px(v);
      if (p < pad.l - 1 || p > pad.l + pw + 1 || p - lastX < 26) return;
      lastX = p;
      ctx.beginPath(); ctx.moveTo(p, pad.t + ph); ctx.lineTo(p, pad.t + ph + 4); ctx.stroke();
      ctx.fillText(labels.length ? labels[i] : fmt(v), p, pad.t + ph + 6);
    });
    ctx.fillText(model.get("x_label"), pad.l + pw / 2, pad.t + ph + 19);
    const yt = model.get("y_ticks").length ? model.get("y_ticks")
      : niceTicks(ya, yb, Math.max(2, ph / 40));
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    yt.forEach(v => {
      if (v < ya || v > yb) return;
      const p = py(v);
      ctx.strokeStyle = "#e4e4e4";
      ctx.beginPath(); ctx.moveTo(pad.l + 1, p); ctx.lineTo(pad.l + pw, p); ctx.stroke();
      ctx.fillText(fmt(v), pad.l - 4, p);
    });
    ctx.save(); ctx.translate(11, pad.t + ph / 2); ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center";
    ctx.fillText(model.get("y_label"), 0, 0); ctx.restore();
    // data, clipped to the plot area
    ctx.save(); ctx.beginPath(); ctx.rect(pad.l, pad.t, pw, ph); ctx.clip();
    const group = model.get("bar_mode") === "group" && bars.length > 1;
    const base = py(ylog ? ya : Math.max(ya, 0));
    series.forEach(s => {
      ctx.strokeStyle = ctx.fillStyle = s.color;
      if (s.kind === "bar") {
        const k = bars.indexOf(s), full = Math.abs(px(xa + step) - px(xa)) * 0.9;
        const w = group ? full / bars.length : full;
        ctx.globalAlpha = group ? 0.9 : 0.55;
        s.values.forEach((v, i) => {
          if (!Number.isFinite(v)) return;
          const left = px(xs[i]) - full / 2 + (group ? k * w : 0);
          ctx.fillRect(left, Math.min(base, py(v)), Math.max(w, 1), Math.abs(base - py(v)));
        });
        ctx.globalAlpha = 1;
      } else {
        ctx.lineWidth = 2; ctx.setLineDash(s.dash ? [5, 4] : []);
        ctx.beginPath();
        let pen = false;
        s.values.forEach((v, i) => {
          if (!Number.isFinite(v) || (ylog && v <= 0)) { pen = false; return; }
          if (pen) ctx.lineTo(px(xs[i]), py(v)); else ctx.moveTo(px(xs[i]), py(v));
          pen = true;
        });
        ctx.stroke(); ctx.setLineDash([]);
        if (s.values.length <= 64) s.values.forEach((v, i) => {
          if (!Number.isFinite(v) || (ylog && v <= 0)) return;
          ctx.beginPath(); ctx.arc(px(xs[i]), py(v), 2.2, 0, 2 * Math.PI); ctx.fill();
        });
      }
    });
    model.get("markers").forEach(m => {
      const p = px(m.x);
      ctx.strokeStyle = "#000"; ctx.fillStyle = "#000"; ctx.lineWidth = 1; ctx.setLineDash([3, 3]);
      ctx.beginPath(); ctx.moveTo(p, pad.t); ctx.lineTo(p, pad.t + ph); ctx.stroke();
      ctx.setLineDash([]);
      // the label sits at the foot of the line, where legends and curves rarely are
      ctx.textAlign = p > pad.l + pw - 60 ? "right" : "left"; ctx.textBaseline = "bottom";
      ctx.fillText(m.label, p + (ctx.textAlign === "left" ? 3 : -3), pad.t + ph - 2);
    });
    ctx.restore();
    // legend on a translucent box, in the corner the Python side chose
    const boxW = legendWidth(ctx, series), boxH = series.length * 14 + 4;
    ctx.textBaseline = "middle";
    const left = model.get("legend") === "top-left";
    const bx = outside ? W - boxW - 2 : left ? pad.l + 4 : pad.l + pw - boxW - 2;
    const by = pad.t + 1;
    if (series.length) {
      ctx.fillStyle = "rgba(255, 255, 255, 0.85)"; ctx.fillRect(bx, by, boxW, boxH);
    }
    ctx.textAlign = "left";
    series.forEach((s, i) => {
      const y = by + 9 + i * 14;
      ctx.fillStyle = s.color; ctx.fillRect(bx + 4, y - 4, 10, 8);
      ctx.fillStyle = "#222"; ctx.fillText(s.name, bx + 18, y);
    });
  }

  canvas.addEventListener("mousemove", ev => {
    if (!geom || !geom.xs.length) return;
    const r = canvas.getBoundingClientRect(), mx = ev.clientX - r.left;
    let best = 0;
    const dist = x => Math.abs(geom.px(x) - mx);
    geom.xs.forEach((x, i) => { if (dist(x) < dist(geom.xs[best])) best = i; });
    const lines = [model.get("x_label") + " = " + fmt(geom.xs[best])];
    model.get("series").forEach(s => lines.push(s.name + ": " + fmt(s.values[best])));
    tip.textContent = lines.join("\n");
    tip.style.display = "block";
    tip.style.left = Math.min(mx + 12, geom.pad.l + geom.pw - 90) + "px";
    tip.style.top = (ev.clientY - r.top + 18) + "px";
  });
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  for (const name of ["x", "series", "title", "x_range", "y_range", "x_log", "y_log", "x_ticks",
    "x_tick_labels", "y_ticks", "markers", "x_label", "y_label", "width", "height", "bar_mode",
    "legend"]) {
    model.on("change:" + name, draw);
  }
  draw();
}
export default { render };
"""


class SeriesChart(anywidget.AnyWidget):
    """A small canvas chart of bars and lines over one shared x, drawn in the browser.

    Set everything at once with `set_data(x, series, **options)`; one message per update.
    `series` is a list of dicts: {"name", "values" (one per x), "color", "kind": "bar"|"line",
    optional "dash": True}. Empty `x_range` / `y_range` mean "fit the data".
    """

    _esm = _CHART_ESM
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


def refuse_clamped(name: str, control: widgets.Widget, requested: float) -> None:
    """Raise if a control clamped a starting value instead of taking it (sliders do silently)."""
    if math.isclose(float(control.value), float(requested), rel_tol=1e-9, abs_tol=1e-12):
        return
    lo, hi = control.min, control.max
    if isinstance(control, widgets.FloatLogSlider):
        lo, hi = control.base**lo, control.base**hi
    raise ValueError(f"{name}: expected a value in [{lo:g}, {hi:g}], got {requested}")


def _finite(v: float) -> float | None:
    """JSON has no NaN: a non-finite value is sent as null and drawn as a gap."""
    v = float(v)
    return v if math.isfinite(v) else None


_VAR_TABLE_D_K = (1, 4, 16, 64, 256, 512)


class ScalingExplorer(Explorer):
    """Move d_k and watch q·k spread out unless it is divided by sqrt(d_k).

    Controls: d_k (1..512), keys in the inspected row (2..32), softmax temperature, seed, and
    whether the histogram axis stays fixed at the widest d_k. `result` is the ScalingResult of
    `attention.explore_more.explore_scaling` for the current settings.
    """

    def __init__(
        self,
        d_k: int = 64,
        n_keys: int = 8,
        temperature: float = 1.0,
        seed: int = 0,
        fixed_axis: bool = True,
    ) -> None:
        self.d_k = int_slider("d_k", 1, D_K_MAX, d_k, name="d-k")
        self.n_keys = int_slider("keys in the row", 2, N_KEYS_MAX, n_keys, name="n-keys")
        self.temperature = float_slider(
            "temperature", 0.1, 10.0, temperature, name="temperature", log=True
        )
        self.seed = int_slider("seed", 0, 99, seed, name="seed")
        self.fixed_axis = toggle("fixed histogram axis", fixed_axis, name="fixed-axis")
        for name, value in (("d_k", d_k), ("n_keys", n_keys), ("temperature", temperature)):
            refuse_clamped(name, getattr(self, name), value)
        refuse_clamped("seed", self.seed, seed)
        self.histogram = SeriesChart(name="histogram", width=420, height=230)
        self.row_chart = SeriesChart(name="row-weights", width=360, height=230)
        self.variance_chart = SeriesChart(name="variance", width=360, height=230)
        self.readout = _html("readout")
        self.var_table = _html("var-table")
        charts = panel_row([self.histogram, self.row_chart])
        lower = panel_row([self.variance_chart, _column([self.readout, self.var_table])])
        super().__init__(
            controls=[self.d_k, self.n_keys, self.temperature, self.seed, self.fixed_axis],
            body=[charts, lower],
            name="scaling-explorer",
        )
        self.refresh()

    def export(self, folder: str | Path | None = None) -> list[Path]:
        """Save the three charts as PNG, SVG and CSV into `folder`; return the paths."""
        folder = Path(folder) if folder is not None else self.export_dir
        charts = {
            "histogram": self.histogram,
            "row_weights": self.row_chart,
            "variance": self.variance_chart,
        }
        paths: list[Path] = []
        for name, chart in charts.items():
            paths += export_chart(chart, folder, f"scaling-explorer_{name}")
        return paths

    def _read_params(self) -> ScalingParams:
        return ScalingParams(
            d_k=self.d_k.value,
            n_keys=self.n_keys.value,
            temperature=float(self.temperature.value),
            seed=self.seed.value,
            fixed_axis=self.fixed_axis.value,
        )

    def _compute(self, params: ScalingParams) -> ScalingResult:
        return explore_scaling(params)

    def _draw(self, r: ScalingResult) -> None:
        p, un, sc = r.params, r.unscaled, r.scaled
        edges = r.bin_edges
        centers = ((edges[:-1] + edges[1:]) / 2).tolist()
        self.histogram.set_data(
            centers,
            [
                _bars("q·k", un.hist, UNSCALED_COLOR),
                _bars("q·k / √d_k", sc.hist, SCALED_COLOR),
            ],
            title=f"scores of {un.samples.numel()} random (q, k) pairs, d_k = {p.d_k}",
            x_label="score",
            y_label="fraction of pairs",
            x_range=[float(edges[0]), float(edges[-1])],
        )
        keys = list(range(p.n_keys))
        self.row_chart.set_data(
            keys,
            [
                _bars("softmax(q·k / T)", un.row_weights, UNSCALED_COLOR),
                _bars("softmax(q·k / √d_k / T)", sc.row_weights, SCALED_COLOR),
            ],
            title="one query's weights over its keys",
            x_label="key",
            y_label="weight",
            y_range=[0.0, 1.3],  # headroom above 1 keeps the legend off the bars
            y_ticks=[0.0, 0.25, 0.5, 0.75, 1.0],
            bar_mode="group",
            x_ticks=[float(k) for k in keys],
        )
        self.variance_chart.set_data(
            r.d_k_grid.tolist(),
            [
                {
                    "name": "var(q·k)",
                    "values": r.var_unscaled_by_d_k.tolist(),
                    "color": UNSCALED_COLOR,
                    "kind": "line",
                },
                {
                    "name": "var(q·k / √d_k)",
                    "values": r.var_scaled_by_d_k.tolist(),
                    "color": SCALED_COLOR,
                    "kind": "line",
                },
                {
                    "name": "y = d_k",
                    "values": r.d_k_grid.float().tolist(),
                    "color": REFERENCE_COLOR,
                    "kind": "line",
                    "dash": True,
                },
            ],
            title="variance of the scores against d_k (log-log)",
            x_label="d_k",
            y_label="variance",
            x_log=True,
            y_log=True,
            x_range=[1.0, float(D_K_MAX)],
            y_range=[0.25, 2.0 * D_K_MAX],
            x_ticks=[1.0, 4.0, 16.0, 64.0, 256.0],
            y_ticks=[1.0, 10.0, 100.0, 1000.0],
            markers=[{"x": float(p.d_k), "label": f"d_k = {p.d_k}"}],
            legend="top-left",
        )
        self.readout.value = _readout_html(r)
        rows = [
            ["var(q·k)"] + [f"{float(r.var_unscaled_by_d_k[d - 1]):.3g}" for d in _VAR_TABLE_D_K],
            ["var(q·k / √d_k)"]
            + [f"{float(r.var_scaled_by_d_k[d - 1]):.3g}" for d in _VAR_TABLE_D_K],
        ]
        self.var_table.value = table_html(rows, header=["d_k", *map(str, _VAR_TABLE_D_K)])


def _bars(name: str, values, color: str) -> dict:
    return {"name": name, "values": values.tolist(), "color": color, "kind": "bar"}


def _readout_html(r: ScalingResult) -> str:
    p, un, sc = r.params, r.unscaled, r.scaled
    n_rows = un.samples.numel() // p.n_keys

    def pct(v: float) -> str:
        return f"{100 * v:.0f}%"

    rows = [
        ["variance of the scores", f"{un.variance:.3g}", f"{sc.variance:.3g}"],
        ["row entropy (nats)", f"{un.row_entropy:.3f}", f"{sc.row_entropy:.3f}"],
        [
            "row max weight",
            f"{float(un.row_weights.max()):.3f}",
            f"{float(sc.row_weights.max()):.3f}",
        ],
        ["row |d loss / d scores|", f"{un.row_grad_norm:.3g}", f"{sc.row_grad_norm:.3g}"],
        [f"mean entropy, {n_rows} rows", f"{un.mean_entropy:.3f}", f"{sc.mean_entropy:.3f}"],
        ["mean |d loss / d scores|", f"{un.mean_grad_norm:.3g}", f"{sc.mean_grad_norm:.3g}"],
        ["rows with max weight > 0.99", pct(un.saturated_fraction), pct(sc.saturated_fraction)],
    ]
    head = (
        f"<b>d_k = {p.d_k}</b>: var(q·k) ≈ d_k = {p.d_k}, var(q·k/√d_k) ≈ 1. "
        f"Uniform row entropy = log {p.n_keys} = {r.max_entropy:.3f} nats.<br>"
    )
    return head + table_html(rows, header=["", "unscaled", "scaled"])


def _html(name: str) -> widgets.HTML:
    w = widgets.HTML("")
    w.add_class(css(name))
    return w


def panel_row(children: Sequence[widgets.Widget]) -> widgets.HBox:
    """Panels side by side, wrapping onto the next line when the page is narrow."""
    for child in children:
        child.layout.margin = "0 16px 8px 0"  # ipywidgets' Layout has no flex `gap`
    return widgets.HBox(list(children), layout=widgets.Layout(flex_flow="row wrap"))


def _column(children: Sequence[widgets.Widget]) -> widgets.VBox:
    return widgets.VBox(list(children))
