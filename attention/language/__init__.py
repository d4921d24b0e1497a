"""The course's language for explorers and checkers: English (the source) or Chinese.

Chosen once per kernel: `set_language("zh")` (the first code cell of every Chinese lesson does
it), or the environment variable ATTENTION_COURSE_LANG=zh before the kernel starts (Voila, the
static site); English by default.

`translate(text)` returns the text in the chosen language from one message catalog per
language (`zh.toml` beside this file). A catalog maps English to Chinese in two ways:

- exactly: `"Correct" = "正确"`;
- by template, where `{name}` stands for any text: `"Not yet: {why}" = "还不对：{why}"`; what a
  placeholder matched is itself translated (so "Not yet: " and the named mistake after it are
  two entries), and numbers, identifiers and shapes pass through unchanged.

Text the catalog does not know is returned as it is (English) and remembered in `missing()`,
which the tests read to list every English string an explorer or checker still shows.
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from pathlib import Path

ENV = "ATTENTION_COURSE_LANG"
LANGUAGES = ("en", "zh")
HERE = Path(__file__).resolve().parent
_PLACEHOLDER = re.compile(r"\{(\w*)\}")
_missing: set[str] = set()


def language() -> str:
    """The chosen language: "en" or "zh" (from set_language or ATTENTION_COURSE_LANG)."""
    value = os.environ.get(ENV, "en").strip().lower().replace("_", "-")
    if value in ("zh", "zh-cn", "zh-hans"):
        return "zh"
    return "en"


def set_language(lang: str) -> None:
    """Choose the language of this kernel's explorers and checkers ("en" or "zh")."""
    if lang not in LANGUAGES:
        raise ValueError(f"language: expected one of {list(LANGUAGES)}, got {lang!r}")
    os.environ[ENV] = lang


def translate(text: str) -> str:
    """`text` in the chosen language; English text when the catalog has no entry for it."""
    if not text or language() == "en":
        return text
    return _catalog("zh").translate(text)


def missing() -> set[str]:
    """The texts translate() was asked for and could not translate, since the kernel started."""
    return set(_missing)


class Catalog:
    """English -> another language: exact entries, then templates with {placeholders}."""

    def __init__(self, entries: dict[str, str]) -> None:
        self.exact: dict[str, str] = {}
        templates = []
        for english, other in entries.items():
            if not isinstance(other, str):
                raise ValueError(f"catalog entry {english!r}: expected a string, got {other!r}")
            if _PLACEHOLDER.search(english):
                if set(_PLACEHOLDER.findall(english)) != set(_PLACEHOLDER.findall(other)):
                    raise ValueError(
                        f"catalog entry {english!r}: its translation {other!r} must use the"
                        " same placeholders"
                    )
                literal = len(_PLACEHOLDER.sub("", english))
                templates.append((self._pattern(english), other, literal))
            else:
                self.exact[english] = other
        # the most literal English first (not the regex's length, which counts its own syntax),
        # so "Not yet: {why}" loses to a longer, more specific one
        templates.sort(key=lambda t: -t[2])
        self.templates = [(pattern, other) for pattern, other, _ in templates]

    @staticmethod
    def _pattern(english: str) -> re.Pattern:
        parts, last, seen = [], 0, set()
        for m in _PLACEHOLDER.finditer(english):
            parts.append(re.escape(english[last : m.start()]))
            name = m.group(1)
            if not name:
                raise ValueError(f"catalog entry {english!r}: name each placeholder, e.g. {{why}}")
            parts.append(f"(?P<{name}>.+?)" if name not in seen else f"(?P={name})")
            seen.add(name)
            last = m.end()
        parts.append(re.escape(english[last:]))
        return re.compile("".join(parts) + r"\Z", re.S)

    def translate(self, text: str) -> str:
        result, left = self._translate(text)
        _missing.update(left)
        return result

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one catalog per language, kept for good
    def _translate(self, text: str) -> tuple[str, frozenset[str]]:
        """(text translated, the parts of it left in English). Where several templates match,
        the first (most literal) whose every placeholder translates wins, else the one that
        leaves the least English: "Not yet: {why}" and "{a}{b}: expected {c}, got {d}" both
        match "Not yet: x: expected 1, got 2", and only the first splits it where it means."""
        if text in self.exact:
            return self.exact[text], frozenset()
        stripped = text.strip()
        if stripped != text and stripped in self.exact:
            return text.replace(stripped, self.exact[stripped]), frozenset()
        fallback = None
        for pattern, other in self.templates:
            m = pattern.match(text)
            if m:
                parts = {k: self._translate(v) for k, v in m.groupdict().items()}
                left = frozenset().union(*(p[1] for p in parts.values()))
                values = {k: p[0] for k, p in parts.items()}
                result = _PLACEHOLDER.sub(functools.partial(_value, values), other)
                if not left:
                    return result, left
                if fallback is None or sum(map(len, left)) < sum(map(len, fallback[1])):
                    fallback = (result, left)
        if fallback is not None:
            return fallback
        if re.search(r"[A-Za-z]{2,}", text) and not _identifier_like(text):
            return text, frozenset({text})
        return text, frozenset()


def _value(values: dict[str, str], placeholder: re.Match) -> str:
    return values[placeholder.group(1)]


def _identifier_like(text: str) -> bool:
    """Code, shapes, numbers and names pass through untranslated without being 'missing'."""
    return bool(re.fullmatch(r"[\w.\[\](),:=+\-*/ <>'\"^√×·]*", text)) and " " not in text.strip()


@functools.cache
def _catalog(lang: str) -> Catalog:
    path = HERE / f"{lang}.toml"
    return Catalog(tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {})
