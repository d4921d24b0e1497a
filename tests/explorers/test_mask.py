"""MaskExplorer: conventions from the core's converters, clicks, and the view vs the function."""

from __future__ import annotations

import csv
import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention import from_additive_mask, from_key_padding_mask, valid_lens_to_mask
from attention.explore import MaskParams, explore_mask, mask_to_tuple, preset_mask
from widgets.explorers.mask import MAX_SIDE, MaskExplorer
from widgets.views.style import css

# --- the pure function ------------------------------------------------------------------------


def conventions(mask: torch.Tensor, seed: int = 0):
    return explore_mask(MaskParams(mask=mask_to_tuple(mask), seed=seed))


def test_padding_mask_in_every_convention_round_trips():
    mask = preset_mask("padding", 3, 5, pad_len=2)
    r = conventions(mask)
    assert torch.equal(r.key_padding_mask, torch.tensor([[False, False, False, True, True]]))
    assert torch.equal(from_key_padding_mask(r.key_padding_mask)[0].expand(3, 5), mask)
    assert torch.equal(from_additive_mask(r.additive), mask)
    assert torch.equal(r.valid_lens, torch.tensor([[3, 3, 3]]))
    assert torch.equal(valid_lens_to_mask(r.valid_lens, 5)[0], mask)


def test_causal_mask_has_valid_lens_but_no_key_padding_mask():
    r = conventions(preset_mask("causal", 4, 4))
    assert r.key_padding_mask is None and "rows differ" in r.key_padding_note
    assert torch.equal(r.valid_lens, torch.tensor([[1, 2, 3, 4]]))
    assert r.additive[0, 1] == float("-inf") and r.additive[1, 0] == 0


def test_non_prefix_mask_says_why_there_are_no_valid_lens():
    mask = preset_mask("causal", 3, 3).flip(1)  # each row keeps a suffix of the keys
    r = conventions(mask)
    assert r.valid_lens is None
    assert r.valid_lens_note.startswith("mask: some row is not a prefix")


def test_weights_match_torch_and_a_blocked_row_gives_zeros():
    mask = preset_mask("causal", 4, 5).clone()
    mask[2] = False
    r = conventions(mask, seed=3)
    assert r.fully_masked.tolist() == [False, False, True, False]
    assert (r.weights[2] == 0).all() and not r.weights.isnan().any()
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(4, 4, generator=g), torch.randn(5, 4, generator=g)
    expected = F.softmax((q @ k.T / 2).masked_fill(~mask, float("-inf")), dim=-1)
    keep = ~r.fully_masked
    torch.testing.assert_close(r.weights[keep], expected[keep])


@pytest.mark.parametrize(
    ("mask", "match"),
    [
        ((), r"Tq: expected an int in \[1, 64\], got 0"),
        (((True, False), (True,)), "custom_mask: expected 2 rows of 2 bools"),
    ],
)
def test_params_errors(mask, match):
    with pytest.raises(ValueError, match=match):
        MaskParams(mask=mask)


# --- the view ---------------------------------------------------------------------------------


def assert_view_matches(ex: MaskExplorer) -> None:
    assert ex.error.message == ""
    r = explore_mask(ex.params)
    assert torch.equal(ex.result.mask, r.mask)
    np.testing.assert_array_equal(ex.mask_view.matrix, r.mask.float().numpy())
    np.testing.assert_array_equal(ex.additive_view.matrix, r.additive.numpy())
    np.testing.assert_array_equal(ex.weights_view.matrix, r.weights.numpy())
    np.testing.assert_array_equal(ex.weights_view.masked[0], (~r.mask).numpy())
    np.testing.assert_array_equal(ex.weights_view.fully_masked[0], r.fully_masked.numpy())
    assert not np.isnan(ex.weights_view.values).any()
    if r.key_padding_mask is None:
        assert ex.key_padding_view.layout.display == "none"
    else:
        np.testing.assert_array_equal(
            ex.key_padding_view.matrix, r.key_padding_mask.float().numpy()
        )
    if r.valid_lens is None:
        assert ex.valid_lens_view.layout.display == "none"
        assert "valid_lens = None" in ex.code.value
    else:
        np.testing.assert_array_equal(ex.valid_lens_view.matrix[:, 0], r.valid_lens[0].numpy())
    assert "additive = tensor(" in ex.code.value


def test_constructible_with_no_arguments():
    ex = MaskExplorer()
    assert css("mask-explorer") in ex._dom_classes
    assert ex.result.mask.shape == (5, 6) and ex.preset.value == "causal"
    assert_view_matches(ex)


