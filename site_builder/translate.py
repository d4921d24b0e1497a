"""Generate the Chinese lessons from the English ones and a translation catalog: never by hand.

    python -m site_builder.translate            # write lessons/zh/ from lessons/ + translations/zh/
    python -m site_builder.translate --check    # exit 1 if lessons/zh/ is not what it would write
    python -m site_builder.translate --todo 04_scaled_dot_product
                                                # the cells to translate or update, with English
    python -m site_builder.translate --stub 04_scaled_dot_product
                                                # append them to the catalog as entries to edit
    (README for lessons/README.md, project-README for the repository's README.md)

English is the source. A catalog (`translations/zh/NN_name.md`, one per notebook) holds the
Chinese of every Markdown cell, each entry under a marker line naming the cell's id and the
fingerprint of the English it translates:

    <!-- cell l04-03 en:3f2a1b9c0d1e -->
    ## 2. 动手实现 ...

When the English of a cell changes, its fingerprint changes and the entry is stale: generating
refuses until someone translates the new English and writes the new fingerprint (`--todo`
prints both). An entry whose marker ends in ` todo` is a stub still holding English.

The Chinese notebook is the English one with every Markdown cell replaced by its translation,
every code cell copied byte for byte (ids included), and one generated set-up cell after the
title that switches the explorers and checkers to Chinese. Links from a Chinese page to a file
that has no Chinese version (`../benchmarks/x.py`, `TEACHING.md`) are rewritten to reach it from
lessons/zh/. lessons/README.md is translated the same way, one entry per `## ` section
(`<!-- section notation en:... -->`), into lessons/zh/README.md, and the repository's README.md
into README.zh-CN.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LESSONS = REPO / "lessons"
CATALOGS = REPO / "translations"
LANGUAGES = {"zh": "zh-CN"}  # catalog folder -> the language's tag
SETUP_ID = "zh-setup"
SETUP_SOURCE = (
    "# 中文版：讲解器（explorer）、检查器（checker）和图中的文字都用中文显示\n"
    "from widgets.language import use_chinese\n"
    "\n"
    "use_chinese();"
)
PREAMBLE = (
    "<!-- Chinese of {source}. Edit the text under a marker, never the marker itself;"
    " python -m site_builder.translate --todo {stem} lists what is missing or stale. -->\n"
)
_MARKER = re.compile(r"^<!-- (cell|section) (\S+) en:([0-9a-f]{12})( todo)? -->$", re.M)


def fingerprint(english: str) -> str:
    """The first 12 hex digits of the SHA-256 of the English, trailing spaces ignored."""
    text = "\n".join(line.rstrip() for line in english.strip().splitlines())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Entry:
    """One translated cell or section."""

    key: str  # a cell id, or a README section's slug
    english: str  # the fingerprint of the English it translates
    text: str  # the translation
    todo: bool  # a stub: still English, to be translated


class CatalogError(ValueError):
    """A catalog is missing entries, holds stale ones, or cannot be read."""


def read_catalog(path: Path) -> dict[str, Entry]:
    """The entries of a catalog file, by key; a duplicate key is an error."""
    text = path.read_text(encoding="utf-8")
    markers = list(_MARKER.finditer(text))
    entries: dict[str, Entry] = {}
    for m, nxt in zip(markers, [*markers[1:], None], strict=True):
        body = text[m.end() : nxt.start() if nxt else len(text)].strip("\n")
        key = m.group(2)
        if key in entries:
            raise CatalogError(f"{path.name}: two entries for {m.group(1)} {key}")
        entries[key] = Entry(key, m.group(3), body.rstrip(), bool(m.group(4)))
    return entries


def write_entry(kind: str, key: str, english: str, text: str, todo: bool) -> str:
    flag = " todo" if todo else ""
    return f"\n<!-- {kind} {key} en:{fingerprint(english)}{flag} -->\n{text.strip()}\n"


# --------------------------------------------------------------------------- what to translate


def units(source: Path) -> list[tuple[str, str]]:
    """The pieces of an English source to translate: (key, English), in order.

    A notebook's Markdown cells by id; a Markdown file's sections (its text before the first
    `## ` heading is the section "top", each `## Heading` section keyed by its slug).
    """
    if source.suffix == ".ipynb":
        nb = json.loads(source.read_text(encoding="utf-8"))
        return [
            (c["id"], "".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "markdown"
        ]
    pieces = re.split(r"(?m)^(?=## )", source.read_text(encoding="utf-8"))
    found = []
    for piece in pieces:
        heading = re.match(r"## (.*)", piece)
        key = _slug(heading.group(1)) if heading else "top"
        found.append((key, piece.strip("\n")))
    return found


def _slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")


def problems(source: Path, catalog: dict[str, Entry]) -> list[tuple[str, str, str]]:
    """(key, "missing" | "stale" | "todo" | "unused", English) for each entry needing work."""
    found = []
    wanted = units(source)
    for key, english in wanted:
        entry = catalog.get(key)
        if entry is None:
            found.append((key, "missing", english))
        elif entry.todo:
            found.append((key, "todo", english))
        elif entry.english != fingerprint(english):
            found.append((key, "stale", english))
    keys = {k for k, _ in wanted}
    found += [(k, "unused", "") for k in catalog if k not in keys]
    return found


# --------------------------------------------------------------------------- generating


def _localise_links(markdown: str, translated: set[str] | None) -> str:
    """Rewrite relative links to files without a Chinese version so they work from lessons/zh/
    (None: leave every link as it is)."""
    if translated is None:
        return markdown

    def fix(m: re.Match) -> str:
        target = m.group(2)
        path, _, anchor = target.partition("#")
        if not path or re.match(r"[a-z]+:", path) or path.startswith("/"):
            return m.group(0)
        if path in translated:
            return m.group(0)
        return f"{m.group(1)}../{path}{'#' + anchor if anchor else ''})"

    return re.sub(r"(\]\()([^)\s]+)\)", fix, markdown)


def _source_lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and lines[-1].endswith("\n"):
        lines[-1] = lines[-1][:-1]
    return lines


def translated_notebook(source: Path, catalog: dict[str, Entry], translated: set[str]) -> str:
    """The Chinese notebook's JSON text; CatalogError when an entry is missing or stale."""
    bad = [p for p in problems(source, catalog) if p[1] != "unused"]
    if bad:
        raise CatalogError(_describe(source, bad))
    nb = json.loads(source.read_text(encoding="utf-8"))
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            cell = dict(cell)
            text = _localise_links(catalog[cell["id"]].text, translated)
            cell["source"] = _source_lines(text)
        cells.append(cell)
        if len(cells) == 1:
            cells.append(
                {
                    "cell_type": "code",
                    "execution_count": None,
                    "id": SETUP_ID,
                    "metadata": {"tags": ["course-language"]},
                    "outputs": [],
                    "source": _source_lines(SETUP_SOURCE),
                }
            )
    nb["cells"] = cells
    nb["metadata"] = {**nb["metadata"], "attention_course": {"language": "zh-CN"}}
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def translated_markdown(
    source: Path, catalog: dict[str, Entry], translated: set[str] | None
) -> str:
    bad = [p for p in problems(source, catalog) if p[1] != "unused"]
    if bad:
        raise CatalogError(_describe(source, bad))
    parts = [_localise_links(catalog[key].text, translated) for key, _ in units(source)]
    return "\n\n".join(parts) + "\n"


