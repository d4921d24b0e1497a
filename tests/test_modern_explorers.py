"""FlashExplorer, KVCacheExplorer, RopeExplorer and the sink experiment: the maths, then the views.

The pure functions (attention.explore.flash, kv_cache, positions, windows) are checked
against references written out here; each explorer's panels are compared with the function's
result for the controls' current values. The window/sink functions run on a tiny randomly
initialised SmolLM2, so these tests need no weight files.
"""

import math
import random

import ipywidgets
import numpy as np
import pytest
import torch

from attention.experiments.decoding import DecodingSpeed, measure_decoding
from attention.experiments.windows import (
    first_token_attention,
    masked_logits,
    token_losses,
    window_experiment,
    window_run,
)
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
from attention.explore.kv_cache import (
    KV_CONTEXTS,
    KV_DTYPES,
    KV_PRESETS,
    KVCacheParams,
    attention_kind,
    explore_kv_cache,
    human_bytes,
)
from attention.explore.rope import RopeParams, explore_rope, pair_features
from attention.flash import flash_attention_steps
from attention.masks import causal_mask, sliding_window_mask
from attention.memory import flash_attention_traffic, kv_cache_bytes, naive_attention_traffic
from attention.models.pretrained import SmolLM2, SmolLM2Config
from widgets.explorers.flash import FlashExplorer
from widgets.explorers.kv_cache import CUSTOM, GIB, KVCacheExplorer
from widgets.explorers.rope import RopeExplorer

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


# --- KV cache: the pure function ----------------------------------------------------------------


def test_smollm2_cache_is_two_x_layers_x_kv_heads_x_width_x_tokens_x_bytes():
    r = explore_kv_cache(KVCacheParams())  # SmolLM2, 2048 tokens, float32
    assert r.bytes == 2 * 30 * 3 * 64 * 2048 * 4 == 94_371_840
    assert human_bytes(r.bytes) == "90 MiB"
    assert r.kind == "GQA" and r.group_size == 3
    assert [v.name for v in r.variants] == ["MQA (1)", "GQA (3)", "MHA (9)"]
    assert [v.bytes for v in r.variants] == [r.bytes / 3, r.bytes, 3 * r.bytes]
    assert r.bytes_per_token == 2 * 30 * 3 * 64 * 4


@pytest.mark.parametrize("name", list(KV_PRESETS))
@pytest.mark.parametrize("dtype", list(KV_DTYPES))
def test_every_preset_and_dtype_agrees_with_the_core(name, dtype):
    s = KV_PRESETS[name]
    p = KVCacheParams(s.n_layers, s.n_heads, s.n_kv_heads, s.d_head, 4096, 3, dtype)
    r = explore_kv_cache(p)
    want = kv_cache_bytes(
        n_layers=s.n_layers,
        n_kv_heads=s.n_kv_heads,
        d_head=s.d_head,
        seq_len=4096,
        batch=3,
        bytes_per_value=KV_DTYPES[dtype],
    )
    assert r.bytes == want
    for v in r.variants:
        assert v.bytes == want * v.n_kv_heads / s.n_kv_heads
        assert len(v.by_context) == len(KV_CONTEXTS)
        assert v.by_context[KV_CONTEXTS.index(4096)] == v.bytes
    assert r.mha_bytes / r.bytes == s.n_heads / s.n_kv_heads


def test_attention_kind_names():
    assert attention_kind(9, 9) == "MHA"
    assert attention_kind(9, 3) == "GQA"
    assert attention_kind(9, 1) == "MQA"
    assert attention_kind(1, 1) == "MHA"
    assert human_bytes(1023) == "1023 B" and human_bytes(1536) == "1.5 KiB"


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (
            {"n_kv_heads": 2},
            ValueError,
            r"n_kv_heads=2 does not divide n_heads=9; choose .*\[1, 3, 9\]",
        ),
        ({"n_kv_heads": 10}, ValueError, r"n_kv_heads: expected an int in \[1, 9\]"),
        ({"dtype": "fp8"}, ValueError, r"dtype: expected one of \['float32'"),
        ({"seq_len": 0}, ValueError, r"seq_len: expected an int in \[1, 131072\]"),
        ({"batch": 1.0}, TypeError, r"batch: expected an int, got float"),
    ],
)
def test_bad_kv_params_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        KVCacheParams(**kwargs)


class _ToyTokenizer:
    def encode(self, text):
        return [ord(c) % 40 + 1 for c in text]

    def decode(self, ids):
        return " ".join(map(str, ids))


