"""One export protocol for every view: PNG and SVG rendered by matplotlib, CSV of the numbers.

A view (Heatmap, TokenLines, SeriesChart) mixes in `Exportable` and provides two methods:

    figure()     -> a matplotlib Figure of what the view shows (matplotlib imported only then)
    csv_table()  -> (header, rows): the numbers behind it, one row per cell or per x

so any view exports the same way, and an explorer exports by asking its views:

    view.export("exports", "weights")   # -> [exports/weights.png, .svg, .csv]

Nothing here imports matplotlib: a view that is only displayed never loads it.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .picture import Pictured

FORMATS = ("png", "svg", "csv")
DPI = 120


def check_formats(formats: Sequence[str]) -> tuple[str, ...]:
    """Raise ValueError for a format other than png, svg and csv."""
    unknown = set(formats) - set(FORMATS)
    if unknown:
        raise ValueError(f"formats: expected some of {FORMATS}, got {sorted(unknown)}")
    return tuple(formats)


def write_csv(path: str | Path, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> Path:
    """Write a header and rows as CSV (UTF-8, no blank lines between rows)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


class Exportable(Pictured):
    """Mixin: `export(folder, stem)` from the view's `figure()` and `csv_table()`.

    Displayed, a view also carries a static picture of itself (views/picture.py).
    """

    def figure(self) -> Any:
        """A matplotlib Figure of what the view shows."""
        raise NotImplementedError

    def csv_table(self) -> tuple[Sequence[str], list[Sequence[Any]]]:
        """(header, rows) of the numbers the view shows."""
        raise NotImplementedError

    def export(self, folder: str | Path, stem: str, formats: Sequence[str] = FORMATS) -> list[Path]:
        """Save the view as folder/stem.png, .svg and .csv (or the given formats)."""
        formats = check_formats(formats)
        folder = Path(folder)
        fig = self.figure() if {"png", "svg"} & set(formats) else None
        paths = []
        for fmt in formats:
            path = folder / f"{stem}.{fmt}"
            if fmt == "csv":
                write_csv(path, *self.csv_table())
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                fig.savefig(path, dpi=DPI)
            paths.append(path)
        return paths


def export_heatmap(
    view: Exportable, folder: str | Path, stem: str, formats: Sequence[str] = FORMATS
) -> list[Path]:
    """`view.export(folder, stem, formats)`: the name the course used before every view exported."""
    return view.export(folder, stem, formats)
