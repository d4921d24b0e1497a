"""PositionalEncodingExplorer: the sinusoidal table, and why attention needs it.

Self-attention treats its input as a set: shuffle the tokens and the output rows are shuffled
the same way, nothing else changes. Add positional encodings (which stay with the slots while
the tokens move) and the output changes for real. The "shuffle tokens" button draws a new
order; the readout prints max |attention(shuffled) - shuffled attention(original)| both ways.

    from widgets.explorers.positional import PositionalEncodingExplorer
    PositionalEncodingExplorer(seq_len=16, d_model=32)
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from typing import Any

import ipywidgets as widgets
import torch

from attention.explore import (
    PE_D_MODEL_MAX,
    PE_DIMS_MAX,
    PE_SEQ_MAX,
    PositionalExploration,
    PositionalParams,
    ShuffleCheck,
)

from ..views import Heatmap, SeriesChart, auto_cell_size
from ..views.style import DIVERGING_CMAP, LABELLED_CELL_MIN, PALETTE, css
from .base import Explorer
from .controls import check, number, panel_row, pick, slider, text

SHUFFLE_MAX = 9999
OUTPUTS_PANEL = 320  # px, panel_size of the outputs and the difference
LABEL_EVERY_ROW = 32  # up to this many tokens every output row is labelled (the order is read)
SIDE_BY_SIDE_MAX = 800  # px; two output grids wider than this together are stacked
DIFF_VMAX_FLOOR = 1e-3  # the difference's colour scale never ends below this: float noise
#                         (~1e-7 when only permuted) stays dark instead of becoming a pattern


def default_dims(d_model: int) -> tuple[int, ...]:
    """A fast sine/cosine pair and a slower one: (0, 1) and the pair near a quarter width."""
    slow = 2 * (d_model // 8)
    dims = (0, 1, slow, slow + 1) if slow >= 2 else (0, 1)
    return tuple(i for i in dims if i < d_model)


def outputs_layout(seq_len: int, d_model: int) -> tuple[int, int]:
    """(cell_size, columns) of the outputs heatmap; the difference uses the same cell_size.

    Cells stay large enough (7 px) for a label on every row up to 32 tokens; when that makes
    the two panels wider than 800 px together, they are stacked (columns=1).
    """
    cell = auto_cell_size(OUTPUTS_PANEL, seq_len, d_model)
    if seq_len <= LABEL_EVERY_ROW:
        cell = max(cell, LABELLED_CELL_MIN)
    columns = 1 if 2 * d_model * cell > SIDE_BY_SIDE_MAX else 0
    return cell, columns


def format_dims(dims: tuple[int, ...]) -> str:
    """(0, 1, 8, 9) -> "0, 1, 8, 9", the text the dims field shows."""
    return ", ".join(str(i) for i in dims)


def parse_dims(text: str, d_model: int) -> tuple[int, ...]:
    """ "0, 1, 8, 9" (commas or spaces) -> (0, 1, 8, 9); ValueError names what is wrong."""
    parts = text.replace(",", " ").split()
    if not all(part.isdigit() for part in parts):
        raise ValueError(f"dims: expected whole numbers separated by commas, got {text!r}")
    dims = tuple(dict.fromkeys(int(part) for part in parts))  # repeats dropped, order kept
    if not 1 <= len(dims) <= PE_DIMS_MAX:
        raise ValueError(f"dims: expected 1 to {PE_DIMS_MAX} dimensions, got {len(dims)}")
    if max(dims) >= d_model:
        raise ValueError(
            f"dims: expected dimensions in [0, {d_model - 1}] (d_model={d_model}), got {max(dims)}"
        )
    return dims


def dim_name(i: int, d_model: int) -> str:
    """ "dim 6: sin, period 17.8": which function column i is and its period in positions."""
    pair = i // 2
    period = 2 * math.pi * 10000.0 ** (2 * pair / d_model)
    return f"dim {i}: {'sin' if i % 2 == 0 else 'cos'}, period {period:.3g}"


class PositionalEncodingExplorer(Explorer):
    """The sinusoidal encoding as a heatmap and as curves, and the shuffle test.

    Args:
        dims: the dimensions drawn as curves (up to 8); default: a fast sine/cosine pair and a
            slower one for the width (`default_dims`).
        **settings: initial values of any other PositionalParams field: seq_len (1..64),
            d_model (2..128, even), add_positions, shuffle (0..9999, 0 = in order), seed.

    Among the declared controls: `dims`, a list, and `dims_text`, a field that shows them and
    takes typed ones such as "0, 1, 32, 33"; besides them, the buttons "shuffle tokens" (a new
    shuffle seed) and "restore order" (seed 0). `result` is the PositionalExploration of
    `attention.explore.explore_positional`.
    """

    CONTROLS = (
        slider("seq_len", 1, PE_SEQ_MAX),
        slider("d_model", 2, PE_D_MODEL_MAX, step=2),
        check("add_positions", label="add positional encoding"),
        slider("seed", 0, 99),
        number("shuffle", 0, SHUFFLE_MAX, label="shuffle seed (0 = in order)"),
        # The list scrolls its selection out of sight (dims 8, 9 below 0-3); the field always
        # shows it, and typing "0, 1, 32, 33" is quicker than ctrl-clicking a list of 128.
        text(
            "dims_text",
            label=f"curves (≤ {PE_DIMS_MAX})",
            width="240px",
            live=False,
            placeholder="e.g. 0, 1, 8, 9",
            fit_label=True,
            param=False,
        ),
        pick("dims", lambda v: range(v.d_model), rows=4, width="150px"),  # follows d_model below
    )

    def __init__(self, *, dims: Iterable[int] | None = None, **settings: Any) -> None:
        d_model = settings.get("d_model", PositionalParams.d_model)
        dims = default_dims(d_model) if dims is None else tuple(dims)
        start = PositionalParams(dims=dims, **settings)  # validates the settings
        if start.d_model % 2:
            raise ValueError(f"d_model: expected an even width, got {start.d_model}")
        controls = self.declare(start, dims_text=format_dims(dims))
        self._dims_text_shown = self.dims_text.value
        self.shuffle_button = widgets.Button(description="shuffle tokens", icon="random")
        self.shuffle_button.add_class(css("shuffle-button"))
        self.shuffle_button.on_click(lambda _b: self._next_shuffle())
        self.restore_button = widgets.Button(description="restore order", icon="undo")
        self.restore_button.add_class(css("restore-button"))
        self.restore_button.on_click(lambda _b: setattr(self.shuffle, "value", 0))

        self.encoding = self.panel("encoding", Heatmap(
            title="PE[position, dim]", colormap=DIVERGING_CMAP, vmin=-1.0, vmax=1.0,
            panel_size=340, colorbar_label="value",
        ))  # fmt: skip
        self.encoding.add_class(css("encoding"))
        self.outputs = self.panel(
            "outputs", Heatmap(colormap=DIVERGING_CMAP, symmetric=True, panel_size=OUTPUTS_PANEL)
        )
        self.outputs.add_class(css("outputs"))
        self.difference = self.panel(
            "difference", Heatmap(title="|difference|", vmin=0.0, panel_size=OUTPUTS_PANEL)
        )
        self.difference.add_class(css("difference"))
        self.curves = self.panel(
            "curves", SeriesChart(name="curves", width=560, height=250, legend="right")
        )
        self.readout = widgets.HTML("")
        self.readout.add_class(css("readout"))
        # one column: sliders, the shuffle, the curves' dimensions; the table beside it
        buttons = widgets.HBox([self.shuffle_button, self.restore_button])
        controls[-2:-2] = [buttons]  # under the shuffle seed, above the curves' dimensions
        body = [
            self.curves,
            self.readout,
            panel_row([self.outputs, self.difference]),
        ]
        super().__init__(controls=controls, principal=self.encoding, body=body)
        self.refresh()

    def _next_shuffle(self) -> None:
        self.shuffle.value = self.shuffle.value % SHUFFLE_MAX + 1

    def _sync_controls(self) -> None:
        super()._sync_controls()
        m = self.d_model.value
        wanted = tuple(self.dims.value)
        if self.dims_text.value != self._dims_text_shown:  # the learner typed dims
            try:
                wanted = parse_dims(self.dims_text.value, m)
            except ValueError:
                self.dims_text.value = self._dims_text_shown  # the message quotes the typo
                raise
        keep = tuple(i for i in wanted if i < m)[:PE_DIMS_MAX] or default_dims(m)
        if len(self.dims.options) != m:
            self.dims.options = list(range(m))
        if tuple(self.dims.value) != keep:
            self.dims.value = keep
        self.dims_text.value = self._dims_text_shown = format_dims(keep)

    def shown_check(self) -> ShuffleCheck:
        """The shuffle test the panels show: with or without positions, as the toggle says."""
        return _shown_check(self.result)

    def _draw(self, r: PositionalExploration) -> None:
        self._draw_encoding(r)
        self._draw_curves(r)
        self._draw_outputs(r)
        self._draw_difference(r)
        self.readout.value = _readout_html(r)

    def _draw_encoding(self, r: PositionalExploration) -> None:
        p = r.params
        self.encoding.set_data(
            r.encoding,
            row_labels=[str(i) for i in range(p.seq_len)],
            col_labels=[str(j) for j in range(p.d_model)],
        )

    def _draw_curves(self, r: PositionalExploration) -> None:
        p = r.params
        positions = list(range(p.seq_len))
        self.curves.set_data(
            positions,
            [
                {
                    "name": dim_name(i, p.d_model),
                    "values": curve.tolist(),
                    "color": PALETTE[k % len(PALETTE)],
                    "kind": "line",
                }
                for k, (i, curve) in enumerate(zip(p.dims, r.curves, strict=True))
            ],
            title="selected dimensions against position",
            x_label="position",
            y_label="PE",
            y_range=[-1.1, 1.1],
            y_ticks=[-1.0, -0.5, 0.0, 0.5, 1.0],
            x_range=[0.0, float(max(p.seq_len - 1, 1))],
        )

    def _draw_outputs(self, r: PositionalExploration) -> None:
        p, check = r.params, _shown_check(r)
        lim = float(check.output.abs().max())
        cell, columns = outputs_layout(p.seq_len, p.d_model)
        self.outputs.set_data(
            torch.stack([check.shuffled_output, check.permuted_output]),  # (2, T, M)
            row_labels=[f"tok {int(i)}" for i in r.permutation],
            col_labels=[str(j) for j in range(p.d_model)],
            panel_titles=["attention(shuffled tokens)", "attention(tokens), rows shuffled"],
            title="self-attention output, rows = shuffled order",
            vmin=-lim,
            vmax=lim,
            cell_size=cell,
            columns=columns,
        )

    def _draw_difference(self, r: PositionalExploration) -> None:
        # Its own scale, 0 .. its max, so a real difference shows where and how much; the
        # floor keeps float noise (max ~1e-7 when only permuted) uniformly dark.
        p, check = r.params, _shown_check(r)
        diff = (check.shuffled_output - check.permuted_output).abs()  # (T, M)
        diff_max = float(diff.max())
        self.difference.set_data(
            diff,
            row_labels=[f"tok {int(i)}" for i in r.permutation],
            col_labels=[str(j) for j in range(p.d_model)],
            title=f"|difference|, max {diff_max:.2g}",
            vmax=max(diff_max, DIFF_VMAX_FLOOR),
            cell_size=outputs_layout(p.seq_len, p.d_model)[0],
        )


def _shown_check(r: PositionalExploration) -> ShuffleCheck:
    return r.with_positions if r.params.add_positions else r.without_positions


def _readout_html(r: PositionalExploration) -> str:
    p = r.params
    order = " ".join(str(int(i)) for i in r.permutation)
    if p.seq_len == 1:
        order_note = "one token: there is no order to change"
    elif p.shuffle == 0:
        order_note = "in order (press “shuffle tokens”)"
    else:
        order_note = f"shuffled order: {order}"
    lines = [
        f"Tokens: {html.escape(order_note)}.",
        _verdict("without positions", r.without_positions, not p.add_positions),
        _verdict("with positions", r.with_positions, p.add_positions),
    ]
    return "<br>".join(lines)


def _verdict(name: str, check: ShuffleCheck, active: bool) -> str:
    # float32 attention reproduces a permutation to ~1e-6; anything larger is a real change
    diff, scale = check.max_abs_diff, float(check.output.abs().max())
    meaning = "only permuted" if diff < 1e-4 else "changed, not just permuted"
    text = (
        f"{name}: max |attn(shuffled) − shuffled attn| = {diff:.2g} "
        f"(outputs reach ±{scale:.2g}) → {meaning}"
    )
    text = html.escape(text)
    return f"<b>{text}</b>" if active else text