def test_click_toggles_the_mask_and_changes_the_weights():
    ex = MaskExplorer(4, 4, "none")
    before = ex.result.weights.clone()
    ex.mask_view.click(row=1, col=2)
    assert ex.preset.value == "custom"
    assert not ex.result.mask[1, 2] and int(ex.result.mask.sum()) == 15
    assert ex.result.weights[1, 2] == 0 and not torch.equal(ex.result.weights, before)
    assert ex.weights_view.masked[0, 1, 2]
    ex.weights_view.click(row=1, col=2)  # the weights grid is clickable too
    assert ex.result.mask.all()
    torch.testing.assert_close(ex.result.weights, before)
    assert_view_matches(ex)


def test_blocking_a_whole_row_shows_a_fully_masked_row():
    ex = MaskExplorer(3, 3, "none")
    for col in range(3):
        ex.additive_view.click(row=0, col=col)
    assert ex.result.fully_masked.tolist() == [True, False, False]
    assert ex.weights_view.fully_masked[0].tolist() == [True, False, False]
    assert (ex.weights_view.matrix[0] == 0).all()
    assert "1 row(s) may attend to nothing" in ex.code.value
    assert_view_matches(ex)


def test_presets_and_sizes():
    ex = MaskExplorer(3, 5, "padding", pad_len=2)
    assert ex.result.key_padding_mask.tolist() == [[False, False, False, True, True]]
    ex.n_keys.value = 2
    assert ex.pad_len.max == 2 and ex.result.mask.shape == (3, 2)
    ex.preset.value = "causal"
    assert torch.equal(ex.result.mask, preset_mask("causal", 3, 2))
    assert ex.pad_len.layout.display == "none"
    assert_view_matches(ex)


def test_custom_edits_survive_resizing():
    ex = MaskExplorer(mask=torch.tensor([[True, False], [False, True]]))
    assert ex.preset.value == "custom"
    ex.n_queries.value = 3
    assert ex.result.mask.tolist() == [[True, False], [False, True], [True, True]]


def test_constructor_errors():
    with pytest.raises(ValueError, match="preset: expected one of"):
        MaskExplorer(preset="diagonal")
    with pytest.raises(ValueError, match=f"n_keys: expected 1 to {MAX_SIDE}, got 0"):
        MaskExplorer(n_keys=0)
    with pytest.raises(ValueError, match=r"mask: expected \(Tq, Tk\)"):
        MaskExplorer(mask=torch.ones(3, dtype=torch.bool))


def test_sweep_sizes_presets_and_random_clicks():
    rng = random.Random(7)
    ex = MaskExplorer()
    sizes = [(1, 1), (1, MAX_SIDE), (MAX_SIDE, 1), (MAX_SIDE, MAX_SIDE)]
    sizes += [(rng.randint(1, MAX_SIDE), rng.randint(1, MAX_SIDE)) for _ in range(6)]
    for tq, tk in sizes:
        ex.n_queries.value, ex.n_keys.value = tq, tk
        for preset in ("none", "causal", "padding"):
            ex.preset.value = preset
            if preset == "padding":
                ex.pad_len.value = rng.randint(0, tk)
            assert_view_matches(ex)
        for _ in range(3):
            ex.mask_view.click(rng.randrange(tq), rng.randrange(tk))
            assert_view_matches(ex)
        ex.seed.value = rng.randint(0, 99)
        assert_view_matches(ex)


def test_export_writes_every_convention(tmp_path):
    ex = MaskExplorer(3, 4, "padding", pad_len=1)
    names = {p.name for p in ex.export(tmp_path)}
    for view in ("mask", "additive", "key_padding_mask", "valid_lens", "weights"):
        assert {f"mask-explorer_{view}.{ext}" for ext in ("png", "svg", "csv")} <= names
    with (tmp_path / "mask-explorer_additive.csv").open() as fh:
        values = [r["value"] for r in csv.DictReader(fh)]
    assert values == ["0.0", "0.0", "0.0", "-inf"] * 3


def test_left_padding_with_a_causal_mask_gives_fully_masked_rows_drawn_grey():
    explorer = MaskExplorer(n_queries=5, n_keys=5, preset="left pad + causal", pad_len=2)
    r = explorer.result
    assert r.fully_masked.tolist() == [True, True, False, False, False]
    assert (r.weights[:2] == 0).all()
    torch.testing.assert_close(r.weights[2:].sum(-1), torch.ones(3))
    assert explorer.weights_view.fully_masked.tolist() == [[True, True, False, False, False]]
    assert "2 row(s) may attend to nothing" in explorer.code.value