def _describe(source: Path, bad: list[tuple[str, str, str]]) -> str:
    lines = [f"{source.name}: {len(bad)} entr{'y' if len(bad) == 1 else 'ies'} to translate"]
    for key, why, _ in bad:
        lines.append(f"  {key}: {why}")
    lines.append(f"  (python -m site_builder.translate --todo {source.stem})")
    return "\n".join(lines)


PROJECT_README = "project-README"  # the catalog of the repository's README.md


def sources(lang: str = "zh") -> list[Path]:
    """The English files that have a catalog in translations/<lang>/."""
    found = []
    for catalog in sorted((CATALOGS / lang).glob("*.md")):
        if catalog.stem == PROJECT_README:
            found.append(REPO / "README.md")
        elif catalog.stem == "README":
            found.append(LESSONS / "README.md")
        elif (LESSONS / f"{catalog.stem}.ipynb").is_file():
            found.append(LESSONS / f"{catalog.stem}.ipynb")
    return found


def catalog_path(source: Path, lang: str = "zh") -> Path:
    stem = PROJECT_README if source == REPO / "README.md" else source.stem
    return CATALOGS / lang / f"{stem}.md"


def target_path(source: Path, lang: str = "zh") -> Path:
    """Where the translation of `source` is written: lessons/<lang>/, or README.<tag>.md."""
    if source == REPO / "README.md":
        return REPO / f"README.{LANGUAGES[lang]}.md"
    return LESSONS / lang / source.name


