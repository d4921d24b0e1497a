"""Fixtures for the real-browser tests: one JupyterLab, one Voilà, one Chromium per session.

Every test here that drives Chromium is marked ``browser``. Without /usr/bin/chromium or
playwright they are all skipped with a message saying how to enable them (``python -m
harness.chromium``); ``pytest -m "not browser"`` leaves them out on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import harness
from harness.chromium import unavailable_reason

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    # Keep each phase's report on the test item, so a fixture can tell that the test failed.
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = harness.launch_browser(playwright)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.Server]:
    base = tmp_path_factory.mktemp("jupyterlab")
    server = harness.start_jupyterlab(harness.prepare_root(base / "root"), base / "state")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def voila_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.Server]:
    base = tmp_path_factory.mktemp("voila")
    server = harness.start_voila(harness.prepare_root(base / "root"), base / "state")
    yield server
    server.stop()


@dataclass
class BrowserPage:
    page: Page
    log: harness.PageLog


@pytest.fixture
def browser_page(chromium: Browser, request: pytest.FixtureRequest) -> Iterator[BrowserPage]:
    """A fresh page (own context) that records its requests; screenshot saved if the test fails."""
    context = chromium.new_context(viewport=harness.VIEWPORT)
    page = context.new_page()
    yield BrowserPage(page, harness.PageLog.attach(page))
    report = getattr(request.node, "report_call", None)
    # A page never navigated (the test failed before using it): no picture of a blank page.
    if report is not None and report.failed and page.url != "about:blank":
        path = harness.SCREENSHOTS / "failures" / f"{request.node.name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path), full_page=True)
    # Let Voilà's page send its kernel-shutdown beacon; JupyterLab kernels are shut down below.
    page.close(run_before_unload=True)
    context.close()


class HeldRun:
    """One page that has run a notebook, kept for the next test of the same notebook.

    The explorer cases of one notebook (five of the gallery's, two of after2024.ipynb's, two
    of interventions.ipynb's) act on different explorers, so they share one run of it instead
    of one each (about 10 s per run in JupyterLab, 8 s in Voilà). The page is dropped when the
    next test wants another notebook, when a test fails (after its screenshot: the next test
    starts afresh), and at the end of the module.
    """

    def __init__(self, chromium: Browser, after_drop: Callable[[], None] = lambda: None) -> None:
        self.chromium = chromium
        self.after_drop = after_drop  # e.g. shut the page's kernel down
        self.notebook: str | None = None
        self.held: BrowserPage | None = None

    def page_for(self, notebook: str, run: Callable[[Page], None]) -> BrowserPage:
        """The held page if it has run `notebook`; else a fresh page on which `run` runs it."""
        if self.held is not None and self.notebook == notebook:
            return self.held
        self.drop()
        context = self.chromium.new_context(viewport=harness.VIEWPORT)
        page = context.new_page()
        self.held, self.notebook = BrowserPage(page, harness.PageLog.attach(page)), notebook
        run(page)
        return self.held

    def drop(self, screenshot: Path | None = None) -> None:
        if self.held is None:
            return
        page, self.held, self.notebook = self.held.page, None, None
        try:
            if screenshot is not None:
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshot), full_page=True)
        finally:
            page.close(run_before_unload=True)  # Voilà's page sends its kernel-shutdown beacon
            page.context.close()
            self.after_drop()


@pytest.fixture(scope="module")
def held_runs(chromium: Browser) -> Iterator[HeldRun]:
    held = HeldRun(chromium)
    yield held
    held.drop()


@pytest.fixture
def held_run(held_runs: HeldRun, request: pytest.FixtureRequest) -> Iterator[HeldRun]:
    """The module's HeldRun; a failed test drops its page after a screenshot."""
    yield held_runs
    report = getattr(request.node, "report_call", None)
    if report is None or report.failed:
        held_runs.drop(harness.SCREENSHOTS / "failures" / f"{request.node.name}.png")


@dataclass
class Lab:
    """JupyterLab in the browser; `open` a notebook by its path under the served root."""

    server: harness.Server
    page: Page
    log: harness.PageLog

    def open(self, path: str) -> harness.LabNotebook:
        return harness.LabNotebook(self.page, self.server, path).open()


@pytest.fixture
def lab(lab_server: harness.Server, browser_page: BrowserPage) -> Iterator[Lab]:
    yield Lab(lab_server, browser_page.page, browser_page.log)
    lab_server.shutdown_kernels()  # each test's kernel, so they do not pile up


@dataclass
class Voila:
    """Voilà (through the classroom command) in the browser; `open` renders a notebook."""

    server: harness.Server
    page: Page
    log: harness.PageLog

    def open(self, path: str, ready_class: str | None = None) -> Page:
        harness.open_voila(self.page, self.server, path, ready_class)
        return self.page


@pytest.fixture
def voila(voila_server: harness.Server, browser_page: BrowserPage) -> Voila:
    return Voila(voila_server, browser_page.page, browser_page.log)
