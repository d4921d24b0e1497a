"""HeadsExplorer: multi-head attention step by step, and what a forgotten transpose does.

The big projection q = x W_q (B, T, M) is cut into heads with .view(B, T, H, D).transpose(1, 2)
-> (B, H, T, D): head h sees columns h*D .. h*D + D - 1 of every token. Forgetting the
transpose, .view(B, H, T, D), gives the same shapes (so nothing raises) but each "head" now
holds consecutive D-chunks of the flat buffer: whole rows of one token, several tokens per head.
The toggle shows the wrong path beside the right one, with the rows labelled by where their
numbers really came from.

    from widgets.explorers.heads import HeadsExplorer
    HeadsExplorer(d_model=16, n_heads=4, forget_transpose=True)
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import torch

from attention.explore import (
    HEADS_BATCH_MAX,
    HEADS_D_MODELS,
    HEADS_SEQ_MAX,
    HeadsExploration,
    HeadsParams,
    HeadsPath,
    head_choices,
)

from ..views import Heatmap
from ..views.style import DIVERGING_CMAP, css
from .base import Explorer
from .controls import check, menu, panel_row, slider, table_html

SMALL = 150  # px per small-multiple panel


def _html(name: str) -> widgets.HTML:
    w = widgets.HTML("")
    w.add_class(css(name))
    return w


class HeadsExplorer(Explorer):
    """Follow x (B, T, M) through the split into heads, attention per head, concat and W_o.

    Args:
        forget_transpose: show the wrong path (.view(B, H, T, D)) beside the right one.
        **settings: initial values of any HeadsParams field: d_model, n_heads (only divisors
            of d_model, at most 16), seq_len, batch, seed.

    Panels show batch item 0. `result` is the HeadsExploration of
    `attention.explore.explore_heads`, holding both the right and the wrong path.
    """

    CONTROLS = (
        menu("d_model", HEADS_D_MODELS),
        menu("n_heads", lambda v: head_choices(v.d_model)),
        slider("seq_len", 1, HEADS_SEQ_MAX),
        slider("batch", 1, HEADS_BATCH_MAX),
        slider("seed", 0, 99),
        check("forget_transpose", label="forget the transpose", param=False),
    )

    def __init__(self, *, forget_transpose: bool = False, **settings: Any) -> None:
        start = HeadsParams(**settings)  # validates the settings
        controls = self.declare(start, forget_transpose=forget_transpose)
        self.shapes = _html("shapes")
        self.readout = _html("readout")
        self.projection = self._heatmap(
            "projection", "q = x W_q (one matmul for all heads)", colormap=DIVERGING_CMAP,
            symmetric=True, panel_size=300,
        )  # fmt: skip
        self.q_heads = self._heatmap(
            "q_heads", "q per head: .view(B, T, H, D).transpose(1, 2)",
            colormap=DIVERGING_CMAP, symmetric=True, panel_size=SMALL, columns=2,
        )  # fmt: skip
        self.weights = self._heatmap("weights", "weights per head", vmin=0.0, panel_size=SMALL)
        self.concat = self._heatmap(
            "concat", "concat: heads side by side (B, T, M)", colormap=DIVERGING_CMAP,
            symmetric=True, panel_size=300,
        )  # fmt: skip
        self.output = self._heatmap(
            "output", "output = concat W_o", colormap=DIVERGING_CMAP, symmetric=True,
            panel_size=300,
        )  # fmt: skip
        # the wrong path, shown with "forget the transpose"
        self.wrong_q_heads = self._heatmap(
            "wrong_q_heads", "q per 'head' with .view(B, H, T, D): rows from other tokens",
            colormap=DIVERGING_CMAP, symmetric=True, panel_size=SMALL, columns=2,
        )  # fmt: skip
        self.wrong_weights = self._heatmap(
            "wrong_weights", "weights per 'head', transpose forgotten", vmin=0.0, panel_size=SMALL
        )
        self.wrong_concat = self._heatmap(
            "wrong_concat", "concat, transpose forgotten", colormap=DIVERGING_CMAP,
            symmetric=True, panel_size=300,
        )  # fmt: skip
        self.wrong_output = self._heatmap(
            "wrong_output", "output, transpose forgotten", colormap=DIVERGING_CMAP,
            symmetric=True, panel_size=300,
        )  # fmt: skip
        self._wrong_views = [
            self.wrong_q_heads, self.wrong_weights, self.wrong_concat, self.wrong_output
        ]  # fmt: skip
        # the split into heads beside the controls (its wrong twin after it when shown); the
        # steps before and after it below, in order
        body = [
            panel_row([self.shapes, self.readout]),
            self.projection,
            panel_row([self.weights, self.wrong_weights]),
            panel_row([self.concat, self.wrong_concat]),
            panel_row([self.output, self.wrong_output]),
        ]
        super().__init__(
            controls=controls,
            principal=self.q_heads,
            beside=[self.wrong_q_heads],
            body=body,
        )
        self.refresh()

    def _heatmap(self, name: str, title: str, **traits: Any) -> Heatmap:
        """A panel with class ac-<name with dashes>."""
        hm = self.panel(name, Heatmap(title=title, **traits))
        hm.add_class(css(name.replace("_", "-")))
        return hm

    def _draw(self, r: HeadsExploration) -> None:
        self._draw_projection(r)
        self._draw_q_heads(r)
        self._draw_weights(r)
        self._draw_concat_and_output(r)
        shown = None if self.forget_transpose.value else "none"
        for view in self._wrong_views:
            view.layout.display = shown
        self.shapes.value = _shapes_html(r, self.forget_transpose.value)
        self.readout.value = _readout_html(r, self.forget_transpose.value)

    def _draw_projection(self, r: HeadsExploration) -> None:
        self.projection.set_data(r.q_proj[0], row_labels=_tokens(r), col_labels=_head_cols(r))

    def _draw_q_heads(self, r: HeadsExploration) -> None:
        dims = [str(j) for j in range(r.params.d_model // r.params.n_heads)]
        q_lim = float(torch.cat([r.right.q[0], r.wrong.q[0]]).abs().max())
        self.q_heads.set_data(
            r.right.q[0], panel_titles=_heads(r), row_labels=_tokens(r), col_labels=dims,
            vmin=-q_lim, vmax=q_lim,
        )  # fmt: skip
        self.wrong_q_heads.set_data(
            r.wrong.q[0], panel_titles=_wrong_titles(r), row_labels=_rows(r), col_labels=dims,
            vmin=-q_lim, vmax=q_lim,
        )  # fmt: skip

    def _draw_weights(self, r: HeadsExploration) -> None:
        w_max = max(float(torch.cat([r.right.weights[0], r.wrong.weights[0]]).max()), 1e-6)
        tokens, rows = _tokens(r), _rows(r)
        self.weights.set_data(
            r.right.weights[0], panel_titles=_heads(r), row_labels=tokens, col_labels=tokens,
            vmax=w_max,
        )  # fmt: skip
        self.wrong_weights.set_data(
            r.wrong.weights[0], panel_titles=_wrong_titles(r), row_labels=rows, col_labels=rows,
            vmax=w_max,
        )  # fmt: skip

    def _draw_concat_and_output(self, r: HeadsExploration) -> None:
        lim = float(torch.cat([r.right.output[0], r.wrong.output[0]]).abs().max())
        c_lim = float(torch.cat([r.right.concat[0], r.wrong.concat[0]]).abs().max())
        head_cols, model_cols = _head_cols(r), [str(c) for c in range(r.params.d_model)]
        # after W_o the columns are model dimensions again, no longer heads' slices
        for view, x, vmax, cols in (
            (self.concat, r.right.concat, c_lim, head_cols),
            (self.wrong_concat, r.wrong.concat, c_lim, head_cols),
            (self.output, r.right.output, lim, model_cols),
            (self.wrong_output, r.wrong.output, lim, model_cols),
        ):
            view.set_data(x[0], row_labels=_tokens(r), col_labels=cols, vmin=-vmax, vmax=vmax)


def _tokens(r: HeadsExploration) -> list[str]:
    return [f"t{i}" for i in range(r.params.seq_len)]


def _rows(r: HeadsExploration) -> list[str]:
    return [f"r{i}" for i in range(r.params.seq_len)]  # a wrong head's rows are not positions


def _heads(r: HeadsExploration) -> list[str]:
    return [f"head {i}" for i in range(r.params.n_heads)]


def _wrong_titles(r: HeadsExploration) -> list[str]:
    return [f"head {i}: {s}" for i, s in enumerate(_source_titles(r.wrong))]


def _head_cols(r: HeadsExploration) -> list[str]:
    """The columns of q and concat: "h0" where each head's slice starts."""
    m, d = r.params.d_model, r.params.d_model // r.params.n_heads
    return [f"h{c // d}" if c % d == 0 else "" for c in range(m)]


