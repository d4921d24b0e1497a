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
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from attention import language

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ROOT / "attention" / "exercises"
MODULES = tuple(f"lesson{n:02d}" for n in range(1, 21))  # the checkers of lesson n
# modules whose own print sites (not the kit's) pass every line through translate()
PRINTING = (
    "attention/exercises/lesson16.py",  # use_pieces, yours_or_course
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
# pairs of names in lesson16.py that are keys, not messages: the slips only sampling shows, the
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
    """Lesson 16's checkers name a slip as f"{name}: {fix}" (compare.SLIPS) and a wrong
    generation loop as f"{what}: {fix}" (lesson16.LOOP_SLIPS); the report lists SUSPECTS."""
    from attention.exercises.lesson16 import LOOP_SLIPS
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


LESSONS_16_20 = ("lesson16", "lesson17", "lesson18", "lesson19", "lesson20")


def _wrong_answers() -> list:
    """pytest.param(module, test, its arguments) for the first and the last case of every
    parametrised test of lessons 16-20's checkers: each case is a wrong answer (and the
    mistake it should name, which the stand-in below does not read)."""
    cases = []
    for lesson in LESSONS_16_20:
        module = importlib.import_module(f"tests.exercises.test_{lesson}")
        for name, test in vars(module).items():
            marks = [m for m in getattr(test, "pytestmark", []) if m.name == "parametrize"]
            if not name.startswith("test_") or len(marks) != 1:
                continue
            argnames, argvalues = marks[0].args[:2]
            if isinstance(argnames, str):
                argnames = [a.strip() for a in argnames.split(",")]
            for i in sorted({0, len(argvalues) - 1}):  # the first and the last: a fast test
                values = getattr(argvalues[i], "values", argvalues[i])  # a pytest.param
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


ENGLISH_WORDS = re.compile(
    r"\b(the|your|yours|not|using|said|says|given|unfinished|small|input|returned|expected|"
    r"layer|step|difference|matches|slips|entries|lesson|tried|passed|line|skipped)\b"
)


def _chinese_lines(out: str) -> list[str]:
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines, "nothing was printed"
    for line in lines:
        row = re.fullmatch(r"[\w.]+( +\d+)+", line)  # a row of progress()'s table
        assert row or re.search(r"[\u4e00-\u9fff]", line), f"no Chinese in {line!r}"
        assert not ENGLISH_WORDS.search(line), f"English left in {line!r}"
    return lines


def test_use_pieces_and_yours_or_course_speak_chinese(zh, capsys) -> None:
    from attention.exercises import lesson16 as C
    from attention.exercises.solutions import lesson16 as S
    from tests.exercises.slips16 import SLIPPED

    def my_rope(x, positions, base):
        raise NotImplementedError

    def my_swiglu(x, w_gate, w_up, w_down):
        return x[..., :1]  # another shape than the course's

    layer_norm = SLIPPED["LayerNorm (mean subtracted) instead of RMSNorm"][1]
    before = language.missing()
    C.use_pieces(rms_norm=layer_norm, rope=my_rope, swiglu=my_swiglu)
    C.yours_or_course(layer_norm, S.solution_rms_norm, C.check_rms_norm)
    C.yours_or_course(S.solution_rms_norm, S.solution_rms_norm, C.check_rms_norm)
    lines = _chinese_lines(capsys.readouterr().out)
    assert language.missing() - before == set()
    assert lines[0] == "你的部件： rms_norm"
    assert "rope（my_rope 还没写完）" in lines[1] and "causal_mask（未提供）" in lines[1]
    assert "swiglu（在一个小输入上返回了 (1, 3, 1)，应为 (1, 3, 24)）" in lines[1]
    assert lines[2].startswith("检查未通过，但仍然使用： rms_norm（check_rms_norm 的结论：还不对：")
    assert lines[-2].startswith("使用课程的 solution_rms_norm：check_rms_norm 对你的 layer_norm")
    assert lines[-1] == "使用你的 solution_rms_norm（它通过了 check_rms_norm）"


def test_the_debuggers_report_speaks_chinese(zh) -> None:
    import torch

    from attention.models.pretrained import compare as D

    shape_gap = D._gap(torch.zeros(2, 3), torch.zeros(3, 2), 1e-3)  # its detail: another shape
    recorder = D._Recorder(D.COURSE.replace(attention=lambda q, k, v, mask: q), n_layers=1)
    recorder.layer = 0
    with pytest.raises(D.PieceError) as error:  # a piece that returns one tensor, not a pair
        recorder.pieces.attention(*(torch.zeros(1, 2, 3, 4),) * 3, torch.ones(3, 3, dtype=bool))
    mask = "the causal mask off by one (the diagonal excluded)"
    reports = [
        D.Comparison(None, (), (), 1.2e-6, None, 1e-3),
        D.Comparison(None, (), (), None, str(error.value), 1e-3),
        D.Comparison(
            D.Gap("whole text", 0, "mask", 12.0, 1.0, (0, 2), "", piece="causal_mask"),
            (mask,),
            D.SUSPECTS["causal_mask"],
            0.5,
            None,
            1e-3,
        ),
        D.Comparison(
            D.Gap("with the cache", 1, "q_rope", 0.3, 2.0, (0, 1, 2, 3), "", piece="rope"),
            (),
            D.SUSPECTS["rope"],
            0.5,
            None,
            1e-3,
        ),
        D.Comparison(D.Gap("whole text", None, "logits", *shape_gap), (), (), None, None, 1e-3),
    ]
    before = language.missing()
    lines = _chinese_lines("\n".join(str(r) for r in reports))
    assert language.missing() - before == set()
    assert "  吻合：因果掩码差了一位（把对角线排除了）：查询 i 可以看到键 i 自己：j <= i" in lines
    assert "  rope 中常见的失误： 用了另一种 RoPE 布局（前后两半）；RoPE 转反了方向；" in "\n".join(
        lines
    )
    assert (
        "第一处差异：层 1，步骤 'q_rope'（借助缓存）：最大差值 0.3，位于 (0, 1, 2, 3)"
        in "\n".join(lines)
    )


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def test_progress_speaks_chinese_in_columns(zh, capsys, monkeypatch, tmp_path) -> None:
    """The records keep the English verdict (the teacher's table counts it); progress() shows
    it in Chinese, the columns lined up as a terminal shows CJK characters (two columns)."""
    from attention import exercises as E
    from attention.exercises import records
    from attention.exercises.solutions import lesson17 as S

    monkeypatch.setenv(records.RECORDS_ENV, str(tmp_path))
    E.check_toy_induction_score(S.solution_toy_induction_score)
    E.check_batch_previous_token_score(
        lambda w: w.diagonal(0, -2, -1).mean((0, -1))
    )  # the diagonal
    with records.records_file().open("a", encoding="utf-8") as f:
        f.write('{"exercise": 3}\n')  # a damaged line
    capsys.readouterr()
    before = language.missing()
    records.progress()
    lines = _chinese_lines(capsys.readouterr().out)
    assert language.missing() - before == set()
    assert lines[0].endswith("第 3 行：exercise：应为字符串，却得到了 int；已跳过这一行")
    header, lesson, open_one = lines[1:]
    assert header.split() == ["课", "尝试", "通过", "共"] and _width(header) == _width(lesson) == 45
    assert lesson.split() == ["17_induction_heads", "2", "1", "5"]
    assert open_one.startswith("    尚未通过： check_batch_previous_token_score: 你算的是对角线")
    assert "you counted the diagonal" in records.records_file().read_text(encoding="utf-8")
