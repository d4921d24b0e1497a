"""LinearAttentionExplorer: the recurrent state of linear attention, token by token.

Move "tokens read" and one more token is written into the (D, D) state: the state panel shows S
after that token, and the outputs read from it fill in row by row, equal to the parallel form's
rows beside them (the readout prints the largest difference). Below, the weights each output
puts on the values: ordinary causal softmax for the same q and k, and linear attention's
phi(q) . phi(k), normalised, or the gated delta rule's implicit weights (the "variant" buttons;
its gate and write strength are sliders). The state never grows; the cache softmax attention
would keep does.

    from widgets.explorers.linear_attention import LinearAttentionExplorer
    LinearAttentionExplorer(step=3)      # explorer.result holds the state and both outputs
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import torch

from attention.explore.linear_attention import (
    GATE_RANGE,
    LINEAR_D_MAX,
    LINEAR_SEQ_MAX,
    LINEAR_VARIANTS,
    LinearAttentionExploration,
    LinearAttentionParams,
)

from ..views import Heatmap
from ..views.style import CVD_SWAP, DEFAULT_CMAP, DIVERGING_CMAP, css
from .base import Explorer
from .controls import choice, float_range, panel_row, slider

PANEL = 200  # px: the state, the outputs and the weights share one panel size


class LinearAttentionExplorer(Explorer):
    """Linear attention's recurrent state, token by token, against its parallel form.

    Args:
        **settings: initial values of any LinearAttentionParams field: seq_len (2..16),
            d_head (2..8), step (tokens read, 1..seq_len), variant ("linear" or
            "delta rule"), gate (0.5..1) and beta (0..1) of the delta rule, seed.

    `result` is the LinearAttentionExploration of `attention.explore.explore_linear_attention`.
    """

    CONTROLS = (
        choice("variant", LINEAR_VARIANTS),
        slider("seq_len", 2, LINEAR_SEQ_MAX, label="tokens T"),
        slider("d_head", 2, LINEAR_D_MAX, label="width D"),
        slider("step", 1, lambda v: v.seq_len, label="tokens read"),
        float_range("gate", *GATE_RANGE, label="gate α (delta rule)"),
        float_range("beta", 0.0, 1.0, label="write β (delta rule)"),
        slider("seed", 0, 99),
    )

    def __init__(self, **settings: Any) -> None:
        start = LinearAttentionParams(**settings)  # validates the settings
        controls = self.declare(start)
        diverging = dict(colormap=DIVERGING_CMAP, symmetric=True, panel_size=PANEL)
        self.state = self.panel(
            "state", Heatmap(show_numbers=True, digits=1, colorbar_label="S", **diverging)
        )
        self.state.add_class(css("state"))
        self.outputs = self.panel("outputs", Heatmap(colorbar_label="output", **diverging))
        self.outputs.add_class(css("outputs"))
        softmax = Heatmap(
            title="softmax(q·k / √D), causal",
            vmin=0.0,
            vmax=1.0,
            panel_size=PANEL,
            colorbar_label="weight",
        )
        self.softmax = self.panel("softmax_weights", softmax)
        self.softmax.add_class(css("softmax-weights"))
        self.implicit = self.panel(
            "linear_weights", Heatmap(colorbar_label="weight", panel_size=PANEL)
        )
        self.implicit.add_class(css("linear-weights"))
        self.readout = widgets.HTML("")
        self.readout.add_class(css("readout"))
        self.readout.layout.max_width = "440px"
        super().__init__(
            controls=controls,
            body=[panel_row([self.softmax, self.implicit, self.readout])],
            principal=self.state,
            beside=[self.outputs],
        )
        self.refresh()

    def _sync_controls(self) -> None:
        super()._sync_controls()
        delta = self.variant.value == "delta rule"
        for w in (self.gate, self.beta):  # the delta rule's own settings
            w.layout.display = None if delta else "none"

    def _draw(self, r: LinearAttentionExploration) -> None:
        for draw in (
            self._draw_state,
            self._draw_outputs,
            self._draw_softmax_weights,
            self._draw_linear_weights,
        ):
            draw(r)
        self.readout.value = _readout_html(r)

    def _draw_state(self, r: LinearAttentionExploration) -> None:
        p = r.params
        t, d, s = p.seq_len, p.d_head, p.step
        key_name = "φ(k)" if p.variant == "linear" else "k"
        self.state.set_data(
            r.recurrent.state,
            row_labels=[f"{key_name}{j}" for j in range(d)],
            col_labels=[f"v{j}" for j in range(d)],
            title=f"state S after {s} of {t} tokens ({d} x {d}, never grows)",
        )

    def _draw_outputs(self, r: LinearAttentionExploration) -> None:
        t, d, s = r.params.seq_len, r.params.d_head, r.params.step
        read = torch.zeros(t, d)
        read[:s] = r.recurrent.output  # rows not read yet: zeros, drawn hatched
        unread = torch.zeros(2, t, d, dtype=torch.bool)
        unread[0, s:] = True
        self.outputs.set_data(
            torch.stack([read, r.parallel.output]),  # (2, T, D)
            masked=unread,
            fully_masked=torch.zeros(2, t, dtype=torch.bool),
            row_labels=_token_names(t),
            col_labels=[f"d{j}" for j in range(d)],
            panel_titles=["read from the state", "parallel form"],
            title=f"outputs: row {s} read from S = the parallel row",
            highlight_row=s - 1,
        )

    def _draw_softmax_weights(self, r: LinearAttentionExploration) -> None:
        self.softmax.set_data(r.softmax_weights, **_causal_grid(r.params.seq_len, r.params.step))

    def _draw_linear_weights(self, r: LinearAttentionExploration) -> None:
        p = r.params
        if p.variant == "linear":  # weights in [0, 1]: the softmax panel's colours, to compare
            title = "linear: φ(q)·φ(k), rows normalised"
            scale = dict(colormap=DEFAULT_CMAP, symmetric=False, vmin=0.0, vmax=1.0)
        else:  # signed weights: a diverging map centred on 0
            title = f"delta rule: implicit weights (α {p.gate:.2f}, β {p.beta:.2f})"
            diverging = CVD_SWAP.get(DIVERGING_CMAP, DIVERGING_CMAP)
            cmap = diverging if self.palette == "cvd" else DIVERGING_CMAP
            scale = dict(colormap=cmap, symmetric=True, vmin=None, vmax=None)
        grid = _causal_grid(p.seq_len, p.step)
        self.implicit.set_data(r.implicit_weights, title=title, **grid, **scale)


def _token_names(t: int) -> list[str]:
    return [f"t{i + 1}" for i in range(t)]


def _causal_grid(t: int, step: int) -> dict[str, Any]:
    """A weights map's queries x keys: the keys after each query hatched, query `step` marked."""
    rows = _token_names(t)
    future = ~torch.ones(t, t, dtype=torch.bool).tril()  # (T, T) keys after the query
    return dict(masked=future, row_labels=rows, col_labels=rows, highlight_row=step - 1)


