"""Every explorer of the course, one line each: the one place that lists them.

An entry names the explorer's class, the stem it shares on both sides (the pure function in
attention/explore/<stem>.py feeds the widget in widgets/explorers/<stem>.py), the function, the
lessons that build it, and what it shows. Read by `widgets` and `widgets.explorers` (their
public names), by widgets.explorers.base (each explorer's CSS class and export prefix), by the
tests (parametrised over EXPLORERS), by the classroom gallery lessons/explorers.ipynb (written
from it: `python -m widgets.registry`, and a test checks it is current) and by the tests that
check lessons/README.md and the lessons against it.

Adding an explorer: its pure function in attention/explore/<stem>.py, its explorer in
widgets/explorers/<stem>.py, one line below, and its lesson.

This module imports nothing heavy (no torch, no ipywidgets): the classroom server reads it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Entry:
    """One explorer."""

    name: str  # its class, a public name of `widgets`
    stem: str  # attention/explore/<stem>.py feeds widgets/explorers/<stem>.py
    function: str  # the pure function in attention.explore.<stem>: params -> result
    lessons: tuple[int, ...]  # the lessons that build it (lessons/NN_*.ipynb)
    slug: str  # CSS class ac-<slug> on the explorer; prefix of its exported files
    title: str  # a heading in the gallery
    about: str  # what a learner sees and does (markdown, a few sentences)
    call: str = ""  # the gallery's constructor call; default: no arguments
    principal: str = ""  # words in the accessible name of its principal panel (a test checks)

    @property
    def gallery_call(self) -> str:
        return self.call or f"{self.name}()"


EXPLORERS: tuple[Entry, ...] = (
    Entry("AttentionExplorer", "attention", "explore_attention", (4, 8), "attention-explorer",
          "Attention, step by step",
          "Queries and keys, raw scores, scaled and masked scores, the softmax weights, the "
          "output, and every head's weights. Hatched cells are masked; a grey row may attend to "
          "nothing. Click a scores or weights cell to block that query-key pair.",
          'AttentionExplorer(seq_len=6, d_k=8, n_heads=2, mask="causal")', "weights"),
    Entry("ScalingExplorer", "scaling", "explore_scaling", (5,), "scaling-explorer",
          "Why divide by $\\sqrt{d_k}$",
          "Move $d_k$: the spread of $q \\cdot k$ grows like $\\sqrt{d_k}$, one softmax row "
          "saturates and the gradient reaching the scores vanishes, unless the scores are "
          "scaled.", principal="scores of"),
    Entry("MaskExplorer", "mask", "explore_mask", (6,), "mask-explorer",
          "Masks in every convention",
          "Click cells to toggle them, or pick a preset. The same mask is shown as our bool mask "
          "(True = may attend), `nn.MultiheadAttention`'s `key_padding_mask` (True = ignore), an "
          "additive 0 / $-\\infty$ mask and `valid_lens`, beside the weights it produces.",
          principal="weights"),
    Entry("TokenAttentionView", "tokens", "explore_tokens", (7, 11, 12), "token-view",
          'What does "it" attend to?',
          "Type a sentence and pick a head: a line from each token to every token it attends "
          "to, thicker for larger weights. With no weights given, an *untrained* layer attends, "
          "so the pattern reacts to your sentence but means nothing yet; lesson 7 feeds the view "
          "hand-built weights where \"it\" finds \"animal\", lessons 11 and 12 a trained model's. "
          "Any `(H, Tq, Tk)` weights can be shown with "
          "`widgets.TokenAttentionView(weights=..., tokens=...)`.", principal="head 0"),
    Entry("HeadsExplorer", "heads", "explore_heads", (8,), "heads-explorer",
          "Multi-head attention and the forgotten transpose",
          "One big projection, split into heads, attend per head, merge, project. Tick *forget "
          "the transpose* to see a reshape that keeps every shape right and mixes tokens across "
          "heads.", principal="q per head"),
    Entry("PositionalEncodingExplorer", "positional", "explore_positional", (9,),
          "positional-explorer", "Positional encoding",
          "The sinusoidal table and a few of its dimensions against position. Shuffle the "
          "tokens: without positions, self-attention's output is only shuffled the same way; "
          "with them, it changes.", principal="PE[position, dim]"),
    Entry("TrainingAttentionExplorer", "training", "explore_training", (11,),
          "training-attention", "Attention while a model trains",
          "The shipped reverse-the-sequence model's cross-attention on one fixed example, step "
          "by step through its training: press play and watch a diagonal appear (the "
          "reversal), head by head.", principal="cross-attention"),
    Entry("ModelView", "model_view", "explore_model_view", (12,), "model-view",
          "A real model: every layer and head",
          "MiniLM (or SmolLM2) computed by the course's own code: a thumbnail of every head's "
          "weights on a text, the chosen head large beside them. Type your own text.",
          'ModelView("minilm", layer=3, head=1)', "every head"),
    Entry("HeadView", "model_view", "explore_head_view", (12,), "head-view",
          "One head of a real model, as lines",
          "One head's weights on a text as lines from each token to the tokens it attends to; "
          "pick a query to see only its lines.",
          'HeadView("minilm", layer=3, head=1, query=5)', "layer 3, head 1"),
    Entry("NeuronView", "model_view", "explore_neuron", (12,), "neuron-view",
          "Inside one score: q and k, feature by feature",
          "How one query-key score of a real model is made: the query's and the key's features "
          "side by side and their products, which sum to the score before scaling.",
          'NeuronView("smollm2", layer=0, head=0, query=10, key=9)', "q and k"),
    Entry("FlashExplorer", "flash", "explore_flash", (13,), "flash-explorer",
          "FlashAttention, tile by tile",
          "Step through the tiles: the running maximum m, the running sum l and the output "
          "rescaled as each block of keys arrives, beside the bytes a naive kernel and a tiled "
          "one move.", "FlashExplorer(seq_len=8, block_size=2, step=5)", "tiles"),
    Entry("KVCacheExplorer", "kv_cache", "explore_kv_cache", (14,), "kv-cache-explorer",
          "The key/value cache: MHA, GQA and MQA",
          "The bytes a decoder keeps per token and per context length, for your sizes or a "
          "published model's; move the key/value heads to see grouped-query and multi-query "
          "attention shrink the cache.", principal="cache"),
    Entry("RopeExplorer", "rope", "explore_rope", (15,), "rope-explorer",
          "RoPE and ALiBi",
          "Rotary positions turn each pair of features by an angle that grows with position, "
          "so a score depends only on the offset; the two layouts of the pairs; ALiBi's "
          "per-head distance penalties.", principal="rope(q, m) · rope(k, n)"),
)  # fmt: skip

# Public names of widgets.explorers that are not explorers of their own (no entry above).
OTHER_PUBLIC = {"Explorer": "base", "TrainingProgress": "training"}

_BY_NAME = {e.name: e for e in EXPLORERS}


def entry(name: str) -> Entry:
    """The registry line of the explorer class `name`."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"{name!r} is not in widgets/registry.py EXPLORERS; add its line") from None


