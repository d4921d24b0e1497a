"""widgets/registry.py is the one list of explorers: everything that lists them reads it.

Checked here: every entry resolves (its class from `widgets` and `widgets.explorers`, its
module widgets/explorers/<stem>.py, its pure function in attention/explore/<stem>.py), every
Explorer subclass of the package is registered, the gallery notebook is the one the registry
writes, lessons/README.md and the lessons name the explorers where the registry says, and every
explorer keeps the explorer contract (its declared controls read back into its params). Last, a
toy explorer added in a test by its two files, one registry table and its lesson gets all of that.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import sys
from pathlib import Path

import pytest

import attention.explore
import widgets
import widgets.explorers
from tests.explorers.contract import check_contract
from widgets import registry
from widgets.explorers.base import Explorer

ROOT = Path(__file__).resolve().parents[2]
LESSONS = ROOT / "lessons"
ENTRIES = [pytest.param(e, id=e.name) for e in registry.EXPLORERS]


def check_entry(e: registry.Entry) -> None:
    """The registry line's names resolve to what it says."""
    cls = getattr(widgets, e.name)
    assert getattr(widgets.explorers, e.name) is cls
    assert cls.__module__ == f"widgets.explorers.{e.stem}", (e.name, cls.__module__)
    assert issubclass(cls, Explorer), e.name
    explore = importlib.import_module(f"attention.explore.{e.stem}")
    assert callable(getattr(explore, e.function)), f"attention.explore.{e.stem}.{e.function}"
    assert registry.explore_function(e.name) is getattr(explore, e.function)  # what it computes
    assert re.fullmatch(r"[a-z][a-z0-9-]*", e.slug), e.slug
    assert e.title and e.about, e.name


@pytest.mark.parametrize("e", ENTRIES)
def test_entry_resolves(e: registry.Entry) -> None:
    check_entry(e)
    assert e.function in attention.explore.__all__, (
        f"attention.explore does not export {e.function}"
    )


@pytest.mark.parametrize("e", ENTRIES)
def test_explorer_keeps_the_contract(e: registry.Entry) -> None:
    explorer = eval(f"widgets.{e.gallery_call}", {"widgets": widgets})  # noqa: S307 - our own
    check_contract(explorer)


def test_every_explorer_class_is_registered() -> None:
    found = set()
    for info in pkgutil.iter_modules(widgets.explorers.__path__):
        module = importlib.import_module(f"widgets.explorers.{info.name}")
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, Explorer) and name[0] != "_":
                if obj.__module__ == module.__name__ and obj is not Explorer:
                    found.add(name)
    assert found == {e.name for e in registry.EXPLORERS}


def test_public_names_come_from_the_registry() -> None:
    names = {e.name for e in registry.EXPLORERS}
    assert names <= set(widgets.__all__) and names <= set(widgets.explorers.__all__)
    assert set(widgets.explorers.__all__) == names | set(registry.OTHER_PUBLIC)
    with pytest.raises(KeyError, match="'NoSuchExplorer' is not in widgets/explorers.toml"):
        registry.entry("NoSuchExplorer")


def test_gallery_is_written_from_the_registry() -> None:
    nb = json.loads(registry.GALLERY.read_text())
    cells = [(c["cell_type"], "".join(c["source"])) for c in nb["cells"]]
    assert cells == registry.gallery_cells(), "run: make gallery"
    assert all(c.get("outputs", []) == [] for c in nb["cells"])


def test_write_gallery_refuses_to_overwrite_another_notebook(tmp_path: Path) -> None:
    other = tmp_path / "mine.ipynb"
    other.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": "# my notes"}]}))
    with pytest.raises(ValueError, match="not the explorers gallery; refusing to overwrite"):
        registry.write_gallery(other)
    assert "my notes" in other.read_text()
    fresh = registry.write_gallery(tmp_path / "gallery.ipynb")
    assert json.loads(fresh.read_text())["cells"][0]["source"][0].startswith("# The explorers")


def test_lessons_readme_rows_are_written_from_the_registry() -> None:
    text = registry.LESSONS_README.read_text()
    assert text == registry.lessons_readme(text), "run: make gallery"
    rows = (
        "| 8 | [Heads](08.ipynb) | split | `OldExplorer`: drag a head | 45 min |\n"
        "| 10 | [Block](10.ipynb) | norms | a `BatchNorm` slider | 40 min |\n"
    )
    assert registry.lessons_readme(rows) == (  # lesson 8's from the registry, 10's its own
        "| 8 | [Heads](08.ipynb) | split | `AttentionExplorer`, `HeadsExplorer`: drag a head | "
        "45 min |\n| 10 | [Block](10.ipynb) | norms | a `BatchNorm` slider | 40 min |\n"
    )


def check_lessons_build(e: registry.Entry, lessons: Path = LESSONS) -> None:
    """Each lesson of the entry builds the explorer in a code cell."""
    for number in e.lessons:
        (path,) = lessons.glob(f"{number:02d}_*.ipynb")
        source = "\n".join(  # a cell may end without a newline: keep cells apart
            "".join(c["source"]) for c in json.loads(path.read_text())["cells"]
            if c["cell_type"] == "code"
        )  # fmt: skip
        assert re.search(rf"\b{e.name}\(", source), f"{path.name} does not build {e.name}"


