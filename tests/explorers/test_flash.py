"""FlashExplorer (lesson 13): the stepper's pure function (attention.explore.flash) against
the core and the memory model, then the widget's panels against it."""

import math
import random

import ipywidgets
import numpy as np
import pytest
import torch

from attention.explore.flash import (
    FLASH_SEQ_MAX,
    NOT_READ,
    ON_CHIP,
    READ,
    REAL_BLOCK,
    REAL_D_HEAD,
    FlashParams,
    explore_flash,
    flash_step_count,
    min_block_size,
    traffic_curves,
)
from attention.flash import flash_attention_steps
from attention.memory import flash_attention_traffic, naive_attention_traffic
from widgets.explorers.flash import FlashExplorer

# --- FlashAttention stepper: the pure function ----------------------------------------------


def _seen_reference(p: FlashParams, rows: tuple[int, int], upto: int):
    """Softmax state of query rows [r0, r1) over keys [0, upto): m, l, softmax(seen) @ v."""
    r = explore_flash(FlashParams(**{**p.__dict__, "step": 0}))
    q, k, v = r.query.double(), r.key.double(), r.value.double()
    s = q @ k.T / math.sqrt(p.d_head)  # (T, T)
    allowed = r.allowed.clone()
    allowed[:, upto:] = False
    s = s.masked_fill(~allowed, float("-inf"))[rows[0] : rows[1]]
    m = s.amax(-1)
    e = torch.exp(s - m[:, None])
    l = e.sum(-1)
    return m, l, (e / l[:, None]) @ v