def _readout_html(r: LinearAttentionExploration) -> str:
    p = r.params
    s, d = p.step, p.d_head
    if p.variant == "linear":
        write = f"S += φ(k{s}) v{s}ᵀ and z += φ(k{s}); o{s} = Sᵀφ(q{s}) / (z·φ(q{s}))"
        kept = f"{d} x {d} + {d} = {r.state_numbers} numbers (S and z)"
    else:
        write = f"S = α (I − β k{s}k{s}ᵀ) S + β k{s} v{s}ᵀ; o{s} = Sᵀq{s}"
        kept = f"{d} x {d} = {r.state_numbers} numbers"
    lines = [
        f"<b>Token {s} of {p.seq_len}: {html.escape(write)}</b>",
        html.escape(
            f"Rows 1..{s} read from the state equal the parallel form's: largest difference "
            f"{r.max_difference:.1e}."
        ),
        html.escape(
            f"The state keeps {kept} at every step; softmax attention's cache after {s} tokens "
            f"holds 2 x {s} x {d} = {r.cache_numbers} (keys and values), and grows."
        ),
    ]
    if p.variant == "delta rule":
        lines.append(
            html.escape(
                "The delta rule's weights on the values can be negative and need not sum to 1: "
                "each write also erases what older keys that overlap the new one stored."
            )
        )
    return "<br>".join(lines)
