"""AttentionExplorer: the pure function against torch, and the view against the pure function."""

from __future__ import annotations

import csv
import math
import random
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention.explore import (
    MAX_LEN,
    MAX_WIDTH,
    TEMPERATURE_RANGE,
    AttentionParams,
    explore_attention,
    mask_to_tuple,
    one_thread,
)
from widgets.explorers.attention import (
    OUTPUT_CELL,
    OUTPUT_WIDTH_MAX,
    AttentionExplorer,
    head_window,
    max_heads,
    output_cell_size,
)
from widgets.explorers.controls import dropdown, set_options
from widgets.views.heatmap import auto_cell_size
from widgets.views.style import CELL_MIN, css

# --- the pure function ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        AttentionParams(),
        AttentionParams(seq_len=7, d_k=12, n_heads=3, mask="causal", temperature=0.5, seed=3),
        AttentionParams(seq_len=5, cross=True, key_len=9, mask="padding", pad_len=4, d_k=8),
        AttentionParams(seq_len=4, d_k=6, n_heads=2, scaled=False, mask="causal"),
    ],
)
def test_matches_torch_sdpa(params):
    r = explore_attention(params)
    expected = F.scaled_dot_product_attention(
        r.q, r.k, r.v, attn_mask=r.mask, scale=r.scale
    )  # (H, Tq, D); torch's rows are NaN where nothing may be attended
    live = ~r.fully_masked  # (H, Tq)
    torch.testing.assert_close(r.heads[live], expected[live])
    assert not r.fully_masked.any() or params.mask != "none"


def test_stages_are_consistent():
    p = AttentionParams(seq_len=6, d_k=4, n_heads=4, mask="causal", temperature=2.0)
    r = explore_attention(p)
    assert r.scale == pytest.approx(1 / math.sqrt(4) / 2.0)
    torch.testing.assert_close(r.raw_scores, r.q @ r.k.transpose(-2, -1))
    allowed = r.mask.expand_as(r.scores)
    torch.testing.assert_close(r.scores[allowed], (r.raw_scores * r.scale)[allowed])
    assert torch.isneginf(r.scores[~allowed]).all()
    assert (r.weights[~allowed] == 0).all()
    torch.testing.assert_close(r.weights.sum(-1), torch.ones(4, 6))
    # the heads are concatenated along the width, head 0 first
    torch.testing.assert_close(r.output[:, :4], r.heads[0])
    assert r.shapes["q (B, H, Tq, d_k)"] == (1, 4, 6, 4)
    assert r.shapes["output (B, Tq, d_model)"] == (1, 6, 16)


@pytest.mark.parametrize("n_heads", [1, 2, 4])
def test_d_k_is_the_width_of_each_head(n_heads):
    # the same meaning as ScalingExplorer's d_k: the width of the vectors whose dot product
    # is scaled; the model width grows with the heads
    p = AttentionParams(seq_len=6, d_k=16, n_heads=n_heads)
    r = explore_attention(p)
    assert r.q.shape == r.k.shape == (n_heads, 6, 16)
    assert r.scale == pytest.approx(1 / math.sqrt(16))
    assert p.d_model == 16 * n_heads and r.output.shape == (6, 16 * n_heads)


def test_readouts_of_the_inspected_row():
    p = AttentionParams(seq_len=5, mask="causal", query_row=3, head=0)
    r = explore_attention(p)
    row = r.weights[0, 3]
    assert r.max_weight == pytest.approx(float(row.max()))
    assert r.argmax_key == int(row.argmax())
    nz = row[row > 0]
    assert r.row_entropy == pytest.approx(float(-(nz * nz.log()).sum()), abs=1e-6)
    assert r.max_entropy == pytest.approx(math.log(4))  # query 3 sees keys 0..3


def test_fully_masked_row_readouts():
    r = explore_attention(AttentionParams(seq_len=3, mask="padding", pad_len=3))
    assert r.fully_masked.all() and (r.weights == 0).all() and (r.output == 0).all()
    assert (r.argmax_key, r.max_entropy, r.row_entropy) == (-1, 0.0, 0.0)


def test_temperature_and_scaling_sharpen_or_flatten():
    base = AttentionParams(seq_len=8, d_k=64)
    hot = explore_attention(replace(base, temperature=TEMPERATURE_RANGE[1]))
    cold = explore_attention(replace(base, temperature=TEMPERATURE_RANGE[0]))
    unscaled = explore_attention(replace(base, scaled=False))
    scaled = explore_attention(base)
    entropy = lambda r: float(-(r.weights * r.weights.clamp_min(1e-30).log()).sum())  # noqa: E731
    assert entropy(cold) < entropy(scaled) < entropy(hot)
    assert entropy(unscaled) < entropy(scaled)  # dividing by sqrt(D) undoes the saturation


