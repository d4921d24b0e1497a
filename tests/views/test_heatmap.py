"""The browser heatmap component (kernel side) and its matplotlib/CSV export."""

from __future__ import annotations

import csv
import json
import math
import re
import xml.etree.ElementTree as ET

import matplotlib as mpl
import matplotlib.image as mpimg
import numpy as np
import pytest
import torch
from ipywidgets.widgets.widget import _put_buffers, _remove_buffers

from tests.views.heatmap_js import js_layouts, needs_node, run_node
from widgets.views.arrays import color_limits
from widgets.views.canvas import CanvasView
from widgets.views.chart import SeriesChart, decade_ticks
from widgets.views.heatmap import CSV_HEADER, Heatmap, auto_cell_size
from widgets.views.style import (
    FULLY_MASKED_FACE,
    LABELLED_CELL_MIN,
    MASKED_HATCH,
    STATIC,
    css,
    esm,
)
from widgets.views.token_lines import TokenLines

NEG_INF = float("-inf")


def wire_state(widget) -> dict:
    """The widget's state as the browser receives it: JSON plus binary buffers put back."""
    state, paths, buffers = _remove_buffers(widget.get_state())
    blobs = [bytes(b) for b in buffers]
    _put_buffers(state, paths, blobs)
    return state


def decode(entry: dict) -> np.ndarray:
    dtype = np.float32 if entry["dtype"] == "float32" else np.uint8
    return np.frombuffer(entry["buffer"], dtype=dtype).reshape(entry["shape"])


# --- data in, data out ------------------------------------------------------------------------


def test_set_data_keeps_values_masks_and_labels():
    values = torch.tensor([[0.5, NEG_INF, 0.1], [NEG_INF, NEG_INF, NEG_INF]])
    mask = torch.isneginf(values)
    hm = Heatmap()
    hm.set_data(values, mask, row_labels=["a", "b"], col_labels=["x", "y", "z"])
    assert hm.values.shape == (1, 2, 3) and hm.values.dtype == np.float32
    np.testing.assert_array_equal(hm.matrix, values.numpy())
    np.testing.assert_array_equal(hm.masked[0], mask.numpy())
    # the row with every key masked is reported as fully masked without being told
    np.testing.assert_array_equal(hm.fully_masked, [[False, True]])
    assert (hm.row_labels, hm.col_labels) == (["a", "b"], ["x", "y", "z"])
    assert css("heatmap") in hm._dom_classes


def test_minus_inf_and_nan_survive_the_wire():
    values = np.array([[[1.0, -np.inf], [np.nan, 0.25]]], dtype=np.float32)
    hm = Heatmap(values, title="t")
    state = wire_state(hm)
    got = decode(state["values"])
    assert got[0, 0, 1] == -np.inf and math.isnan(got[0, 1, 0])
    np.testing.assert_array_equal(got[0, 0], values[0, 0])
    assert state["values"]["shape"] == [1, 2, 2] and state["title"] == "t"


def test_masks_travel_as_bytes_and_broadcast():
    hm = Heatmap()
    hm.set_data(np.zeros((3, 2, 4)), masked=np.array([True, False, False, True]))
    state = wire_state(hm)
    masked = decode(state["masked"])
    assert masked.shape == (3, 2, 4) and masked.dtype == np.uint8
    np.testing.assert_array_equal(masked[2, 1], [1, 0, 0, 1])
    np.testing.assert_array_equal(decode(state["fully_masked"]), np.zeros((3, 2)))


def test_one_update_is_one_message(monkeypatch):
    hm = Heatmap(np.zeros((2, 2)))
    sent = []  # what ipywidgets hands to the kernel comm
    monkeypatch.setattr(hm, "_send", lambda msg, buffers=None: sent.append((msg, buffers)))
    hm.set_data(np.eye(3), np.eye(3, dtype=bool), row_labels="abc", title="new", vmax=2.0)
    assert len(sent) == 1
    data, buffers = sent[0]
    assert data["method"] == "update"
    assert {"values", "masked", "fully_masked", "row_labels", "title", "limits"} <= set(
        data["state"]
    )
    assert len(buffers) == 3  # values, masked, fully_masked as binary frames


