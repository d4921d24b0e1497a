"""The class's mistakes at a glance: every student's records gathered into a table per exercise.

    python -m attention.exercises.class_report --homes /home --out ~/report
    python -m attention.exercises.class_report /home/ada/.attention-course /srv/bob --out report

Each student's checkers write their own `records.jsonl` (see `records`); on a hub the teacher
(as root, or a user who may read the homes) collects them: `--homes ROOT` reads
ROOT/*/.attention-course/records.jsonl, one student per home, and folders (or files) named on
the command line add one student each. Per exercise the table gives how many students tried it
(ran its check with a function written), how many passed, how many tried and have not passed
yet, the most frequent named mistakes with the number of students who made each (a student who
made one mistake five times counts once), and how many students got another wrong answer.
It writes class_report.csv and class_report.html (one page, no script, nothing fetched from
elsewhere) into --out and prints the table. A missing, unreadable or damaged file, or a damaged
line, gets one line in the output and on the page; the rest is counted. Students' names are not
written: the table holds counts only.
"""

from __future__ import annotations

import argparse
import csv
import html
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .records import EXERCISE_LESSON, FILE_NAME, read_records

__all__ = ["ClassTable", "ExerciseRow", "collect", "find_sources", "main"]

COURSE_FOLDER = ".attention-course"
OUTPUTS = ("class_report.csv", "class_report.html")


@dataclass(frozen=True)
class ExerciseRow:
    """One exercise across the class."""

    exercise: str
    lesson: str | None
    tried: int  # students who ran the check on a function they wrote
    passed: int  # students with at least one pass
    mistakes: tuple[tuple[str, int], ...]  # (named mistake, students who made it), most first
    other_wrong: int  # students with a wrong answer that no known mistake names

    @property
    def not_passed(self) -> int:
        return self.tried - self.passed


@dataclass
class ClassTable:
    """The table, and what could not be read."""

    rows: list[ExerciseRow]
    students: int  # students whose records were looked for
    with_records: int  # of them, how many had at least one record
    n_records: int
    problems: list[str] = field(default_factory=list)


def find_sources(homes: Path | None = None, folders: Sequence[Path] = ()) -> list[tuple[str, Path]]:
    """(student, records file) for each home under `homes` and each folder or file given.

    A folder named .attention-course is named after the home that holds it; another folder
    after itself; a file after the folder that holds it.
    """
    sources: list[tuple[str, Path]] = []
    if homes is not None:
        if not homes.is_dir():
            raise ValueError(f"--homes: expected a folder of home folders, got {str(homes)!r}")
        for home in sorted(homes.iterdir()):
            try:
                if home.is_dir():
                    sources.append((home.name, home / COURSE_FOLDER / FILE_NAME))
            except OSError:  # a home we may not even look at: read_records says so
                sources.append((home.name, home / COURSE_FOLDER / FILE_NAME))
    for folder in folders:
        path = folder if folder.suffix == ".jsonl" else folder / FILE_NAME
        owner = path.parent
        name = owner.parent.name if owner.name == COURSE_FOLDER else owner.name
        sources.append((name or str(owner), path))
    return sources


def collect(sources: Iterable[tuple[str, Path]], top: int = 3) -> ClassTable:
    """Read every student's records and count, per exercise, students who tried, passed, erred."""
    tried: dict[str, set[str]] = defaultdict(set)
    passed: dict[str, set[str]] = defaultdict(set)
    named: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    other: dict[str, set[str]] = defaultdict(set)
    lessons: dict[str, str | None] = dict(EXERCISE_LESSON)
    problems: list[str] = []
    students, with_records, n_records = set(), set(), 0
    missing = 0
    for student, path in sources:
        students.add(student)
        records, trouble = read_records(path)
        if trouble and not records and "does not exist" in trouble[0]:
            missing += 1  # a student who never ran a check: normal, summed up below
            continue
        problems += trouble
        n_records += len(records)
        with_records.update([student] if records else [])
        for r in records:
            lessons.setdefault(r.exercise, r.lesson)
            if r.outcome == "not attempted":
                continue
            tried[r.exercise].add(student)
            if r.outcome == "passed":
                passed[r.exercise].add(student)
            elif r.outcome == "mistake":
                named[r.exercise][r.message].add(student)
            else:
                other[r.exercise].add(student)
    if missing:
        problems.append(f"{missing} student(s) have no records file yet (no check run)")
    rows = []
    for exercise, lesson in sorted(lessons.items(), key=lambda item: _order(item, lessons)):
        counts = Counter({m: len(who) for m, who in named[exercise].items()})
        ranked = sorted(counts.items(), key=lambda mc: (-mc[1], mc[0]))[:top]
        rows.append(
            ExerciseRow(
                exercise, lesson, len(tried[exercise]), len(passed[exercise]), tuple(ranked),
                len(other[exercise]),
            )
        )  # fmt: skip
    return ClassTable(rows, len(students), len(with_records), n_records, problems)


