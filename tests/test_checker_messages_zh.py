"""Every message the checkers of lessons 1-20 can print has a Chinese entry (issue 41).

The messages are read from the checker modules' source (ast), not by running them: the
arguments of Wrong(...), the message half of every (wrong result, message) tuple of a table
of mistakes, the success= text of @checker, the what= and hint= texts that checkers put in
front of or after a message, and the kit's own lines (attention/exercises/_checking.py). A
plain string needs an exact entry in attention/language/zh.toml; an f-string needs a template
whose literal parts are the same ("expected {e}, got {g}" for f"expected {x}, got {y}").
The lines that lesson 16's use_pieces, the debugger's report and progress() print go through
translate(): every text passed to it is read the same way. Then a learner's session in
Chinese: every named mistake of lessons 16-20 that their tests build, the named slips of
your own SmolLM2, use_pieces, the debugger's report and progress(), with nothing left in
English (attention.language.missing()).
"""

from __future__ import annotations

import ast
import importlib
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from attention import language

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "attention" / "exercises"
MODULES = (
    *("basics", "pooling", "models", "modern", "training", "blocks", "masks_heads"),
    *("capstone", "induction", "interventions", "after2024", "masks_you_write"),
)
# modules whose own print sites (not the kit's) pass every line through translate()
PRINTING = (
    "attention/exercises/capstone.py",  # use_pieces, yours_or_course
    "attention/exercises/records.py",  # progress() and its lines, the note when nothing is saved
    "attention/models/pretrained/compare.py",  # the debugger's report, str(compare(...))
)
KIT = "_checking"
CATALOG = ROOT / "attention" / "language" / "zh.toml"
HOLE = "{}"  # where an f-string's value or a template's placeholder stands
# kit functions whose returned text is printed (the verdict lines and their parts)
KIT_TEXTS = {"_too_slow", "raised", "first_difference", "_verdict", "scale_mistakes"}
# keyword arguments whose text is printed with a message
MESSAGE_KEYWORDS = {"what", "hint", "success"}
# texts in a pair that are data, not messages: the chat a checker feeds the learner's function
NOT_MESSAGES = {"Why is the sky blue?"}
# pairs of names in capstone.py that are keys, not messages: the slips only sampling shows, the
# pieces that take the other pieces
NOT_MESSAGES |= {"greedy always", "block"}


def _skeletons(node: ast.AST | None, names: dict[str, list[ast.AST]]) -> Iterator[str]:
    """The texts a string expression can produce, with HOLE for every formatted value."""
    if node is None:
        return
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.JoinedStr):
        yield "".join(v.value if isinstance(v, ast.Constant) else HOLE for v in node.values)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = list(_skeletons(node.left, names)) or [HOLE]
        right = list(_skeletons(node.right, names)) or [HOLE]
        yield from (a + b for a in left for b in right)
    elif isinstance(node, ast.IfExp):
        yield from _skeletons(node.body, names)
        yield from _skeletons(node.orelse, names)
    elif isinstance(node, ast.Name):  # every text the module ever assigns to that name
        for value in names.get(node.id, ()):
            yield from _skeletons(value, {})
    elif isinstance(node, ast.Call):  # _prefixed(what, "message"), raised(fn, e) + hint, ...
        for arg in node.args[1:] if _called(node) == "_prefixed" else node.args:
            yield from _skeletons(arg, names)


def _called(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, (ast.Constant, ast.JoinedStr)) and (
        not isinstance(node, ast.Constant) or isinstance(node.value, str)
    )


