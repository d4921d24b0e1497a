"""JupyterLab in headless Chromium: what a learner does, cell by cell and slider by slider."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import harness
from tests.browser.cases import ExplorerCase, explorer_params, notebook_params, operate_explorer
from tests.browser.conftest import HeldRun

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser


@dataclass(frozen=True)
class LabRun:
    """What a notebook showed after Restart Kernel and Run All Cells (or why it could not)."""

    errors: tuple[harness.CellError, ...] = ()
    unrun: tuple[int, ...] = ()
    page_errors: tuple[str, ...] = ()
    failure: str | None = None  # the run itself failed (a timeout): the message

    @property
    def clean(self) -> bool:
        return self == LabRun()

    def check(self, notebook: str) -> None:
        assert self.failure is None, f"{notebook}: {self.failure}"
        assert not self.errors, f"{notebook}: " + "; ".join(map(str, self.errors))
        assert self.unrun == (), f"{notebook}: cells did not run"
        assert self.page_errors == (), f"{notebook}: uncaught errors in the page"


@dataclass
class _Running:
    """A notebook running in a page of its own (its own workspace and kernel)."""

    page: Page
    log: harness.PageLog
    opened: harness.LabNotebook | None = None
    failure: str | None = None  # it could not even be opened or started: the message


# Notebooks running ahead of their tests, two at a time to keep both cores busy (the lessons'
# runs are the suite's longest block): when a test's own notebook is done, the next one starts,
# so a long lesson does not hold a core idle the way fixed pairs did.
IN_FLIGHT = 2
_RUNNING: dict[str, _Running] = {}


def _start(chromium: Browser, server: harness.Server, notebook: str) -> None:
    page = chromium.new_context(viewport=harness.VIEWPORT).new_page()
    running = _RUNNING[notebook] = _Running(page, harness.PageLog.attach(page))
    workspace = "run-" + re.sub(r"[^A-Za-z0-9]+", "-", notebook)  # two pages, two workspaces
    try:
        running.opened = harness.LabNotebook(page, server, notebook, workspace).open()
        running.opened.start_restart_and_run_all()
    except Exception as error:  # noqa: BLE001 - the notebook's own test reports it
        running.failure = str(error)


def _finish(server: harness.Server, notebook: str, screenshot: Path) -> LabRun:
    """Wait for the notebook's run; what it showed; its page closed and its kernel shut down
    (the other running notebook's are left alone). A screenshot if anything went wrong."""
    running = _RUNNING.pop(notebook)
    try:
        run = LabRun(failure=running.failure)
        if running.opened is not None:
            try:
                running.opened.wait_until_done()
                run = LabRun(
                    tuple(running.opened.error_cells()),
                    tuple(running.opened.unrun_cells()),
                    tuple(running.log.page_errors),
                )
            except Exception as error:  # noqa: BLE001 - reported by the check below
                run = LabRun(failure=str(error))
        if not run.clean:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            running.page.screenshot(path=str(screenshot), full_page=True)
    finally:
        running.page.context.close()
        server.shutdown_session(notebook)
    return run


def _following(request: pytest.FixtureRequest) -> Iterator[str]:
    """The notebooks of the next selected tests of this function, in order."""
    items = request.session.items
    for item in items[items.index(request.node) + 1 :]:
        if getattr(item, "originalname", None) == request.node.originalname:
            if not item.get_closest_marker("skip"):
                yield item.callspec.params["notebook"]


@pytest.fixture(scope="module")
def running_notebooks(lab_server: harness.Server) -> Iterator[dict[str, _Running]]:
    """Pages still running when the module ends (a test stopped early): closed, kernels too."""
    yield _RUNNING
    for running in _RUNNING.values():
        running.page.context.close()
    _RUNNING.clear()
    lab_server.shutdown_kernels()


@pytest.mark.parametrize("notebook", notebook_params())
def test_notebook_runs_without_errors(
    lab_server: harness.Server, chromium: Browser, running_notebooks, request, notebook: str
) -> None:
    """Open, Kernel > Restart Kernel and Run All Cells, wait for idle: no cell shows an error.

    The next notebooks of the list start meanwhile, in pages of their own (IN_FLIGHT at once);
    each one's test then waits for what it showed."""
    if notebook not in _RUNNING:
        _start(chromium, lab_server, notebook)
    for following in _following(request):
        if len(_RUNNING) >= IN_FLIGHT:
            break
        if following not in _RUNNING:
            _start(chromium, lab_server, following)
    shot = harness.SCREENSHOTS / "failures" / f"{request.node.name}.png"
    _finish(lab_server, notebook, shot).check(notebook)


@pytest.fixture(scope="module")
def held_runs(chromium, lab_server: harness.Server) -> Iterator[HeldRun]:
    """Cases of one notebook share its run; its kernel is shut down when its page is dropped."""
    held = HeldRun(chromium, after_drop=lab_server.shutdown_kernels)
    yield held
    held.drop()


@pytest.mark.parametrize("case", explorer_params())
def test_explorer_responds_to_keyboard_in_lab(
    lab_server: harness.Server, held_run: HeldRun, case: ExplorerCase
) -> None:
    """Act on a control: the figure's pixels change and the readout follows the control."""

    def run(page: Page) -> None:  # its own workspace: the next tests' pages use the default
        opened = harness.LabNotebook(page, lab_server, case.notebook, "explorers").open()
        opened.run_all()
        errors = opened.error_cells()
        assert not errors, f"{case.notebook}: " + "; ".join(map(str, errors))

    held = held_run.page_for(case.notebook, run)

    operate_explorer(held.page, case, f"lab-{case.id}")

    assert held.log.page_errors == [], f"{case.id}: uncaught errors in the page"
