"""Classroom-ready in a real browser: fit, names, text alternatives, keyboard, in Lab and Voilà.

At 1280 x 720 (a projector's size), with each explorer scrolled to its top, its controls and
its principal panel (class ac-principal) lie inside the visible area: the notebook's panel in
JupyterLab (file browser open), the page in Voilà. Every canvas has an accessible name (its
title) and a text alternative (a summary and a table of its first numbers); every control can
be reached with Tab (Voilà) or focused (JupyterLab, whose notebook keeps Tab for itself).
Screenshots of each explorer go to screenshots/fit-<front-end>-<explorer>.png.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import harness
from tests.browser.cases import GALLERY
from widgets import registry

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

pytestmark = pytest.mark.browser

WINDOW = {"width": 1280, "height": 720}
# every explorer of widgets/registry.py, each shown by the gallery (written from the registry)
EXPLORERS = tuple(f"ac-{e.slug}" for e in registry.EXPLORERS)
# what the principal panel's accessible name says, per explorer
PRINCIPAL_NAME = {f"ac-{e.slug}": e.principal for e in registry.EXPLORERS}
FOCUSABLE = ".noUi-handle, select, input, button, textarea"

# The visible part of the page around an element: the viewport, clipped by every scrolling
# ancestor (JupyterLab's notebook panel ends above the status bar).
_VISIBLE_JS = """
(el) => {
  let box = {left: 0, top: 0, right: window.innerWidth, bottom: window.innerHeight};
  for (let p = el.parentElement; p; p = p.parentElement) {
    const s = getComputedStyle(p);
    if (/(auto|scroll|hidden)/.test(s.overflowY) && p.scrollHeight > p.clientHeight + 1) {
      const r = p.getBoundingClientRect();
      box = {left: Math.max(box.left, r.left), top: Math.max(box.top, r.top),
             right: Math.min(box.right, r.right), bottom: Math.min(box.bottom, r.bottom)};
    }
  }
  return box;
}
"""

_CANVASES_JS = """
(el) => [...el.querySelectorAll('canvas')].filter((c) => c.offsetParent !== null).map((c) => {
  const described = document.getElementById(c.getAttribute('aria-describedby') || '');
  const sr = c.parentElement.querySelector('.ac-sr');
  return {role: c.getAttribute('role'), label: c.getAttribute('aria-label') || '',
          principal: !!c.closest('.ac-principal'),
          summary: described ? described.textContent : '',
          rows: sr ? sr.querySelectorAll('tbody tr').length : 0,
          ready: !!(sr && sr.dataset.ready)};
})
"""


def _box(locator: Locator) -> dict:
    box = locator.bounding_box()
    assert box is not None, f"{locator} is not displayed"
    return {"left": box["x"], "top": box["y"], "right": box["x"] + box["width"],
            "bottom": box["y"] + box["height"]}  # fmt: skip


def _check_fit(page: Page, explorer: Locator, name: str, shot: str) -> list[str]:
    """Scroll the explorer to its top; the controls and the principal panel must be visible."""
    explorer.evaluate("(el) => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(400)  # let JupyterLab's windowed notebook settle after the scroll
    visible = explorer.evaluate(_VISIBLE_JS)
    problems = []
    for part in ("ac-controls", "ac-principal"):
        box = _box(explorer.locator(f".{part}").first)
        outside = [
            side
            for side, inside in (
                ("left", box["left"] >= visible["left"] - 1),
                ("top", box["top"] >= visible["top"] - 1),
                ("right", box["right"] <= visible["right"] + 1),
                ("bottom", box["bottom"] <= visible["bottom"] + 1),
            )
            if not inside
        ]
        if outside:
            problems.append(f"{name}: .{part} {box} leaves the visible {visible} at {outside}")
    page.screenshot(path=str(harness.SCREENSHOTS / f"{shot}.png"))
    return problems


def _check_names(page: Page, explorer: Locator, name: str) -> list[str]:
    """Every canvas: role img, a title as its name, a summary and a table of numbers."""
    canvases = []
    for _ in range(50):  # the text alternatives are written when the page is idle
        canvases = explorer.evaluate(_CANVASES_JS)
        if canvases and all(c["ready"] for c in canvases):
            break
        page.wait_for_timeout(100)
    problems = [] if canvases else [f"{name}: no canvas shown"]
    for c in canvases:
        label = c["label"]
        if c["role"] != "img" or not label or label.split(":")[0] in ("", "heatmap", "chart"):
            problems.append(f"{name}: a canvas is named {label!r} (role {c['role']})")
        if not c["summary"] or c["rows"] < 1:
            problems.append(f"{name}: canvas {label!r} has no text alternative ({c})")
        if c["principal"] and PRINCIPAL_NAME[name] not in label:
            problems.append(f"{name}: principal canvas {label!r} lacks {PRINCIPAL_NAME[name]!r}")
    return problems


def _controls(explorer: Locator) -> list:
    return [
        h
        for h in explorer.locator(".ac-controls").first.locator(FOCUSABLE).element_handles()
        if h.is_visible()
    ]


def _check_focusable(page: Page, explorer: Locator, name: str) -> list[str]:
    problems = []
    for handle in _controls(explorer):
        handle.focus()
        if not handle.evaluate("(el) => document.activeElement === el"):
            html = handle.evaluate("(e) => e.outerHTML.slice(0, 120)")
            problems.append(f"{name}: a control cannot take focus: {html}")
    return problems


def _check_tab_order(page: Page, explorer: Locator, name: str) -> list[str]:
    """From the first control, Tab reaches every other control of the explorer."""
    controls = _controls(explorer)
    if not controls:
        return [f"{name}: no focusable controls"]
    controls[0].focus()
    reached = {0}
    for _ in range(3 * len(controls) + 10):
        page.keyboard.press("Tab")
        for i, handle in enumerate(controls):
            if handle.evaluate("(el) => document.activeElement === el"):
                reached.add(i)
        if len(reached) == len(controls):
            return []
    missed = [controls[i].evaluate("(e) => e.outerHTML.slice(0, 100)") for i in
              range(len(controls)) if i not in reached]  # fmt: skip
    return [f"{name}: Tab never reached {missed}"]


def _check_all(page: Page, names: tuple[str, ...], front_end: str, tab: bool) -> list[str]:
    problems = []
    for name in names:
        explorer = page.locator(f".{name}").first
        explorer.wait_for(state="attached", timeout=harness.UPDATE_S * 1000)
        problems += _check_fit(page, explorer, name, f"fit-{front_end}-{name}")
        problems += _check_names(page, explorer, name)
        problems += (_check_tab_order if tab else _check_focusable)(page, explorer, name)
    return problems


def test_classroom_fit_names_and_keyboard_in_lab(lab) -> None:
    harness.SCREENSHOTS.mkdir(exist_ok=True)
    lab.page.set_viewport_size(WINDOW)
    opened = lab.open(GALLERY)
    opened.run_all()
    assert not opened.error_cells(), f"{GALLERY}: {opened.error_cells()}"
    problems = _check_all(lab.page, EXPLORERS, "lab", tab=False)
    assert not problems, "\n".join(problems)
    assert lab.log.page_errors == []


def test_classroom_fit_names_and_keyboard_in_voila(voila) -> None:
    harness.SCREENSHOTS.mkdir(exist_ok=True)
    voila.page.set_viewport_size(WINDOW)
    page = voila.open(GALLERY, ready_class=EXPLORERS[-1])
    assert harness.voila_errors(page) == []
    problems = _check_all(page, EXPLORERS, "voila", tab=True)
    assert not problems, "\n".join(problems)
    assert voila.log.off_machine() == [] and voila.log.page_errors == []