def test_unchanged_numbers_are_not_sent_again(monkeypatch):
    hm = Heatmap(np.arange(4.0).reshape(2, 2), title="a")
    sent = []
    monkeypatch.setattr(hm, "_send", lambda msg, buffers=None: sent.append(msg["state"]))
    values = np.arange(4.0).reshape(2, 2)
    hm.set_data(values, title="b")  # the same numbers, a new title
    assert sent == [{"title": "b"}]
    values[0, 0] = 9.0  # changed in place: compared with a copy of what was sent
    hm.set_data(values)
    assert "values" in sent[-1] and hm.values[0, 0, 0] == 9.0
    nan = np.array([[np.nan, 1.0]])
    hm.set_data(nan)
    hm.set_data(nan.copy())  # NaN equals NaN here: nothing new to draw
    assert len(sent) == 3


def test_zoom_is_synced_for_presenter_mode():
    hm = Heatmap(np.eye(2), zoom=1.35)
    assert wire_state(hm)["zoom"] == 1.35
    with pytest.raises(Exception, match="zoom"):
        Heatmap(zoom=0.0)


def test_explicit_fully_masked_rows():
    hm = Heatmap()
    hm.set_data(np.ones((2, 3, 3)), fully_masked=[False, True, False])
    np.testing.assert_array_equal(hm.fully_masked, [[False, True, False]] * 2)


def test_labels_are_kept_only_while_they_fit():
    hm = Heatmap()
    hm.set_data(np.zeros((2, 2)), row_labels=["a", "b"], col_labels=["x", "y"])
    hm.set_data(np.ones((2, 2)))
    assert hm.row_labels == ["a", "b"]
    hm.set_data(np.ones((3, 2)))
    assert hm.row_labels == [] and hm.col_labels == ["x", "y"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"values": np.zeros(3)}, r"values: expected a non-empty \(R, C\) or \(P, R, C\)"),
        ({"values": np.zeros((0, 2))}, "values: expected a non-empty"),
        ({"values": np.zeros((2, 3)), "masked": np.zeros((2, 2), bool)}, "masked: shape"),
        ({"values": np.zeros((2, 3)), "fully_masked": np.zeros(3, bool)}, "fully_masked: shape"),
        ({"values": np.zeros((2, 3)), "row_labels": ["a"]}, "row_labels: expected 2 labels"),
        ({"values": np.zeros((2, 3)), "panel_titles": ["a", "b"]}, "panel_titles: expected 1"),
        ({"values": np.zeros((2, 3)), "nonsense": 1}, "unknown trait 'nonsense'"),
    ],
)
def test_set_data_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Heatmap().set_data(**kwargs)


def test_matrix_of_small_multiples_is_an_error():
    with pytest.raises(ValueError, match="matrix: this heatmap has 2 panels"):
        _ = Heatmap(np.zeros((2, 3, 3))).matrix
    with pytest.raises(ValueError, match="matrix: no data yet"):
        _ = Heatmap().matrix


# --- colour limits ----------------------------------------------------------------------------


def test_limits_ignore_masked_and_non_finite_cells():
    values = np.array([[-5.0, 1.0], [3.0, -np.inf]], dtype=np.float32)
    masked = np.array([[True, False], [False, True]])
    assert color_limits(values, masked) == (1.0, 3.0)
    hm = Heatmap()
    hm.set_data(values, masked)
    assert hm.limits == [1.0, 3.0]


def test_limits_fixed_symmetric_and_degenerate():
    values = np.array([[-1.0, 4.0]], dtype=np.float32)
    assert color_limits(values, vmin=0.0, vmax=1.0) == (0.0, 1.0)
    assert color_limits(values, symmetric=True) == (-4.0, 4.0)
    assert color_limits(np.full((2, 2), 3.0)) == (2.5, 3.5)
    assert color_limits(values, vmin=5.0) == (5.0, 6.0)
    assert color_limits(values, vmax=-2.0) == (-3.0, -2.0)
    assert color_limits(np.full((2, 2), -np.inf)) == (0.0, 1.0)
    hm = Heatmap(values, vmin=0.0)
    assert hm.limits == [0.0, 4.0]
    hm.vmax = 10.0
    assert hm.limits == [0.0, 10.0]
    hm.symmetric, hm.vmin, hm.vmax = True, None, None
    assert hm.limits == [-4.0, 4.0]


# --- clicks -----------------------------------------------------------------------------------


def test_click_message_from_the_browser_reaches_the_handler():
    hm = Heatmap(np.zeros((2, 3, 4)))
    assert not hm.clickable
    clicks = []
    hm.on_click(lambda row, col, panel: clicks.append((row, col, panel)))
    assert hm.clickable
    # exactly what the front end's model.send({...}) arrives as in the kernel
    content = {"event": "click", "panel": 1, "row": 2, "col": 3}
    hm._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})
    hm.click(0, 1)
    assert clicks == [(2, 3, 1), (0, 1, 0)]
    with pytest.raises(ValueError, match=r"click: cell \(0, 3, 0\) outside"):
        hm.click(3, 0)


