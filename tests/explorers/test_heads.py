"""HeadsExplorer and explore_heads: each step against torch, and the forgotten transpose."""

import random

import ipywidgets
import numpy as np
import pytest
import torch
import traitlets

from attention import merge_heads, split_heads
from attention.explore import (
    HEADS_D_MODELS,
    HEADS_MAX,
    HeadsParams,
    explore_heads,
    head_choices,
)
from widgets.explorers.heads import HeadsExplorer


def _torch_mha_like(r):
    """An nn.MultiheadAttention carrying the same weights as the explorer's module."""
    p = r.params
    from attention.explore._util import seeded_mha

    ours = seeded_mha(p.d_model, p.n_heads, p.seed)
    theirs = torch.nn.MultiheadAttention(p.d_model, p.n_heads, batch_first=True).eval()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(
            torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight])
        )
        theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        theirs.out_proj.bias.copy_(ours.out_proj.bias)
    return ours, theirs


@pytest.mark.parametrize(
    "d_model,n_heads,seq_len,batch", [(4, 1, 1, 1), (16, 4, 6, 2), (24, 3, 5, 3), (64, 16, 16, 4)]
)
def test_right_path_matches_torch_multihead_attention(d_model, n_heads, seq_len, batch):
    r = explore_heads(HeadsParams(d_model, n_heads, seq_len, batch, seed=1))
    ours, theirs = _torch_mha_like(r)
    with torch.no_grad():
        want, want_w = theirs(r.x, r.x, r.x, average_attn_weights=False)
        torch.testing.assert_close(r.q_proj, ours.q_proj(r.x))
    torch.testing.assert_close(r.right.output, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(r.right.weights, want_w, atol=1e-5, rtol=1e-5)
    d = d_model // n_heads
    # each step, by hand: split = view + transpose, concat = merge_heads, output = W_o concat
    torch.testing.assert_close(r.q_split, r.q_proj.view(batch, seq_len, n_heads, d))
    torch.testing.assert_close(r.right.q, split_heads(r.q_proj, n_heads))
    torch.testing.assert_close(r.right.k, split_heads(r.k_proj, n_heads))
    torch.testing.assert_close(r.right.v, split_heads(r.v_proj, n_heads))
    torch.testing.assert_close(r.right.concat, merge_heads(r.right.heads))
    for h in range(n_heads):  # head h is columns h*d .. h*d + d - 1 of every token
        torch.testing.assert_close(r.right.q[:, h], r.q_proj[..., h * d : (h + 1) * d])


def test_shapes_readout_matches_the_tensors():
    r = explore_heads(HeadsParams(d_model=24, n_heads=3, seq_len=5, batch=2))
    right = dict(r.right.shapes)
    assert right["x"] == tuple(r.x.shape) == (2, 5, 24)
    assert right["q.view(B, T, H, D)"] == tuple(r.q_split.shape) == (2, 5, 3, 8)
    assert right[".transpose(1, 2)"] == tuple(r.right.q.shape) == (2, 3, 5, 8)
    assert right["weights = softmax(q k^T / sqrt(D))"] == tuple(r.right.weights.shape)
    assert right["concat = .reshape(B, T, M)"] == tuple(r.right.concat.shape)
    wrong = dict(r.wrong.shapes)
    assert wrong["q.view(B, H, T, D)"] == tuple(r.wrong.q.shape) == (2, 3, 5, 8)
    # the bug is silent: both paths end in the same shape
    assert r.right.shapes[-1] == r.wrong.shapes[-1] == ("output = concat W_o", (2, 5, 24))


@pytest.mark.parametrize("d_model,n_heads,seq_len", [(16, 4, 6), (12, 6, 3), (64, 8, 16)])
def test_forgotten_transpose_scrambles_rows_and_changes_everything(d_model, n_heads, seq_len):
    r = explore_heads(HeadsParams(d_model, n_heads, seq_len, batch=2, seed=3))
    d = d_model // n_heads
    torch.testing.assert_close(r.wrong.q, r.q_proj.reshape(2, n_heads, seq_len, d))
    # every wrong row is a D-wide slice of some token, as the source labels say
    for h in range(n_heads):
        for t in range(seq_len):
            tok, ch = int(r.wrong.source_token[h, t]), int(r.wrong.source_chunk[h, t])
            want = r.q_proj[:, tok, ch * d : (ch + 1) * d]
            torch.testing.assert_close(r.wrong.q[:, h, t], want)
            assert int(r.right.source_token[h, t]) == t and int(r.right.source_chunk[h, t]) == h
    # wrong head 0 holds several slices of token 0: positions are mixed across heads
    assert int(r.wrong.source_token[0, 1]) == 0 != int(r.wrong.source_chunk[0, 1])
    assert r.weights_max_diff > 1e-2
    assert r.output_max_diff > 1e-2
    assert r.weights_max_diff == pytest.approx(
        float((r.wrong.weights - r.right.weights).abs().max())
    )
    assert r.output_max_diff == pytest.approx(float((r.wrong.output - r.right.output).abs().max()))
    # the wrong path is still attention: rows of weights sum to 1
    torch.testing.assert_close(r.wrong.weights.sum(-1), torch.ones(2, n_heads, seq_len))


@pytest.mark.parametrize("d_model,n_heads,seq_len", [(16, 1, 6), (16, 4, 1)])
def test_with_one_head_or_one_token_the_transpose_is_a_no_op(d_model, n_heads, seq_len):
    r = explore_heads(HeadsParams(d_model, n_heads, seq_len, batch=2))
    assert r.weights_max_diff < 1e-6 and r.output_max_diff < 1e-6


def test_head_choices_are_divisors_up_to_the_cap():
    assert head_choices(16) == [1, 2, 4, 8, 16]
    assert head_choices(64) == [1, 2, 4, 8, 16]
    assert head_choices(6) == [1, 2, 3, 6]
    for m in HEADS_D_MODELS:
        assert all(m % h == 0 and h <= HEADS_MAX for h in head_choices(m))


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (
            {"d_model": 16, "n_heads": 3},
            ValueError,
            r"d_model=16 is not divisible by n_heads=3; choose n_heads from \[1, 2, 4, 8, 16\]",
        ),
        ({"d_model": 10, "n_heads": 2}, ValueError, r"d_model: expected one of \[4, 6, 8"),
        ({"n_heads": 0}, ValueError, r"n_heads: expected an int in \[1, 16\], got 0"),
        ({"seq_len": 17}, ValueError, r"seq_len: expected an int in \[1, 16\], got 17"),
        ({"batch": 0}, ValueError, r"batch: expected an int in \[1, 4\], got 0"),
        ({"d_model": 16.0}, TypeError, r"d_model: expected an int, got float"),
    ],
)
def test_bad_params_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        HeadsParams(**kwargs)


