"""Static pictures in the display data of views and explorers (widgets/views/picture.py)."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
import torch

import widgets
from attention.models.toy.checkpoints import load_reverse_model
from widgets.views import picture

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(autouse=True)
def _default_setting(monkeypatch: pytest.MonkeyPatch):
    """Every test starts from the default: no call to pictures(), no environment variable."""
    monkeypatch.delenv(picture.ENV, raising=False)
    monkeypatch.setattr(picture, "_setting", None)


def bundle(widget) -> dict:
    data = widget._repr_mimebundle_()
    return data[0] if isinstance(data, tuple) else data


def decode(data: dict) -> np.ndarray:
    from matplotlib.image import imread

    return imread(io.BytesIO(base64.b64decode(data["image/png"])), format="png")


def test_off_by_default_in_a_live_kernel():
    data = bundle(widgets.MaskExplorer())
    assert picture.pictures() is False
    assert WIDGET_VIEW in data
    assert "image/png" not in data
    assert data["text/plain"].startswith("MaskExplorer: 4 panels (")
    assert data["text/plain"].endswith(picture.LIVE_NOTE)


@pytest.mark.parametrize("value", ["1", "true", "on", "YES"])
def test_the_environment_variable_turns_pictures_on(monkeypatch, value):
    monkeypatch.setenv(picture.ENV, value)
    assert picture.pictures() is True
    data = bundle(widgets.Heatmap(torch.rand(3, 4)))
    assert WIDGET_VIEW in data  # a live front-end still draws the widget
    assert decode(data).ndim == 3


def test_pictures_call_overrides_the_environment(monkeypatch):
    monkeypatch.setenv(picture.ENV, "1")
    assert picture.pictures(False) is False
    assert "image/png" not in bundle(widgets.Heatmap(torch.rand(3, 4)))
    assert picture.pictures(True) is True
    assert picture.pictures() is True


def test_text_plain_is_deterministic_and_free_of_addresses():
    texts = {bundle(widgets.AttentionExplorer(seq_len=4))["text/plain"] for _ in range(2)}
    picture.pictures(True)
    texts.add(bundle(widgets.AttentionExplorer(seq_len=4))["text/plain"])
    assert len(texts) == 1, texts
    (text,) = texts
    assert "0x" not in text and "model_id" not in text and "\n" not in text
    assert text.startswith("AttentionExplorer: 7 panels (") and "weights" in text


def test_a_view_picture_is_its_figure_rendered_at_the_picture_dpi():
    picture.pictures(True)
    hm = widgets.Heatmap(torch.arange(12.0).reshape(3, 4), title="numbers", row_labels="abc")
    got = decode(bundle(hm))
    want = picture._rgba(hm.figure(), picture.DPI)
    assert got.shape == want.shape
    np.testing.assert_allclose(got * 255, want, atol=1)


@pytest.mark.parametrize(
    "make",
    [
        lambda: widgets.AttentionExplorer(seq_len=4, d_k=4),
        widgets.MaskExplorer,
        widgets.TokenAttentionView,
    ],
    ids=["attention", "mask", "tokens"],
)
def test_every_explorer_carries_a_picture_of_its_shown_panels(make):
    picture.pictures(True)
    explorer = make()
    data = bundle(explorer)
    image = decode(data)
    views = list(picture.shown_views(explorer))
    assert views and all(callable(v.figure) for v in views)
    assert image.shape[1] <= picture.MAX_WIDTH
    assert image.shape[0] > 100
    assert f"{len(views)} panel" in data["text/plain"]


def test_hidden_panels_are_left_out_of_the_picture():
    explorer = widgets.AttentionExplorer(seq_len=4, d_k=4)
    before = list(picture.shown_views(explorer))
    explorer.visible["Q and K"].value = False
    after = list(picture.shown_views(explorer))
    assert len(after) == len(before) - 2
    assert explorer.panels["q"] not in after
    assert bundle(explorer)["text/plain"].startswith("AttentionExplorer: 5 panels")


def test_training_progress_pictures_its_charts():
    picture.pictures(True)
    curve = widgets.TrainingProgress()
    curve.show_history(load_reverse_model().history)
    data = bundle(curve)
    assert data["text/plain"].startswith("TrainingProgress: 2 panels (loss (log scale), accuracy)")
    assert decode(data).shape[1] > 400


def test_a_view_without_data_has_no_picture_and_no_error():
    picture.pictures(True)
    data = bundle(widgets.Heatmap())
    assert "image/png" not in data
    assert data["text/plain"] == f"Heatmap - {picture.LIVE_NOTE}"


def test_a_failing_picture_never_breaks_the_display(monkeypatch):
    picture.pictures(True)
    hm = widgets.Heatmap(torch.rand(2, 2), title="w")

    def broken():
        raise RuntimeError("no fonts")

    monkeypatch.setattr(hm, "figure", broken)
    data = bundle(hm)
    assert WIDGET_VIEW in data and "image/png" not in data
    assert data["text/plain"].endswith("(no picture: RuntimeError: no fonts)")


def test_pack_wraps_rows_at_the_maximum_width():
    a = np.zeros((10, 600, 4), np.uint8)
    b = np.zeros((30, 500, 4), np.uint8)
    out = picture.pack([a, b, a], max_width=1200, gap=8)
    assert out.shape == (30 + 8 + 10, 600 + 8 + 500, 4)
    assert (out[0, 600:608] == 255).all()  # the gap is white
    assert picture.pack([a], max_width=100).shape == (10, 600, 4)  # never cut


def test_a_figure_wider_than_the_page_is_rendered_smaller_not_cut():
    picture.pictures(True)
    row = widgets.Heatmap(torch.rand(4, 40, 40), columns=4, title="four heads")
    image = decode(bundle(row))
    assert picture.MAX_WIDTH - 2 <= image.shape[1] <= picture.MAX_WIDTH
    assert image.shape[0] > 40
    many = decode(bundle(widgets.Heatmap(torch.rand(12, 14, 14), columns=12, title="every head")))
    assert many.shape[1] <= picture.MAX_WIDTH and many.shape[0] > 40  # drawn small: fits


def test_training_progress_shows_its_final_curves_once_it_was_displayed(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append(obj))
    picture.pictures(True)
    history = load_reverse_model().history

    before_display = widgets.TrainingProgress()
    before_display.show_history(history)  # drawn, then displayed: its picture says it all
    assert shown == []

    live = widgets.TrainingProgress()
    bundle(live)  # displayed empty, as a training cell does
    live.show_history(history)  # ... then filled step by step until done
    assert len(shown) == 1
    assert shown[0]["text/plain"].startswith("TrainingProgress: the curves when training")
    image = decode(shown[0])
    assert image.shape[1] > 400

    picture.pictures(False)
    live.show_history(history)
    assert len(shown) == 1  # pictures off: nothing more


# --- what the pictures must make readable (issue #25: three pictures that could not be read) ---


def test_categories_get_a_legend_of_swatches_not_a_colour_bar():
    """FlashExplorer's tiles are 0 / 1 / 2 = not read, read, on chip: not a scale."""
    from matplotlib.colorbar import Colorbar

    explorer = widgets.FlashExplorer(step=5)
    fig = explorer.tiles.figure()
    assert not any(isinstance(getattr(ax, "_colorbar", None), Colorbar) for ax in fig.axes)
    assert len(fig.axes) == 1  # the map, no colour bar beside it
    (legend,) = fig.legends
    names = [t.get_text() for t in legend.get_texts()]
    assert names == ["not read yet", "read earlier", "on chip now"]
    faces = [tuple(np.round(h.get_facecolor()[:3], 2)) for h in legend.legend_handles]
    assert len(set(faces)) == 3  # three swatches that can be told apart
    assert faces[0] == (1.0, 1.0, 1.0) and faces[2] == (0.0, 0.0, 0.0)  # gray_r: white, black
    rope = widgets.RopeExplorer().pairing.figure()
    assert [t.get_text() for t in rope.legends[0].get_texts()] == [
        "in the pair",
        "in the chosen pair",
    ]
    assert len(rope.axes) == 2  # two layouts, no colour bar


