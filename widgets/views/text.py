"""What a learner reads on an explorer, in the course's language (attention.language).

One helper for every explorer and view, so no explorer keeps its own table of words:

- `Text()`: a Unicode trait whose value is translated as it is set (the views' titles, axis
  and colour-bar labels); `translated(texts)` does the same for a list (panel titles, legends).
- `localize(root)`: translates, in place, the control labels, tooltips, option labels,
  placeholders and HTML/Label readouts of every ipywidget under `root`; the Explorer base calls
  it after each refresh. An HTML readout is translated text node by text node (what stands
  between two tags), so the markup and the numbers set by the explorer stay as they are.

In English every helper returns at once and changes nothing (the catalog is never read); in
Chinese each distinct text is looked up once (attention.language caches the lookups). Data are
not translated: the tokens of a text (row and column labels, token lists), code in <code>
or <pre> (its # comments are), a Textarea's placeholder, identifiers and numbers.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Collection, Sequence
from typing import Any

import ipywidgets as widgets
import traitlets as t

from attention.language import language, translate

_TAG = re.compile(r"(<[^>]*>)")
_DATA_TAGS = ("code", "pre", "kbd", "samp", "style", "script")


_CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")


def _tr(text: str) -> str:
    """translate(), except for text already in Chinese (a label translated before)."""
    return text if _CJK.search(text) else translate(text)


class Text(t.Unicode):
    """A text trait a learner reads: stored in the course's language (English unchanged)."""

    def validate(self, obj: Any, value: Any) -> str:
        return _tr(super().validate(obj, value))


class TextList(t.List):
    """A list of texts a learner reads (legend names, panel titles), each one translated."""

    def validate(self, obj: Any, value: Any) -> Any:
        return translated(super().validate(obj, value))


def translated(texts: Sequence[Any] | None) -> Any:
    """The texts in the course's language: the same object in English; non-str items kept."""
    if texts is None or language() == "en":
        return texts
    return [_tr(s) if isinstance(s, str) else s for s in texts]


def translate_html(markup: str, keep: Collection[str] = ()) -> str:
    """Markup with each text node translated; tags, and text inside <code>/<pre>, kept.

    `keep`: data shown in the text (a prompt, a list of tokens) that stays as it is; the text
    around it is translated piece by piece.
    """
    if not markup or language() == "en":
        return markup
    split = _splitter(tuple(sorted((k for k in keep if k.strip()), key=len, reverse=True)))
    if "<" not in markup:  # plain text (a Label, or HTML without tags)
        return _translate_node(markup, split)
    out, inside_data = [], 0
    for part in _TAG.split(markup):
        if part.startswith("<"):
            name = part[1:].lstrip("/").split(maxsplit=1)[0].rstrip(">").lower() if part else ""
            if name in _DATA_TAGS:
                inside_data += -1 if part.startswith("</") else 1
            out.append(part)
        elif inside_data > 0:  # code stays, its comments do not
            out.append(_COMMENT.sub(lambda m: m.group(1) + _translate_node(m.group(2)), part))
        elif not part.strip():
            out.append(part)
        else:
            out.append(_translate_node(part, split))
    return "".join(out)


_COMMENT = re.compile(r"(#\s+)([^\n]+)")


@functools.lru_cache(maxsize=64)
def _splitter(keep: tuple[str, ...]) -> re.Pattern | None:
    return re.compile("(" + "|".join(map(re.escape, keep)) + ")") if keep else None


def _translate_node(node: str, split: re.Pattern | None = None) -> str:
    text = html.unescape(node)
    pieces = split.split(text) if split is not None else [text]
    done = []
    for i, piece in enumerate(pieces):  # odd pieces: the data kept
        core = piece.strip()
        if i % 2 or not core:
            done.append(piece)
        else:
            start = piece.index(core)
            done.append(piece[:start] + _tr(core) + piece[start + len(core) :])
    new = "".join(done)
    return node if new == text else html.escape(new, quote=False)


def localize(root: widgets.Widget, keep: Collection[str] = ()) -> None:
    """Translate every ipywidget's user-facing text under `root` in place (nothing in English).

    `keep`: data that the readouts show (translate_html).
    """
    if language() == "en":
        return
    for w in _widgets(root):
        for name in ("description", "tooltip", "placeholder"):
            if name == "placeholder" and isinstance(w, widgets.Textarea):
                continue  # a code editor's placeholder is code
            value = getattr(w, name, None)
            if isinstance(value, str) and value:
                _assign(w, name, _tr(value))
        tips = getattr(w, "tooltips", None)
        if tips:
            _assign(w, "tooltips", translated(list(tips)))
        if isinstance(w, widgets.widgets.widget_selection._Selection | _MULTIPLE):
            _localize_options(w)
        if isinstance(w, (widgets.HTML, widgets.HTMLMath)):
            _assign(w, "value", translate_html(w.value, keep))
        elif isinstance(w, widgets.Label):
            _assign(w, "value", _tr(w.value))


_MULTIPLE = widgets.widgets.widget_selection._MultipleSelection


def _widgets(root: widgets.Widget) -> list[widgets.Widget]:
    """root and every widget under it through children (not layouts and styles: no text)."""
    out, stack = [], [root]
    while stack:
        w = stack.pop()
        out.append(w)
        stack.extend(c for c in getattr(w, "children", ()) or () if isinstance(c, widgets.Widget))
    return out


def _assign(w: widgets.Widget, name: str, value: Any) -> None:
    if getattr(w, name) != value:
        setattr(w, name, value)


def _localize_options(w: Any) -> None:
    """Translate the option labels of a dropdown, toggle buttons or selection slider."""
    labels = list(w._options_labels)
    new = [_tr(label) for label in labels]
    if new == labels:
        return
    values = list(w._options_values)
    with w.hold_trait_notifications():
        value = w.value
        w.options = list(zip(new, values, strict=True))
        if w.value != value:
            w.value = value
