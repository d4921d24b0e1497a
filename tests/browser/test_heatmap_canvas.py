"""The heatmap's and the token lines' canvases drawn by Chromium from the real modules (no
Jupyter)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.browser.blank_page import on_blank_page
from widgets.views.heatmap import Heatmap
from widgets.views.style import MASKED_FACE, MASKED_HATCH, TEXT, esm, lut_rgb
from widgets.views.token_lines import TokenLines

pytestmark = pytest.mark.browser


def _names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


_RENDER_JS = """async ([src, state, data, probe]) => {
  const mod = await import("data:text/javascript;base64," + btoa(src));
  state.values.buffer = new DataView(new Float32Array(data).buffer);
  if (state.masked) state.masked.buffer = new DataView(new Uint8Array(state.masked.data).buffer);
  const model = {get: (k) => state[k], on() {}, off() {}, send() {}};
  const el = document.getElementById("el");
  mod.default.render({model, el});
  await new Promise((resolve) => setTimeout(resolve, 50));
  const layout = JSON.parse(el.dataset.layout);
  const canvas = el.querySelector("canvas");
  const ctx = canvas.getContext("2d");
  return (new Function("layout", "canvas", "ctx", probe))(layout, canvas, ctx);
}"""


def _draw_in_chromium(chromium, tmp_path, hm: Heatmap, probe: str) -> dict:
    """Render `hm` with the real module in a blank page; return what the JS `probe` returns."""
    state = {k: v for k, v in hm.get_state().items() if not isinstance(v, dict)}
    state["values"] = {"shape": list(hm.values.shape), "dtype": "float32"}
    data = hm.values.reshape(-1).tolist()
    if hm.masked is not None:
        state["masked"] = {"shape": list(hm.masked.shape), "dtype": "bool",
                           "data": hm.masked.reshape(-1).astype(int).tolist()}  # fmt: skip
    return on_blank_page(chromium, tmp_path, _RENDER_JS, [esm("heatmap"), state, data, probe])


def test_canvas_colour_bar_pixels_span_the_grid(chromium, tmp_path):
    """Draw in Chromium with the real module; the bar's painted column matches the grid's."""
    hm = Heatmap(
        np.linspace(-1, 1, 6 * 16).reshape(6, 16), title="output (Tq, M) = (6, 16)",
        row_labels=_names("q", 6), panel_size=200, colormap="RdBu_r", symmetric=True,
    )  # fmt: skip
    found = _draw_in_chromium(
        chromium,
        tmp_path,
        hm,
        """
        // the run of painted (alpha > 0) pixels through row y0 of pixel column x
        const run = (x, y0) => {
          const column = ctx.getImageData(x, 0, 1, canvas.height).data;
          const on = (y) => y >= 0 && y < canvas.height && column[4 * y + 3] > 0;
          let top = y0;
          let bottom = y0;
          while (on(top - 1)) top -= 1;
          while (on(bottom + 1)) bottom += 1;
          return on(y0) ? [top, bottom] : null;
        };
        const middle = Math.round((layout.gridTop + layout.gridBottom) / 2);
        return {
          layout, size: [canvas.width, canvas.height],
          grid: run(layout.gridLeft + 3, middle), bar: run(layout.barX + 6, middle),
        };
        """,
    )
    layout = found["layout"]
    assert layout["barH"] == layout["gridBottom"] - layout["gridTop"] == 6 * layout["cell"]
    assert found["size"] == [layout["width"], layout["height"]]  # device_scale_factor=1
    # both outlined 1 px outside: painted from top - 1 to bottom, no overhang either way
    span = [layout["gridTop"] - 1, layout["gridBottom"]]
    assert found["grid"] == span
    assert found["bar"] == span


_CELL_CENTRES_JS = """
const out = [];
for (let r = 0; r < ROWS; r++) {
  for (let c = 0; c < COLS; c++) {
    const x = Math.floor(layout.gridLeft + (c + 0.5) * layout.cell);
    const y = Math.floor(layout.gridTop + (r + 0.5) * layout.cell);
    out.push(Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3)));
  }
}
return out;
"""


def _rgb(hex_colour: str) -> list[int]:
    return [int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]


def _table_colour(colormap: str, t: np.ndarray) -> np.ndarray:
    """The colour the view means for t in [0, 1]: its colour table, linearly interpolated
    (style.py's tables are checked against matplotlib's colour maps in test_style.py)."""
    table = np.array(lut_rgb(colormap), dtype=float)  # (n, 3)
    x = np.clip(t, 0, 1) * (len(table) - 1)
    i = np.minimum(np.floor(x).astype(int), len(table) - 2)
    f = (x - i)[..., None]
    return np.round(table[i] * (1 - f) + table[i + 1] * f)


@pytest.mark.parametrize("colormap", ["viridis", "PuOr_r"])
def test_cell_colours_are_the_colour_table_s(chromium, tmp_path, colormap):
    """Each cell's centre pixel is the colour table's colour for its value, within 1 of 255 per
    channel; values beyond the limits take the end colours; NaN and masked cells are hatched."""
    values = np.array(
        [np.linspace(0.0, 1.0, 8), [-0.5, 2.0, 0.3, 0.7, np.nan, 0.5, 0.1, 0.9]],
        dtype=np.float32,
    )
    masked = np.zeros_like(values, dtype=bool)
    masked[1, 5] = True
    hm = Heatmap(values, masked=masked, colormap=colormap, vmin=0.0, vmax=1.0, panel_size=320)
    probe = _CELL_CENTRES_JS.replace("ROWS", "2").replace("COLS", "8")
    got = np.array(_draw_in_chromium(chromium, tmp_path, hm, probe)).reshape(2, 8, 3)
    expected = _table_colour(colormap, np.nan_to_num(values))
    plain = ~masked & np.isfinite(values)
    assert np.abs(got[plain] - expected[plain]).max() <= 1, (got[plain], expected[plain])
    hatch = [_rgb(MASKED_FACE), _rgb(MASKED_HATCH)]  # a hatched cell shows only these two
    assert got[1, 4].tolist() in hatch  # NaN
    assert got[1, 5].tolist() in hatch  # masked 0.5: not its colour


@pytest.mark.parametrize("blocked", [None, (), ((0, 0),), ((2, 7),)])
def test_masked_legend_only_when_a_cell_is_masked(chromium, tmp_path, blocked):
    """The "masked" legend (40 px beside the colour bar) is drawn when any cell is masked, the
    first or the last one included, and not for an all-False mask or no mask at all."""
    values = np.linspace(0.0, 1.0, 3 * 8, dtype=np.float32).reshape(3, 8)
    masked = None
    if blocked is not None:
        masked = np.zeros_like(values, dtype=bool)
        for r, c in blocked:
            masked[r, c] = True
    hm = Heatmap(values, masked=masked, vmin=0.0, vmax=1.0, panel_size=240)
    found = _draw_in_chromium(chromium, tmp_path, hm, "return layout;")
    legend = found["width"] - found["barX"] - 70  # the bar's column: 70 px, +40 with a legend
    assert legend == (40 if blocked else 0), found


@pytest.mark.parametrize("zoom", [1.0, 1.25])
def test_labels_are_where_and_what_text_drawn_there_is(chromium, tmp_path, zoom):
    """The row and column labels (copied from a strip drawn once, where they land on whole
    pixels) match the same text drawn straight onto a canvas at the label positions."""
    hm = Heatmap(
        np.arange(20 * 24, dtype=float).reshape(20, 24), row_labels=_names("q", 20),
        col_labels=_names("k", 24), cell_size=12, title="weights",
    )  # fmt: skip
    hm.zoom = zoom
    found = _draw_in_chromium(
        chromium,
        tmp_path,
        hm,
        f"""
        const dpr = {zoom};
        const ref = document.createElement("canvas");
        ref.width = canvas.width;
        ref.height = canvas.height;
        const r = ref.getContext("2d");
        r.fillStyle = "{TEXT}";
        r.font = `${{layout.labelPx}}px sans-serif`;
        r.textBaseline = "middle";
        const left = layout.gridLeft, top = layout.gridTop, cell = layout.cell;
        r.textAlign = "right";
        r.setTransform(dpr, 0, 0, dpr, 0, 0);
        for (let i = 0; i < 20; i += layout.labelStep) {{
          r.fillText("q" + i, left - 4, top + (i + 0.5) * cell);
        }}
        r.textAlign = "left";
        for (let j = 0; j < 24; j += layout.labelStep) {{
          r.setTransform(0, -dpr, dpr, 0, (left + (j + 0.5) * cell) * dpr, (top - 4) * dpr);
          r.fillText("k" + j, 0, 0);
        }}
        // label areas only: left of the grid, and above it (below the title)
        const areas = [[0, top * dpr, left * dpr - 1, (top + 20 * cell) * dpr],
                       [left * dpr, 22 * dpr, (left + 24 * cell) * dpr, top * dpr - 1]];
        let worst = 0, inked = 0;
        for (const [x0, y0, x1, y1] of areas) {{
          const [x, y] = [Math.floor(x0), Math.floor(y0)];
          const [w, h] = [Math.floor(x1 - x0), Math.floor(y1 - y0)];
          const a = ctx.getImageData(x, y, w, h).data;
          const b = r.getImageData(x, y, w, h).data;
          for (let i = 0; i < a.length; i++) {{
            worst = Math.max(worst, Math.abs(a[i] - b[i]));
            if (i % 4 === 3 && b[i] > 128) inked += 1;
          }}
        }}
        return {{worst, inked}};
        """,
    )
    assert found["inked"] > 200  # the reference has text in those areas: the check compares ink
    assert found["worst"] == 0, found  # pixel for pixel


_LINES_JS = """async ([src, state, data]) => {
  const mod = await import("data:text/javascript;base64," + btoa(src));
  state.weights.buffer = new DataView(new Float32Array(data).buffer);
  const model = {get: (k) => state[k], on() {}, off() {}, set() {}, save_changes() {}};
  const el = document.getElementById("el");
  mod.default.render({model, el});
  const canvas = el.querySelector("canvas.ac-tl-canvas");
  const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let inked = 0;
  for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) inked += 1;
  return {redraws: el.dataset.redraws, label: canvas.getAttribute("aria-label"), inked,
          size: [canvas.width, canvas.height]};
}"""


def _draw_lines_in_chromium(chromium, tmp_path, tl: TokenLines) -> dict:
    """Render `tl` with static/token_lines.js in a blank page; return what it drew."""
    state = {k: v for k, v in tl.get_state().items() if not isinstance(v, dict)}
    state["weights"] = {"shape": list(tl.weights.shape), "dtype": "float32"}
    data = tl.weights.reshape(-1).tolist()
    return on_blank_page(chromium, tmp_path, _LINES_JS, [esm("token_lines"), state, data])


def test_token_lines_draw_from_their_own_module(chromium, tmp_path):
    """static/token_lines.js draws a line per weight, only the selected query's when one is
    selected, at zoom times the size."""
    w = np.full((4, 5), 0.2, dtype=np.float32)
    tokens = ["the", "cat", "sat", "down"], ["a", "b", "c", "d", "e"]

    def draw(**traits) -> dict:
        return _draw_lines_in_chromium(chromium, tmp_path, TokenLines(w, *tokens, **traits))

    every, one, zoomed = draw(title="head 0"), draw(selected=1), draw(title="head 0", zoom=2.0)
    assert every["redraws"] == "1"
    assert every["label"] == "head 0: 4 query tokens, 5 key tokens"
    assert every["inked"] > one["inked"] > 0  # 20 lines, then the selected query's 5
    assert zoomed["size"] == [2 * every["size"][0], 2 * every["size"][1]]