@pytest.mark.parametrize("e", ENTRIES)
def test_each_lesson_builds_its_explorers(e: registry.Entry) -> None:
    check_lessons_build(e)


# --- adding an explorer: two files, one registry table and its lesson ------------------------
# The toy explorer's class names neither its function nor its Export list: its refresh computes
# what its TOML table names (explore_toy), and Export saves the panel it declared.

TOY_EXPLORE = """
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ToyParams:
    n: int = 3
    sharp: bool = False


@dataclass(frozen=True)
class ToyExploration:
    weights: torch.Tensor  # (1, 1, n)


def explore_toy(params: ToyParams) -> ToyExploration:
    scores = torch.arange(params.n, dtype=torch.float32) * (4.0 if params.sharp else 1.0)
    return ToyExploration(torch.softmax(scores, dim=0)[None, None])
"""

TOY_EXPLORER = """
from attention.explore.toy import ToyParams
from widgets.explorers.base import Explorer
from widgets.explorers.controls import check, slider
from widgets.views import Heatmap


class ToyExplorer(Explorer):
    CONTROLS = (slider("n", 1, 8), check("sharp"))

    def __init__(self, **settings):
        start = ToyParams(**settings)
        self.map = self.panel("weights", Heatmap(title="toy weights"))
        super().__init__(controls=self.declare(start), principal=self.map, body=[])
        self.refresh()

    def _draw(self, result):
        self.map.set_data(result.weights[0])
"""


TOY_TABLE = """
[[explorer]]
name = "ToyExplorer"
stem = "toy"
function = "explore_toy"
lessons = [4]
slug = "toy-explorer"
title = "A toy"
about = "One slider, one heatmap."
"""


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            TOY_TABLE.replace("slug", "slog"),
            r"explorer 1 \(ToyExplorer\): unknown fields \['slog'\]",
        ),
        (TOY_TABLE.replace('title = "A toy"', ""), r"missing fields \['title'\]"),
        (TOY_TABLE.replace("[4]", "4"), "lessons: expected a list of lesson numbers, got 4"),
        (TOY_TABLE.replace('"toy"', "3"), r"expected text for \['stem'\]"),
        (TOY_TABLE * 2, r"\['ToyExplorer'\] listed more than once"),
    ],
)
def test_a_damaged_registry_is_refused_by_name(tmp_path: Path, table: str, message: str) -> None:
    data = tmp_path / "explorers.toml"
    data.write_text(table, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        registry._load(data)


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Two new files (the pure function, the explorer) and one table of explorers.toml."""
    (tmp_path / "explore").mkdir()
    (tmp_path / "explorers").mkdir()
    (tmp_path / "explore" / "toy.py").write_text(TOY_EXPLORE)
    (tmp_path / "explorers" / "toy.py").write_text(TOY_EXPLORER)
    monkeypatch.setattr(attention.explore, "__path__", [*attention.explore.__path__,
                                                       str(tmp_path / "explore")])  # fmt: skip
    monkeypatch.setattr(widgets.explorers, "__path__", [*widgets.explorers.__path__,
                                                       str(tmp_path / "explorers")])  # fmt: skip
    data = tmp_path / "explorers.toml"  # the real registry plus one table
    data.write_text(registry.DATA.read_text(encoding="utf-8") + TOY_TABLE, encoding="utf-8")
    *_, entry = registry._load(data)
    registry.register(entry)
    yield entry
    registry.unregister("ToyExplorer")
    for module in (widgets, widgets.explorers):
        module.__dict__.pop("ToyExplorer", None)
    for name in ("attention.explore.toy", "widgets.explorers.toy"):
        sys.modules.pop(name, None)


def test_a_toy_explorer_needs_two_files_and_one_registry_table(
    toy: registry.Entry, tmp_path: Path
) -> None:
    check_entry(toy)
    assert "ToyExplorer" in dir(widgets) and "ToyExplorer" in dir(widgets.explorers)
    explorer = widgets.ToyExplorer(n=4)
    check_contract(explorer)
    explorer.sharp.value = True
    assert explorer.params.sharp is True
    assert "_compute" not in vars(type(explorer))  # the registry's function computes
    expected = importlib.import_module("attention.explore.toy").explore_toy(explorer.params)
    assert bool((explorer.result.weights == expected.weights).all())
    assert explorer._views() == {"weights": explorer.map}
    names = sorted(p.name for p in explorer.export(tmp_path / "exports"))
    assert names == [f"toy-explorer_weights.{ext}" for ext in ("csv", "png", "svg")]
    lesson = {"cells": [{"cell_type": "code", "source": ["widgets.ToyExplorer(n=3)"]}]}
    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "04_toy.ipynb").write_text(json.dumps(lesson))  # ... and its lesson
    check_lessons_build(toy, tmp_path / "lessons")
    assert (
        "code",
        "toy_explorer = widgets.ToyExplorer()\ntoy_explorer",
    ) in registry.gallery_cells()
    with pytest.raises(ValueError, match="n: expected a value in \\[1, 8\\], got 9"):
        widgets.ToyExplorer(n=9)  # the slider would clamp it: refused, with the range
    with pytest.raises(ValueError, match="'ToyExplorer' is already registered"):
        registry.register(toy)
