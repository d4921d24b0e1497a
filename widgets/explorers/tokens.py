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

from typing import Any

from attention.explore import (
    TokensParams,
    TokenView,
    explore_tokens,
    token_view,
)

from ..views import Heatmap, TokenLines
from ..views.style import css
from .base import Explorer
from .controls import check, slider, text


class TokenAttentionView(Explorer):
    """Token-to-token attention of one head as lines and as a heatmap.

    Args:
        weights: (H, Tq, Tk), (Tq, Tk) or (1, H, Tq, Tk) weights; None = the built-in model.
        tokens: Tq query tokens (required with weights).
        key_tokens: Tk key tokens when they differ from the queries (cross-attention).
        **settings: initial values of any TokensParams field: sentence (the built-in model's
            starting sentence), n_heads, d_model, seed (the built-in model's sizes), head (the
            head shown first).

    `params` is a TokensParams: the built-in model's settings (unused, and the sentence field
    hidden, when the view was given weights) and the head drawn.
    """

    CONTROLS = (
        text("sentence"),
        slider("head", 0, lambda v: v.n_heads - 1),  # the heads of the weights shown
        check("show_numbers", label="show numbers", param=False),
    )

    def __init__(
        self,
        weights: Any = None,
        tokens: Any = None,
        *,
        key_tokens: Any = None,
        **settings: Any,
    ) -> None:
        start = TokensParams(**settings)  # validates the sizes
        n_heads = start.n_heads
        self._fixed: TokenView | None = None
        if weights is not None:
            if tokens is None:
                raise ValueError("tokens: required with weights (one string per query)")
            self._fixed = token_view(weights, tuple(tokens), _opt_tuple(key_tokens), start.head)
            n_heads = self._fixed.weights.shape[0]
        controls = self.declare(start, n_heads=n_heads)
        self.sentence.layout.display = "none" if self._fixed is not None else None
        self.lines = TokenLines(title="head 0")
        self.lines.add_class(css("panel-lines"))
        self.heatmap = self.panel(
            "weights", Heatmap(title="weights", vmin=0.0, vmax=1.0, panel_size=320)
        )
        self.heatmap.add_class(css("panel-weights"))
        self.lines.observe(self._selected_changed, names="selected")
        # the controls in one row (the sentence is wide), the lines under it, the heatmap beside
        super().__init__(
            controls=controls,
            principal=self.lines,
            beside=[self.heatmap],
            controls_row=True,
            body=[],
        )
        self.refresh()

    def _selected_changed(self, change: dict) -> None:
        self.heatmap.highlight_row = change["new"]

    def _compute(self, params: TokensParams) -> TokenView:
        if self._fixed is not None:
            f = self._fixed
            return token_view(f.weights, f.query_tokens, f.key_tokens, params.head)
        att = explore_tokens(params)
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


def _opt_tuple(x: Any) -> tuple[str, ...] | None:
    return None if x is None else tuple(x)