def _order(item: tuple[str, str | None], lessons: dict[str, str | None]) -> tuple:
    exercise, lesson = item
    course = list(EXERCISE_LESSON)
    place = course.index(exercise) if exercise in course else len(course)
    return (lesson is None, lesson or "", place, exercise)


def _mistakes_text(row: ExerciseRow) -> str:
    return "; ".join(f"{m} ({n})" for m, n in row.mistakes)


def write_csv(table: ClassTable, path: Path, top: int = 3) -> None:
    """One row per exercise; mistake_1..top and their students in columns of their own."""
    header = ["lesson", "exercise", "tried", "passed", "not_passed", "other_wrong"]
    for i in range(1, top + 1):
        header += [f"mistake_{i}", f"mistake_{i}_students"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for r in table.rows:
            cells: list[object] = [r.lesson or "", r.exercise, r.tried, r.passed, r.not_passed]
            cells.append(r.other_wrong)
            for i in range(top):
                cells += list(r.mistakes[i]) if i < len(r.mistakes) else ["", ""]
            writer.writerow(cells)


def write_html(table: ClassTable, path: Path) -> None:
    """The table as one self-contained page."""
    e = html.escape
    rows = []
    for r in table.rows:
        mistakes = "".join(f"<li>{e(m)} <b>({n})</b></li>" for m, n in r.mistakes)
        rows.append(
            f"<tr><td>{e(r.lesson or '')}</td><td><code>{e(r.exercise)}</code></td>"
            f"<td>{r.tried}</td><td>{r.passed}</td><td>{r.not_passed}</td>"
            f"<td><ul>{mistakes}</ul></td><td>{r.other_wrong}</td></tr>"
        )
    problems = "".join(f"<li>{e(p)}</li>" for p in table.problems)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>The class's exercises</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #999;padding:4px 8px;vertical-align:top;text-align:left}}
ul{{margin:0;padding-left:1.2em}}</style></head><body>
<h1>The class's exercises</h1>
<p>{table.students} students, {table.with_records} with records, {table.n_records} checks
recorded; made {stamp}. <i>Tried</i>: students who ran the check on a function they wrote;
a mistake's number is the students who made it at least once.</p>
<table><thead><tr><th>lesson</th><th>exercise</th><th>tried</th><th>passed</th>
<th>tried, not passed yet</th><th>most frequent named mistakes (students)</th>
<th>other wrong answers (students)</th></tr></thead><tbody>
{"".join(rows)}
</tbody></table>
{"<h2>Not counted</h2><ul>" + problems + "</ul>" if problems else ""}
</body></html>
"""
    path.write_text(page, encoding="utf-8")


def print_table(table: ClassTable) -> None:
    print(
        f"{table.students} students, {table.with_records} with records, "
        f"{table.n_records} checks recorded"
    )
    print(f"{'lesson':24} {'exercise':32} {'tried':>5} {'passed':>6}  most frequent mistakes")
    for r in table.rows:
        if r.tried:
            print(
                f"{(r.lesson or '')[:24]:24} {r.exercise:32} {r.tried:>5} {r.passed:>6}  "
                f"{_mistakes_text(r)[:120]}"
            )
    for problem in table.problems:
        print(f"not counted: {problem}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, help="a student's records folder or file")
    parser.add_argument("--homes", type=Path, help="a folder of homes, e.g. /home")
    parser.add_argument("--out", type=Path, default=Path("."), help="where the CSV and page go")
    parser.add_argument("--top", type=int, default=3, help="named mistakes per exercise")
    parser.add_argument("--force", action="store_true", help="replace an earlier report")
    args = parser.parse_args(argv)
    if args.homes is None and not args.folders:
        parser.error("expected --homes ROOT or at least one student's folder, got neither")
    if args.top < 1:
        parser.error(f"--top: expected a positive number of mistakes, got {args.top}")
    targets = [args.out / name for name in OUTPUTS]
    existing = [str(t) for t in targets if t.exists()]
    if existing and not args.force:
        parser.error(f"{', '.join(existing)} already exist; choose another --out or add --force")
    try:
        sources = find_sources(args.homes, args.folders)
    except ValueError as exc:
        parser.error(str(exc))
    table = collect(sources, args.top)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(table, targets[0], args.top)
    write_html(table, targets[1])
    print_table(table)
    print(f"wrote {targets[0]} and {targets[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