def _tiny_smollm2(seed: int = 0) -> SmolLM2:
    torch.manual_seed(seed)
    cfg = SmolLM2Config(vocab_size=48, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=48)
    model = SmolLM2(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    return model


def test_measure_decoding_writes_the_same_tokens_with_and_without_the_cache():
    model = _tiny_smollm2()
    speed = measure_decoding(model, _ToyTokenizer(), "hello world", 5)
    assert isinstance(speed, DecodingSpeed)
    assert speed.same_tokens and speed.new_tokens == 5 and speed.prompt_tokens == 11
    assert speed.cached_tokens == 11 + 5 - 1
    cfg = model.cfg
    assert speed.cache_bytes == kv_cache_bytes(
        n_layers=cfg.n_layers, n_kv_heads=cfg.n_kv_heads, d_head=cfg.d_head, seq_len=15
    )
    assert speed.cached_tokens_per_s == pytest.approx(5 / speed.seconds_cached)
    assert speed.speedup == pytest.approx(speed.seconds_uncached / speed.seconds_cached)
    assert len(speed.text.split()) == 5
    assert len(speed.step_seconds_cached) == len(speed.step_seconds_uncached) == 5
    assert sum(speed.step_seconds_cached) == pytest.approx(speed.seconds_cached)
    with_cache, without = speed.next_token_seconds
    assert with_cache == pytest.approx(sum(speed.step_seconds_cached[1:]) / 4)
    assert without == pytest.approx(sum(speed.step_seconds_uncached[1:]) / 4)


# --- KVCacheExplorer ------------------------------------------------------------------------


def _assert_kv_view_matches(e: KVCacheExplorer) -> None:
    assert e.error.message == ""
    p = KVCacheParams(
        e.n_layers.value,
        e.n_heads.value,
        e.n_kv_heads.value,
        e.d_head.value,
        e.seq_len.value,
        e.batch.value,
        e.dtype.value,
    )
    assert e.result.params == p
    want = explore_kv_cache(p)
    assert list(e.n_kv_heads.options) == [v.n_kv_heads for v in want.variants]
    heights = [
        max(v for v in vals if v is not None)
        for vals in zip(*[s["values"] for s in e.bars.series], strict=True)
    ]
    assert heights == pytest.approx([v.bytes / GIB for v in want.variants])
    assert e.bars.x_tick_labels == [v.name for v in want.variants]
    yours = next(s for s in e.curves.series if "yours" in s["name"])
    chosen = next(v for v in want.variants if v.n_kv_heads == p.n_kv_heads)
    assert yours["values"] == pytest.approx([b / GIB for b in chosen.by_context])
    assert human_bytes(want.bytes) in e.readout.value


def test_kv_explorer_shows_smollm2_and_the_presets():
    e = KVCacheExplorer()
    assert "ac-kv-cache-explorer" in e._dom_classes
    assert e.result.params == KVCacheParams()
    _assert_kv_view_matches(e)
    assert "GQA: cache = 90 MiB" in e.readout.value
    for name, shape in KV_PRESETS.items():
        e.preset.value = name
        assert (e.n_layers.value, e.n_heads.value, e.n_kv_heads.value, e.d_head.value) == (
            shape.n_layers,
            shape.n_heads,
            shape.n_kv_heads,
            shape.d_head,
        )
        assert e.preset.value == name
        _assert_kv_view_matches(e)


def test_moving_a_shape_slider_leaves_the_preset_and_keeps_kv_heads_a_divisor():
    e = KVCacheExplorer()
    e.n_heads.value = 8
    assert e.preset.value == CUSTOM
    assert list(e.n_kv_heads.options) == [1, 2, 4, 8] and e.n_kv_heads.value in (2, 4)
    _assert_kv_view_matches(e)
    e.n_kv_heads.value = 1
    assert e.result.kind == "MQA"
    e.seq_len.value = 131072
    e.batch.value = 8
    e.dtype.value = "4-bit"
    _assert_kv_view_matches(e)
    e.preset.value = CUSTOM  # choosing "custom" changes nothing
    _assert_kv_view_matches(e)


def test_kv_explorer_shows_measured_speed_and_exports(tmp_path):
    steps = (0.2, 0.05, 0.05, 0.2)  # the first cached step reads the prompt
    speed = DecodingSpeed(20, 4, 0.5, 4.0, True, 23, 1000, "text", steps, (1.0, 1.0, 1.0, 1.0))
    e = KVCacheExplorer(speed=speed)
    assert "8.0× faster" in e.readout.value and "<td" in e.readout.value
    assert ">8.00<" in e.readout.value and ">0.100<" in e.readout.value  # tokens/s, s per token
    assert speed.next_token_seconds == pytest.approx((0.1, 1.0))
    names = sorted(p.name for p in e.export(tmp_path))
    assert names == sorted(
        f"kv-cache-explorer_{v}.{x}"
        for v in ("variants", "by_context")
        for x in ("png", "svg", "csv")
    )


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"preset": "GPT-9"}, r"preset: expected one of \['custom', 'SmolLM2-135M'"),
        ({"seq_len": 1000}, r"seq_len: expected one of \[64, 128"),
        ({"preset": "custom", "n_heads": 8, "n_kv_heads": 3}, r"n_kv_heads=3 does not divide"),
    ],
)
def test_kv_bad_starting_values_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        KVCacheExplorer(**kwargs)


