"""The course installed from its wheel (`pip install .`, not `-e`) finds every file it reads.

An editable install runs the checkout itself, so a package that reads a file outside its own
folder (`Path(__file__).parents[2] / "lessons" / ...`) works there and fails once installed
into site-packages. Here the wheel is built from a copy of the checkout, installed into a fresh
venv whose only link to this one is a .pth line naming its site-packages (for torch and the
other dependencies; .pth files of a directory named so are not run, so the course's editable
finder stays out), and a child process started there, isolated (-I) in an empty folder, runs
every code path that reads a packaged file. It first checks that it imported the wheel's copy.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("attention", "widgets")
EDITABLE_FINDER = "__editable___attention_course"

# Run inside the installed venv; prints what it read, as JSON, on its last line.
CHILD = """
import json, sys
import attention, widgets
from attention.models import interventions as iv
from attention.models.toy.checkpoints import SHIPPED_REVERSE, load_reverse_model
from widgets import classroom, registry
from widgets.views.style import STATIC, esm

pairs = iv.load_minimal_pairs()
model = load_reverse_model().model
template = classroom.TEMPLATE_ROOT / "voila" / "templates" / classroom.TEMPLATE
print(json.dumps({
    "sys_path": sys.path,
    "editable_modules": sorted(m for m in sys.modules if m.startswith("__editable__")),
    "files": {
        "attention": attention.__file__,
        "widgets": widgets.__file__,
        "pairs": str(iv.PAIRS_FILE),
        "checkpoint": str(SHIPPED_REVERSE),
        "explorers": str(registry.DATA),
        "template": str(template),
        "static": str(STATIC),
        "package_parent": str(classroom.PACKAGE_PARENT / "widgets" / "classroom" / "__init__.py"),
    },
    "pairs": [p.kind for p in pairs],
    "checkpoint_parameters": sum(p.numel() for p in model.parameters()),
    "explorers": [e.name for e in registry.EXPLORERS],
    "template_files": sorted(p.name for p in template.iterdir()),
    "static_files": sorted(p.name for p in STATIC.iterdir() if p.suffix in (".js", ".css")),
    "heatmap_esm": len(esm("heatmap")),
}))
"""


def _deps() -> set[str]:
    """This venv's site-packages folders: where the installed course finds its dependencies."""
    return {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}


def _tracked_data_files() -> set[str]:
    """Files of the two packages in git that are not Python: what package-data must ship."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the packages' tracked files are unknown")
    out = subprocess.run(
        ["git", "ls-files", "--", *PACKAGES], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return {name for name in out.stdout.splitlines() if not name.endswith(".py")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The course's wheel, built offline from a copy (the build writes build/ and egg-info)."""
    pytest.importorskip("setuptools", reason="building the wheel offline needs setuptools")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints")
    for name in PACKAGES:
        shutil.copytree(ROOT / name, src / name, ignore=junk)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["--quiet", "--wheel-dir", str(tmp / "dist"), str(src)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (built,) = (tmp / "dist").glob("attention_course-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> tuple[Path, dict]:
    """(the venv, what CHILD printed) with the wheel installed into a fresh venv."""
    tmp = tmp_path_factory.mktemp("installed")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # The dependencies: this venv's site-packages, named by a .pth line. Only the new venv's
    # own .pth files run, so this venv's __editable__ finder (the checkout) is never installed.
    (site / "course_dependencies.pth").write_text("".join(f"{d}\n" for d in sorted(_deps())))
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
        + ["--no-index", "--quiet", "--disable-pip-version-check", str(wheel)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    run = tmp / "cwd"  # an empty folder: nothing of the checkout is on the path by accident
    run.mkdir()
    out = subprocess.run(
        [str(python), "-I", "-c", CHILD],
        cwd=run,
        env={"PATH": "/usr/bin:/bin", "HOME": str(run), "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, f"the installed course failed:\n{out.stderr[-3000:]}"
    return venv, json.loads(out.stdout.splitlines()[-1])


def test_the_wheel_ships_every_file_of_the_packages(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(_tracked_data_files() - names)
    assert missing == [], f"not in the wheel: {missing}; add them to pyproject's package-data"


def test_the_installed_wheel_is_what_the_child_imported(installed):
    venv, got = installed
    assert got["editable_modules"] == [], "the checkout's editable finder was loaded"
    checkout = [p for p in got["sys_path"] if Path(p).is_relative_to(ROOT) and p not in _deps()]
    assert checkout == [], f"the checkout is on the installed course's path: {checkout}"
    for what, path in got["files"].items():
        assert Path(path).is_relative_to(venv), f"{what}: {path} is not in the venv {venv}"
        assert Path(path).exists(), f"{what}: {path} is not installed"


def test_the_installed_wheel_reads_its_data_files(installed):
    from attention.models.interventions import load_minimal_pairs
    from attention.models.toy.checkpoints import load_reverse_model
    from widgets import registry

    _, got = installed
    assert got["pairs"] == [p.kind for p in load_minimal_pairs()]
    model = load_reverse_model().model
    assert got["checkpoint_parameters"] == sum(p.numel() for p in model.parameters())
    assert got["explorers"] == [e.name for e in registry.EXPLORERS]
    template = ROOT / "widgets" / "share" / "voila" / "templates" / "classroom"
    assert got["template_files"] == sorted(p.name for p in template.iterdir())
    static = ROOT / "widgets" / "views" / "static"
    assert got["static_files"] == sorted(p.name for p in static.iterdir())
    assert got["heatmap_esm"] > 0
