"""The layout's rules as tests: imports go downward only (import-linter contracts in pyproject).

The contracts: the core (attention's top-level modules) imports no subpackage and nothing of
the widget or plot libraries; widgets > exercises | explore > models > core; views never import
explorers; no cycles. These tests run them, show that they catch a broken rule, and keep the
list of core modules in the contract complete.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
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