def generate(lang: str = "zh", partial: bool = False) -> dict[Path, str]:
    """Every generated file: its path in lessons/<lang>/ -> its text.

    CatalogError when a catalog is incomplete or stale; with `partial`, the complete ones only
    (and the errors in `generate.errors`).
    """
    todo = sources(lang)
    translated = {p.name for p in todo if p.parent == LESSONS}
    out = {}
    errors = []
    for source in todo:
        catalog = read_catalog(catalog_path(source, lang))
        target = target_path(source, lang)
        try:
            if source.suffix == ".ipynb":
                out[target] = translated_notebook(source, catalog, translated)
            elif source.parent == LESSONS:
                out[target] = translated_markdown(source, catalog, translated)
            else:  # the repository's README: its links already work from beside it
                out[target] = translated_markdown(source, catalog, None)
        except CatalogError as exc:
            errors.append(str(exc))
    generate.errors = errors
    if errors and not partial:
        raise CatalogError("\n".join(errors))
    return out


def stale_files(lang: str = "zh") -> list[str]:
    """Files in lessons/<lang>/ that differ from what generating writes, or that it would not."""
    want = generate(lang)
    found = [f"{p.relative_to(REPO)}: differs" for p, t in want.items() if _read(p) != t]
    folder = LESSONS / lang
    extra = [p for p in sorted(folder.glob("*")) if p.suffix in (".ipynb", ".md") and p not in want]
    extra += [p for p in [REPO / f"README.{LANGUAGES[lang]}.md"] if p.is_file() and p not in want]
    return found + [f"{p.relative_to(REPO)}: has no catalog" for p in extra]


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _find(stem: str) -> Path:
    if stem == PROJECT_README:
        return REPO / "README.md"
    for candidate in (LESSONS / f"{stem}.ipynb", LESSONS / stem, LESSONS / f"{stem}.md"):
        if candidate.is_file():
            return candidate
    raise SystemExit(f"no English source named {stem!r} in lessons/")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m site_builder.translate", description=__doc__)
    parser.add_argument("--lang", default="zh", choices=sorted(LANGUAGES))
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="exit 1 if lessons/zh is stale")
    group.add_argument("--todo", metavar="STEM", help="list a source's missing/stale entries")
    group.add_argument("--stub", metavar="STEM", help="append stubs for them to its catalog")
    args = parser.parse_args(argv)
    if args.todo or args.stub:
        source = _find(args.todo or args.stub)
        path = catalog_path(source, args.lang)
        catalog = read_catalog(path) if path.is_file() else {}
        bad = problems(source, catalog)
        kind = "cell" if source.suffix == ".ipynb" else "section"
        if args.todo:
            for key, why, english in bad:
                new = f" en:{fingerprint(english)}" if english else ""
                print(f"=== {kind} {key}: {why}{new}\n{english}\n")
            print(f"{len(bad)} to do in {path.relative_to(REPO)}")
            return 0
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not path.is_file() or path.stat().st_size == 0
        with path.open("a", encoding="utf-8") as fh:
            if fresh:
                stem = catalog_path(source, args.lang).stem
                fh.write(PREAMBLE.format(source=source.relative_to(REPO), stem=stem))
            for key, why, english in bad:
                if why == "missing":
                    fh.write(write_entry(kind, key, english, english, todo=True))
        missing = sum(1 for b in bad if b[1] == "missing")
        print(f"appended {missing} stub(s) to {path.relative_to(REPO)}; stale/todo left in place")
        return 0
    try:
        if args.check:
            stale = stale_files(args.lang)
            for line in stale:
                print(line)
            return 1 if stale else 0
        for path, text in generate(args.lang, partial=True).items():
            if _read(path) != text:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                print("wrote", path.relative_to(REPO))
        if generate.errors:  # the complete ones are written; these wait for their translators
            raise CatalogError("\n".join(generate.errors))
    except CatalogError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
