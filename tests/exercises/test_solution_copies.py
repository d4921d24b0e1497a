"""Every lesson with exercises shows each reference solution in a hidden cell tagged `solution`;
that copy must stay the packaged one (attention/exercises/solutions/lessonNN.py, the lesson's own
number), comments included, and the cell must run the exercise's checker on it."""

from __future__ import annotations

import ast
import difflib
import inspect
import re
from pathlib import Path

import nbformat
import pytest

from tests.exercises.checker_answers import PAIRS, SOLUTION_MODULES

LESSONS = sorted((Path(__file__).resolve().parents[2] / "lessons").glob("[0-9][0-9]_*.ipynb"))
SOLVES = {solution.__name__: check.__name__ for check, solution in PAIRS}
EXERCISE = re.compile(r"^(check_\w+)\(my_\w+\);?$", re.M)  # the learner's check cell
SHOWN = re.compile(r"^# One solution \(also in attention/exercises/solutions/(lesson\d\d)\.py\)$")


def functions(source: str) -> dict[str, str]:
    """Top-level functions of source: name -> its lines, trailing comments included."""
    lines = source.splitlines()
    return {
        node.name: "\n".join(line.rstrip() for line in lines[node.lineno - 1 : node.end_lineno])
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef)
    }


PACKAGED = {
    name: (module.__name__.rsplit(".", 1)[1], text)
    for module in SOLUTION_MODULES
    for name, text in functions(inspect.getsource(module)).items()
}


def cells(path: Path) -> list:
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def solution_cells(path: Path) -> list:
    """The cells tagged `solution` that hold a solution (a cell may also only run a checker)."""
    return [
        c
        for c in cells(path)
        if "solution" in c.metadata.get("tags", []) and "def solution_" in c.source
    ]


def exercises(path: Path) -> list[str]:
    return [m for c in cells(path) for m in EXERCISE.findall(c.source)]


WITH_EXERCISES = [p for p in LESSONS if exercises(p)]
IDS = [p.name[:2] for p in WITH_EXERCISES]


def test_lessons_1_to_11_have_exercises():
    assert {f"{n:02d}" for n in range(1, 12)} <= set(IDS)


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=IDS)
def test_each_exercise_has_one_hidden_solution_cell_that_runs_its_checker(path):
    shown = {}
    for cell in solution_cells(path):
        assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, cell.source[:60]
        (name,) = functions(cell.source)  # one solution per cell
        assert name in SOLVES, f"{path.name}: {name} is not a packaged reference solution"
        last = cell.source.strip().splitlines()[-1].removesuffix(";")  # ";": no stray True
        assert last == f"{SOLVES[name]}({name})", f"{path.name}: the cell must end by checking it"
        shown[SOLVES[name]] = name
    assert sorted(shown) == sorted(exercises(path)), f"{path.name}: a solution per exercise"


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=IDS)
def test_solution_cells_are_the_packaged_solutions(path):
    for cell in solution_cells(path):
        ((name, text),) = functions(cell.source).items()
        module, packaged = PACKAGED[name]
        diff = "\n".join(
            difflib.unified_diff(
                packaged.splitlines(), text.splitlines(), module, path.name, lineterm=""
            )
        )
        assert ast.dump(ast.parse(text)) == ast.dump(ast.parse(packaged)), diff
        assert text == packaged, f"comments or layout differ:\n{diff}"
        header = SHOWN.match(cell.source.splitlines()[0])
        assert header and header[1] == module, f"{path.name}: the first line names {module}.py"
        assert module == f"lesson{path.name[:2]}", f"{path.name}: {name} is in {module}.py"


def test_every_solution_of_lessons_1_to_11_is_shown_in_exactly_one_lesson():
    shown = [
        name for p in WITH_EXERCISES for c in solution_cells(p) for name in functions(c.source)
    ]
    assert len(shown) == len(set(shown)), "a solution is shown twice"
    lessons = {f"lesson{n:02d}" for n in range(1, 12)}
    assert {name for name, (module, _) in PACKAGED.items() if module in lessons} <= set(shown)