def test_numbers_stay_put_when_a_token_is_added():
    short = explore_attention(AttentionParams(seq_len=4, d_k=8))
    long = explore_attention(AttentionParams(seq_len=5, d_k=8))
    torch.testing.assert_close(long.q[:, :4], short.q)
    torch.testing.assert_close(long.raw_scores[:, :4, :4], short.raw_scores)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"seq_len": 0}, r"seq_len: expected an int in \[1, 64\], got 0"),
        ({"d_k": 257}, r"d_k: expected an int in \[1, 256\]"),
        (
            {"d_k": 100, "n_heads": 3},
            r"d_model = n_heads \* d_k = 3 \* 100 = 300 exceeds 256; choose n_heads <= 2",
        ),
        ({"mask": "diagonal"}, "mask: expected one of"),
        ({"pad_len": 7}, r"pad_len: expected an int in \[0, 6\]"),
        ({"temperature": 0.0}, r"temperature: expected a value in \[0.1, 10.0\]"),
        ({"query_row": 6}, r"query_row: expected an int in \[0, 5\]"),
        ({"head": 1}, r"head: expected an int in \[0, 0\]"),
        ({"mask": "custom", "custom_mask": ((True,),)}, "custom_mask: expected 6 rows of 6"),
    ],
)
def test_params_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AttentionParams(**kwargs)


# --- the view ---------------------------------------------------------------------------------


def assert_view_matches(ex: AttentionExplorer) -> None:
    """Every shown panel holds exactly the pure function's numbers for the current params."""
    assert ex.error.message == ""
    with one_thread():  # as the explorer computes: a matmul's rounding depends on the threads
        r = explore_attention(ex.params)
    assert ex.result.params == ex.params
    h, p = ex.params.head, ex.params
    blocked = (~r.mask).numpy()
    shown = {name for name, box in ex.visible.items() if box.value}
    expected = {
        "q": ("Q and K", r.q[h], None),
        "k": ("Q and K", r.k[h], None),
        "raw_scores": ("raw scores", r.raw_scores[h], None),
        "scores": ("scaled + masked", r.scores[h], blocked),
        "weights": ("weights", r.weights[h], blocked),
        "output": ("output", r.output, None),
        "per_head": ("per head", r.weights[slice(*head_window(h, p.n_heads))], blocked),
    }
    for name, (group, values, masked) in expected.items():
        if group not in shown:
            continue
        hm = ex.panels[name]
        np.testing.assert_array_equal(hm.values.reshape(values.shape), values.numpy(), name)
        finite = hm.values[np.isfinite(hm.values)]
        assert hm.values.size and not np.isnan(hm.values).any(), name
        assert finite.size or p.mask != "none", name
        if masked is not None:
            np.testing.assert_array_equal(hm.masked.reshape(-1, *blocked.shape)[0], blocked)
    if "weights" in shown:
        wm = ex.panels["weights"]
        np.testing.assert_array_equal(wm.fully_masked[0], r.fully_masked[h].numpy())
        assert wm.row_labels == list(r.query_tokens) and wm.col_labels == list(r.key_tokens)
        assert wm.highlight_row == p.query_row
    assert ex.readout.value


def test_constructible_with_no_arguments_and_displayable():
    ex = AttentionExplorer()
    assert ex.result is not None and ex.params == AttentionParams()
    assert css("attention-explorer") in ex._dom_classes
    assert "application/vnd.jupyter.widget-view+json" in ex._repr_mimebundle_()
    assert_view_matches(ex)


def test_settings_are_validated():
    with pytest.raises(ValueError, match="exceeds 256; choose n_heads <= 2"):
        AttentionExplorer(d_k=128, n_heads=3)


def test_controls_drive_the_panels():
    ex = AttentionExplorer()
    ex.seq_len.value = 9
    ex.d_k.value = 24
    ex.n_heads.value = 3
    ex.head.value = 2
    ex.mask.value = "causal"
    ex.temperature.value = 2.0
    ex.query_row.value = 7
    ex.show_numbers.value = True
    assert ex.params == AttentionParams(
        seq_len=9, d_k=24, n_heads=3, head=2, mask="causal", temperature=2.0, query_row=7
    )
    assert_view_matches(ex)
    assert ex.panels["weights"].show_numbers
    assert "1/√24 / 2" in ex.readout.value
    assert "3 × 24 = 72" in ex.readout.value  # d_model = H × d_k


