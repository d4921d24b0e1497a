"""Classroom-ready, headless: the compact layout's structure, presenter mode, the CVD palette.

What only a browser can tell (the fit in a 1280 x 720 window, accessible names, text
alternatives, keyboard reach) is checked in tests/browser/test_classroom_fit.py.
"""

from __future__ import annotations

import ipywidgets as ipw
import numpy as np
import pytest

import widgets
from widgets import registry
from widgets.explorers import base
from widgets.views import Heatmap, SeriesChart, style
from widgets.views.batch import widget_tree
from widgets.views.picture import shown_views

# The explorers without a pretrained model, by stem; each is built as the gallery builds it.
STEMS = ("attention", "scaling", "mask", "heads", "positional", "tokens", "training")
ENTRIES = {e.stem: e for e in registry.EXPLORERS if e.stem in STEMS}


def make(stem: str) -> base.Explorer:
    return eval(f"widgets.{ENTRIES[stem].gallery_call}", {"widgets": widgets})  # noqa: S307


@pytest.fixture(scope="module")
def explorers():
    return {stem: make(stem) for stem in STEMS}


@pytest.fixture(autouse=True)
def _restore_defaults():
    yield
    base.presenter(False)
    base.palette("default")


def _with_class(explorer, name):
    return [w for w in widget_tree(explorer) if f"ac-{name}" in getattr(w, "_dom_classes", ())]


@pytest.mark.parametrize("name", STEMS)
def test_the_principal_panel_stands_beside_the_controls(explorers, name):
    explorer = explorers[name]
    (principal,) = _with_class(explorer, "principal")
    # the panel the explorer is about: its title holds the words of the registry's `principal`
    (view,) = shown_views(principal)
    assert ENTRIES[name].principal in view.title, (view.title, ENTRIES[name].principal)
    (controls,) = _with_class(explorer, "controls")

    def position(widget):  # which of the explorer's children holds it
        return next(i for i, c in enumerate(explorer.children) if widget in widget_tree(c))

    # the header (if any), then the controls with the principal beside them or right under
    assert position(controls) <= 1
    assert position(principal) - position(controls) in (0, 2)  # same box, or after the error


@pytest.mark.parametrize("name", STEMS)
def test_every_control_is_a_keyboard_operable_widget(explorers, name):
    operable = (
        ipw.IntSlider, ipw.FloatSlider, ipw.FloatLogSlider, ipw.SelectionSlider, ipw.Dropdown,
        ipw.Checkbox, ipw.ToggleButtons, ipw.Button, ipw.Text, ipw.BoundedIntText,
        ipw.SelectMultiple, ipw.Play,
    )  # fmt: skip
    (controls,) = _with_class(explorers[name], "controls")
    leaves = [
        w for w in widget_tree(controls) if not isinstance(w, (ipw.Box, ipw.Layout, ipw.Style))
    ]
    for w in leaves:
        if isinstance(w, (ipw.HTML, ipw.Label)):
            continue  # the error area and labels: text, not controls
        assert isinstance(w, operable), f"{name}: {type(w).__name__} in the controls"
        assert w.description or isinstance(w, ipw.Button) or w.tooltip, (
            f"{name}: a {type(w).__name__} without a description has no accessible name"
        )


def test_presenter_mode_zooms_every_canvas_and_enlarges_the_controls(explorers):
    explorer = explorers["scaling"]
    explorer.presenter = True
    assert "ac-presenter" in explorer._dom_classes
    charts = [w for w in widget_tree(explorer) if isinstance(w, SeriesChart)]
    assert charts and all(c.zoom == style.PRESENTER_ZOOM for c in charts)
    explorer.presenter = False
    assert "ac-presenter" not in explorer._dom_classes
    assert all(c.zoom == 1.0 for c in charts)


def test_presenter_for_every_explorer_live_and_new(explorers):
    base.presenter(True)
    heatmaps = [w for w in widget_tree(explorers["attention"]) if isinstance(w, Heatmap)]
    assert heatmaps and {h.zoom for h in heatmaps} == {style.PRESENTER_ZOOM}
    new = make("mask")
    (principal,) = _with_class(new, "principal")
    assert new.presenter and principal.zoom == style.PRESENTER_ZOOM
    base.presenter(False)
    assert {h.zoom for h in heatmaps} == {1.0} and principal.zoom == 1.0


def test_the_cvd_palette_swaps_only_the_diverging_maps(explorers):
    explorer = explorers["attention"]
    before = {name: hm.colormap for name, hm in explorer.panels.items()}
    assert before["q"] == "RdBu_r" and before["weights"] == "viridis"
    base.palette("cvd")
    assert {n: hm.colormap for n, hm in explorer.panels.items()} == {
        n: style.CVD_SWAP.get(c, c) for n, c in before.items()
    }
    assert widgets.HeadsExplorer().projection.colormap == "PuOr_r"
    base.palette("default")
    assert {n: hm.colormap for n, hm in explorer.panels.items()} == before
    with pytest.raises(ValueError, match=r"palette: expected one of \('default', 'cvd'\)"):
        base.palette("rainbow")


# --- the palette under simulated colour blindness ------------------------------------------

# Machado, Oliveira & Fernandes (2009), full severity, applied to linear RGB.
CVD = {
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
}  # fmt: skip


def _lab_seen(name: str, deficiency: str) -> np.ndarray:
    """CIELAB colours of a colour table as seen with a colour-vision deficiency."""
    c = np.array(style.lut_rgb(name), float) / 255
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    seen = np.clip(linear @ np.array(CVD[deficiency]).T, 0, 1)
    xyz = seen @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                           [0.0193, 0.1192, 0.9505]]).T  # fmt: skip
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], 1)


def _halves_apart(name: str, deficiency: str) -> float:
    """The smallest CIELAB distance between the colours of -x and +x, for |x| >= half the range:
    how well a viewer tells a strongly negative score from a strongly positive one."""
    lab = _lab_seen(name, deficiency)
    n = len(lab)
    return min(float(np.linalg.norm(lab[i] - lab[n - 1 - i])) for i in range(n // 4 + 1))


@pytest.mark.parametrize("deficiency", CVD)
def test_the_cvd_palette_keeps_negative_and_positive_apart(deficiency):
    (cvd_map,) = style.CVD_SWAP.values()
    assert cvd_map in style.LUT_HEX  # so tests/views/test_style.py checks it against matplotlib
    assert _halves_apart(cvd_map, deficiency) > 70
    assert _halves_apart(cvd_map, deficiency) > _halves_apart(style.DIVERGING_CMAP, deficiency)
