"""Top-k sparse attention: exact when k >= Tk, each row keeps its k largest scores, the dropped
weight is what dense attention gave the other keys."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import attention as A


def _qkv(b=2, h=3, hkv=3, tq=7, tk=7, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, tq, d, generator=g, dtype=torch.float64)
    k, v = (torch.randn(b, hkv, tk, d, generator=g, dtype=torch.float64) for _ in range(2))
    return q, k, v


@pytest.mark.parametrize("top_k", [7, 8, 100])
@pytest.mark.parametrize("causal", [False, True])
def test_k_at_least_tk_is_dense_attention(top_k, causal):
    q, k, v = _qkv()
    mask = A.causal_mask(7) if causal else None
    got = A.topk_attention(q, k, v, top_k, mask)
    torch.testing.assert_close(
        got.output, F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    )
    torch.testing.assert_close(got.dropped_mass, torch.zeros(2, 3, 7, dtype=torch.float64))


@pytest.mark.parametrize("top_k", [1, 2, 5])
def test_each_row_keeps_its_k_largest_scores(top_k):
    q, k, v = _qkv(tk=11)
    got = A.topk_attention(q, k, v, top_k)
    assert bool((got.kept.sum(-1) == top_k).all())
    # every kept score is >= every dropped score of the same row
    lowest_kept = got.scores.masked_fill(~got.kept, float("inf")).amin(-1)
    highest_dropped = got.scores.masked_fill(got.kept, float("-inf")).amax(-1)
    assert bool((lowest_kept >= highest_dropped).all())
    # the reference: dense attention with every other key masked out
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=got.kept)
    torch.testing.assert_close(got.output, want)
    dense = torch.softmax(got.scores, -1)
    torch.testing.assert_close(got.dropped_mass, (dense * ~got.kept).sum(-1))
    assert bool((got.weights.masked_select(~got.kept) == 0).all())


def test_top_1_copies_the_best_value():
    q, k, v = _qkv(tk=9)
    got = A.topk_attention(q, k, v, 1)
    best = got.scores.argmax(-1)  # (B, H, Tq)
    torch.testing.assert_close(got.output, torch.take_along_dim(v, best[..., None], dim=-2))


def test_mask_and_grouped_heads():
    q, k, v = _qkv(h=6, hkv=2)
    mask = A.causal_mask(7)
    got = A.topk_attention(q, k, v, 3, mask)
    assert not bool((got.kept & ~mask).any())  # never a masked key
    assert got.kept.sum(-1)[0, 0].tolist() == [1, 2, 3, 3, 3, 3, 3]  # early rows have fewer keys
    want = A.scaled_dot_product_attention(q, A.repeat_kv(k, 3), A.repeat_kv(v, 3), got.kept)
    torch.testing.assert_close(got.output, want.output)


def test_gradients_flow_through_the_kept_keys_only():
    q, k, v = (x.requires_grad_() for x in _qkv(tk=9))
    got = A.topk_attention(q, k, v, 2)
    got.output.sum().backward()
    never_kept = ~got.kept.any(-2)  # (B, H, Tk) keys no query kept
    assert bool(never_kept.any())
    assert bool((v.grad.abs().sum(-1)[never_kept] == 0).all())
    assert q.grad.abs().sum() > 0


@pytest.mark.parametrize(
    ("top_k", "error", "message"),
    [
        (0, ValueError, "top_k: expected a positive int, got 0"),
        (2.0, TypeError, "top_k: expected an int"),
    ],
)
def test_bad_k_is_refused_by_name(top_k, error, message):
    with pytest.raises(error, match=message):
        A.topk_attention(*_qkv(), top_k)
