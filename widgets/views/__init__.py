"""The drawing components: they draw the numbers they are given and know nothing of explorers.

    Heatmap      one matrix or a grid of small multiples on a canvas (heatmap.py)
    TokenLines   query tokens joined to key tokens by lines whose weight is their opacity
    SeriesChart  bars and lines over one shared x (chart.py)
    Scatter      points in groups on a plane, weighted lines from a picked point (scatter.py)

Each is a `CanvasView` (canvas.py: zoom, export, picture), an anywidget whose JavaScript lives
in static/: its own file (heatmap.js, token_lines.js, chart.js) after common.js, the shared code,
which it reaches through one namespace (`const { setupCanvas, wire } = common;`). Numbers travel
as binary buffers (arrays.py); colours, fonts and sizes come from style.py, for the browser and
matplotlib alike; every view exports PNG/SVG/CSV through one protocol (export.py), rendered by
figures.py (the only module here that imports matplotlib, and only when a figure is asked for).
"""

from .canvas import CanvasView
from .chart import SeriesChart, decade_ticks
from .heatmap import Heatmap, auto_cell_size
from .scatter import Scatter
from .style import COLORMAPS, DEFAULT_CMAP, DIVERGING_CMAP, PALETTE, css
from .token_lines import TokenLines

__all__ = [
    "COLORMAPS",
    "DEFAULT_CMAP",
    "DIVERGING_CMAP",
    "PALETTE",
    "CanvasView",
    "Heatmap",
    "Scatter",
    "SeriesChart",
    "decade_ticks",
    "TokenLines",
    "auto_cell_size",
    "css",
]
