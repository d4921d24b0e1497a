"""Scatter: points in a plane, in groups of their own colour and shape, drawn in the browser.

Some points are sources: pick one (a click, or the arrow keys on the focused canvas) and lines
run from it to every point it links to, their opacity and width its link weights (a query and
the keys it attends to). Hover any point to read its label, and its weight from the source
picked; hovering a source previews its lines. Drawn by static/scatter.js on the canvas views'
shared code (canvas.py: CanvasView), with equal scales on both axes, so distances on screen are
distances in the data.

    sc = Scatter(title="queries and keys", width=460, height=420)
    sc.set_data(points,                  # (N, 2)
                labels,                  # N strings, shown on hover
                groups,                  # N ints: the group of each point
                group_names=["query", "key"],
                links=weights,           # (S, N): weight from source s to every point, or None
                sources=[0, 1, ...])     # S point indices, one per row of links
    sc.selected      # the picked source (index into sources; -1 = none); syncs back

Keys on the focused canvas: Right/Down the next source, Left/Up the previous, Home/End the
first/last, Escape none. `sc.export(folder, stem)` saves PNG, SVG (matplotlib) and CSV.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import traitlets as t

from .arrays import ARRAY, check_labels, to_numpy
from .canvas import CanvasView
from .style import PALETTE, TEXT, css, esm
from .text import Text, TextList

SHAPES = ("circle", "square", "triangle", "diamond")
LABELLED_LINKS = 3  # the picked source's strongest links get their labels drawn


class Scatter(CanvasView):
    """Points in groups (colour and shape) with weighted links from a picked source point.

    Args:
        **traits: title, x_label, y_label, width, height, group_names, group_colors,
            group_shapes, link_label (the word for a weight in the tooltip), selected, zoom.
    """

    _esm = esm("scatter")

    points = t.Any(None, allow_none=True).tag(**ARRAY)  # float32 (N, 2)
    labels = t.List(t.Unicode()).tag(sync=True)  # N
    groups = t.List(t.Int()).tag(sync=True)  # N group indices
    group_names = TextList(t.Unicode()).tag(sync=True)
    group_colors = t.List(t.Unicode(), list(PALETTE[:4])).tag(sync=True)
    group_shapes = t.List(t.Enum(SHAPES), list(SHAPES)).tag(sync=True)
    links = t.Any(None, allow_none=True).tag(**ARRAY)  # float32 (S, N)
    sources = t.List(t.Int()).tag(sync=True)  # S point indices
    selected = t.Int(-1).tag(sync=True)  # index into sources; -1 = none
    link_label = Text("weight").tag(sync=True)
    title = Text("").tag(sync=True)
    x_label = Text("").tag(sync=True)
    y_label = Text("").tag(sync=True)
    width = t.Int(460, min=120).tag(sync=True)
    height = t.Int(420, min=120).tag(sync=True)

    def __init__(self, **traits: Any) -> None:
        super().__init__(**traits)
        self.add_class(css("scatter"))

    def set_data(
        self,
        points: Any,
        labels: Sequence[Any],
        groups: Sequence[int],
        *,
        links: Any = None,
        sources: Sequence[int] = (),
        **traits: Any,
    ) -> None:
        """Replace the points, labels, groups and links (and other traits) in one message.

        `selected` is kept while it still names a source, else reset to -1.

        Raises:
            ValueError: points not (N, 2) or not finite; labels or groups not N long; a group
                without a name; links not (len(sources), N), negative or not finite; a source
                outside the points.
        """
        p = to_numpy(points)
        if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] == 0:
            raise ValueError(f"points: expected a non-empty (N, 2) array, got shape {p.shape}")
        if not np.isfinite(p).all():
            raise ValueError("points: expected finite coordinates, got NaN or infinity")
        n = p.shape[0]
        names = check_labels(labels, n, "labels")
        g = [int(v) for v in groups]
        if len(g) != n:
            raise ValueError(f"groups: expected {n} group indices, got {len(g)}")
        n_names = len(traits.get("group_names", self.group_names))
        if g and not 0 <= min(g) <= max(g) < n_names:
            raise ValueError(
                f"groups: expected indices in [0, {n_names}) (one per group name), got "
                f"{sorted(set(g))}"
            )
        src = [int(s) for s in sources]
        if any(not 0 <= s < n for s in src):
            raise ValueError(f"sources: expected point indices in [0, {n}), got {src}")
        w = None
        if links is not None:
            w = to_numpy(links)
            if w.shape != (len(src), n):
                raise ValueError(
                    f"links: expected shape (S, N) = {(len(src), n)}, got {tuple(w.shape)}"
                )
            if not (np.isfinite(w).all() and (w >= 0).all()):
                raise ValueError("links: expected finite weights >= 0, got NaN, inf or < 0")
        elif src:
            raise ValueError(f"links: expected a ({len(src)}, {n}) array for the sources, got None")
        with self.hold_sync():
            for name, value in traits.items():
                if not self.has_trait(name):
                    raise ValueError(f"set_data: unknown trait {name!r}")
                setattr(self, name, value)
            self.set_trait("points", p)
            self.set_trait("links", w)
            self.labels = names
            self.groups = g
            self.sources = src
            if self.selected >= len(src):
                self.selected = -1

    def select(self, source: int) -> None:
        """Pick a source (as a click on it does); -1 picks none."""
        if type(source) is not int or not -1 <= source < len(self.sources):
            raise ValueError(
                f"source: expected -1 or an index in [0, {len(self.sources)}), got {source!r}"
            )
        self.selected = source

    # Export (the protocol of views/export.py) ---------------------------------------------
    def _check_data(self) -> np.ndarray:
        if self.points is None:
            raise ValueError("scatter: nothing to export; call set_data(points, ...) first")
        return self.points

    def active_links(self) -> np.ndarray | None:
        """(N,) the picked source's weights over every point; None when none is picked."""
        if self.links is None or not 0 <= self.selected < len(self.sources):
            return None
        return self.links[self.selected]

    def figure(self) -> Any:
        """A matplotlib Figure of the scatter: groups, the picked source's links and labels."""
        p = self._check_data()
        import matplotlib.pyplot as plt  # only when a figure is asked for

        dpi = 100
        fig, ax = plt.subplots(figsize=(self.width / dpi, self.height / dpi), dpi=dpi)
        w = self.active_links()
        source = self.sources[self.selected] if w is not None else -1
        if w is not None and w.max() > 0:
            top = w.max()
            for j in np.nonzero(w > 0)[0]:
                ax.plot(*p[[source, j]].T, color=TEXT, lw=0.6 + 3 * float(w[j]),
                        alpha=0.85 * float(w[j]) / top, zorder=1)  # fmt: skip
        markers = {"circle": "o", "square": "s", "triangle": "^", "diamond": "D"}
        groups = np.asarray(self.groups)
        for k, name in enumerate(self.group_names):
            mine = groups == k
            if mine.any():
                ax.scatter(*p[mine].T, s=26, marker=markers[_at(self.group_shapes, k, "circle")],
                           color=_at(self.group_colors, k, PALETTE[k % len(PALETTE)]),
                           edgecolors="white", linewidths=0.6, label=name, zorder=2)  # fmt: skip
        if source >= 0:
            ax.scatter(*p[source], s=140, facecolors="none", edgecolors=TEXT, lw=1.5, zorder=3)
            strongest = [j for j in np.argsort(-w, kind="stable")[:LABELLED_LINKS] if w[j] > 0]
            x_lo, x_hi = float(p[:, 0].min()), float(p[:, 0].max())
            for j in [source, *strongest]:
                text = self.labels[j] if j == source else f"{self.labels[j]} {_weight(w[j])}"
                right = p[j, 0] > x_lo + 0.7 * (x_hi - x_lo)  # near the right edge: go left
                ax.annotate(text, p[j], xytext=(-5 if right else 5, 4), textcoords="offset points",
                            ha="right" if right else "left", fontsize=8, color=TEXT, zorder=4,
                            fontweight="bold" if j == source else "normal")  # fmt: skip
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel(self.x_label, fontsize=9)
        ax.set_ylabel(self.y_label, fontsize=9)
        ax.set_title(self.title, fontsize=10, loc="left")
        if self.group_names:
            ax.legend(loc="best", fontsize=8, framealpha=0.85)
        fig.tight_layout()
        return fig

    def csv_table(self) -> tuple[tuple[str, ...], list[tuple]]:
        """One row per point: index, group, label, x, y, and its weight from the picked source."""
        p = self._check_data()
        w = self.active_links()
        header = ("point", "group", "label", "x", "y", f"{self.link_label}_from_selected")
        rows = [
            (
                i,
                _at(self.group_names, self.groups[i], str(self.groups[i])),
                self.labels[i],
                float(p[i, 0]),
                float(p[i, 1]),
                "" if w is None else float(w[i]),
            )
            for i in range(p.shape[0])
        ]
        return header, rows


def _weight(v: float) -> str:
    """A weight as the browser writes it beside a point (static/scatter.js: formatWeight)."""
    if not v > 0:
        return "0"
    if v < 0.001:
        return "<0.001"
    return f"{v:.2f}" if v >= 0.1 else f"{v:.3f}"


def _at(values: Sequence[Any], i: int, default: Any) -> Any:
    return values[i] if 0 <= i < len(values) else default
