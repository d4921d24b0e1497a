"""Grouped-query and multi-query attention: fewer key/value heads than query heads."""

from functools import partial

import pytest
import torch
import torch.nn.functional as F

import attention as A


def _qkv(b, h, hkv, tq, tk, d, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, tq, d, generator=g)
    k = torch.randn(b, hkv, tk, d, generator=g)
    v = torch.randn(b, hkv, tk, d, generator=g)
    return q, k, v, g


# ---- repeat_kv ----


@pytest.mark.parametrize("n_rep", [1, 2, 3])
def test_repeat_kv_equals_repeat_interleave(n_rep):
    x = torch.randn(2, 3, 5, 4)
    got = A.repeat_kv(x, n_rep)
    assert got.shape == (2, 3 * n_rep, 5, 4)
    assert torch.equal(got, x.repeat_interleave(n_rep, dim=1))
    for h in range(3 * n_rep):  # query head h reads kv head h // n_rep
        assert torch.equal(got[:, h], x[:, h // n_rep])


# ---- the attention function ----

HEADS = [(4, 4), (4, 2), (6, 3), (6, 2), (8, 1), (3, 1)]  # (H, Hkv); Hkv = 1 is MQA


@pytest.mark.parametrize("h,hkv", HEADS)
@pytest.mark.parametrize("masked", [False, True])
def test_gqa_equals_torch_enable_gqa(h, hkv, masked):
    q, k, v, g = _qkv(2, h, hkv, 5, 7, 8, seed=h * 10 + hkv)
    mask = torch.rand(2, 1, 5, 7, generator=g) > 0.3 if masked else None
    got = A.scaled_dot_product_attention(q, k, v, mask)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    torch.testing.assert_close(got.output, want, atol=1e-5, rtol=1e-5)
    assert got.weights.shape == got.scores.shape == (2, h, 5, 7)
    assert got.fully_masked.shape == (2, h, 5)


@pytest.mark.parametrize("h,hkv", HEADS)
def test_gqa_equals_attention_over_repeated_heads(h, hkv):
    q, k, v, _ = _qkv(1, h, hkv, 6, 6, 4, seed=h + hkv)
    mask = A.causal_mask(6)
    got = A.scaled_dot_product_attention(q, k, v, mask)
    n_rep = h // hkv
    rep = A.scaled_dot_product_attention(
        q, k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1), mask
    )
    for name in ("scores", "weights", "output"):
        assert torch.equal(getattr(got, name), getattr(rep, name)), name


def test_mqa_heads_share_keys_but_not_queries():
    q, k, v, _ = _qkv(1, 4, 1, 3, 5, 8)
    got = A.scaled_dot_product_attention(q, k, v)
    for h in range(4):  # each query head attends over the one kv head on its own
        alone = A.scaled_dot_product_attention(q[:, h], k[:, 0], v[:, 0])
        torch.testing.assert_close(got.weights[:, h], alone.weights)


# ---- MultiHeadAttention(n_kv_heads=...) ----


@pytest.mark.parametrize("n_heads,n_kv_heads", [(4, 4), (4, 2), (4, 1), (6, 3)])
def test_module_shapes_and_the_cache_shrinks(n_heads, n_kv_heads):
    torch.manual_seed(0)
    mha = A.MultiHeadAttention(24, n_heads, n_kv_heads=n_kv_heads)
    d = 24 // n_heads
    assert mha.k_proj.out_features == mha.v_proj.out_features == n_kv_heads * d
    x = torch.randn(2, 5, 24)
    r = mha(x, mask=A.causal_mask(5))
    assert r.q.shape == (2, n_heads, 5, d)
    assert r.k.shape == r.v.shape == (2, n_kv_heads, 5, d)
    assert r.weights.shape == (2, n_heads, 5, 5) and r.output.shape == (2, 5, 24)
    assert A.cache_bytes((r.k, r.v)) * n_heads // n_kv_heads == 2 * 2 * 24 * 5 * 4


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
def test_module_equals_torch_gqa_by_hand(n_kv_heads):
    torch.manual_seed(1)
    mha = A.MultiHeadAttention(16, 4, n_kv_heads=n_kv_heads)
    x = torch.randn(3, 6, 16)
    q = mha.q_proj(x).view(3, 6, 4, 4).transpose(1, 2)  # (B, H, T, D)
    k = mha.k_proj(x).view(3, 6, n_kv_heads, 4).transpose(1, 2)  # (B, Hkv, T, D)
    v = mha.v_proj(x).view(3, 6, n_kv_heads, 4).transpose(1, 2)
    heads = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    want = mha.out_proj(heads.transpose(1, 2).reshape(3, 6, 16))  # (B, T, M)
    got = mha(x, mask=A.causal_mask(6))
    torch.testing.assert_close(got.output, want, atol=1e-5, rtol=1e-5)


def test_module_equals_a_full_module_with_repeated_kv_weights():
    torch.manual_seed(2)
    gqa = A.MultiHeadAttention(12, 6, n_kv_heads=2)
    full = A.MultiHeadAttention(12, 6)
    with torch.no_grad():
        full.q_proj.load_state_dict(gqa.q_proj.state_dict())
        full.out_proj.load_state_dict(gqa.out_proj.state_dict())
        for src, dst in ((gqa.k_proj, full.k_proj), (gqa.v_proj, full.v_proj)):
            w = src.weight.view(2, 2, 12).repeat_interleave(3, dim=0)  # (H, D, M) per head rows
            dst.weight.copy_(w.reshape(12, 12))
            dst.bias.copy_(src.bias.view(2, 2).repeat_interleave(3, dim=0).reshape(12))
    x = torch.randn(2, 7, 12)
    torch.testing.assert_close(gqa(x).output, full(x).output, atol=1e-6, rtol=1e-6)


def test_cached_decoding_with_gqa_equals_one_causal_pass():
    torch.manual_seed(3)
    mha = A.MultiHeadAttention(16, 4, n_kv_heads=2)
    x = torch.randn(2, 6, 16)
    full = mha(x, mask=A.causal_mask(6))
    past, outs = None, []
    for t in range(6):
        step = mha(x[:, t : t + 1], past_kv=past)  # the newest query sees every cached key
        past = (step.k, step.v)
        outs.append(step.output)
    assert past[0].shape == (2, 2, 6, 4)  # (B, Hkv, T, D)
    torch.testing.assert_close(torch.cat(outs, dim=1), full.output, atol=1e-5, rtol=1e-5)


def test_from_torch_still_works_with_equal_heads():
    torch.manual_seed(4)
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    mha = A.MultiHeadAttention.from_torch(ref)
    assert mha.n_kv_heads == 2
    x = torch.randn(1, 3, 8)
    torch.testing.assert_close(mha(x).output, ref(x, x, x)[0], atol=1e-5, rtol=1e-5)


# ---- errors ----


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: A.scaled_dot_product_attention(*_qkv(1, 9, 4, 3, 3, 4)[:3]), ValueError,
         r"key: 4 heads do not divide query's 9 heads; grouped-query attention needs H "
         r"divisible by Hkv, choose Hkv from \[1, 3, 9\]"),
        (lambda: A.scaled_dot_product_attention(*_qkv(1, 2, 4, 3, 3, 4)[:3]), ValueError,
         r"key: 4 heads do not divide query's 2 heads"),
        (lambda: A.scaled_dot_product_attention(torch.randn(1, 4, 3, 4), torch.randn(1, 2, 3, 4),
                                                torch.randn(1, 1, 3, 4)),
         ValueError, r"value: leading dims \(1, 1\) must equal key's \(1, 2\)"),
        (lambda: A.scaled_dot_product_attention(torch.randn(2, 4, 3, 4), torch.randn(1, 2, 3, 4),
                                                torch.randn(1, 2, 3, 4)),
         ValueError, r"key: leading dims \(1, 2\) must equal query's \(2, 4\)"),
        (lambda: A.repeat_kv(torch.randn(2, 3, 4), 2), ValueError,
         r"x: expected a 4-D tensor, got shape \(2, 3, 4\)"),
        (lambda: A.repeat_kv(torch.randn(1, 2, 3, 4), 0), ValueError,
         r"n_rep: expected a positive int, got 0"),
        (lambda: A.MultiHeadAttention(16, 4, n_kv_heads=3), ValueError,
         r"n_kv_heads=3 does not divide n_heads=4; choose n_kv_heads from \[1, 2, 4\]"),
        (lambda: A.MultiHeadAttention(16, 4, n_kv_heads=0), ValueError,
         r"n_kv_heads: expected a positive int, got 0"),
        (lambda: A.MultiHeadAttention(16, 4, n_kv_heads=2).load_torch_weights(
            torch.nn.MultiheadAttention(16, 4)),
         ValueError, r"mha: nn.MultiheadAttention has no grouped key/value heads; loading needs "
         r"n_kv_heads == n_heads, got n_kv_heads=2, n_heads=4"),
        (lambda: A.MultiHeadAttention(8, 2, n_kv_heads=1)(torch.randn(1, 2, 8),
                                                          past_kv=(torch.randn(1, 2, 3, 4),) * 2),
         ValueError, r"past_kv: cached k must be \(B, Hkv, Tpast, D\) = \(1, 1, Tpast, 4\), "
         r"got \(1, 2, 3, 4\)"),
    ],
)  # fmt: skip
def test_error_messages(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_cached_decoding_with_rope_equals_one_causal_pass():
    """A LLaMA-style layer: the cache holds rotated keys, each step rotates by its position."""
    torch.manual_seed(6)
    mha = A.MultiHeadAttention(16, 4, n_kv_heads=2, bias=False)
    x = torch.randn(1, 6, 16)
    full = mha(x, mask=A.causal_mask(6), rope=partial(A.apply_rope, positions=torch.arange(6)))
    past, outs = None, []
    for t in range(6):
        rope = partial(A.apply_rope, positions=torch.tensor([t]))
        step = mha(x[:, t : t + 1], past_kv=past, rope=rope)
        past = (step.k, step.v)
        outs.append(step.output)
    torch.testing.assert_close(past[0], full.k, atol=1e-6, rtol=1e-6)  # rotated keys cached
    torch.testing.assert_close(torch.cat(outs, dim=1), full.output, atol=1e-5, rtol=1e-5)