def test_a_heatmap_without_its_colour_bar_has_none_in_its_picture_either():
    hm = widgets.Heatmap(torch.rand(3, 4), show_colorbar=False)
    assert len(hm.figure().axes) == 1
    assert len(widgets.Heatmap(torch.rand(3, 4)).figure().axes) == 2


def test_a_chart_legend_draws_each_series_as_the_chart_does():
    """Solid and dashed lines of one colour ("moved" and "stored") must differ in the legend."""
    scale = widgets.FlashExplorer().scale.figure()
    legend = scale.axes[0].get_legend()
    texts, handles = legend.get_texts(), legend.legend_handles
    styles = {t.get_text(): h.get_linestyle() for t, h in zip(texts, handles, strict=True)}
    assert styles["naive: bytes moved"] == "-" and styles["naive: S and P stored"] == "--"
    assert styles["flash: bytes moved"] == "-" and styles["flash: lse stored"] == "--"
    flash = widgets.FlashExplorer(step=3).m_chart.figure()
    bar, line = flash.axes[0].get_legend().legend_handles
    assert type(bar).__name__ == "Rectangle" and line.get_linestyle() == "--"


def test_a_long_chart_title_is_wrapped_inside_the_picture_not_cut():
    fig = widgets.RopeExplorer().offsets.figure()
    title = fig.axes[0].title
    assert title.get_text().replace("\n", " ") == (
        "score on each diagonal m − n (matched: one value; mixed: a range)"
    )
    fig.canvas.draw()
    box = title.get_window_extent()
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width, (box, fig.bbox.width)