# --- the widget -----------------------------------------------------------------------------


def _assert_view_matches(e: HeadsExplorer) -> None:
    assert e.error.message == ""
    p = HeadsParams(
        d_model=e.d_model.value,
        n_heads=e.n_heads.value,
        seq_len=e.seq_len.value,
        batch=e.batch.value,
        seed=e.seed.value,
    )
    assert e.result.params == p
    assert list(e.n_heads.options) == head_choices(p.d_model)
    want = explore_heads(p)
    pairs = [
        (e.projection, want.q_proj[0]),
        (e.q_heads, want.right.q[0]),
        (e.wrong_q_heads, want.wrong.q[0]),
        (e.weights, want.right.weights[0]),
        (e.wrong_weights, want.wrong.weights[0]),
        (e.concat, want.right.concat[0]),
        (e.wrong_concat, want.wrong.concat[0]),
        (e.output, want.right.output[0]),
        (e.wrong_output, want.wrong.output[0]),
    ]
    for view, tensor in pairs:
        values = view.values
        assert values.size > 0 and np.isfinite(values).all()
        np.testing.assert_allclose(values.reshape(tensor.shape), tensor.numpy(), atol=1e-6)
    assert e.weights.values.shape == (p.n_heads, p.seq_len, p.seq_len)
    assert e.weights.panel_titles == [f"head {h}" for h in range(p.n_heads)]
    assert e.weights.row_labels == [f"t{i}" for i in range(p.seq_len)]
    shown = None if e.forget_transpose.value else "none"
    assert all(v.layout.display == shown for v in (e.wrong_weights, e.wrong_output))
    assert str((p.batch, p.seq_len, p.d_model)) in e.shapes.value
    d = p.d_model // p.n_heads
    assert str((p.batch, p.seq_len, p.n_heads, d)) in e.shapes.value
    if e.forget_transpose.value:
        assert f"max |Δ weights| = {want.weights_max_diff:.3g}" in e.readout.value
        assert "transpose forgotten" in e.shapes.value


