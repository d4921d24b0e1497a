"""Lesson 18's explorers: patch a layer or a head of one pair; rollout against raw attention.

    PatchingExplorer()                 # SmolLM2, agreement pairs (computes the table: seconds)
    PatchingExplorer(table=table)      # a table the lesson computed (make_patching_table)
    RolloutExplorer()                  # MiniLM on a Winograd sentence, the row of "it"

PatchingExplorer: pick a pair, a layer and a head (-1 = the layer's whole attention output);
the readout shows the answer's probability against the alternative in the clean, corrupted and
patched runs, the chart this pair's effect at every patched layer and, in the layers whose
heads were patched, each head's. All the model runs happen when the table is built; a key
press only reads it.

RolloutExplorer: pick a layer and a query token; two rows, the raw attention of that query at
that layer (heads averaged) and the rollout through layers 0..layer.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import torch

from attention.explore.interventions import (
    PatchingExploration,
    PatchingParams,
    PatchingTable,
    RolloutExploration,
    RolloutParams,
    explore_patching,
    explore_rollout,
    patching_table,
    rollout_length,
)
from attention.explore.model_view import model_shape

from ..views import Heatmap, SeriesChart
from ..views.style import PALETTE, css
from ..views.text import translated
from .base import Explorer
from .controls import menu, set_options, slider, table_html, text


class PatchingExplorer(Explorer):
    """One pair's patching effect, layer by layer and head by head (SmolLM2).

    Args:
        table: a PatchingTable (attention.explore.interventions); None computes the one of
            `kind` (seconds, once per kernel).
        kind: "agreement" or "name_copy", when table is None.
        **settings: initial values of PatchingParams (pair, layer, head); layer defaults to
            the first layer whose heads the table patched.

    `result` is the PatchingExploration of explore_patching.
    """

    CONTROLS = (  # SmolLM2's ranges; __init__ narrows pair and layer to the table's
        slider("pair", 0, 14),
        menu("layer", list(range(30))),
        slider("head", -1, 8, label="head (-1: all)"),
    )

    def __init__(
        self, table: PatchingTable | None = None, *, kind: str = "agreement", **settings: Any
    ) -> None:
        self.table = patching_table(kind) if table is None else table
        t = self.table
        settings.setdefault("layer", t.head_layers[0])
        start = PatchingParams(**settings)
        explore_patching(start, t)  # refuses bad settings before any widget is made
        controls = self.declare(start)
        self.pair.max = len(t.pairs) - 1
        set_options(self.layer, list(t.layers), start.layer)
        self.head.max = t.n_heads - 1
        self.chart = self.panel("layers", SeriesChart(name="layers", width=480, height=250))
        self.heads = self.panel("heads", SeriesChart(name="heads", width=300, height=250))
        self.readout = widgets.HTML("")
        self.readout.add_class(css("readout"))
        self.readout.layout.max_width = "820px"
        super().__init__(
            controls=controls, body=[self.readout], principal=self.chart, beside=[self.heads]
        )
        self.refresh()

    def _compute(self, params: PatchingParams) -> PatchingExploration:
        return explore_patching(params, self.table)

    def _draw(self, r: PatchingExploration) -> None:
        self._draw_layers(r)
        self._draw_heads(r)
        self.readout.value = _patching_html(r)

    def _draw_layers(self, r: PatchingExploration) -> None:
        t, p = self.table, r.params
        self.chart.set_data(
            [float(x) for x in t.layers],
            [
                {
                    "name": "this pair",
                    "values": list(r.layer_curve),
                    "color": PALETTE[0],
                    "kind": "line",
                }
            ],
            title=f"pair {p.pair}: each layer's attention output patched",
            x_label="layer",
            y_label="effect (0 corrupted, 1 clean)",
            x_ticks=[float(x) for x in t.layers[:: max(1, len(t.layers) // 6)]],
            legend="top-left",
            markers=[{"x": float(p.layer), "label": f"layer {p.layer}"}],
        )

    def _draw_heads(self, r: PatchingExploration) -> None:
        t, p = self.table, r.params
        bars = list(r.head_bars) if r.head_bars is not None else [float("nan")] * t.n_heads
        title = (
            f"heads of layer {p.layer}, patched alone"
            if r.head_bars is not None
            else f"layer {p.layer}: heads not patched"
        )
        markers = [{"x": float(p.head), "label": f"head {p.head}"}] if p.head >= 0 else []
        self.heads.set_data(
            [float(h) for h in range(t.n_heads)],
            [{"name": "effect", "values": bars, "color": PALETTE[1], "kind": "bar"}],
            title=title,
            x_label="head",
            y_label="effect",
            x_ticks=[float(h) for h in range(t.n_heads)],
            markers=markers,
        )

    def _data_texts(self) -> list[str]:
        if self.result is None:
            return []
        pair = self.result.pair
        good, bad = pair.answer, pair.alternative
        return [
            pair.clean,
            pair.corrupted,
            f"logit({good}) − logit({bad})",
            f"P({good} | {good} or {bad})",
        ]


def _patching_html(r: PatchingExploration) -> str:
    pair, prob = r.pair, PatchingExploration.probability
    rows = [
        ["clean", html.escape(pair.clean), f"{r.clean_ld:.2f}", f"{prob(r.clean_ld):.1%}"],
        [
            "corrupted",
            html.escape(pair.corrupted),
            f"{r.corrupted_ld:.2f}",
            f"{prob(r.corrupted_ld):.1%}",
        ],
    ]
    if r.patched_ld is not None:
        rows.append(
            [
                "patched",
                "corrupted + clean activation",
                f"{r.patched_ld:.2f}",
                f"{prob(r.patched_ld):.1%}",
            ]
        )
    head = ""
    if r.head_bars is not None:
        cells = " ".join(
            f"<b>{h}: {e:.2f}</b>" if h == r.params.head else f"{h}: {e:.2f}"
            for h, e in enumerate(r.head_bars)
        )
        head = f"<div>each head of layer {r.params.layer} alone: {cells}</div>"
    effect = "" if r.effect is None else f"effect {r.effect:.2f} — "
    return (
        f"<div><b>{effect}{html.escape(r.note)}</b></div>"
        + table_html(
            rows,
            header=[
                "run",
                "prefix",
                f"logit({pair.answer}) − logit({pair.alternative})",
                f"P({pair.answer} | {pair.answer} or {pair.alternative})",
            ],
        )
        + head
    )


class RolloutExplorer(Explorer):
    """Raw attention of one token against attention rollout, layer by layer.

    Args:
        **settings: initial values of RolloutParams (model "minilm" or "smollm2", text,
            layer, query).

    `result` is the RolloutExploration of explore_rollout.
    """

    CONTROLS = (
        menu("model", ["minilm", "smollm2"]),
        text("text", live=False),
        slider("layer", 0, lambda v: model_shape(v.model)[0] - 1),
        slider("query", 0, lambda v: rollout_length(v.model, v.text) - 1, label="query token"),
    )

    def __init__(self, **settings: Any) -> None:
        start = RolloutParams(**settings)
        explore_rollout(start)  # refuses bad settings before any widget is made
        controls = self.declare(start)
        self.map = self.panel("rows", Heatmap(
            title="",
            show_numbers=True,
            digits=2,
            vmin=0.0,
            vmax=1.0,
            cell_size=36,
            colorbar_label="weight",
        ))  # fmt: skip
        self.map.add_class(css("rows"))
        self.readout = widgets.HTML("")
        self.readout.add_class(css("readout"))
        super().__init__(controls=controls, body=[], principal=self.map, beside=[self.readout])
        self.refresh()

    def _draw(self, r: RolloutExploration) -> None:
        p = r.params
        self.map.set_data(
            torch.stack([r.raw, r.rollout]),
            row_labels=translated([f"raw, layer {p.layer}", f"rollout 0..{p.layer}"]),
            col_labels=list(r.tokens),
            title=f"what {r.tokens[p.query]!r} (token {p.query}) weighs",
            highlight_row=-1,
        )

        def top(row: torch.Tensor) -> str:
            best = row.argsort(descending=True)[:3].tolist()
            return ", ".join(f"{html.escape(r.tokens[j])} {float(row[j]):.2f}" for j in best)

        self._tops = [html.unescape(top(r.raw)), html.unescape(top(r.rollout))]  # data

        self.readout.value = (
            f"<div>raw attention, layer {p.layer} (heads averaged): {top(r.raw)}</div>"
            f"<div>rollout through layers 0..{p.layer}: {top(r.rollout)}</div>"
        )

    def _data_texts(self) -> list[str]:
        return getattr(self, "_tops", [])