def test_heads_offered_keep_d_model_within_the_limit():
    ex = AttentionExplorer(d_k=12, n_heads=4)
    ex.d_k.value = 100
    assert (ex.n_heads.min, ex.n_heads.max) == (1, 2)  # 3 heads of 100 would be 300 > 256 wide
    assert ex.n_heads.value == 2 and ex.params.n_heads == 2 and ex.params.d_model == 200
    assert ex.head.max == 1
    ex.d_k.value = 1
    assert ex.n_heads.max == MAX_WIDTH and ex.n_heads.value == 2  # a wider range keeps it
    ex.n_heads.value = MAX_WIDTH
    assert ex.head.max == MAX_WIDTH - 1 and ex.params.d_model == MAX_WIDTH
    assert max_heads(64) == 4 and max_heads(65) == 3 and max_heads(MAX_WIDTH) == 1


def test_ranges_follow_sizes():
    ex = AttentionExplorer(seq_len=10, query_row=9)
    ex.seq_len.value = 3
    assert ex.query_row.max == 2 and ex.query_row.value == 2
    ex.cross.value = True
    assert ex.key_len.layout.display is None
    ex.mask.value = "padding"
    ex.key_len.value = 2
    assert ex.pad_len.max == 2 and ex.params.tk == 2
    assert_view_matches(ex)


def test_padding_everything_gives_grey_rows_not_nan():
    ex = AttentionExplorer(seq_len=4, mask="padding", pad_len=4)
    hm = ex.panels["weights"]
    assert hm.fully_masked.all() and (hm.values == 0).all()
    assert "may attend to no key" in ex.readout.value
    assert_view_matches(ex)


def test_click_switches_to_custom_and_toggles_the_pair():
    ex = AttentionExplorer(seq_len=4, mask="causal")
    before = ex.result.weights.clone()
    ex.panels["weights"].click(row=1, col=3)  # a pair causal blocks: now allowed
    assert ex.mask.value == "custom"
    expected = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    expected[1, 3] = True
    assert torch.equal(ex.result.mask, expected)
    assert ex.result.weights[0, 1, 3] > 0 and not torch.equal(ex.result.weights, before)
    ex.panels["scores"].click(row=1, col=3)  # and back
    assert torch.equal(ex.result.mask, torch.tril(torch.ones(4, 4, dtype=torch.bool)))
    torch.testing.assert_close(ex.result.weights, before)
    assert_view_matches(ex)


def test_custom_mask_survives_resizing():
    ex = AttentionExplorer(seq_len=3)
    ex.panels["per_head"].click(0, 0)
    ex.seq_len.value = 5
    mask = ex.result.mask
    assert mask.shape == (5, 5) and not mask[0, 0] and mask.sum() == 24
    assert ex.params.custom_mask == mask_to_tuple(mask)


def test_hidden_panels_are_not_sent_and_refresh_when_shown():
    ex = AttentionExplorer(seq_len=3)
    ex.visible["output"].value = False
    assert ex._groups["output"].layout.display == "none"
    stale = ex.panels["output"].values.copy()
    ex.seed.value = 5
    np.testing.assert_array_equal(ex.panels["output"].values, stale)
    ex.visible["output"].value = True
    assert not np.array_equal(ex.panels["output"].values, stale)
    assert_view_matches(ex)
    assert "output" in ex._views()


def test_an_error_is_shown_not_raised(monkeypatch):
    ex = AttentionExplorer()
    good = ex.result

    def broken(params):
        raise RuntimeError("boom")

    monkeypatch.setattr(ex, "_compute", broken)
    ex.seed.value = 7
    assert ex.error.message == "RuntimeError: boom" and ex.error.layout.display is None
    assert ex.result is good
    monkeypatch.undo()
    ex.seed.value = 8
    assert ex.error.message == "" and ex.error.layout.display == "none"


def _sweep_settings(rng: random.Random) -> dict:
    d_k = rng.choice([1, 2, 7, 16, 60, 128, 256, rng.randint(1, MAX_WIDTH)])
    return {
        "seq_len": rng.choice([1, 2, MAX_LEN, rng.randint(1, MAX_LEN)]),
        "d_k": d_k,
        "n_heads": rng.randint(1, max_heads(d_k)),
        "mask": rng.choice(["none", "causal", "padding", "custom"]),
        "pad_len": rng.randint(0, MAX_LEN),
        "scaled": rng.random() < 0.5,
        "temperature": rng.choice([*TEMPERATURE_RANGE, 1.0, 10 ** rng.uniform(-1, 1)]),
        "seed": rng.randint(0, 99),
        "query_row": rng.randint(0, MAX_LEN),
        "head": rng.randint(0, 256),
        "cross": rng.random() < 0.5,
        "key_len": rng.choice([1, MAX_LEN, rng.randint(1, MAX_LEN)]),
    }