def test_click_handler_can_be_removed():
    hm = Heatmap(np.zeros((2, 2)))
    clicks = []

    def handler(row, col, panel):
        clicks.append(row)

    hm.on_click(handler)
    hm.on_click(handler, remove=True)
    hm.click(1, 1)
    assert clicks == [] and not hm.clickable


# --- token lines ------------------------------------------------------------------------------


def test_token_lines_data_and_selection():
    w = torch.softmax(torch.randn(3, 4, generator=torch.Generator().manual_seed(0)), -1)
    tl = TokenLines(w, ["a", "b", "c"], ["w", "x", "y", "z"], selected=2)
    np.testing.assert_array_equal(decode(wire_state(tl)["weights"]), w.numpy())
    assert tl.key_tokens == ["w", "x", "y", "z"] and tl.selected == 2
    tl.set_data(w[:2, :2], ["p", "q"])
    assert tl.selected == -1  # out of range after the shrink
    assert tl.key_tokens == ["p", "q"]  # square weights: keys default to the queries
    with pytest.raises(ValueError, match="key_tokens: expected 2 labels, got 3"):
        tl.set_data(w[:2, :2], ["p", "q"], ["a", "b", "c"])
    with pytest.raises(ValueError, match=r"weights: expected a non-empty \(Tq, Tk\)"):
        tl.set_data(w[0], ["p"])


# --- what every canvas view shares: canvas.py and static/common.js --------------------------

VIEW_JS = {Heatmap: "heatmap", TokenLines: "token_lines", SeriesChart: "chart"}


def make_view(view: type[CanvasView], **traits) -> CanvasView:
    return view(name="chart", **traits) if view is SeriesChart else view(**traits)


@pytest.mark.parametrize("view", VIEW_JS, ids=lambda v: v.__name__)
def test_each_view_loads_its_own_javascript_after_the_shared_code(view):
    """One module per view: common.js, then the view's own file and no other view's (the token
    lines were once a `_kind` of heatmap.js)."""
    own = VIEW_JS[view]
    src = make_view(view)._esm
    assert src == esm(own)
    assert src.startswith((STATIC / "common.js").read_text())
    assert src.endswith((STATIC / f"{own}.js").read_text())
    others = [name for name in VIEW_JS.values() if name != own]
    assert not any((STATIC / f"{name}.js").read_text() in src for name in others)
    assert "_kind" not in view.class_traits()


@pytest.mark.parametrize("view", VIEW_JS, ids=lambda v: v.__name__)
def test_every_canvas_view_declares_zoom(view):
    """zoom is a trait of the class (CanvasView), synced from the start: explorers set it on
    every canvas view alike instead of adding it to some in presenter mode."""
    assert issubclass(view, CanvasView)
    assert "zoom" in view.class_traits()
    widget = make_view(view, zoom=1.35)
    assert wire_state(widget)["zoom"] == 1.35
    assert widget.traits()["zoom"] is view.class_traits()["zoom"]


def _shared_names(src: str) -> set[str]:
    """The names a view file takes from `common` in its `const { ... } = common;`."""
    found = re.search(r"^const \{([^}]*)\} = common;$", src, re.M)
    assert found, "a view file takes its shared names with `const { ... } = common;`"
    return {name.strip() for name in found.group(1).split(",") if name.strip()}


@pytest.mark.parametrize("name", VIEW_JS.values())
def test_a_view_file_says_where_every_shared_name_comes_from(name):
    """Every name of common.js a view file uses is one it takes from `common` by name; it takes
    only names that common returns, and uses each."""
    common = (STATIC / "common.js").read_text()
    inner = set(re.findall(r"^  (?:function|const|let) (\w+)", common, re.M))  # makeCommon's
    returned = re.search(r"^  return \{([^}]*)\};\n\}\s*$", common, re.M)
    assert returned, "common.js ends with makeCommon's `return { ... };`"
    exported = {n.strip() for n in returned.group(1).split(",") if n.strip()}
    src = (STATIC / f"{name}.js").read_text()
    taken = _shared_names(src)
    code = re.sub(r"//[^\n]*", "", src.split("} = common;", 1)[1])
    used = set(re.findall(r"[A-Za-z_$][\w$]*", code))
    own = set(re.findall(r"^(?:export )?(?:function|const|let) (\w+)", code, re.M))
    assert taken <= exported, taken - exported
    assert not (used & inner) - taken - own, f"{name}.js uses common.js names it does not take"
    assert taken <= used, f"{name}.js takes names it does not use: {taken - used}"
    assert "STYLE" in taken or "STYLE" not in used