@pytest.mark.parametrize(
    "seq_len,block,causal",
    [(8, 2, False), (8, 3, True), (7, 7, False), (32, 2, True), (5, 1, True)],
)
def test_every_step_holds_the_softmax_of_the_keys_seen_so_far(seq_len, block, causal):
    p = FlashParams(seq_len=seq_len, block_size=block, causal=causal, seed=3)
    n = p.n_steps
    for step in sorted({1, 2, n // 2, n - 1, n} & set(range(1, n + 1))):
        r = explore_flash(FlashParams(**{**p.__dict__, "step": step}))
        s = r.current
        (r0, r1), (_, c1) = s.rows, s.cols
        m, l, out = _seen_reference(p, s.rows, c1)
        torch.testing.assert_close(r.m[r0:r1].double(), m, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(r.l[r0:r1].double(), l, atol=1e-4, rtol=1e-5)
        torch.testing.assert_close(r.partial[r0:r1].double(), out, atol=1e-5, rtol=1e-5)
        assert bool(r.started[:r1].all()) and not bool(r.started[r1:].any())
        assert bool(torch.isneginf(r.m[r1:]).all()) and float(r.l[r1:].abs().sum()) == 0.0


@pytest.mark.parametrize("seq_len,block,causal", [(8, 2, False), (9, 4, True), (32, 32, True)])
def test_after_the_last_step_flash_equals_naive_attention(seq_len, block, causal):
    p = FlashParams(seq_len=seq_len, block_size=block, causal=causal)
    r = explore_flash(FlashParams(**{**p.__dict__, "step": p.n_steps}))
    assert bool(r.finished.all())
    torch.testing.assert_close(r.partial, r.output, atol=1e-5, rtol=1e-5)
    assert r.max_error < 1e-5
    torch.testing.assert_close(r.m, r.final_m)
    torch.testing.assert_close(r.l, r.final_l)
    s = (r.query @ r.key.T / math.sqrt(p.d_head)).masked_fill(~r.allowed, float("-inf"))
    torch.testing.assert_close(r.final_m, s.amax(-1))
    torch.testing.assert_close(r.final_l, torch.exp(s - s.amax(-1, keepdim=True)).sum(-1))
    torch.testing.assert_close(r.weights, torch.softmax(s, -1))


@pytest.mark.parametrize("seq_len", [2, 5, 8, 16, 17, 32])
@pytest.mark.parametrize("causal", [False, True])
def test_step_count_is_the_core_loops_length(seq_len, causal):
    for block in range(min_block_size(seq_len), seq_len + 1):
        q = torch.randn(seq_len, 2)
        steps = list(flash_attention_steps(q, q, q, causal=causal, block_size=block))
        assert flash_step_count(seq_len, block, causal) == len(steps)
    tiles = math.ceil(seq_len / min_block_size(seq_len))
    assert tiles <= 16


def test_tile_map_marks_the_tile_on_chip_the_tiles_read_and_the_skipped_ones():
    p = FlashParams(seq_len=8, block_size=3, causal=True, step=4)
    r = explore_flash(p)
    s = r.current
    (r0, r1), (c0, c1) = s.rows, s.cols
    chip = r.tile_state == ON_CHIP
    assert int(chip.sum()) == (r1 - r0) * (c1 - c0) and bool(chip[r0:r1, c0:c1].all())
    earlier = explore_flash(FlashParams(**{**p.__dict__, "step": 3}))
    was_read = earlier.tile_state != NOT_READ
    assert torch.equal((r.tile_state == READ) | chip, was_read | chip)
    # skipped = in a key tile wholly after the query tile: never allowed, never read
    assert not bool((r.skipped & r.allowed).any())
    done = explore_flash(FlashParams(**{**p.__dict__, "step": p.n_steps}))
    assert torch.equal(done.tile_state == NOT_READ, done.skipped)
    assert not bool(explore_flash(FlashParams(seq_len=8, block_size=3)).skipped.any())


def test_bytes_match_the_memory_model():
    p = FlashParams(seq_len=16, block_size=4, d_head=8)
    r = explore_flash(FlashParams(**{**p.__dict__, "step": p.n_steps}))
    want = flash_attention_traffic(16, 16, 8, block_size=4, bytes_per_value=4)
    assert (r.flash_read_total, r.flash_written_total) == (want.bytes_read, want.bytes_written)
    assert (r.bytes_read, r.bytes_written) == (want.bytes_read, want.bytes_written)
    assert r.naive == naive_attention_traffic(16, 16, 8, bytes_per_value=4)
    half = explore_flash(FlashParams(**{**p.__dict__, "step": 5}))
    assert half.bytes_read == sum(b for b, _ in half.step_bytes[:5])
    # first step: q, k and v tiles (3 x 4 rows x 8 numbers x 4 bytes); written when a row ends
    assert half.step_bytes[0] == (3 * 4 * 8 * 4, 0)
    assert half.step_bytes[3][1] == (4 * 8 + 4) * 4  # 4 output rows and 4 lse values
    causal = explore_flash(FlashParams(seq_len=16, block_size=4, d_head=8, causal=True))
    assert causal.flash_read_total < r.flash_read_total  # tiles in the future are skipped
    assert causal.flash_written_total == r.flash_written_total


def test_real_size_curves_grow_as_t_squared_and_t():
    c = traffic_curves()
    for i in range(len(c.seq_lens) - 1):
        t0, t1 = c.seq_lens[i], c.seq_lens[i + 1]
        assert t1 == 2 * t0
        assert c.naive_stored[i + 1] == 4 * c.naive_stored[i]  # 2 T^2 numbers: quadratic
        assert c.flash_stored[i + 1] == 2 * c.flash_stored[i]  # T numbers: linear
    t = c.seq_lens[-1]
    assert c.naive_stored[-1] == 2 * t * t * 2 and c.flash_stored[-1] == t * 2
    # the traffic of both grows as T^2; flash's is smaller by about 2 * block / D
    ratio = c.naive_moved[-1] / c.flash_moved[-1]
    assert ratio == pytest.approx(2 * REAL_BLOCK / REAL_D_HEAD, rel=0.05)


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"seq_len": 1}, ValueError, r"seq_len: expected an int in \[2, 32\], got 1"),
        ({"seq_len": 33}, ValueError, r"seq_len: expected an int in \[2, 32\]"),
        ({"seq_len": 32, "block_size": 1}, ValueError, r"block_size: expected an int in \[2, 32\]"),
        ({"block_size": 9}, ValueError, r"block_size: expected an int in \[1, 8\], got 9"),
        ({"step": 17}, ValueError, r"step: expected an int in \[0, 16\], got 17"),
        ({"causal": 1}, TypeError, r"causal: expected a bool, got int"),
        ({"d_head": 0}, ValueError, r"d_head: expected an int in \[1, 16\]"),
    ],
)
def test_bad_flash_params_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        FlashParams(**kwargs)


# --- FlashExplorer ----------------------------------------------------------------------------


