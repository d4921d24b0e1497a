"""The Chinese lessons: generated from the English and the catalog, never edited, never stale.

site_builder/translate.py writes lessons/zh/ from lessons/ and translations/zh/. These tests
fail on a missing or stale catalog entry (the English changed after it was translated), on a
generated file that differs from what the generator writes (a hand edit), on a code cell that
differs from the English, on a term translated otherwise than translations/zh/terms.toml says,
and on a term whose first use in a lesson lacks its English in brackets. The numbers of the
Chinese prose are checked against the English lesson's run in tests/site/test_prose_numbers.py.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from site_builder import translate as tr

ROOT = Path(__file__).resolve().parents[2]
TERMS = tomllib.loads((ROOT / "translations/zh/terms.toml").read_text(encoding="utf-8"))["term"]
ZH = sorted(p for p in tr.sources("zh") if p.suffix == ".ipynb")


def test_the_chinese_files_are_what_the_generator_writes():
    assert tr.stale_files("zh") == [], (
        "lessons/zh/ differs from the catalog: run python -m site_builder.translate"
    )


@pytest.mark.parametrize("english", ZH, ids=[p.stem for p in ZH])
def test_code_cells_are_the_english_ones_byte_for_byte(english):
    zh = json.loads((ROOT / "lessons/zh" / english.name).read_text(encoding="utf-8"))
    en = json.loads(english.read_text(encoding="utf-8"))
    zh_code = [c for c in zh["cells"] if c["cell_type"] == "code" and c["id"] != tr.SETUP_ID]
    en_code = [c for c in en["cells"] if c["cell_type"] == "code"]
    assert zh_code == en_code
    assert sum(c["id"] == tr.SETUP_ID for c in zh["cells"]) == 1
    assert [c["id"] for c in zh["cells"] if c["id"] != tr.SETUP_ID] == [
        c["id"] for c in en["cells"]
    ]


def _markdown(path: Path) -> list[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]


def _prose(text: str) -> str:
    """Markdown without code, maths and link targets: where terms are written."""
    text = re.sub(r"```.*?```|`[^`\n]*`|\$\$.*?\$\$|\$[^$\n]*\$", " ", text, flags=re.S)
    return re.sub(r"\]\([^)]*\)", "]", text)


def avoided_words(prose: str) -> list[str]:
    """Each `avoid` rendering of terms.toml that the prose uses, with the term to write."""
    return [
        f"{avoid!r} for {t['en']!r} (write {t['zh']!r})"
        for t in TERMS
        for avoid in t.get("avoid", [])
        if avoid in prose
    ]


@pytest.mark.parametrize("english", ZH, ids=[p.stem for p in ZH])
def test_terms_are_the_terminology_files(english):
    prose = _prose("\n".join(_markdown(ROOT / "lessons/zh" / english.name)))
    found = avoided_words(prose)
    assert not found, "\n".join(found)


def first_uses_without_english(zh_prose: str, english_prose: str) -> list[str]:
    """Terms of the lesson whose first use (outside headings) lacks its English in brackets.

    A term of one character (键, 值, 头) is too common inside other words to check; a use inside
    a longer term (注意力 in 自注意力) is that longer term's use.
    """
    body = "\n".join(line for line in zh_prose.splitlines() if not line.startswith("#"))
    english_prose = english_prose.lower()
    longer = {  # a longer term that carries its own English covers the shorter one inside it
        t["zh"]: [
            u["zh"] for u in TERMS if t["zh"] in u["zh"] and u is not t and u.get("bracket", True)
        ]
        for t in TERMS
    }
    problems = []
    for term in TERMS:
        zh, en = term["zh"], term["en"]
        if not term.get("bracket", True):
            continue  # a term kept for consistency only, not introduced with its English
        if zh == en or len(zh) < 2 or not re.search(rf"\b{re.escape(en.lower())}", english_prose):
            continue  # the same word in both languages, too short, or not a term of this lesson
        for m in re.finditer(re.escape(zh), body):
            covered = any(
                o.start() <= m.start() and m.end() <= o.end()
                for big in longer[zh]
                for o in re.finditer(re.escape(big), body)
            )
            if covered:
                continue
            after = body[m.end() : m.end() + len(en) + 12]
            if not re.match(r"[*_]*\s*[（(]\s*" + re.escape(en[:4]), after, re.I):
                where = body[m.start() : m.start() + 30]
                problems.append(f"{zh} ({en}): first use without its English: {where!r}")
            break
    return problems


@pytest.mark.parametrize("english", ZH, ids=[p.stem for p in ZH])
def test_a_terms_first_use_gives_its_english(english):
    """At a term's first use in a lesson: 中文（english） or 中文 (english)."""
    zh = _prose("\n".join(_markdown(ROOT / "lessons/zh" / english.name)))
    problems = first_uses_without_english(zh, _prose("\n".join(_markdown(english))))
    assert not problems, "\n".join(problems)


