"""MaskFunctionExplorer: type a mask or score function in FlexAttention's style, see what it does.

    from widgets.explorers.mask_function import MaskFunctionExplorer
    MaskFunctionExplorer(preset="document")            # or source="def mask(b, h, q_idx, ...)"
    explorer.result.mask, explorer.result.mask_match   # the dense mask, what it equals
    explorer.result.function.fn                        # give it to flex_attention

The learner's text is checked against a whitelist and run by
attention.explore.mask_function (never executed as written: see that module on safety) on a
T x T grid. The principal panel is the softmax weights of fixed random scores through it; beside
it the mask (or, for a score function, the bias it adds); under them which of the course's masks
or score functions it equals, or the first cell where it differs from the nearest.

When it runs: when the text area loses focus (continuous_update off) or on Run (or a preset,
the T, head and seed sliders). Not at each key press: almost every text on the way to a
function is not one yet (a syntax error at each letter would flash red), and in the classroom
every key press would be a round trip to the teacher's kernel.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

from attention.explore.mask_function import (
    MASK_FUNCTION_MAX_T,
    N_HEADS,
    PRESETS,
    MaskFunctionExploration,
    MaskFunctionParams,
)
from attention.positional import alibi_slopes

from ..views import Heatmap
from ..views.style import DIVERGING_CMAP, css
from ..views.text import translate_html
from .base import Explorer
from .controls import area, menu, slider

CUSTOM = "custom (edited)"
# monospace code, a little larger in presenter mode; an error wraps inside the column
_STYLE = (
    "<style>.ac-code textarea{font-family:var(--jp-code-font-family,monospace);"
    "font-size:11px;line-height:1.35;white-space:pre;}"
    ".ac-mask-function-explorer .ac-error .widget-html-content{line-height:1.35}"
    ".ac-presenter .ac-code{width:480px !important}.ac-presenter .ac-code textarea"
    "{font-size:15px}</style>"
)
STALE = "<i>The panels show the last function that ran (the message above says why).</i><br>"


class MaskFunctionExplorer(Explorer):
    """Edit a mask_mod or score_mod; the mask, the weights and what it equals follow.

    Args:
        preset: one of PRESETS (causal, sliding window, prefix-LM, document, dilated, chunked,
            ALiBi and softcap as score functions).
        source: the function's text instead of a preset.
        **settings: seq_len (T, 2..32), head (h, 0..7: which slope[h] ALiBi reads), seed (of
            the random scores).

    `result` is the MaskFunctionExploration of attention.explore.explore_mask_function.
    """

    CONTROLS = (
        area(  # its text is the params' source (_derived_params)
            "code",
            rows=7,
            width="340px",
            placeholder="def mask(b, h, q_idx, kv_idx):\n    return q_idx >= kv_idx",
            param=False,
        ),  # runs when the area loses focus, or on Run
        menu("preset", [*PRESETS, CUSTOM], param=False),
        slider("seq_len", 2, MASK_FUNCTION_MAX_T, label="T"),
        slider("head", 0, N_HEADS - 1, label="head h"),
        slider("seed", 0, 99, label="scores' seed"),
    )

    def __init__(self, preset: str = "causal", *, source: str | None = None, **settings: Any):
        if source is not None:
            preset = CUSTOM
        elif preset not in PRESETS:
            raise ValueError(f"preset: expected one of {tuple(PRESETS)}, got {preset!r}")
        text = source if source is not None else PRESETS[preset]
        start = MaskFunctionParams(source=text, **settings)  # validates the settings
        controls = self.declare(start, code=text, preset=preset)
        self.run_button = widgets.Button(
            description="Run", icon="play", tooltip="evaluate the function (or click outside)"
        )
        self.run_button.add_class(css("run"))
        self.run_button.on_click(lambda _b: self.refresh())
        self.preset.observe(self._preset_chosen, names="value")  # before the base's observer
        self.code.observe(self._code_edited, names="value")
        controls.insert(1, self.run_button)  # under the code
        self.weights_view = self.panel(
            "weights",
            Heatmap(title="weights", vmin=0.0, vmax=1.0, show_numbers=True, panel_size=280),
        )
        self.weights_view.add_class(css("panel-weights"))
        self.mask_view = self.panel(
            "mask",
            Heatmap(
                title="mask", vmin=0.0, vmax=1.0, show_colorbar=False, panel_size=220, digits=0
            ),
        )
        self.mask_view.add_class(css("panel-mask"))
        self.bias_view = self.panel(  # shown when the function returns a bias
            "bias", Heatmap(title="bias", colormap=DIVERGING_CMAP, symmetric=True, panel_size=220)
        )
        self.bias_view.add_class(css("panel-bias"))
        self.readout = widgets.HTML()
        self.readout.add_class(css("readout"))
        header = widgets.HTML(
            _STYLE + "<div style='line-height:1.4;margin-bottom:4px'><b>Mask functions</b>: "
            "edit the function, then click outside it or press Run. <code>doc[i]</code> is "
            "position i's document, <code>slope[h]</code> head h's ALiBi slope; calls: abs, "
            "min, max, torch.where, torch.tanh.</div>"
        )
        super().__init__(
            controls=controls,
            header=header,
            principal=self.weights_view,
            beside=[widgets.VBox([self.mask_view, self.bias_view])],
            body=[self.readout],
        )
        # a long message wraps inside the controls' column instead of widening it past the panels
        self.error.layout.max_width = "340px"
        self.refresh()

    def refresh(self) -> None:
        """Recompute and redraw; while the text fails, say the panels show the last good run."""
        with self._batch.collect():  # nested: one message for the panels and the readout
            super().refresh()
            if hasattr(self, "_readout_html"):
                stale = STALE if self.error.message else ""
                self.readout.value = translate_html(stale + self._readout_html)

    def _preset_chosen(self, change: dict) -> None:
        if change["new"] != CUSTOM and self.code.value != PRESETS[change["new"]]:
            with self.hold_refresh():  # the base's observer of the menu refreshes after
                self.code.value = PRESETS[change["new"]]

    def _code_edited(self, change: dict) -> None:
        if self.preset.value != CUSTOM and change["new"] != PRESETS[self.preset.value]:
            with self.hold_refresh():
                self.preset.value = CUSTOM

    def _derived_params(self) -> dict[str, Any]:
        return {"source": self.code.value}

    def _draw(self, r: MaskFunctionExploration) -> None:
        t = r.params.seq_len
        labels = {
            "row_labels": [f"q{i}" for i in range(t)],
            "col_labels": [f"k{j}" for j in range(t)],
        }
        blocked = ~r.mask
        name = r.function.name
        self.weights_view.set_data(
            r.weights,
            blocked,
            r.fully_masked,
            title=f"weights: softmax of random scores through {name}",
            **labels,
        )
        self.mask_view.set_data(r.mask.float(), title=f"mask (1 = may attend), T = {t}", **labels)
        if r.bias is None:
            self.bias_view.layout.display = "none"
        else:
            self.bias_view.layout.display = None
            self.bias_view.set_data(
                r.bias, blocked, r.fully_masked, title=f"bias: {name}(score) − score", **labels
            )
        self._readout_html = _summary_html(r)


def _summary_html(r: MaskFunctionExploration) -> str:
    """What the function does, the documents and the slope it read."""
    doc = ", ".join(str(int(x)) for x in r.doc)
    slope = float(alibi_slopes(N_HEADS)[r.params.head])
    lines = [html.escape(line) for line in r.summary]
    lines.append(
        f"<code>doc = [{html.escape(doc)}]</code> · <code>slope[{r.params.head}] = {slope:g}</code>"
    )
    style = "font-size:13px;line-height:1.45"
    return f"<div style='{style}'>" + "<br>".join(lines) + "</div>"
