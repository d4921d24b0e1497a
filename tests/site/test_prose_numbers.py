"""Every number a lesson's prose states is one its own run printed.

A decimal number, a percentage or a ratio ("2.5x", "x7.6", "7.6-fold") in a lesson's markdown
must be one of:

1. **printed** by that lesson's run: some number in its executed outputs (streams, text/plain,
   text/markdown, text/html) rounds to it at the prose's precision ("0.30" matches a printed
   0.2996 or 0.30; "about 0.7" matches 0.68), signs aside. A percentage also matches a printed
   fraction ("9%" matches 0.0853) and a decimal a printed percentage ("0.92" matches "92.1%");
2. **asserted or set** in one of its code cells: a literal of an `assert` statement or of a call
   whose name says it checks (`assert_close`, `isclose`, `allclose`, `approx`), or the literal
   value of a keyword argument or an assignment (`lr=3e-3`: a setting), rounds to it;
3. **attributed**: the sentence names a script of this repository that measured it
   ("`benchmarks/flash_memory.py` printed 13.5 MiB"), or
4. **listed below** in EXEMPT (a threshold being defined, a constant of a formula, a name) or in
   COMPUTED (arithmetic this test does itself, e.g. ln 16 = 2.77).

What it cannot see: which printed number a sentence means. A prose number that some other
printed number happens to round to passes (more likely for short numbers, "0.2", "1%", in a
lesson that prints whole tensors); it fails when a number is typed in or edited away from every
printed one, which is the drift it is for.

Machine-dependent figures (a number followed by a unit of time, or in a sentence about speed)
must not be typed at all unless attributed to a script: another machine prints another figure.
Let the cell print it and say "the cell prints ...", or state what does not depend on the machine.
Integers ("16 heads", "1,024 tokens") are not checked; neither are names of heads written
"head 5.11" / "heads 5.11 and 3.1" (layer.head), code spans, code blocks and link targets.

Where the outputs come from: lessons are stored without outputs. When the suite runs them under
nbval, the root conftest.py keeps what each cell printed and runs this test right after the
lesson's last cell, so nothing is executed twice. Run alone (`pytest tests/site/test_prose_numbers.py`)
this test executes each lesson once itself with nbclient, in a kernel of this interpreter.
"""

from __future__ import annotations

import ast
import html
import math
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))

# (lesson stem, a piece of its markdown holding the number) -> why it is not a measurement. The
# piece pins the exemption to one place: edit the number and the exemption no longer applies.
EXEMPT: dict[tuple[str, str], str] = {
    ("02_weighted_averaging", r"\sin(2x_i) + 0.4\,x_i"): "a constant of the toy data's formula",
    ("05_why_sqrt_dk", "largest weight exceeds 0.99"): "the threshold that defines a saturated row",
}

# (lesson stem, a piece of its markdown holding the number) -> a Python expression (math only)
# that this test evaluates and compares with the stated number at its precision.
COMPUTED: dict[tuple[str, str], str] = {
    ("05_why_sqrt_dk", r"$1/16 \approx 0.06$"): "1 / 16",
    ("09_positional_encoding", r"$2\pi \approx 6.3$"): "2 * pi",
    ("10_transformer_block", r"$\ln 16 \approx 2.77$"): "log(16)",
    ("10_transformer_block", "one table is 38.6 M parameters"): "50257 * 768 / 1e6",
}

# A number as prose writes it: thousands separators ("1,024", LaTeX's "50{,}257"), a decimal
# part, then % or a ratio's x; "x7.6" and "7.6-fold" are ratios too. Not inside a word or a
# version string ("v2.1", "2.13.0"), not "6 x 12" (a product of sizes).
_NUMBER = re.compile(
    r"(?<![\w.,])(?P<times>[×x]\s?)?(?P<sign>[-−])?"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?(?![\d]|\.\d|,\d{3})"
    r"(?P<suffix>\s?\\?%|\s?per\s?cent\b|\s?[x×](?![\w\d]|\s\d)|-fold\b"
    r"|\s+times(?=\s+(?:as|the|more|less|larger|smaller|faster|slower|longer|fewer)\b))?"
)
_OUTPUT_NUMBER = re.compile(r"(?<![\d.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:[eE]([-+]?\d+))?(%?)")
_TIME_UNIT = re.compile(
    r"^\s?(s|ms|µs|us|ns|sec|secs|seconds?|milliseconds?|minutes?|min|hours?|h)\b"
    r"|^\s?(tokens?|steps?|it)/s\b"
)
_SPEED_WORDS = re.compile(r"\b(faster|slower|speed-?ups?|quicker|tokens/s|throughput)\b", re.I)
_HEAD_NAMES = re.compile(
    r"\bheads?\s+\d+\.\d+(?:(?:,\s*|\s+and\s+|\s+or\s+|\s*/\s*)\d+\.\d+)*", re.I
)
_SCRIPT = re.compile(r"[\w./-]+\.py\b")
_CHECK_CALL = re.compile(r"assert|isclose|allclose|approx")


