"""The learner's records, their progress table and the teacher's table of the class.

Every checker verdict appends a record to the learner's folder (attention/exercises/records.py);
the teacher's command (class_report.py) counts a class's records per exercise. The class here is
seeded: 30 homes whose mistakes are known, so each count has an exact expected value.
"""

from __future__ import annotations

import csv
import importlib
import json
import os
import pkgutil
import pwd
import re
from pathlib import Path

import pytest
import torch

import attention.exercises as E
from attention.exercises import _checking, class_report, records
from attention.exercises.records import RECORDS_ENV, Record, progress, read_records

REPO = Path(__file__).resolve().parents[2]
# the exercises package's modules (and package) that check nothing
NOT_CHECKERS = {"records", "class_report", "solutions"}
SOFTMAX_DIM0 = (
    "softmax over dim=0 (each column sums to 1); attention normalises each row over the keys: "
    "use dim=-1"
)


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """A fresh records folder for this test, and a kernel that has not warned yet."""
    monkeypatch.setenv(RECORDS_ENV, str(tmp_path / "course"))
    monkeypatch.setattr(records, "_warned", [])
    return tmp_path / "course"


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def right_softmax(scores):
    return torch.softmax(scores, dim=-1)


def columns_softmax(scores):
    return torch.softmax(scores, dim=0)


def off_by_one(scores):
    return torch.softmax(scores, dim=-1) + 0.5


def stub(*args):
    raise NotImplementedError


# --- the learner's records ------------------------------------------------------------------------


def test_the_suite_keeps_records_out_of_the_real_home():
    folder = Path(os.environ[RECORDS_ENV])  # set by tests/conftest.py before any kernel starts
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert folder.is_absolute() and home not in (folder, *folder.parents)


