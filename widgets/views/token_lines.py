"""TokenLines: query tokens on the left, key tokens on the right, a line for every weight.

Opacity and width follow the weight, like BertViz's head view; hover or click a query token
to see only its lines (arrow keys move the selection, Escape clears it). Drawn by
static/token_lines.js on the canvas views' shared code (canvas.py: CanvasView).

    tl = TokenLines(weights, query_tokens, key_tokens, title="head 0")
    tl.selected      # the clicked query (-1 = all); syncs back from the browser
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import traitlets as t

from .arrays import ARRAY, check_labels, to_numpy
from .canvas import CanvasView
from .style import css, esm
from .text import Text


class TokenLines(CanvasView):
    """Lines from each query token to each key token, opacity and width = attention weight.

    Args:
        weights: optional initial (Tq, Tk) weights.
        query_tokens: Tq strings; key_tokens: Tk strings (default: the query tokens).
        **traits: title, color (a CSS colour), selected (query index, -1 = all), zoom.
    """

    _esm = esm("token_lines")

    weights = t.Any(None, allow_none=True).tag(**ARRAY)  # float32 (Tq, Tk)
    masked = t.Any(None, allow_none=True).tag(**ARRAY)  # bool (Tq, Tk)
    query_tokens = t.List(t.Unicode()).tag(sync=True)
    key_tokens = t.List(t.Unicode()).tag(sync=True)
    selected = t.Int(-1).tag(sync=True)
    title = Text("").tag(sync=True)
    color = t.Unicode("#1f77b4").tag(sync=True)

    def __init__(
        self,
        weights: Any = None,
        query_tokens: Sequence[str] | None = None,
        key_tokens: Sequence[str] | None = None,
        **traits: Any,
    ) -> None:
        super().__init__(**traits)
        self.add_class(css("token-lines"))
        if weights is not None:
            self.set_data(weights, query_tokens, key_tokens)

    def set_data(
        self,
        weights: Any,
        query_tokens: Sequence[Any] | None = None,
        key_tokens: Sequence[Any] | None = None,
        masked: Any = None,
        **traits: Any,
    ) -> None:
        """Replace weights (Tq, Tk) and tokens in one message; `selected` is kept if in range.

        Raises:
            ValueError: weights not 2-D, or token lists whose lengths differ from Tq / Tk.
        """
        w = to_numpy(weights)
        if w.ndim != 2 or w.size == 0:
            raise ValueError(f"weights: expected a non-empty (Tq, Tk) array, got shape {w.shape}")
        tq, tk = w.shape
        if query_tokens is None:
            query_tokens = [str(i) for i in range(tq)]
        if key_tokens is None:
            key_tokens = query_tokens if tk == tq else [str(j) for j in range(tk)]
        qt = check_labels(query_tokens, tq, "query_tokens")
        kt = check_labels(key_tokens, tk, "key_tokens")
        m = None
        if masked is not None:
            m = np.ascontiguousarray(np.broadcast_to(to_numpy(masked, bool), w.shape))
        with self.hold_sync():
            for name, value in traits.items():
                setattr(self, name, value)
            self.set_trait("weights", w)
            self.set_trait("masked", m)
            self.query_tokens = qt
            self.key_tokens = kt
            if self.selected >= tq:
                self.selected = -1

    def figure(self) -> Any:
        """A matplotlib Figure of the lines (the selected query's only, when one is selected)."""
        from .figures import token_lines_figure  # matplotlib only when a figure is asked for

        if self.weights is None:
            raise ValueError("token lines: nothing to export; call set_data(weights) first")
        return token_lines_figure(
            self.weights,
            self.query_tokens,
            self.key_tokens,
            masked=self.masked,
            selected=self.selected,
            title=self.title,
            color=self.color,
        )

    def csv_table(self) -> tuple[tuple[str, ...], list[tuple]]:
        """One row per (query, key) pair: indices, tokens, weight and mask flag."""
        if self.weights is None:
            raise ValueError("token lines: nothing to export; call set_data(weights) first")
        w = self.weights
        m = self.masked if self.masked is not None else np.zeros(w.shape, bool)
        header = ("row", "query_token", "col", "key_token", "weight", "masked")
        rows = [
            (i, self.query_tokens[i], j, self.key_tokens[j], float(w[i, j]), int(m[i, j]))
            for i in range(w.shape[0])
            for j in range(w.shape[1])
        ]
        return header, rows