def test_many_small_multiples_keep_titles_a_reader_can_read():
    """ModelView's 6 x 12 heads: drawn to fit the page, titles at least 7 px tall."""
    view = widgets.ModelView("minilm")
    fig = view.thumbs.figure()
    dpi = min(picture.DPI, picture.MAX_WIDTH / fig.get_figwidth())  # as the picture renders it
    titles = [ax.title for ax in fig.axes if ax.get_visible() and ax.title.get_text()]
    assert len(titles) == 72 and {t.get_text() for t in titles} >= {"▶0.0", "5.11"}
    assert min(t.get_fontsize() for t in titles) * dpi / 72 >= 7
    image = picture._rgba(fig, picture.DPI, picture.MAX_WIDTH)  # as png_bytes renders it
    assert image.shape[1] <= picture.MAX_WIDTH and image.shape[0] < picture.MAX_WIDTH


def test_token_lines_of_a_long_text_stay_a_page_tall():
    tokens = [f"t{i}" for i in range(128)]
    lines = widgets.TokenLines(torch.eye(128), tokens, tokens)  # one line per query: quick
    fig = lines.figure()
    assert fig.get_figheight() * picture.DPI <= 1000
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert "t0" in labels and len(labels) < 2 * 128  # every other token labelled, 7+ pt apart
    sizes = {t.get_fontsize() for t in fig.axes[0].texts}
    assert min(sizes) >= 5


def test_a_series_without_a_kind_is_pictured_as_a_line_as_the_browser_draws_it():
    chart = widgets.SeriesChart(name="no-kind")
    chart.set_data([0, 1, 2], [{"name": "share", "values": [0.1, 0.5, 0.2], "color": "#0072B2"}])
    (line,) = chart.figure().axes[0].get_lines()
    assert list(line.get_ydata()) == [0.1, 0.5, 0.2] and line.get_linestyle() == "-"
