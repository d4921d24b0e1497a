"""The heatmap component's canvas drawn by Chromium from the real module (no Jupyter)."""

from __future__ import annotations

import numpy as np
import pytest

from widgets.views.heatmap import Heatmap
from widgets.views.style import esm

pytestmark = pytest.mark.browser


def _names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def test_canvas_colour_bar_pixels_span_the_grid(chromium, tmp_path):
    """Draw in Chromium with the real module; the bar's painted column matches the grid's."""
    hm = Heatmap(
        np.linspace(-1, 1, 6 * 16).reshape(6, 16), title="output (Tq, M) = (6, 16)",
        row_labels=_names("q", 6), panel_size=200, colormap="RdBu_r", symmetric=True,
    )  # fmt: skip
    state = {k: v for k, v in hm.get_state().items() if not isinstance(v, dict)}
    state["values"] = {"shape": list(hm.values.shape), "dtype": "float32"}
    data = hm.values.reshape(-1).tolist()
    page_html = tmp_path / "page.html"
    page_html.write_text("<!doctype html><body style='margin:0'><div id='el'></div></body>")
    context = chromium.new_context(device_scale_factor=1)
    try:
        page = context.new_page()
        page.goto(page_html.as_uri())
        found = page.evaluate(
            """async ([src, state, data]) => {
              const mod = await import("data:text/javascript;base64," + btoa(src));
              state.values.buffer = new DataView(new Float32Array(data).buffer);
              const model = {get: (k) => state[k], on() {}, off() {}, send() {}};
              const el = document.getElementById("el");
              mod.default.render({model, el});
              await new Promise((resolve) => setTimeout(resolve, 50));
              const layout = JSON.parse(el.dataset.layout);
              const canvas = el.querySelector("canvas");
              const ctx = canvas.getContext("2d");
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
            }""",
            [esm("heatmap"), state, data],
        )
    finally:
        context.close()
    layout = found["layout"]
    assert layout["barH"] == layout["gridBottom"] - layout["gridTop"] == 6 * layout["cell"]
    assert found["size"] == [layout["width"], layout["height"]]  # device_scale_factor=1
    # both outlined 1 px outside: painted from top - 1 to bottom, no overhang either way
    span = [layout["gridTop"] - 1, layout["gridBottom"]]
    assert found["grid"] == span
    assert found["bar"] == span
