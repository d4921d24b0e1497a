"""matplotlib renderings of what the canvas views draw, for export and static pictures.

Imported only when a figure is asked for (`view.figure()`, `view.export(...)`), so displaying
a view never loads matplotlib. The functions take plain numbers, not widgets: the views pass
their synced traits in. matplotlib is used without pyplot (no global figure state), with the
Agg renderer, so it works in any kernel and in tests. Colours come from `style`.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.colors import Colormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from attention.language import translate

from .arrays import color_limits, to_numpy
from .style import DEFAULT_CMAP, FULLY_MASKED_FACE, MASKED_FACE, MASKED_HATCH

MAX_LINES = 40
"""Token rows a token-lines figure is as tall as, at most (0.3 inch each): about 900 px."""

FIT_WIDTH = 13.5
"""Inches a figure of small multiples fits into: about 1,000 px at the pictures' 72 dpi."""


def _cmap(name: str) -> Colormap:
    # non-finite cells get the masked face, then the hatching covers them
    return mpl.colormaps[name].with_extremes(bad=MASKED_FACE)


def heatmap_figure(
    values: Any,
    masked: Any = None,
    fully_masked: Any = None,
    *,
    row_labels: Sequence[str] = (),
    col_labels: Sequence[str] = (),
    panel_titles: Sequence[str] = (),
    title: str = "",
    colormap: str = DEFAULT_CMAP,
    limits: tuple[float, float] | None = None,
    show_numbers: bool = False,
    digits: int = 2,
    colorbar_label: str = "",
    columns: int = 0,
    colorbar: bool = True,
    categories: Sequence[tuple[float, str]] = (),
) -> Figure:
    """Draw (R, C) or (P, R, C) values as heatmaps with hatched masked cells and grey rows.

    Shapes: masked broadcasts to values (True = masked); fully_masked is (P, R) or (R,).
    categories: (value, name) pairs for values that are categories, not a scale: a legend
    swatch each instead of the colour bar. Small multiples that would need more than twice
    FIT_WIDTH inches at their usual size (a picture would shrink them, titles and all, to a
    blur) are drawn smaller and without tick labels instead, so their titles stay legible.
    """
    v = to_numpy(values)
    v = v[None] if v.ndim == 2 else v  # (P, R, C)
    p, r, c = v.shape
    m = np.broadcast_to(to_numpy(masked, bool), v.shape) if masked is not None else None
    f = np.broadcast_to(to_numpy(fully_masked, bool), (p, r)) if fully_masked is not None else None
    lo, hi = limits if limits is not None else color_limits(v, m)
    ncols = columns or (p if p <= 4 else -(-p // -(-p // 4)))
    nrows = -(-p // ncols)
    cell = min(0.45, max(0.08, 4.0 / max(r, c)))  # inches
    margin, small = 1.2, ncols * (c * cell + 1.2) + 1.2 > 2 * FIT_WIDTH  # many multiples
    if small:  # the usual margins (tick labels) would shrink everything to illegible
        margin = 0.25
        across = (FIT_WIDTH - 1.2) / ncols - margin  # inches a map may take, to fit the width
        down = 2 * FIT_WIDTH / nrows - 0.35  # ... and to stay within twice that height
        cell = max(0.01, min(across, down)) / max(r, c)
    below = 0.35 if small else 1.0  # inches per panel for its title and labels
    fig = Figure(figsize=(ncols * (c * cell + margin) + 1.2, nrows * (r * cell + below) + 0.6))
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    if small:  # matplotlib's default margins are fractions: far too wide on a tall figure
        height = fig.get_figheight()
        fig.subplots_adjust(top=1 - 0.6 / height, bottom=0.35 / height, hspace=0.4)
    cmap = _cmap(colormap)
    image = None
    for i, ax in enumerate(axes):
        if i >= p:
            ax.set_visible(False)
            continue
        shown = np.where(np.isfinite(v[i]), v[i], np.nan)
        image = ax.imshow(shown, cmap=cmap, vmin=lo, vmax=hi, interpolation="nearest")
        hidden = ~np.isfinite(v[i]) if m is None else (m[i] | ~np.isfinite(v[i]))
        _hatch(ax, hidden, None if f is None else f[i])
        if show_numbers and max(r, c) <= 24 and not small:
            _numbers(ax, v[i], hidden, None if f is None else f[i], cmap, lo, hi, digits)
        _ticks(ax, [] if small else list(row_labels), [] if small else list(col_labels), r, c)
        if panel_titles:
            ax.set_title(panel_titles[i], fontsize=8 if small else 10, pad=2 if small else 6)
    if image is not None and colorbar and not categories:
        bar = fig.colorbar(image, ax=list(axes[:p]), shrink=0.8)
        if colorbar_label:
            bar.set_label(colorbar_label)
    legend = [
        Patch(facecolor=cmap((value - lo) / (hi - lo or 1.0)), edgecolor="#777777", label=name)
        for value, name in categories
    ]
    if m is not None and m.any():
        legend.append(
            Patch(
                facecolor=MASKED_FACE,
                edgecolor=MASKED_HATCH,
                hatch="///",
                label=translate("masked"),
            )
        )
    if f is not None and f.any():
        legend.append(Patch(facecolor=FULLY_MASKED_FACE, label=translate("row attends to nothing")))
    if legend:
        fig.legend(handles=legend, loc="lower left", ncols=min(len(legend), 4), frameon=False)
    if title and small:  # just above the first row's titles
        fig.suptitle(title, y=1 - 0.08 / fig.get_figheight(), va="top")
    elif title:
        fig.suptitle(title)
    return fig


def _hatch(ax: Any, hidden: np.ndarray, full: np.ndarray | None) -> None:
    # Runs of masked cells along each row become one hatched rectangle each.
    runs, rows = [], []
    for i, row in enumerate(hidden):
        if full is not None and full[i]:
            rows.append(Rectangle((-0.5, i - 0.5), hidden.shape[1], 1))
            continue
        j = 0
        while j < len(row):
            if row[j]:
                start = j
                while j < len(row) and row[j]:
                    j += 1
                runs.append(Rectangle((start - 0.5, i - 0.5), j - start, 1))
            else:
                j += 1
    if runs:
        ax.add_collection(
            PatchCollection(
                runs, facecolor=MASKED_FACE, edgecolor=MASKED_HATCH, hatch="///", linewidth=0
            )
        )
    if rows:
        ax.add_collection(PatchCollection(rows, facecolor=FULLY_MASKED_FACE, linewidth=0))


def _numbers(ax, v, hidden, full, cmap, lo, hi, digits) -> None:
    span = hi - lo if hi > lo else 1.0
    for i in range(v.shape[0]):
        if full is not None and full[i]:
            continue
        for j in range(v.shape[1]):
            x = float(v[i, j])
            if hidden[i, j] and np.isfinite(x):
                continue
            text = "−∞" if x == float("-inf") else f"{x:.{digits}f}"
            rgb = cmap((x - lo) / span)[:3] if np.isfinite(x) else (1, 1, 1)
            light = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 0.55
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color="k" if light else "w")


def _ticks(ax: Any, row_labels: list[str], col_labels: list[str], r: int, c: int) -> None:
    for setter, labels, n in ((_set_y, row_labels, r), (_set_x, col_labels, c)):
        if len(labels) == n:
            step = max(1, -(-n // 32))
            setter(ax, list(range(0, n, step)), labels[::step])
        else:
            setter(ax, [], [])


def _set_x(ax: Any, ticks: list[int], labels: list[str]) -> None:
    ax.set_xticks(ticks, labels, rotation=90, fontsize=8)


def _set_y(ax: Any, ticks: list[int], labels: list[str]) -> None:
    ax.set_yticks(ticks, labels, fontsize=8)


def chart_figure(
    x: Sequence[float],
    series: Sequence[dict],
    *,
    title: str = "",
    x_label: str = "",
    y_label: str = "",
    x_range: Sequence[float] = (),
    y_range: Sequence[float] = (),
    x_log: bool = False,
    y_log: bool = False,
    x_ticks: Sequence[float] = (),
    x_tick_labels: Sequence[str] = (),
    y_ticks: Sequence[float] = (),
    markers: Sequence[dict] = (),
    bar_mode: str = "overlay",
    legend: str = "top-right",
    width: int = 380,
    height: int = 220,
) -> Figure:
    """Bars and lines over one shared x, as SeriesChart draws them (None values are gaps)."""
    fig = Figure(figsize=(width / 80, height / 80), layout="constrained")
    ax = fig.add_subplot()
    xs = np.asarray(x, dtype=float)
    bars = [s for s in series if s.get("kind") == "bar"]
    step = float(np.min(np.diff(xs))) if xs.size > 1 else 1.0
    group = bar_mode == "group" and len(bars) > 1
    handles = []  # a legend entry drawn as its series is: a swatch, a solid or dashed line
    for s in series:
        y = np.array([np.nan if v is None else v for v in s["values"]], dtype=float)
        if s.get("kind") == "bar":
            k, w = bars.index(s), 0.9 * step / (len(bars) if group else 1)
            left = xs - 0.45 * step + (k * w if group else 0.0)
            ax.bar(left, y, width=w, align="edge", color=s["color"], alpha=0.9 if group else 0.55)
        else:
            ax.plot(xs, y, "--" if s.get("dash") else "-", color=s["color"], lw=1.5)
        if s.get("kind") == "bar":
            alpha = 0.9 if group else 0.55
            handles.append(Patch(color=s["color"], alpha=alpha, label=s["name"]))
        else:
            style = "--" if s.get("dash") else "-"
            handles.append(Line2D([], [], ls=style, color=s["color"], lw=2, label=s["name"]))
    for m in markers:
        ax.axvline(m["x"], color="black", ls=":", lw=1)
        ax.annotate(m["label"], (m["x"], 0.02), xycoords=("data", "axes fraction"), fontsize=8)
    ax.set_xscale("log" if x_log else "linear")
    ax.set_yscale("log" if y_log else "linear")
    if x_range:
        ax.set_xlim(*x_range)
    if y_range:
        ax.set_ylim(*y_range)
    if x_ticks:
        ax.set_xticks(list(x_ticks), list(x_tick_labels) or [f"{t:g}" for t in x_ticks])
    if y_ticks:
        ax.set_yticks(list(y_ticks), [f"{t:g}" for t in y_ticks])
    ax.set(xlabel=x_label, ylabel=y_label)
    ax.set_title(_wrapped(title, width), fontsize=10)
    if series:
        where = "upper left" if legend == "top-left" else "best"
        ax.legend(handles=handles, fontsize=8, loc=where, handlelength=3)
    return fig


def _wrapped(title: str, width_px: int) -> str:
    """The title broken into lines that fit a chart `width_px` wide (about 6 px a character)."""
    return "\n".join(textwrap.wrap(title, max(20, width_px // 6))) if title else ""


def token_lines_figure(
    weights: Any,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    *,
    masked: Any = None,
    selected: int = -1,
    title: str = "",
    color: str = "#1f77b4",
) -> Figure:
    """Query tokens on the left, key tokens on the right, a line per weight (alpha = weight)."""
    w = to_numpy(weights)  # (Tq, Tk)
    tq, tk = w.shape
    m = np.broadcast_to(to_numpy(masked, bool), w.shape) if masked is not None else None
    n = max(tq, tk)
    rows = min(n, MAX_LINES)  # a long text is squeezed into MAX_LINES rows' height
    fig = Figure(figsize=(3.6, 0.3 * rows + 0.8), layout="constrained")
    pitch = 0.3 * rows / n * 72  # points between two tokens
    size = max(5.0, min(9.0, 0.9 * pitch))
    step = max(1, math.ceil(7 / pitch))  # label every step-th token, 7 points apart at least
    ax = fig.add_subplot()
    ys_q = np.linspace(1, 0, tq) if tq > 1 else np.array([0.5])
    ys_k = np.linspace(1, 0, tk) if tk > 1 else np.array([0.5])
    top = float(np.nanmax(np.where(np.isfinite(w), w, np.nan))) if np.isfinite(w).any() else 1.0
    for i in range(tq):
        if selected >= 0 and i != selected:
            continue
        for j in range(tk):
            x = float(w[i, j])
            if not np.isfinite(x) or x <= 0 or (m is not None and m[i, j]):
                continue
            a = min(1.0, x / top) if top > 0 else 0.0
            ax.plot([0, 1], [ys_q[i], ys_k[j]], color=color, alpha=a, lw=0.5 + 3 * a)
    for i, (y, s) in enumerate(zip(ys_q, query_tokens, strict=True)):
        if i % step == 0 or i == selected:
            ax.text(-0.02, y, s, ha="right", va="center", fontsize=size)
    for j, (y, s) in enumerate(zip(ys_k, key_tokens, strict=True)):
        if j % step == 0:
            ax.text(1.02, y, s, ha="left", va="center", fontsize=size)
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(-0.08, 1.08)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=10)
    return fig
