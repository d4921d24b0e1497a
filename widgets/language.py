"""Switch a kernel's course to Chinese: explorers, checkers and matplotlib's text.

The first code cell of every Chinese lesson runs `use_chinese()`. It chooses Chinese for the
explorers and checkers (attention.language) and puts a CJK font behind matplotlib's default, so
a figure's Chinese draws as characters, not boxes; the English text of a figure keeps its usual
font (matplotlib falls back glyph by glyph).
"""

from __future__ import annotations

import warnings

from attention.language import set_language

# Fonts with Simplified Chinese glyphs, best first: Debian's fonts-noto-cjk, then others
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans CJK JP", "Source Han Sans SC", "WenQuanYi Zen Hei")


def cjk_font() -> str | None:
    """The first installed font of CJK_FONTS, or None."""
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    return next((name for name in CJK_FONTS if name in names), None)


def use_chinese() -> str | None:
    """Chinese explorers and checkers, and a CJK font for matplotlib; returns the font used."""
    import matplotlib as mpl

    set_language("zh")
    font = cjk_font()
    if font is None:
        warnings.warn(
            "no Chinese font found for matplotlib (looked for "
            + ", ".join(CJK_FONTS)
            + "): figures will show boxes for Chinese; on Debian/Ubuntu: apt-get install"
            " fonts-noto-cjk",
            stacklevel=2,
        )
        return None
    # a list of families is a fallback chain, glyph by glyph (matplotlib >= 3.6): Latin
    # letters and digits keep matplotlib's usual font, Chinese comes from the CJK one
    mpl.rcParams["font.family"] = ["DejaVu Sans", font]
    return font
