"""attention.pooling: learned queries, memory slots and the tanh layer, against hand computations
and as properties (order does not matter, padding changes nothing)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import attention as A
from attention.pooling import AttentionPool, MemorySlots, TanhAttention


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_attention_pool_matches_the_formula():
    pool = AttentionPool(8, n_queries=2)
    x = torch.randn(3, 5, 8)
    r = pool(x)
    scores = pool.query @ x.transpose(1, 2) / math.sqrt(8)  # (B, 2, 5)
    torch.testing.assert_close(r.scores, scores)
    torch.testing.assert_close(r.weights, torch.softmax(scores, -1))
    torch.testing.assert_close(r.output, torch.softmax(scores, -1) @ x)
    assert r.output.shape == (3, 2, 8)


def test_any_length_pools_to_the_same_size():
    pool = AttentionPool(6, n_queries=3)
    for t in (1, 4, 17):
        assert pool(torch.randn(2, t, 6)).output.shape == (2, 3, 6)


def test_the_pooled_vector_ignores_the_order_of_the_tokens():
    pool = AttentionPool(8)
    x = torch.randn(2, 7, 8)
    perm = torch.randperm(7)
    torch.testing.assert_close(pool(x[:, perm]).output, pool(x).output)


@pytest.mark.parametrize("as_3d", [False, True])
def test_padding_changes_nothing(as_3d):
    pool = AttentionPool(8)
    short = torch.randn(2, 4, 8)
    padded = torch.cat([short, 100 * torch.randn(2, 6, 8)], dim=1)  # junk after 4 tokens
    mask = A.padding_mask([4, 4], 10)  # (B, 1, 10)
    r = pool(padded, mask if as_3d else mask[:, 0])
    torch.testing.assert_close(r.output, pool(short).output)
    assert (r.weights[..., 4:] == 0).all()
    torch.testing.assert_close(r.weights.sum(-1), torch.ones(2, 1))


def test_padding_and_order_together():
    pool = AttentionPool(4)
    x = torch.randn(1, 6, 4)
    mask = torch.tensor([[True, False, True, True, False, True]])
    perm = torch.tensor([5, 2, 0, 4, 3, 1])
    torch.testing.assert_close(pool(x[:, perm], mask[:, perm]).output, pool(x, mask).output)


def test_memory_slots_match_the_formula():
    slots = MemorySlots(8, n_slots=5, d_k=4, d_v=3)
    x = torch.randn(2, 6, 8)
    r = slots(x)
    scores = slots.q_proj(x) @ slots.slot_keys.T / math.sqrt(4)  # (B, T, S)
    torch.testing.assert_close(r.weights, torch.softmax(scores, -1))
    torch.testing.assert_close(r.output, torch.softmax(scores, -1) @ slots.slot_values)
    assert r.output.shape == (2, 6, 3) and r.weights.shape == (2, 6, 5)


def test_memory_slots_keep_the_length_and_follow_the_order():
    slots = MemorySlots(8, n_slots=4)
    x = torch.randn(1, 9, 8)
    perm = torch.randperm(9)
    torch.testing.assert_close(slots(x[:, perm]).output, slots(x).output[:, perm])
    # every output row is a convex mixture of the slot values
    torch.testing.assert_close(slots(x).weights.sum(-1), torch.ones(1, 9))


def _paper_layer(layer: TanhAttention, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The paper's forward pass written with bmm, as its published code does."""
    q, k, v = (torch.tanh(w(x)) for w in (layer.w_q, layer.w_k, layer.w_v))
    z = torch.bmm(F.softmax(torch.bmm(q, k.permute(0, 2, 1)), dim=2), v)
    return z, z.sum(dim=1)


def test_tanh_attention_matches_the_papers_computation():
    layer = TanhAttention(6, 4)
    x = torch.randn(3, 5, 6)
    r = layer(x)
    z, g = _paper_layer(layer, x)
    torch.testing.assert_close(r.output, z)
    torch.testing.assert_close(r.global_feature, g)
    assert r.global_feature.shape == (3, 4)


def test_tanh_attention_scores_are_bounded_by_the_width():
    layer = TanhAttention(6, 4)
    r = layer(1000 * torch.randn(2, 7, 6))  # huge inputs: tanh saturates, scores stay bounded
    for t in (r.q, r.k, r.v):
        assert t.abs().max() <= 1
    assert r.scores.abs().max() <= 4


def test_tanh_attention_scaled_divides_by_sqrt_d_att():
    plain, scaled = TanhAttention(6, 16), TanhAttention(6, 16, scaled=True)
    scaled.load_state_dict(plain.state_dict())
    x = torch.randn(2, 5, 6)
    torch.testing.assert_close(scaled(x).scores, plain(x).scores / 4)


def test_the_global_feature_ignores_order_and_padding():
    layer = TanhAttention(6, 4)
    x = torch.randn(1, 5, 6)
    g = layer(x).global_feature
    torch.testing.assert_close(layer(x[:, torch.tensor([3, 0, 4, 1, 2])]).global_feature, g)
    padded = torch.cat([x, torch.randn(1, 3, 6)], dim=1)  # (1, 8, 6)
    mask = A.padding_mask([5], 8)  # (1, 1, 8)
    r = layer(padded, mask)
    torch.testing.assert_close(r.global_feature, g)
    torch.testing.assert_close(r.output[:, :5], layer(x).output)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: AttentionPool(0), ValueError, r"d_model: expected a positive int, got 0"),
        (lambda: AttentionPool(4, n_queries=2.0), TypeError, r"n_queries: expected an int"),
        (lambda: MemorySlots(4, 0), ValueError, r"n_slots: expected a positive int, got 0"),
        (lambda: TanhAttention(4, -1), ValueError, r"d_att: expected a positive int, got -1"),
        (
            lambda: AttentionPool(4)(torch.randn(2, 3, 5)),
            ValueError,
            r"x: expected width M=4, got shape \(2, 3, 5\)",
        ),
        (
            lambda: MemorySlots(4, 2)(torch.randn(2, 3, 5)),
            ValueError,
            r"x: expected width M=4, got shape \(2, 3, 5\)",
        ),
        (
            lambda: TanhAttention(4, 2)(torch.randn(3, 4)),
            ValueError,
            r"x: expected a 3-D tensor, got shape \(3, 4\)",
        ),
        (
            lambda: AttentionPool(4)(torch.randn(2, 3, 4), torch.ones(2, 3)),
            TypeError,
            r"mask: expected torch.bool \(True = may attend\), got torch.float32",
        ),
        (
            lambda: AttentionPool(4)(torch.randn(2, 3, 4), torch.ones(2, 5, dtype=torch.bool)),
            ValueError,
            r"mask: expected a padding mask \(B, Tk\) = \(2, 3\) or \(B, 1, Tk\), got shape "
            r"\(2, 5\)",
        ),
        (
            lambda: TanhAttention(4, 2)(
                torch.randn(2, 3, 4), torch.ones(2, 3, 3, dtype=torch.bool)
            ),
            ValueError,
            r"mask: expected a padding mask .* got shape \(2, 3, 3\)",
        ),
    ],
)
def test_errors_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