def test_sweep_over_controls_matches_pure_function():
    """Corners and seeded random settings: no error, no NaN, no empty panel, equal numbers."""
    rng = random.Random(1234)
    ex = AttentionExplorer()
    corners = [
        {"seq_len": 1, "d_k": 1, "cross": True, "key_len": 1, "mask": "padding", "pad_len": 1},
        {"seq_len": 64, "d_k": 1, "n_heads": 256, "mask": "causal", "head": 255},
        {"seq_len": 64, "d_k": 256, "n_heads": 1, "cross": True, "key_len": 64, "mask": "none"},
        {"seq_len": 2, "d_k": 3, "temperature": 0.1, "scaled": False, "mask": "custom"},
    ]
    samples = corners + [_sweep_settings(rng) for _ in range(24)]
    for settings in samples:
        with ex.hold_refresh():
            for name in ("seq_len", "d_k", "cross", "key_len"):
                if name in settings:
                    getattr(ex, name).value = settings[name]
        ex.refresh()  # ranges now fit the sizes; set the dependent controls
        for name, value in settings.items():
            control = getattr(ex, name)
            if hasattr(control, "max") and isinstance(value, int) and name != "seed":
                value = min(value, control.max)
            control.value = value
        if ex.mask.value == "custom":
            ex.panels["weights"].click(0, 0)
        assert_view_matches(ex)


def test_export_writes_the_shown_panels(tmp_path):
    ex = AttentionExplorer(seq_len=3, mask="causal")
    for name in ("Q and K", "raw scores", "output", "per head"):
        ex.visible[name].value = False
    paths = ex.export(tmp_path)
    assert sorted(p.name for p in paths) == sorted(
        f"attention-explorer_{v}.{ext}"
        for v in ("scores", "weights")
        for ext in ("png", "svg", "csv")
    )
    with (tmp_path / "attention-explorer_weights.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    got = torch.tensor([float(r["value"]) for r in rows]).reshape(3, 3)
    torch.testing.assert_close(got, ex.result.weights[0])
    ex.export_dir = tmp_path / "button"
    ex.export_button.click()
    assert "saved 6 files" in ex.export_status.value
    assert (tmp_path / "button" / "attention-explorer_weights.png").stat().st_size > 0


def test_many_heads_show_a_window_of_small_multiples():
    assert head_window(3, 8) == (0, 8)
    assert head_window(0, 256) == (0, 16)
    assert head_window(100, 256) == (92, 108)
    assert head_window(255, 256) == (240, 256)
    ex = AttentionExplorer(seq_len=4, d_k=4, n_heads=64, head=40)
    hm = ex.panels["per_head"]
    assert hm.values.shape == (16, 4, 4) and hm.panel_titles[0] == "head 32"
    assert hm.title.endswith("32-47 of 64")
    assert_view_matches(ex)


def test_update_runs_on_one_thread_and_restores_the_count():
    n = torch.get_num_threads()
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == n


def test_set_options_keeps_or_moves_to_the_nearest():
    menu = dropdown("n_heads", [1, 2, 3, 6], 6, name="n-heads")
    set_options(menu, [1, 2, 4, 8], 6)
    assert list(menu.options) == [1, 2, 4, 8]
    assert menu.value == 4  # nearest allowed to 6 (ties go to the smaller)
    set_options(menu, [1, 3], 2)
    assert menu.value == 1


def test_set_options_of_named_choices_keeps_one_still_offered_else_the_first():
    heads = [("none", -1), ("L0 H0", 0), ("L0 H1", 1), ("L1 H0", 2), ("L1 H1", 3)]
    menu = dropdown("ablate head", heads, 1, name="ablate")
    set_options(menu, heads[:3], 1)  # one layer fewer: head 1 is still there
    assert menu.value == 1 and menu.label == "L0 H1"
    set_options(menu, heads, 3)
    set_options(menu, heads[:3], 3)  # head 3 went away: "none", not the nearest head
    assert list(menu.options) == heads[:3] and menu.value == -1


def test_output_panel_is_drawn_about_as_large_as_the_weights():
    # (Tq, d_model) = (6, 16) was once fitted into 200 px, 12 px cells beside the weights' 40 px
    ex = AttentionExplorer(seq_len=6, d_k=8, n_heads=2, mask="causal")
    weights = auto_cell_size(ex.panels["weights"].panel_size, 6, 6)
    assert ex.panels["output"].cell_size == output_cell_size(6, 6, 16)
    assert ex.panels["output"].cell_size >= 0.75 * weights


@pytest.mark.parametrize("tq", [1, 6, 16, MAX_LEN])
@pytest.mark.parametrize("m", [1, 8, 16, 48, 64, 128, MAX_WIDTH])
def test_output_cells_never_outgrow_the_weights_nor_the_page(tq, m):
    weights = auto_cell_size(240, tq, tq)
    cell = output_cell_size(tq, tq, m)
    assert CELL_MIN <= cell <= weights
    assert cell * m <= OUTPUT_WIDTH_MAX or cell == CELL_MIN
    assert cell >= min(weights, OUTPUT_CELL) or OUTPUT_CELL * m > OUTPUT_WIDTH_MAX
