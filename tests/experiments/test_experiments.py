"""attention.experiments of lessons 1, 3, 5 and 10 (recurrent, projection, norm_placement): the
measurements the lessons teach, on small settings, against hand computations and theory, plus
argument checks."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from torch import nn

from attention.experiments.loss import LossParams
from attention.experiments.norm_placement import NormPlacementParams, norm_placement
from attention.experiments.projection import ProjectionVarianceParams, projection_variance
from attention.experiments.recurrent import (
    BottleneckParams,
    RecurrentMemoryParams,
    recurrent_memory,
    rnn_bottleneck,
)
from attention.sandbox.limits import (
    bounded,
    bounded_float,
    check_choice,
    check_fields,
    flag,
    one_of,
)


def test_one_step_rnn_sensitivity_matches_the_hand_jacobian():
    p = RecurrentMemoryParams(lengths=(1,), kinds=("rnn",), n_sentences=1, seed=5)
    got = recurrent_memory(p).sensitivity["rnn"][0]
    torch.manual_seed(5)
    rnn = nn.RNN(8, 8, batch_first=True).double()
    x = torch.randn(1, 1, 8, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    h = torch.tanh(x[0, 0] @ rnn.weight_ih_l0.T + rnn.bias_ih_l0 + rnn.bias_hh_l0)  # h_0 = 0
    jac = torch.diag(1 - h**2) @ rnn.weight_ih_l0  # d h_1 / d x_1
    assert got == pytest.approx(jac.norm().item(), rel=1e-9)


def test_memory_fades_with_length_and_gates_fade_slower():
    r = recurrent_memory(RecurrentMemoryParams(lengths=(1, 10, 20, 40)))
    for kind, values in r.sensitivity.items():
        assert all(a > b for a, b in zip(values, values[1:], strict=False)), kind
        assert 0 < r.decay_per_step[kind] < 1
    assert r.decay_per_step["rnn"] < r.decay_per_step["lstm"]
    assert r.decay_per_step["rnn"] < r.decay_per_step["gru"]
    opened = recurrent_memory(
        RecurrentMemoryParams(lengths=(20, 40), kinds=("lstm",), lstm_forget_bias=1.0)
    )
    assert opened.decay_per_step["lstm"] > r.decay_per_step["lstm"]


def test_projection_variance_follows_the_init_formula():
    r = projection_variance(ProjectionVarianceParams(d_ks=(4, 64), n_tokens=256, n_inits=8))
    for d_k, vq, vd, vs in zip(r.d_ks, r.var_q, r.var_dot, r.var_scaled, strict=True):
        assert vq == pytest.approx(1 / 3, rel=0.1)
        assert vd == pytest.approx(d_k / 9, rel=0.2)
        assert vs == pytest.approx(1 / 9, rel=0.2)


def test_projection_variance_is_seeded():
    p = ProjectionVarianceParams(d_ks=(8,), n_tokens=64, n_inits=2)
    assert projection_variance(p) == projection_variance(p)


def test_norm_placement_runs_share_their_start():
    p = NormPlacementParams(n_layers=3, d_model=8, n_heads=2, seq_len=5, steps=4, warmup=2)
    r = norm_placement(p)
    assert set(r.runs) == {(n, w) for n in ("post-LN", "pre-LN") for w in (False, True)}
    for name in ("post-LN", "pre-LN"):
        plain, warm = r.runs[name, False], r.runs[name, True]
        assert plain.losses[0] == warm.losses[0]  # same weights, same first batch
        assert plain.grad_norms[0] == warm.grad_norms[0] == r.init_grad_norms[name]
        assert len(plain.losses) == 4 and len(plain.grad_norms[0]) == 3
        assert len(plain.final_grad_norms) == 3
    assert r.runs["pre-LN", False].norm_first and not r.runs["post-LN", False].norm_first
    again = norm_placement(p)
    assert again.runs["post-LN", True].losses == r.runs["post-LN", True].losses


def test_rnn_bottleneck_structure():
    r = rnn_bottleneck(BottleneckParams(max_len=3, steps=3, batch_size=8, n_eval=60))
    assert r.lengths == (1, 2, 3)
    assert len(r.exact_with) == len(r.exact_without) == 3
    assert r.model_with.attention is not None and r.model_without.attention is None
    assert len(r.losses_with) == 3 and r.seconds_with > 0


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: RecurrentMemoryParams(kinds=("transformer",)), ValueError, r"kinds: expected"),
        (lambda: RecurrentMemoryParams(lengths=()), TypeError, r"lengths: expected a non-empty"),
        (lambda: RecurrentMemoryParams(lengths=(0,)), ValueError, r"lengths: expected an int in"),
        (lambda: ProjectionVarianceParams(d_ks=(4, 2.0)), TypeError, r"d_ks: expected an int"),
        (lambda: NormPlacementParams(d_model=30, n_heads=4), ValueError, r"not divisible"),
        (lambda: NormPlacementParams(lr=2), ValueError, r"lr: expected a float in \(0, 1\)"),
        (lambda: BottleneckParams(max_len=1), ValueError, r"max_len: expected an int in"),
        (
            lambda: LossParams("a text", mask="sliding"),
            ValueError,
            r"^mask: expected one of \['causal', 'no-sink', 'window'\], got 'sliding'$",
        ),
        (
            lambda: check_choice("n", 3, {1: "a", 2: "b"}),
            ValueError,
            r"^n: expected one of \[1, 2\], got 3$",
        ),
    ],
)
def test_params_are_checked(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_check_choice_returns_an_allowed_value():
    assert check_choice("dtype", "bfloat16", {"float32": 4, "bfloat16": 2}) == "bfloat16"


@dataclass(frozen=True)
class _Settings:  # a params dataclass whose fields carry their checks (attention.sandbox.limits)
    width: int = bounded(4, 1, 8, choices=(2, 4, 8))
    rate: float = bounded_float(0.5, 0.0, 1.0)
    mode: str = one_of("fast", ("fast", "exact"))
    verbose: bool = flag(False)
    note: str = "free"  # no check

    def __post_init__(self) -> None:
        check_fields(self)


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"width": 9}, ValueError, r"^width: expected an int in \[1, 8\], got 9$"),
        ({"width": 3}, ValueError, r"^width: expected one of \[2, 4, 8\], got 3$"),
        ({"width": 4.0}, TypeError, r"^width: expected an int, got float$"),
        ({"rate": float("nan")}, ValueError, r"^rate: expected a float in \[0, 1\], got nan$"),
        ({"rate": True}, TypeError, r"^rate: expected a float, got bool$"),
        ({"mode": "slow"}, ValueError, r"^mode: expected one of \['fast', 'exact'\], got 'slow'$"),
        ({"verbose": 1}, TypeError, r"^verbose: expected a bool, got int$"),
        ({"width": 0, "rate": 2.0}, ValueError, r"^width: "),  # the fields in declared order
    ],
)
def test_fields_that_carry_their_checks(change, error, match):
    assert _Settings(note=None) == _Settings(4, 0.5, "fast", False, None)  # unchecked: any value
    with pytest.raises(error, match=match):
        _Settings(**change)
