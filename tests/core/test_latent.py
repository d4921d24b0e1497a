"""Multi-head latent attention: rebuilt keys and values against a reference, absorbed = explicit,
a decoder's latent cache = the full causal pass, and the cache's bytes."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import attention as A

SIZES = dict(d_model=32, n_heads=4, kv_rank=8, d_nope=6, d_rope=4, d_v=5)


def _layer(seed: int = 0, **sizes) -> A.MultiHeadLatentAttention:
    torch.manual_seed(seed)
    return A.MultiHeadLatentAttention(**{**SIZES, **sizes}).double()


def _x(b: int = 2, t: int = 7, seed: int = 1) -> torch.Tensor:
    return torch.randn(
        b, t, SIZES["d_model"], generator=torch.Generator().manual_seed(seed)
    ).double()


def _reference(layer: A.MultiHeadLatentAttention, x: torch.Tensor) -> torch.Tensor:
    """MLA written out head by head from the weight matrices, scored by torch's own SDPA."""
    b, t, _ = x.shape
    dn, dr, dv, h = layer.d_nope, layer.d_rope, layer.d_v, layer.n_heads
    pos = torch.arange(t)
    c = x @ layer.kv_down.weight.T  # (B, T, R)
    k_rope = A.apply_rope(x @ layer.k_rope_proj.weight.T, pos)  # (B, T, Dr)
    q_all = (x @ layer.q_proj.weight.T).view(b, t, h, dn + dr)
    heads = []
    for i in range(h):
        w_uk = layer.k_up.weight[i * dn : (i + 1) * dn]  # (Dn, R)
        w_uv = layer.v_up.weight[i * dv : (i + 1) * dv]  # (Dv, R)
        q = torch.cat([q_all[:, :, i, :dn], A.apply_rope(q_all[:, :, i, dn:], pos)], -1)
        k = torch.cat([c @ w_uk.T, k_rope], -1)  # (B, T, Dn + Dr)
        heads.append(F.scaled_dot_product_attention(q, k, c @ w_uv.T, is_causal=True))
    return torch.cat(heads, -1) @ layer.out_proj.weight.T  # (B, T, M)


def test_explicit_form_equals_a_head_by_head_reference():
    layer, x = _layer(), _x()
    got = layer(x, A.causal_mask(7))
    torch.testing.assert_close(got.output, _reference(layer, x))
    assert got.k.shape == (2, 4, 7, 6 + 4) and got.v.shape == (2, 4, 7, 5)
    # the rotated part of the keys is one tensor shared by every head
    for h in range(1, 4):
        assert torch.equal(got.k[:, h, :, 6:], got.k[:, 0, :, 6:])


@pytest.mark.parametrize("sizes", [{}, dict(n_heads=1), dict(kv_rank=40, d_v=9)])
def test_absorbed_form_equals_explicit(sizes):
    layer, x = _layer(**sizes), _x()
    mask = A.causal_mask(7)
    explicit, absorbed = layer(x, mask), layer(x, mask, absorbed=True)
    torch.testing.assert_close(absorbed.output, explicit.output)
    torch.testing.assert_close(absorbed.weights, explicit.weights)
    assert absorbed.k is None and absorbed.v is None  # never built per head


def test_absorbed_gradients_equal_explicit():
    x = _x()
    grads = []
    for absorbed in (False, True):
        layer = _layer()
        layer(x, A.causal_mask(7), absorbed=absorbed).output.square().sum().backward()
        grads.append([p.grad for p in layer.parameters()])
    for g_explicit, g_absorbed in zip(*grads, strict=True):
        torch.testing.assert_close(g_absorbed, g_explicit)


@pytest.mark.parametrize("absorbed", [False, True])
def test_decoding_with_the_latent_cache_equals_the_full_pass(absorbed):
    layer, x = _layer(), _x(t=9)
    full = layer(x, A.causal_mask(9)).output
    out = layer(x[:, :4], A.causal_mask(4), absorbed=absorbed)
    rows, cache = [out.output], out.cache
    for t in range(4, 9):  # one token at a time; the new token needs no mask
        step = layer(x[:, t : t + 1], past=cache, absorbed=absorbed)
        rows.append(step.output)
        cache = step.cache
    torch.testing.assert_close(torch.cat(rows, 1), full)
    assert cache[0].shape == (2, 9, 8) and cache[1].shape == (2, 9, 4)


def test_cache_holds_kv_rank_plus_d_rope_numbers_per_token():
    layer, x = _layer(), _x(t=11)
    cache = layer(x).cache
    assert layer.cache_numbers_per_token() == 8 + 4
    want = A.mla_cache_bytes(
        n_layers=1, kv_rank=8, d_rope=4, seq_len=11, batch=2, dtype=torch.float64
    )
    assert A.cache_bytes(cache) == want == 1 * (8 + 4) * 11 * 2 * 8


def test_scores_depend_on_relative_position_only():
    # The content part has no position and the rope part turns with the offset: moving the whole
    # sequence later (a longer, all-masked-out past) leaves the scores of the new tokens alone.
    layer, x = _layer(), _x(b=1, t=5)
    plain = layer(x, A.causal_mask(5))
    zeros = (torch.zeros(1, 3, 8).double(), torch.zeros(1, 3, 4).double())
    moved = layer(x, A.causal_mask(5, 8, offset=3) & (torch.arange(8) >= 3), past=zeros)
    with_past = moved.scores[..., 3:]
    rotated = A.apply_rope(layer.k_rope_proj(x), torch.arange(3, 8))
    assert not torch.allclose(rotated, plain.k_rope)  # the keys themselves did turn
    torch.testing.assert_close(with_past, plain.scores)


def test_mla_cache_bytes_by_hand_and_against_mha():
    # DeepSeek-V3's published attention sizes: 61 layers, 128 heads, kv_lora_rank 512, rope 64
    mla = A.mla_cache_bytes(n_layers=61, kv_rank=512, d_rope=64, seq_len=1, bytes_per_value=2)
    assert mla == 61 * 576 * 2
    mha = A.kv_cache_bytes(n_layers=61, n_kv_heads=128, d_head=128, seq_len=1, bytes_per_value=2)
    assert mha / mla == pytest.approx(2 * 128 * 128 / 576)
    assert math.isclose(
        A.mla_cache_bytes(n_layers=1, kv_rank=3, d_rope=1, seq_len=1, bytes_per_value=0.5), 2
    )


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: A.MultiHeadLatentAttention(32, 4, 8, 6, 3),
            ValueError,
            "d_rope must be even, got 3",
        ),
        (
            lambda: A.MultiHeadLatentAttention(32, 0, 8, 6, 4),
            ValueError,
            "n_heads: expected a positive",
        ),
        (
            lambda: _layer()(torch.randn(2, 3, 31).double()),
            ValueError,
            "expected width d_model=32, got",
        ),
        (
            lambda: _layer()(_x(), past=torch.zeros(2, 3, 8)),
            TypeError,
            "expected \\(latent, k_rope\\)",
        ),
        (
            lambda: _layer()(
                _x(), past=(torch.zeros(2, 3, 7).double(), torch.zeros(2, 3, 4).double())
            ),
            ValueError,
            r"cached latent must be \(B, Tpast, 8\) = \(2, 3, 8\), got \(2, 3, 7\)",
        ),
        (
            lambda: A.mla_cache_bytes(n_layers=1, kv_rank=0, d_rope=4, seq_len=1),
            ValueError,
            "kv_rank",
        ),
    ],
)
def test_bad_input_is_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()
