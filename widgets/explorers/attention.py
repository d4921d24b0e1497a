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
    explore_attention,
    mask_to_tuple,
)

from ..views import Heatmap, auto_cell_size
from ..views.style import CELL_MIN, DIVERGING_CMAP, css
from .base import Explorer
from .controls import (
    clamp_slider,
    dropdown,
    float_slider,
    int_slider,
    shape_str,
    table_html,
    toggle,
)

PANELS = ("Q and K", "raw scores", "scaled + masked", "weights", "output", "per head")
WEIGHTS_PANEL = 240  # px, the weights panel's panel_size
OUTPUT_WIDTH = 480  # px, the width the output panel's grid keeps to if it can...
OUTPUT_WIDTH_MAX = 768  # px, ...and the most it grows to keep cells of OUTPUT_CELL px
OUTPUT_CELL = 12  # px


def output_cell_size(tq: int, tk: int, d_model: int) -> int:
    """Cells of the output (Tq, M) panel: the weights' size, within 480 px (768 px if M > 40).

    Fitted like the square panels (panel_size / max(Tq, M)), a wide output would get cells a
    third the size of the weights' beside it (12 px against 40 px for Tq = 6, M = 16).
    """
    fit = max(OUTPUT_WIDTH // d_model, min(OUTPUT_CELL, OUTPUT_WIDTH_MAX // d_model))
    return max(CELL_MIN, min(auto_cell_size(WEIGHTS_PANEL, tq, tk), fit))


def _panel(name: str, title: str, **traits: Any) -> Heatmap:
    hm = Heatmap(title=title, **traits)
    hm.add_class(css(f"panel-{name}"))
    return hm


class AttentionExplorer(Explorer):
    """Scaled dot-product attention with every control of `AttentionParams`.

    Args:
        **settings: initial values of any AttentionParams field (seq_len, d_k, n_heads, mask,
            pad_len, scaled, temperature, seed, query_row, head, cross, key_len). d_k is the
            width of each head's queries and keys; the model is d_model = n_heads * d_k wide.

    Attributes:
        result: the AttentionExploration of the current settings.
        panels: name -> Heatmap for every panel (shown or not).
    """

    def __init__(self, **settings: Any) -> None:
        start = AttentionParams(**settings)  # validates the settings
        self._custom: torch.Tensor | None = (
            torch.tensor(start.custom_mask) if start.custom_mask else None
        )
        self.seq_len = int_slider("seq_len (Tq)", 1, MAX_LEN, start.seq_len, name="seq-len")
        self.d_k = int_slider("d_k (per head)", 1, MAX_WIDTH, start.d_k, name="d-k")
        # a slider, not a menu: a d_k move then changes one number (its max) in the browser,
        # where rebuilding a menu of up to 256 head counts cost a page layout
        self.n_heads = int_slider("n_heads", 1, max_heads(start.d_k), start.n_heads, name="n-heads")
        self.cross = toggle("cross-attention", start.cross, name="cross")
        self.key_len = int_slider("key_len (Tk)", 1, MAX_LEN, start.key_len, name="key-len")
        self.mask = dropdown("mask", MASK_KINDS, start.mask, name="mask")
        self.pad_len = int_slider("pad length", 0, start.tk, start.pad_len, name="pad-len")
        self.scaled = toggle("divide by sqrt(d_k)", start.scaled, name="scaled")
        lo, hi = TEMPERATURE_RANGE
        self.temperature = float_slider(
            "temperature", lo, hi, start.temperature, name="temperature", log=True, step=0.02
        )
        self.seed = int_slider("seed", 0, 99, start.seed, name="seed")
        self.query_row = int_slider("query row", 0, start.seq_len - 1, start.query_row, name="row")
        self.head = int_slider("head", 0, start.n_heads - 1, start.head, name="head")
        self.show_numbers = toggle("show numbers", False, name="show-numbers")
        self.visible = {
            name: toggle(name, True, name=f"show-{name.replace(' ', '-').replace('+', 'and')}")
            for name in PANELS
        }
        self.mask.observe(self._mask_kind_changed, names="value")

        diverging = {"colormap": DIVERGING_CMAP, "symmetric": True, "panel_size": 200}
        weights = {"vmin": 0.0, "vmax": 1.0, "panel_size": WEIGHTS_PANEL}
        self.panels = {
            "q": _panel("q", "Q (head)", **diverging),
            "k": _panel("k", "K (head)", **diverging),
            "raw_scores": _panel("raw-scores", "raw scores q·kᵀ", **diverging),
            "scores": _panel("scores", "scaled + masked scores", **diverging),
            "weights": _panel("weights", "weights = softmax(scores)", **weights),
            "output": _panel("output", "output = weights · V (heads merged)", **diverging),
            "per_head": _panel("per-head", "weights of every head", vmin=0.0, vmax=1.0),
        }
        for name in ("scores", "weights", "per_head"):
            self.panels[name].on_click(self._cell_clicked)
        self.readout = widgets.HTML()
        self.readout.add_class(css("readout"))
        self._groups = {
            "Q and K": widgets.HBox([self.panels["q"], self.panels["k"]]),
            "raw scores": self.panels["raw_scores"],
            "scaled + masked": self.panels["scores"],
            "weights": self.panels["weights"],
            "output": self.panels["output"],
            "per head": self.panels["per_head"],
        }
        # the weights beside the controls, the readout after them; the other stages below
        row = widgets.Layout(display="flex", flex_flow="row wrap", align_items="flex-start")
        others = [group for name, group in self._groups.items() if name != "weights"]
        grid = widgets.Box(others, layout=row)
        panel_row = widgets.HBox(
            [widgets.Label("panels:"), *self.visible.values()],
            layout=widgets.Layout(flex_flow="row wrap", width="260px"),
        )
        for box in self.visible.values():
            box.layout.width = "auto"
        controls = [
            self.seq_len, self.d_k, self.n_heads, self.cross, self.key_len, self.mask,
            self.pad_len, self.scaled, self.temperature, self.seed, self.query_row, self.head,
            self.show_numbers, panel_row,
        ]  # fmt: skip
        header = widgets.HTML(
            "<b>Attention explorer</b>: softmax(q·kᵀ × scale, masked) · v for random tokens. "
            "Click a cell of the scores or weights to block or unblock that pair."
        )
        super().__init__(
            controls=controls,
            principal=self._groups["weights"],
            beside=[self.readout],
            body=[grid],
            name="attention-explorer",
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
        clamp_slider(self.n_heads, max_heads(self.d_k.value))
        tk = self.key_len.value if self.cross.value else self.seq_len.value
        clamp_slider(self.query_row, self.seq_len.value - 1)
        clamp_slider(self.head, self.n_heads.value - 1)
        if self.mask.value == "padding":
            clamp_slider(self.pad_len, tk)
        elif self.pad_len.value > tk:  # hidden: its range follows when it is shown
            self.pad_len.value = tk
        self.key_len.layout.display = None if self.cross.value else "none"
        self.pad_len.layout.display = None if self.mask.value == "padding" else "none"
        for name, group in self._groups.items():
            group.layout.display = None if self.visible[name].value else "none"
        if self.mask.value == "custom":
            self._custom = _resized(self._custom, self.seq_len.value, tk)

    def _read_params(self) -> AttentionParams:
        custom = self.mask.value == "custom"
        return AttentionParams(
            seq_len=self.seq_len.value,
            d_k=self.d_k.value,
            n_heads=self.n_heads.value,
            mask=self.mask.value,
            pad_len=self.pad_len.value,
            custom_mask=mask_to_tuple(self._custom) if custom else None,
            scaled=self.scaled.value,
            temperature=float(self.temperature.value),
            seed=self.seed.value,
            query_row=self.query_row.value,
            head=self.head.value,
            cross=self.cross.value,
            key_len=self.key_len.value,
        )

    def _compute(self, params: AttentionParams) -> AttentionExploration:
        return explore_attention(params)

    # Drawing ----------------------------------------------------------------------------------
    def _draw(self, r: AttentionExploration) -> None:
        p = r.params
        h = p.head
        numbers = self.show_numbers.value
        blocked = ~r.mask  # (Tq, Tk) True = masked
        shown = {name for name, box in self.visible.items() if box.value}
        qt, kt = list(r.query_tokens), list(r.key_tokens)
        common = {"show_numbers": numbers}
        if "Q and K" in shown:
            self.panels["q"].set_data(
                r.q[h],
                row_labels=qt,
                title=f"Q, head {h}  (Tq, d_k) = {shape_str(r.q[h].shape)}",
                **common,
            )
            self.panels["k"].set_data(
                r.k[h],
                row_labels=kt,
                title=f"K, head {h}  (Tk, d_k) = {shape_str(r.k[h].shape)}",
                **common,
            )
        rows = {"row_labels": qt, "col_labels": kt, "highlight_row": p.query_row, **common}
        if "raw scores" in shown:
            self.panels["raw_scores"].set_data(
                r.raw_scores[h], title=f"raw scores q·kᵀ, head {h}", **rows
            )
        if "scaled + masked" in shown:
            self.panels["scores"].set_data(
                r.scores[h],
                blocked,
                r.fully_masked[h],
                title=f"scores × {r.scale:.3g}, masked, head {h}",
                **rows,
            )
        if "weights" in shown:
            self.panels["weights"].set_data(
                r.weights[h], blocked, r.fully_masked[h], title=f"weights, head {h}", **rows
            )
        if "output" in shown:
            tq, m = r.output.shape  # (Tq, M)
            self.panels["output"].set_data(
                r.output,
                row_labels=qt,
                title=f"output (Tq, d_model) = {shape_str(r.output.shape)}",
                cell_size=output_cell_size(tq, len(kt), m),
                **common,
            )
        if "per head" in shown:
            first, last = head_window(p.head, p.n_heads)
            heads = "" if last - first == p.n_heads else f" {first}-{last - 1} of {p.n_heads}"
            self.panels["per_head"].set_data(
                r.weights[first:last],
                blocked,
                r.fully_masked[first:last],
                title=f"weights of every head{heads}",
                panel_titles=[f"head {i}" for i in range(first, last)],
                row_labels=qt,
                col_labels=kt,
                highlight_row=p.query_row,
                panel_size=max(60, 480 // min(p.n_heads, 4)),
                show_numbers=numbers,
            )
        self.readout.value = _readout(r)

    def _views(self) -> dict[str, Heatmap]:
        shown = {name for name, box in self.visible.items() if box.value}
        owners = {
            "q": "Q and K",
            "k": "Q and K",
            "raw_scores": "raw scores",
            "scores": "scaled + masked",
            "weights": "weights",
            "output": "output",
            "per_head": "per head",
        }
        return {name: hm for name, hm in self.panels.items() if owners[name] in shown}


MAX_SMALL_MULTIPLES = 16


def max_heads(d_k: int) -> int:
    """The most heads of width d_k the explorer offers: H * d_k <= MAX_WIDTH."""
    return MAX_WIDTH // d_k


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
