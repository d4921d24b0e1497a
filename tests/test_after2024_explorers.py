"""Lesson 19's explorers: LatentExplorer (MLA's cache) and LinearAttentionExplorer (the state).

The pure functions against the core (attention.mla_cache_bytes, kv_cache_bytes, linear_attention
and its recurrent form, delta_rule, scaled_dot_product_attention) and hand formulas; the widgets'
panels against the pure functions after a control moves; bad settings refused with a message;
no NaN or infinity at any reachable setting.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

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
from attention.explore.linear_attention import (
    LINEAR_VARIANTS,
    LinearAttentionParams,
    explore_linear_attention,
)
from widgets.explorers.latent import GIB, LatentExplorer
from widgets.explorers.linear_attention import LinearAttentionExplorer

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


# --- explore_linear_attention ---------------------------------------------------------------


def _qkv(p: LinearAttentionParams):
    g = torch.Generator().manual_seed(p.seed)
    return torch.randn(3, p.seq_len, p.d_head, generator=g).unbind(0)


@pytest.mark.parametrize("step", [1, 4, 8])
def test_linear_state_and_rows_match_the_core(step: int) -> None:
    p = LinearAttentionParams(seq_len=8, d_head=4, step=step, seed=3)
    r = explore_linear_attention(p)
    q, k, v = _qkv(p)
    parallel = A.linear_attention(q, k, v)
    torch.testing.assert_close(r.parallel_output, parallel.output)
    torch.testing.assert_close(r.implicit_weights, parallel.weights)
    torch.testing.assert_close(r.recurrent_output, parallel.output[:step])  # the claim shown
    fk = F.elu(k[:step]) + 1
    torch.testing.assert_close(r.state, fk.T @ v[:step])  # S = sum phi(k_s) v_s^T, by hand
    torch.testing.assert_close(r.normalizer, fk.sum(0))
    soft = A.scaled_dot_product_attention(q, k, v, A.causal_mask(8)).weights
    torch.testing.assert_close(r.softmax_weights, soft)
    assert r.max_difference < 1e-5
    assert r.state_numbers == 4 * 4 + 4 and r.cache_numbers == 2 * step * 4


def test_delta_rule_state_and_implicit_weights_match_the_core() -> None:
    p = LinearAttentionParams(
        variant="delta rule", seq_len=10, d_head=4, step=6, gate=0.8, beta=0.6
    )
    r = explore_linear_attention(p)
    q, k, v = _qkv(p)
    k = F.normalize(k, dim=-1)
    beta, alpha = torch.full((10,), 0.6), torch.full((10,), 0.8)
    dense = A.delta_rule(q, k, v, beta, alpha)
    torch.testing.assert_close(r.parallel_output, dense.output)
    torch.testing.assert_close(r.implicit_weights @ v, dense.output)  # O = M V
    assert torch.all(r.implicit_weights.triu(1) == 0)  # causal
    # the state after 6 tokens, by the recurrence written out here
    s = torch.zeros(4, 4)
    for t in range(6):
        s = 0.8 * (torch.eye(4) - 0.6 * torch.outer(k[t], k[t])) @ s + 0.6 * torch.outer(k[t], v[t])
    torch.testing.assert_close(r.state, s)
    torch.testing.assert_close(r.recurrent_output, dense.output[:6])
    assert r.normalizer is None and r.state_numbers == 16


def test_linear_variants_differ() -> None:
    a = explore_linear_attention(LinearAttentionParams(variant="linear"))
    b = explore_linear_attention(LinearAttentionParams(variant="delta rule"))
    assert not torch.allclose(a.parallel_output, b.parallel_output)


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        ({"step": 9}, ValueError, r"step: expected an int in \[1, 8\], got 9"),
        ({"step": 0}, ValueError, r"step: expected an int in \[1, 8\], got 0"),
        ({"seq_len": 17}, ValueError, r"seq_len: expected an int in \[2, 16\], got 17"),
        ({"d_head": 1}, ValueError, r"d_head: expected an int in \[2, 8\], got 1"),
        ({"variant": "mamba"}, ValueError, r"variant: expected one of \('linear', 'delta rule'\)"),
        ({"gate": 0.2}, ValueError, r"gate: expected a float in \[0.5, 1\], got 0.2"),
        ({"beta": float("nan")}, ValueError, r"beta: expected a float in \[0, 1\], got nan"),
        ({"beta": "1"}, TypeError, "beta: expected a float, got str"),
        ({"seed": -1}, ValueError, r"seed: expected an int in \[0, 2147483647\], got -1"),
    ],
)
def test_linear_refuses_bad_settings(settings: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        LinearAttentionParams(**settings)
    with pytest.raises(error, match=match):
        LinearAttentionExplorer(**settings)


def test_linear_is_finite_at_every_reachable_setting() -> None:
    with one_thread():  # as the explorer runs it: 96 settings of tiny tensors
        _all_linear_settings_are_finite()


def _all_linear_settings_are_finite() -> None:
    for variant, t, d, gate, beta in itertools.product(
        LINEAR_VARIANTS, (2, 9, 16), (2, 8), (0.5, 1.0), (0.0, 1.0)
    ):
        for step in (1, t):
            p = LinearAttentionParams(
                seq_len=t, d_head=d, step=step, variant=variant, gate=gate, beta=beta
            )
            r = explore_linear_attention(p)
            for name in ("state", "parallel_output", "recurrent_output", "implicit_weights"):
                assert torch.isfinite(getattr(r, name)).all(), (p, name)


# --- LinearAttentionExplorer ----------------------------------------------------------------


def test_linear_explorer_steps_through_the_tokens() -> None:
    e = LinearAttentionExplorer(step=3)
    e.step.value = 5
    want = explore_linear_attention(LinearAttentionParams(step=5))
    np.testing.assert_allclose(e.state.matrix, want.state.numpy(), rtol=1e-6)
    read, parallel = e.outputs.values  # (T, D) each
    np.testing.assert_allclose(read[:5], want.recurrent_output.numpy(), rtol=1e-6)
    np.testing.assert_allclose(parallel, want.parallel_output.numpy(), rtol=1e-6)
    assert e.outputs.masked[0, 5:].all() and not e.outputs.masked[0, :5].any()
    assert e.outputs.highlight_row == 4 and "after 5 of 8 tokens" in e.state.title
    np.testing.assert_allclose(e.implicit.matrix, want.implicit_weights.numpy(), rtol=1e-6)
    assert "Token 5 of 8" in e.readout.value and "2 x 5 x 4 = 40" in e.readout.value


def test_linear_explorer_delta_rule_shows_its_sliders() -> None:
    e = LinearAttentionExplorer()
    assert e.gate.layout.display == "none" and e.beta.layout.display == "none"
    e.variant.value = "delta rule"
    assert e.gate.layout.display is None and e.beta.layout.display is None
    e.gate.value = 0.7
    want = explore_linear_attention(LinearAttentionParams(variant="delta rule", gate=0.7))
    np.testing.assert_allclose(e.implicit.matrix, want.implicit_weights.numpy(), rtol=1e-5)
    assert "α 0.70" in e.implicit.title and e.error.message == ""


def test_linear_explorer_step_follows_seq_len() -> None:
    e = LinearAttentionExplorer(seq_len=8, step=8)
    e.seq_len.value = 4
    assert e.step.max == 4 and e.step.value == 4 and e.error.message == ""
    assert e.state.matrix.shape == (4, 4) and np.isfinite(e.outputs.values).all()
