"""Differential attention: the difference of two softmax maps, against torch's SDPA twice."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import attention as A


def _inputs(seed=0, b=2, h=3, t=6, d=4):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, h, t, d, generator=g, dtype=torch.float64) for _ in range(5)]


def test_equals_two_reference_softmax_maps_subtracted():
    q1, k1, q2, k2, v = _inputs()
    mask = A.causal_mask(6)
    got = A.differential_attention(q1, k1, q2, k2, v, 0.3, mask)
    want = F.scaled_dot_product_attention(q1, k1, v, is_causal=True) - 0.3 * (
        F.scaled_dot_product_attention(q2, k2, v, is_causal=True)
    )
    torch.testing.assert_close(got.output, want)
    torch.testing.assert_close(got.weights.sum(-1), torch.full((2, 3, 6), 0.7, dtype=torch.float64))
    assert bool((got.weights.triu(1) == 0).all())


def test_lambda_zero_is_ordinary_attention_and_a_per_head_lambda_broadcasts():
    q1, k1, q2, k2, v = _inputs()
    plain = A.scaled_dot_product_attention(q1, k1, v)
    torch.testing.assert_close(
        A.differential_attention(q1, k1, q2, k2, v, 0.0).output, plain.output
    )
    lam = torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64)[:, None, None]  # (H, 1, 1)
    got = A.differential_attention(q1, k1, q2, k2, v, lam)
    for h in range(3):
        one = A.differential_attention(q1, k1, q2, k2, v, float(lam[h]))
        torch.testing.assert_close(got.output[:, h], one.output[:, h])


def test_common_mode_noise_cancels():
    # Both maps see the same noisy scores on every key; only the first also sees the signal key.
    g = torch.Generator().manual_seed(3)
    noise = torch.randn(1, 12, generator=g, dtype=torch.float64)
    signal = torch.zeros(1, 12, dtype=torch.float64)
    signal[0, 5] = 3.0
    eye = torch.eye(12, dtype=torch.float64)  # keys = one-hot, so q @ k.T = q
    v = torch.randn(12, 2, generator=g, dtype=torch.float64)
    r = A.differential_attention(signal + noise, eye, noise, eye, v, 1.0, scale=1.0)
    a1 = r.first.weights[0]
    others = torch.arange(12) != 5
    # the difference removes most of the weight the first map wastes on the other keys
    assert r.weights[0, others].abs().sum() < 0.5 * a1[others].sum()
    assert r.weights[0, 5] == r.weights[0].max()


def test_lambda_parametrisation():
    assert A.lambda_init(1) == pytest.approx(0.2)
    assert A.lambda_init(12) == pytest.approx(0.8 - 0.6 * math.exp(-3.3))
    z = torch.zeros(4)
    assert float(A.differential_lambda(z, z, z, z, 0.3)) == pytest.approx(0.3)
    one = torch.tensor([1.0, 0, 0, 0])
    assert float(A.differential_lambda(one, one, z, z, 0.3)) == pytest.approx(math.e - 1 + 0.3)


def test_gradients_reach_lambda_and_both_maps():
    q1, k1, q2, k2, v = (x.requires_grad_() for x in _inputs())
    lam = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
    A.differential_attention(q1, k1, q2, k2, v, lam).output.square().sum().backward()
    assert all(x.grad is not None and x.grad.abs().sum() > 0 for x in (q1, k1, q2, k2, v, lam))


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (
            dict(q2=torch.randn(2, 3, 5, 4)),
            ValueError,
            r"q2, k2: expected the shapes of q1 \(2, 3, 6, 4\)",
        ),
        (dict(lam=float("nan")), ValueError, "lam: expected a finite number"),
        (dict(lam=torch.ones(5)), ValueError, r"lam: shape \(5,\) does not broadcast"),
        (dict(lam=torch.ones(4, 1, 1, 1, 1)), ValueError, "would change the weights' shape"),
    ],
)
def test_bad_input_is_refused_by_name(change, error, message):
    q1, k1, q2, k2, v = _inputs()
    args = dict(q1=q1, k1=k1, q2=q2, k2=k2, value=v, lam=0.5) | change
    with pytest.raises(error, match=message):
        A.differential_attention(**args)
    with pytest.raises(ValueError, match="layer: expected a positive int, got 0"):
        A.lambda_init(0)