def messages(path: Path) -> dict[str, int]:
    """Skeleton -> line of every message the module can print."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):  # a message kept in a variable first
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and list(_skeletons(node.value, {})):
                names.setdefault(target.id, []).append(node.value)
    found: dict[str, int] = {}

    def add(expr: ast.AST, line: int) -> None:
        for text in _skeletons(expr, names):
            if re.search(r"[A-Za-z]{2,}", text.replace(HOLE, " ")) and text not in NOT_MESSAGES:
                found.setdefault(text, line)

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if _called(node) == "Wrong":
                for arg in node.args:
                    add(arg, node.lineno)
            if _called(node) == "checker":
                for arg in node.args:
                    add(arg, node.lineno)
            for kw in node.keywords:
                if kw.arg in MESSAGE_KEYWORDS:
                    add(kw.value, node.lineno)
        elif isinstance(node, ast.Tuple) and len(node.elts) == 2:
            message = node.elts[1]  # (the wrong result, the message naming the mistake)
            if _is_text(message) or isinstance(message, (ast.BinOp, ast.Name)):
                if isinstance(message, ast.Name) and message.id not in names:
                    continue
                add(message, node.lineno)
        elif isinstance(node, ast.FunctionDef) and node.name in KIT_TEXTS:
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and inner.value is not None:
                    value = inner.value  # (outcome, message): the message
                    add(value.elts[-1] if isinstance(value, ast.Tuple) else value, inner.lineno)
    return found


def _catalog_skeletons() -> tuple[set[str], set[str]]:
    entries = tomllib.loads(CATALOG.read_text(encoding="utf-8"))
    exact = {k for k in entries if not re.search(r"\{\w*\}", k)}
    templates = {re.sub(r"\{\w*\}", HOLE, k) for k in entries if re.search(r"\{\w*\}", k)}
    return exact, templates


@pytest.mark.parametrize("module", [*MODULES, KIT])
def test_every_checker_message_has_a_chinese_entry(module: str) -> None:
    found = messages(EXERCISES / f"{module}.py")
    assert found, f"{module}: no messages found; has the checkers' form changed?"
    exact, templates = _catalog_skeletons()
    missing = [
        f"  line {line}: {text!r}"
        for text, line in sorted(found.items(), key=lambda kv: kv[1])
        if text not in (templates if HOLE in text else exact)
    ]
    assert not missing, (
        f"attention/exercises/{module}.py: messages without an entry in"
        " attention/language/zh.toml (an f-string's value is {name} in a template):\n"
        + "\n".join(missing)
    )


def test_the_extraction_finds_every_kind_of_message(tmp_path: Path) -> None:
    source = tmp_path / "demo.py"
    source.write_text(
        "note = 'a kept message'\n"
        "@checker(success='all right')\n"
        "def check(fn):\n"
        "    mistakes = [(1, f'you used {x} twice'), (2, note)]\n"
        "    compare(got, want, mistakes, what='final state')\n"
        "    raise Wrong(_prefixed(what, f'expected {a}, got {b}') + ' again')\n"
    )
    assert set(messages(source)) == {
        "a kept message",
        "all right",
        "you used {} twice",
        "final state",
        "expected {}, got {} again",
    }


@pytest.fixture
def zh(monkeypatch):
    monkeypatch.setenv(language.ENV, "zh")


def _sums_everything(x):
    return x.exp() / x.exp().sum()  # over the whole tensor, not each row


def _over_columns(x):
    return x.softmax(dim=0)  # a named mistake: each column sums to 1


def _stub(x):
    raise NotImplementedError


VERDICTS = {
    "right": (lambda x: x.softmax(dim=-1), "正确："),
    "wrong value": (_sums_everything, "还不对："),
    "named mistake": (_over_columns, "还不对："),
    "not attempted": (_stub, "尚未作答："),
}


@pytest.mark.parametrize("case", VERDICTS)
def test_a_printed_verdict_reads_in_chinese(zh, capsys, case) -> None:
    """What a checker prints (the kit passes it through translate()) is Chinese."""
    from attention.exercises import check_softmax

    fn, chinese = VERDICTS[case]
    before = language.missing()
    check_softmax(fn)
    line = capsys.readouterr().out.strip()
    assert line.startswith(chinese), line
    assert not re.search(r"\b(the|you|of|not|row|sum|each|over|write|run|cell)\b", line), line
    assert language.missing() - before == set()


# --- lessons 16-20: the lines printed outside the kit, and a learner's session in Chinese ------


def translated(path: Path) -> dict[str, int]:
    """Skeleton -> line of every text the module passes to translate()."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and list(_skeletons(node.value, {})):
                names.setdefault(target.id, []).append(node.value)
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) == "translate" and node.args:
            for text in _skeletons(node.args[0], names):
                if re.search(r"[A-Za-z]{2,}", text.replace(HOLE, " ")):
                    found.setdefault(text, node.lineno)
    return found


