"""AttentionExplorer: move a slider and watch q, k, scores, weights and outputs change.

    from widgets.explorers.attention import AttentionExplorer
    AttentionExplorer(seq_len=8, mask="causal", n_heads=2)   # any AttentionParams field
    explorer.result.weights                                  # (H, Tq, Tk) after a slider move

Every panel is a Heatmap drawn in the browser from the numbers of `explore_attention(params)`,
the pure function in `attention.explore`; hidden panels are not sent. Clicking a cell of the
scores or weights switches the mask to "custom" and blocks (or unblocks) that query-key pair.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import torch

from attention.explore import (
    MASK_KINDS,
    MAX_LEN,
    MAX_WIDTH,
    TEMPERATURE_RANGE,
    AttentionExploration,
    AttentionParams,
    mask_to_tuple,
    max_heads,
)

from ..views import Heatmap, auto_cell_size
from ..views.style import CELL_MIN, DIVERGING_CMAP, css
from .base import Explorer
from .controls import check, log_slider, menu, shape_str, slider, table_html

WEIGHTS_PANEL = 240  # px, the weights panel's panel_size
OUTPUT_WIDTH = 480  # px, the width the output panel's grid keeps to if it can...
OUTPUT_WIDTH_MAX = 768  # px, ...and the most it grows to keep cells of OUTPUT_CELL px
OUTPUT_CELL = 12  # px
_DIVERGING = {"colormap": DIVERGING_CMAP, "symmetric": True, "panel_size": 200}

# Every panel: its key in `explorer.panels`, the "panels:" toggle that shows it (panels sharing
# a toggle stand side by side), its first title and its heatmap settings. The weights are the
# principal panel, beside the controls; the others stand below in this order.
PANELS = (
    ("q", "Q and K", "Q (head)", _DIVERGING),
    ("k", "Q and K", "K (head)", _DIVERGING),
    ("raw_scores", "raw scores", "raw scores q·kᵀ", _DIVERGING),
    ("scores", "scaled + masked", "scaled + masked scores", _DIVERGING),
    ("weights", "weights", "weights = softmax(scores)",
     {"vmin": 0.0, "vmax": 1.0, "panel_size": WEIGHTS_PANEL}),
    ("output", "output", "output = weights · V (heads merged)", _DIVERGING),
    ("per_head", "per head", "weights of every head", {"vmin": 0.0, "vmax": 1.0}),
)  # fmt: skip
CLICKABLE = ("scores", "weights", "per_head")  # a click blocks or unblocks that pair
GROUPS = tuple(dict.fromkeys(group for _key, group, *_ in PANELS))  # the "panels:" toggles


def _shows(group: str) -> str:
    """The field of the toggle that shows a group: "scaled + masked" -> show_scaled_and_masked."""
    return "show_" + group.replace(" + ", "_and_").replace(" ", "_")


def output_cell_size(tq: int, tk: int, d_model: int) -> int:
    """Cells of the output (Tq, M) panel: the weights' size, within 480 px (768 px if M > 40).

    Fitted like the square panels (panel_size / max(Tq, M)), a wide output would get cells a
    third the size of the weights' beside it (12 px against 40 px for Tq = 6, M = 16).
    """
    fit = max(OUTPUT_WIDTH // d_model, min(OUTPUT_CELL, OUTPUT_WIDTH_MAX // d_model))
    return max(CELL_MIN, min(auto_cell_size(WEIGHTS_PANEL, tq, tk), fit))


def _key_len(v: object) -> int:
    return v.key_len if v.cross else v.seq_len  # Tk


class AttentionExplorer(Explorer):
    """Scaled dot-product attention with every control of `AttentionParams`.

    Args:
        **settings: initial values of any AttentionParams field (seq_len, d_k, n_heads, mask,
            pad_len, scaled, temperature, seed, query_row, head, cross, key_len). d_k is the
            width of each head's queries and keys; the model is d_model = n_heads * d_k wide.

    Attributes:
        result: the AttentionExploration of the current settings.
        panels: name -> Heatmap for every panel (shown or not).
        visible: the "panels:" toggles, by the name shown beside each.
    """

    CONTROLS = (
        slider("seq_len", 1, MAX_LEN, label="seq_len (Tq)"),
        slider("d_k", 1, MAX_WIDTH, label="d_k (per head)"),
        # a slider, not a menu: a d_k move then changes one number (its max) in the browser,
        # where rebuilding a menu of up to 256 head counts cost a page layout
        slider("n_heads", 1, lambda v: max_heads(v.d_k)),
        check("cross", label="cross-attention"),
        slider("key_len", 1, MAX_LEN, label="key_len (Tk)"),
        menu("mask", MASK_KINDS),
        slider("pad_len", 0, _key_len, label="pad length"),
        check("scaled", label="divide by sqrt(d_k)"),
        log_slider("temperature", *TEMPERATURE_RANGE),
        slider("seed", 0, 99),
        slider("query_row", 0, lambda v: v.seq_len - 1, label="query row"),
        slider("head", 0, lambda v: v.n_heads - 1),
        check("show_numbers", label="show numbers", param=False),
        *(check(_shows(g), label=g, param=False, default=True) for g in GROUPS),
    )

    def __init__(self, **settings: Any) -> None:
        start = AttentionParams(**settings)  # validates the settings
        self._custom: torch.Tensor | None = (
            torch.tensor(start.custom_mask) if start.custom_mask else None
        )
        declared, n = self.declare(start), len(GROUPS)
        controls, toggles = declared[:-n], declared[-n:]  # the toggles in a row of their own
        self.mask.observe(self._mask_kind_changed, names="value")
        groups: dict[str, list[Heatmap]] = {}
        for key, group, title, traits in PANELS:
            view = self.panel(key, Heatmap(title=title, **traits))
            view.add_class(css(f"panel-{key.replace('_', '-')}"))
            groups.setdefault(group, []).append(view)
        for key in CLICKABLE:
            self.panels[key].on_click(self._cell_clicked)
        self._groups = {g: p[0] if len(p) == 1 else widgets.HBox(p) for g, p in groups.items()}
        self.visible = dict(zip(GROUPS, toggles, strict=True))
        self.readout = widgets.HTML()
        self.readout.add_class(css("readout"))
        # the weights beside the controls, the readout after them; the other stages below
        row = widgets.Layout(display="flex", flex_flow="row wrap", align_items="flex-start")
        grid = widgets.Box([g for name, g in self._groups.items() if name != "weights"], layout=row)
        panel_row = widgets.HBox(
            [widgets.Label("panels:"), *self.visible.values()],
            layout=widgets.Layout(flex_flow="row wrap", width="260px"),
        )
        for box in self.visible.values():
            box.layout.width = "auto"
        header = widgets.HTML(
            "<b>Attention explorer</b>: softmax(q·kᵀ × scale, masked) · v for random tokens. "
            "Click a cell of the scores or weights to block or unblock that pair."
        )
        super().__init__(
            controls=[*controls, panel_row],
            principal=self._groups["weights"],
            beside=[self.readout],
            body=[grid],
            header=header,
        )
        self.refresh()

    # Controls ---------------------------------------------------------------------------------
    def _mask_kind_changed(self, change: dict) -> None:
        # Entering "custom" starts from the mask on screen, so a preset can be edited.
        if change["new"] == "custom" and self.result is not None:
            self._custom = self.result.mask.clone()

    def _cell_clicked(self, row: int, col: int, _panel: int) -> None:
        """Block or unblock one query-key pair, switching the mask to "custom" if needed."""
        if self.result is None:
            return
        was_custom = self.mask.value == "custom"
        if not was_custom:
            with self.hold_refresh():
                self.mask.value = "custom"  # copies the mask on screen into self._custom
        self._custom[row, col] = ~self._custom[row, col]
        self.refresh()

    def _sync_controls(self) -> None:
        padding = self.mask.value == "padding"
        super()._sync_controls()
        self.key_len.layout.display = None if self.cross.value else "none"
        self.pad_len.layout.display = None if padding else "none"
        for name, group in self._groups.items():
            group.layout.display = None if self.visible[name].value else "none"
        if self.mask.value == "custom":
            tk = _key_len(self._control_values())
            self._custom = _resized(self._custom, self.seq_len.value, tk)

    def _derived_params(self) -> dict[str, Any]:
        custom = self.mask.value == "custom"
        return {"custom_mask": mask_to_tuple(self._custom) if custom else None}

    # Drawing ----------------------------------------------------------------------------------
    def _draw(self, r: AttentionExploration) -> None:
        shown = {name for name, box in self.visible.items() if box.value}
        for group, draw in (
            ("Q and K", self._draw_q_and_k),
            ("raw scores", self._draw_raw_scores),
            ("scaled + masked", self._draw_scores),
            ("weights", self._draw_weights),
            ("output", self._draw_output),
            ("per head", self._draw_per_head),
        ):
            if group in shown:  # hidden panels are not sent
                draw(r)
        self.readout.value = _readout(r)

    def _rows(self, r: AttentionExploration) -> dict[str, Any]:
        """The labels of a (Tq, Tk) panel, the inspected row and the numbers switch."""
        return {
            "row_labels": list(r.query_tokens),
            "col_labels": list(r.key_tokens),
            "highlight_row": r.params.query_row,
            "show_numbers": self.show_numbers.value,
        }

    def _draw_q_and_k(self, r: AttentionExploration) -> None:
        h, numbers = r.params.head, self.show_numbers.value
        self.panels["q"].set_data(
            r.q[h],
            row_labels=list(r.query_tokens),
            title=f"Q, head {h}  (Tq, d_k) = {shape_str(r.q[h].shape)}",
            show_numbers=numbers,
        )
        self.panels["k"].set_data(
            r.k[h],
            row_labels=list(r.key_tokens),
            title=f"K, head {h}  (Tk, d_k) = {shape_str(r.k[h].shape)}",
            show_numbers=numbers,
        )

    def _draw_raw_scores(self, r: AttentionExploration) -> None:
        h = r.params.head
        self.panels["raw_scores"].set_data(
            r.raw_scores[h], title=f"raw scores q·kᵀ, head {h}", **self._rows(r)
        )

    def _draw_scores(self, r: AttentionExploration) -> None:
        h = r.params.head
        self.panels["scores"].set_data(
            r.scores[h],
            ~r.mask,  # (Tq, Tk) True = masked
            r.fully_masked[h],
            title=f"scores × {r.scale:.3g}, masked, head {h}",
            **self._rows(r),
        )

    def _draw_weights(self, r: AttentionExploration) -> None:
        h = r.params.head
        self.panels["weights"].set_data(
            r.weights[h], ~r.mask, r.fully_masked[h], title=f"weights, head {h}", **self._rows(r)
        )

    def _draw_output(self, r: AttentionExploration) -> None:
        tq, m = r.output.shape  # (Tq, M)
        self.panels["output"].set_data(
            r.output,
            row_labels=list(r.query_tokens),
            title=f"output (Tq, d_model) = {shape_str(r.output.shape)}",
            cell_size=output_cell_size(tq, len(r.key_tokens), m),
            show_numbers=self.show_numbers.value,
        )

    def _draw_per_head(self, r: AttentionExploration) -> None:
        p = r.params
        first, last = head_window(p.head, p.n_heads)
        heads = "" if last - first == p.n_heads else f" {first}-{last - 1} of {p.n_heads}"
        self.panels["per_head"].set_data(
            r.weights[first:last],
            ~r.mask,
            r.fully_masked[first:last],
            title=f"weights of every head{heads}",
            panel_titles=[f"head {i}" for i in range(first, last)],
            panel_size=max(60, 480 // min(p.n_heads, 4)),
            **self._rows(r),
        )


MAX_SMALL_MULTIPLES = 16


def head_window(head: int, n_heads: int) -> tuple[int, int]:
    """Heads [first, last) drawn as small multiples: all, or 16 around the inspected head."""
    if n_heads <= MAX_SMALL_MULTIPLES:
        return 0, n_heads
    first = min(max(0, head - MAX_SMALL_MULTIPLES // 2), n_heads - MAX_SMALL_MULTIPLES)
    return first, first + MAX_SMALL_MULTIPLES


def _resized(mask: torch.Tensor | None, tq: int, tk: int) -> torch.Tensor:
    """Keep the overlapping part of a custom mask; new cells may attend."""
    out = torch.ones(tq, tk, dtype=torch.bool)
    if mask is not None:
        a, b = min(tq, mask.shape[0]), min(tk, mask.shape[1])
        out[:a, :b] = mask[:a, :b]
    return out


def _readout(r: AttentionExploration) -> str:
    p = r.params
    scale = f"1/√{p.d_k}" if p.scaled else "1"
    if abs(p.temperature - 1.0) > 1e-6:
        scale += f" / {p.temperature:.3g}"
    row = f"query {r.query_tokens[p.query_row]}, head {p.head}"
    if r.argmax_key < 0:
        stats = [("row", row), ("weights", "all 0: this row may attend to no key (output 0)")]
    else:
        stats = [
            ("row", row),
            ("entropy", f"{r.row_entropy:.3f} nats (uniform: {r.max_entropy:.3f})"),
            ("max weight", f"{r.max_weight:.3f} on {r.key_tokens[r.argmax_key]}"),
        ]
    stats.append(("scale", f"{scale} = {r.scale:.4g}"))
    stats.append(("d_model", f"H × d_k = {p.n_heads} × {p.d_k} = {p.d_model}"))
    shapes = [(name, shape_str(shape)) for name, shape in r.shapes.items()]
    return (
        f'<div style="margin-left:12px;font-size:12px">{table_html(stats)}'
        f"<br>{table_html(shapes, header=['tensor', 'shape'])}"
        f"<br><i>{html.escape(_mask_text(r))}</i></div>"
    )


def _mask_text(r: AttentionExploration) -> str:
    blocked = int((~r.mask).sum())
    full = int(r.fully_masked[r.params.head].sum())
    text = f"mask: {r.params.mask}, {blocked} of {r.mask.numel()} pairs blocked"
    return text + (f", {full} rows attend to nothing" if full else "")
