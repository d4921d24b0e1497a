"""Masks and the converters between conventions, checked against torch's own consumers."""

import pytest
import torch
import torch.nn.functional as F

import attention as A


def test_causal_mask_is_lower_triangular():
    m = A.causal_mask(4)
    assert m.dtype == torch.bool
    assert torch.equal(m, torch.ones(4, 4, dtype=torch.bool).tril())


def test_causal_mask_matches_torch_is_causal():
    q, k, v = torch.randn(2, 5, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 8)
    got = A.scaled_dot_product_attention(q, k, v, A.causal_mask(5)).output
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_causal_mask_with_offset_for_a_key_value_cache():
    # Two new queries at absolute positions 3 and 4 over five keys.
    m = A.causal_mask(2, 5, offset=3)
    assert m.tolist() == [[True, True, True, True, False], [True] * 5]
    assert torch.equal(m, A.causal_mask(5)[3:])


def test_padding_mask_marks_real_tokens():
    m = A.padding_mask(torch.tensor([2, 0, 3]), 3)
    assert m.shape == (3, 1, 3)
    assert m[:, 0].tolist() == [[True, True, False], [False] * 3, [True] * 3]


def test_key_padding_mask_round_trip_and_agreement_with_nn_multihead_attention():
    ours = A.padding_mask([3, 5], 5)  # (B, 1, Tk)
    kpm = A.to_key_padding_mask(ours)
    assert kpm.tolist() == [[False, False, False, True, True], [False] * 5]
    assert torch.equal(A.from_key_padding_mask(kpm), ours)
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(2, 5, 8)
    want, _ = mha(x, x, x, key_padding_mask=kpm)
    got = A.MultiHeadAttention.from_torch(mha)(x, mask=ours).output
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_additive_mask_round_trip_and_same_weights_as_float_mask_in_torch():
    mask = A.causal_mask(4)
    additive = A.to_additive_mask(mask)
    assert additive.dtype == torch.float32
    assert torch.equal(additive == 0, mask) and torch.isneginf(additive[~mask]).all()
    assert torch.equal(A.from_additive_mask(additive), mask)
    q = k = v = torch.randn(4, 8)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
    got = A.scaled_dot_product_attention(q, k, v, mask).output
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_valid_lens_round_trip_per_batch_and_per_query():
    m = A.valid_lens_to_mask([1, 3], tk=4)
    assert m.shape == (2, 1, 4) and m[1, 0].tolist() == [True, True, True, False]
    assert A.mask_to_valid_lens(m).tolist() == [1, 3]
    per_query = A.valid_lens_to_mask(torch.tensor([[1, 2], [4, 0]]), tk=4)
    assert per_query.shape == (2, 2, 4)
    assert A.mask_to_valid_lens(per_query).tolist() == [[1, 2], [4, 0]]


def test_mask_to_valid_lens_refuses_a_mask_that_is_not_a_prefix():
    not_prefix = torch.tensor([[[False, True, True]]])
    with pytest.raises(ValueError, match="not a prefix"):
        A.mask_to_valid_lens(not_prefix)


def test_from_additive_mask_refuses_a_bias():
    with pytest.raises(ValueError, match="expected only 0 and -inf"):
        A.from_additive_mask(torch.tensor([0.0, -1.0]))
