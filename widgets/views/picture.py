"""Static pictures that outlive the kernel: a PNG of what a view or an explorer draws.

A widget's display data normally holds only the widget view (the mime type
`application/vnd.jupyter.widget-view+json`), which only a running kernel can draw: a saved
notebook, nbconvert, a code host's notebook viewer and the course's static site then show
nothing where an explorer was. With pictures on, every view (Heatmap, TokenLines, SeriesChart)
and every explorer also carries, in the same display data,

    image/png    what it draws when it is displayed, rendered by matplotlib (Agg) from the
                 views' `figure()`: the panels shown, packed left to right in rows
    text/plain   a one-line summary: "AttentionExplorer: 5 panels (weights = softmax(scores),
                 ...) - a live widget; run the notebook to use it"

Front-ends that can draw the widget still draw the widget (they prefer its mime type); the
others fall back to the picture. Rendering costs 60-600 ms per display on a 2-core machine
(several figures with text), so pictures are OFF by default in a live kernel and turned on
by the site build and by anyone saving notebooks with outputs:

    ATTENTION_COURSE_PICTURES=1 jupyter nbconvert --execute ...    # environment variable
    widgets.pictures(True)                                          # or in the kernel

The text/plain summary is always the short line above (no memory addresses or model ids), so
it is the same on every run, pictures on or off. Nothing here imports matplotlib until a
picture is rendered.
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Iterator, Sequence
from typing import Any

from attention.language import translate

ENV = "ATTENTION_COURSE_PICTURES"
"""Environment variable that turns pictures on ("1", "true", "yes", "on") in a new kernel."""

DPI = 72
"""Resolution of the pictures: 72 dpi keeps a 7-panel explorer under ~150 KB."""

MAX_WIDTH = 1000
"""Figures wrap to a new row past this width (px), like the widgets' flex rows; a figure wider
than this on its own is rendered at a lower resolution to fit."""

GAP = 8  # px between packed figures
LIVE_NOTE = "a live widget; run the notebook to use it"

_setting: bool | None = None  # None: follow the environment variable


def pictures(on: bool | None = None) -> bool:
    """Turn static pictures on or off for this kernel (None: ask); return the setting in force.

    Without a call, the environment variable ATTENTION_COURSE_PICTURES decides (off if unset).
    """
    global _setting
    if on is not None:
        _setting = bool(on)
    if _setting is not None:
        return _setting
    return os.environ.get(ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def _is_view(widget: Any) -> bool:
    return callable(getattr(widget, "figure", None)) and callable(
        getattr(widget, "csv_table", None)
    )


def _hidden(widget: Any) -> bool:
    layout = getattr(widget, "layout", None)
    return getattr(layout, "display", None) == "none"


def shown_views(widget: Any) -> Iterator[Any]:
    """The views a widget shows, in display order: itself if it is a view, else every view
    among its children (recursively) that is not hidden with `layout.display = "none"`."""
    if _hidden(widget):
        return
    if _is_view(widget):
        yield widget
        return
    for child in getattr(widget, "children", ()):
        yield from shown_views(child)


def _title(view: Any) -> str:
    return str(getattr(view, "title", "") or "").strip() or type(view).__name__


def summary(widget: Any, views: Sequence[Any] | None = None) -> str:
    """The one-line text/plain of a widget's display data (deterministic)."""
    views = list(shown_views(widget)) if views is None else list(views)
    name = type(widget).__name__
    note = translate(LIVE_NOTE)
    if _is_view(widget):
        title = _title(widget)
        return f"{name}: {title} - {note}" if title != name else f"{name} - {note}"
    titles = ", ".join(_title(v) for v in views)
    panels = translate(f"{len(views)} panel{'s' * (len(views) != 1)}")
    return f"{name}: {panels} ({titles}) - {note}" if views else f"{name} - {note}"


def _rgba(fig: Any, dpi: float, max_width: int | None = None) -> Any:
    """Render a matplotlib Figure with Agg; return its pixels as an (H, W, 4) uint8 array.

    With `max_width`, a figure that would be wider at `dpi` is rendered at the dpi that fits.
    """
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if max_width is not None:
        dpi = min(dpi, max_width / max(fig.get_figwidth(), 1e-6))
    fig.set_dpi(dpi)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba()).copy()


def pack(images: Sequence[Any], max_width: int = MAX_WIDTH, gap: int = GAP) -> Any:
    """Place (H, W, 4) images left to right, wrapping at `max_width`, on a white canvas."""
    import numpy as np

    rows: list[list[Any]] = [[]]
    width = 0
    for image in images:
        w = image.shape[1]
        if rows[-1] and width + gap + w > max_width:
            rows.append([])
            width = 0
        width += (gap if rows[-1] else 0) + w
        rows[-1].append(image)
    widths = [sum(i.shape[1] for i in row) + gap * (len(row) - 1) for row in rows]
    heights = [max(i.shape[0] for i in row) for row in rows]
    out = np.full((sum(heights) + gap * (len(rows) - 1), max(widths), 4), 255, np.uint8)
    y = 0
    for row, height in zip(rows, heights, strict=True):
        x = 0
        for image in row:
            h, w = image.shape[:2]
            out[y : y + h, x : x + w] = image
            x += w + gap
        y += height + gap
    return out


def png_bytes(views: Sequence[Any], dpi: int = DPI) -> bytes | None:
    """One PNG of the views' figures packed in rows; None if no view has anything to draw.

    A view that cannot draw yet (no data: its figure() raises ValueError) is left out.
    """
    from matplotlib.image import imsave

    images = []
    for view in views:
        try:
            fig = view.figure()
        except ValueError:
            continue
        images.append(_rgba(fig, dpi, MAX_WIDTH))
    if not images:
        return None
    buffer = io.BytesIO()
    imsave(buffer, pack(images), format="png")
    return buffer.getvalue()


class Pictured:
    """Mixin for widgets: their display data also carries a picture and a one-line summary.

    Put it before the widget class (`class Heatmap(Pictured, anywidget.AnyWidget)`); the
    widget's own `_repr_mimebundle_` still provides the widget view. The picture shows
    `shown_views(self)`: the widget itself if it has `figure()`, else its visible child views.
    """

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if bundle is None:
            return None
        self._picture_displayed = True
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = dict(data)
        views = list(shown_views(self))
        data["text/plain"] = summary(self, views)
        if pictures():
            try:
                png = png_bytes(views)
            except Exception as exc:  # noqa: BLE001 - a picture must never break a display
                data["text/plain"] += f" (no picture: {type(exc).__name__}: {exc})"
            else:
                if png is not None:
                    data["image/png"] = base64.b64encode(png).decode("ascii")
        return (data, metadata) if isinstance(bundle, tuple) else data

    def show_final_picture(self, caption: str) -> None:
        """With pictures on, and if this widget was displayed before, display a picture of it
        as it is now in the running cell's output: for a widget that keeps changing after it
        was shown (training curves), whose picture as first drawn is nearly empty."""
        if not pictures() or not getattr(self, "_picture_displayed", False):
            return
        try:
            png = png_bytes(list(shown_views(self)))
        except Exception:  # noqa: BLE001 - a picture must never break the computation
            return
        if png is not None:
            from IPython.display import display

            text = f"{type(self).__name__}: {caption}"
            display(
                {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": text}, raw=True
            )
