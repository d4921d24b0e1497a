"""The Scatter view (widgets/views/scatter.py + static/scatter.js): data checks, picking a
source, export, pictures, and the label placement of the JavaScript run by node."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from tests.views.heatmap_js import needs_node, run_node
from widgets.views import Scatter
from widgets.views import picture as picture_module
from widgets.views.style import esm

POINTS = np.array([[0.0, 0.0], [1.0, 0.5], [2.0, -1.0], [0.5, 2.0], [-1.0, 1.0]])
LABELS = ["q0", "q1", "k0", "k1", "k2"]
GROUPS = [0, 0, 1, 1, 1]
LINKS = np.array([[0, 0, 0.7, 0.2, 0.1], [0, 0, 0.0, 0.5, 0.5]])
INF_LINKS = np.where(LINKS > 0, np.inf, 0.0)


def scatter(**traits) -> Scatter:
    sc = Scatter(group_names=["query", "key"], **traits)
    sc.set_data(POINTS, LABELS, GROUPS, links=LINKS, sources=[0, 1], title="queries and keys")
    return sc


def test_set_data_sends_float32_points_and_keeps_the_lists():
    sc = scatter()
    assert sc.points.dtype == np.float32 and sc.points.shape == (5, 2)
    np.testing.assert_allclose(sc.points, POINTS)
    assert sc.labels == LABELS and sc.groups == GROUPS and sc.sources == [0, 1]
    np.testing.assert_allclose(sc.links, LINKS)
    assert sc.title == "queries and keys" and "ac-scatter" in sc._dom_classes
    assert sc.selected == -1 and sc.active_links() is None


def test_picking_a_source_and_losing_it_when_the_sources_shrink():
    sc = scatter()
    sc.select(1)
    np.testing.assert_allclose(sc.active_links(), LINKS[1])
    sc.set_data(POINTS, LABELS, GROUPS, links=LINKS, sources=[0, 1])
    assert sc.selected == 1  # still a source: kept
    sc.set_data(POINTS[:3], LABELS[:3], GROUPS[:3], links=LINKS[:1, :3], sources=[0])
    assert sc.selected == -1  # source 1 is gone
    with pytest.raises(ValueError, match=r"source: expected -1 or an index in \[0, 1\), got 1"):
        sc.select(1)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((np.zeros((3, 3)), LABELS[:3], GROUPS[:3]), {}, r"points: expected a non-empty \(N, 2\)"),
        ((np.zeros((0, 2)), [], []), {}, r"got shape \(0, 2\)"),
        ((np.array([[0, np.nan]]), ["a"], [0]), {}, "points: expected finite coordinates"),
        ((POINTS, LABELS[:4], GROUPS), {}, "labels: expected 5 labels, got 4"),
        ((POINTS, LABELS, GROUPS[:4]), {}, "groups: expected 5 group indices, got 4"),
        ((POINTS, LABELS, [0, 0, 1, 1, 2]), {}, r"groups: expected indices in \[0, 2\)"),
        ((POINTS, LABELS, GROUPS), {"links": LINKS, "sources": [0, 9]}, r"sources: expected point"),
        ((POINTS, LABELS, GROUPS), {"links": LINKS[:, :4], "sources": [0, 1]},
         r"links: expected shape \(S, N\) = \(2, 5\), got \(2, 4\)"),
        ((POINTS, LABELS, GROUPS), {"links": -LINKS, "sources": [0, 1]}, "weights >= 0"),
        ((POINTS, LABELS, GROUPS), {"links": INF_LINKS, "sources": [0, 1]}, "finite"),
        ((POINTS, LABELS, GROUPS), {"sources": [0]}, r"links: expected a \(1, 5\) array"),
        ((POINTS, LABELS, GROUPS), {"colour": "red"}, "set_data: unknown trait 'colour'"),
    ],
)  # fmt: skip
def test_bad_data_is_refused_naming_expected_and_given(args, kwargs, match):
    sc = Scatter(group_names=["query", "key"])
    with pytest.raises(ValueError, match=match):
        sc.set_data(*args, **kwargs)
    assert sc.points is None  # nothing half-set


def test_csv_has_a_row_per_point_with_its_weight_from_the_picked_source():
    sc = scatter()
    header, rows = sc.csv_table()
    assert header == ("point", "group", "label", "x", "y", "weight_from_selected")
    assert [r[1] for r in rows] == ["query", "query", "key", "key", "key"]
    assert rows[3][2:5] == ("k1", 0.5, 2.0) and rows[3][5] == ""
    sc.select(0)
    assert [r[5] for r in sc.csv_table()[1]] == pytest.approx(LINKS[0].tolist())


def test_figure_draws_every_point_and_a_line_per_link_of_the_picked_source():
    sc = scatter()
    fig = sc.figure()
    ax = fig.axes[0]
    offsets = np.concatenate([c.get_offsets() for c in ax.collections])
    np.testing.assert_allclose(np.sort(offsets, axis=0), np.sort(POINTS, axis=0))
    assert not ax.lines and [t.get_text() for t in ax.get_legend().get_texts()] == ["query", "key"]
    sc.select(0)
    ax = sc.figure().axes[0]
    assert len(ax.lines) == 3  # weights 0.7, 0.2, 0.1 from q0
    widths = sorted(line.get_linewidth() for line in ax.lines)
    assert widths == pytest.approx([0.6 + 3 * w for w in (0.1, 0.2, 0.7)])
    assert {t.get_text() for t in ax.texts} == {"q0", "k0 0.70", "k1 0.20", "k2 0.10"}


def test_export_and_the_picture_without_a_kernel(tmp_path, monkeypatch):
    sc = scatter()
    paths = sc.export(tmp_path, "space")
    assert [p.name for p in paths] == ["space.png", "space.svg", "space.csv"]
    assert all(p.stat().st_size > 0 for p in paths)
    with pytest.raises(ValueError, match="scatter: nothing to export"):
        Scatter().export(tmp_path, "empty")
    monkeypatch.setattr(picture_module, "_setting", True)
    data = sc._repr_mimebundle_()
    data = data[0] if isinstance(data, tuple) else data
    assert base64.b64decode(data["image/png"])[:4] == b"\x89PNG"
    assert data["text/plain"].startswith("Scatter: queries and keys")


def test_the_module_holds_the_shared_code_and_the_views_own():
    src = esm("scatter")
    assert "function makeCommon" in src and "const common = makeCommon(" in src
    assert "function placeLabels" in src and "export default { render }" in src


# --- the JavaScript, run by node ------------------------------------------------------------------

_PLACE_JS = """
import fs from "node:fs";
const src = process.env.SCATTER_ESM;
const mod = await import("data:text/javascript;base64," + Buffer.from(src).toString("base64"));
const ctx = { measureText: (s) => ({ width: 6 * s.length }) };
const { items, box } = JSON.parse(fs.readFileSync(0, "utf8"));
console.log(JSON.stringify(mod.placeLabels(ctx, items, box)));
"""


def place(items: list[dict], box: dict) -> list[dict]:
    stdin = json.dumps({"items": items, "box": box})
    return json.loads(run_node(_PLACE_JS, {"SCATTER_ESM": esm("scatter")}, stdin))


@needs_node
def test_labels_never_overlap_and_stay_inside_the_frame():
    box = {"l": 0, "t": 0, "r": 200, "b": 120}
    # four labels on one spot, one in each corner region, one too long to fit anywhere
    items = [{"i": i, "text": f"label{i}", "x": 100, "y": 60} for i in range(6)]
    items += [{"i": 9, "text": "x" * 60, "x": 100, "y": 60}]
    shown = place(items, box)
    assert 1 <= len(shown) <= 4  # four places around a point; the rest are left out
    rects = [(s["lx"] - 2, s["ly"] - 7, 6 * len(s["text"]) + 4, 14) for s in shown]
    for a in range(len(rects)):
        x, y, w, h = rects[a]
        assert box["l"] <= x and x + w <= box["r"] and box["t"] <= y and y + h <= box["b"]
        for b in range(a):
            x2, y2, w2, h2 = rects[b]
            assert not (x < x2 + w2 and x2 < x + w and y < y2 + h2 and y2 < y + h), (a, b)
    assert all(s["text"] != "x" * 60 for s in shown)
    # a point at the right edge puts its label on the left
    (edge,) = place([{"i": 0, "text": "abc", "x": 195, "y": 60}], box)
    assert edge["lx"] < 195
