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

import anywidget
import traitlets as t

from .export import Exportable
from .style import STATIC


class CanvasView(Exportable, anywidget.AnyWidget):
    """Base of the canvas views: zoom, the shared CSS, export and picture (module docstring).

    A subclass sets `_esm = esm("<name>")` and implements `figure()` and `csv_table()`.
    """

    _css = STATIC / "canvas.css"

    zoom = t.Float(1.0, min=0.25, max=4.0).tag(sync=True)