@dataclass(frozen=True)
class Stated:
    """One number as the prose states it."""

    text: str  # as written, e.g. "0.30", "9%", "2.5x"
    value: float  # its absolute value, 9 for "9%"
    places: int  # digits after the decimal point
    kind: str  # "decimal", "percent", "ratio" or "time"
    sentence: str  # the sentence it stands in, code spans included
    start: int  # offset in the (normalised) cell source
    end: int


def _mask(pattern: str, text: str, flags: int = 0) -> str:
    """Replace every match by spaces of the same length, keeping offsets."""
    return re.sub(pattern, lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=flags)


def normalise(source: str) -> str:
    """The markdown with LaTeX's thousands separator and the minus sign made plain."""
    return source.replace("{,}", ",").replace("\\!", "")


def prose_only(source: str) -> str:
    """Blank out code blocks, code spans, link targets, URLs and HTML tags (same offsets)."""
    text = _mask(r"```.*?```", source, re.S)
    text = _mask(r"`[^`\n]*`", text)
    text = _mask(r"\]\([^)\s]*\)", text)
    text = _mask(r"https?://\S+", text)
    return _mask(r"<[^>\n]*>", text)


def _sentences(masked: str) -> list[tuple[int, int]]:
    """Spans of sentences: split at . ! ? before a space, at blank lines, list items, rows."""
    cuts = [0]
    for m in re.finditer(r"[.!?](?=\s)|\n\s*\n|\n\s*(?:[-*+]|\d+\.)\s|\n\|", masked):
        cuts.append(m.end() if m.group(0)[0] in ".!?" else m.start())
    cuts.append(len(masked))
    return list(zip(cuts, cuts[1:], strict=False))


def stated_numbers(source: str) -> list[Stated]:
    """Every decimal number, percentage, ratio and time the markdown `source` states."""
    source = normalise(source)
    masked = prose_only(source)
    names = [m.span() for m in _HEAD_NAMES.finditer(masked)]
    spans = _sentences(masked)
    found = []
    for m in _NUMBER.finditer(masked):
        suffix = (m.group("suffix") or "").strip().lstrip("\\")
        after = masked[m.end() : m.end() + 12]
        if m.group("times") or suffix in ("x", "×", "-fold", "times"):
            kind = "ratio"
        elif suffix in ("%", "per cent", "percent"):
            kind = "percent"
        elif m.group("frac"):
            kind = "decimal"
        elif re.match(r"\s?(s|ms|µs|us|ns|sec|seconds?|milliseconds?)\b", after):
            kind = "time"  # an integer time; "about 40 minutes" to read a lesson is not one
        else:
            continue  # an integer
        if m.group("times") and m.group("times").startswith("x") and not m.group("frac"):
            continue  # "x2" is more often a variable than a ratio
        if any(a <= m.start() and m.end() <= b for a, b in names):
            continue  # a head's name, layer.head
        begin, finish = next((a, b) for a, b in spans if a <= m.start() < b)
        if kind != "ratio" and _TIME_UNIT.match(after):
            kind = "time"
        elif _SPEED_WORDS.search(masked[begin:finish]):
            kind = "time"
        frac = m.group("frac") or ""
        value = float(m.group("int").replace(",", "") + frac)
        start = m.start("sign") if m.group("sign") else m.start("int")
        found.append(
            Stated(
                text=source[start : m.end()].strip(),
                value=value,
                places=max(len(frac) - 1, 0),
                kind=kind,
                sentence=" ".join(source[begin:finish].split()),
                start=start,
                end=m.end(),
            )
        )
    return found


def output_text(outputs: list) -> str:
    """All text a cell's outputs show: streams, plain text, markdown, LaTeX, HTML untagged."""
    parts = []
    for out in outputs:
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        data = out.get("data", {})
        for mime in ("text/plain", "text/markdown", "text/latex"):
            if mime in data:
                parts.append(_joined(data[mime]))
        if "text/html" in data:
            page = _joined(data["text/html"])
            untagged = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
            parts.append(html.unescape(re.sub(r"<[^>]+>", " ", untagged)))
    return "\n".join(parts)


