"""One source of colours and sizes: style.py feeds matplotlib exports and the canvas code alike."""

from __future__ import annotations

import json
import re

import matplotlib as mpl
import numpy as np
import pytest

from widgets.views import style

STATIC = style.STATIC


@pytest.mark.parametrize("name", style.COLORMAPS)
def test_canvas_colour_tables_equal_matplotlibs(name):
    ours = np.array(style.lut_rgb(name)) / 255
    theirs = mpl.colormaps[name](np.linspace(0, 1, style.LUT_SIZE))[:, :3]
    assert ours.shape == theirs.shape == (style.LUT_SIZE, 3)
    np.testing.assert_allclose(ours, theirs, atol=0.5 / 255 + 1e-9)


def test_the_browser_gets_its_style_from_python():
    prefix = "const common = makeCommon("
    for view in ("heatmap", "token_lines", "chart"):
        (line,) = [ln for ln in style.esm(view).splitlines() if ln.startswith(prefix)]
        assert line.endswith(");")
        assert json.loads(line[len(prefix) : -2]) == json.loads(json.dumps(style.js_style()))


def test_no_style_colour_is_spelled_again_in_the_javascript():
    """The masked faces, the colour tables and the palette appear in style.py only."""
    spelled = {style.MASKED_FACE, style.MASKED_HATCH, style.FULLY_MASKED_FACE, *style.PALETTE}
    for path in STATIC.glob("*.js"):
        text = path.read_text().lower()
        found = {c for c in spelled if c.lower() in text}
        assert not found, f"{path.name} repeats {found}; read them from STYLE"
        assert not re.search(r"[0-9a-f]{48,}", text), f"{path.name} holds a colour table"


def test_displaying_a_view_does_not_load_matplotlib():
    import subprocess
    import sys

    code = "import sys, widgets; widgets.Heatmap([[1.0]]); print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
