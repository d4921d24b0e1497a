"""Classroom kernels: a closed or reloaded page frees its kernel; a vanished page's is culled.

Voilà starts a kernel per page view (~300-400 MB with torch). Voilà 0.5's page asks for its
kernel's shutdown as it unloads, which the server refused (403: no `_xsrf` cookie) until
widgets.classroom set the cookie; a page that vanishes without asking (a crashed tab) is left
to the server's culler. These tests run their own classroom server with a short culling
timeout, and count its kernel processes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

import harness

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

CULL_IDLE_S = 6
CULL_INTERVAL_S = 2
NOTEBOOK = "demo.ipynb"  # light: no torch, so a page view costs seconds, not tens


@pytest.fixture(scope="module")
def classroom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.Server]:
    base = tmp_path_factory.mktemp("voila-kernels")
    server = harness.start_voila(
        harness.prepare_root(base / "root"),
        base / "state",
        f"--cull-idle-timeout={CULL_IDLE_S}",
        f"--cull-interval={CULL_INTERVAL_S}",
    )
    yield server
    server.stop()


def _open(page: Page, server: harness.Server) -> str:
    """Render the demo notebook; return the id of the kernel behind the page."""
    harness.open_voila(page, server, NOTEBOOK, ready_class="demo-canvas")
    return page.evaluate(
        "() => JSON.parse(document.getElementById('jupyter-config-data').textContent).kernelId"
    )


def _kernel_count_becomes(server: harness.Server, n: int, timeout_s: float) -> float:
    """Wait until the server runs `n` kernels; return the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if len(server.kernel_processes()) == n:
            return time.monotonic() - start
        time.sleep(0.2)
    found = len(server.kernel_processes())
    raise AssertionError(
        f"{found} kernels, not {n}, after {timeout_s:.0f} s; log:\n{server.log_tail(20)}"
    )


def _culled(server: harness.Server, kernel_id: str) -> bool:
    return bool(re.search(rf"Culling .*{kernel_id}", server.log_tail(400)))


def test_closed_and_reloaded_pages_free_their_kernels(
    chromium: Browser, classroom: harness.Server
) -> None:
    context = chromium.new_context()
    try:
        first, second = context.new_page(), context.new_page()
        first_id = _open(first, classroom)
        second_id = _open(second, classroom)
        _kernel_count_becomes(classroom, 2, 30)

        first.close(run_before_unload=True)  # the page's own shutdown request
        _kernel_count_becomes(classroom, 1, 15)
        assert not _culled(classroom, first_id), "freed by the culler, not by the page"
        assert f"403 POST /voila/api/shutdown/{first_id}" not in classroom.log_tail(400)

        second.reload()  # the old page unloads, a new one starts its own kernel
        second.locator(".demo-canvas").wait_for(state="visible", timeout=60_000)
        _kernel_count_becomes(classroom, 1, 15)
        reloaded_id = second.evaluate(
            "() => JSON.parse(document.getElementById('jupyter-config-data').textContent).kernelId"
        )
        assert reloaded_id != second_id
        assert not _culled(classroom, second_id)

        # An open page keeps its kernel however long it idles, and stays live.
        time.sleep(CULL_IDLE_S + 2 * CULL_INTERVAL_S)
        assert len(classroom.kernel_processes()) == 1
        before = harness.control_value(second.locator(".demo-slider"))
        harness.press_key(second, second.locator(".demo-slider"), "ArrowRight")
        readout = second.locator(".demo-readout")
        expected = f"value = {int(before) + 1}"
        readout.filter(has_text=expected).wait_for(timeout=harness.UPDATE_S * 1000)
        second.close(run_before_unload=True)
        _kernel_count_becomes(classroom, 0, 15)
    finally:
        context.close()


def test_a_page_that_vanishes_loses_its_kernel_to_the_culler(
    chromium: Browser, classroom: harness.Server
) -> None:
    _kernel_count_becomes(classroom, 0, 15)  # what the test above left
    context = chromium.new_context()
    try:
        page = context.new_page()
        kernel_id = _open(page, classroom)
        _kernel_count_becomes(classroom, 1, 30)
        page.close(run_before_unload=False)  # no unload handlers: like a crashed tab
        took = _kernel_count_becomes(classroom, 0, CULL_IDLE_S + 4 * CULL_INTERVAL_S + 10)
        assert _culled(classroom, kernel_id), f"gone after {took:.0f} s, but not culled"
    finally:
        context.close()
