"""What the browser tests open and poke: notebooks to run, and explorers to operate.

To cover a new explorer, add an ExplorerCase below; test_lab.py and test_voila.py both pick
it up. A lesson that builds a view with data of its own (DATA_VIEWS) runs in JupyterLab
without any edit here.

Most explorer cases use the gallery lessons/explorers.ipynb (its explorers, one per cell).
Consecutive cases of one notebook share one run of it (conftest.HeldRun), so keep them
together in the list below.
There a class such as ac-seq-len or ac-readout occurs in several explorers: give the explorer's
class as `scope` and every other class is looked up inside it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import harness

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

GALLERY = harness.GALLERY
# Lessons 4, 6, 13, 14 and 17's explorers on one page, as the lessons open them (nearly: its
# first cell says how), so that their cases share one run instead of rerunning five lessons.
LESSON_EXPLORERS = "lesson_explorers.ipynb"


@dataclass(frozen=True)
class ExplorerCase:
    """Act on one control of an explorer; its figure and readout must change to match.

    Classes are the ones given in Python with ``widget.add_class(...)``. Give either `key`
    (pressed on the focused control, e.g. a slider handle or a button) or `click` (a point on
    the control as fractions of its width and height, e.g. a cell of the mask editor's heatmap).
    """

    id: str
    notebook: str  # path under the served root: "demo.ipynb" or "lessons/<name>.ipynb"
    control: str  # CSS class of the control to act on
    figure: str  # CSS class of the element whose canvas/img/svg must change
    readout: str | None = None  # CSS class of an element whose text must change
    # Regex the new readout text must contain; "{value}" stands for the control's new value
    # (escaped). Or a function of that value (unescaped) returning the regex.
    expect: str | Callable[[str], str] | None = None
    key: str | None = "ArrowRight"
    click: tuple[float, float] | None = None
    # CSS class of the explorer holding all the other classes (e.g. "ac-scaling-explorer");
    # `nth` then picks among such explorers, and the other classes are looked up inside it.
    scope: str | None = None
    nth: int = 0  # which occurrence, when the notebook shows the same classes more than once
    # CSS class of the control whose value the readout must show, when it is not the control
    # acted on (e.g. a button that steps a number field); by default `control`.
    value_of: str | None = None
    # Read this attribute of the readout (or of the first element inside it that has it, e.g.
    # a heatmap canvas's aria-label, which carries its title) instead of its text.
    readout_attr: str | None = None
    # CSS class of the element to photograph (e.g. the whole explorer); by default the picture
    # spans the control, the figure and the readout.
    shot: str | None = None

    def __post_init__(self) -> None:
        if (self.key is None) == (self.click is None):
            raise ValueError(f"{self.id}: give exactly one of key={self.key!r}, click={self.click}")


def _shuffle_order(value: str, seq_len: int = 16) -> str:
    """The readout after the shuffle seed became `value`: the order the core computes for it.

    seq_len is the PositionalEncodingExplorer's default, which the gallery keeps.
    """
    from attention.explore import shuffle_permutation

    order = " ".join(str(int(i)) for i in shuffle_permutation(seq_len, int(value)))
    return rf"Tokens: shuffled order: {order}\."


def _latent_rank(index: str) -> int:
    """The latent width R a LatentExplorer's kv_rank slider shows at handle position `index`."""
    from attention.explore.latent import LATENT_RANKS

    return LATENT_RANKS[int(float(index))]


EXPLORER_CASES: list[ExplorerCase] = [
    ExplorerCase(
        id="demo-bars",
        notebook="demo.ipynb",
        control="demo-slider",
        figure="demo-canvas",
        readout="demo-readout",
        expect=r"^value = {value}$",
    ),
    ExplorerCase(
        id="attention-seq-len",
        notebook=LESSON_EXPLORERS,
        scope="ac-attention-explorer",
        control="ac-seq-len",
        figure="ac-panel-weights",
        readout="ac-readout",
        expect=r"{value}, {value}\)",  # the shapes table: (..., Tq, Tk)
        shot="ac-attention-explorer",
    ),
    ExplorerCase(
        id="mask-click",
        notebook=LESSON_EXPLORERS,
        scope="ac-mask-explorer",
        control="ac-panel-mask",
        figure="ac-panel-weights",
        readout="ac-conventions",
        click=(0.85, 0.84),  # a cell of the last key column: toggles may-attend
        key=None,
        shot="ac-mask-explorer",
    ),
    # Lesson 13's FlashExplorer (seq_len 8, tiles of 2, step 5): Enter on "next tile" steps 5 -> 6,
    # the tile map shows tile (1, 1) on chip and the readout names the step.
    ExplorerCase(
        id="flash-next-tile",
        notebook=LESSON_EXPLORERS,
        scope="ac-flash-explorer",
        control="ac-next-button",
        key="Enter",
        value_of="ac-step",
        figure="ac-tiles",
        readout="ac-readout",
        expect=r"Step {value} of 16: query tile 1",
        shot="ac-flash-explorer",
    ),
    # Lesson 14's KVCacheExplorer (SmolLM2 preset): layers 30 -> 31 redraws the bars, and the
    # readout's formula has the new layer count.
    ExplorerCase(
        id="kv-cache-layers",
        notebook=LESSON_EXPLORERS,
        scope="ac-kv-cache-explorer",
        control="ac-n-layers",
        figure="ac-variants",
        readout="ac-readout",
        expect=r"= 2 × {value} layers × 3 kv heads",
        shot="ac-kv-cache-explorer",
    ),
    # Lesson 17's InductionExplorer with the lesson's budget of 1,000 steps (the lesson opens it
    # on the model it trained first): pressing Train trains in a background thread, the maps
    # redraw as it goes and the status line counts the steps.
    ExplorerCase(
        id="induction-train",
        notebook=LESSON_EXPLORERS,
        scope="ac-induction-explorer",
        control="ac-train",
        figure="ac-panel-maps",
        readout="ac-status",
        expect=r"step \d+/1000",
        click=(0.5, 0.5),
        key=None,
        shot="ac-induction-explorer",
    ),
    # The gallery's AttentionExplorer (seq_len=6, n_heads=2): query row 0 -> 1 moves the
    # outline in every head's small multiple, and the readout names the new query.
    ExplorerCase(
        id="attention-query-row",
        notebook=GALLERY,
        scope="ac-attention-explorer",
        control="ac-query-row",
        figure="ac-panel-per-head",
        readout="ac-readout",
        expect=r"query q{value}, head 0",
        shot="ac-attention-explorer",
    ),
    # d_k 64 -> 65: new histograms; the readout's headline follows.
    ExplorerCase(
        id="scaling-d-k",
        notebook=GALLERY,
        scope="ac-scaling-explorer",
        control="ac-d-k",
        figure="ac-histogram",
        readout="ac-readout",
        expect=r"d_k = {value}: var\(q·k\) ≈ d_k = {value},",
        shot="ac-scaling-explorer",
    ),
    # seq_len 6 -> 7: new per-head weights; the shapes table has T = 7 down to the weights.
    ExplorerCase(
        id="heads-seq-len",
        notebook=GALLERY,
        scope="ac-heads-explorer",
        control="ac-seq-len",
        figure="ac-weights",
        readout="ac-shapes",
        expect=r"T={value}, M=16, H=4[\s\S]*\(2, 4, {value}, {value}\)",
        shot="ac-heads-explorer",
    ),
    # Enter on "shuffle tokens": the shuffle seed steps 1 -> 2, the outputs are shown in the new
    # order, and the readout prints the order the core computes for seed 2.
    ExplorerCase(
        id="positional-shuffle",
        notebook=GALLERY,
        scope="ac-positional-explorer",
        control="ac-shuffle-button",
        key="Enter",
        value_of="ac-shuffle",
        figure="ac-outputs",
        readout="ac-readout",
        expect=_shuffle_order,
        shot="ac-positional-explorer",
    ),
    # head 0 -> 1: the token lines are redrawn, and the heatmap beside them (its canvas's
    # aria-label carries the title) says which head it shows.
    ExplorerCase(
        id="token-view-head",
        notebook=GALLERY,
        scope="ac-token-view",
        control="ac-head",
        figure="ac-panel-lines",
        readout="ac-panel-weights",
        readout_attr="aria-label",
        expect=r"^weights, head {value}: 1 x ",
        shot="ac-token-view",
    ),
    # Lesson 12's model view (MiniLM, head 3.1 opened), alone in notebooks/model_view.ipynb
    # (lesson 12 runs for a minute): head 1 -> 2 redraws the opened head's matrix, and the
    # readout names the new head (a real model, run by the course's code).
    ExplorerCase(
        id="model-view-head",
        notebook="model_view.ipynb",
        scope="ac-model-view",
        control="ac-head",
        figure="ac-panel-weights",
        readout="ac-readout",
        expect=r"layer 3, head {value}",
        shot="ac-model-view",
    ),
    # Lesson 15's RopeExplorer, alone in notebooks/rope.ipynb (lesson 15 measures SmolLM2 for
    # half a minute): positions 16 -> 17 redraws the score maps (matched layouts constant along
    # diagonals, mixed not), and the readout's headline has the new T.
    ExplorerCase(
        id="rope-seq-len",
        notebook="rope.ipynb",
        scope="ac-rope-explorer",
        control="ac-seq-len",
        figure="ac-scores",
        readout="ac-readout",
        expect=r"T = {value} positions",
        shot="ac-rope-explorer",
    ),
    # The QueryKeyExplorer of tests/browser/notebooks/qk_space.ipynb (SmolLM2, head 3.1, query
    # 10 picked): layer 3 -> 4 re-projects the head's queries and keys, and the readout names
    # the new layer.
    ExplorerCase(
        id="query-key-layer",
        notebook="qk_space.ipynb",
        scope="ac-query-key-explorer",
        control="ac-layer",
        figure="ac-panel-space",
        readout="ac-readout",
        expect=r"layer {value}, head 1, after RoPE",
        shot="ac-query-key-explorer",
    ),
    # Lesson 19's LatentExplorer (DeepSeek-V3): the latent width R 512 -> 768 (a selection
    # slider, whose handle reports the index of LATENT_RANKS) redraws the cache bars, and the
    # readout's formula has the new R.
    ExplorerCase(
        id="latent-kv-rank",
        notebook="after2024.ipynb",
        scope="ac-latent-explorer",
        control="ac-kv-rank",
        figure="ac-kinds",
        readout="ac-readout",
        expect=lambda index: rf"\(R {_latent_rank(index)} \+ Dr 64\)",
        shot="ac-latent-explorer",
    ),
    # Lesson 19's LinearAttentionExplorer: tokens read 3 -> 4 writes one more token into the
    # state panel, and the readout names the token.
    ExplorerCase(
        id="linear-attention-step",
        notebook="after2024.ipynb",
        scope="ac-linear-attention-explorer",
        control="ac-step",
        figure="ac-state",
        readout="ac-readout",
        expect=r"Token {value} of 8:",
        shot="ac-linear-attention-explorer",
    ),
    # Lesson 20's MaskFunctionExplorer (the document preset): T 12 -> 13 reruns the function on
    # the larger grid, redraws the weights and the readout says what the mask equals at the new T.
    ExplorerCase(
        id="mask-function-seq-len",
        notebook="mask_function.ipynb",
        scope="ac-mask-function-explorer",
        control="ac-seq-len",
        figure="ac-panel-weights",
        readout="ac-readout",
        expect=r"T = {value}, head h = 0[\s\S]*its mask equals document_mask\(doc\)",
        shot="ac-mask-function-explorer",
    ),
    # Lesson 18's PatchingExplorer (agreement pairs, layer 26): head -1 -> 0 patches head
    # 26.0 alone, the heads chart marks it and the readout names it.
    ExplorerCase(
        id="patching-head",
        notebook="interventions.ipynb",
        scope="ac-patching-explorer",
        control="ac-head",
        figure="ac-heads",
        readout="ac-readout",
        expect=r"head 26\.{value} patched alone",
        shot="ac-patching-explorer",
    ),
    # Lesson 18's RolloutExplorer (MiniLM, the row of "it"): layer 3 -> 4 redraws both rows and
    # the readout names the layers the rollout now runs through.
    ExplorerCase(
        id="rollout-layer",
        notebook="interventions.ipynb",
        scope="ac-rollout-explorer",
        control="ac-layer",
        figure="ac-rows",
        readout="ac-readout",
        expect=r"rollout through layers 0\.\.{value}",
        shot="ac-rollout-explorer",
    ),
]


# Views a lesson feeds with data of its own (its hand-built weights, a trained or a real model's,
# a live chart): a lesson that builds one runs in JupyterLab (test_lab.py) from top to bottom.
# Every other lesson shows only explorers as the gallery and LESSON_EXPLORERS show them, which
# the keyboard cases below drive in JupyterLab and Voila; every lesson runs under nbval and in the
# site build as well, so a cell that fails anywhere fails the suite.
DATA_VIEWS = (
    "TokenAttentionView",
    "TrainingAttentionExplorer",
    "HeadView",
    "ModelView",
    "NeuronView",
    "SeriesChart",
    "InductionExplorer",
    "PatchingExplorer",
    "RolloutExplorer",
    "QueryKeyExplorer",
)


def builds_data_view(notebook: Path) -> bool:
    """Whether a code cell of the notebook builds one of DATA_VIEWS."""
    built = re.compile(r"\b(?:" + "|".join(DATA_VIEWS) + r")\(")
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return any(c["cell_type"] == "code" and built.search("".join(c["source"])) for c in cells)


def notebook_params() -> list[object]:
    """The demo notebooks no keyboard case runs, and the lessons that build a data view.

    Not the notebooks that hold explorers for a keyboard case (model_view.ipynb, the gallery,
    ...): the case runs them and fails on an error cell already."""
    fixtures = {c.notebook for c in EXPLORER_CASES}
    demos = [p for p in harness.demo_notebooks() if p.name not in fixtures]
    params: list[object] = [pytest.param(p.name, id=p.stem) for p in demos]
    lessons = [
        p
        for p in harness.lesson_notebooks()
        if f"lessons/{p.name}" not in fixtures and builds_data_view(p)
    ]
    params += [pytest.param(f"lessons/{p.name}", id=p.stem) for p in lessons]
    if not lessons:
        skip = pytest.mark.skip(reason="no lesson builds a data view")
        params.append(pytest.param("lessons/*.ipynb", id="lessons", marks=skip))
    return params


def explorer_params() -> list[object]:
    return [pytest.param(case, id=case.id) for case in EXPLORER_CASES]


def find(page: Page, case: ExplorerCase, css_class: str) -> Locator:
    """The element of the case with `css_class`: inside its `scope` explorer, if it has one."""
    if case.scope is None:
        return harness.widget(page, css_class, case.nth)
    explorer = harness.widget(page, case.scope, case.nth)
    return explorer if css_class == case.scope else explorer.locator(f".{css_class}").first


def operate_explorer(page: Page, case: ExplorerCase, screenshot_name: str) -> str:
    """Act on the case's control; assert figure and readout changed; save and return a screenshot.

    Works the same in JupyterLab and Voilà (both render ipywidgets into the page's DOM).
    """
    control = find(page, case, case.control)
    valued = find(page, case, case.value_of) if case.value_of else control
    figure = find(page, case, case.figure)
    readout = find(page, case, case.readout) if case.readout else None
    # A notebook with several explorers may still be rendering the one under test.
    for element in (control, valued, figure, *([readout] if readout is not None else [])):
        element.wait_for(state="visible", timeout=harness.UPDATE_S * 1000)

    pixels_before = _wait_drawn(figure, case)
    text_before = _read(readout, case) if readout is not None else ""
    value_before = harness.control_value(valued) if case.key else ""

    if case.key:
        harness.press_key(page, control, case.key)
        value_after = _wait_value_change(valued, value_before)
    else:
        harness.click_at(control, *case.click)
        value_after = ""

    harness.wait_for_change(page, figure, pixels_before)  # raises if the pixels never change
    if readout is not None:
        text_after = _wait_read(readout, case, lambda t: t != text_before)
        if text_after is None:
            raise AssertionError(f"{case.id}: the readout stayed {text_before!r}")
        if case.expect:
            if callable(case.expect):
                pattern = case.expect(value_after)
            else:
                pattern = case.expect.replace("{value}", re.escape(value_after))
            # The readout comes from the kernel after the figure; give it time to settle.
            matched = _wait_read(readout, case, lambda t: re.search(pattern, t) is not None)
            assert matched is not None, (
                f"{case.id}: readout {_read(readout, case)!r} does not match {pattern!r} "
                f"after the control went {value_before!r} -> {value_after!r}"
            )
    if case.shot:
        return str(harness.screenshot(find(page, case, case.shot), screenshot_name))
    shown_with = [control] + ([readout] if readout is not None else [])
    return str(harness.screenshot(figure, screenshot_name, *shown_with))


def _wait_drawn(figure: Locator, case: ExplorerCase) -> str:
    """Return the figure's signature once it has been drawn and holds still.

    Before its first draw a canvas may already be in the page (blank): a signature taken then
    would change by itself and prove nothing about the control.
    """
    page = figure.page
    last = ""
    for _ in range(int(harness.UPDATE_S / 0.15)):
        drawn = figure.evaluate(
            """(el) => {
              const counted = [...(el.matches('[data-redraws]') ? [el] : []),
                               ...el.querySelectorAll('[data-redraws]')];
              return counted.every((e) => Number(e.dataset.redraws) >= 1);
            }"""
        )
        now = harness.signature(figure) if drawn else ""
        if now and now == last:
            return now
        last = now
        page.wait_for_timeout(150)
    raise AssertionError(f"{case.id}: .{case.figure} holds no drawn canvas, img or svg")


def _read(readout: Locator, case: ExplorerCase) -> str:
    if case.readout_attr is None:
        return readout.inner_text()
    value = readout.evaluate(
        """(el, name) => el.getAttribute(name) ??
                         el.querySelector(`[${name}]`)?.getAttribute(name) ?? ''""",
        case.readout_attr,
    )
    return str(value)


def _wait_read(readout: Locator, case: ExplorerCase, ok: Callable[[str], bool]) -> str | None:
    """Poll the readout until `ok(text)`; return that text, or None after UPDATE_S."""
    page = readout.page
    for _ in range(int(harness.UPDATE_S / 0.1)):
        text = _read(readout, case)
        if ok(text):
            return text
        page.wait_for_timeout(100)
    return None


def _wait_value_change(control: Locator, before: str) -> str:
    page = control.page
    for _ in range(int(harness.UPDATE_S / 0.1)):
        after = harness.control_value(control)
        if after != before:
            return after
        page.wait_for_timeout(100)
    raise AssertionError(f"control value stayed {before!r}: the key press did not move it")
