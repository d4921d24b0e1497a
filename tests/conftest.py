"""Keep the suite's records out of the home; start the static site's build early.

Every checker verdict appends a record to the learner's folder (attention/exercises/records.py),
~/.attention-course unless ATTENTION_COURSE_RECORDS names another: pytest_configure points it at
a temporary folder of this session, before any test runs a checker and before nbval, the site
build or a browser test starts a kernel (they inherit the variable), and removes it at the end.

The site build:

tests/site/test_site.py checks a site built from every lesson, and building it executes each lesson
in a kernel: minutes. Much of the suite keeps only one of the machine's two cores busy (pytest
itself, or the one kernel nbval drives), so the build starts right after collection, in a
background process of its own (`python -m site_builder`, one kernel at a time, one torch
thread, at a lower priority than the tests); test_site's checks are moved to the end of the
run, and its `built` fixture waits for the build and reads its JSON report. Measured on fresh
clones: started at collection, pytest took 22 min 49 s; started after the browser tests (which
keep both cores busy), 23 min 45 s, with three fewer lessons re-run by keyboard cases. Run on
its own (`pytest tests/site/test_site.py`) the build is the same and starts at once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from attention.explore import one_thread

REPO = Path(__file__).resolve().parents[1]
SITE_TESTS = "test_site.py"
CELL_TIMEOUT_S = 300  # per cell: a lesson that hangs fails the build, it does not stall it
BUILD_TIMEOUT_S = 60 * 60  # the whole build, at most (a few minutes normally)
NICENESS = 10  # the tests in the foreground come first; the build takes the idle core
# The Chinese pages built with the English site (into site/zh/): a few, for the language switch
# and the Chinese chrome; `make site` builds them all
ZH_SITE = {"04_scaled_dot_product.ipynb"}

_BUILD = pytest.StashKey["SiteBuild"]()
_RECORDS = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    from attention.exercises.records import RECORDS_ENV

    folder = Path(tempfile.mkdtemp(prefix="course-records-test-"))
    config.stash[_RECORDS] = folder
    os.environ[RECORDS_ENV] = str(folder)  # not the home of whoever runs the suite


@dataclass
class SiteBuild:
    """The background build: its process, where it writes, and its log."""

    process: subprocess.Popen
    folder: Path  # holds site/, report.json and build.log
    started: float

    @property
    def out(self) -> Path:
        return self.folder / "site"

    def log_tail(self, chars: int = 3000) -> str:
        path = self.folder / "build.log"
        return path.read_text(encoding="utf-8", errors="replace")[-chars:] if path.exists() else ""

    def wait(self) -> tuple[Path, list[dict]]:
        """Wait for the build; its site folder and its reports (one dict per page)."""
        try:
            code = self.process.wait(timeout=max(1.0, BUILD_TIMEOUT_S - self.elapsed()))
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"the site build ran past {BUILD_TIMEOUT_S} s; its log:\n{self.log_tail()}")
        report = self.folder / "report.json"
        if code not in (0, 1) or not report.is_file():  # 1: built, with problems reported
            pytest.fail(f"the site build failed (exit {code}); its log:\n{self.log_tail()}")
        return self.out, json.loads(report.read_text(encoding="utf-8"))

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def stop(self) -> None:
        """End the build and the kernels it started (its own process group)."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.process.pid, signal.SIGKILL)


def start_site_build() -> SiteBuild:
    folder = Path(tempfile.mkdtemp(prefix="course-site-test-"))
    command = [
        sys.executable, "-m", "site_builder", "--out", str(folder / "site"), "--jobs", "1",
        "--timeout", str(CELL_TIMEOUT_S), "--report", str(folder / "report.json"),
        "--lang", "both", "--zh-notebooks", ",".join(sorted(ZH_SITE)),
    ]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    with open(folder / "build.log", "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a process group: stop() ends its kernels with it
            preexec_fn=lambda: os.nice(NICENESS),  # at collection: no threads to upset yet
        )
    return SiteBuild(process, folder, time.monotonic())


def _checks_the_site(item: pytest.Item) -> bool:
    return Path(item.path).name == SITE_TESTS and "built" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    site = [item for item in items if _checks_the_site(item)]
    for item in site:  # last: the build has the whole run to finish in
        items.remove(item)
    items.extend(site)


def pytest_collection_finish(session: pytest.Session) -> None:
    wanted = any(map(_checks_the_site, session.items))  # what -k and -m left
    if wanted and not session.config.option.collectonly:
        session.config.stash[_BUILD] = start_site_build()


def pytest_sessionfinish(session: pytest.Session) -> None:
    build = session.config.stash.get(_BUILD, None)
    if build is not None:
        build.stop()
        shutil.rmtree(build.folder, ignore_errors=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_RECORDS, None)
    if folder is not None:  # made by pytest_configure for this session only
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def site_build(request: pytest.FixtureRequest) -> SiteBuild:
    """The build started after collection (or now, if collection did not start one)."""
    build = request.config.stash.get(_BUILD, None)
    if build is None:
        build = request.config.stash[_BUILD] = start_site_build()
    return build


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a module (`pytestmark = pytest.mark.usefixtures(...)`): a forward
    pass or decoding is many small ops, and on a busy 2-core machine a second thread mostly
    waits for the first (generation ran 5x slower with two)."""
    with one_thread():
        yield