def slug_of(name: str) -> str:
    """The CSS class (without ac-) and export prefix of the explorer class `name`."""
    return entry(name).slug


def explorer_modules() -> dict[str, str]:
    """Public name of widgets.explorers -> its module (relative to widgets.explorers)."""
    names = {e.name: e.stem for e in EXPLORERS}
    return {**names, **OTHER_PUBLIC}


def register(new: Entry) -> None:
    """Add an entry at run time (tests of a toy explorer); a line above is the real way."""
    global EXPLORERS
    if new.name in _BY_NAME:
        raise ValueError(f"{new.name!r} is already registered")
    EXPLORERS = (*EXPLORERS, new)
    _BY_NAME[new.name] = new


def unregister(name: str) -> None:
    """Remove an entry added by `register`."""
    global EXPLORERS
    EXPLORERS = tuple(e for e in EXPLORERS if e.name != name)
    _BY_NAME.pop(name, None)


# --- the classroom gallery --------------------------------------------------------------------

GALLERY = Path(__file__).resolve().parent.parent / "lessons" / "explorers.ipynb"
GALLERY_INTRO = """# The explorers, one per cell

Every explorer of the course on one page, for a class or a quick look. Each is one line of code
and a live widget: drag a slider (or focus it and use the arrow keys) and the panels redraw in
the browser at once. After moving a control, `explorer.result` holds the numbers it shows.
`make classroom` serves this page with Voilà for a projector. This notebook is written from
widgets/registry.py (`python -m widgets.registry`); edit the registry, not the cells."""


def _variable(e: Entry) -> str:
    out = ""
    for i, ch in enumerate(e.name):
        out += ("_" if i and ch.isupper() else "") + ch.lower()
    return out


def gallery_cells() -> list[tuple[str, str]]:
    """The gallery notebook's cells as (cell_type, source), one markdown and code per entry."""
    cells = [("markdown", GALLERY_INTRO), ("code", "import widgets")]
    for e in EXPLORERS:
        lessons = ", ".join(str(n) for n in e.lessons)
        word = "lesson" if len(e.lessons) == 1 else "lessons"
        cells.append(("markdown", f"## {e.title} ({word} {lessons})\n\n{e.about}"))
        var = _variable(e)
        cells.append(("code", f"{var} = widgets.{e.gallery_call}\n{var}"))
    return cells


def gallery_notebook() -> dict:
    """The gallery as an nbformat 4 notebook (a plain dict, no outputs)."""
    cells = []
    for i, (kind, source) in enumerate(gallery_cells()):
        cell: dict = {"cell_type": kind, "id": f"cell-{i:02d}", "metadata": {}}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        cell["source"] = source.splitlines(keepends=True)  # as Jupyter saves it
        cells.append(cell)
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write_gallery(path: Path = GALLERY) -> Path:
    """Write the gallery notebook (refusing to overwrite a file that is not the gallery)."""
    import json

    if path.exists():
        old = json.loads(path.read_text())
        first = old.get("cells", [{}])[0]
        if "".join(first.get("source", "")).splitlines()[:1] != GALLERY_INTRO.splitlines()[:1]:
            raise ValueError(f"{path}: not the explorers gallery; refusing to overwrite it")
    path.write_text(json.dumps(gallery_notebook(), indent=1, ensure_ascii=False) + "\n")
    return path


if __name__ == "__main__":
    print(f"wrote {write_gallery(Path(sys.argv[1]) if len(sys.argv) > 1 else GALLERY)}")
