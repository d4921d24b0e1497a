"""PositionalEncodingExplorer and explore_positional: the table, and the shuffle test."""

import math
import random
import re

import ipywidgets
import numpy as np
import pytest
import torch

from attention.explore import (
    PE_DIMS_MAX,
    PositionalParams,
    explore_positional,
    shuffle_permutation,
)
from tests.views.heatmap_js import heatmap_spec, js_layouts, needs_node
from widgets.explorers.positional import (
    DIFF_VMAX_FLOOR,
    PositionalEncodingExplorer,
    default_dims,
    dim_name,
    parse_dims,
)
from widgets.views.style import LABELLED_CELL_MIN


def _reference_pe(seq_len, d_model):
    """PE[pos, 2i] = sin(pos / 10000^(2i/M)), PE[pos, 2i+1] = cos(same), in float64 numpy."""
    pe = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(0, d_model, 2):
            angle = pos / 10000 ** (i / d_model)
            pe[pos, i] = math.sin(angle)
            if i + 1 < d_model:
                pe[pos, i + 1] = math.cos(angle)
    return pe


@pytest.mark.parametrize("seq_len,d_model", [(1, 2), (16, 32), (64, 128)])
def test_encoding_is_the_sinusoidal_table(seq_len, d_model):
    dims = (0, d_model - 1)
    r = explore_positional(PositionalParams(seq_len=seq_len, d_model=d_model, dims=dims))
    np.testing.assert_allclose(r.encoding.numpy(), _reference_pe(seq_len, d_model), atol=1e-6)
    assert float(r.encoding.abs().max()) <= 1.0
    torch.testing.assert_close(r.curves, r.encoding[:, list(dims)].T)


@pytest.mark.parametrize("seq_len,d_model,seed", [(2, 2, 0), (16, 32, 1), (64, 128, 2), (7, 10, 3)])
def test_without_positions_shuffling_only_permutes_the_output(seq_len, d_model, seed):
    r = explore_positional(
        PositionalParams(seq_len=seq_len, d_model=d_model, dims=(0,), shuffle=5, seed=seed)
    )
    perm = r.permutation
    off = r.without_positions
    torch.testing.assert_close(off.inputs, r.tokens)
    torch.testing.assert_close(off.shuffled_inputs, r.tokens[perm])
    torch.testing.assert_close(off.permuted_output, off.output[perm])
    assert off.max_abs_diff < 1e-5
    torch.testing.assert_close(off.shuffled_output, off.output[perm], atol=1e-5, rtol=1e-5)
    # with positions the slots keep their encodings, so the output changes for real
    on = r.with_positions
    torch.testing.assert_close(on.inputs, r.tokens + r.encoding)
    torch.testing.assert_close(on.shuffled_inputs, r.tokens[perm] + r.encoding)
    assert on.max_abs_diff > 1e-2
    assert on.max_abs_diff == pytest.approx(
        float((on.shuffled_output - on.output[perm]).abs().max())
    )


def test_in_order_nothing_changes_either_way():
    r = explore_positional(PositionalParams(shuffle=0))
    assert torch.equal(r.permutation, torch.arange(16))
    assert r.without_positions.max_abs_diff < 1e-6
    assert r.with_positions.max_abs_diff < 1e-6


@pytest.mark.parametrize("seq_len", [1, 2, 3, 16, 64])
def test_shuffle_permutation(seq_len):
    assert torch.equal(shuffle_permutation(seq_len, 0), torch.arange(seq_len))
    for seed in range(1, 30):
        perm = shuffle_permutation(seq_len, seed)
        assert sorted(perm.tolist()) == list(range(seq_len))
        assert torch.equal(perm, shuffle_permutation(seq_len, seed))  # deterministic
        if seq_len > 1:
            assert not torch.equal(perm, torch.arange(seq_len))  # a shuffle always moves


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"seq_len": 0}, ValueError, r"seq_len: expected an int in \[1, 64\], got 0"),
        ({"d_model": 1, "dims": (0,)}, ValueError, r"d_model: expected an int in \[2, 128\]"),
        ({"dims": (0, 32)}, ValueError, r"dims: expected an int in \[0, 31\], got 32"),
        ({"dims": (1, 1)}, ValueError, r"dims: expected 1 to 8 distinct ints, got \(1, 1\)"),
        ({"dims": ()}, ValueError, r"dims: expected 1 to 8 distinct ints"),
        ({"dims": [0, 1]}, TypeError, r"dims: expected a tuple of ints, got list"),
        ({"shuffle": -1}, ValueError, r"shuffle: expected an int in"),
    ],
)
def test_bad_params_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        PositionalParams(**kwargs)


def test_dim_names_and_default_dims():
    assert dim_name(0, 32) == "dim 0: sin, period 6.28"
    assert dim_name(7, 32).startswith("dim 7: cos, period")
    assert default_dims(2) == (0, 1)
    assert default_dims(32) == (0, 1, 8, 9)
    for m in range(2, 129, 2):
        dims = default_dims(m)
        assert all(0 <= i < m for i in dims) and len(set(dims)) == len(dims) <= PE_DIMS_MAX