# --- export -----------------------------------------------------------------------------------


@pytest.fixture
def masked_heatmap() -> Heatmap:
    values = np.array(
        [[0.0, 1.0, -np.inf], [0.5, 0.25, -np.inf], [-np.inf, -np.inf, -np.inf]], np.float32
    )
    hm = Heatmap(title="exported", colormap="viridis", vmin=0.0, vmax=1.0)
    hm.set_data(
        values, np.isinf(values), row_labels=["q0", "q1", "q2"], col_labels=["k0", "k1", "k2"]
    )
    return hm


def test_csv_holds_every_cell_exactly(masked_heatmap, tmp_path):
    paths = masked_heatmap.export(tmp_path, "w", formats=("csv",))
    assert paths == [tmp_path / "w.csv"]
    with paths[0].open() as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == CSV_HEADER
    assert len(rows) == 1 + 9
    got = np.array([np.float32(float(r[6])) for r in rows[1:]]).reshape(3, 3)
    np.testing.assert_array_equal(got, masked_heatmap.matrix)
    assert rows[3][3:8] == ["q0", "2", "k2", "-inf", "1"]  # row 0, col 2: masked
    assert [r[8] for r in rows[1:]] == ["0"] * 6 + ["1"] * 3  # the last row attends to nothing
    assert masked_heatmap.csv_table()[1][1][6] == 1.0


def test_figure_draws_the_same_numbers(masked_heatmap):
    fig = masked_heatmap.figure()
    image = fig.axes[0].images[0]
    drawn = np.ma.filled(image.get_array(), np.nan)
    expected = np.where(np.isinf(masked_heatmap.matrix), np.nan, masked_heatmap.matrix)
    np.testing.assert_array_equal(drawn, expected)
    assert image.get_clim() == (0.0, 1.0) and image.get_cmap().name.startswith("viridis")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["q0", "q1", "q2"]


def _has_colour(pixels: np.ndarray, rgb: tuple[float, float, float]) -> bool:
    return bool((np.abs(pixels[..., :3] - np.array(rgb)) < 1.5 / 255).all(axis=-1).any())


def test_png_shows_colormap_hatching_and_grey_rows(masked_heatmap, tmp_path):
    (png,) = masked_heatmap.export(tmp_path, "w", formats=("png",))
    pixels = mpimg.imread(png)
    viridis = mpl.colormaps["viridis"]
    for value in (0.0, 1.0, 0.5):
        assert _has_colour(pixels, viridis(value)[:3]), value
    assert _has_colour(pixels, mpl.colors.to_rgb(FULLY_MASKED_FACE))
    assert _has_colour(pixels, mpl.colors.to_rgb(MASKED_HATCH))


def test_svg_has_hatch_pattern_and_title(masked_heatmap, tmp_path):
    (svg,) = masked_heatmap.export(tmp_path, "w", formats=("svg",))
    root = ET.parse(svg).getroot()
    tags = {el.tag.split("}")[-1] for el in root.iter()}
    assert {"image", "pattern"} <= tags
    assert "exported" in svg.read_text()


def test_export_errors(tmp_path):
    with pytest.raises(ValueError, match="formats: expected some of"):
        Heatmap(np.zeros((2, 2))).export(tmp_path, "x", formats=("jpg",))
    with pytest.raises(ValueError, match="nothing to export"):
        Heatmap().export(tmp_path, "x")


# --- layout in the browser: static/heatmap.js -------------------------------------------------


def grid_span(g: dict) -> tuple[int, int]:
    """(top, bottom) in px of the grids: the first panel's top to the last panel's bottom."""
    return g["panels"][0]["y"], g["panels"][-1]["y"] + g["R"] * g["cell"]


def _names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


BAR_CASES = {
    # the AttentionExplorer's output (Tq, M) = (6, 16) at its old size: a 72 px grid whose
    # colour bar used to be 100 px, hanging below it
    "short grid": {"R": 6, "C": 16, "panelSize": 200, "title": "output",
                   "rowLabels": _names("q", 6)},
    "one row": {"R": 1, "C": 8, "panelSize": 200},
    "tall grid": {"R": 40, "C": 40, "panelSize": 400, "title": "t"},  # the bar used to stop at 220
    "two panels": {"P": 2, "R": 16, "C": 32, "panelSize": 300, "titles": ["a", "b"],
                   "colLabels": _names("", 32), "title": "outputs"},
    "wrapped small multiples": {"P": 8, "R": 6, "C": 6, "panelSize": 120, "title": "heads",
                                "titles": _names("head ", 8), "legend": ["masked", "full"]},
}  # fmt: skip