def _joined(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def printed_values(text: str) -> list[float]:
    """Absolute values of the numbers in printed text; a percentage also as a fraction."""
    values = []
    for m in _OUTPUT_NUMBER.finditer(text):
        whole, frac, exponent, percent = m.groups()
        number = float(whole.replace(",", "") + (frac or "") + (f"e{exponent}" if exponent else ""))
        values.append(number)
        if "," in whole:  # "1,2" may be a list: keep the parts too
            values += [float(p) for p in whole.split(",")]
        if percent:
            values.append(number / 100)
    return values


def code_values(sources: list[str]) -> list[float]:
    """Numeric literals a lesson's code asserts or sets.

    Asserted: the literals of `assert` statements and of calls whose name says they check
    (assert_close, isclose, allclose, approx). Set: the literal value of a keyword argument or
    of an assignment (`lr=3e-3`, `s = 3.0`), a setting the prose may name.
    """
    values = []
    for source in sources:
        code = "\n".join(
            line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))
        )
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            checking = isinstance(node, ast.Assert) or (
                isinstance(node, ast.Call) and _CHECK_CALL.search(ast.unparse(node.func))
            )
            if checking:
                values += [_number(c) for c in ast.walk(node) if _number(c) is not None]
            elif isinstance(node, ast.keyword | ast.Assign | ast.AnnAssign):
                value = _number(node.value) if node.value is not None else None
                values += [] if value is None else [value]
    return values


def _number(node) -> float | None:
    """The absolute value of a numeric literal (or of its negation), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return None if isinstance(node.value, bool) else abs(float(node.value))
    return None


def rounds_to(stated: Stated, values: list[float]) -> bool:
    """Whether some value rounds to the stated number at the prose's precision."""
    targets = [(stated.value, stated.places)]
    if stated.kind == "percent":
        targets.append((stated.value / 100, stated.places + 2))
    for target, places in targets:
        half = 0.5 * 10.0**-places * (1 + 1e-9)
        if any(abs(v - target) <= half for v in values):
            return True
    return False


def _in_piece(stated: Stated, source: str, piece: str) -> bool:
    piece = normalise(piece)
    return any(
        m.start() <= stated.start and stated.end <= m.end()
        for m in re.finditer(re.escape(piece), source)
    )


def _attributed(stated: Stated) -> bool:
    return any((ROOT / path).is_file() for path in _SCRIPT.findall(stated.sentence))


def unbacked_numbers(
    nb, stem: str, exempt: dict | None = None, computed: dict | None = None
) -> list[str]:
    """Each prose number of an executed notebook that its run does not back, with the reason.

    Args:
        nb: the notebook, its code cells holding this run's outputs.
        stem: the lesson's file name without .ipynb (the key of the exemptions).
        exempt, computed: the exemptions (EXEMPT, COMPUTED by default).
    Returns:
        One line per number, empty when every number is backed.
    """
    exempt = EXEMPT if exempt is None else exempt
    computed = COMPUTED if computed is None else computed
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    printed = printed_values("\n".join(output_text(c.get("outputs", [])) for c in nb.cells))
    in_code = code_values(code)
    problems = []
    for cell in (c for c in nb.cells if c.cell_type == "markdown"):
        source = normalise(cell.source)
        for stated in stated_numbers(cell.source):
            pieces = [p for (s, p) in exempt if s == stem and _in_piece(stated, source, p)]
            formulas = [
                f for (s, p), f in computed.items() if s == stem and _in_piece(stated, source, p)
            ]
            if pieces:
                continue
            if formulas:
                value = abs(eval(formulas[0], {"__builtins__": {}}, vars(math)))  # noqa: S307
                if rounds_to(stated, [value]):
                    continue
                problems.append(f"{stated.text!r}: COMPUTED gives {value!r} ({formulas[0]})")
                continue
            if _attributed(stated):
                continue
            if stated.kind == "time":
                problems.append(
                    f"{stated.text!r} is machine-dependent (a time or a speed): let a cell print"
                    f" it and refer to it in words, or name the script that measured it"
                    f" -- in: {stated.sentence[:160]}"
                )
            elif not (rounds_to(stated, printed) or rounds_to(stated, in_code)):
                problems.append(
                    f"{stated.text!r} is printed by no cell, asserted or set by none, and the"
                    f" sentence names no script -- in: {stated.sentence[:160]}"
                )
    return problems


# --------------------------------------------------------------------------- the lessons


