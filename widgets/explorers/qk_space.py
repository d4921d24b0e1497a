"""The query-key space of one head of a real model: queries and keys as points of one plane.

    from widgets.explorers.qk_space import QueryKeyExplorer
    QueryKeyExplorer("minilm", layer=2, head=5)
    QueryKeyExplorer("smollm2", layer=4, head=1, before_rope=True)

Each token gives a query point (circle) and a key point (square) of the chosen head, normalised
as AttentionViz does and projected together by PCA (attention.explore.qk_space says what the
normalisation keeps). Hover a point to read its token; click a query (or focus the picture and
use the arrow keys) to draw lines to the keys by the model's attention weights, and list its
strongest keys beside. The model runs once per text (on Enter in the text box); the layer, head
and RoPE controls only re-project the head's points, and the lines are drawn in the browser.
`explorer.result` is the QKSpaceExploration.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import torch

from attention.explore import (
    QK_MAX_TOKENS,
    QKSpaceExploration,
    QKSpaceParams,
    encode_text,
    model_shape,
)
from attention.models.cache import pretrained_model

from ..views import PALETTE, Scatter
from ..views.style import css
from .controls import check, table_html
from .model_view import _PretrainedExplorer, model_controls, model_params

SCATTER_W, SCATTER_H = 470, 430  # px: beside the controls, inside a 1280 x 720 window


def point_label(i: int, token: str) -> str:
    """'3:truth' for token 3 ' truth' (a token of spaces only keeps its quotes)."""
    return f"{i}:{token.strip() or repr(token)}"


def _rotary(model: str) -> bool:
    return pretrained_model(model)[0].rotary


class QueryKeyExplorer(_PretrainedExplorer):
    """Queries and keys of one head in one plane; click a query to see where it looks.

    Args:
        model: "minilm" or "smollm2".
        text: the text to read (at most QK_MAX_TOKENS tokens); None = the model's default.
        **settings: initial values of any other QKSpaceParams field: layer, head (the head
            shown), before_rope (SmolLM2 only: q and k before RoPE rotates them; the scores use
            after), query (the query picked first; -1 = none).
    """

    CONTROLS = (*model_controls("270px"), check("before_rope", label="q and k before RoPE"))

    def __init__(self, model: str = "minilm", text: str | None = None, **settings: Any) -> None:
        start = model_params(QKSpaceParams, model, text, **settings)  # checks the model
        if start.before_rope and not _rotary(model):
            raise ValueError(
                f"before_rope: expected False for {model!r}, which has no RoPE, got True"
            )
        self.space = self.panel("space", Scatter(
            group_names=["query", "key"],
            group_colors=[PALETTE[0], PALETTE[1]],
            group_shapes=["circle", "square"],
            width=SCATTER_W,
            height=SCATTER_H,
            selected=start.query,
        ))  # fmt: skip
        self.space.add_class(css("panel-space"))
        self.space.observe(lambda _change: self.refresh(), names="selected")
        self.readout = widgets.HTML()
        self.readout.add_class(css("readout"))
        self.readout.layout.max_width = "420px"
        self._last_model = model
        super().__init__(
            controls=self.declare(start), principal=self.space, beside=[self.readout], body=[]
        )
        self._show_rope_control()
        self.refresh()

    # Controls ---------------------------------------------------------------------------------
    def _show_rope_control(self) -> None:
        rotary = _rotary(self.model.value)
        self.before_rope.layout.display = None if rotary else "none"
        if not rotary and self.before_rope.value:
            self.before_rope.value = False  # MiniLM has no RoPE: the check is hidden and off

    def _sync_controls(self) -> None:
        self._show_rope_control()
        super()._sync_controls()

    def _derived_params(self) -> dict[str, Any]:
        # the query is the one picked on the picture, while the text still has it
        v = self._control_values()
        picked, t = self.space.selected, len(encode_text(v.model, v.text, QK_MAX_TOKENS))
        return {"query": picked if 0 <= picked < t else -1}

    # The loop ---------------------------------------------------------------------------------
    def _draw(self, r: QKSpaceExploration) -> None:
        p, t = r.params, len(r.tokens)
        labels = [point_label(i, tok) for i, tok in enumerate(r.tokens)]
        links = torch.zeros(t, 2 * t)
        links[:, t:] = r.weights  # query i's weight on key j sits at point T + j
        where = f"layer {p.layer}, head {p.head}"
        if r.rotary:
            where += ", before RoPE" if p.before_rope else ", after RoPE"
        self.space.set_data(
            r.points,
            labels + labels,
            [0] * t + [1] * t,
            links=links,
            sources=list(range(t)),
            title=f"queries and keys, {where}",
            x_label=f"PC 1 ({r.explained[0]:.0%} of the spread)",
            y_label=f"PC 2 ({r.explained[1]:.0%})",
        )
        self.readout.value = self._readout(r, where)

    def _readout(self, r: QKSpaceExploration, where: str) -> str:
        p, t = r.params, len(r.tokens)
        plane, full = (round(a * t) for a in r.nearest_agrees)
        shared = r.n_kv_heads < model_shape(p.model)[1]  # heads share key heads (GQA)
        head = where + (f" (reads key head {r.kv_head} of {r.n_kv_heads})" if shared else "")
        rows = [
            ("model", f"{p.model}, {t} tokens"),
            ("head", head),
            ("the plane holds", f"{sum(r.explained):.0%} of the points' spread"),
            ("queries x c, keys / c", f"c = {r.normalised.scale:.3f}, then keys shifted"),
            ("nearest key = top key", f"{plane}/{t} queries in the plane, {full}/{t} in all "
                                      f"{r.q.shape[-1]} dimensions (a random key: "
                                      f"{r.nearest_by_chance * t:.1f}/{t})"),
        ]  # fmt: skip
        if p.before_rope:
            rows.append(("note", "before RoPE: the weights are still the model's (after RoPE)"))
        if p.query >= 0:
            rows.append((f"query {point_label(p.query, r.tokens[p.query])} reads", ""))
            rows += [(f"  key {point_label(j, tok)}", f"{w:.3f}") for j, tok, w in r.top_keys]
        else:
            rows.append(("click a query (circle)", "or focus the picture and press →"))
        return table_html(rows) + (
            f'<div style="font-size:11px;color:#555">texts up to {QK_MAX_TOKENS} tokens; '
            "the text box reads on Enter</div>"
        )
