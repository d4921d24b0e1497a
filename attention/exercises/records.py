"""The learner's own record of every check: what was tried, what passed, which mistake was named.

Every checker verdict appends one line of JSON to `records.jsonl` in the learner's course
folder, `~/.attention-course/` unless the environment variable ATTENTION_COURSE_RECORDS names
another folder ("off" records nothing):

    {"exercise": "check_attention", "lesson": "04_scaled_dot_product", "outcome": "mistake",
     "message": "you divided by d_k = 8 itself; divide by its square root",
     "time": "2026-11-27T08:00:00Z"}

outcome is "passed", "mistake" (a known misconception, named by the checker's table of
mistakes), "wrong" (any other "Not yet") or "not attempted" (the stub still raises
NotImplementedError). Nothing leaves the folder unless a teacher collects it
(`python -m attention.exercises.class_report`). Writing never breaks a check: a folder that
cannot be written gets one note per kernel and the verdict is printed as always.

`progress()` prints the learner's own table: per lesson, the exercises tried and passed, and
the ones still open with their last verdict (`from attention.exercises.records import
progress`). A damaged or missing file, or a damaged line, is reported in one clear line, never a
crash.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import pkgutil
import re
import time
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..language import translate

__all__ = [
    "EXERCISE_LESSON",  # noqa: F822 - made on first use, by __getattr__ below
    "OUTCOMES",
    "RECORDS_ENV",
    "Record",
    "exercise_lessons",
    "progress",
    "read_records",
    "record",
    "records_file",
]

RECORDS_ENV = "ATTENTION_COURSE_RECORDS"
FILE_NAME = "records.jsonl"
OUTCOMES = ("passed", "mistake", "wrong", "not attempted")
MAX_MESSAGE = 500  # characters of a verdict kept in a record


@functools.cache
def exercise_lessons() -> dict[str, str]:
    """Each checker's name -> its lesson: the LESSON of the module lessonNN that defines it.

    In course order (lesson by lesson, each module's in the order it defines them); a checker
    used by two lessons lives in the first one's module. Read on first use: the lesson
    modules import the kit, which imports this module.
    """
    package = importlib.import_module(__package__)
    table: dict[str, str] = {}
    for name in sorted(m.name for m in pkgutil.iter_modules(package.__path__)):
        if re.fullmatch(r"lesson\d\d", name):
            module = importlib.import_module(f"{__package__}.{name}")
            checkers = [n for n in vars(module) if n.startswith("check_") and n in module.__all__]
            table.update(dict.fromkeys(checkers, module.LESSON))  # in the order they are defined
    return table


def __getattr__(name: str) -> dict[str, str]:
    """EXERCISE_LESSON: each checker and its lesson (exercise_lessons), a checker missing from it
    is still recorded, with lesson None."""
    if name == "EXERCISE_LESSON":
        return exercise_lessons()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Record:
    """One checker verdict."""

    exercise: str  # the checker's name, e.g. "check_attention"
    outcome: str  # one of OUTCOMES
    message: str  # the verdict as printed, without "Correct: " / "Not yet: "
    time: str  # UTC, ISO 8601 ("2026-11-27T08:00:00Z")
    lesson: str | None = None  # "04_scaled_dot_product"; None for a checker outside the course


def records_file() -> Path | None:
    """Where this learner's records go: $ATTENTION_COURSE_RECORDS/records.jsonl, by default
    ~/.attention-course/records.jsonl; None when the variable is "off"."""
    folder = os.environ.get(RECORDS_ENV, "").strip()
    if folder.lower() == "off":
        return None
    return Path(folder or Path.home() / ".attention-course").expanduser() / FILE_NAME


_warned: list[str] = []  # a note per kernel, not one per check


def record(exercise: str, outcome: str, message: str) -> None:
    """Append one verdict to the learner's records; never raises (a note instead, once)."""
    try:
        path = records_file()
        if path is None:
            return
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome: expected one of {OUTCOMES}, got {outcome!r}")
        line = json.dumps(
            {
                "exercise": exercise,
                "lesson": exercise_lessons().get(exercise),
                "outcome": outcome,
                "message": message[:MAX_MESSAGE],
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            ensure_ascii=False,
        )
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # one write of one line in append mode: two kernels writing at once do not interleave
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)
    except Exception as exc:  # noqa: BLE001 - a record is a convenience, the verdict is not
        if not _warned:
            _warned.append(str(exc))
            print(
                translate(
                    f"(your progress was not saved: {type(exc).__name__}: {exc}; set "
                    f"{RECORDS_ENV} to a folder you can write, or to off)"
                )
            )


def _parse(line: str) -> Record:
    """One line of a records file -> Record; ValueError saying what is wrong with it."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    fields = {"exercise": str, "outcome": str, "message": str, "time": str}
    for name, kind in fields.items():
        if not isinstance(data.get(name), kind):
            got = type(data[name]).__name__ if name in data else "nothing"
            raise ValueError(f"{name}: expected a string, got {got}")
    if data["outcome"] not in OUTCOMES:
        raise ValueError(f"outcome: expected one of {', '.join(OUTCOMES)}, got {data['outcome']!r}")
    lesson = data.get("lesson")
    if lesson is not None and not isinstance(lesson, str):
        raise ValueError(f"lesson: expected a string or null, got {type(lesson).__name__}")
    return Record(data["exercise"], data["outcome"], data["message"], data["time"], lesson)


def read_records(path: str | os.PathLike[str]) -> tuple[list[Record], list[str]]:
    """Every record of a file, and one line per problem (missing, unreadable, damaged lines).

    A damaged line is skipped and named ("records.jsonl line 3: not JSON ..."); the others
    are read. Never raises for what is in or around the file.
    """
    path = Path(path)
    try:
        if not path.exists():
            return [], [f"{path}: no records yet (the file does not exist)"]
        if not path.is_file():
            return [], [f"{path}: expected a file of records, got a folder or another kind of file"]
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:  # a folder we may not enter, a file we may not read
        return [], [f"{path}: cannot be read ({exc.strerror or exc}); no records taken from it"]
    records, problems = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(_parse(line))
        except ValueError as exc:
            problems.append(f"{path} line {number}: {exc}; line skipped")
    return records, problems


def _lesson_order(lesson: str | None) -> tuple[int, str]:
    return (0, lesson) if lesson else (1, "")


def _pad(text: str, width: int, *, right: bool = False) -> str:
    """text padded to `width` columns as a terminal shows them (a CJK character takes two)."""
    shown = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    fill = " " * max(0, width - shown)
    return fill + text if right else text + fill


def progress_lines(records: Iterable[Record]) -> Iterator[str]:
    """The lines `progress` prints for these records, in the chosen language (translate)."""
    last: dict[str, Record] = {}  # exercise -> its latest attempt (not "not attempted")
    passed: set[str] = set()
    for r in records:
        if r.outcome == "not attempted":
            continue
        last[r.exercise] = r
        if r.outcome == "passed":
            passed.add(r.exercise)
    lessons = sorted({r.lesson for r in last.values()}, key=_lesson_order)
    if not lessons:
        yield translate(
            "No exercise tried yet: write a function in a lesson and run its check cell."
        )
        return
    yield " ".join(
        (
            _pad(translate("lesson"), 28),
            _pad(translate("tried"), 5, right=True),
            _pad(translate("passed"), 6, right=True),
            _pad(translate("of"), 3, right=True),
        )
    )
    for lesson in lessons:
        tried = [e for e, r in last.items() if r.lesson == lesson]
        total = sum(1 for v in exercise_lessons().values() if v == lesson) if lesson else len(tried)
        done = sum(e in passed for e in tried)
        name = _pad(lesson or translate("outside the lessons"), 28)
        yield f"{name} {len(tried):>5} {done:>6} {total:>3}"
        for exercise in tried:
            if exercise not in passed:
                # the record keeps the English verdict; it is shown in the chosen language
                message = translate(last[exercise].message)[:100]
                yield f"    {translate('not passed yet:')} {exercise}: {message}"


def progress(path: str | os.PathLike[str] | None = None) -> None:
    """Print your progress: per lesson, the exercises tried and passed, and those still open.

    Args:
        path: a records file; by default yours (see records_file).
    """
    if path is None:
        path = records_file()
        if path is None:
            print(translate(f"Records are off ({RECORDS_ENV}=off): no progress to show."))
            return
    records, problems = read_records(path)
    for problem in problems:
        print(translate(problem))
    for line in progress_lines(records):
        print(line)
