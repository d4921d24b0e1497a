"""Every explorer of the course: the one place that lists them, read from explorers.toml.

widgets/explorers.toml holds one [[explorer]] table per explorer (the fields of Entry below).
An entry names the explorer's class, the stem it shares on both sides (the pure function in
attention/explore/<stem>.py feeds the widget in widgets/explorers/<stem>.py), the function, the
lessons that build it, and what it shows. Read by `widgets` and `widgets.explorers` (their
public names), by widgets.explorers.base (each explorer's CSS class, export prefix and the
function its refresh computes), by the tests (parametrised over EXPLORERS; the principal panels
of tests/explorers/test_accessibility.py), by the classroom gallery lessons/explorers.ipynb
and the explorers of lessons/README.md's lesson rows (both written from it by `make gallery`;
a test checks they are current) and by the test that checks the lessons build theirs.

Adding an explorer: its pure function in attention/explore/<stem>.py, its explorer in
widgets/explorers/<stem>.py, one table in explorers.toml, and its lesson
(tests/explorers/test_registry.py adds a toy one exactly so).

This module imports nothing heavy (no torch, no ipywidgets; `explore_function` imports the
explore module when asked): the classroom server reads it.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Entry:
    """One explorer."""

    name: str  # its class, a public name of `widgets`
    stem: str  # attention/explore/<stem>.py feeds widgets/explorers/<stem>.py
    function: str  # the pure function in attention.explore.<stem>: params -> result (computed)
    lessons: tuple[int, ...]  # the lessons that build it (lessons/NN_*.ipynb)
    slug: str  # CSS class ac-<slug> on the explorer; prefix of its exported files
    title: str  # a heading in the gallery
    about: str  # what a learner sees and does (markdown, a few sentences)
    call: str = ""  # the gallery's constructor call; default: no arguments
    principal: str = ""  # words in the accessible name of its principal panel (a test checks)

    @property
    def gallery_call(self) -> str:
        return self.call or f"{self.name}()"


DATA = Path(__file__).with_name("explorers.toml")


def _load(path: Path = DATA) -> tuple[Entry, ...]:
    """The entries of explorers.toml, checked: every field named, the right types, no repeats."""
    fields = {f.name: f for f in dataclasses.fields(Entry)}
    required = {n for n, f in fields.items() if f.default is dataclasses.MISSING}
    entries: list[Entry] = []
    for i, table in enumerate(tomllib.loads(path.read_text(encoding="utf-8")).get("explorer", [])):
        where = f"{path.name}: explorer {i + 1} ({table.get('name', '?')})"
        if unknown := set(table) - set(fields):
            raise ValueError(
                f"{where}: unknown fields {sorted(unknown)}; expected {sorted(fields)}"
            )
        if missing := required - set(table):
            raise ValueError(f"{where}: missing fields {sorted(missing)}")
        lessons = table.get("lessons")
        if not (isinstance(lessons, list) and lessons and all(type(n) is int for n in lessons)):
            raise ValueError(
                f"{where}: lessons: expected a list of lesson numbers, got {lessons!r}"
            )
        if bad := [k for k, v in table.items() if k != "lessons" and not isinstance(v, str)]:
            raise ValueError(f"{where}: expected text for {bad}")
        entries.append(Entry(**{**table, "lessons": tuple(lessons)}))
    names = [e.name for e in entries]
    if repeated := sorted({n for n in names if names.count(n) > 1}):
        raise ValueError(f"{path.name}: {repeated} listed more than once")
    return tuple(entries)


EXPLORERS: tuple[Entry, ...] = _load()

# Public names of widgets.explorers that are not explorers of their own (not in explorers.toml).
OTHER_PUBLIC = {"Explorer": "base", "TrainingProgress": "training"}

_BY_NAME = {e.name: e for e in EXPLORERS}


def entry(name: str) -> Entry:
    """The registry line of the explorer class `name`."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"{name!r} is not in widgets/explorers.toml; add its table") from None


def slug_of(name: str) -> str:
    """The CSS class (without ac-) and export prefix of the explorer class `name`."""
    return entry(name).slug


def explore_function(name: str) -> Callable[[Any], Any]:
    """The pure function of the explorer class `name`: attention.explore.<stem>.<function>."""
    e = entry(name)
    return getattr(import_module(f"attention.explore.{e.stem}"), e.function)