def test_each_verdict_appends_one_record_as_printed(folder, capsys):
    assert E.check_softmax(right_softmax) is True
    assert E.check_softmax(columns_softmax) is False
    assert E.check_softmax(off_by_one) is False
    assert E.check_softmax(stub) is False
    assert E.check_softmax(42) is False
    printed = capsys.readouterr().out.splitlines()
    got = lines(folder / "records.jsonl")
    assert [r["outcome"] for r in got] == ["passed", "mistake", "wrong", "not attempted", "wrong"]
    assert {r["exercise"] for r in got} == {"check_softmax"}
    assert {r["lesson"] for r in got} == {"02_weighted_averaging"}
    assert got[1]["message"] == SOFTMAX_DIM0  # the named mistake, word for word
    for line, r in zip(printed, got, strict=True):  # each record is the verdict it printed
        assert line.endswith(": " + r["message"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", got[0]["time"])


def test_a_named_mistake_is_told_from_another_wrong_value():
    with pytest.raises(_checking.Wrong, match="use dim=-1") as named:
        _checking.name_mistake(torch.ones(2), [(torch.ones(2), "use dim=-1")])
    with pytest.raises(_checking.Wrong, match=r"wrong value at position \(0,\)") as other:
        _checking.compare(torch.zeros(2), torch.ones(2), [(torch.ones(2) * 3, "never")])
    assert named.value.named and not other.value.named


def test_records_off_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(RECORDS_ENV, "off")
    monkeypatch.chdir(tmp_path)
    assert records.records_file() is None
    assert E.check_softmax(right_softmax) is True
    assert list(tmp_path.iterdir()) == []
    progress()
    assert "Records are off" in capsys.readouterr().out


def test_the_default_folder_is_in_the_learners_home(tmp_path, monkeypatch):
    monkeypatch.delenv(RECORDS_ENV)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert records.records_file() == tmp_path / ".attention-course" / "records.jsonl"


def test_a_folder_that_cannot_be_written_leaves_the_verdict_alone(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"  # a file where the folder should be: fails even for root
    blocker.write_text("not a folder")
    monkeypatch.setenv(RECORDS_ENV, str(blocker / "course"))
    monkeypatch.setattr(records, "_warned", [])
    assert E.check_softmax(right_softmax) is True
    assert E.check_softmax(columns_softmax) is False
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Correct: ")
    assert re.match(r"\(your progress was not saved: \w+Error: .*ATTENTION_COURSE_RECORDS", out[1])
    assert out[2] == "Not yet: " + SOFTMAX_DIM0  # one note per kernel, not one per check
    assert len(out) == 3 and blocker.read_text() == "not a folder"


def test_a_record_never_appends_to_what_is_not_a_records_file(folder, capsys):
    folder.mkdir()
    (folder / "records.jsonl").mkdir()  # a folder in the file's place: nothing is replaced
    assert E.check_softmax(right_softmax) is True
    assert "progress was not saved" in capsys.readouterr().out
    assert list((folder / "records.jsonl").iterdir()) == []


DAMAGE = [
    ("{not json", r"line 2: not JSON \(.*\); line skipped"),
    ("[1, 2]", r"line 2: expected a JSON object, got list"),
    ('{"exercise": "check_softmax", "outcome": "passed", "time": "t"}',
     r"line 2: message: expected a string, got nothing"),
    ('{"exercise": "check_softmax", "outcome": "won", "message": "", "time": "t"}',
     r"line 2: outcome: expected one of passed, mistake, wrong, not attempted, got 'won'"),
    ('{"exercise": "e", "outcome": "passed", "message": "", "time": "t", "lesson": 12}',
     r"line 2: lesson: expected a string or null, got int"),
    ('{"exercise": 5, "outcome": "passed", "message": "", "time": "t"}',
     r"line 2: exercise: expected a string, got int"),
]  # fmt: skip


@pytest.mark.parametrize(("bad", "problem"), DAMAGE, ids=[p.split(":")[1] for _, p in DAMAGE])
def test_a_damaged_line_is_named_and_the_others_are_read(tmp_path, bad, problem):
    good = json.dumps({"exercise": "check_softmax", "outcome": "passed", "message": "m",
                       "time": "t", "lesson": "02_weighted_averaging"})  # fmt: skip
    path = tmp_path / "records.jsonl"
    path.write_text(f"{good}\n{bad}\n\n{good}\n", encoding="utf-8")
    got, problems = read_records(path)
    assert got == [Record("check_softmax", "passed", "m", "t", "02_weighted_averaging")] * 2
    assert len(problems) == 1 and re.search(problem, problems[0])


def test_a_missing_or_damaged_file_gets_one_line_never_a_crash(tmp_path):
    assert read_records(tmp_path / "none.jsonl") == (
        [], [f"{tmp_path / 'none.jsonl'}: no records yet (the file does not exist)"]
    )  # fmt: skip
    _, problems = read_records(tmp_path)
    assert problems == [
        f"{tmp_path}: expected a file of records, got a folder or another kind of file"
    ]
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\xff\xfe\x00binary\x00\n\x89PNG")
    got, problems = read_records(garbage)
    assert got == [] and len(problems) == 2
    assert all(re.search(r"line \d: not JSON", p) for p in problems)


def test_progress_shows_each_lesson_tried_and_passed(folder, capsys):
    E.check_softmax(columns_softmax)  # lesson 2: a mistake, then right
    E.check_softmax(right_softmax)
    E.check_gaussian_pooling(stub)  # not attempted: not counted as tried
    E.check_causal_mask(stub)
    records.record("check_causal_mask", "mistake", "the mask is upside down")  # lesson 6
    capsys.readouterr()
    progress()
    assert capsys.readouterr().out.splitlines() == [
        f"{'lesson':28} tried passed  of",
        f"{'02_weighted_averaging':28}     1      1   2",
        f"{'06_masks':28}     1      0   3",
        "    not passed yet: check_causal_mask: the mask is upside down",
    ]


def test_progress_without_records_and_with_a_damaged_file(folder, capsys):
    progress()
    assert capsys.readouterr().out.splitlines() == [
        f"{folder / 'records.jsonl'}: no records yet (the file does not exist)",
        "No exercise tried yet: write a function in a lesson and run its check cell.",
    ]
    folder.mkdir()
    (folder / "records.jsonl").write_text("{oops\n", encoding="utf-8")
    progress()
    out = capsys.readouterr().out.splitlines()
    assert re.search(r"records.jsonl line 1: not JSON", out[0]) and out[1].startswith("No exer")


def test_every_checker_has_the_lesson_that_uses_it():
    modules = {  # every checker module: lesson N's checkers are in lessonNN
        info.name: importlib.import_module(f"attention.exercises.{info.name}")
        for info in pkgutil.iter_modules(E.__path__)
        if not info.name.startswith("_") and info.name not in NOT_CHECKERS
    }
    for name, module in modules.items():
        assert re.fullmatch(r"lesson\d\d", name), f"{name}: a checker module is named lessonNN"
        assert module.LESSON.startswith(name.removeprefix("lesson") + "_"), name
        assert (REPO / "lessons" / f"{module.LESSON}.ipynb").is_file(), module.LESSON
    checkers = {  # every check_* a checker module offers, exported by the package or not yet
        name for module in modules.values() for name in module.__all__ if name.startswith("check_")
    }
    used, calls = {}, {}
    for path in sorted((REPO / "lessons").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        calls[path.stem] = list(dict.fromkeys(re.findall(r"\b(check_\w+)\(", code)))
        for name in set(calls[path.stem]) & checkers:
            used.setdefault(name, []).append(path.stem)
    assert set(records.EXERCISE_LESSON) == checkers  # derived from the modules: none missing
    assert records.EXERCISE_LESSON["check_attention"] == "04_scaled_dot_product"
    assert set(E.__all__) <= checkers
    for name, lessons in used.items():  # a checker lives with the first lesson that uses it
        assert lessons[0] == records.EXERCISE_LESSON[name], name
    for module in modules.values():  # defined in the order the lesson sets them: course order
        defined = [n for n in vars(module) if n in checkers]
        assert defined == [n for n in calls[module.LESSON] if n in defined], module.LESSON


# --- the teacher's table --------------------------------------------------------------------------

N_STUDENTS = 30


def seed_class(root: Path, monkeypatch) -> None:
    """30 homes whose records are known; the counts expected from them are in the test below.

    student i (0-29):
      check_attention: i < 20 tried; of them i % 4 == 0 made "not scaled" (5 students, each
        three times), i % 5 == 1 "divided by d_k" (4), i == 2 a wrong value; i < 15 passed later
      check_softmax: i < 12 stub only (not attempted: not tried); i in 12..17 passed at once
      check_custom (no lesson): student 29 only, passed
      students 27 and 28: a damaged line each; student 26: a folder instead of the file;
      student 25: no folder at all (never ran a check)
    """
    scaled = "the scores are not scaled: divide them by sqrt(d_k) = sqrt(8) <b>"
    divided = "you divided by d_k = 8 itself; divide by its square root"
    for i in range(N_STUDENTS):
        home = root / f"student{i:02}"
        home.mkdir(parents=True)
        if i == 25:
            continue
        folder = home / ".attention-course"
        monkeypatch.setenv(RECORDS_ENV, str(folder))
        if i == 26:
            (folder / "records.jsonl").mkdir(parents=True)
            continue
        if i < 20:
            if i % 4 == 0:
                for _ in range(3):
                    records.record("check_attention", "mistake", scaled)
            if i % 5 == 1:
                records.record("check_attention", "mistake", divided)
            if i == 2:
                records.record("check_attention", "wrong", "wrong value at position (0, 1)")
            if i < 15:
                records.record("check_attention", "passed", "right")
            else:
                records.record("check_attention", "not attempted", "write it")
        records.record("check_softmax", "not attempted", "write my_softmax above")
        if 12 <= i < 18:
            records.record("check_softmax", "passed", "right")
        if i == 29:
            records.record("check_custom", "passed", "right")
        if i in (27, 28):
            with open(folder / "records.jsonl", "a", encoding="utf-8") as f:
                f.write('{"exercise": "check_attention", "outcome": "passed"\n')  # cut short


def read_csv(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return {row["exercise"]: row for row in csv.DictReader(f)}


def test_a_seeded_class_gives_exact_counts(tmp_path, monkeypatch, capsys):
    seed_class(tmp_path / "home", monkeypatch)
    out = tmp_path / "report"
    assert class_report.main(["--homes", str(tmp_path / "home"), "--out", str(out)]) == 0
    rows = read_csv(out / "class_report.csv")
    attention = rows["check_attention"]
    assert attention["lesson"] == "04_scaled_dot_product"
    # tried: 0-14 (who passed) and 16 (two mistakes); 15, 17, 18 and 19 ran only their stubs
    tried = {i for i in range(20) if i < 15 or i % 4 == 0 or i % 5 == 1 or i == 2}
    assert int(attention["tried"]) == len(tried) == 16
    assert int(attention["passed"]) == 15 and int(attention["not_passed"]) == 1
    assert attention["mistake_1"].startswith("the scores are not scaled")
    assert int(attention["mistake_1_students"]) == 5  # 0, 4, 8, 12, 16: three times each
    assert attention["mistake_2"].startswith("you divided by d_k")
    assert int(attention["mistake_2_students"]) == 4  # 1, 6, 11, 16
    assert attention["mistake_3"] == "" and int(attention["other_wrong"]) == 1
    softmax = rows["check_softmax"]
    assert (softmax["tried"], softmax["passed"], softmax["mistake_1"]) == ("6", "6", "")
    assert rows["check_custom"]["lesson"] == "" and rows["check_custom"]["passed"] == "1"
    assert rows["check_rollout"]["tried"] == "0"  # every exercise of the course has a row
    assert list(rows)[:2] == ["check_rnn_final_state", "check_vocabulary"]  # course order
    assert list(rows)[-1] == "check_custom"

    printed = capsys.readouterr().out
    assert printed.startswith("30 students, 28 with records, ")
    for problem in (
        r"student27/\.attention-course/records\.jsonl line \d+: not JSON",
        r"student28/\.attention-course/records\.jsonl line \d+: not JSON",
        r"student26/\.attention-course/records\.jsonl: expected a file of records",
        r"1 student\(s\) have no records file yet",
    ):
        assert re.search("not counted: .*" + problem, printed)
    page = (out / "class_report.html").read_text(encoding="utf-8")
    assert "sqrt(8) &lt;b&gt; <b>(5)</b>" in page  # the message escaped, the count bold
    assert "<h2>Not counted</h2>" in page and "student27" in page
    assert "http" not in page and "<script" not in page


def test_folders_named_one_by_one(tmp_path, monkeypatch, capsys):
    for name in ("ada", "bob"):
        monkeypatch.setenv(RECORDS_ENV, str(tmp_path / name / ".attention-course"))
        records.record("check_softmax", "mistake", SOFTMAX_DIM0)
    sources = class_report.find_sources(None, [tmp_path / "ada" / ".attention-course",
                                               tmp_path / "bob" / ".attention-course" /
                                               "records.jsonl"])  # fmt: skip
    assert [s for s, _ in sources] == ["ada", "bob"]
    row = next(r for r in class_report.collect(sources).rows if r.exercise == "check_softmax")
    assert (row.tried, row.passed, row.mistakes) == (2, 0, ((SOFTMAX_DIM0, 2),))


def test_the_command_refuses_what_it_cannot_do(tmp_path, capsys):
    with pytest.raises(SystemExit):
        class_report.main([])
    assert "expected --homes ROOT or at least one student's folder, got neither" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        class_report.main(["--homes", str(tmp_path / "nowhere")])
    assert re.search(r"--homes: expected a folder of home folders, got '.*nowhere'",
                     capsys.readouterr().err)  # fmt: skip
    with pytest.raises(SystemExit):
        class_report.main(["--homes", str(tmp_path), "--top", "0"])
    assert "--top: expected a positive number of mistakes, got 0" in capsys.readouterr().err
    (tmp_path / "class_report.csv").write_text("the teacher's own notes")
    with pytest.raises(SystemExit):
        class_report.main(["--homes", str(tmp_path), "--out", str(tmp_path)])
    assert re.search(r"class_report\.csv already exist; choose another --out or add --force",
                     capsys.readouterr().err)  # fmt: skip
    assert (tmp_path / "class_report.csv").read_text() == "the teacher's own notes"
    assert class_report.main(["--homes", str(tmp_path), "--out", str(tmp_path), "--force"]) == 0