# --- the widget -----------------------------------------------------------------------------


def _assert_view_matches(e: PositionalEncodingExplorer) -> None:
    assert e.error.message == ""
    p = PositionalParams(
        seq_len=e.seq_len.value,
        d_model=e.d_model.value,
        dims=tuple(e.dims.value),
        shuffle=e.shuffle.value,
        seed=e.seed.value,
        add_positions=e.add_positions.value,
    )
    assert e.result.params == p
    want = explore_positional(p)
    np.testing.assert_allclose(e.encoding.matrix, want.encoding.numpy(), atol=1e-7)
    assert e.encoding.limits == [-1.0, 1.0]
    assert e.curves.x == list(range(p.seq_len))
    assert [s["name"] for s in e.curves.series] == [dim_name(i, p.d_model) for i in p.dims]
    for s, curve in zip(e.curves.series, want.curves, strict=True):
        np.testing.assert_allclose(s["values"], curve.numpy(), atol=1e-7)
    check = want.with_positions if e.add_positions.value else want.without_positions
    assert e.outputs.values.shape == (2, p.seq_len, p.d_model)
    np.testing.assert_allclose(e.outputs.values[0], check.shuffled_output.numpy(), atol=1e-6)
    np.testing.assert_allclose(e.outputs.values[1], check.permuted_output.numpy(), atol=1e-6)
    diff = (check.shuffled_output - check.permuted_output).abs().numpy()
    np.testing.assert_allclose(e.difference.matrix, diff, atol=1e-6)
    assert e.outputs.row_labels == [f"tok {int(i)}" for i in want.permutation]
    for view in (e.encoding, e.outputs, e.difference):
        assert view.values.size > 0 and np.isfinite(view.values).all()
    off, on = want.without_positions.max_abs_diff, want.with_positions.max_abs_diff
    assert f"{off:.2g}" in e.readout.value and f"{on:.2g}" in e.readout.value


def test_constructible_without_arguments_and_displayable():
    e = PositionalEncodingExplorer()
    assert isinstance(e, ipywidgets.VBox)
    assert "ac-positional-explorer" in e._dom_classes
    assert e.result.params == PositionalParams()
    _assert_view_matches(e)


def test_shuffle_button_toggle_and_restore():
    e = PositionalEncodingExplorer(shuffle=0)
    assert torch.equal(e.result.permutation, torch.arange(16))
    e.shuffle_button.click()
    assert e.shuffle.value == 1
    assert not torch.equal(e.result.permutation, torch.arange(16))
    _assert_view_matches(e)
    # with positions on (the default) the outputs differ; the readout says so in bold
    assert e.difference.matrix.max() > 1e-2
    assert "<b>with positions" in e.readout.value
    assert "changed, not just permuted" in e.readout.value
    e.add_positions.value = False
    _assert_view_matches(e)
    assert e.difference.matrix.max() < 1e-5  # only permuted
    assert "<b>without positions" in e.readout.value
    first = e.result.permutation.clone()
    e.shuffle_button.click()
    assert e.shuffle.value == 2 and not torch.equal(e.result.permutation, first)
    e.restore_button.click()
    assert e.shuffle.value == 0 and torch.equal(e.result.permutation, torch.arange(16))
    _assert_view_matches(e)


def test_d_model_change_keeps_the_selected_dims_valid():
    e = PositionalEncodingExplorer(d_model=64, dims=(0, 1, 40, 63))
    e.d_model.value = 32
    assert e.dims.value == (0, 1) and list(e.dims.options) == list(range(32))
    _assert_view_matches(e)
    e.d_model.value = 2
    e.dims.value = ()  # nothing selected: the defaults come back
    assert e.dims.value == (0, 1)
    _assert_view_matches(e)
    e.d_model.value = 128
    e.dims.value = tuple(range(12))  # more than 8: only the first 8 are drawn
    assert e.dims.value == tuple(range(8))
    _assert_view_matches(e)
    assert e.d_model.step == 2


def test_seeded_sweep_over_every_control():
    e = PositionalEncodingExplorer()
    rng = random.Random(0)
    settings = [
        dict(seq_len=1, d_model=2, add_positions=False, shuffle=0, seed=0),
        dict(seq_len=64, d_model=128, add_positions=True, shuffle=9999, seed=99),
        dict(seq_len=1, d_model=128, add_positions=True, shuffle=9999, seed=0),
        dict(seq_len=64, d_model=2, add_positions=False, shuffle=0, seed=99),
    ]
    for _ in range(8):
        settings.append(
            dict(
                seq_len=rng.randint(1, 64),
                d_model=2 * rng.randint(1, 64),
                add_positions=rng.random() < 0.5,
                shuffle=rng.randint(0, 9999),
                seed=rng.randint(0, 99),
            )
        )
    for setting in settings:
        for name, value in setting.items():
            getattr(e, name).value = value
        m = e.d_model.value
        e.dims.value = tuple(sorted(rng.sample(range(m), min(m, rng.randint(1, 8)))))
        _assert_view_matches(e)