def _assert_flash_view_matches(e: FlashExplorer) -> None:
    assert e.error.message == ""
    p = FlashParams(
        seq_len=e.seq_len.value,
        block_size=e.block_size.value,
        causal=e.causal.value,
        seed=e.seed.value,
        step=e.step.value,
    )
    assert e.result.params == p and e.step.max == p.n_steps
    want = explore_flash(p)
    np.testing.assert_array_equal(e.tiles.matrix, want.tile_state.numpy())
    np.testing.assert_array_equal(e.tiles.masked[0], want.skipped.numpy())
    np.testing.assert_allclose(e.weights.matrix, want.weights.numpy(), atol=1e-7)
    np.testing.assert_array_equal(e.weights.masked[0], ~want.allowed.numpy())
    m_now = e.m_chart.series[0]["values"]
    for i in range(p.seq_len):
        if want.started[i]:
            assert m_now[i] == pytest.approx(float(want.m[i]))
            assert e.l_chart.series[0]["values"][i] == pytest.approx(float(want.l[i]))
        else:
            assert m_now[i] is None and e.l_chart.series[0]["values"][i] is None
    np.testing.assert_allclose(e.m_chart.series[1]["values"], want.final_m.numpy(), rtol=1e-6)
    np.testing.assert_allclose(e.outputs.values[0], want.partial.numpy(), atol=1e-7)
    np.testing.assert_allclose(e.outputs.values[1], want.output.numpy(), atol=1e-7)
    np.testing.assert_array_equal(e.outputs.masked[0].all(-1), ~want.started.numpy())
    moved = e.traffic.series[0]["values"]
    assert len(moved) == p.n_steps + 1 and moved[0] == 0.0
    assert moved[p.step] == want.bytes_read + want.bytes_written
    assert e.traffic.markers == [{"x": float(p.step), "label": f"step {p.step}"}]
    assert f"Step {p.step} of {p.n_steps}" in e.readout.value
    assert e.next_button.disabled == (p.step == p.n_steps)
    assert e.reset_button.disabled == (p.step == 0)


def test_flash_explorer_constructible_and_displayable():
    e = FlashExplorer()
    assert isinstance(e, ipywidgets.VBox)
    assert "ac-flash-explorer" in e._dom_classes
    assert e.result.params == FlashParams()
    _assert_flash_view_matches(e)
    assert "nothing read yet" in e.readout.value


def test_next_tile_reset_and_run_to_the_end():
    e = FlashExplorer()
    for k in range(1, 4):
        e.next_button.click()
        assert e.step.value == k
        _assert_flash_view_matches(e)
    assert "query tile 0 (q0–q1) × key tile 2 (k4–k5)" in e.readout.value  # tile (0, 2)
    e.end_button.click()
    assert e.step.value == e.result.n_steps == 16
    e.next_button.click()  # past the end: stays
    assert e.step.value == 16
    _assert_flash_view_matches(e)
    assert e.result.max_error < 1e-5 and "8 of 8 rows done" in e.outputs.title
    e.reset_button.click()
    assert e.step.value == 0
    _assert_flash_view_matches(e)


def test_changing_the_problem_keeps_block_and_step_reachable():
    e = FlashExplorer(seq_len=8, block_size=8, step=1)
    e.seq_len.value = 4
    assert e.block_size.max == 4 and e.block_size.value == 4
    e.seq_len.value = FLASH_SEQ_MAX
    assert e.block_size.min == 2 and e.block_size.value == 4
    e.block_size.value = 2
    assert e.step.max == 256
    e.step.value = 256
    e.causal.value = True
    assert e.step.max == 136 and e.step.value == 136
    _assert_flash_view_matches(e)
    e.block_size.value = 1  # below the minimum: the slider refuses it
    assert e.block_size.value == 2


def test_flash_seeded_sweep():
    e = FlashExplorer()
    rng = random.Random(0)
    for _ in range(8):
        t = rng.randint(2, FLASH_SEQ_MAX)
        with e.hold_refresh():
            e.seq_len.value = t
            e.block_size.min = 1
            e.block_size.max = t
            e.block_size.value = rng.randint(min_block_size(t), t)
            e.causal.value = rng.random() < 0.5
            e.seed.value = rng.randint(0, 99)
        e.refresh()
        e.step.value = rng.randint(0, e.step.max)
        _assert_flash_view_matches(e)


def test_flash_export(tmp_path):
    e = FlashExplorer(step=3)
    names = sorted(p.name for p in e.export(tmp_path))
    views = ("tiles", "weights", "running_max", "running_sum", "outputs", "traffic")
    views += ("traffic_scale",)
    assert names == sorted(f"flash-explorer_{v}.{x}" for v in views for x in ("png", "svg", "csv"))


@pytest.mark.parametrize(
    "kwargs,match",
    [({"step": 99}, r"step: expected an int in \[0, 16\]"), ({"seed": 500}, r"seed: expected")],
)
def test_flash_bad_starting_values_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FlashExplorer(**kwargs)
