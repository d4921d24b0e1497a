"""CanvasView: what every view drawn on a <canvas> in the browser shares, in one place.

Heatmap (heatmap.py), TokenLines (token_lines.py) and SeriesChart (chart.py) subclass it:

    class TokenLines(CanvasView):
        _esm = esm("token_lines")     # static/common.js + static/token_lines.js (style.esm)
        weights = ...                 # the view's own traits

and get, from here:

    zoom      presenter mode: every length on the canvas times this (explorers set it on every
              canvas view alike, explorers/base.py)
    _css      static/canvas.css: root boxes, focus outlines, the heatmap's tooltip
    export    `view.export(folder, stem)`: PNG and SVG from the view's `figure()`, CSV from its
              `csv_table()` (export.py: Exportable)
    picture   a static PNG of the view in its display data, for pages without a kernel
              (picture.py: Pictured, through Exportable)

In the browser, the same split: static/common.js builds one namespace, `common` (canvas set-up
and zoom, redraw wiring, the text alternative, array reading, the style of style.py), and each
view's file takes what it uses from it in its first line.
"""

from __future__ import annotations

import functools
import tomllib
from typing import Any

import anywidget
import traitlets as t

from attention import language as lang

from .export import Exportable
from .style import STATIC

# What the views' JavaScript writes itself (legends, tooltips, accessible names, the screen
# readers' tables): the English phrase, {name} standing for a value (common.js: say()).
JS_PHRASES = (
    "masked", "no keys", " (masked)", " (row has no keys to attend to)", "row {i}", "col {i}",
    "heatmap", "{name}: no data", "panel 0", "{name}, {title} (1 of {n} panels)",
    " from {lo} to {hi}", ", {n} masked", "{title}: {R} rows x {C} columns{range}{hidden}.",
    "first {r} of {R} rows and {c} of {C} columns", "all values", "attention lines",
    "{name}: {Tq} query tokens, {Tk} key tokens", "{name}, weights", "chart", "none",
    "first {n} of {m} points", "all {n} points", "{name}: {s} series over {m} values of {x}.",
    "scatter", "; picked {p}", "{name}: {n} points ({counts}){picked}", "point", "group",
    "weight", "{label} from {from}: {w}", "click: unpick", "click: pick",
    "{name}: {n} points in {g} groups ({names}).",
)  # fmt: skip


def js_words() -> dict[str, str]:
    """JS_PHRASES in the course's language: {} in English (the views keep their own text).

    Each phrase is looked up as it is written, placeholders and all, in the language's catalog
    (attention/language/<lang>.toml); one without an entry stays English (the JavaScript then
    writes its own text) and is listed by tests/explorers/test_explorers_zh.py.
    """
    if lang.language() == "en":
        return {}
    entries = _entries(lang.language())
    return {phrase: entries[phrase] for phrase in JS_PHRASES if phrase in entries}


@functools.cache
def _entries(code: str) -> dict[str, str]:
    return tomllib.loads((lang.HERE / f"{code}.toml").read_text(encoding="utf-8"))


class CanvasView(Exportable, anywidget.AnyWidget):
    """Base of the canvas views: zoom, the shared CSS, export and picture (module docstring).

    A subclass sets `_esm = esm("<name>")` and implements `figure()` and `csv_table()`.
    """

    _css = STATIC / "canvas.css"

    zoom = t.Float(1.0, min=0.25, max=4.0).tag(sync=True)
    words = t.Dict().tag(sync=True)  # the JavaScript's own phrases translated (js_words)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if lang.language() != "en":
            self.words = js_words()
