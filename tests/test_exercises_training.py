"""The checkers of lesson 11: references pass, stubs are "not attempted", typical mistakes named,
and the lesson's hidden solution cells are the reference solutions."""

import ast
import inspect
import json
from pathlib import Path

import pytest
import torch

from attention.exercises import training, training_solutions
from attention.exercises.training import check_greedy_step, check_sequence_loss, check_shift_right
from attention.models.toy.data import PAD

LESSON = Path(__file__).resolve().parents[1] / "lessons" / "11_encoder_decoder.ipynb"

PAIRS = {
    check_shift_right: training_solutions.solution_shift_right,
    check_greedy_step: training_solutions.solution_greedy_step,
    check_sequence_loss: training_solutions.solution_sequence_loss,
}


def run(check, fn, capsys):
    ok = check(fn)
    return ok, capsys.readouterr().out


def test_every_checker_has_a_solution():
    assert sorted(c.__name__ for c in PAIRS) == sorted(training.__all__)


# --- shift right ------------------------------------------------------------------------------


def with_first_column(value):
    def fn(tgt_out, bos_id):
        return torch.cat([torch.full_like(tgt_out[:, :1], value), tgt_out[:, :-1]], dim=1)

    return fn


def off_by_one_token(tgt_out, bos_id):
    out = with_first_column(bos_id)(tgt_out, bos_id)
    out[1, 2] = 3 + (out[1, 2] - 3 + 1) % 10  # another digit
    return out


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda y, bos: y.clone(), "the input equals the target"),
        (
            lambda y, bos: torch.cat([y[:, 1:], torch.full_like(y[:, :1], PAD)], dim=1),
            "you shifted left",
        ),
        (
            lambda y, bos: torch.cat([torch.full_like(y[:, :1], bos), y], dim=1),
            "you added BOS but kept every target token",
        ),
        (with_first_column(PAD), "expected BOS (id 1) in every row"),
        (lambda y, bos: with_first_column(bos)(y, bos).float(), "expected integer token ids"),
        (lambda y, bos: with_first_column(bos)(y, bos)[:, :-1], "wrong shape: expected (5, 6)"),
        (lambda y, bos: torch.roll(y, 1, dims=1), "the first column holds [0, 0, 0, 0, 2]"),
        (off_by_one_token, "wrong token at position (1, 2): expected"),
    ],
)
def test_shift_right_mistakes(fn, message, capsys):
    ok, out = run(check_shift_right, fn, capsys)
    assert not ok and message in out, out


# --- greedy step ------------------------------------------------------------------------------


def decode(model, src, prefix):
    memory = model.encode(src).output
    return model.decode(prefix, memory, model.src_mask(src))[0]  # (B, t, V)


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda m, s, p: decode(m, s, p)[:, 0].argmax(-1), "you read the logits of the first"),
        (lambda m, s, p: decode(m, s, p)[:, -1], "these look like logits or probabilities"),
        (lambda m, s, p: decode(m, s, p).softmax(-1), "these look like logits or probabilities"),
        (lambda m, s, p: decode(m, s, p).argmax(-1), "you took the argmax at every position"),
        (lambda m, s, p: decode(m, s, p[:, -1:])[:, -1].argmax(-1), "you fed only the newest"),
        (lambda m, s, p: decode(m, s, p)[:, -1].argmax(-1).float(), "expected integer token"),
        (lambda m, s, p: decode(m, s, p)[:, -1].argmin(-1), "wrong token at position (0,)"),
    ],
)
def test_greedy_step_mistakes(fn, message, capsys):
    ok, out = run(check_greedy_step, fn, capsys)
    assert not ok and message in out, out


def test_greedy_step_accepts_the_probabilities_route(capsys):
    ok, out = run(
        check_greedy_step, lambda m, s, p: decode(m, s, p)[:, -1].softmax(-1).argmax(-1), capsys
    )
    assert ok, out


# --- loss -------------------------------------------------------------------------------------


def ce(logits, tgt, **kw):
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), **kw
    )


def per_sequence_mean(logits, tgt, pad):
    losses = ce(logits, tgt, reduction="none").reshape(tgt.shape)
    real = tgt != pad
    return ((losses * real).sum(1) / real.sum(1)).mean()


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda lg, y, pad: ce(lg, y), "your loss also averages over the PAD positions"),
        (lambda lg, y, pad: ce(lg.softmax(-1), y, ignore_index=pad), "you passed probabilities"),
        (lambda lg, y, pad: ce(lg, y, ignore_index=pad, reduction="sum"), "you summed the token"),
        (per_sequence_mean, "you averaged each sequence first"),
        (lambda lg, y, pad: ce(lg, y, ignore_index=pad, reduction="none"), "expected a scalar"),
        (lambda lg, y, pad: 2.5, "expected a torch.Tensor, got float"),
        (lambda lg, y, pad: ce(lg, y, ignore_index=pad) + 0.1, "wrong value: expected"),
    ],
)
def test_sequence_loss_mistakes(fn, message, capsys):
    ok, out = run(check_sequence_loss, fn, capsys)
    assert not ok and message in out, out


# --- the lesson shows the reference solutions --------------------------------------------------


def _functions(source: str) -> dict[str, str]:
    tree = ast.parse(source)
    return {n.name: ast.dump(n) for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_lesson_solution_cells_match_the_solutions_module():
    nb = json.loads(LESSON.read_text())
    cells = [
        "".join(c["source"])
        for c in nb["cells"]
        if "solution" in c.get("metadata", {}).get("tags", [])
    ]
    assert len(cells) == len(PAIRS)
    shown = {}
    for cell in cells:
        shown.update(_functions(cell))
        assert cell.strip().splitlines()[-1].startswith("check_")  # and the checker runs on it
    module = _functions(inspect.getsource(training_solutions))
    assert shown == module
