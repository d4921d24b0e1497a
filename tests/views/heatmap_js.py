"""The views' JavaScript run by Node.js (run_node), and static/heatmap.js's layout computed by it:
shared by test_heatmap.py, test_scatter.py and the explorers' tests that check a heatmap's
layout."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from widgets.views.heatmap import Heatmap
from widgets.views.style import (
    esm,
)

NODE = shutil.which("node")


needs_node = pytest.mark.skipif(NODE is None, reason="the JS tests need Node.js (node)")


def run_node(script: str, env: dict[str, str], stdin: str | None = None) -> str:
    """What node prints running `script` as an ES module with `env` (the modules' sources)."""
    out = subprocess.run(
        [NODE, "--input-type=module", "-e", script],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=60,
    )
    return out.stdout


# Imports the module from a data: URL (node needs no package.json "type" for it) and lays out
# each spec; text is measured as 0.6 em per character, close to 11 px sans-serif.
_LAYOUT_JS = """
import fs from "node:fs";
const src = process.env.HEATMAP_ESM;
const mod = await import("data:text/javascript;base64," + Buffer.from(src).toString("base64"));
const measure = (font, text) => text.length * 0.6 * parseFloat(font.match(/([0-9.]+)px/)[1]);
const specs = JSON.parse(fs.readFileSync(0, "utf8"));
console.log(JSON.stringify(specs.map((spec) => mod.heatmapLayout(spec, measure))));
"""


def js_layouts(*specs: dict) -> list[dict]:
    """heatmapLayout(spec) of static/heatmap.js for each spec, computed by node.

    A spec gives P, R, C and any of rowLabels, colLabels, titles, title, columns, cellSize,
    panelSize, showBar, legend (the widget's traits under their JS names).
    """
    full = [
        {"P": 1, "rowLabels": [], "colLabels": [], "titles": [], "title": "", "columns": 0,
         "cellSize": 0, "panelSize": 280, "showBar": True, "legend": [], **spec}
        for spec in specs
    ]  # fmt: skip
    return json.loads(run_node(_LAYOUT_JS, {"HEATMAP_ESM": esm("heatmap")}, json.dumps(full)))


def heatmap_spec(hm: Heatmap) -> dict:
    """The js_layouts spec of what a Heatmap widget sends to the browser."""
    p, r, c = hm.values.shape
    return {
        "P": p, "R": r, "C": c, "rowLabels": hm.row_labels, "colLabels": hm.col_labels,
        "titles": hm.panel_titles, "title": hm.title, "columns": hm.columns,
        "cellSize": hm.cell_size, "panelSize": hm.panel_size, "showBar": hm.show_colorbar,
    }  # fmt: skip
