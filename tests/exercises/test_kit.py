"""What every exercise checker does, each one of them: the reference solution passes, a stub is
"not attempted", the learner's crash is reported (not raised), passing a result instead of the
function is named, and the learner's random state is left alone. Also the kit they share
(`attention.exercises._checking`). The typical wrong answers of each checker are tested beside
its lesson's (test_lesson01.py ... test_lesson20.py)."""

from __future__ import annotations

import importlib

import pytest
import torch

import attention.exercises as E
from attention.exercises import _checking as K
from tests.exercises.checker_answers import IDS, LESSON_MODULES, PAIRS, RENAMED, SOLUTIONS, run


def test_every_checker_has_one_solution_and_every_solution_one_checker():
    assert len(E.__all__) >= 25  # lessons 1-11
    assert sorted(s.__name__ for _, s in PAIRS) == sorted(SOLUTIONS)


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


RETURNING_TENSORS = [  # checkers of lessons 6-10 whose answer is a tensor (or a bool)
    "check_causal_mask",
    "check_masked_softmax",
    "check_key_padding_mask",
    "check_self_attention",
    "check_attention_pool",
    "check_memory_slots",
    "check_tanh_attention",
    "check_split_heads",
    "check_multi_head_scores",
    "check_permutation_equivariance",
    "check_positional_encoding",
    "check_layer_norm",
]


@pytest.mark.parametrize(
    ("check", "solution"),
    [pair for pair in PAIRS if pair[0].__name__ in RETURNING_TENSORS],
    ids=[name for name in IDS if name in RETURNING_TENSORS],
)
def test_forgetting_return_is_named(check, solution, capsys):
    def my_answer(*args):
        solution(*args)  # computes, but returns nothing

    ok, out = run(check, my_answer, capsys)
    assert ok is False
    assert "returned None; did you forget `return`?" in out or "expected a bool" in out


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


@pytest.mark.parametrize(("check", "solution"), PAIRS, ids=IDS)
def test_a_learner_who_edits_the_inputs_in_place_spoils_nothing(check, solution, capsys):
    def vandal(*args):
        result = solution(*args)
        if isinstance(result, torch.Tensor):
            result = result.clone()  # a view of an input would change with it
        for a in args:
            if isinstance(a, torch.Tensor) and a.is_floating_point():
                a.mul_(0.5)
        return result

    ok, out = run(check, vandal, capsys)
    assert ok is True, out


# --- the kit ---------------------------------------------------------------------------------


def wrong_message(fn, *args, **kwargs) -> str:
    with pytest.raises(K.Wrong) as info:
        fn(*args, **kwargs)
    return str(info.value)


def test_compare_accepts_values_within_tolerance():
    K.compare(torch.tensor([1.0, 2.0]) + 1e-7, torch.tensor([1.0, 2.0]))


def test_compare_names_a_known_mistake_before_anything_else():
    want, wrong = torch.ones(2, 3), torch.zeros(3, 2)
    assert wrong_message(K.compare, wrong, want, [(wrong, "transposed")]) == "transposed"


@pytest.mark.parametrize(
    ("got", "message"),
    [
        (None, "x: your function returned None; did you forget `return`?"),
        ([1.0, 2.0], "x: expected a torch.Tensor, got list"),
        (torch.ones(3), "x: wrong shape: expected (2,), got (3,)"),
        (torch.tensor([1.0, float("nan")]), "x: contains NaN or inf; every expected value is"),
        (torch.tensor([1.0, 2.5]), "x: wrong value at position (1,): expected 2, got 2.5"),
        (torch.tensor([True, True]), "x: wrong dtype: expected torch.float32, got torch.bool"),
    ],
)
def test_compare_says_what_is_wrong_when_no_mistake_matches(got, message):
    assert wrong_message(K.compare, got, torch.tensor([1.0, 2.0]), what="x").startswith(message)


def test_a_mistake_that_yields_nan_matches_where_it_has_nan():
    wrong = torch.tensor([0.0, float("nan")])
    message = wrong_message(K.compare, wrong.clone(), torch.tensor([0.0, 1.0]), [(wrong, "nan")])
    assert message == "nan"


def test_close_compares_bools_exactly_and_numbers_as_tensors():
    assert K.close(torch.tensor([True]), torch.tensor([True]))
    assert not K.close(torch.tensor([1.0]), torch.tensor([True]))
    assert K.close(12, torch.tensor(12.0))
    assert not K.close("12", 12)


def test_first_difference_of_bools_and_scalars():
    got, want = torch.tensor([[True, False]]), torch.tensor([[True, True]])
    assert (
        K.first_difference(got, want) == "wrong value at position (0, 1): expected True, got False"
    )
    assert K.first_difference(torch.tensor(2.0), torch.tensor(1.0)) == (
        "wrong value: expected 1, got 2"
    )


def test_call_reports_an_exception_without_a_message_without_a_dangling_colon():
    def my_fn():
        raise ValueError

    assert wrong_message(K.call, my_fn) == "my_fn raised ValueError"


def test_expect_int_accepts_whole_floats_and_tensors():
    assert K.expect_int(12.0) == 12 and K.expect_int(torch.tensor(12)) == 12
    assert wrong_message(K.expect_int, 12.5) == "expected an int, got float"
    assert wrong_message(K.expect_int, True) == "expected an int, got bool"


def test_scale_mistakes_name_the_forgotten_the_unrooted_and_the_inverted_scale():
    scores = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    table = K.scale_mistakes(lambda c: scores * c, "d_k", 16)
    for (got, _), factor in zip(table, (1.0, 1 / 16, 4.0), strict=True):
        torch.testing.assert_close(got, scores * factor)
    first, second, third = (message for _, message in table)
    assert first.startswith("the scores are not scaled: divide them by sqrt(d_k) = sqrt(16)")
    assert second.startswith("you divided by d_k = 16 itself; divide by its square root")
    assert third.startswith("you multiplied the scores by sqrt(d_k) = sqrt(16) instead of dividing")


def test_each_lessons_checkers_are_exported_with_their_solutions_beside_them():
    """lessonNN's checkers are all in attention.exercises, and each one's reference solution is
    in solutions.lessonNN (the module of the same name), not another lesson's."""
    for module in LESSON_MODULES:
        checks = [n for n in module.__all__ if n.startswith("check_")]
        assert checks and set(checks) <= set(E.__all__), module.__name__
        solutions = vars(
            importlib.import_module(module.__name__.replace(".lesson", ".solutions.lesson"))
        )
        for name in checks:
            want = RENAMED.get(name, name.replace("check_", "solution_", 1))
            assert want in solutions, f"{module.__name__}.{name}: no {want} beside it"