def test_the_first_use_rule_catches_a_missing_bracket():
    english = "Scaled dot-product attention uses a mask."
    good = "缩放点积注意力（scaled dot-product attention）用一个掩码（mask）。掩码很简单。"
    assert first_uses_without_english(good, english) == []
    bad = "缩放点积注意力用一个掩码（mask）。"
    assert [p.split(" ")[0] for p in first_uses_without_english(bad, english)] == ["缩放点积注意力"]


def test_a_stale_or_missing_entry_is_refused(tmp_path):
    notebook = tmp_path / "99_demo.ipynb"
    cells = [
        {"cell_type": "markdown", "id": "a1", "metadata": {}, "source": ["# Title"]},
        {
            "cell_type": "code",
            "id": "c1",
            "metadata": {},
            "source": ["x = 1"],
            "outputs": [],
            "execution_count": None,
        },
        {"cell_type": "markdown", "id": "a2", "metadata": {}, "source": ["See [it](../x.py)."]},
    ]
    notebook.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    good = tr.write_entry("cell", "a1", "# Title", "# 标题", False) + tr.write_entry(
        "cell", "a2", "See [it](../x.py).", "见[它](../x.py)。", False
    )
    catalog = tmp_path / "99_demo.md"
    catalog.write_text(good, encoding="utf-8")
    out = json.loads(tr.translated_notebook(notebook, tr.read_catalog(catalog), set()))
    assert [c["id"] for c in out["cells"]] == ["a1", tr.SETUP_ID, "c1", "a2"]
    assert "".join(out["cells"][3]["source"]) == "见[它](../../x.py)。"  # reached from lessons/zh
    assert out["cells"][2]["source"] == ["x = 1"]

    stale = good.replace("# 标题", "# 标题").replace(
        tr.fingerprint("# Title"), tr.fingerprint("# Old")
    )
    catalog.write_text(stale, encoding="utf-8")
    with pytest.raises(tr.CatalogError, match="a1: stale"):
        tr.translated_notebook(notebook, tr.read_catalog(catalog), set())
    catalog.write_text(tr.write_entry("cell", "a1", "# Title", "# 标题", False), encoding="utf-8")
    with pytest.raises(tr.CatalogError, match="a2: missing"):
        tr.translated_notebook(notebook, tr.read_catalog(catalog), set())
    catalog.write_text(
        good.replace("en:", "en:", 1) + tr.write_entry("cell", "a1", "x", "y", False)
    )
    with pytest.raises(tr.CatalogError, match="two entries for cell a1"):
        tr.read_catalog(catalog)


def test_the_generated_setup_cell_switches_the_language(monkeypatch):
    from attention import language

    monkeypatch.setenv(language.ENV, "en")  # restored after the test
    assert language.language() == "en"
    exec(tr.SETUP_SOURCE, {})  # noqa: S102 - the cell every Chinese lesson runs first
    assert language.language() == "zh"
    with pytest.raises(ValueError, match=r"language: expected one of \['en', 'zh'\], got 'fr'"):
        language.set_language("fr")


@pytest.mark.parametrize("path", ["lessons/zh/README.md", "README.zh-CN.md"])
def test_the_readmes_use_the_terminology_files_terms(path):
    prose = _prose((ROOT / path).read_text(encoding="utf-8"))
    found = avoided_words(prose)
    assert not found, "\n".join(found)


def test_the_terminology_has_one_chinese_term_per_english_term():
    english = [t["en"].lower() for t in TERMS]
    assert len(english) == len(set(english)), "a term is listed twice in terms.toml"
    for t in TERMS:
        assert t["zh"] not in t.get("avoid", []), t
        assert t.get("source") in ("articles", "d2l", "course"), t