@needs_node
def test_every_view_module_loads():
    """Each view's module (common.js + its file) evaluates and exports render: a name left out
    of `const { ... } = common;` at a file's top level would throw here."""
    script = """
    for (const src of JSON.parse(process.env.VIEW_ESMS)) {
      const url = "data:text/javascript;base64," + Buffer.from(src).toString("base64");
      console.log(typeof (await import(url)).default.render);
    }
    """
    out = run_node(script, {"VIEW_ESMS": json.dumps([esm(name) for name in VIEW_JS.values()])})
    assert out.split() == ["function"] * len(VIEW_JS)


@needs_node
@pytest.mark.parametrize("spec", BAR_CASES.values(), ids=BAR_CASES.keys())
def test_colour_bar_is_exactly_as_tall_as_the_grids(spec):
    (g,) = js_layouts(spec)
    top, bottom = grid_span(g)
    assert (g["barTop"], g["barTop"] + g["barH"]) == (top, bottom)
    assert (g["gridTop"], g["gridBottom"]) == (top, bottom)
    assert g["height"] >= bottom + 6  # room for the lowest tick's label
    assert g["legendTop"] >= bottom + 8  # the legend starts below the bar, not over it
    assert g["height"] >= g["legendTop"] + 18 * len(g["legend"]) - 6
    assert (g["barH"] - 1) / g["barTicks"] >= 17 or g["barTicks"] == 1  # labels do not collide


@needs_node
@pytest.mark.parametrize("rows", [6, 16, 24, 32])
def test_every_row_is_labelled_up_to_32_rows(rows):
    # the PositionalEncodingExplorer's outputs: 16 tokens by 32 dims once got every other label
    positional, square = js_layouts(
        {"P": 2, "R": rows, "C": 32, "panelSize": 320, "cellSize": max(320 // 32, 7),
         "rowLabels": _names("tok ", rows), "colLabels": _names("", 32)},
        {"R": rows, "C": rows, "panelSize": LABELLED_CELL_MIN * 32, "rowLabels": _names("r", rows)},
    )  # fmt: skip
    for g in (positional, square):
        assert g["labelStep"] == 1, g["cell"]
        assert LABELLED_CELL_MIN <= g["labelPx"] <= min(11, g["cell"])  # fits its row


@needs_node
def test_labels_skip_rows_only_below_7_px_and_never_shrink_below_7_px():
    small, large = js_layouts(
        {"R": 64, "C": 64, "panelSize": 256, "rowLabels": _names("r", 64)},  # 4 px cells
        {"R": 4, "C": 4, "panelSize": 160, "rowLabels": _names("r", 4)},  # 40 px cells
    )
    assert (small["cell"], small["labelStep"], small["labelPx"]) == (4, 2, 7)
    assert (large["labelStep"], large["labelPx"]) == (1, 11)


@needs_node
def test_auto_cell_size_is_what_the_browser_draws():
    sizes = [(280, 3, 5), (200, 6, 16), (300, 16, 32), (240, 64, 64), (60, 1, 200), (999, 1, 1)]
    layouts = js_layouts(*({"R": r, "C": c, "panelSize": ps} for ps, r, c in sizes))
    assert [g["cell"] for g in layouts] == [auto_cell_size(*size) for size in sizes]


def test_constructor_takes_the_masks_like_set_data():
    """Heatmap(values, masked) once dropped the mask: set_data(values) reset it."""
    masked = np.zeros((2, 3), dtype=bool)
    masked[1] = True
    hm = Heatmap(np.ones((2, 3)), masked)
    assert hm.masked.shape == (1, 2, 3) and hm.masked[0, 1].all() and not hm.masked[0, 0].any()
    assert hm.fully_masked.tolist() == [[False, True]]  # the masked row attends to nothing
    kw = Heatmap(np.ones((2, 3)), masked=masked, fully_masked=np.zeros(2, dtype=bool))
    assert np.array_equal(kw.masked, hm.masked) and not kw.fully_masked.any()
    with pytest.raises(ValueError, match="masked, fully_masked: expected values"):
        Heatmap(masked=masked)


def test_decade_ticks_span_the_values_of_a_log_axis():
    assert decade_ticks([0.03, 250.0]) == [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    assert decade_ticks([10.0, 100.0]) == [10.0, 100.0]
