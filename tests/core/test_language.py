"""The message catalog behind the explorers' and checkers' Chinese (attention/language)."""

from __future__ import annotations

import pytest

from attention import language
from attention.language import Catalog


@pytest.fixture
def zh(monkeypatch):
    monkeypatch.setenv(language.ENV, "zh")


def test_english_by_default_and_unchanged(monkeypatch):
    monkeypatch.delenv(language.ENV, raising=False)
    assert language.language() == "en"
    assert language.translate("Not yet: x") == "Not yet: x"
    monkeypatch.setenv(language.ENV, "zh_CN")
    assert language.language() == "zh"


def test_exact_then_templates_with_translated_placeholders():
    cat = Catalog(
        {
            "weights": "权重",
            "Not yet: {why}": "还不对：{why}",
            "{name} divides by sqrt(d_model)": "{name} 除以了 sqrt(d_model)",
            "row {i} of {name}": "{name} 的第 {i} 行",
        }
    )
    assert cat.translate("weights") == "权重"
    assert cat.translate(" weights ") == " 权重 "
    assert cat.translate("Not yet: weights") == "还不对：权重"
    assert (
        cat.translate("Not yet: my_f divides by sqrt(d_model)")
        == "还不对：my_f 除以了 sqrt(d_model)"
    )
    assert cat.translate("row 3 of weights") == "权重 的第 3 行"


def test_unknown_text_stays_english_and_is_listed():
    cat = Catalog({})
    before = language.missing()
    assert cat.translate("an untranslated readout") == "an untranslated readout"
    assert cat.translate("q_rope") == "q_rope"  # an identifier is not missing text
    assert language.missing() - before == {"an untranslated readout"}


def test_bad_catalog_entries_are_named():
    with pytest.raises(ValueError, match=r"'Not yet: \{why\}': its translation '还不对' must use"):
        Catalog({"Not yet: {why}": "还不对"})
    with pytest.raises(ValueError, match="name each placeholder"):
        Catalog({"Not yet: {}": "还不对：{}"})
    with pytest.raises(ValueError, match="expected a string, got 3"):
        Catalog({"x": 3})


def test_the_shipped_catalog_loads_and_translates_a_checker_line(zh):
    assert language.translate("Not yet: x") == "还不对：x"


def test_chinese_figures_draw_every_glyph(monkeypatch):
    """After use_chinese(), a figure with Chinese text draws it: no missing-glyph warning."""
    import warnings

    import matplotlib as mpl
    import matplotlib.pyplot as plt
    import numpy as np

    from widgets.language import use_chinese

    monkeypatch.setenv(language.ENV, "en")
    with mpl.rc_context(), warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "Glyph ... missing from font(s)" included
        assert use_chinese() is not None, "no CJK font: apt-get install fonts-noto-cjk"
        assert language.language() == "zh"
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.set_title("注意力权重 (weights) 0.50")
        ax.set_xlabel("键 key")
        fig.canvas.draw()
        pixels = np.asarray(fig.canvas.buffer_rgba())
        plt.close(fig)
    assert (pixels[..., :3] < 128).any()  # something dark was drawn


def test_without_a_cjk_font_the_learner_is_told(monkeypatch):
    import matplotlib as mpl

    from widgets import language as wl

    monkeypatch.setenv(language.ENV, "en")
    monkeypatch.setattr(wl, "CJK_FONTS", ("No Such Font",))
    with mpl.rc_context(), pytest.warns(UserWarning, match="apt-get install fonts-noto-cjk"):
        assert wl.use_chinese() is None
