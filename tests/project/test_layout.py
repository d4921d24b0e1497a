"""The layout's rules as tests: imports go downward only (import-linter contracts in pyproject).

The contracts: the core (attention's top-level modules) imports no subpackage and nothing of
the widget or plot libraries; widgets > exercises | explore | experiments > models >
language | sandbox > core (siblings joined by | do not import each other); views never import
explorers; no cycles. These tests run them, show that they catch a broken rule, and keep the
list of core modules in the contract complete. Last, attention/explore holds the explorers'
modules and nothing else, and its public names are theirs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import attention.explore

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).parent / "lint-imports"


def _lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT), "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_the_import_contracts_hold():
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "BROKEN" not in out.stdout and "5 kept, 0 broken" in out.stdout


def test_every_core_module_is_bound_by_the_core_contract():
    core = {
        f"attention.{p.stem}" for p in (ROOT / "attention").glob("*.py") if p.stem != "__init__"
    }
    listed = set(_contracts()[0]["source_modules"])
    assert core - listed == set(), "add new core modules to the first import-linter contract"
    assert listed - core == {"attention"}


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("attention/masks.py", "from .models.toy import data", "The core"),
        ("attention/functional.py", "import matplotlib", "The core"),
        ("widgets/views/style.py", "from ..explorers import base", "Views draw"),
        ("attention/models/toy/data.py", "from ...explore import mask", "Layers"),
        ("attention/experiments/loss.py", "from ..explore import mask", "Layers"),
        ("attention/sandbox/limits.py", "from ..models import cache", "Layers"),
    ],
)
def test_a_broken_rule_is_caught(tmp_path, module, line, broken):
    for name in ("attention", "widgets"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("*.pt"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / module).open("a") as fh:
        fh.write(f"\n{line}  # noqa\n")
    out = _lint(tmp_path)
    assert out.returncode != 0
    assert any(broken in ln and "BROKEN" in ln for ln in out.stdout.splitlines()), out.stdout


def test_explore_holds_only_the_explorers_modules():
    registry = tomllib.loads((ROOT / "widgets" / "explorers.toml").read_text(encoding="utf-8"))
    stems = {e["stem"] for e in registry["explorer"]}
    assert set(attention.explore.pair_modules()) == stems, (
        "attention/explore/<stem>.py is an explorer's pure function; experiments go to "
        "attention/experiments/"
    )
    functions = {e["function"] for e in registry["explorer"]}
    assert functions <= set(attention.explore.__all__)


def test_explore_names_are_the_pair_modules_and_load_lazily():
    code = """
import importlib, sys
import attention.explore as E
from attention.explore import explore_mask
assert "attention.explore.model_view" not in sys.modules, "explore_mask imported model_view"
names = {}
for stem in E.pair_modules():
    module = importlib.import_module(f"attention.explore.{stem}")
    for name in module.__all__:
        assert getattr(E, name) is getattr(module, name), (stem, name)
        names[name] = stem
assert sorted(E.__all__) == sorted(["MAX_LEN", "MAX_WIDTH", "one_thread", *names])
assert len(E.__all__) == len(set(E.__all__))
assert "explore_rope" in dir(E)
print(len(names))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 100


def test_a_name_two_pair_modules_export_is_refused(tmp_path, monkeypatch):
    (tmp_path / "again.py").write_text('__all__ = ["explore_mask"]\nexplore_mask = None\n')
    monkeypatch.setattr(attention.explore, "__path__", [*attention.explore.__path__, str(tmp_path)])
    attention.explore._exports.cache_clear()
    try:
        with pytest.raises(
            ImportError, match="explore_mask is exported by both again.py and mask.py"
        ):
            attention.explore.__getattr__("explore_mask")
    finally:
        monkeypatch.undo()
        attention.explore._exports.cache_clear()
