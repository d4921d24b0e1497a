"""Explorers of real trained models: the model view, the head view and the neuron view.

    from widgets.explorers.model_view import HeadView, ModelView, NeuronView
    ModelView("smollm2", text)               # every layer x head as a thumbnail; click one
    HeadView("minilm", layer=3, head=1)      # one head as lines; click a token: its top keys
    NeuronView("smollm2", query=5, key=4)    # q, k, q * k and its sum, before and after RoPE

All three run the model once per text (`attention.explore.model_maps` caches the maps), so
moving the layer, head, query or key sliders only picks numbers out of what was computed. The
text box updates on Enter (or leaving it): each new text is one forward pass, about a second
for 128 tokens of SmolLM2. `explorer.result` holds the numbers (ModelViewExploration,
HeadViewExploration, NeuronExploration of `attention.explore.model_view`).

The thumbnails of texts longer than 32 tokens are max-pooled (attention.explore.thumbnail_maps):
one number per block, so that 30 x 9 maps of 128 x 128 fit on a page and travel as 1 MB rather
than 18 MB; the head opened large shows the exact weights.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import torch

from attention.explore import (
    DEFAULT_TEXTS,
    MODEL_NAMES,
    HeadViewExploration,
    HeadViewParams,
    ModelMaps,
    ModelViewExploration,
    ModelViewParams,
    NeuronExploration,
    NeuronParams,
    encode_text,
    model_shape,
    thumbnail_maps,
)

from ..views import Heatmap, SeriesChart, TokenLines
from ..views.style import DIVERGING_CMAP, PALETTE, css
from .base import Explorer
from .controls import Control, menu, panel_row, slider, table_html, text

THUMB_PX = 48  # px, the side a thumbnail aims at (cells never go below 2 px)
SCROLL_PX = 560  # px, the tallest a grid of thumbnails or a column of tokens gets before scrolling
LARGE_PX = 360  # px, the side of the opened head's matrix


def _named(widget: widgets.Widget, *names: str) -> widgets.Widget:
    for name in names:
        widget.add_class(css(name))
    return widget


def _scroll(child: widgets.Widget, name: str) -> widgets.Box:
    """A box that scrolls when its child is taller than SCROLL_PX (128 tokens, 30 layers)."""
    box = widgets.Box([child], layout=widgets.Layout(max_height=f"{SCROLL_PX}px", overflow="auto"))
    return _named(box, name)


def _causal_masked(maps: ModelMaps) -> torch.Tensor | None:
    """(T, T) True right of the diagonal for a causal model (drawn hatched); else None."""
    if not maps.causal:
        return None
    return torch.ones(maps.seq_len, maps.seq_len, dtype=torch.bool).triu(1)


def _thumb_cell(rows: int) -> int:
    return max(2, THUMB_PX // max(rows, 1))


def _n_tokens(v: Any) -> int:
    """Tokens of the text shown (the query and key sliders' range)."""
    return len(encode_text(v.model, v.text))


def model_params(cls: type, model: str, text: str | None, **settings: Any) -> Any:
    """`cls(model, text, **settings)`, a params dataclass; text None is the model's default."""
    return cls(model, DEFAULT_TEXTS.get(model, "") if text is None else text, **settings)


def model_controls(text_width: str) -> tuple[Control, ...]:
    """The model, text, layer and head controls of an explorer of a pretrained model.

    The layer and head sliders stay within the chosen model's sizes.
    """
    return (
        menu("model", MODEL_NAMES),
        # one forward pass per text, not per key stroke
        text("text", width=text_width, live=False),
        slider("layer", 0, lambda v: model_shape(v.model)[0] - 1),
        slider("head", 0, lambda v: model_shape(v.model)[1] - 1),
    )


class _PretrainedExplorer(Explorer):
    """An explorer of a pretrained model that keeps its text box's default text in step.

    Switching the model swaps a default text for the other model's; a typed text stays.
    """

    _last_model: str  # the model whose default text the text box may still hold

    def _sync_controls(self) -> None:
        model = self.model.value
        if model != self._last_model:
            if self.text.value == DEFAULT_TEXTS[self._last_model]:
                self.text.value = DEFAULT_TEXTS[model]
            self._last_model = model
        super()._sync_controls()


class _ModelExplorer(_PretrainedExplorer):
    """Model, text, layer and head controls shared by the three views of a pretrained model."""

    CONTROLS = model_controls("480px")

    def _start(self, params: Any, body: list[widgets.Widget]) -> None:
        """Build the declared controls at `params` and the explorer around them and `body`."""
        n_layers, n_heads = model_shape(params.model)  # refuses an unknown model loudly
        if not (0 <= params.layer < n_layers and 0 <= params.head < n_heads):
            raise ValueError(
                f"layer, head: expected layer in [0, {n_layers}) and head in [0, {n_heads}) "
                f"for {params.model!r}, got ({params.layer}, {params.head})"
            )
        self._last_model = params.model
        super().__init__(controls=self.declare(params), body=body)

    def _pick(self, layer: int, head: int) -> None:
        """Open another head (a click on its thumbnail): both sliders, one refresh."""
        with self.hold_refresh():
            self.layer.value, self.head.value = layer, head
        self.refresh()


# --- the model view -----------------------------------------------------------------------------


class ModelView(_ModelExplorer):
    """Every layer x head of a model as thumbnails; the chosen head large, as lines and matrix.

    Args:
        model: "minilm" or "smollm2".
        text: the text to read; None = the model's default text.
        **settings: initial values of any other ModelViewParams field: layer, head (the head
            opened large first), thumb_size.
    """

    def __init__(self, model: str = "minilm", text: str | None = None, **settings: Any) -> None:
        start = model_params(ModelViewParams, model, text, **settings)
        self.thumbs = self.panel("thumbnails", _named(
            Heatmap(title="every head (click one)", vmin=0.0, vmax=1.0, show_colorbar=False),
            "thumbnails",
            "principal",
        ))  # fmt: skip
        self.thumbs.on_click(self._thumb_clicked)
        self.lines = self.panel("lines", _named(TokenLines(), "panel-lines"))
        self.matrix = self.panel("weights", _named(
            Heatmap(vmin=0.0, vmax=1.0, panel_size=LARGE_PX, colorbar_label="weight"),
            "panel-weights",
        ))  # fmt: skip
        self.readout = _named(widgets.HTML(), "readout")
        self._sent: tuple[Any, ...] = ()
        body = [
            _scroll(self.thumbs, "thumbnails-box"),
            self.readout,
            panel_row([_scroll(self.lines, "lines-box"), self.matrix]),
        ]
        self._start(start, body)
        self.refresh()

    def _thumb_clicked(self, _row: int, _col: int, panel: int) -> None:
        self._pick(*divmod(panel, model_shape(self.model.value)[1]))

    def _draw(self, r: ModelViewExploration) -> None:
        self._draw_thumbnails(r)
        self._draw_head(r)
        self.readout.value = _model_view_readout(r)

    def _draw_thumbnails(self, r: ModelViewExploration) -> None:
        maps, (layer, head) = r.maps, (r.params.layer, r.params.head)
        titles = [f"{i}.{j}" for i in range(maps.n_layers) for j in range(maps.n_heads)]
        titles[layer * maps.n_heads + head] = f"▶{layer}.{head}"
        key = (maps, r.params.thumb_size)
        if self._sent != key:  # a new text or model: the thumbnails travel once
            rows = r.thumbnails.shape[-1]
            self.thumbs.set_data(
                r.thumbnails,
                panel_titles=titles,
                columns=maps.n_heads,
                cell_size=_thumb_cell(rows),
            )
            self._sent = key
        else:  # another head: only the marker in the titles moves
            self.thumbs.panel_titles = titles

    def _draw_head(self, r: ModelViewExploration) -> None:
        """The opened head, as lines and as a matrix."""
        maps, label = r.maps, f"layer {r.params.layer}, head {r.params.head}"
        self.lines.set_data(r.weights, maps.tokens, maps.tokens, title=label)
        self.matrix.set_data(
            r.weights,
            _causal_masked(maps),
            row_labels=maps.tokens,
            col_labels=maps.tokens,
            title=f"weights, {label}",
        )


# --- the head view ------------------------------------------------------------------------------


class HeadView(_ModelExplorer):
    """One head as lines between the tokens; click a token to list the keys it reads most.

    The strip above shows every head of the chosen layer (click one to pick it). Hover a token
    on the left to see only its lines; click it to keep it, and the readout lists its top keys.

    Args:
        model: "minilm" or "smollm2".
        text: the text to read; None = the model's default text.
        **settings: initial values of any other HeadViewParams field: layer, head, query (the
            token picked first; -1 = none), top_k (keys listed).
    """

    def __init__(self, model: str = "minilm", text: str | None = None, **settings: Any) -> None:
        start = model_params(HeadViewParams, model, text, **settings)  # checks the model
        query = start.query
        if query != -1:  # the lines would show no query: refuse
            n = len(encode_text(model, start.text))
            if type(query) is not int or not 0 <= query < n:
                raise ValueError(
                    f"query: expected -1 (none) or a token of the text in [0, {n}), got {query!r}"
                )
        self.lines = self.panel(
            "lines", _named(TokenLines(selected=query), "panel-lines", "principal")
        )
        self.lines.observe(lambda _change: self.refresh(), names="selected")
        self.strip = self.panel("layer_heads", _named(
            Heatmap(title="this layer's heads (click one)", vmin=0.0, vmax=1.0),
            "layer-heads",
        ))  # fmt: skip
        self.strip.on_click(lambda _row, _col, panel: self._pick(self.layer.value, panel))
        self.readout = _named(widgets.HTML(), "readout")
        self._sent: tuple[Any, ...] = ()
        body = [self.strip, panel_row([_scroll(self.lines, "lines-box"), self.readout])]
        self._start(start, body)
        self.refresh()

    def _derived_params(self) -> dict[str, Any]:
        # the query is the token picked on the lines (the view's own control), if still there
        t = _n_tokens(self._control_values())
        return {"query": self.lines.selected if self.lines.selected < t else -1}

    def _draw(self, r: HeadViewExploration) -> None:
        self._draw_layer_heads(r)
        label = f"layer {r.params.layer}, head {r.params.head}"
        self.lines.set_data(r.weights, r.maps.tokens, r.maps.tokens, title=label)
        self.readout.value = _head_view_readout(r)

    def _draw_layer_heads(self, r: HeadViewExploration) -> None:
        maps, p = r.maps, r.params
        titles = [f"{'▶' if j == p.head else ''}head {j}" for j in range(maps.n_heads)]
        key = (maps, p.layer)
        if self._sent != key:  # the strip travels once per layer; a head moves only the marker
            strip = thumbnail_maps(maps.weights[p.layer : p.layer + 1])  # (H, r, r)
            self.strip.set_data(
                strip,
                panel_titles=titles,
                columns=maps.n_heads,
                cell_size=_thumb_cell(strip.shape[-1]),
            )
            self._sent = key
        else:
            self.strip.panel_titles = titles


# --- the neuron view ----------------------------------------------------------------------------


class NeuronView(_ModelExplorer):
    """One query-key pair of one head: q, k, their elementwise product and its sum.

    For SmolLM2 the panels show q and k before and after RoPE rotates them by their positions;
    the bars sum q * k over each rotated pair of dimensions (2i, 2i + 1). The score the model
    uses is the sum after RoPE; divided by sqrt(D) and softmaxed over the visible keys, it is
    the weight the model's attention map holds (the readout shows both).

    Args:
        model: "smollm2" or "minilm".
        text: the text to read; None = the model's default text.
        **settings: initial values of any other NeuronParams field: layer, head, query, key.
    """

    CONTROLS = (
        *_ModelExplorer.CONTROLS,
        slider("query", 0, lambda v: _n_tokens(v) - 1),
        slider("key", 0, lambda v: _n_tokens(v) - 1),
    )

    def __init__(self, model: str = "smollm2", text: str | None = None, **settings: Any) -> None:
        start = model_params(NeuronParams, model, text, **settings)
        self.vectors = self.panel("vectors", _named(
            Heatmap(title="q and k", colormap=DIVERGING_CMAP, symmetric=True, columns=1),
            "panel-vectors",
            "principal",
        ))  # fmt: skip
        self.products = self.panel("products", _named(
            Heatmap(title="q * k", colormap=DIVERGING_CMAP, symmetric=True, columns=1),
            "panel-products",
        ))  # fmt: skip
        self.pairs = self.panel("pairs", SeriesChart(name="panel-pairs", width=520, height=220))
        self.readout = _named(widgets.HTML(), "readout")
        body = [panel_row([widgets.VBox([self.vectors, self.products]), self.readout]), self.pairs]
        self._start(start, body)
        self.refresh()

    def _draw(self, r: NeuronExploration) -> None:
        self._draw_vectors_and_products(r)
        self._draw_pairs(r)
        self.readout.value = _neuron_readout(r)

    def _draw_vectors_and_products(self, r: NeuronExploration) -> None:
        d = r.q.shape[0]
        cell = max(7, min(12, 384 // d))  # >= 7 px: the rows q and k get their labels
        if r.rope:
            vectors = torch.stack([torch.stack([r.q_raw, r.k_raw]), torch.stack([r.q, r.k])])
            products = torch.stack([r.product_raw, r.product])[:, None]  # (2, 1, D)
            titles = ["before RoPE", "after RoPE (what the model uses)"]
            sums = [f"before RoPE: sum {r.score_raw:.2f}", f"after RoPE: sum {r.score:.2f}"]
        else:
            vectors = torch.stack([r.q, r.k])[None]  # (1, 2, D)
            products = r.product[None, None]  # (1, 1, D)
            titles, sums = ["no RoPE in this model"], [f"sum {r.score:.2f}"]
        pair = f"query {r.params.query} {r.query_token!r}, key {r.params.key} {r.key_token!r}"
        self.vectors.set_data(
            vectors, row_labels=["q", "k"], panel_titles=titles, cell_size=cell,
            title=f"q and k, {pair}",
        )  # fmt: skip
        self.products.set_data(
            products, row_labels=["q*k"], panel_titles=sums, cell_size=cell,
            title="q * k, dimension by dimension",
        )  # fmt: skip

    def _draw_pairs(self, r: NeuronExploration) -> None:
        d = r.q.shape[0]
        x = list(range(d // 2))
        series = [{"name": "after RoPE", "values": r.pair.tolist(), "color": PALETTE[1]}]
        if r.rope:
            series.insert(
                0, {"name": "before RoPE", "values": r.pair_raw.tolist(), "color": PALETTE[0]}
            )
        for s in series:
            s["kind"] = "bar"
        top = 1.1 * max(abs(v) for s in series for v in s["values"]) or 1.0  # 0 in the middle
        if not r.rope:
            series[0]["name"] = "q * k"
        self.pairs.set_data(
            x,
            series,
            title="q * k summed over each pair of dimensions (2i, 2i + 1)",
            x_label=(
                "pair i (RoPE turns pair i by position x base^(-2i/D))"
                if r.rope
                else "pair i of dimensions (2i, 2i + 1)"
            ),
            y_label="contribution to q.k",
            y_range=[-top, top],
            x_ticks=list(range(0, d // 2, max(1, d // 16))),
            bar_mode="group",
        )


def _model_view_readout(r: ModelViewExploration) -> str:
    maps, s = r.maps, r.summary
    label = f"layer {r.params.layer}, head {r.params.head}"
    return html.escape(
        f"{maps.name}, {maps.n_layers} layers x {maps.n_heads} heads, {maps.seq_len} tokens. "
        f"Opened: {label}. Mean weight on token 0: {s.sink_share:.3f}, on the previous "
        f"token: {s.previous_token:.3f}, on itself: {s.self_weight:.3f}; largest weight: "
        f"{s.max_weight:.3f}."
    )


def _head_view_readout(r: HeadViewExploration) -> str:
    maps, p, s = r.maps, r.params, r.summary
    rows = [
        ("head", f"layer {p.layer}, head {p.head}"),
        ("mean weight on token 0", f"{s.sink_share:.3f}"),
        ("... on the previous token", f"{s.previous_token:.3f}"),
    ]
    if p.query >= 0:
        rows.append((f"query {p.query} {maps.tokens[p.query]!r} reads", ""))
        rows += [(f"  key {j} {tok!r}", f"{w:.3f}") for j, tok, w in r.top_keys]
    else:
        rows.append(("click a token on the left", "to list the keys it reads most"))
    return table_html(rows)


def _neuron_readout(r: NeuronExploration) -> str:
    d = r.q.shape[0]
    rows = [
        ("layer, head", f"{r.params.layer}, {r.params.head}"),
        ("query", f"{r.params.query} {r.query_token!r}"),
        ("key", f"{r.params.key} {r.key_token!r}"),
    ]
    if r.rope:
        rows.append(("q.k before RoPE", f"{r.score_raw:.3f}"))
    rows += [
        ("q.k (the score)", f"{r.score:.3f}"),
        (f"score / sqrt({d})", f"{r.scaled:.3f}"),
        ("weight (softmax of the row)", f"{r.weight:.4f}"),
        ("weight in the model's map", f"{r.model_weight:.4f}"),
    ]
    if r.masked:
        rows.append(("masked", "the key comes after the query: weight 0"))
    return table_html(rows)