@pytest.mark.parametrize("path", PRINTING)
def test_every_line_printed_outside_the_kit_has_a_chinese_entry(path: str) -> None:
    found = translated(ROOT / path)
    assert len(found) >= 5, f"{path}: fewer texts through translate() than expected"
    exact, templates = _catalog_skeletons()
    missing = [
        f"  line {line}: {text!r}"
        for text, line in sorted(found.items(), key=lambda kv: kv[1])
        if text not in (templates if HOLE in text else exact)
    ]
    assert not missing, f"{path}: texts without an entry in zh.toml:\n" + "\n".join(missing)


def test_every_named_slip_of_your_own_smollm2_has_a_chinese_entry() -> None:
    """capstone's checkers name a slip as f"{name}: {fix}" (compare.SLIPS) and a wrong
    generation loop as f"{what}: {fix}" (capstone.LOOP_SLIPS); the report lists SUSPECTS."""
    from attention.exercises.capstone import LOOP_SLIPS
    from attention.models.pretrained.compare import SLIPS, SUSPECTS

    exact, templates = _catalog_skeletons()
    lacking = [f"exact {n!r}" for n in SLIPS if n not in exact]
    lacking += [f"exact {fix!r}" for fix in SLIPS.values() if fix not in exact]
    lacking += [f"template {n + ': {fix}'!r}" for n in SLIPS if f"{n}: {HOLE}" not in templates]
    lacking += [
        f"template {'{what}: ' + f!r}"
        for f in LOOP_SLIPS.values()
        if f"{HOLE}: {f}" not in templates
    ]
    lacking += [f"exact {s!r}" for names in SUSPECTS.values() for s in names if s not in exact]
    assert not lacking, "zh.toml lacks:\n" + "\n".join(lacking)


LESSONS_16_20 = ("capstone", "induction", "interventions", "after2024", "masks_you_write")


def _wrong_answers() -> list:
    """pytest.param(module, test, its arguments) for every case of the parametrised tests of
    lessons 16-20's checkers: each case is a wrong answer and the mistake it should name."""
    cases = []
    for lesson in LESSONS_16_20:
        module = importlib.import_module(f"tests.test_exercises_{lesson}")
        for name, test in vars(module).items():
            marks = [m for m in getattr(test, "pytestmark", []) if m.name == "parametrize"]
            if not name.startswith("test_") or len(marks) != 1:
                continue
            argnames, argvalues = marks[0].args[:2]
            if isinstance(argnames, str):
                argnames = [a.strip() for a in argnames.split(",")]
            for i, values in enumerate(argvalues):
                values = getattr(values, "values", values)  # a pytest.param
                values = values if len(argnames) > 1 else (values,)
                kwargs = dict(zip(argnames, values, strict=True))
                cases.append(pytest.param(module, test, kwargs, id=f"{lesson}-{name}-{i}"))
    return cases


class _Heard(Exception):
    """The check has answered; the English assertions of the test that called it are skipped."""


@pytest.mark.parametrize(("module", "test", "kwargs"), _wrong_answers())
def test_a_learners_session_in_chinese_leaves_nothing_in_english(
    module, test, kwargs, zh, capsys, monkeypatch, tmp_path
) -> None:
    """Each wrong answer of lessons 16-20's tests, checked in Chinese: the verdict is "还不对"
    and every text in it has an entry (the catalog's missing() does not grow)."""
    monkeypatch.setenv("ATTENTION_COURSE_RECORDS", str(tmp_path))
    heard = []

    def stand_in(check, fn, *rest):  # the test's wrong_answer(check, fn, message, capsys) or run
        before = language.missing()
        ok = check(fn)
        heard.append((ok, capsys.readouterr().out.strip(), language.missing() - before))
        raise _Heard

    monkeypatch.setattr(module, "wrong_answer", stand_in, raising=False)
    monkeypatch.setattr(module, "run", stand_in, raising=False)
    with pytest.raises(_Heard):
        test(**kwargs, capsys=capsys)
    ((ok, out, left),) = heard
    assert ok is False and out.startswith("还不对："), out
    assert not left, f"left in English: {sorted(left)}\nprinted: {out}"
