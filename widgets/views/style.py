"""The one source of the views' colours, sizes and fonts, for Python, matplotlib and the browser.

The canvas code (static/*.js) never spells a colour itself: `js_style()` is written into each
view's ES module (`esm()`) and reaches the view's file as `common.STYLE`, so the browser and a
matplotlib export draw with the same numbers. The colour tables are matplotlib's colormaps
sampled at 33 evenly spaced points (the browser interpolates linearly between them); a test
checks them against matplotlib.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

CSS_PREFIX = "ac"

DEFAULT_CMAP = "viridis"
"""Sequential, perceptually uniform and colour-blind safe: the default for weights."""

DIVERGING_CMAP = "RdBu_r"
"""Diverging map (ColorBrewer), for scores that can be negative."""

PALETTES = ("default", "cvd")
"""Colour choices of the explorers: "cvd" swaps each map of CVD_SWAP for its alternative."""

CVD_SWAP = {"RdBu_r": "PuOr_r"}
"""The "cvd" palette: purple-orange instead of red-blue for the diverging panels. Simulated
(Machado et al. 2009, full severity), RdBu_r's dark red and dark blue ends come within
CIELAB dE 35 of each other for a protanope (54 for a deuteranope); PuOr_r's ends stay 76-79
apart for both, the red-green deficiencies that make up nearly all colour blindness (46 for
the rare tritanope). tests/explorers/test_accessibility.py computes this; the sequential default,
viridis, is already safe."""

PRESENTER_ZOOM = 1.35
"""Presenter mode scales every canvas view (cells, fonts, labels) by this factor."""

LUT_SIZE = 33
LUT_HEX: dict[str, str] = {
    "viridis": (
        "440154470d6048186a482374472d7b4537814240863e49893b528b375b8d33638d2f6b8e2c728e297a8e"
        "26828e23898e21918c1f988b1fa08822a78528ae8032b67a3fbc734ec36b5ec96270cf5784d44b98d83e"
        "addc30c2df23d8e219ece51bfde725"
    ),
    "cividis": (
        "00224e00285b002e6a0533711a386f273e6e32436d3b496c434e6c4b546c535a6d5a5f6e61656f686a71"
        "6f70737676767d7c788482798c8878938e789b9476a39a74aba072b4a76fbcae6cc4b468cdbb63d5c25e"
        "dec958e7d150f0d846f9e03afee838"
    ),
    "magma": (
        "0000040303120a0822130d341d114729115a36106b440f7651127c5d177f6a1c81762181832681902a81"
        "9c2e7faa337db73779c43c75d0416fdc4869e75263ef5d5ef56b5cf9795dfc8961fd9869fea772feb67c"
        "fec488fed395fde2a3fcf0b2fcfdbf"
    ),
    "RdBu_r": (
        "0530610e41791752901f63a82a71b23480b93f8ec0529dc86bacd184bcd99bc9e0aed3e6c2ddecd4e6f1"
        "e0ecf3ecf2f5f7f6f6f9eee7fbe5d8fddcc9fbccb4f8bb9ef5aa89ee9677e48066db6b55d05548c53e3d"
        "ba2832ab162a930e267c072267001f"
    ),
    "PuOr_r": (
        "2d004b390c5e4518715225845f3a916d529c7b6aa88a7eb39990bfa9a1cbb7b1d5c3c0ddcfcfe5dadcec"
        "e4e5f0eeeef3f7f7f6f9efe1fce8cdfee1b9fed59ffdc885fdbc6bf7ac52ee9b39e58a20d97b12cb6e0d"
        "bd6109ae55069e4c078d43077f3b08"
    ),
    "gray_r": (
        "fffffff7f7f7efefefe7e7e7dfdfdfd7d7d7cfcfcfc7c7c7bfbfbfb7b7b7afafafa7a7a79f9f9f979797"
        "8f8f8f8787877f7f7f7777776f6f6f6767675f5f5f5757574f4f4f4747473f3f3f3737372f2f2f272727"
        "1f1f1f1717170f0f0f070707000000"
    ),
}
"""Colormap name -> LUT_SIZE colours as one string of hex RGB triples, low to high."""

COLORMAPS = tuple(LUT_HEX)
"""Colormaps the browser component implements; matplotlib knows them by the same names."""

MASKED_FACE = "#eeeeee"  # background of a masked cell, under grey hatching
MASKED_HATCH = "#9a9a9a"
FULLY_MASKED_FACE = "#7a7a7a"  # a query row that may attend to nothing
TEXT = "#222222"
FONT = "11px sans-serif"
TITLE_FONT = "bold 12px sans-serif"

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
"""Okabe-Ito line and bar colours: distinguishable with every common form of colour blindness."""

CELL_MIN, CELL_MAX = 2, 40  # px; the browser clamps every heatmap cell size to this range
LABELLED_CELL_MIN = 7  # px; from here up every row and column gets a label (7-11 px font)
LABEL_FONT_MAX = 11  # px; row and column labels shrink towards LABEL_FONT_MIN in small cells
BAR_W = 12  # colour bar width, px

STATIC = Path(__file__).parent / "static"


def css(name: str) -> str:
    """Stable CSS class for browser tests and styling: css("heatmap") -> "ac-heatmap"."""
    return f"{CSS_PREFIX}-{name}"


def lut_rgb(name: str) -> list[tuple[int, int, int]]:
    """The colour table of a colormap as (r, g, b) bytes, low to high."""
    h = LUT_HEX[name]
    return [tuple(int(h[i + k : i + k + 2], 16) for k in (0, 2, 4)) for i in range(0, len(h), 6)]


def js_style() -> dict:
    """What the canvas code needs of this module, as JSON-able values."""
    return {
        "lutHex": LUT_HEX,
        "maskedFace": MASKED_FACE,
        "maskedHatch": MASKED_HATCH,
        "fullyMaskedFace": FULLY_MASKED_FACE,
        "text": TEXT,
        "font": FONT,
        "titleFont": TITLE_FONT,
        "palette": list(PALETTE),
        "cellMin": CELL_MIN,
        "cellMax": CELL_MAX,
        "labelledCellMin": LABELLED_CELL_MIN,
        "labelFontMax": LABEL_FONT_MAX,
        "barW": BAR_W,
    }


@cache
def esm(name: str) -> str:
    """The ES module of the canvas view static/<name>.js, with the views' shared code.

    One module string, no build step: static/common.js (which defines `makeCommon(STYLE)`),
    then `const common = makeCommon(<js_style() as JSON>);`, then the view's file, which takes
    every shared name it uses from `common` in its first statement.
    """
    shared = (STATIC / "common.js").read_text()
    own = (STATIC / f"{name}.js").read_text()
    return f"{shared}\nconst common = makeCommon({json.dumps(js_style())});\n\n{own}"