def test_export_saves_heatmaps_and_the_curves(tmp_path):
    import csv

    e = PositionalEncodingExplorer(seq_len=5, d_model=8, dims=(0, 3))
    names = {p.name for p in e.export(tmp_path)}
    for view in ("encoding", "outputs", "difference", "curves"):
        for ext in ("png", "svg", "csv"):
            assert f"positional-explorer_{view}.{ext}" in names
    with (tmp_path / "positional-explorer_curves.csv").open(encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["position", dim_name(0, 8), dim_name(3, 8)]
    got = np.array([[float(v) for v in row[1:]] for row in rows[1:]])
    np.testing.assert_allclose(got.T, e.result.curves.numpy(), atol=1e-7)


def test_difference_has_its_own_scale_and_says_its_max():
    e = PositionalEncodingExplorer()  # shuffled, with positions: a real difference
    top = float(e.difference.matrix.max())
    assert 1e-2 < top < 0.5 * e.outputs.limits[1]  # on the outputs' scale it looked flat
    assert e.difference.limits == [0.0, pytest.approx(top)]
    assert e.difference.title == f"|difference|, max {top:.2g}"
    e.add_positions.value = False  # only permuted: what is left is float noise
    noise = float(e.difference.matrix.max())
    assert noise < 1e-5
    assert e.difference.limits == [0.0, DIFF_VMAX_FLOOR]  # uniformly dark, not a pattern
    assert e.difference.title == f"|difference|, max {noise:.2g}"  # e.g. "max 6e-08"


@pytest.mark.parametrize("seq_len,d_model", [(16, 32), (32, 32), (16, 64), (32, 128), (8, 2)])
def test_every_output_row_is_labelled_up_to_32_tokens(seq_len, d_model):
    e = PositionalEncodingExplorer(seq_len=seq_len, d_model=d_model)
    order = [f"tok {int(i)}" for i in e.result.permutation]
    for view in (e.outputs, e.difference):
        assert view.row_labels == order and all(view.row_labels)
        assert view.cell_size >= LABELLED_CELL_MIN  # room for a 7 px label per row


@needs_node
@pytest.mark.parametrize("seq_len,d_model", [(16, 32), (32, 32), (16, 64), (32, 128)])
def test_the_browser_labels_every_output_row_within_a_notebooks_width(seq_len, d_model):
    e = PositionalEncodingExplorer(seq_len=seq_len, d_model=d_model)
    for g in js_layouts(heatmap_spec(e.outputs), heatmap_spec(e.difference)):
        assert g["labelStep"] == 1 and g["labelPx"] >= LABELLED_CELL_MIN
        assert g["width"] <= 1100  # wide outputs are stacked, not side by side


def test_dims_field_shows_the_selection_and_takes_typed_dims():
    e = PositionalEncodingExplorer(d_model=64)
    assert e.dims.value == (0, 1, 16, 17) and e.dims_text.value == "0, 1, 16, 17"
    assert "ac-dims-text" in e.dims_text._dom_classes
    e.dims_text.value = "3,40  41"  # commas or spaces
    assert e.dims.value == (3, 40, 41) and e.dims_text.value == "3, 40, 41"
    _assert_view_matches(e)
    e.dims.value = (5, 2)  # picked in the list: the field follows
    assert e.dims_text.value == "5, 2"
    e.d_model.value = 4  # dims out of range are dropped, in the field too
    assert e.dims.value == (2,) and e.dims_text.value == "2"
    _assert_view_matches(e)


@pytest.mark.parametrize(
    "text,match",
    [
        ("0, x", r"dims: expected whole numbers separated by commas, got '0, x'"),
        ("0, -1", r"dims: expected whole numbers separated by commas, got '0, -1'"),
        ("", r"dims: expected 1 to 8 dimensions, got 0"),
        ("0 1 2 3 4 5 6 7 8", r"dims: expected 1 to 8 dimensions, got 9"),
        ("0, 32", r"dims: expected dimensions in \[0, 31\] \(d_model=32\), got 32"),
    ],
)
def test_bad_dims_text_is_refused_and_shown(text, match):
    with pytest.raises(ValueError, match=match):
        parse_dims(text, 32)
    e = PositionalEncodingExplorer()
    e.dims_text.value = text
    assert re.search(match, e.error.message)  # shown, not raised
    assert e.dims.value == (0, 1, 8, 9) and e.dims_text.value == "0, 1, 8, 9"  # nothing changed
    e.seed.value = 1  # the next change draws again and clears the message
    assert e.error.message == "" and e.dims.value == (0, 1, 8, 9)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"shuffle": 10**5}, r"shuffle: expected a value in \[0, 9999\], got 100000"),
        ({"seed": 100}, r"seed: expected a value in \[0, 99\], got 100"),
        ({"d_model": 7, "dims": (0,)}, r"d_model: expected an even width, got 7"),
        ({"dims": (0, 99)}, r"dims: expected an int in \[0, 31\], got 99"),
    ],
)
def test_bad_starting_values_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PositionalEncodingExplorer(**kwargs)
