"""What the browser tests open and poke: notebooks to run, and explorers to operate.

To cover a new explorer, add an ExplorerCase below; test_lab.py and test_voila.py both pick
it up. Lesson notebooks (lessons/*.ipynb) are picked up without any edit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from tests.browser import harness

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page


@dataclass(frozen=True)
class ExplorerCase:
    """Act on one control of an explorer; its figure and readout must change to match.

    Classes are the ones given in Python with ``widget.add_class(...)``. Give either `key`
    (pressed on the focused control, e.g. a slider handle) or `click` (a point on the control
    as fractions of its width and height, e.g. a cell of the mask editor's heatmap).
    """

    id: str
    notebook: str  # path under the served root: "demo.ipynb" or "lessons/<name>.ipynb"
    control: str  # CSS class of the control to act on
    figure: str  # CSS class of the element whose canvas/img/svg must change
    readout: str | None = None  # CSS class of an element whose text must change
    # Regex the new readout text must contain; "{value}" stands for the control's new value.
    expect: str | None = None
    key: str | None = "ArrowRight"
    click: tuple[float, float] | None = None
    nth: int = 0  # which occurrence, when the notebook shows the same classes more than once
    # CSS class of the element to photograph (e.g. the whole explorer); by default the picture
    # spans the control, the figure and the readout.
    shot: str | None = None

    def __post_init__(self) -> None:
        if (self.key is None) == (self.click is None):
            raise ValueError(f"{self.id}: give exactly one of key={self.key!r}, click={self.click}")


EXPLORER_CASES: list[ExplorerCase] = [
    ExplorerCase(
        id="demo-bars",
        notebook="demo.ipynb",
        control="demo-slider",
        figure="demo-canvas",
        readout="demo-readout",
        expect=r"^value = {value}$",
    ),
    ExplorerCase(
        id="attention-seq-len",
        notebook="lessons/04_scaled_dot_product.ipynb",
        control="ac-seq-len",
        figure="ac-panel-weights",
        readout="ac-readout",
        expect=r"{value}, {value}\)",  # the shapes table: (..., Tq, Tk)
        shot="ac-attention-explorer",
    ),
    ExplorerCase(
        id="mask-click",
        notebook="lessons/06_masks.ipynb",
        control="ac-panel-mask",
        figure="ac-panel-weights",
        readout="ac-conventions",
        click=(0.85, 0.84),  # a cell of the last key column: toggles may-attend
        key=None,
        shot="ac-mask-explorer",
    ),
    # Add one per explorer used in the lessons, e.g. ScalingExplorer's d_k slider, HeadsExplorer's
    # n_heads, PositionalEncodingExplorer's shuffle button (key="Enter"), TokenAttentionView.
]


def notebook_params() -> list[object]:
    """The demo notebook(s) plus every lesson; a skipped placeholder while there are none."""
    params: list[object] = [pytest.param(p.name, id=p.stem) for p in harness.demo_notebooks()]
    lessons = harness.lesson_notebooks()
    params += [pytest.param(f"lessons/{p.name}", id=p.stem) for p in lessons]
    if not lessons:
        skip = pytest.mark.skip(reason="no lessons/*.ipynb yet")
        params.append(pytest.param("lessons/*.ipynb", id="lessons", marks=skip))
    return params


def explorer_params() -> list[object]:
    return [pytest.param(case, id=case.id) for case in EXPLORER_CASES]


def operate_explorer(page: Page, case: ExplorerCase, screenshot_name: str) -> str:
    """Act on the case's control; assert figure and readout changed; save and return a screenshot.

    Works the same in JupyterLab and Voilà (both render ipywidgets into the page's DOM).
    """
    control = harness.widget(page, case.control, case.nth)
    figure = harness.widget(page, case.figure, case.nth)
    readout = harness.widget(page, case.readout, case.nth) if case.readout else None
    figure.wait_for(state="attached", timeout=harness.UPDATE_S * 1000)

    pixels_before = harness.signature(figure)
    assert pixels_before, f"{case.id}: .{case.figure} holds no canvas, img or svg to compare"
    text_before = readout.inner_text() if readout else ""
    value_before = harness.control_value(control) if case.key else ""

    if case.key:
        harness.press_key(page, control, case.key)
        value_after = _wait_value_change(control, value_before)
    else:
        harness.click_at(control, *case.click)
        value_after = ""

    harness.wait_for_change(page, figure, pixels_before)  # raises if the pixels never change
    if readout is not None:
        text_after = harness.wait_for_text_change(readout, text_before)
        if case.expect:
            pattern = case.expect.replace("{value}", re.escape(value_after))
            # The readout comes from the kernel after the figure; give it time to settle.
            text_after = _wait_text_match(readout, pattern, text_after)
            assert re.search(pattern, text_after), (
                f"{case.id}: readout {text_after!r} does not match {pattern!r} "
                f"after the control went {value_before!r} -> {value_after!r}"
            )
    if case.shot:
        return str(harness.screenshot(harness.widget(page, case.shot, case.nth), screenshot_name))
    shown_with = [control] + ([readout] if readout is not None else [])
    return str(harness.screenshot(figure, screenshot_name, *shown_with))


def _wait_value_change(control: Locator, before: str) -> str:
    page = control.page
    for _ in range(int(harness.UPDATE_S / 0.1)):
        after = harness.control_value(control)
        if after != before:
            return after
        page.wait_for_timeout(100)
    raise AssertionError(f"control value stayed {before!r}: the key press did not move it")


def _wait_text_match(readout: Locator, pattern: str, text: str) -> str:
    page = readout.page
    for _ in range(int(harness.UPDATE_S / 0.1)):
        if re.search(pattern, text):
            return text
        page.wait_for_timeout(100)
        text = readout.inner_text()
    return text
