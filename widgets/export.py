"""Export what a Heatmap shows: PNG and SVG rendered by matplotlib from the same numbers, CSV data.

    from widgets.export import export_heatmap
    export_heatmap(explorer.panels["weights"], "exports", "weights")
    # -> [exports/weights.png, exports/weights.svg, exports/weights.csv]

The figure uses the heatmap's colormap and colour limits; masked cells are hatched and rows that
may attend to nothing are grey, as in the browser. matplotlib is used without pyplot (no global
figure state), with the Agg renderer, so exporting works in any kernel and in tests.
The CSV is tidy: one line per cell with its panel, row, column, labels, value and mask flags;
-inf is written as "-inf" and every value reads back exactly as float32.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.colors import Colormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ._common import DEFAULT_CMAP, FULLY_MASKED_FACE, MASKED_FACE, MASKED_HATCH
from .heatmap import Heatmap, color_limits, to_numpy

FORMATS = ("png", "svg", "csv")
CSV_HEADER = (
    "panel",
    "panel_title",
    "row",
    "row_label",
    "col",
    "col_label",
    "value",
    "masked",
    "row_fully_masked",
)


def _cmap(name: str) -> Colormap:
    import matplotlib as mpl

    # non-finite cells get the masked face, then the hatching covers them
    return mpl.colormaps[name].with_extremes(bad=MASKED_FACE)


def _arrays(hm: Heatmap) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if hm.values is None:
        raise ValueError("heatmap: nothing to export; call set_data(values) first")
    v = hm.values  # (P, R, C)
    m = hm.masked if hm.masked is not None else np.zeros(v.shape, bool)
    f = hm.fully_masked if hm.fully_masked is not None else np.zeros(v.shape[:2], bool)
    return v, m, f


def heatmap_figure(hm: Heatmap) -> Figure:
    """A matplotlib Figure of what the Heatmap widget shows."""
    v, m, f = _arrays(hm)
    return render_figure(
        v,
        m,
        f,
        row_labels=hm.row_labels,
        col_labels=hm.col_labels,
        panel_titles=hm.panel_titles,
        title=hm.title,
        colormap=hm.colormap,
        limits=tuple(hm.limits),
        show_numbers=hm.show_numbers,
        digits=hm.digits,
        colorbar_label=hm.colorbar_label,
        columns=hm.columns,
    )


def render_figure(
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
) -> Figure:
    """Draw (R, C) or (P, R, C) values as heatmaps with hatched masked cells and grey rows.

    Shapes: masked broadcasts to values (True = masked); fully_masked is (P, R) or (R,).
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
    fig = Figure(figsize=(ncols * (c * cell + 1.2) + 1.2, nrows * (r * cell + 1.0) + 0.6))
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
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
        if show_numbers and max(r, c) <= 24:
            _numbers(ax, v[i], hidden, None if f is None else f[i], cmap, lo, hi, digits)
        _ticks(ax, list(row_labels), list(col_labels), r, c)
        if panel_titles:
            ax.set_title(panel_titles[i], fontsize=10)
    if image is not None:
        bar = fig.colorbar(image, ax=list(axes[:p]), shrink=0.8)
        if colorbar_label:
            bar.set_label(colorbar_label)
    legend = []
    if m is not None and m.any():
        legend.append(
            Patch(facecolor=MASKED_FACE, edgecolor=MASKED_HATCH, hatch="///", label="masked")
        )
    if f is not None and f.any():
        legend.append(Patch(facecolor=FULLY_MASKED_FACE, label="row attends to nothing"))
    if legend:
        fig.legend(handles=legend, loc="lower left", ncols=len(legend), frameon=False)
    if title:
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


def heatmap_rows(hm: Heatmap) -> list[tuple]:
    """One tuple per cell in CSV_HEADER order (values as Python floats, -inf kept)."""
    v, m, f = _arrays(hm)
    p, r, c = v.shape
    titles, rl, cl = hm.panel_titles, hm.row_labels, hm.col_labels
    rows = []
    for k in range(p):
        for i in range(r):
            for j in range(c):
                rows.append(
                    (
                        k,
                        titles[k] if len(titles) == p else "",
                        i,
                        rl[i] if len(rl) == r else "",
                        j,
                        cl[j] if len(cl) == c else "",
                        float(v[k, i, j]),
                        int(m[k, i, j]),
                        int(f[k, i]),
                    )
                )
    return rows


def save_csv(hm: Heatmap, path: str | Path) -> Path:
    """Write the heatmap's numbers as tidy CSV (see CSV_HEADER)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(CSV_HEADER)
        writer.writerows(heatmap_rows(hm))
    return path


def save_figure(hm: Heatmap, path: str | Path) -> Path:
    """Render the heatmap with matplotlib to PNG or SVG (chosen by the file's suffix)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    heatmap_figure(hm).savefig(path, dpi=120)
    return path


def export_heatmap(
    hm: Heatmap, folder: str | Path, stem: str, formats: Sequence[str] = FORMATS
) -> list[Path]:
    """Save the heatmap as folder/stem.png, .svg and .csv (or the given formats)."""
    unknown = set(formats) - set(FORMATS)
    if unknown:
        raise ValueError(f"formats: expected some of {FORMATS}, got {sorted(unknown)}")
    folder = Path(folder)
    fig = heatmap_figure(hm) if {"png", "svg"} & set(formats) else None
    paths = []
    for fmt in formats:
        path = folder / f"{stem}.{fmt}"
        if fmt == "csv":
            save_csv(hm, path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(path, dpi=120)
        paths.append(path)
    return paths
