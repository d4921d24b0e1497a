"""KVCacheExplorer (lesson 14): the pure function (attention.explore.kv_cache) against the
core's byte formula, decoding measured with and without the cache, then the widget."""

import pytest

from attention.experiments.decoding import DecodingSpeed
from attention.explore.kv_cache import (
    KV_CONTEXTS,
    KV_DTYPES,
    KV_PRESETS,
    KVCacheParams,
    attention_kind,
    explore_kv_cache,
    human_bytes,
)
from attention.memory import kv_cache_bytes
from widgets.explorers.kv_cache import CUSTOM, GIB, KVCacheExplorer

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