def _execute(path: Path):
    """Run a lesson once, as nbval does: a kernel of this interpreter, in lessons/."""
    from jupyter_client import KernelManager
    from nbclient import NotebookClient
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager

    nb = nbformat.read(path, as_version=4)
    km = KernelManager(
        kernel_name=CURRENT_ENV_KERNEL_NAME, kernel_spec_manager=NbvalKernelspecManager()
    )
    resources = {"metadata": {"path": str(path.parent)}}
    client = NotebookClient(nb, km=km, timeout=600, resources=resources)
    client.execute()
    return nb


def executed(path: Path, lesson_outputs: dict):
    """The lesson with this session's outputs: nbval's when it ran here, else executed now."""
    cells = lesson_outputs.get(str(path))
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if cells is not None:
        failed = sorted(n for n, (outcome, _) in cells.items() if outcome == "failed")
        if failed:
            pytest.fail(f"{path.name}: cell(s) {failed} failed under nbval; numbers not checked")
        if len(cells) == len(code):
            for n, cell in enumerate(code):
                cell.outputs = cells[n][1] or []
            return nb
    return _execute(path)


@pytest.mark.lesson_outputs
@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_prose_number_is_printed_asserted_or_attributed(lesson, lesson_outputs):
    problems = unbacked_numbers(executed(lesson, lesson_outputs), lesson.stem)
    assert not problems, f"{lesson.name}:\n" + "\n".join(problems)


# --------------------------------------------------------------------------- the Chinese lessons

ZH_LESSONS = [p for p in LESSONS if (ROOT / "lessons" / "zh" / p.name).is_file()]
_CJK = r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]"
_ZH_WORDS = [
    ("％", "%"),
    ("毫秒", " ms "),
    ("微秒", " µs "),
    ("秒", " s "),
    ("分钟", " minutes "),
    ("倍", "x "),
    ("。", ". "),
    ("！", "! "),
    ("？", "? "),
]
_ZH_SPEED = re.compile(r"更快|更慢|加速|提速|吞吐|快了|慢了")


def zh_normalise(source: str) -> str:
    """Chinese prose in the shape stated_numbers reads: numbers set apart from the characters
    around them, 倍 as a ratio's x, 秒 and 分钟 as time units, 。 as a sentence's end."""
    text = re.sub(r"头\s*(?=\d+\.\d+)", " head ", source)  # 头 5.11: a head's name, as "head 5.11"
    text = re.sub(r"(?<=\d)\s*和\s*头?\s*(?=\d+\.\d+)", " and ", text)  # 头 5.11 和头 3.1
    text = re.sub(rf"(?<={_CJK})(?=[-−\d])|(?<=[\d%])(?={_CJK})", " ", text)
    for zh, en in _ZH_WORDS:
        text = text.replace(zh, en)
    return _ZH_SPEED.sub(" faster ", text)


def unbacked_chinese_numbers(zh_nb, en_nb, stem: str) -> list[str]:
    """Each number of the Chinese prose that is not backed as the English lesson's would be.

    Backed: stated by the English of the same cell (whose own backing the English test checks),
    or printed, asserted or set by the English lesson's run (the code is the same).
    """
    english = {c.id: c.source for c in en_nb.cells if c.cell_type == "markdown"}
    code = [c for c in en_nb.cells if c.cell_type == "code"]
    problems = []
    for cell in (c for c in zh_nb.cells if c.cell_type == "markdown"):
        stated_en = stated_numbers(english.get(cell.id, ""))
        for stated in stated_numbers(zh_normalise(cell.source)):
            if stated.kind != "time" and rounds_to(stated, [s.value for s in stated_en]):
                continue
            if any(stated.text.replace(" ", "") == s.text for s in stated_en):
                continue  # the same figure as the English states it (a time it attributes)
            alone = nbformat.v4.new_notebook()
            alone.cells = [nbformat.v4.new_markdown_cell(stated.sentence), *code]
            found = [
                p for p in unbacked_numbers(alone, stem, {}, {}) if p.startswith(repr(stated.text))
            ]
            if found:
                problems.append(found[0])
    return problems


@pytest.mark.lesson_outputs
@pytest.mark.parametrize("lesson", ZH_LESSONS, ids=[p.stem for p in ZH_LESSONS])
def test_every_chinese_prose_number_is_backed_by_the_english_run(lesson, lesson_outputs):
    zh = nbformat.read(ROOT / "lessons" / "zh" / lesson.name, as_version=4)
    problems = unbacked_chinese_numbers(zh, executed(lesson, lesson_outputs), lesson.stem)
    assert not problems, f"lessons/zh/{lesson.name}:\n" + "\n".join(problems)


