"""repo2docker's files (environment.yml, postBuild) build the students' image the lock describes.

Zero to JupyterHub and Binder build the course's image with repo2docker from these two files;
tests/project/test_lock.py checks that environment.yml's ranges hold the lock's major versions.
Here: the image holds everything a student's server runs under a hub, on the lock's Python;
postBuild installs nothing unpinned or off the lock and gives the image the students' server
settings (hub/singleuser/jupyter_server_config.py), which say what the hub test relies on; and the
chart's config.yaml agrees with the hub of hub/ on the memory budget, the culler and the
landing page.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
import yaml
from packaging.utils import canonicalize_name
from traitlets.config.loader import PyFileConfigLoader

from hub.students import SERVER_CONFIG, install_server_config
from tests.project.lockfile import (
    CONDA_NAMES,
    environment_specs,
    makefile_models,
    project_requirements,
    read_lock,
)

REPO = Path(__file__).resolve().parents[2]
# The hub's own side (its proxy, its culler service) runs beside the hub, not in the image.
HUB_SIDE = {"configurable-http-proxy", "jupyterhub-idle-culler"}
PYPI_NAMES = {pypi: conda for conda, pypi in CONDA_NAMES.items()}


def test_environment_yml_holds_what_a_students_server_runs() -> None:
    specs = environment_specs()
    needed = {
        canonicalize_name(r.name)
        for r in project_requirements("hub")
        if canonicalize_name(r.name) not in HUB_SIDE
    }
    assert {"jupyterhub", "nbgitpuller", "voila", "jupyterlab", "torch"} <= needed
    postbuild = (REPO / "postBuild").read_text(encoding="utf-8")
    pip_pinned = {canonicalize_name(n) for n in re.findall(r"([A-Za-z0-9_.-]+)==", postbuild)}
    missing = sorted(PYPI_NAMES.get(name, name) for name in needed - set(specs) - pip_pinned)
    assert missing == [], (
        f"neither environment.yml nor postBuild (pinned, from PyPI) installs {missing}, "
        "which a student's server needs"
    )


def test_environment_yml_uses_the_locks_python() -> None:
    header = (REPO / "requirements.lock").read_text(encoding="utf-8").split("\n", 3)[:3]
    locked = re.search(r"\(Python (\d+)\.(\d+)\.\d+\)", " ".join(header))
    assert locked, f"requirements.lock: expected '(Python X.Y.Z)' in its header, got {header}"
    text = (REPO / "environment.yml").read_text(encoding="utf-8")
    python = re.search(r"^\s*-\s+python=(\d+)\.(\d+)\s*$", text, re.M)
    assert python, "environment.yml: expected a line '- python=X.Y'"
    assert python.groups() == locked.groups()


def test_postbuild_is_strict_and_installs_only_locked_pins() -> None:
    path = REPO / "postBuild"
    text = path.read_text(encoding="utf-8")
    assert path.stat().st_mode & stat.S_IXUSR, "repo2docker runs postBuild only if executable"
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text  # a failed step fails the build
    pins = read_lock()
    models = {canonicalize_name(r.name): str(r.specifier)[2:] for r in makefile_models()}
    installs = [line for line in text.splitlines() if re.search(r"\bpip install\b", line)]
    assert installs
    for line in installs:
        assert "--no-deps" in line, f"postBuild: {line!r} lets pip replace conda's packages"
        for name, version in re.findall(r"([A-Za-z0-9_.-]+)==([^\s]+)", line):
            name = canonicalize_name(name)
            assert version == pins.get(name, models.get(name)), (
                f"postBuild pins {name}=={version}; the lock or the Makefile's MODELS say "
                f"{pins.get(name, models.get(name))}"
            )
    assert "python -m hub install-server-config" in text


def test_the_server_settings_go_into_the_image_and_never_over_another_file(tmp_path) -> None:
    written = install_server_config(tmp_path)
    assert written == tmp_path / "etc" / "jupyter" / "jupyter_server_config.py"
    assert written.read_text(encoding="utf-8") == SERVER_CONFIG.read_text(encoding="utf-8")
    assert install_server_config(tmp_path) == written  # the same file again: nothing to do

    written.write_text("c.ServerApp.port = 9999\n", encoding="utf-8")  # somebody's own
    with pytest.raises(FileExistsError, match="differs from .*not overwritten"):
        install_server_config(tmp_path)
    assert written.read_text(encoding="utf-8") == "c.ServerApp.port = 9999\n"


def _server_config(monkeypatch, **env: str):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("JUPYTER_PATH", "/somewhere/else")
    loader = PyFileConfigLoader(SERVER_CONFIG.name, path=str(SERVER_CONFIG.parent))
    return loader.load_config()


def test_the_server_settings_keep_voila_on_the_machine_and_cull_idle_kernels(monkeypatch):
    from widgets.classroom import TEMPLATE_ROOT

    config = _server_config(monkeypatch)
    # the string "null", not None: None breaks Notebook 7's page handler
    assert config.ServerApp.tornado_settings == {"mathjax_url": "null", "mathjax_config": "null"}
    assert config.VoilaConfiguration.template == "classroom"
    assert config.VoilaExporter.filters["course_script"] == "widgets.classroom.course_script"
    assert os.environ["JUPYTER_PATH"].split(os.pathsep) == [str(TEMPLATE_ROOT), "/somewhere/else"]
    kernels = config.MappingKernelManager
    assert (kernels.cull_idle_timeout, kernels.cull_interval) == (600, 60)
    assert kernels.cull_connected is False and kernels.cull_busy is False

    config = _server_config(
        monkeypatch, ATTENTION_KERNEL_CULL_S="20", ATTENTION_KERNEL_CULL_EVERY_S="5"
    )
    assert (
        config.MappingKernelManager.cull_idle_timeout,
        config.MappingKernelManager.cull_interval,
    ) == (20, 5)


def test_the_charts_config_agrees_with_the_hub_on_one_machine() -> None:
    chart = yaml.safe_load((REPO / "hub" / "config.yaml").read_text(encoding="utf-8"))
    hub_config = (REPO / "hub" / "jupyterhub_config.py").read_text(encoding="utf-8")
    budget = re.search(r'"ATTENTION_STUDENT_BUDGET_MB", "(\d+)"', hub_config)
    assert budget, "hub/jupyterhub_config.py: expected STUDENT_BUDGET_MB from the environment"

    single = chart["singleuser"]
    limit = single["memory"]["limit"]
    assert limit == f"{int(budget.group(1)) // 1024}G", "the per-student budgets differ"
    guarantee = single["memory"]["guarantee"]
    assert float(guarantee.rstrip("G")) < float(limit.rstrip("G"))
    default_url = re.search(r'c\.Spawner\.default_url = "([^"]+)"', hub_config).group(1)
    assert single["defaultUrl"] == default_url
    # the lessons reach a new home without writing over anything the student has
    start = " ".join(single["lifecycleHooks"]["postStart"]["exec"]["command"])
    assert "test -e" in start and "cp -r" in start
    assert chart["cull"]["enabled"] is True
    assert chart["scheduling"]["userPlaceholder"]["enabled"] is True