def explorer_modules() -> dict[str, str]:
    """Public name of widgets.explorers -> its module (relative to widgets.explorers)."""
    names = {e.name: e.stem for e in EXPLORERS}
    return {**names, **OTHER_PUBLIC}


def register(new: Entry) -> None:
    """Add an entry at run time (a test's toy explorer); explorers.toml is the real way."""
    global EXPLORERS
    if new.name in _BY_NAME:
        raise ValueError(f"{new.name!r} is already registered")
    EXPLORERS = (*EXPLORERS, new)
    _BY_NAME[new.name] = new


def unregister(name: str) -> None:
    """Remove an entry added by `register`."""
    global EXPLORERS
    EXPLORERS = tuple(e for e in EXPLORERS if e.name != name)
    _BY_NAME.pop(name, None)


# --- the classroom gallery --------------------------------------------------------------------

GALLERY = Path(__file__).resolve().parent.parent / "lessons" / "explorers.ipynb"
GALLERY_INTRO = """# The explorers, one per cell

Every explorer of the course on one page, for a class or a quick look. Each is one line of code
and a live widget: drag a slider (or focus it and use the arrow keys) and the panels redraw in
the browser at once. After moving a control, `explorer.result` holds the numbers it shows.
`make classroom` serves this page with Voilà for a projector. This notebook is written from
widgets/explorers.toml (`make gallery`); edit that file, not the cells."""


def _variable(e: Entry) -> str:
    out = ""
    for i, ch in enumerate(e.name):
        out += ("_" if i and ch.isupper() else "") + ch.lower()
    return out


def gallery_cells() -> list[tuple[str, str]]:
    """The gallery notebook's cells as (cell_type, source), one markdown and code per entry."""
    cells = [("markdown", GALLERY_INTRO), ("code", "import widgets")]
    for e in EXPLORERS:
        lessons = ", ".join(str(n) for n in e.lessons)
        word = "lesson" if len(e.lessons) == 1 else "lessons"
        cells.append(("markdown", f"## {e.title} ({word} {lessons})\n\n{e.about}"))
        var = _variable(e)
        cells.append(("code", f"{var} = widgets.{e.gallery_call}\n{var}"))
    return cells


def gallery_notebook() -> dict:
    """The gallery as an nbformat 4 notebook (a plain dict, no outputs)."""
    cells = []
    for i, (kind, source) in enumerate(gallery_cells()):
        cell: dict = {"cell_type": kind, "id": f"cell-{i:02d}", "metadata": {}}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        cell["source"] = source.splitlines(keepends=True)  # as Jupyter saves it
        cells.append(cell)
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


# --- lessons/README.md's column "you explore with" -----------------------------------------

LESSONS_README = GALLERY.with_name("README.md")
_ROW = re.compile(r"\| (\d+) \|")
_NAMES = re.compile(r" *(`\w+`(?:, `\w+`)*)?(.*)", re.S)


def lessons_readme(text: str) -> str:
    """lessons/README.md's text with each lesson row's explorers written from the registry: the
    explorers whose `lessons` hold the row's number, then what the row says after them (rows of
    lessons without an explorer keep their own words)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        row = _ROW.match(line)
        names = [f"`{e.name}`" for e in EXPLORERS if row and int(row[1]) in e.lessons]
        if names:
            cells = line.split("|")
            cells[-3] = f" {', '.join(names)}{_NAMES.fullmatch(cells[-3])[2]}"
            lines[i] = "|".join(cells)
    return "".join(lines)


def write_gallery(path: Path = GALLERY) -> Path:
    """Write the gallery notebook (refusing to overwrite a file that is not the gallery)."""
    import json

    if path.exists():
        old = json.loads(path.read_text())
        first = old.get("cells", [{}])[0]
        if "".join(first.get("source", "")).splitlines()[:1] != GALLERY_INTRO.splitlines()[:1]:
            raise ValueError(f"{path}: not the explorers gallery; refusing to overwrite it")
    path.write_text(json.dumps(gallery_notebook(), indent=1, ensure_ascii=False) + "\n")
    return path


def write_lessons_readme(path: Path = LESSONS_README) -> Path:
    """Rewrite the explorers of lessons/README.md's lesson rows from the registry."""
    path.write_text(lessons_readme(path.read_text()))
    return path
