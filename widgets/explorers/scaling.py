"""ScalingExplorer: why attention divides q·k by sqrt(d_k), seen while d_k moves.

Panels (all drawn in the browser from the numbers, so a slider step costs one small message):
the histograms of q·k and q·k / sqrt(d_k) over many random pairs, the softmax of one row
(unscaled beside scaled), the variance of both against every d_k (log-log: the unscaled line
climbs like d_k, the scaled one stays at 1), and a readout of entropy, largest weight and the
size of the gradient that reaches the scores through the softmax.

Histograms and curves are drawn by `SeriesChart` (widgets/chart.py): a histogram is a set of
heights, which a 1-row heatmap strip would show as colours only.

    from widgets.explorers.scaling import ScalingExplorer
    ScalingExplorer(d_k=256)   # then move d_k; `explorer.result` holds the numbers
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from attention.explore import (
    D_K_MAX,
    N_KEYS_MAX,
    TEMPERATURE_RANGE,
    ScalingExploration,
    ScalingParams,
)

from ..views import SeriesChart
from ..views.style import css
from .base import Explorer
from .controls import check, log_slider, panel_row, slider, table_html

# Okabe-Ito colours: distinguishable with every common form of colour blindness.
UNSCALED_COLOR = "#D55E00"  # vermillion
SCALED_COLOR = "#0072B2"  # blue
REFERENCE_COLOR = "#777777"

_VAR_TABLE_D_K = (1, 4, 16, 64, 256, 512)


class ScalingExplorer(Explorer):
    """Move d_k and watch q·k spread out unless it is divided by sqrt(d_k).

    Args:
        **settings: initial values of any ScalingParams field: d_k (1..512), n_keys (keys in
            the inspected row, 2..32), temperature, seed, and fixed_axis (whether the
            histogram axis stays fixed at the widest d_k).

    `result` is the ScalingExploration of `attention.explore.explore_scaling` for the current
    settings.
    """

    CONTROLS = (
        slider("d_k", 1, D_K_MAX),
        slider("n_keys", 2, N_KEYS_MAX, label="keys in the row"),
        log_slider("temperature", *TEMPERATURE_RANGE, step=0.01),
        slider("seed", 0, 99),
        check("fixed_axis", label="fixed histogram axis"),
    )

    def __init__(self, **settings: Any) -> None:
        start = ScalingParams(**settings)  # validates the settings
        controls = self.declare(start)
        self.histogram = self.panel(
            "histogram", SeriesChart(name="histogram", width=420, height=230)
        )
        self.row_chart = self.panel(
            "row_weights", SeriesChart(name="row-weights", width=360, height=230)
        )
        self.variance_chart = self.panel(
            "variance", SeriesChart(name="variance", width=360, height=230)
        )
        self.readout = _html("readout")
        self.var_table = _html("var-table")
        charts = panel_row([self.row_chart, self.variance_chart])
        lower = panel_row([self.readout, self.var_table])
        super().__init__(controls=controls, principal=self.histogram, body=[charts, lower])
        self.refresh()

    def _draw(self, r: ScalingExploration) -> None:
        self._draw_histogram(r)
        self._draw_row_weights(r)
        self._draw_variance(r)
        self.readout.value = _readout_html(r)
        self.var_table.value = _var_table_html(r)

    def _draw_histogram(self, r: ScalingExploration) -> None:
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

    def _draw_row_weights(self, r: ScalingExploration) -> None:
        un, sc = r.unscaled, r.scaled
        keys = list(range(r.params.n_keys))
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

    def _draw_variance(self, r: ScalingExploration) -> None:
        p = r.params
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


def _var_table_html(r: ScalingExploration) -> str:
    rows = [
        ["var(q·k)"] + [f"{float(r.var_unscaled_by_d_k[d - 1]):.3g}" for d in _VAR_TABLE_D_K],
        ["var(q·k / √d_k)"] + [f"{float(r.var_scaled_by_d_k[d - 1]):.3g}" for d in _VAR_TABLE_D_K],
    ]
    return table_html(rows, header=["d_k", *map(str, _VAR_TABLE_D_K)])


def _bars(name: str, values, color: str) -> dict:
    return {"name": name, "values": values.tolist(), "color": color, "kind": "bar"}


def _readout_html(r: ScalingExploration) -> str:
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
