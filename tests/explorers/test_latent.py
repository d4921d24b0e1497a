"""LatentExplorer (lesson 19, MLA's cache): the pure function against the core
(attention.mla_cache_bytes, kv_cache_bytes) and hand formulas, then the widget's panels."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

import attention as A
from attention.explore import one_thread
from attention.explore.kv_cache import KV_CONTEXTS, KV_DTYPES
from attention.explore.latent import (
    LATENT_RANKS,
    MLA_PRESETS,
    ROPE_WIDTHS,
    TOY_RANK_MAX,
    TOY_TOKENS,
    LatentParams,
    explore_latent,
)
from widgets.explorers.latent import GIB, LatentExplorer

# --- explore_latent -------------------------------------------------------------------------


def test_latent_bytes_match_the_core_and_the_formula() -> None:
    p = LatentParams(config="DeepSeek-V3", kv_rank=256, d_rope=32, n_kv_heads=4, seq_len=4096)
    r = explore_latent(p)
    c = MLA_PRESETS["DeepSeek-V3"]
    mha, gqa, mqa, mla = r.kinds
    assert mla.bytes == A.mla_cache_bytes(
        n_layers=61, kv_rank=256, d_rope=32, seq_len=4096, bytes_per_value=2
    )
    per_head = (128 + 32) + 128  # a key of Dn + Dr and a value of Dv
    assert mha.bytes == 61 * 128 * per_head * 4096 * 2
    assert gqa.bytes == 61 * 4 * per_head * 4096 * 2
    assert mqa.bytes == 61 * 1 * per_head * 4096 * 2
    assert mla.numbers_per_token == 256 + 32 and mha.numbers_per_token == c.n_heads * per_head
    assert r.mha_over_mla == pytest.approx(128 * per_head / (256 + 32))
    assert r.published_mla_bytes == 61 * (512 + 64) * 4096 * 2  # the config's own R and Dr
    for k in r.kinds:  # the curves pass through the bars, and grow with the context
        assert k.by_context[KV_CONTEXTS.index(4096)] == k.bytes
        assert list(k.by_context) == sorted(k.by_context)


def test_latent_published_ratio_is_lesson_19s() -> None:
    # lesson 19 prints DeepSeek-V3's MLA cache against the same heads in MHA: 61 x 128 x 320
    r = explore_latent(LatentParams(seq_len=1024))
    assert r.mha_over_mla == pytest.approx(128 * (192 + 128) / 576)


@pytest.mark.parametrize("toy_rank", [1, 5, 16, 40, TOY_RANK_MAX])
def test_rebuilt_keys_have_rank_r(toy_rank: int) -> None:
    r = explore_latent(LatentParams(toy_rank=toy_rank))
    assert r.key_rank == min(toy_rank, TOY_TOKENS)
    assert r.mha_key_rank == TOY_RANK_MAX  # full-rank projections: every feature
    s = r.singular_values
    assert torch.all(s[toy_rank:] <= 1e-4 * s[0])  # the rest is rounding


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"config": "GPT-4"}, r"config: expected one of \['DeepSeek-V3'"),
        ({"kv_rank": 500}, r"kv_rank: expected one of \[16, 32"),
        ({"kv_rank": 0}, r"kv_rank: expected an int in \[1, 2048\], got 0"),
        ({"d_rope": 48}, r"d_rope: expected one of \[16, 32, 64, 128\], got 48"),
        ({"n_kv_heads": 3}, r"n_kv_heads=3 does not divide DeepSeek-V3's 128 heads"),
        ({"seq_len": 1000}, r"seq_len: expected one of \[64, 128"),
        ({"dtype": "fp8"}, r"dtype: expected one of \['float32'"),
        ({"toy_rank": 65}, r"toy_rank: expected an int in \[1, 64\], got 65"),
    ],
)
def test_latent_refuses_bad_settings(settings: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LatentParams(**settings)
    with pytest.raises(ValueError, match=match):
        LatentExplorer(**settings)


def test_latent_refuses_wrong_types() -> None:
    with pytest.raises(TypeError, match="toy_rank: expected an int, got float"):
        LatentParams(toy_rank=4.0)


def test_latent_is_finite_at_every_reachable_setting() -> None:
    with one_thread():  # as the explorer runs it: 64 small SVDs
        _all_latent_settings_are_finite()


def _all_latent_settings_are_finite() -> None:
    for config, kv_rank, d_rope, dtype in itertools.product(
        MLA_PRESETS, LATENT_RANKS, ROPE_WIDTHS, KV_DTYPES
    ):
        r = explore_latent(LatentParams(config=config, kv_rank=kv_rank, d_rope=d_rope, dtype=dtype))
        values = [v for k in r.kinds for v in (k.bytes, *k.by_context)]
        assert all(math.isfinite(v) and v > 0 for v in values), (config, kv_rank, d_rope)
    for toy_rank in range(1, TOY_RANK_MAX + 1):
        r = explore_latent(LatentParams(toy_rank=toy_rank))
        assert (
            torch.isfinite(r.singular_values).all() and torch.isfinite(r.mha_singular_values).all()
        )


# --- LatentExplorer -------------------------------------------------------------------------


def _bar_heights(explorer: LatentExplorer) -> list[float]:
    """The one finite value per x of the bars chart (each kind is its own series)."""
    heights = []
    for i in range(len(explorer.bars.x)):
        (v,) = [s["values"][i] for s in explorer.bars.series if s["values"][i] is not None]
        heights.append(v)
    return heights


def test_latent_explorer_redraws_after_a_slider_moves() -> None:
    e = LatentExplorer()
    e.kv_rank.value = 128
    e.seq_len.value = 4096
    want = explore_latent(LatentParams(kv_rank=128, seq_len=4096))
    assert e.result == want or e.params == want.params
    assert _bar_heights(e) == pytest.approx([k.bytes / GIB for k in want.kinds])
    assert e.bars.x_tick_labels[-1] == "MLA (128 + 64)"
    mla_curve = next(s for s in e.curves.series if s["name"].startswith("MLA"))
    assert mla_curve["values"] == pytest.approx([b / GIB for b in want.kinds[-1].by_context])
    assert "R 128 + Dr 64" in e.readout.value and "4096 tokens" in e.readout.value
    e.toy_rank.value = 7
    mla_sv = next(s for s in e.rank.series if s["name"].startswith("MLA"))
    assert "rank 7" in mla_sv["name"]
    expected = explore_latent(LatentParams(kv_rank=128, seq_len=4096, toy_rank=7))
    assert mla_sv["values"][:7] == pytest.approx(expected.singular_values[:7].tolist())


def test_latent_explorer_offers_only_divisors_of_the_configs_heads() -> None:
    e = LatentExplorer()
    e.config.value = "DeepSeek-V2-Lite"  # 16 heads
    assert list(e.n_kv_heads.options) == [1, 2, 4, 8, 16]
    assert e.error.message == "" and e.result.kinds[0].name == "MHA (16)"
    e.n_kv_heads.value = 16
    assert e.result.kinds[1].bytes == e.result.kinds[0].bytes  # GQA with every head is MHA
