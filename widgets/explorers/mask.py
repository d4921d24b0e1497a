"""MaskExplorer: click cells to block query-key pairs; see the mask in every convention.

    from widgets.explorers.mask import MaskExplorer
    MaskExplorer(n_queries=5, n_keys=6, preset="causal")   # then click cells
    explorer.result.valid_lens                              # None when rows are not prefixes

Conventions shown side by side (all converted by the core's functions):
ours and torch SDPA's bool mask (True = may attend), nn.MultiheadAttention's key_padding_mask
(True = ignore; exists only when every query hides the same keys), an additive float mask
(0 / -inf) and d2l's valid_lens (exists only when each row is a prefix). Below them, the
weights that random queries and keys get through the mask, including rows that may attend to
nothing (grey: weights 0 and output 0, not NaN).
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import torch

from attention.explore import (
    MaskExploration,
    MaskParams,
    mask_to_tuple,
    preset_mask,
)
from attention.masks import as_bool_mask

from ..views import Heatmap
from ..views.style import css
from .base import Explorer
from .controls import menu, slider

PRESETS = ("none", "causal", "padding", "left pad + causal", "custom")
MAX_SIDE = 16  # clicking cells is only practical on small grids


def _tensor_text(name: str, x: torch.Tensor | None, note: str) -> str:
    if x is None:
        return f"{name} = None   # {note}"
    body = repr(x).replace("\n", "\n" + " " * (len(name) + 3))
    return f"{name} = {body}   # {note}"


class MaskExplorer(Explorer):
    """Edit a (Tq, Tk) mask by clicking; every convention and the weights follow.

    Args:
        n_queries, n_keys: grid size, 1..16.
        preset: "none", "causal", "padding" or "custom" (start from all True).
        pad_len: padded keys at the end, for the "padding" preset (None: 2, or n_keys if less).
        mask: an initial (Tq, Tk) bool tensor (True = may attend); implies preset "custom".
        seed: seed of the random q, k, v.

    `params` is a MaskParams: the mask (the one params field no control holds: the grid size,
    the preset, the pad length and the clicks make it) and the seed.
    """

    CONTROLS = (  # the grid, the preset and the pad length make the mask (_sync_controls)
        menu("preset", PRESETS, param=False),
        slider("n_queries", 1, MAX_SIDE, label="queries (Tq)", param=False),
        slider("n_keys", 1, MAX_SIDE, label="keys (Tk)", param=False),
        slider("pad_len", 0, lambda v: v.n_keys, label="pad length", param=False),
        slider("seed", 0, 99),
    )

    def __init__(
        self,
        n_queries: int = 5,
        n_keys: int = 6,
        preset: str = "causal",
        *,
        pad_len: int | None = None,
        mask: Any = None,
        seed: int = 0,
    ) -> None:
        if mask is not None:
            self._mask = as_bool_mask(mask)  # 2 or NaN is refused, not read as True
            if self._mask.dim() != 2:
                raise ValueError(f"mask: expected (Tq, Tk), got shape {tuple(self._mask.shape)}")
            n_queries, n_keys = self._mask.shape
            preset = "custom"
        else:
            self._mask = torch.ones(n_queries, n_keys, dtype=torch.bool)
        if preset not in PRESETS:
            raise ValueError(f"preset: expected one of {PRESETS}, got {preset!r}")
        for name, n in (("n_queries", n_queries), ("n_keys", n_keys)):
            if not 1 <= n <= MAX_SIDE:
                raise ValueError(f"{name}: expected 1 to {MAX_SIDE}, got {n}")
        pad_len = min(2, n_keys) if pad_len is None else pad_len
        if type(pad_len) is not int or not 0 <= pad_len <= n_keys:
            raise ValueError(f"pad_len: expected 0 to n_keys = {n_keys}, got {pad_len!r}")
        # validates the seed; the mask follows the preset at the first refresh (_sync_controls)
        start = MaskParams(mask_to_tuple(self._mask), seed)
        controls = self.declare(
            start, preset=preset, n_queries=n_queries, n_keys=n_keys, pad_len=pad_len
        )

        cell = {"cell_size": 30, "show_numbers": True, "digits": 0, "show_colorbar": False}
        self.mask_view = self.panel(
            "mask", Heatmap(title="ours / SDPA: True (1) = may attend", vmin=0, vmax=1, **cell)
        )
        self.mask_view.add_class(css("panel-mask"))
        self.additive_view = self.panel(
            "additive",
            Heatmap(title="additive: 0 or −∞", colormap="gray_r", vmin=0, vmax=1, **cell),
        )
        self.additive_view.add_class(css("panel-additive"))
        self.key_padding_view = self.panel(  # shown when every query hides the same keys
            "key_padding_mask",
            Heatmap(title="key_padding_mask: True (1) = ignore", vmin=0, vmax=1, **cell),
        )
        self.key_padding_view.add_class(css("panel-key-padding"))
        self.valid_lens_view = self.panel(  # shown when each row is a prefix
            "valid_lens", Heatmap(title="valid_lens", colormap="gray_r", vmin=0, **cell)
        )
        self.valid_lens_view.add_class(css("panel-valid-lens"))
        self.weights_view = self.panel(
            "weights", Heatmap(title="weights", vmin=0.0, vmax=1.0, cell_size=36, show_numbers=True)
        )
        self.weights_view.add_class(css("panel-weights"))
        for view in (self.mask_view, self.additive_view, self.weights_view):
            view.on_click(self._cell_clicked)
        self.code = widgets.HTML()
        self.code.add_class(css("conventions"))

        wrap = widgets.Layout(display="flex", flex_flow="row wrap", align_items="flex-start")
        body = [
            widgets.Box(
                [self.additive_view, self.key_padding_view, self.valid_lens_view], layout=wrap
            ),
            self.code,
        ]
        header = widgets.HTML(
            "<b>Mask explorer</b>: click a cell (or Tab to a grid, arrows, Enter) to block or "
            "unblock that query-key pair. Block a whole row to see a query with nothing to "
            "attend to."
        )
        # the weights beside the controls, the editable mask beside them; conventions below
        super().__init__(
            controls=controls,
            principal=self.weights_view,
            beside=[self.mask_view],
            body=body,
            header=header,
        )
        self.refresh()

    def _cell_clicked(self, row: int, col: int, _panel: int) -> None:
        self._mask[row, col] = ~self._mask[row, col]
        if self.preset.value != "custom":
            with self.hold_refresh():
                self.preset.value = "custom"
        self.refresh()

    def _sync_controls(self) -> None:
        super()._sync_controls()
        tq, tk = self.n_queries.value, self.n_keys.value
        padded = self.preset.value in ("padding", "left pad + causal")
        self.pad_len.layout.display = None if padded else "none"
        if self.preset.value == "custom":
            old = self._mask
            self._mask = torch.ones(tq, tk, dtype=torch.bool)
            a, b = min(tq, old.shape[0]), min(tk, old.shape[1])
            self._mask[:a, :b] = old[:a, :b]
        else:
            self._mask = preset_mask(self.preset.value, tq, tk, self.pad_len.value).clone()

    def _derived_params(self) -> dict[str, Any]:
        return {"mask": mask_to_tuple(self._mask)}  # kept in step with the controls above

    def _draw(self, r: MaskExploration) -> None:
        tq, tk = r.mask.shape
        qt = [f"q{i}" for i in range(tq)]
        kt = [f"k{j}" for j in range(tk)]
        blocked = ~r.mask
        labels = {"row_labels": qt, "col_labels": kt}
        # The bool mask as 1/0 numbers; not marked "masked" so it reads as data, not hatching.
        self.mask_view.set_data(r.mask.float(), **labels)
        self.additive_view.set_data(r.additive, blocked, fully_masked=torch.zeros(tq), **labels)
        self.weights_view.set_data(r.weights, blocked, r.fully_masked, **labels)
        if r.key_padding_mask is None:
            self.key_padding_view.layout.display = "none"
        else:
            self.key_padding_view.layout.display = None
            self.key_padding_view.set_data(
                r.key_padding_mask.float(), row_labels=["batch 0"], col_labels=kt
            )
        if r.valid_lens is None:
            self.valid_lens_view.layout.display = "none"
        else:
            self.valid_lens_view.layout.display = None
            self.valid_lens_view.set_data(
                r.valid_lens.T.float(), row_labels=qt, col_labels=["keys"], vmax=float(tk)
            )
        self.code.value = _conventions_html(r)


def _conventions_html(r: MaskExploration) -> str:
    """The mask in every convention, as the code that prints it."""
    full = int(r.fully_masked.sum())
    lines = [
        _tensor_text("mask", r.mask, "ours and SDPA's: True = may attend"),
        _tensor_text("key_padding_mask", r.key_padding_mask, r.key_padding_note),
        _tensor_text("additive", r.additive, "added to the scores before softmax"),
        _tensor_text("valid_lens", r.valid_lens, r.valid_lens_note),
    ]
    if full:
        lines.append(f"# {full} row(s) may attend to nothing: weights 0 and output 0, not NaN")
    text = html.escape("\n".join(lines))
    style = "font:12px/1.35 monospace;white-space:pre-wrap;margin:4px 0"
    return f"<pre style='{style}'>{text}</pre>"
