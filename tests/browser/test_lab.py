"""JupyterLab in headless Chromium: what a learner does, cell by cell and slider by slider."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from tests.browser import harness
from tests.browser.cases import ExplorerCase, explorer_params, notebook_params, operate_explorer
from tests.browser.conftest import HeldRun

if TYPE_CHECKING:
    from playwright.sync_api import Page

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


# Notebooks run ahead, beside another one: notebook -> what it showed. A test reads and drops
# its own entry. Two notebooks at once (two pages, two kernels) keep both cores busy: the
# lessons' runs are the suite's longest block.
_RUN_AHEAD: dict[str, LabRun] = {}


def _next_notebook(request: pytest.FixtureRequest) -> str | None:
    """The notebook of the next selected test of this function, if it has not run yet."""
    items = request.session.items
    for item in items[items.index(request.node) + 1 :]:
        if getattr(item, "originalname", None) != request.node.originalname:
            continue
        following = item.callspec.params["notebook"]
        if following not in _RUN_AHEAD and not item.get_closest_marker("skip"):
            return following
    return None


def _result(opened: harness.LabNotebook, log: harness.PageLog) -> LabRun:
    return LabRun(tuple(opened.error_cells()), tuple(opened.unrun_cells()), tuple(log.page_errors))


@pytest.mark.parametrize("notebook", notebook_params())
def test_notebook_runs_without_errors(lab, chromium, request, notebook: str) -> None:
    """Open, Kernel > Restart Kernel and Run All Cells, wait for idle: no cell shows an error.

    The next notebook of the list runs at the same time in a second page (its own workspace
    and kernel); its test then reads what it showed."""
    run = _RUN_AHEAD.pop(notebook, None)
    if run is not None:
        run.check(notebook)
        return
    partner = _next_notebook(request)
    context = chromium.new_context(viewport=harness.VIEWPORT) if partner else None
    try:
        beside = None
        if partner:
            page = context.new_page()
            partner_log = harness.PageLog.attach(page)
            try:  # its own workspace: two pages in one would reopen each other's notebook
                beside = harness.LabNotebook(page, lab.server, partner, "beside").open()
                beside.start_restart_and_run_all()
            except Exception as error:  # noqa: BLE001 - its own test reports it
                beside = None
                _RUN_AHEAD[partner] = LabRun(failure=str(error))
        opened = lab.open(notebook)
        opened.restart_and_run_all()
        run = _result(opened, lab.log)
        if beside is not None:
            try:
                beside.wait_until_done()
                _RUN_AHEAD[partner] = _result(beside, partner_log)
            except Exception as error:  # noqa: BLE001 - its own test reports it
                _RUN_AHEAD[partner] = LabRun(failure=str(error))
            if not _RUN_AHEAD[partner].clean:
                path = harness.SCREENSHOTS / "failures" / f"{partner.replace('/', '_')}.png"
                path.parent.mkdir(parents=True, exist_ok=True)
                beside.page.screenshot(path=str(path), full_page=True)
    finally:
        if context is not None:
            context.close()
    run.check(notebook)


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
