"""LinearAttentionExplorer (lesson 19, the state): the pure function against linear_attention,
its recurrent form and delta_rule, then the widget's panels; no NaN at any reachable setting."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attention as A
from attention.explore import one_thread
from attention.explore.linear_attention import (
    LINEAR_VARIANTS,
    LinearAttentionParams,
    explore_linear_attention,
)
from widgets.explorers.linear_attention import LinearAttentionExplorer

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
    torch.testing.assert_close(r.parallel.output, parallel.output)
    torch.testing.assert_close(r.implicit_weights, parallel.weights)
    torch.testing.assert_close(r.recurrent.output, parallel.output[:step])  # the claim shown
    fk = F.elu(k[:step]) + 1
    torch.testing.assert_close(r.recurrent.state, fk.T @ v[:step])  # S = sum phi(k_s) v_s^T
    torch.testing.assert_close(r.recurrent.normalizer, fk.sum(0))
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
    torch.testing.assert_close(r.parallel.output, dense.output)
    torch.testing.assert_close(r.implicit_weights @ v, dense.output)  # O = M V
    assert torch.all(r.implicit_weights.triu(1) == 0)  # causal
    # the state after 6 tokens, by the recurrence written out here
    s = torch.zeros(4, 4)
    for t in range(6):
        s = 0.8 * (torch.eye(4) - 0.6 * torch.outer(k[t], k[t])) @ s + 0.6 * torch.outer(k[t], v[t])
    torch.testing.assert_close(r.recurrent.state, s)
    torch.testing.assert_close(r.recurrent.output, dense.output[:6])
    assert r.recurrent.normalizer is None and r.state_numbers == 16


def test_linear_variants_differ() -> None:
    a = explore_linear_attention(LinearAttentionParams(variant="linear"))
    b = explore_linear_attention(LinearAttentionParams(variant="delta rule"))
    assert not torch.allclose(a.parallel.output, b.parallel.output)


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
            shown = {
                "state": r.recurrent.state,
                "parallel": r.parallel.output,
                "recurrent": r.recurrent.output,
                "implicit_weights": r.implicit_weights,
            }
            for name, x in shown.items():
                assert torch.isfinite(x).all(), (p, name)


# --- LinearAttentionExplorer ----------------------------------------------------------------


def test_linear_explorer_steps_through_the_tokens() -> None:
    e = LinearAttentionExplorer(step=3)
    e.step.value = 5
    want = explore_linear_attention(LinearAttentionParams(step=5))
    np.testing.assert_allclose(e.state.matrix, want.recurrent.state.numpy(), rtol=1e-6)
    read, parallel = e.outputs.values  # (T, D) each
    np.testing.assert_allclose(read[:5], want.recurrent.output.numpy(), rtol=1e-6)
    np.testing.assert_allclose(parallel, want.parallel.output.numpy(), rtol=1e-6)
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
