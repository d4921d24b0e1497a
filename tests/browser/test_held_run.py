"""HeldRun's bookkeeping, with a fake browser (no Chromium): which test reuses a run, which
starts afresh, and that a failing screenshot still closes the page and frees its kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import HeldRun


class FakePage:
    def __init__(self, context: FakeContext, fail_screenshot: bool) -> None:
        self.context, self.url, self.closed = context, "about:blank", False
        self.fail_screenshot = fail_screenshot
        self.shots: list[str] = []

    def on(self, event: str, handler: object) -> None:
        pass

    def screenshot(self, path: str, full_page: bool) -> None:
        if self.fail_screenshot:
            raise RuntimeError("target closed")
        self.shots.append(path)

    def close(self, run_before_unload: bool) -> None:
        self.closed = True


class FakeContext:
    def __init__(self, browser: FakeBrowser) -> None:
        self.browser, self.closed = browser, False

    def new_page(self) -> FakePage:
        page = FakePage(self, self.browser.fail_screenshot)
        self.browser.pages.append(page)
        return page

    def close(self) -> None:
        self.closed = True


class FakeBrowser:
    def __init__(self, fail_screenshot: bool = False) -> None:
        self.fail_screenshot = fail_screenshot
        self.pages: list[FakePage] = []

    def new_context(self, viewport: dict) -> FakeContext:
        return FakeContext(self)


def test_cases_of_one_notebook_share_a_run_and_another_notebook_starts_afresh() -> None:
    browser, runs, dropped = FakeBrowser(), [], []
    held = HeldRun(browser, after_drop=lambda: dropped.append(1))
    first = held.page_for("explorers.ipynb", lambda page: runs.append(("explorers", page)))
    again = held.page_for("explorers.ipynb", lambda page: runs.append(("explorers", page)))
    assert again is first and len(runs) == 1 and not dropped
    other = held.page_for("after2024.ipynb", lambda page: runs.append(("after2024", page)))
    assert other is not first and [r[0] for r in runs] == ["explorers", "after2024"]
    assert browser.pages[0].closed and browser.pages[0].context.closed and dropped == [1]
    held.drop()
    assert browser.pages[1].closed and dropped == [1, 1] and held.held is None
    held.drop()  # nothing held: nothing more to free
    assert dropped == [1, 1]


def test_a_failed_case_gets_its_screenshot_and_the_next_case_runs_the_notebook_again(
    tmp_path: Path,
) -> None:
    browser, runs = FakeBrowser(), []
    held = HeldRun(browser)
    held.page_for("explorers.ipynb", runs.append)
    held.drop(tmp_path / "failures" / "case.png")
    assert browser.pages[0].shots == [str(tmp_path / "failures" / "case.png")]
    held.page_for("explorers.ipynb", runs.append)
    assert len(runs) == 2 and runs[1] is browser.pages[1]


def test_a_screenshot_that_fails_still_closes_the_page_and_frees_its_kernel(
    tmp_path: Path,
) -> None:
    browser, dropped = FakeBrowser(fail_screenshot=True), []
    held = HeldRun(browser, after_drop=lambda: dropped.append(1))
    held.page_for("explorers.ipynb", lambda page: None)
    with pytest.raises(RuntimeError, match="target closed"):
        held.drop(tmp_path / "case.png")
    assert browser.pages[0].closed and browser.pages[0].context.closed and dropped == [1]
    assert held.held is None and held.notebook is None
