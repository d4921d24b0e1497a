"""Every explorer in Chinese: no English left in what a learner reads or hears (issue 41).

With ATTENTION_COURSE_LANG=zh, every explorer of widgets/explorers.toml is built with its
gallery settings and refreshed; every user-facing string of its widget tree is collected
(control labels, tooltips, option labels, the views' titles, axis and colour-bar labels,
legends and marker labels, HTML/Label readouts with tags stripped, the error line, the
picture's text alternative, and the phrases the canvases' JavaScript writes: legends,
tooltips, accessible names, the screen readers' tables) and a string that still has an
English word fails the test.
Data stay as they are: the tokens of a text (the views' row/column labels, token lists, point
labels), identifiers (q_rope, d_k), units, numbers and maths.
"""

from __future__ import annotations

import html
import re

import ipywidgets as ipw
import pytest

import widgets
from attention import language
from widgets import registry
from widgets.views.batch import widget_tree
from widgets.views.canvas import JS_PHRASES, CanvasView
from widgets.views.picture import shown_views, summary

# Words that are not English prose: names of things, maths, units, model names
ALLOWED = {
    "softmax", "sqrt", "exp", "log", "max", "min", "argmax", "nn",
    "key_padding_mask", "valid_lens", "MultiheadAttention", "RoPE", "ALiBi", "GQA", "MQA", "MHA",
    "MLA", "KV", "QK", "FLOPs", "SmolLM2", "GPT", "ms", "MB", "KB", "GB", "MiB", "KiB", "px",
    "PNG", "SVG", "CSV", "FlashAttention", "ReLU", "elu", "cos", "sin", "inf", "nan",
    "Nadaraya", "Watson", "LayerNorm", "Adam", "Transformer", "attn", "BOS", "EOS", "PAD",
    "SDPA", "fp16", "fp32", "bf16", "float32", "float16", "bfloat16", "torch", "tril", "triu",
    "HBM", "SRAM", "Q", "K", "V", "O", "SmolLM", "HuggingFace", "True", "False", "None",
    "Tab", "Enter", "Esc", "Shift", "minilm", "smollm2", "Llama", "Falcon", "DeepSeek", "Lite",
    "GiB", "kv", "Hkv", "half",
    "interleaved", "base", "slope", "flash", "lse", "acc", "delta", "ln", "MLP", "rollout",
    "logit", "concat", "softcap", "abs",
} | {e.name for e in registry.EXPLORERS}  # fmt: skip
WORD = re.compile(r"[A-Za-z][A-Za-z0-9']+")
QUOTED = re.compile(r"'[^'\n]*'|“[^”]*”")  # a token shown in quotes is data


def _comments(code: re.Match) -> str:
    return " ".join(re.findall(r"#\s+([^\n<]+)", code.group(0)))


def _strip(value: str) -> str:
    """The text of markup: no tags, no style or script, and of code only its # comments."""
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", value, flags=re.S | re.I)
    text = re.sub(r"<(pre|code)\b.*?</\1>", _comments, text, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


def _texts(explorer: ipw.Widget) -> tuple[list[tuple[str, str]], set[str]]:
    """(where, text) of every user-facing string, and the data words (tokens) shown."""
    out: list[tuple[str, str]] = []
    data: set[str] = set()

    def add(where: str, text: object) -> None:
        if isinstance(text, str) and text.strip():
            out.append((where, text))

    for w in widget_tree(explorer):
        kind = type(w).__name__
        for trait in ("description", "tooltip", "placeholder"):
            if w.has_trait(trait) and not (trait == "placeholder" and isinstance(w, ipw.Textarea)):
                add(f"{kind}.{trait}", getattr(w, trait))
        if w.has_trait("tooltips"):
            for tip in w.tooltips:
                add(f"{kind}.tooltips", tip)
        if w.has_trait("_options_labels"):
            for label in w._options_labels:
                add(f"{kind}.option", label)
        if isinstance(w, (ipw.HTML, ipw.HTMLMath, ipw.Label)):
            add(f"{kind}.value", _strip(w.value))
        for trait in ("title", "x_label", "y_label", "colorbar_label", "link_label"):
            if w.has_trait(trait) and not isinstance(w, ipw.Layout):
                add(f"{kind}.{trait}", getattr(w, trait))
        for trait in ("panel_titles", "group_names", "x_tick_labels"):
            if w.has_trait(trait):
                for label in getattr(w, trait) or ():
                    add(f"{kind}.{trait}", label)
        if w.has_trait("series"):
            for s in w.series:
                add(f"{kind}.series", s.get("name"))
        if w.has_trait("markers"):
            for m in w.markers:
                add(f"{kind}.marker", m.get("label"))
        if w.has_trait("categories"):
            for _value, name in w.categories:
                add(f"{kind}.category", name)
        if isinstance(w, CanvasView):  # what its JavaScript writes: every phrase translated
            assert set(w.words) == set(JS_PHRASES), f"{kind}: {set(JS_PHRASES) - set(w.words)}"
            for phrase in w.words.values():
                add(f"{kind}.words", re.sub(r"\{\w+\}", " ", phrase))
        for trait in ("row_labels", "col_labels", "query_tokens", "key_tokens", "labels"):
            if w.has_trait(trait):
                for token in getattr(w, trait) or ():
                    data.update(WORD.findall(str(token)))
    for kept in explorer._data_texts():
        data.update(WORD.findall(kept))
    add("picture alt text", summary(explorer, list(shown_views(explorer))))
    add("error line", explorer.error.message)
    return out, data


def english_words(text: str, data: set[str]) -> list[str]:
    """The words of `text` that read as English (not identifiers, maths, units or data)."""
    words = []
    text = QUOTED.sub(" ", text)
    for m in WORD.finditer(text):
        word = m.group()
        after = text[m.end() : m.end() + 1]
        if word in ALLOWED or word in data or word.strip("'") in data:
            continue
        if (
            after
            and after in "_[(."
            or text[max(m.start() - 1, 0)] in "_."
            or any(c.isdigit() for c in word)
        ):
            continue  # part of an identifier or a call: q_rope, W_q, softmax(, k3, torch.where
        if len(word) <= 2 and not word.islower():
            continue  # a symbol: Q, K, d_k's d, Wq
        words.append(word)
    return [w for w in words if len(w) > 1 or w in ("a", "I")]


ENTRIES = [pytest.param(e, id=e.name) for e in registry.EXPLORERS]


@pytest.fixture
def zh(monkeypatch):
    monkeypatch.setenv(language.ENV, "zh")


@pytest.mark.parametrize("e", ENTRIES)
def test_every_explorer_speaks_chinese(zh, e: registry.Entry) -> None:
    before = language.missing()
    explorer = eval(f"widgets.{e.gallery_call}", {"widgets": widgets})  # noqa: S307 - our own
    explorer.refresh()
    texts, data = _texts(explorer)
    assert texts, f"{e.name}: no text collected"
    left = sorted({f"{where}: {text!r} ({', '.join(words)})" for where, text in texts
                   if (words := english_words(text, data))})  # fmt: skip
    assert not left, f"{e.name}: English left in Chinese:\n" + "\n".join(left)
    # and translate() was never asked for a text the catalog does not know
    assert language.missing() - before == set(), f"{e.name}: not in attention/language/zh.toml"


def test_the_check_finds_english() -> None:
    assert english_words("weights of head 0", set()) == ["weights", "of", "head"]
    assert english_words("权重 q_rope softmax(x) d_k", set()) == []
    assert english_words("“it” 关注 animal", {"it", "animal"}) == []
