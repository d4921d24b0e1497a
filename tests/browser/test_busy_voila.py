"""The explorers page in Voilà on a machine with no CPU to spare: every explorer draws.

What a teacher projects while the class's kernels or another program hold the cores. Once, on
such a machine, the page showed "Error displaying widget: model not found" for 4 to 8 of its
20 explorers on every load: the page's one thread, starved while it restored the kernel's
1,099 widget models, overslept the 2-s wait of ipywidgets' get_model, which gave up without
looking again although the model had arrived (widgets/views/static/model_wait.js, the fix).

The load: the Voilà server (and its kernels) and a second Chromium are pinned to one core
together with BURNERS processes that only spin, so the page gets a small share of one core;
the page is loaded LOADS times. Before the fix, each load showed the error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import harness
from harness.chromium import CHROMIUM

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

BURNERS = 8
LOADS = 2
EXPLORERS_PAGE = "lessons/explorers.ipynb"

# After the outputs are on the page: how many still wait, failed, or hold a canvas never drawn.
_STATE_JS = """
() => {
  const outputs = [...document.querySelectorAll('#rendered_cells .jp-OutputArea-output')];
  const text = (re) => outputs.filter((el) => re.test(el.innerText)).length;
  // canvases on show (a view inside a hidden panel keeps a blank 10 x 10 canvas)
  const shown = [...document.querySelectorAll('#rendered_cells canvas')]
    .filter((c) => c.offsetParent !== null);
  const blank = shown.filter((c) => {
    if (!c.width || !c.height) return true;
    const pixels = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 3; i < pixels.length; i += 4) if (pixels[i]) return false;
    return true;
  }).length;
  return {
    loading: text(/^Loading widget/),
    errors: text(/Error displaying widget|Traceback|Javascript Error/),
    canvases: shown.length,
    blank,
  };
}
"""


@pytest.fixture(scope="module")
def one_core() -> int:
    if shutil.which("taskset") is None:
        pytest.skip("taskset (util-linux) is needed to pin Chromium to one core")
    return sorted(os.sched_getaffinity(0))[-1]


@pytest.fixture(scope="module")
def pinned_voila(one_core: int, tmp_path_factory: pytest.TempPathFactory):
    """The classroom's Voilà, its kernels with it, on the busy core."""
    base = tmp_path_factory.mktemp("busy-voila")
    root = harness.prepare_root(base / "root")
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {one_core})  # the server (and every kernel it starts) inherits it
    try:
        server = harness.start_voila(root, base / "state")
    finally:
        os.sched_setaffinity(0, mine)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def pinned_chromium(chromium: Browser, one_core: int, tmp_path_factory) -> Iterator[Browser]:
    """A second Chromium whose processes all run on the busy core (started through taskset)."""
    wrapper = tmp_path_factory.mktemp("pinned") / "chromium"
    wrapper.write_text(f'#!/bin/sh\nexec taskset -c {one_core} {CHROMIUM} "$@"\n')
    wrapper.chmod(0o755)
    browser = chromium.browser_type.launch(
        executable_path=str(wrapper), headless=True, args=list(harness.CHROMIUM_ARGS)
    )
    yield browser
    browser.close()


@pytest.fixture
def busy_core(one_core: int, pinned_voila, pinned_chromium) -> Iterator[int]:
    """BURNERS processes spinning on the pinned core: started once the server and the browser
    are up (they start in seconds, not minutes), stopped before they are."""
    spin = f"import os\nos.sched_setaffinity(0, {{{one_core}}})\nwhile True:\n    pass\n"
    burners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(BURNERS)]
    yield one_core
    for burner in burners:
        burner.kill()
        burner.wait()


def _load(browser: Browser, server: harness.Server, shots: Path, n: int) -> dict:
    context = browser.new_context(viewport=harness.VIEWPORT)
    page: Page = context.new_page()
    try:
        start = time.monotonic()
        harness.open_voila(page, server, EXPLORERS_PAGE)
        deadline = time.monotonic() + harness.RUN_ALL_S
        state = page.evaluate(_STATE_JS)
        while state["loading"] and time.monotonic() < deadline:
            time.sleep(0.5)
            state = page.evaluate(_STATE_JS)
        page.wait_for_timeout(1000)  # the last redraws of the views just created
        state = {**page.evaluate(_STATE_JS), "seconds": round(time.monotonic() - start, 1)}
        if state["errors"] or state["blank"] or state["loading"]:
            page.screenshot(path=str(shots / f"busy-voila-load{n}.png"), full_page=True)
        return state
    finally:
        context.close()


def test_every_explorer_draws_on_a_starved_core(pinned_voila, pinned_chromium, busy_core) -> None:
    harness.SCREENSHOTS.mkdir(exist_ok=True)
    loads = [_load(pinned_chromium, pinned_voila, harness.SCREENSHOTS, n) for n in range(LOADS)]
    print("loads:", loads)
    for n, state in enumerate(loads):
        assert state["canvases"] > 0, f"load {n}: no canvas at all: {state}"
        assert (state["loading"], state["errors"], state["blank"]) == (0, 0, 0), (
            f"load {n} of the explorers page on a starved core: {state['errors']} outputs "
            f"failed, {state['loading']} still loading, {state['blank']} of "
            f"{state['canvases']} canvases blank after {state['seconds']} s"
        )