def test_constructible_without_arguments_and_displayable():
    e = HeadsExplorer()
    assert isinstance(e, ipywidgets.VBox)
    assert "ac-heads-explorer" in e._dom_classes
    assert e.result.params == HeadsParams()
    _assert_view_matches(e)


def test_forget_toggle_shows_the_wrong_path_beside_the_right_one():
    e = HeadsExplorer()
    assert e.wrong_weights.layout.display == "none"
    assert "max |Δ weights|" not in e.readout.value
    e.forget_transpose.value = True
    _assert_view_matches(e)
    assert e.wrong_weights.layout.display is None
    assert not np.allclose(e.wrong_weights.values, e.weights.values, atol=1e-3)
    assert e.wrong_weights.panel_titles[0] == "head 0: t0 t1"  # T=6, H=4: rows of t0 and t1
    assert "t0·h1" in e.readout.value  # the source table: wrong head 0, row 1


def test_n_heads_offers_only_divisors_as_d_model_moves():
    e = HeadsExplorer(n_heads=4)
    e.d_model.value = 6  # 4 does not divide 6: the nearest divisor, 3, is chosen
    assert list(e.n_heads.options) == [1, 2, 3, 6] and e.n_heads.value == 3
    _assert_view_matches(e)
    e.d_model.value = 64  # 3 is not offered: ties go to the smaller, 2
    assert list(e.n_heads.options) == [1, 2, 4, 8, 16] and e.n_heads.value == 2
    _assert_view_matches(e)
    with pytest.raises(traitlets.TraitError):
        e.n_heads.value = 3  # not an option: unreachable


def test_seeded_sweep_over_every_control():
    e = HeadsExplorer()
    rng = random.Random(0)
    settings = [
        dict(d_model=4, n_heads=1, seq_len=1, batch=1, seed=0, forget_transpose=False),
        dict(d_model=64, n_heads=16, seq_len=16, batch=4, seed=99, forget_transpose=True),
        dict(d_model=4, n_heads=4, seq_len=16, batch=1, seed=0, forget_transpose=True),
        dict(d_model=64, n_heads=1, seq_len=1, batch=4, seed=99, forget_transpose=False),
    ]
    for _ in range(8):
        m = rng.choice(HEADS_D_MODELS)
        settings.append(
            dict(
                d_model=m,
                n_heads=rng.choice(head_choices(m)),
                seq_len=rng.randint(1, 16),
                batch=rng.randint(1, 4),
                seed=rng.randint(0, 99),
                forget_transpose=rng.random() < 0.5,
            )
        )
    for setting in settings:
        for name, value in setting.items():
            getattr(e, name).value = value
        _assert_view_matches(e)


def test_export_includes_the_wrong_path_only_when_shown():
    # _views() is what the Export button renders (widgets.export is tested on its own)
    e = HeadsExplorer()
    right = set(e._views())
    assert right == {"projection", "q_heads", "weights", "concat", "output"}
    e.forget_transpose.value = True
    wrong = {"wrong_q_heads", "wrong_weights", "wrong_concat", "wrong_output"}
    assert set(e._views()) == right | wrong
    assert e._views()["wrong_weights"] is e.wrong_weights


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"seed": 100}, r"seed: expected a value in \[0, 99\], got 100"),
        ({"n_heads": 3}, r"d_model=16 is not divisible by n_heads=3"),
    ],
)
def test_bad_starting_values_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        HeadsExplorer(**kwargs)
