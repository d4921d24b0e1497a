"""What every exercise checker does, for all 25 of them: the reference solution passes, a stub is
"not attempted", the learner's crash is reported (not raised), passing a result instead of the
function is named, and the learner's random state is left alone. The typical wrong answers of
each checker are tested beside its lessons (test_exercises_basics/layers/training.py)."""

from __future__ import annotations

import pytest
import torch

import attention.exercises as E
from attention.exercises import basics, basics_solutions, layers, layers_solutions, training
from attention.exercises import training_solutions as TS

LS = layers_solutions
LAYERS_PAIRS = [
    (layers.check_causal_mask, LS.causal_mask),
    (layers.check_masked_softmax, LS.masked_softmax),
    (layers.check_key_padding_mask, LS.to_key_padding_mask),
    (layers.check_self_attention, LS.self_attention),
    (layers.check_attention_pool, LS.attention_pool),
    (layers.check_split_heads, LS.split_heads),
    (layers.check_multi_head_scores, LS.multi_head_scores),
    (layers.check_mha_parameter_count, LS.mha_parameter_count),
    (layers.check_permutation_equivariance, LS.is_permutation_equivariant),
    (layers.check_positional_encoding, LS.sinusoidal_pe),
    (layers.check_layer_norm, LS.layer_norm),
    (layers.check_parameter_count, LS.encoder_layer_parameter_count),
]


def _by_name(module, solutions) -> list[tuple]:
    """check_foo pairs with solutions.solution_foo."""
    return [
        (getattr(module, name), getattr(solutions, name.replace("check_", "solution_", 1)))
        for name in module.__all__
    ]


PAIRS = _by_name(basics, basics_solutions) + LAYERS_PAIRS + _by_name(training, TS)
IDS = [check.__name__ for check, _ in PAIRS]


def run(check, fn, capsys) -> tuple[bool, str]:
    """Run a checker; return (its bool, what it printed)."""
    ok = check(fn)
    return ok, capsys.readouterr().out


def test_every_exported_checker_is_tested_here():
    assert sorted(IDS) == sorted(E.__all__)


@pytest.mark.parametrize(("check", "solution"), PAIRS, ids=IDS)
def test_reference_solution_passes(check, solution, capsys):
    ok, out = run(check, solution, capsys)
    assert ok is True, out
    assert out.startswith("Correct: ")


@pytest.mark.parametrize(("check", "solution"), PAIRS, ids=IDS)
def test_stub_is_not_attempted_rather_than_failed(check, solution, capsys):
    def my_answer(*args):
        raise NotImplementedError

    ok, out = run(check, my_answer, capsys)
    assert ok is False
    assert out == "Not attempted yet: write my_answer above, then run this cell\n"


@pytest.mark.parametrize(("check", "solution"), PAIRS, ids=IDS)
def test_an_error_in_the_learners_code_is_reported_not_raised(check, solution, capsys):
    def my_answer(*args):
        return 1 / 0

    ok, out = run(check, my_answer, capsys)
    assert ok is False
    assert "my_answer raised ZeroDivisionError: division by zero" in out


@pytest.mark.parametrize(("check", "solution"), PAIRS, ids=IDS)
def test_passing_a_result_instead_of_the_function_is_named(check, solution, capsys):
    ok, out = run(check, torch.zeros(3), capsys)
    assert ok is False
    assert out == (
        "Not yet: expected a function, got Tensor; pass the function itself "
        "(my_function, not my_function(...))\n"
    )


@pytest.mark.parametrize(("check", "solution"), PAIRS, ids=IDS)
def test_checkers_leave_the_global_random_state_alone(check, solution, capsys):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check(solution)
    torch.testing.assert_close(torch.rand(3), expected)