# --- RoPE and ALiBi: the pure function ---------------------------------------------------------


def _rope_by_hand(x: torch.Tensor, m: int, layout: str, base: float) -> torch.Tensor:
    """Turn each pair of x (D,) by m * base^(-2i/D) with an explicit 2 x 2 rotation matrix."""
    d = x.shape[0]
    out = x.double().clone()
    for i in range(d // 2):
        a, b = pair_features(d, i, layout)
        angle = m * base ** (-2 * i / d)
        rot = torch.tensor(
            [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]]
        )
        out[[a, b]] = rot.double() @ x[[a, b]].double()
    return out


@pytest.mark.parametrize("d_head,seq_len,base", [(2, 5, 10000.0), (8, 6, 100.0), (16, 16, 1e6)])
def test_rope_scores_are_rotated_dot_products(d_head, seq_len, base):
    r = explore_rope(RopeParams(d_head=d_head, seq_len=seq_len, base=base, pair=0))
    for layout in ("half", "interleaved"):
        for m in (0, seq_len - 1):
            rq = _rope_by_hand(r.query, m, layout, base)
            torch.testing.assert_close(
                r.rotated_query[layout][m].double(), rq, atol=1e-5, rtol=1e-5
            )
            for n in (0, seq_len // 2):
                rk = _rope_by_hand(r.key, n, layout, base)
                want = float(rq @ rk)
                assert float(r.matched[layout].scores[m, n]) == pytest.approx(want, abs=1e-4)
        rq = _rope_by_hand(r.query, 2, "half", base)
        rk = _rope_by_hand(r.key, 1, "interleaved", base)
        assert float(r.mixed.scores[2, 1]) == pytest.approx(float(rq @ rk), abs=1e-4)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("d_head", [4, 16, 64])
def test_matched_layouts_depend_only_on_the_offset_and_mixed_ones_do_not(seed, d_head):
    r = explore_rope(RopeParams(d_head=d_head, seq_len=24, seed=seed, pair=0))
    for s in r.matched.values():
        assert s.relative
        torch.testing.assert_close(s.scores[1:, 1:], s.scores[:-1, :-1], atol=1e-4, rtol=1e-4)
        assert s.spread < 1e-4
    assert not r.mixed.relative and r.mixed.spread > 0.1
    # the offset curve is the diagonal: scores[m, n] for m - n = o
    s = r.matched["half"]
    for o in (-23, -1, 0, 5, 23):
        i = int((s.offsets == o).nonzero())
        assert float(s.offset_mean[i]) == pytest.approx(
            float(s.scores[max(o, 0), max(-o, 0)]), abs=1e-4
        )


def test_with_two_features_both_layouts_are_one_pair():
    r = explore_rope(RopeParams(d_head=2, pair=0))
    assert r.mixed.relative  # (0, 1) is pair 0 either way: nothing to mix up
    torch.testing.assert_close(r.pairing["half"], r.pairing["interleaved"])


def test_pairing_and_the_turning_pair():
    r = explore_rope(RopeParams(d_head=8, seq_len=12, pair=2, base=100.0))
    for layout, table in r.pairing.items():
        assert torch.equal(table.sum(1), torch.ones(8)) and torch.equal(
            table.sum(0), 2 * torch.ones(4)
        )
        a, b = pair_features(8, 2, layout)
        assert table[a, 2] == 1 and table[b, 2] == 1
    assert pair_features(8, 2, "half") == (2, 6) and pair_features(8, 2, "interleaved") == (4, 5)
    assert (
        r.pair_marks.shape == (2, 8, 4)
        and r.pair_marks[0, 6, 2] == 2
        and r.pair_marks[1, 5, 2] == 2
    )
    assert int((r.pair_marks == 2).sum()) == 4  # the chosen pair, in each layout
    assert torch.equal(r.causal, torch.ones(12, 12, dtype=torch.bool).tril())
    radius = r.pair_xy.norm(dim=1)
    torch.testing.assert_close(radius, torch.full((12,), r.pair_radius), atol=1e-5, rtol=1e-5)
    angle = torch.atan2(r.pair_xy[:, 1].double(), r.pair_xy[:, 0].double())
    step = torch.remainder(angle[1:] - angle[:-1], 2 * math.pi)
    theta = 100.0 ** (-2 * 2 / 8)
    torch.testing.assert_close(
        step, torch.full((11,), theta, dtype=torch.float64), atol=1e-5, rtol=0
    )
    assert float(r.angles[2]) == pytest.approx(theta)


def test_alibi_biases_and_weights():
    r = explore_rope(RopeParams(seq_len=10, alibi_heads=8))
    torch.testing.assert_close(r.alibi_slopes, torch.tensor([2.0 ** -(h + 1) for h in range(8)]))
    m, n = 7, 3
    for h in range(8):
        assert float(r.alibi_bias[h, m, n]) == pytest.approx(-float(r.alibi_slopes[h]) * (m - n))
        assert float(r.alibi_bias[h, n, m]) == 0.0  # above the diagonal: masked, shown as 0
    torch.testing.assert_close(r.alibi_weights.sum(-1), torch.ones(8))
    # a steeper slope looks closer: more weight on the last key than a gentler head
    assert bool((r.alibi_weights[:-1, -1] > r.alibi_weights[1:, -1]).all())


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"d_head": 7}, ValueError, r"d_head: RoPE rotates pairs, so it must be even, got 7"),
        ({"pair": 8}, ValueError, r"pair: expected an int in \[0, 7\], got 8"),
        ({"base": 1.0}, ValueError, r"base: expected a float in \[10, 1e\+06\], got 1.0"),
        ({"base": "big"}, TypeError, r"base: expected a float, got str"),
        ({"alibi_heads": 0}, ValueError, r"alibi_heads: expected an int in \[1, 16\]"),
    ],
)
def test_bad_rope_params_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        RopeParams(**kwargs)