def _source_table(path: HeadsPath) -> str:
    """A table: row h, column t = where wrong head h's row t came from ("t3·h1")."""
    cells = [
        [f"head {h}"] + [f"t{int(tok)}·h{int(ch)}" for tok, ch in zip(toks, chunks, strict=True)]
        for h, (toks, chunks) in enumerate(zip(path.source_token, path.source_chunk, strict=True))
    ]
    header = [""] + [f"r{i}" for i in range(path.source_token.shape[1])]
    return table_html(cells, header=header)


def _source_titles(path: HeadsPath) -> list[str]:
    """Per head, the tokens its rows were cut from, e.g. "t0 t1"."""
    return [" ".join(f"t{int(i)}" for i in torch.unique(toks)) for toks in path.source_token]


def _shapes_html(r: HeadsExploration, show_wrong: bool) -> str:
    def table(shapes) -> str:
        return table_html([(step, str(shape)) for step, shape in shapes], header=["step", "shape"])

    p = r.params
    legend = (
        f"B={p.batch}, T={p.seq_len}, M={p.d_model}, H={p.n_heads}, D=M/H={p.d_model // p.n_heads}"
    )
    right = f"<b>right</b> ({html.escape(legend)})" + table(r.right.shapes)
    if not show_wrong:
        return right
    wrong = "<b>transpose forgotten</b>: the same shapes, so nothing raises" + table(r.wrong.shapes)
    return (
        '<div style="display:flex; gap:16px; align-items:flex-start">'
        f"<div>{right}</div><div>{wrong}</div></div>"
    )


def _readout_html(r: HeadsExploration, show_wrong: bool) -> str:
    p = r.params
    d = p.d_model // p.n_heads
    lines = [
        f"Head h reads columns h·{d} .. h·{d}+{d - 1} of every token; "
        f"the {p.n_heads} heads run in parallel as one batched matmul.",
        f"Parameters: 4·M² + 4·M = {4 * p.d_model**2 + 4 * p.d_model} "
        "(W_q, W_k, W_v, W_o and biases), whatever H is.",
    ]
    if show_wrong:
        lines.append(
            f"max |Δ weights| = {r.weights_max_diff:.3g}, "
            f"max |Δ output| = {r.output_max_diff:.3g} (wrong minus right)."
        )
        if p.n_heads == 1 or p.seq_len == 1:
            lines.append("With one head or one token the transpose changes nothing: try more.")
        else:
            lines.append(
                "Where each wrong row came from (tN·hK = token N's slice meant for head K): "
                "one 'head' mixes tokens, and one token's slices crowd into one 'head'."
            )
    out = "<br>".join(html.escape(s) for s in lines)
    if show_wrong and p.n_heads * p.seq_len <= 96:
        out += _source_table(r.wrong)
    return out
