"""Chromium's canvases draw Chinese (issue 41): a Heatmap made with the course in Chinese,
rendered by the real module in a blank page (no Jupyter).

A character the fonts lack is drawn as the same .notdef box whatever it is ("tofu"), so two
different characters that draw the same pixels, or the pixels of a code point no font has,
mean missing glyphs. The heatmap's own Chinese (its title, the legend the JavaScript writes
from the `words` trait, the accessible name and the screen readers' table) is checked too.
"""

from __future__ import annotations

import numpy as np
import pytest

from attention import language
from tests.browser.blank_page import on_blank_page
from widgets.views.heatmap import Heatmap
from widgets.views.style import esm

pytestmark = pytest.mark.browser

_RENDER_JS = """async ([src, state, data, masked]) => {
  const utf8 = unescape(encodeURIComponent(src));
  const mod = await import("data:text/javascript;base64," + btoa(utf8));
  state.values.buffer = new DataView(new Float32Array(data).buffer);
  state.masked.buffer = new DataView(new Uint8Array(masked).buffer);
  const model = {get: (k) => state[k], on() {}, off() {}, send() {}};
  const el = document.getElementById("el");
  mod.default.render({model, el});
  const box = () => el.querySelector(".ac-sr");
  for (let i = 0; i < 100 && !(box() && box().dataset.ready); i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const layout = JSON.parse(el.dataset.layout);
  const canvas = el.querySelector("canvas");
  const ctx = canvas.getContext("2d");
  // one character drawn alone at 40 px in the title's font: its pixels, as a string
  const glyph = (ch) => {
    const c = document.createElement("canvas");
    c.width = 60; c.height = 60;
    const g = c.getContext("2d");
    g.font = ctx.font.replace(/[0-9.]+px/, "40px");
    g.textBaseline = "top";
    g.fillText(ch, 5, 5);
    return Array.from(g.getImageData(0, 0, 60, 60).data.filter((_, i) => i % 4 === 3)).join(",");
  };
  ctx.font = state.title_font;
  const titlePixels = Array.from(ctx.getImageData(0, 0, canvas.width, layout.gridTop).data)
    .filter((a, i) => i % 4 === 3 && a > 0).length;
  return {
    aria: canvas.getAttribute("aria-label"),
    summary: box().querySelector("p").textContent,
    cells: Array.from(box().querySelectorAll("td")).map((td) => td.textContent),
    same: glyph("注") === glyph("意"),
    tofu: glyph("注") === glyph("\\u{10FFFD}") || glyph("意") === glyph("\\u{10FFFD}"),
    empty: glyph("注") === glyph(" "),
    control: glyph("\\u{10FFFD}") === glyph("\\u{10FFFC}"),  // two missing glyphs: the same box
    titlePixels,
  };
}"""


def test_a_chinese_heatmap_draws_its_glyphs(chromium, tmp_path, monkeypatch):
    monkeypatch.setenv(language.ENV, "zh")
    values = np.arange(16, dtype=np.float32).reshape(4, 4) / 16
    masked = np.triu(np.ones((4, 4), bool), 1)  # causal: the upper triangle masked
    hm = Heatmap(values, masked, title="weights", colorbar_label="weight", panel_size=200)
    assert hm.title == "权重" and hm.words["masked"] == "已掩蔽"
    state = {
        k: v for k, v in hm.get_state().items() if k not in ("values", "masked", "fully_masked")
    }
    state["values"] = {"shape": list(hm.values.shape), "dtype": "float32"}
    state["masked"] = {"shape": list(hm.masked.shape), "dtype": "bool"}
    state["title_font"] = "bold 13px sans-serif"
    found = on_blank_page(
        chromium,
        tmp_path,
        _RENDER_JS,
        [
            esm("heatmap"),
            state,
            values.reshape(-1).tolist(),
            masked.reshape(-1).astype(int).tolist(),
        ],
    )
    assert found["control"], "two code points no font has should draw the same box"
    # Chinese characters are drawn as themselves: different characters, different pixels,
    # none of them the box of a code point no font has, none of them blank
    assert not found["same"], "注 and 意 draw the same pixels: no CJK font (fonts-noto-cjk)"
    assert not found["tofu"], "a Chinese character draws as the missing-glyph box"
    assert not found["empty"]
    assert found["titlePixels"] > 50  # the title "权重" above the grid is painted
    # the JavaScript's own words in Chinese: the accessible name, the summary, masked cells
    assert found["aria"] == "权重: 1 x 4 x 4"
    assert found["summary"].startswith("权重：4 行 × 4 列，从 0 到 0.9375，6 个已掩蔽"), found
    assert found["cells"].count("已掩蔽") == 6
