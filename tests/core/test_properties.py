"""Invariants as properties: weight rows, masked zeros, permutation equivariance, variance."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attention as A

dims = st.integers(min_value=1, max_value=9)


@settings(max_examples=60, deadline=None)
@given(tq=dims, tk=dims, d=dims, dv=dims, seed=st.integers(0, 2**16), p=st.floats(0.0, 1.0))
def test_rows_sum_to_one_or_zero_and_masked_weights_are_exactly_zero(tq, tk, d, dv, seed, p):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (
        torch.randn(tq, d, generator=g),
        torch.randn(tk, d, generator=g),
        torch.randn(tk, dv, generator=g),
    )
    mask = torch.rand(tq, tk, generator=g) >= p
    r = A.scaled_dot_product_attention(q, k, v, mask)
    sums = r.weights.sum(-1)
    expected = torch.where(mask.any(-1), 1.0, 0.0)
    torch.testing.assert_close(sums, expected)
    assert (r.weights[~mask] == 0).all()
    assert (r.weights >= 0).all() and torch.isfinite(r.output).all()
    assert torch.equal(r.fully_masked, ~mask.any(-1))


@settings(max_examples=30, deadline=None)
@given(t=st.integers(2, 10), seed=st.integers(0, 2**16))
def test_self_attention_without_positions_is_permutation_equivariant(t, seed):
    torch.manual_seed(seed)
    mha = A.MultiHeadAttention(8, 2)
    x = torch.randn(1, t, 8)
    perm = torch.randperm(t)
    torch.testing.assert_close(mha(x[:, perm]).output, mha(x).output[:, perm], atol=1e-5, rtol=1e-5)


def test_positional_encoding_breaks_permutation_equivariance():
    torch.manual_seed(0)
    mha = A.MultiHeadAttention(8, 2)
    x = torch.randn(1, 6, 8)
    pe = A.sinusoidal_positional_encoding(6, 8)
    perm = torch.tensor([5, 4, 3, 2, 1, 0])
    out = mha(x + pe).output
    shuffled = mha(x[:, perm] + pe).output  # positions stay put, tokens move
    assert not torch.allclose(shuffled, out[:, perm], atol=1e-3)


def test_positional_encoding_formula_and_range():
    pe = A.sinusoidal_positional_encoding(50, 16)
    pos, i = 7, 3
    angle = torch.tensor(pos / 10000 ** (2 * i / 16))
    torch.testing.assert_close(pe[pos, 2 * i], torch.sin(angle))
    torch.testing.assert_close(pe[pos, 2 * i + 1], torch.cos(angle))
    assert pe.abs().max() <= 1.0
    assert A.sinusoidal_positional_encoding(3, 5).shape == (3, 5)  # odd widths work


def test_scaled_score_variance_stays_near_one_while_unscaled_grows_like_d():
    g = torch.Generator().manual_seed(0)
    for d in (4, 64, 512):
        q = torch.randn(4000, d, generator=g)
        k = torch.randn(4000, d, generator=g)
        dots = (q * k).sum(-1)  # 4000 independent q.k samples
        assert abs(dots.var().item() / d - 1) < 0.1
        assert abs((dots / d**0.5).var().item() - 1) < 0.1


def test_large_unscaled_scores_saturate_softmax_and_shrink_gradients():
    g = torch.Generator().manual_seed(1)
    d = 512
    q, k = torch.randn(200, d, generator=g), torch.randn(16, d, generator=g)
    upstream = torch.randn(200, 16, generator=g)
    stats = {}
    for name, scale in (("scaled", d**-0.5), ("unscaled", 1.0)):
        scores = (q @ k.T * scale).requires_grad_(True)  # (200 queries, 16 keys)
        w = torch.softmax(scores, -1)
        (w * upstream).sum().backward()
        stats[name] = (scores.grad.norm(dim=-1).median().item(), w.max(-1).values.mean().item())
    assert stats["unscaled"][1] > 0.9 > stats["scaled"][1]  # one weight takes nearly everything
    assert stats["unscaled"][0] < 0.1 * stats["scaled"][0]  # and the gradient all but vanishes
