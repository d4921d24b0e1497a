"""What the lock, pyproject, the Makefile and environment.yml say, read once: shared by
test_lock.py and test_repo2docker.py."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "requirements.lock"
PROJECT = "attention-course"

# conda-forge names of environment.yml -> PyPI names of the lock
CONDA_NAMES = {"pytorch-cpu": "torch", "matplotlib-base": "matplotlib"}


def read_lock(path: Path = LOCK) -> dict[str, str]:
    """Canonical name -> pinned version of every `name==version` line."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep, f"{path.name}: expected name==version, got {line!r}"
        pins[canonicalize_name(name)] = version.strip()
    return pins


def makefile_models() -> list[Requirement]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    match = re.search(r"^MODELS\s*\?=\s*(.+)$", text, re.M)
    assert match, "Makefile: no MODELS variable"
    return [Requirement(r) for r in match.group(1).split()]


def project_requirements(extra: str = "test") -> list[Requirement]:
    """The requirements of `attention-course[extra]`, self-references expanded."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    found: list[Requirement] = [Requirement(r) for r in project["dependencies"]]
    todo, seen = [extra], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in extras[name]:
            req = Requirement(text)
            if canonicalize_name(req.name) == PROJECT:
                todo += sorted(req.extras)
            else:
                found.append(req)
    return found


def environment_specs() -> dict[str, str]:
    """PyPI name -> version spec of each conda dependency in environment.yml."""
    specs = {}
    text = (REPO / "environment.yml").read_text(encoding="utf-8")
    for line in text.split("\ndependencies:", 1)[1].splitlines():
        match = re.match(r"^\s*-\s+([A-Za-z0-9_.-]+)\s*([<>=!~][^#]*)?", line)
        if not match or match.group(1) in {"python", "pip"}:
            continue
        name = CONDA_NAMES.get(match.group(1), match.group(1))
        specs[canonicalize_name(name)] = (match.group(2) or "").strip()
    return specs
