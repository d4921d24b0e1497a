"""MultiHeadAttention against torch.nn.MultiheadAttention with copied weights; split and merge;
the steps a pretrained model passes in (rope, attention_fn, head_hook) against references."""

import math
from functools import partial

import pytest
import torch
import torch.nn.functional as F

import attention as A


def _pair(d_model, n_heads, seed=0, **kw):
    torch.manual_seed(seed)
    theirs = torch.nn.MultiheadAttention(d_model, n_heads, batch_first=True, **kw).eval()
    return A.MultiHeadAttention.from_torch(theirs), theirs


@pytest.mark.parametrize("d_model,n_heads", [(8, 1), (8, 2), (16, 4), (24, 3), (32, 8)])
@pytest.mark.parametrize("use_mask", [False, True])
def test_self_attention_matches_nn_multihead_attention(d_model, n_heads, use_mask):
    ours, theirs = _pair(d_model, n_heads)
    x = torch.randn(3, 6, d_model)
    mask = A.causal_mask(6) if use_mask else None
    want, want_w = theirs(
        x, x, x, attn_mask=None if mask is None else ~mask, average_attn_weights=False
    )
    got = ours(x, mask=mask)
    torch.testing.assert_close(got.output, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.weights, want_w, atol=1e-5, rtol=1e-5)
    assert got.weights.shape == (3, n_heads, 6, 6)


@pytest.mark.parametrize("kdim,vdim", [(None, None), (5, 7)])
def test_cross_attention_with_other_lengths_and_widths(kdim, vdim):
    ours, theirs = _pair(16, 4, kdim=kdim, vdim=vdim)
    q = torch.randn(2, 3, 16)
    mem_k = torch.randn(2, 9, kdim or 16)
    mem_v = torch.randn(2, 9, vdim or 16)
    lengths = A.padding_mask([9, 4], 9)
    want, want_w = theirs(
        q,
        mem_k,
        mem_v,
        key_padding_mask=A.to_key_padding_mask(lengths),
        average_attn_weights=False,
    )
    got = ours(q, mem_k, mem_v, lengths)
    torch.testing.assert_close(got.output, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.weights, want_w, atol=1e-5, rtol=1e-5)
    assert (got.weights[1, :, :, 4:] == 0).all()


def test_intermediates_have_documented_shapes():
    mha = A.MultiHeadAttention(12, 3)
    r = mha(torch.randn(2, 5, 12), torch.randn(2, 7, 12), torch.randn(2, 7, 12))
    assert r.q.shape == (2, 3, 5, 4) and r.k.shape == (2, 3, 7, 4) and r.v.shape == (2, 3, 7, 4)
    assert r.scores.shape == r.weights.shape == (2, 3, 5, 7)
    assert r.heads.shape == (2, 3, 5, 4) and r.concat.shape == r.output.shape == (2, 5, 12)
    torch.testing.assert_close(r.concat, A.merge_heads(r.heads))


def test_split_then_merge_is_identity_and_heads_take_contiguous_slices():
    x = torch.arange(2 * 3 * 8, dtype=torch.float32).view(2, 3, 8)
    h = A.split_heads(x, 4)
    assert h.shape == (2, 4, 3, 2)
    torch.testing.assert_close(h[:, 1], x[:, :, 2:4])  # head 1 owns columns 2..3
    torch.testing.assert_close(A.merge_heads(h), x)


def test_past_kv_appends_to_the_cache():
    mha = A.MultiHeadAttention(8, 2).eval()
    x = torch.randn(1, 4, 8)
    full = mha(x, mask=A.causal_mask(4))
    first = mha(x[:, :3], mask=A.causal_mask(3))
    step = mha(x[:, 3:], past_kv=(first.k, first.v))
    torch.testing.assert_close(step.output, full.output[:, 3:], atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(step.weights, full.weights[:, :, 3:], atol=1e-6, rtol=1e-6)


def test_divisors_lists_the_allowed_head_counts():
    assert A.divisors(12) == [1, 2, 3, 4, 6, 12]


# ---- the steps a pretrained model changes: rope, attention_fn, head_hook ----


def _gqa_layer(seed=5):
    torch.manual_seed(seed)
    return A.MultiHeadAttention(16, 4, n_kv_heads=2).requires_grad_(False), torch.randn(2, 5, 16)


def test_rope_rotates_q_and_the_new_keys_and_keeps_both():
    mha, x = _gqa_layer()
    rope = partial(A.apply_rope, positions=torch.arange(5), layout="interleaved")
    r = mha(x, mask=A.causal_mask(5), rope=rope)
    q_raw = mha.q_proj(x).view(2, 5, 4, 4).transpose(1, 2)  # (B, H, T, D)
    k_raw = mha.k_proj(x).view(2, 5, 2, 4).transpose(1, 2)  # (B, Hkv, T, D)
    torch.testing.assert_close(r.q_raw, q_raw)
    torch.testing.assert_close(r.k_raw, k_raw)
    torch.testing.assert_close(r.q, rope(q_raw))
    torch.testing.assert_close(r.k, rope(k_raw))
    want = F.scaled_dot_product_attention(r.q, r.k, r.v, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(r.heads, want, atol=1e-6, rtol=1e-5)
    plain = mha(x)
    assert plain.q_raw is plain.q and plain.k_raw is plain.k  # without rope: the same tensors


def test_attention_fn_flash_and_a_plain_function_give_the_same_output():
    mha, x = _gqa_layer()
    mask = A.causal_mask(5)
    want = mha(x, mask=mask)

    def plain(q, k, v, mask):  # softmax(q k^T / sqrt(D)) v, kv heads shared by hand
        k, v = A.repeat_kv(k, 2), A.repeat_kv(v, 2)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~mask, -math.inf)
        return torch.softmax(scores, -1) @ v

    for fn in (plain, partial(A.flash_attention, block_size=2)):
        r = mha(x, mask=mask, attention_fn=fn)
        torch.testing.assert_close(r.output, want.output, atol=1e-6, rtol=1e-5)
        assert r.weights is None and r.scores is None and r.fully_masked is None
    with pytest.raises(ValueError, match=r"attention_fn: expected an output of shape \(B, H, Tq"):
        mha(x, attention_fn=lambda q, k, v, mask: v)


def test_head_hook_zeroing_a_head_is_zeroing_its_slice_of_out_proj():
    mha, x = _gqa_layer()

    def silence_head_1(heads):
        heads = heads.clone()
        heads[:, 1] = 0.0
        return heads

    r = mha(x, head_hook=silence_head_1)
    assert float(r.heads[:, 1].abs().max()) == 0.0
    with torch.no_grad():
        mha.out_proj.weight[:, 4:8] = 0.0  # head 1's columns
    torch.testing.assert_close(r.output, mha(x).output, atol=1e-6, rtol=1e-5)


def test_check_finite_false_skips_only_the_scan():
    mha, x = _gqa_layer()
    x[0, 2, 3] = float("nan")
    with pytest.raises(ValueError, match=r"query: expected finite values, got NaN or inf"):
        mha(x)
    assert bool(mha(x, check_finite=False).output[0].isnan().any())
    with pytest.raises(ValueError, match=r"query: expected a 3-D tensor"):
        mha(x[0], check_finite=False)  # every other check still runs
