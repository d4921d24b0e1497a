"""FlashExplorer: step through FlashAttention's tiles and watch m, l and the output converge.

Press "next tile" (or move the step slider) and one key tile is folded into one query tile:
the tile map shows what is on chip, the bars show each query row's running max m and running
sum l against their final values (dashed), and the output panel fills in row by row until it
equals the exact softmax(S) V beside it. The byte counter compares what the tiles have moved
so far with what naive attention moves, and a log-log chart shows both at real sizes.

    from widgets.explorers.flash import FlashExplorer
    FlashExplorer(seq_len=8, block_size=2)   # then press "next tile"; explorer.result
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import torch

from attention.explore.flash import (
    FLASH_SEQ_MAX,
    REAL_BLOCK,
    REAL_D_HEAD,
    REAL_VALUE_BYTES,
    FlashExploration,
    FlashParams,
    flash_step_count,
    min_block_size,
)
from attention.explore.kv_cache import human_bytes

from ..views import Heatmap, SeriesChart
from ..views.style import DIVERGING_CMAP, PALETTE, css
from .base import Explorer
from .controls import check, panel_row, slider, table_html

NAIVE_COLOR, FLASH_COLOR = PALETTE[1], PALETTE[0]  # vermillion, blue
FINAL_COLOR = "#777777"
PANEL = 180  # px: the tile map, the weights and the outputs share one cell size


class FlashExplorer(Explorer):
    """FlashAttention's forward pass one (query tile, key tile) at a time.

    Args:
        **settings: initial values of any FlashParams field: seq_len (2..32), block_size (tile
            side; at most 16 tiles per side), causal, seed, step (0 = nothing read yet).

    Besides the declared controls, the buttons "next tile", "reset" and "run to the end" (Tab
    to a button, then Enter or Space) move the step slider. `result` is the FlashExploration
    of `attention.explore.explore_flash` for the current settings.
    """

    CONTROLS = (
        slider("seq_len", 2, FLASH_SEQ_MAX),
        # a tile from min_block_size (at most 16 tiles per side) to the whole sequence
        slider(
            "block_size",
            lambda v: min_block_size(v.seq_len),
            lambda v: v.seq_len,
            label="block size",
        ),
        check("causal"),
        slider("seed", 0, 99),
        slider("step", 0, lambda v: flash_step_count(v.seq_len, v.block_size, v.causal)),
    )

    def __init__(self, **settings: Any) -> None:
        start = FlashParams(**settings)  # validates the settings
        controls = self.declare(start)
        self.next_button = _button("next tile", "step-forward", "next-button", self._next)
        self.reset_button = _button("reset", "undo", "reset-button", self._reset)
        self.end_button = _button("run to the end", "fast-forward", "end-button", self._to_end)

        self.tiles = self.panel("tiles", Heatmap(
            title="tiles",
            colormap="gray_r",
            vmin=0.0,
            vmax=2.0,
            show_colorbar=False,
            categories=[(0.0, "not read yet"), (1.0, "read earlier"), (2.0, "on chip now")],
            panel_size=PANEL,
        ))  # fmt: skip
        self.tiles.add_class(css("tiles"))
        self.weights = self.panel("weights", Heatmap(
            title="softmax P (naive stores it all)",
            vmin=0.0,
            panel_size=PANEL,
            colorbar_label="weight",
        ))  # fmt: skip
        self.weights.add_class(css("weights"))
        self.readout = _html("readout")
        self.m_chart = self.panel(
            "running_max", SeriesChart(name="running-max", width=390, height=190)
        )
        self.l_chart = self.panel(
            "running_sum", SeriesChart(name="running-sum", width=390, height=190)
        )
        self.outputs = self.panel(
            "outputs", Heatmap(colormap=DIVERGING_CMAP, symmetric=True, panel_size=PANEL)
        )
        self.outputs.add_class(css("outputs"))
        self.traffic = self.panel("traffic", SeriesChart(name="traffic", width=370, height=230))
        self.scale = self.panel(
            "traffic_scale",
            SeriesChart(name="traffic-scale", width=560, height=250, legend="right"),
        )
        buttons = widgets.HBox([self.next_button, self.reset_button, self.end_button])
        body = [
            panel_row([self.m_chart, self.l_chart]),
            panel_row([self.outputs, self.readout]),
            panel_row([self.traffic, self.scale]),
        ]
        super().__init__(
            controls=[*controls, buttons], body=body, principal=self.tiles, beside=[self.weights]
        )
        self.refresh()

    # Buttons -------------------------------------------------------------------------------
    def _next(self) -> None:
        self.step.value = min(self.step.value + 1, self.step.max)

    def _reset(self) -> None:
        self.step.value = 0

    def _to_end(self) -> None:
        self.step.value = self.step.max

    # The loop ------------------------------------------------------------------------------
    def _draw(self, r: FlashExploration) -> None:
        p = r.params
        self._draw_tiles(r)
        self._draw_weights(r)
        self._draw_running(r)
        self._draw_outputs(r)
        self._draw_traffic(r)
        self._draw_traffic_scale(r)
        self.readout.value = _readout_html(r)
        self.next_button.disabled = p.step >= r.n_steps
        self.end_button.disabled = p.step >= r.n_steps
        self.reset_button.disabled = p.step == 0

    def _draw_tiles(self, r: FlashExploration) -> None:
        q_labels, k_labels = _labels("q", r), _labels("k", r)
        if r.current is None:
            where = "tiles: none read yet"
        else:
            where = f"tiles: ({r.current.i}, {r.current.j}) on chip"
        self.tiles.set_data(
            r.tile_state.float(),  # 0 not read, 1 read, 2 on chip
            masked=r.skipped,
            row_labels=q_labels,
            col_labels=k_labels,
            title=where,
        )

    def _draw_weights(self, r: FlashExploration) -> None:
        self.weights.set_data(
            r.weights, masked=~r.allowed, row_labels=_labels("q", r), col_labels=_labels("k", r)
        )

    def _draw_running(self, r: FlashExploration) -> None:
        """The running max m and sum l of every row, now and at the end."""
        q_labels = _labels("q", r)
        rows = list(range(r.params.seq_len))
        ticks = [float(i) for i in rows]
        common = dict(x_label="query row", x_ticks=ticks, x_tick_labels=q_labels, legend="right")
        top_m = max(float(r.final_m.max()), 0.0)
        low_m = min(float(r.final_m.min()), 0.0)
        pad = 0.15 * (top_m - low_m or 1.0)
        charts = (
            (self.m_chart, "m", r.m, r.final_m, "running max m (largest score seen)", "score",
             [low_m - pad, top_m + pad]),
            (self.l_chart, "l", r.l, r.final_l, "running sum l = Σ exp(score − m)", "sum",
             [0.0, 1.15 * float(r.final_l.max())]),
        )  # fmt: skip
        for chart, name, now, final, title, y_label, y_range in charts:
            now = torch.where(r.started, now, torch.nan)  # rows not started yet: no bar
            chart.set_data(
                rows,
                [
                    _series(f"{name} now", now, FLASH_COLOR, "bar"),
                    _series(f"final {name}", final, FINAL_COLOR, "line", dash=True),
                ],
                title=title,
                y_label=y_label,
                y_range=y_range,
                **common,
            )

    def _draw_outputs(self, r: FlashExploration) -> None:
        t, q_labels = r.params.seq_len, _labels("q", r)
        lim = float(r.output.abs().max())
        not_started = (~r.started)[:, None].expand(t, r.params.d_head)  # (T, D)
        masked = torch.stack([not_started, torch.zeros_like(not_started)])  # (2, T, D)
        done = int(r.finished.sum())
        self.outputs.set_data(
            torch.stack([r.partial, r.output]),  # (2, T, D)
            masked=masked,
            fully_masked=torch.zeros(2, t, dtype=torch.bool),
            row_labels=q_labels,
            col_labels=[f"d{j}" for j in range(r.params.d_head)],
            panel_titles=["flash: acc / l so far", "exact: P @ V"],
            title=f"output: {done} of {t} rows done, error {r.max_error:.0e}",
            vmin=-lim,
            vmax=lim,
        )

    def _draw_traffic(self, r: FlashExploration) -> None:
        p = r.params
        cumulative = [0.0]
        for read, written in r.step_bytes:
            cumulative.append(cumulative[-1] + read + written)
        naive = float(r.naive.bytes_read + r.naive.bytes_written)
        steps = list(range(r.n_steps + 1))
        self.traffic.set_data(
            steps,
            [
                {
                    "name": "flash, moved so far",
                    "values": cumulative,
                    "color": FLASH_COLOR,
                    "kind": "line",
                },
                {
                    "name": "naive, all of it",
                    "values": [naive] * len(steps),
                    "color": NAIVE_COLOR,
                    "kind": "line",
                    "dash": True,
                },
            ],
            title=f"bytes moved to and from the chip, T = {p.seq_len}, D = {p.d_head}",
            x_label="step",
            y_label="bytes",
            y_range=[0.0, 1.45 * max(naive, cumulative[-1])],  # headroom: the legend
            markers=[{"x": float(p.step), "label": f"step {p.step}"}],
            legend="top-left",
        )

    def _draw_traffic_scale(self, r: FlashExploration) -> None:
        c = r.curves
        self.scale.set_data(
            list(c.seq_lens),
            [
                _series("naive: bytes moved", c.naive_moved, NAIVE_COLOR, "line"),
                _series("flash: bytes moved", c.flash_moved, FLASH_COLOR, "line"),
                _series("naive: S and P stored", c.naive_stored, NAIVE_COLOR, "line", dash=True),
                _series("flash: lse stored", c.flash_stored, FLASH_COLOR, "line", dash=True),
            ],
            title=(
                f"one head at real sizes: D = {REAL_D_HEAD}, tiles of {REAL_BLOCK}, "
                f"{REAL_VALUE_BYTES}-byte numbers"
            ),
            x_label="sequence length T",
            y_label="bytes",
            x_log=True,
            y_log=True,
            x_ticks=[256.0, 1024.0, 4096.0, 16384.0, 65536.0],
            x_tick_labels=["256", "1k", "4k", "16k", "64k"],
            y_ticks=[1e3, 1e6, 1e9, 1e12],
        )


def _labels(prefix: str, r: FlashExploration) -> list[str]:
    return [f"{prefix}{i}" for i in range(r.params.seq_len)]


def _readout_html(r: FlashExploration) -> str:
    p, s = r.params, r.current
    if s is None:
        head = f"Step 0 of {r.n_steps}: nothing read yet. Press “next tile”."
        this = ""
    else:
        (r0, r1), (c0, c1) = s.rows, s.cols
        head = (
            f"Step {p.step} of {r.n_steps}: query tile {s.i} (q{r0}–q{r1 - 1}) × "
            f"key tile {s.j} (k{c0}–k{c1 - 1})."
        )
        what = "q, k and v tiles" if s.j == 0 else "k and v tiles"
        wrote = f", wrote {s.bytes_written} B (output rows and lse)" if s.last else ", wrote 0 B"
        this = f"This step read {s.bytes_read} B ({what}){wrote}."
    n_stored = 2 * p.seq_len * p.seq_len
    rows = [
        [
            "naive",
            human_bytes(r.naive.bytes_read),
            human_bytes(r.naive.bytes_written),
            f"{human_bytes(r.naive.extra_bytes)} (S, P: {n_stored} numbers)",
        ],
        [
            "flash so far",
            human_bytes(r.bytes_read),
            human_bytes(r.bytes_written),
            f"{human_bytes(4 * int(r.finished.sum()))} (lse)",
        ],
        [
            "flash, all steps",
            human_bytes(r.flash_read_total),
            human_bytes(r.flash_written_total),
            f"{human_bytes(4 * p.seq_len)} (lse: {p.seq_len} numbers)",
        ],
    ]
    on_chip = f"On chip at once: at most {p.block_size} × {p.block_size} scores"
    ratio = (r.naive.bytes_read + r.naive.bytes_written) / max(
        1, r.flash_read_total + r.flash_written_total
    )
    lines = [
        f"<b>{html.escape(head)}</b>",
        html.escape(this),
        html.escape(f"{on_chip}, never the {p.seq_len} × {p.seq_len} matrix."),
        html.escape(
            "Tiles: black = on chip now, grey = read earlier, white = not read yet, "
            "hatched = skipped (every key in the future)."
        ),
        table_html(rows, header=["float32", "read", "written", "kept in main memory"]),
        html.escape(f"Naive moves {ratio:.2g}× the bytes flash moves here."),
    ]
    return "<br>".join(x for x in lines if x)


def _series(name: str, values, color: str, kind: str, *, dash: bool = False) -> dict:
    vals = values.tolist() if hasattr(values, "tolist") else list(values)
    out = {"name": name, "values": [float(v) for v in vals], "color": color, "kind": kind}
    if dash:
        out["dash"] = True
    return out


def _button(description: str, icon: str, name: str, action) -> widgets.Button:
    b = widgets.Button(description=description, icon=icon, layout={"width": "auto"})
    b.add_class(css(name))
    b.on_click(lambda _b: action())
    return b


def _html(name: str) -> widgets.HTML:
    w = widgets.HTML("")
    w.add_class(css(name))
    w.layout.max_width = "430px"
    return w