def test_a_chinese_number_not_in_the_english_or_the_run_is_flagged():
    en = _notebook("The weight is 0.30, 9% saturate.", "print(...)", "0.2996 0.0853\n")
    en.cells[0].id, en.cells[1].id = "c1", "c2"
    zh = nbformat.v4.new_notebook()
    zh.cells = [nbformat.v4.new_markdown_cell("权重是0.30，有 9％ 饱和，快了 2.5 倍。")]
    zh.cells[0].id = "c1"
    problems = unbacked_chinese_numbers(zh, en, "x")
    assert len(problems) == 1 and "'2.5 x'" in problems[0] and "machine-dependent" in problems[0]
    zh.cells[0].source = "头 5.11 和头 3.1 的权重是 0.31，有 9% 饱和。"  # heads' names are names
    problems = unbacked_chinese_numbers(zh, en, "x")
    assert len(problems) == 1 and problems[0].startswith("'0.31'"), problems


def test_every_exemption_is_used():
    """A stale exemption (its piece no longer in the lesson) would hide nothing: drop it."""
    for stem, piece in [*EXEMPT, *COMPUTED]:
        path = ROOT / "lessons" / f"{stem}.ipynb"
        assert path.is_file(), f"exemption for a missing lesson: {stem}"
        nb = nbformat.read(path, as_version=4)
        sources = [normalise(c.source) for c in nb.cells if c.cell_type == "markdown"]
        assert any(normalise(piece) in s for s in sources), f"{stem}: {piece!r} not in its prose"


# --------------------------------------------------------------------------- the checker itself


def _notebook(markdown: str, code: str, printed: str):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(code)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    nb.cells = [nbformat.v4.new_markdown_cell(markdown), cell]
    return nb


def test_printed_numbers_back_the_prose_and_an_edit_is_flagged():
    prose = "Head 3.1 gives about **0.30** of its weight, 9% of rows saturate, 2.5x more."
    nb = _notebook(prose, "print(...)", "weight 0.2996\nsaturated 0.0853\nratio 2.46\n")
    assert unbacked_numbers(nb, "x", {}, {}) == []
    for old, new in [("0.30", "0.31"), ("9%", "12%"), ("2.5x", "2.7x")]:
        edited = _notebook(prose.replace(old, new), "print(...)", nb.cells[1].outputs[0].text)
        problems = unbacked_numbers(edited, "x", {}, {})
        assert len(problems) == 1 and problems[0].startswith(repr(new)), problems


def test_rounding_is_at_the_prose_precision():
    nb = _notebook("about 0.7 and 0.665 and 1,024.5", "", "0.68 0.6649 1024.46\n")
    assert unbacked_numbers(nb, "x", {}, {}) == []
    nb = _notebook("exactly 0.665", "", "0.7\n")  # a printed 0.7 does not back 0.665
    assert len(unbacked_numbers(nb, "x", {}, {})) == 1


def test_asserted_attributed_exempt_and_computed_numbers_pass():
    prose = (
        "The loss stays below 0.25. `benchmarks/flash_memory.py` printed 13.5 MiB (38x).\n\n"
        "Uniform over 16 symbols gives $\\ln 16 \\approx 2.77$; dropout 0.1 is a setting."
    )
    code = "assert loss < 0.25, loss"
    computed = {("x", r"\ln 16 \approx 2.77"): "log(16)"}
    nb = _notebook(prose, code, "")
    assert unbacked_numbers(nb, "x", {("x", "dropout 0.1"): "a setting"}, computed) == []
    assert len(unbacked_numbers(nb, "x", {}, computed)) == 1  # the 0.1 without its exemption
    wrong = {("x", r"\ln 16 \approx 2.77"): "log(17)"}
    assert "COMPUTED gives" in unbacked_numbers(nb, "x", {("x", "dropout 0.1"): ""}, wrong)[0]
    unknown = _notebook(prose.replace("flash_memory", "no_such_script"), code, "")
    assert any("'13.5'" in p for p in unbacked_numbers(unknown, "x", {}, computed))


def test_times_are_flagged_even_when_printed():
    nb = _notebook("A token took 0.35 s with the cache.", "", "0.35 s\n")
    assert "machine-dependent" in unbacked_numbers(nb, "x", {}, {})[0]
    nb = _notebook("The cache is 2.5x faster.", "", "2.5\n")
    assert "machine-dependent" in unbacked_numbers(nb, "x", {}, {})[0]


def test_what_is_not_a_stated_number():
    prose = (
        "Heads 5.11 and 3.1 of 6 x 12 heads; `atol=1e-3` and `0.5`; torch 2.13.0; "
        "[paper](https://arxiv.org/abs/1706.03762); 1,024 tokens; ## 10. Inside"
    )
    assert stated_numbers(prose) == []