# --- RopeExplorer -------------------------------------------------------------------------------


def _assert_rope_view_matches(e: RopeExplorer) -> None:
    assert e.error.message == ""
    p = RopeParams(
        e.d_head.value,
        e.seq_len.value,
        float(e.base.value),
        e.pair.value,
        e.seed.value,
        e.alibi_heads.value,
    )
    assert e.result.params == p
    want = explore_rope(p)
    panels = [want.matched["half"], want.matched["interleaved"], want.mixed]
    for k, s in enumerate(panels):
        np.testing.assert_allclose(e.scores.values[k], s.scores.numpy(), atol=1e-6)
        assert e.scores.panel_titles[k] in s.name
    np.testing.assert_allclose(
        e.offsets.series[0]["values"], panels[0].offset_mean.numpy(), atol=1e-6
    )
    np.testing.assert_allclose(
        e.rotation.series[0]["values"], want.pair_xy[:, 0].numpy(), atol=1e-6
    )
    np.testing.assert_allclose(e.alibi.values, want.alibi_bias.numpy(), atol=1e-7)
    assert len(e.alibi_chart.series) == p.alibi_heads
    assert e.pairing.values.shape == (2, p.d_head, p.d_head // 2)
    assert "NOT a function of m − n" in e.readout.value or p.d_head == 2


def test_rope_explorer_constructible_and_follows_every_control():
    e = RopeExplorer()
    assert "ac-rope-explorer" in e._dom_classes
    assert e.result.params == RopeParams()
    _assert_rope_view_matches(e)
    e.pair.value = 7
    e.d_head.value = 4  # the pair follows the narrower width
    assert e.pair.max == 1 and e.pair.value == 1
    _assert_rope_view_matches(e)
    rng = random.Random(1)
    for _ in range(6):
        e.d_head.value = rng.randrange(2, 65, 2)
        e.seq_len.value = rng.randint(2, 64)
        e.base.value = 10 ** rng.uniform(1, 6)
        e.pair.value = rng.randint(0, e.pair.max)
        e.seed.value = rng.randint(0, 99)
        e.alibi_heads.value = rng.randint(1, 16)
        _assert_rope_view_matches(e)


def test_rope_export(tmp_path):
    e = RopeExplorer(d_head=4, seq_len=5)
    names = sorted(p.name for p in e.export(tmp_path))
    views = ("scores", "by_offset", "pairing", "rotation", "alibi", "alibi_weights")
    assert names == sorted(f"rope-explorer_{v}.{x}" for v in views for x in ("png", "svg", "csv"))


# --- windows and sinks on a (tiny) SmolLM2 -----------------------------------------------------


def test_masked_logits_with_the_causal_mask_equal_the_models_forward():
    model = _tiny_smollm2()
    ids = torch.randint(0, 48, (2, 9), generator=torch.Generator().manual_seed(0))
    causal = masked_logits(model, ids, causal_mask(9))  # given, not the model's default
    torch.testing.assert_close(causal, model(ids).logits, atol=1e-5, rtol=1e-5)
    wide = sliding_window_mask(9, 9)
    torch.testing.assert_close(
        masked_logits(model, ids, wide), model(ids).logits, atol=1e-5, rtol=1e-5
    )
    half = masked_logits(model, ids, rope_layout="half")
    assert not torch.allclose(half, model(ids).logits, atol=1e-3)


def test_a_window_of_one_token_is_the_model_on_each_token_alone():
    """With mask = each token sees only itself, position t's logits are those of the token
    read alone (RoPE turns q and k by the same angle, so the position cannot matter)."""
    model = _tiny_smollm2()
    ids = torch.randint(0, 48, (1, 7), generator=torch.Generator().manual_seed(3))
    alone = torch.cat([model(ids[:, t : t + 1]).logits for t in range(7)], dim=1)  # (1, 7, V)
    got = model(ids, mask=sliding_window_mask(7, 1))
    torch.testing.assert_close(got.logits, alone, atol=1e-5, rtol=1e-5)
    assert torch.equal(got.attentions[0][0, 0], torch.eye(7))  # every weight on itself
    assert not torch.allclose(got.logits, model(ids).logits, atol=1e-3)


def test_the_models_mask_and_rope_layout_are_checked():
    model = _tiny_smollm2()
    ids = torch.zeros(1, 5, dtype=torch.long)
    with pytest.raises(ValueError, match=r"does not broadcast to the scores' shape \(5, 5\)"):
        model(ids, mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="mask: expected torch.bool"):
        model(ids, mask=torch.ones(5, 5))
    with pytest.raises(ValueError, match="rope_layout: expected 'half' or 'interleaved'"):
        model(ids, rope_layout="halves")


def test_window_runs_and_token_losses():
    model = _tiny_smollm2(1)
    ids = torch.randint(0, 48, (1, 24), generator=torch.Generator().manual_seed(1))
    logits = model(ids).logits
    losses = token_losses(logits, ids)
    want = -torch.log_softmax(logits[0, :-1], -1)[torch.arange(23), ids[0, 1:]]
    torch.testing.assert_close(losses[0], want)
    runs = window_experiment(model, ids, [4, 30], sinks=2, start=8)
    assert [r.name for r in runs] == [
        "full",
        "window 4",
        "window 4 + 2 sinks",
        "window 30",
        "window 30 + 2 sinks",
    ]
    full = runs[0]
    assert full.perplexity == pytest.approx(math.exp(float(want[8:].mean())), rel=1e-5)
    assert runs[3].perplexity == pytest.approx(full.perplexity, rel=1e-5)  # window >= T: full
    assert runs[1].perplexity != pytest.approx(full.perplexity, rel=1e-3)
    # a window only changes tokens that have more than `window` tokens before them
    torch.testing.assert_close(runs[1].losses[:3], full.losses[:3], atol=1e-5, rtol=1e-5)
    one = window_run(model, ids, 4, 2)
    assert one.perplexity == pytest.approx(math.exp(float(one.losses.mean())))


def test_first_token_attention_per_layer():
    model = _tiny_smollm2()
    ids = torch.randint(0, 48, (1, 12), generator=torch.Generator().manual_seed(2))
    maps = model(ids).attentions
    share = first_token_attention(maps, skip=4)
    assert share.shape == (2,)
    assert float(share[1]) == pytest.approx(float(maps[1][0, :, 4:, 0].mean()))
