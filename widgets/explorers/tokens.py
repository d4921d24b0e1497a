"""TokenAttentionView: which tokens does each token attend to? Lines plus a heatmap, per head.

    from widgets.explorers.tokens import TokenAttentionView
    TokenAttentionView()                                   # type a sentence; untrained model
    TokenAttentionView(weights=w, tokens=toks)             # any (H, Tq, Tk) or (Tq, Tk) weights
    TokenAttentionView(weights=w, tokens=dec, key_tokens=enc)   # cross-attention

With no weights, a small deterministic self-attention layer from the core (word embeddings
fixed by a hash of each word, sinusoidal positions, one untrained MultiHeadAttention) attends
over the typed sentence: the pattern is arbitrary, but it is a real computation that moves as
you type. Later lessons pass a trained model's weights instead. Hover a token on the left to
see only its lines; click it to keep it selected (its row is outlined in the heatmap).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from attention.explore import (
    DEFAULT_SENTENCE,
    TokensParams,
    TokenView,
    explore_tokens,
    token_view,
)

from ..views import Heatmap, TokenLines
from ..views.style import css
from .base import Explorer
from .controls import clamp_slider, int_slider, toggle


@dataclass(frozen=True)
class TokenViewParams:
    model: TokensParams | None  # None when the weights were given
    head: int


class TokenAttentionView(Explorer):
    """Token-to-token attention of one head as lines and as a heatmap.

    Args:
        weights: (H, Tq, Tk), (Tq, Tk) or (1, H, Tq, Tk) weights; None = the built-in model.
        tokens: Tq query tokens (required with weights).
        key_tokens: Tk key tokens when they differ from the queries (cross-attention).
        sentence: the built-in model's starting sentence.
        n_heads, d_model, seed: the built-in model's sizes.
        head: the head shown first.
    """

    def __init__(
        self,
        weights: Any = None,
        tokens: Any = None,
        *,
        key_tokens: Any = None,
        sentence: str = DEFAULT_SENTENCE,
        n_heads: int = 4,
        d_model: int = 32,
        seed: int = 0,
        head: int = 0,
    ) -> None:
        if weights is not None:
            if tokens is None:
                raise ValueError("tokens: required with weights (one string per query)")
            self._fixed = token_view(weights, tuple(tokens), _opt_tuple(key_tokens), 0)
            n_heads = self._fixed.weights.shape[0]
        else:
            self._fixed = None
            TokensParams(sentence, d_model, n_heads, seed)  # validates the sizes
        self._model = (d_model, n_heads, seed)
        self.sentence = widgets.Text(
            value=sentence,
            description="sentence",
            continuous_update=True,
            layout=widgets.Layout(width="420px"),
        )
        self.sentence.add_class(css("sentence"))
        self.sentence.layout.display = "none" if self._fixed is not None else None
        self.head = int_slider("head", 0, n_heads - 1, head, name="head")
        self.show_numbers = toggle("show numbers", False, name="show-numbers")
        self.lines = TokenLines(title="head 0")
        self.lines.add_class(css("panel-lines"))
        self.heatmap = Heatmap(title="weights", vmin=0.0, vmax=1.0, panel_size=320)
        self.heatmap.add_class(css("panel-weights"))
        self.lines.observe(self._selected_changed, names="selected")
        # the controls in one row (the sentence is wide), the lines under it, the heatmap beside
        super().__init__(
            controls=[self.sentence, self.head, self.show_numbers],
            principal=self.lines,
            beside=[self.heatmap],
            controls_row=True,
            body=[],
            name="token-view",
        )
        self.refresh()

    def _selected_changed(self, change: dict) -> None:
        self.heatmap.highlight_row = change["new"]

    def _read_params(self) -> TokenViewParams:
        if self._fixed is not None:
            return TokenViewParams(model=None, head=self.head.value)
        d_model, n_heads, seed = self._model
        return TokenViewParams(
            model=TokensParams(self.sentence.value, d_model, n_heads, seed),
            head=self.head.value,
        )

    def _sync_controls(self) -> None:
        clamp_slider(self.head, self._model[1] - 1 if self._fixed is None else self.head.max)

    def _compute(self, params: TokenViewParams) -> TokenView:
        if params.model is None:
            f = self._fixed
            return token_view(f.weights, f.query_tokens, f.key_tokens, params.head)
        att = explore_tokens(params.model)
        return token_view(att.weights, att.tokens, None, params.head)

    def _draw(self, r: TokenView) -> None:
        w = r.head_weights  # (Tq, Tk)
        title = f"head {r.head}"
        self.lines.set_data(w, r.query_tokens, r.key_tokens, title=title)
        self.heatmap.set_data(
            w,
            row_labels=r.query_tokens,
            col_labels=r.key_tokens,
            title=f"weights, {title}",
            show_numbers=self.show_numbers.value,
            highlight_row=self.lines.selected,
        )

    def _views(self) -> dict[str, Heatmap]:
        return {"weights": self.heatmap}


def _opt_tuple(x: Any) -> tuple[str, ...] | None:
    return None if x is None else tuple(x)
