"""Linear attention and the gated delta rule: the parallel form equals the recurrent one, both
equal a loop written from the definition, the state has a fixed size, and bad input is named."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import attention as A


def _qkv(*lead, t=9, d=4, dv=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(*lead, t, d, generator=g, dtype=torch.float64) for _ in range(2))
    return q, k, torch.randn(*lead, t, dv, generator=g, dtype=torch.float64), g


def _definition(q, k, v):
    """o_t = sum_{s<=t} phi(q_t).phi(k_s) v_s / sum_{s<=t} phi(q_t).phi(k_s), one row at a time."""
    phi = lambda x: F.elu(x) + 1  # noqa: E731
    rows = []
    for t in range(q.shape[-2]):
        w = phi(k[..., : t + 1, :]) @ phi(q[..., t, :, None])  # (..., t+1, 1)
        rows.append((w * v[..., : t + 1, :]).sum(-2) / w.sum(-2))
    return torch.stack(rows, -2)


@pytest.mark.parametrize("lead", [(), (3,), (2, 3)])
def test_parallel_equals_recurrent_equals_the_definition(lead):
    q, k, v, _ = _qkv(*lead)
    par, rec = A.linear_attention(q, k, v), A.linear_attention_recurrent(q, k, v)
    torch.testing.assert_close(par.output, rec.output)
    torch.testing.assert_close(par.output, _definition(q, k, v))
    torch.testing.assert_close(par.state, rec.state)
    torch.testing.assert_close(par.normalizer, rec.normalizer)
    assert par.state.shape == (*lead, 4, 5) and rec.weights is None
    torch.testing.assert_close(par.weights.sum(-1), torch.ones(*lead, 9, dtype=torch.float64))
    assert bool((par.weights.triu(1) == 0).all())  # causal


def test_unnormalised_form_is_a_causal_matrix_product():
    q, k, v, _ = _qkv(2)
    par = A.linear_attention(q, k, v, feature_map=None, normalize=False)
    rec = A.linear_attention_recurrent(q, k, v, feature_map=None, normalize=False)
    torch.testing.assert_close(par.output, (q @ k.mT).tril() @ v)
    torch.testing.assert_close(rec.output, par.output)
    assert par.normalizer is None and rec.normalizer is None


def test_the_state_does_not_grow_with_the_sequence():
    for t in (3, 30):
        q, k, v, _ = _qkv(2, t=t)
        assert A.linear_attention_recurrent(q, k, v).state.shape == (2, 4, 5)
    b = A.linear_state_bytes(n_layers=2, n_heads=3, d_key=4, d_value=5, dtype=torch.float64)
    assert b == A.cache_bytes(A.linear_attention(*_qkv(3)[:3]).state) * 2 == 2 * 3 * 4 * 5 * 8
    with_z = A.linear_state_bytes(n_layers=1, n_heads=1, d_key=4, d_value=5, normalizer=True)
    assert with_z == 4 * 6 * 4


def test_parallel_and_recurrent_gradients_agree():
    q, k, v, _ = _qkv(2)
    grads = []
    for fn in (A.linear_attention, A.linear_attention_recurrent):
        leaves = [x.clone().requires_grad_() for x in (q, k, v)]
        fn(*leaves).output.sin().sum().backward()
        grads.append([x.grad for x in leaves])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b)


def _gates(g, *shape):
    beta = torch.rand(*shape, generator=g, dtype=torch.float64)
    alpha = 0.5 + 0.5 * torch.rand(*shape, generator=g, dtype=torch.float64)
    return beta, alpha


def _delta_definition(q, k, v, beta, alpha):
    """S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T, o_t = S_t^T q_t."""
    s = torch.zeros(k.shape[-1], v.shape[-1], dtype=q.dtype)
    out = []
    for t in range(q.shape[0]):
        kt = k[t][:, None]  # (D, 1)
        s = alpha[t] * (torch.eye(k.shape[-1], dtype=q.dtype) - beta[t] * kt @ kt.T) @ s
        s = s + beta[t] * kt @ v[t][None]
        out.append(s.T @ q[t])
    return torch.stack(out), s


@pytest.mark.parametrize("gated", [False, True])
def test_delta_rule_parallel_equals_recurrent_equals_the_definition(gated):
    q, k, v, g = _qkv(2, 3, t=12)
    k = F.normalize(k, dim=-1)
    beta, alpha = _gates(g, 2, 3, 12)
    alpha = alpha if gated else None
    par, rec = A.delta_rule(q, k, v, beta, alpha), A.delta_rule_recurrent(q, k, v, beta, alpha)
    torch.testing.assert_close(par.output, rec.output)
    torch.testing.assert_close(par.state, rec.state)
    a = torch.ones_like(beta) if alpha is None else alpha
    out, state = _delta_definition(q[1, 2], k[1, 2], v[1, 2], beta[1, 2], a[1, 2])
    torch.testing.assert_close(par.output[1, 2], out)
    torch.testing.assert_close(par.state[1, 2], state)


def test_delta_rule_stores_orthonormal_pairs_exactly_where_plain_addition_does_not():
    # Write value v_i under key e_i twice: the delta rule replaces, plain addition doubles.
    d = 4
    keys = torch.eye(d, dtype=torch.float64)
    keys = torch.cat([keys, keys])  # (2D, D) every key written twice
    values = torch.randn(2 * d, 3, dtype=torch.float64)
    beta = torch.ones(2 * d, dtype=torch.float64)
    state = A.delta_rule(keys, keys, values, beta).state  # (D, 3)
    torch.testing.assert_close(keys[:d] @ state, values[d:])  # the newest value of each key
    plain = A.linear_attention(keys, keys, values, feature_map=None, normalize=False).state
    torch.testing.assert_close(keys[:d] @ plain, values[:d] + values[d:])


def test_decay_forgets_old_writes():
    q, k, v, g = _qkv(t=6)
    k = F.normalize(k, dim=-1)
    beta = torch.full((6,), 0.5, dtype=torch.float64)
    tiny = torch.full((6,), 1e-6, dtype=torch.float64)
    only_last = A.delta_rule(q, k, v, beta, tiny).state  # everything before the last decays away
    torch.testing.assert_close(only_last, 0.5 * k[-1][:, None] * v[-1][None], atol=1e-5, rtol=0)


def test_delta_rule_gradients_agree():
    q, k, v, g = _qkv(t=7)
    beta, alpha = _gates(g, 7)
    grads = []
    for fn in (A.delta_rule, A.delta_rule_recurrent):
        leaves = [x.clone().requires_grad_() for x in (q, F.normalize(k, dim=-1), v, beta, alpha)]
        fn(*leaves).output.sum().backward()
        grads.append([x.grad for x in leaves])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (
            (torch.randn(5, 4), torch.randn(6, 4), torch.randn(5, 2)),
            ValueError,
            r"key: expected query's shape \(5, 4\)",
        ),
        (
            (torch.randn(5, 4), torch.randn(5, 4), torch.randn(6, 2)),
            ValueError,
            r"value: expected leading shape \(5,\)",
        ),
        (
            (torch.randn(5, 4), torch.randn(5, 4).int(), torch.randn(5, 2)),
            TypeError,
            "key: expected a floating",
        ),
        (
            (torch.randn(4), torch.randn(4), torch.randn(4)),
            ValueError,
            "query: expected a 2-D or 3-D or 4-D",
        ),
    ],
)
def test_bad_input_is_refused_by_name(args, error, message):
    for fn in (A.linear_attention, A.linear_attention_recurrent):
        with pytest.raises(error, match=message):
            fn(*args)


@pytest.mark.parametrize(
    ("beta", "alpha", "message"),
    [
        (torch.full((5,), 1.5), None, r"beta: expected values in \[0, 1\], got 1.5 .. 1.5"),
        (torch.full((5,), 0.5), torch.zeros(5), r"alpha: expected values in \(0, 1\], got 0 .. 0"),
        (
            torch.full((4,), 0.5),
            None,
            r"beta: expected one gate per token, shape \(5,\), got \(4,\)",
        ),
    ],
)
def test_bad_gates_are_refused_by_name(beta, alpha, message):
    q, k, v = torch.randn(5, 4), torch.randn(5, 4), torch.randn(5, 2)
    for fn in (A.delta_rule, A.delta_rule_recurrent):
        with pytest.raises(ValueError, match=message):
            fn(q, k, v, beta, alpha)
