"""RopeExplorer: rotary position embedding as turning pairs, its two layouts, and ALiBi.

The same query vector sits at every position m and the same key vector at every position n.
RoPE turns each 2-D pair of features by an angle proportional to the position, so the score
rope(q, m) . rope(k, n) depends only on m - n: the score map is constant along its diagonals.
The two layouts pair different features ("half": i with i + D/2; "interleaved": 2i with 2i + 1);
rotate q with one and k with the other and the diagonals break. ALiBi instead adds
-slope_h x distance to each head's scores.

    from widgets.explorers.rope import RopeExplorer
    RopeExplorer(d_head=16, seq_len=16)      # explorer.result holds the numbers
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import numpy as np

from attention.explore.rope import (
    ALIBI_HEADS_MAX,
    ROPE_BASE_RANGE,
    ROPE_D_MAX,
    ROPE_LAYOUTS,
    ROPE_SEQ_MAX,
    RopeExploration,
    RopeParams,
    last_pair,
    pair_features,
)

from ..views import Heatmap, SeriesChart
from ..views.style import DIVERGING_CMAP, PALETTE, css
from .base import Explorer
from .controls import log_slider, panel_row, slider

LAYOUT_COLORS = {"half": PALETTE[0], "interleaved": PALETTE[2]}
MIXED_COLOR = PALETTE[1]
PANEL_TITLES = ("both half", "both interleaved", "q half, k interleaved")  # short: 3 panels


class RopeExplorer(Explorer):
    """RoPE score maps for matched and mixed layouts, one pair turning, and ALiBi's biases.

    Args:
        **settings: initial values of any RopeParams field: d_head (head width D, even,
            2..64), seq_len (positions T, 2..64), base (RoPE's base, 10..1e6), pair (the pair
            followed by the rotation chart), seed (of q and k), alibi_heads (1..16).

    `result` is the RopeExploration of `attention.explore.explore_rope`.
    """

    CONTROLS = (
        slider("d_head", 2, ROPE_D_MAX, label="head width D", step=2),
        slider("seq_len", 2, ROPE_SEQ_MAX, label="positions T"),
        log_slider("base", *ROPE_BASE_RANGE, label="RoPE base", step=0.05),
        slider("pair", 0, lambda v: last_pair(v.d_head), label="pair i"),
        slider("seed", 0, 99),
        slider("alibi_heads", 1, ALIBI_HEADS_MAX, label="ALiBi heads"),
    )

    def __init__(self, **settings: Any) -> None:
        start = RopeParams(**settings)  # validates the settings
        controls = self.declare(start)

        self.scores = self.panel(
            "scores",
            Heatmap(colormap=DIVERGING_CMAP, symmetric=True, panel_size=160, colorbar_label="q·k"),
        )
        self.scores.add_class(css("scores"))
        self.offsets = self.panel(
            "by_offset", SeriesChart(name="by-offset", width=440, height=230, legend="right")
        )
        pairing = Heatmap(
            colormap="gray_r",
            vmin=0.0,
            vmax=2.0,
            show_colorbar=False,
            categories=[(1.0, "in the pair"), (2.0, "in the chosen pair")],
            panel_size=150,
        )
        self.pairing = self.panel("pairing", pairing)
        self.pairing.add_class(css("pairing"))
        self.rotation = self.panel(
            "rotation", SeriesChart(name="rotation", width=440, height=230, legend="right")
        )
        self.alibi = self.panel(
            "alibi", Heatmap(colormap="magma", vmax=0.0, panel_size=130, colorbar_label="bias")
        )
        self.alibi.add_class(css("alibi"))
        self.alibi_chart = self.panel(
            "alibi_weights",
            SeriesChart(name="alibi-weights", width=440, height=230, legend="right"),
        )
        self.readout = widgets.HTML("")
        self.readout.add_class(css("readout"))
        body = [
            self.readout,
            panel_row([self.offsets, self.pairing]),
            panel_row([self.rotation]),
            panel_row([self.alibi, self.alibi_chart]),
        ]
        super().__init__(controls=controls, body=body, principal=self.scores)
        self.refresh()

    def _sync_controls(self) -> None:
        if self.d_head.value % 2:  # a typed odd width: RoPE needs pairs (before pair's range)
            self.d_head.value += 1
        super()._sync_controls()

    def _draw(self, r: RopeExploration) -> None:
        self.readout.value = _readout_html(r)
        self._draw_scores(r)
        self._draw_by_offset(r)
        self._draw_pairing(r)
        self._draw_rotation(r)
        self._draw_alibi(r)  # the bias and the weights it alone gives

    def _draw_scores(self, r: RopeExploration) -> None:
        t = r.params.seq_len
        panels = [r.matched["half"], r.matched["interleaved"], r.mixed]
        self.scores.set_data(
            np.stack([s.scores.numpy() for s in panels]),  # (3, T, T)
            row_labels=[f"m={i}" for i in range(t)],
            col_labels=[f"n={j}" for j in range(t)],
            panel_titles=list(PANEL_TITLES),
            title="rope(q, m) · rope(k, n), m = row, n = column",
            columns=3,
        )

    def _draw_by_offset(self, r: RopeExploration) -> None:
        offsets = r.mixed.offsets.tolist()
        series = [
            _line(f"both {lay}", r.matched[lay].offset_mean, LAYOUT_COLORS[lay])
            for lay in ROPE_LAYOUTS
        ]
        series += [
            _line("mixed: lowest", r.mixed.offset_min, MIXED_COLOR, dash=True),
            _line("mixed: highest", r.mixed.offset_max, MIXED_COLOR, dash=True),
        ]
        self.offsets.set_data(
            offsets,
            series,
            title="score on each diagonal m − n (matched: one value; mixed: a range)",
            x_label="offset m − n",
            y_label="q·k",
        )

    def _draw_pairing(self, r: RopeExploration) -> None:
        p, d = r.params, r.params.d_head
        chosen = [pair_features(d, p.pair, lay) for lay in ROPE_LAYOUTS]
        self.pairing.set_data(
            r.pair_marks,
            row_labels=[f"f{i}" for i in range(d)],
            col_labels=[str(i) for i in range(d // 2)],
            panel_titles=list(ROPE_LAYOUTS),
            title=(
                f"features (rows) of each pair (columns); pair {p.pair}: "
                f"f{chosen[0][0]}, f{chosen[0][1]} or f{chosen[1][0]}, f{chosen[1][1]}"
            ),
            columns=2,
        )

    def _draw_rotation(self, r: RopeExploration) -> None:
        p, t = r.params, r.params.seq_len
        a, b = pair_features(p.d_head, p.pair, "half")
        theta = float(r.angles[p.pair])
        self.rotation.set_data(
            list(range(t)),
            [
                _line(f"feature f{a}", r.pair_xy[:, 0], PALETTE[0]),
                _line(f"feature f{b}", r.pair_xy[:, 1], PALETTE[2]),
                _line("length of the pair", np.full(t, r.pair_radius), "#777777", dash=True),
            ],
            title=f"pair {p.pair} of rope(q, m), half layout: turns {theta:.3g} rad per position",
            x_label="position m",
            y_label="value",
        )

    def _draw_alibi(self, r: RopeExploration) -> None:
        h, t = r.params.alibi_heads, r.params.seq_len
        self.alibi.set_data(
            r.alibi_bias,
            masked=~r.causal,
            fully_masked=np.zeros((h, t), dtype=bool),
            row_labels=[f"m={i}" for i in range(t)],
            col_labels=[f"n={j}" for j in range(t)],
            panel_titles=[f"head {k}: slope {float(s):.3g}" for k, s in enumerate(r.alibi_slopes)],
            title="ALiBi: −slope × (m − n) added to the scores (causal)",
            vmin=-float(r.alibi_slopes[0]) * (t - 1),  # the steepest head, farthest key
        )
        self.alibi_chart.set_data(
            list(range(t)),
            [_line(f"head {k}", r.alibi_weights[k], PALETTE[k % len(PALETTE)]) for k in range(h)],
            title=f"weights of the last query (m = {t - 1}) from the bias alone",
            x_label="key position n",
            y_label="weight",
        )


def _line(name: str, values, color: str, *, dash: bool = False) -> dict:
    out = {
        "name": name,
        "values": [float(v) for v in values.tolist()],
        "color": color,
        "kind": "line",
    }
    if dash:
        out["dash"] = True
    return out


def _readout_html(r: RopeExploration) -> str:
    def verdict(s) -> str:
        how = "depends only on m − n" if s.relative else "NOT a function of m − n"
        return f"{s.name}: largest spread along a diagonal {s.spread:.2g} → {how}"

    p = r.params
    slopes = ", ".join(f"{float(s):.3g}" for s in r.alibi_slopes)
    head = (
        f"D = {p.d_head} features in {p.d_head // 2} pairs, T = {p.seq_len} positions, "
        f"base {p.base:.3g}: pair i turns base^(−2i/D) rad per position."
    )
    lines = [head] + [verdict(r.matched[lay]) for lay in ROPE_LAYOUTS] + [verdict(r.mixed)]
    lines.append(f"ALiBi slopes ({r.params.alibi_heads} heads): {slopes}")
    return "<br>".join(html.escape(x) for x in lines)
