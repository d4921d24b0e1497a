"""Key press -> changed figure, in headless Chromium + JupyterLab or Voilà: median of N presses.

    python benchmarks/browser_latency.py [--presses 12] [--baseline DIR] [--json FILE]
                                         [--switch-cells] [--voila] [--quick-release]

Measures, in one run on one server and one browser (the same set-up as the browser tests,
harness/__init__.py):
  bare      slider -> text label: the floor of any widget that goes through the kernel
  naive     `interactive` + a fresh inline matplotlib 8x8 heatmap per move (the tutorial way)
  explorer  widgets.AttentionExplorer at seq_len 8 and at seq_len 64 (all panels shown), for
            each slider the course is about: seed, seq_len, d_k, n_heads, mask and the
            inspected head; timed until every panel that the move changes has redrawn
and prints a table with each time's ratio to the bare round trip (goal: <= 1.5) and naive /
explorer (goal: >= 3). Each time runs from the keydown event to the first animation frame
showing the change, measured inside the page, so it includes up to one frame of polling. The
cases are interleaved, round after round, so load from elsewhere on the machine hits them alike.

Each press finds its control focused and the page at rest, as a learner's next move of a
slider does. Focusing a control in another cell makes that cell JupyterLab's active cell, and
the page then repaints every frame for 1.2 s (every code editor restarts its cursor blink);
on a 2-core machine that slows the kernel's messages by several ms, more for a large update
than for the bare label. --switch-cells measures that case instead: each press right after
focusing its control, the way the first move after clicking a slider in another cell goes.
--voila measures on the classroom page instead (`make classroom`: Voila, no code editors).

Each key is held down until the change shows, then released, as a person's key press (about
0.1 s) is. --quick-release presses the way Playwright's `press` does instead, releasing the key
at once: Chromium then holds the page's network messages back until it has drawn a frame after
the key-up as well, which delays every reply from the kernel (the bare one too) by up to a frame.

--baseline DIR measures a second copy of the `widgets` package (e.g. an older commit's:
`git archive <rev> widgets | tar -x -C /tmp/old`, then `--baseline /tmp/old/widgets`) in the
same notebook, interleaved with the current one, and prints both columns side by side: a
before/after comparison that machine load cannot bias.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: make `tests` and `widgets` importable

import harness  # noqa: E402
from harness.chromium import unavailable_reason  # noqa: E402

NOTEBOOK = "bench_latency.ipynb"
VIEWPORT = {"width": 1400, "height": 1400}  # the 64-token explorer fits, so it is painted
BASELINE_PACKAGE = "widgets_baseline"  # the --baseline copy, importable from the served root

BARE_CELL = """\
import ipywidgets as ipw

bare = ipw.IntSlider(value=50, min=0, max=100, description="bare")
bare.add_class("bench-bare-slider")
bare_label = ipw.Label()
bare_label.add_class("bench-bare-label")


def show_value(change=None):
    bare_label.value = f"value = {bare.value}"


bare.observe(show_value, names="value")
show_value()
ipw.VBox([bare, bare_label])"""

NAIVE_CELL = """\
%matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
from ipywidgets import interactive


def heatmap(seed=0):
    scores = np.random.default_rng(seed).normal(size=(8, 8))
    weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.imshow(weights, cmap="viridis", vmin=0, vmax=1)
    ax.set_title(f"weights, seed {seed}")
    plt.show()


naive = interactive(heatmap, seed=(0, 100))
naive.children[0].add_class("bench-naive-slider")
naive.children[-1].add_class("bench-naive-figure")
naive"""

# Two explorers per size, so that moving d_k never changes what another case starts from
# (d_k is the width of each head, and n_heads * d_k <= 256, so d_k 16 <-> 17 moves the head
# count's range). "main" (d_k 16, two heads): seed, seq_len, n_heads 2 <-> 3, mask none <->
# causal, head 0 <-> 1; "dk" (one head): d_k 16 <-> 17.
EXPLORERS = {
    "main": "n_heads=2",
    "dk": "n_heads=1",
}
SIZES = (8, 64)

ALL_PANELS = (
    "q",
    "k",
    "raw-scores",
    "scores",
    "weights",
    "output",
    "per-head",
)


@dataclass(frozen=True)
class Slider:
    name: str  # as printed
    explorer: str  # key of EXPLORERS
    control: str  # CSS class of the control
    panels: tuple[str, ...]  # the panels a move changes (ac-panel-<name>)
    # alternated, so it stays in range; a menu (select) takes ArrowDown / ArrowUp instead
    keys: tuple[str, str] = ("ArrowRight", "ArrowLeft")


SLIDERS = (
    Slider("seed", "main", "ac-seed", ALL_PANELS),
    Slider("seq_len", "main", "ac-seq-len", ALL_PANELS),
    Slider("d_k", "dk", "ac-d-k", ALL_PANELS),
    Slider("n_heads", "main", "ac-n-heads", ALL_PANELS),
    # none <-> causal: Q, K and the raw scores stay as they are
    Slider("mask", "main", "ac-mask", ("scores", "weights", "output", "per-head")),
    # head 0 <-> 1: the merged output and the small multiples of every head stay
    Slider("head", "main", "ac-head", ("q", "k", "raw-scores", "scores", "weights")),
)


@dataclass(frozen=True)
class Case:
    name: str
    control: str  # CSS selector of the control pressed
    targets: str  # CSS selector of the element(s) that must all change
    keys: tuple[str, str] = ("ArrowRight", "ArrowLeft")  # there, and back
    nth: tuple[int, int] = (0, 0)  # which match of `control` each of the two keys goes to


BARE = Case("bare round trip (slider -> label)", ".bench-bare-slider", ".bench-bare-label")
NAIVE = Case("naive interact + inline 8x8 heatmap", ".bench-naive-slider", ".bench-naive-figure")


def explorer_class(package: str, explorer: str, size: int) -> str:
    return f"bench-{package.replace('_', '-')}-{explorer}-{size}"


def explorer_cells(package: str) -> list[str]:
    cells = [f"import {package}"]
    for size in SIZES:
        for explorer, settings in EXPLORERS.items():
            name = explorer_class(package, explorer, size)
            var = name.replace("-", "_")
            cells.append(
                f"{var} = {package}.AttentionExplorer(seq_len={size}, {settings})\n"
                f'{var}.add_class("{name}")\n{var}'
            )
    return cells


def explorer_cases(package: str) -> list[Case]:
    cases = []
    for size in SIZES:
        for s in SLIDERS:
            scope = "." + explorer_class(package, s.explorer, size)
            # at seq_len 64 (the maximum) the first press goes down, then back up
            keys = s.keys[::-1] if s.name == "seq_len" and size == max(SIZES) else s.keys
            targets = ", ".join(f"{scope} .ac-panel-{p}" for p in s.panels)
            label = f"{package}: " if package != "widgets" else ""
            cases.append(Case(f"{label}{s.name} @ {size}", f"{scope} .{s.control}",
                              targets, keys))  # fmt: skip
    return cases


def as_pressed(page, case: Case) -> Case:
    """The case as the page can press it: a menu (select) takes ArrowDown, then ArrowUp; a
    row of toggle buttons (an older explorer's mask) takes Enter on its second button, then
    on its first; a slider takes the case's keys. (An older explorer's n_heads was a menu.)"""
    from dataclasses import replace

    control = page.locator(case.control).first
    if control.locator("select").count():
        return replace(case, keys=("ArrowDown", "ArrowUp"))
    if control.locator(".noUi-handle").count() or not control.locator("button").count():
        return case
    return replace(case, control=f"{case.control} button", keys=("Enter", "Enter"), nth=(1, 0))


def explorer_available() -> bool:
    try:
        import widgets
    except ImportError:
        return False
    return hasattr(widgets, "AttentionExplorer")


def write_notebook(path: Path, packages: list[str]) -> None:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    cells = [BARE_CELL, NAIVE_CELL]
    for package in packages:
        cells += explorer_cells(package)
    nb = new_notebook(
        cells=[new_code_cell(source) for source in cells],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    nbformat.write(nb, path)


def wait_kernel_idle(notebook: harness.LabNotebook) -> None:
    """Let the previous update finish (kernel idle, one more frame) before the next press."""
    for _ in range(200):
        state = notebook.state()
        if state is not None and "Idle" in state["status"]:
            break
        notebook.page.wait_for_timeout(50)
    notebook.page.wait_for_timeout(100)


def wait_page_still(page, timeout_ms: int = 3000) -> None:
    """Wait until no CSS animation runs on the page (at most `timeout_ms`).

    Focusing a control in another cell makes that cell JupyterLab's active cell; every code
    editor of the notebook then updates and restarts its cursor's 1.2 s blink animation
    (CodeMirror), and the page is repainted every frame until the blinks end, which on this
    2-core machine slows the kernel's messages by several ms. That is a cost of switching
    cells, the same for any widget, not of moving a slider: the press waits it out.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(
            "() => !document.getAnimations().some((a) => a.playState === 'running')",
            timeout=timeout_ms,
        )
    except PlaywrightTimeout:  # an endless animation: measure anyway
        pass


def measure(
    page,
    settle: Callable[[], None],
    cases: list[Case],
    presses: int,
    warmup: int = 2,
    switch_cells: bool = False,
    hold: bool = True,
) -> dict[str, list[float]]:
    """Press each case's control in turn, round after round, and time each press.

    By default each press finds its control focused and the page at rest (wait_page_still);
    with `switch_cells` it comes right after focusing the control, as the first move after
    clicking a slider in another cell does. `settle()` waits for the previous update to end.
    `hold`: the key stays down until the change shows (harness.key_to_change_ms).
    """
    times: dict[str, list[float]] = {case.name: [] for case in cases}
    for round_ in range(warmup + presses):
        for case in cases:
            key = case.keys[round_ % 2]  # there and back: stays inside the control's range
            control = page.locator(case.control).nth(case.nth[round_ % 2])
            targets = page.locator(case.targets)
            targets.first.scroll_into_view_if_needed()
            if switch_cells:
                settle()  # the press focuses the control
            else:
                # focused, and the page at rest: as a learner's next move of a slider finds it
                handle = harness.focus_target(control)
                handle.scroll_into_view_if_needed()
                handle.focus()
                settle()
                wait_page_still(page)
            elapsed = harness.key_to_change_ms(page, control, targets, key, hold=hold)
            if round_ >= warmup:
                times[case.name].append(elapsed)
    return times


def run(
    presses: int,
    baseline: Path | None = None,
    switch_cells: bool = False,
    voila: bool = False,
    hold: bool = True,
) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    packages = ["widgets"] if explorer_available() else []
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="browser-latency-") as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        if baseline is not None:
            shutil.copytree(baseline, root / BASELINE_PACKAGE)
            packages.append(BASELINE_PACKAGE)
        write_notebook(root / NOTEBOOK, packages)
        start = harness.start_voila if voila else harness.start_jupyterlab
        server = start(root, Path(tmp) / "state")
        try:
            with sync_playwright() as playwright:
                browser = harness.launch_browser(playwright)
                page = browser.new_context(viewport=VIEWPORT).new_page()
                if voila:  # the classroom page: the notebook run, its code hidden
                    harness.open_voila(page, server, NOTEBOOK, ready_class="bench-bare-slider")
                    errors = harness.voila_errors(page)

                    def settle() -> None:  # no kernel indicator on the page: updates take < 0.1 s
                        page.wait_for_timeout(300)
                else:
                    notebook = harness.LabNotebook(page, server, NOTEBOOK).open()
                    notebook.run_all()
                    errors = [str(e) for e in notebook.error_cells()]

                    def settle() -> None:
                        wait_kernel_idle(notebook)

                if errors:
                    raise SystemExit(f"benchmark notebook failed: {'; '.join(errors)}")
                cases = [BARE, NAIVE]
                for package in packages:
                    cases += [as_pressed(page, case) for case in explorer_cases(package)]
                results = measure(
                    page, settle, cases, presses, switch_cells=switch_cells, hold=hold
                )
                browser.close()
        finally:
            server.stop()
    return results


def paired_ratio(times: list[float], bare: list[float]) -> float:
    """Median over rounds of this case's time over the bare round trip's in the same round.

    Load from elsewhere on the machine comes and goes over seconds; within one round the two
    presses are close in time, so their ratio wanders much less than either time does.
    """
    return statistics.median(t / b for t, b in zip(times, bare, strict=False))


def paired_extra(times: list[float], bare: list[float]) -> float:
    """Median over rounds of this case's time minus the bare round trip's in the same round
    (ms): what the update costs beyond the round trip, which the ratio hides when the bare
    press itself is fast or slow (it moves by a frame, 16.7 ms, from run to run)."""
    return statistics.median(t - b for t, b in zip(times, bare, strict=False))


def report(
    results: dict[str, list[float]],
    presses: int,
    seconds: float,
    switch_cells: bool = False,
    voila: bool = False,
    hold: bool = True,
) -> str:
    medians = {name: statistics.median(times) for name, times in results.items()}
    bare, naive = medians[BARE.name], medians[NAIVE.name]
    ratio = {name: paired_ratio(times, results[BARE.name]) for name, times in results.items()}
    extra = {name: paired_extra(times, results[BARE.name]) for name, times in results.items()}
    lines = [
        f"Key press -> changed figure, headless Chromium + {'Voila' if voila else 'JupyterLab'}, "
        f"median of {presses} "
        "presses (ms; min-max); x bare, + bare: the median of each round's ratio to, and "
        "difference from, the bare press",
        (
            "each press right after focusing its control (switching cells)"
            if switch_cells
            else "each press on a page at rest, its control focused"
        )
        + ("; the key held until the change shows" if hold else "; the key released at once"),
        "",
        f"{'case':40s} {'median':>8s} {'min':>7s} {'max':>7s} {'x bare':>7s} {'+ bare':>7s}",
    ]
    for name, times in results.items():
        if name.startswith(f"{BASELINE_PACKAGE}: "):
            continue
        lines.append(
            f"{name:40s} {medians[name]:8.1f} {min(times):7.1f} {max(times):7.1f} "
            f"{ratio[name]:7.2f} {extra[name]:7.1f}"
        )
    if not explorer_available():
        lines.append("AttentionExplorer: not available (no widgets.AttentionExplorer)")
    lines.append("")
    lines.append(f"naive / bare {ratio[NAIVE.name]:5.2f}")
    explorer = [n for n in medians if "@" in n and not n.startswith(BASELINE_PACKAGE)]
    if explorer:
        worst = max(explorer, key=lambda n: ratio[n])
        lines.append(
            f"slowest explorer case: {worst}, {ratio[worst]:.2f} x bare (goal <= 1.5); "
            f"naive / it {naive / medians[worst]:.2f} (goal >= 3)"
        )
    before = {n.split(": ", 1)[1]: n for n in medians if n.startswith(BASELINE_PACKAGE)}
    if before:
        lines += ["", f"{'slider @ seq_len':20s} {'baseline':>11s} {'current':>11s}  (ms, x bare)"]
        for name, old in before.items():
            if name in medians:
                lines.append(
                    f"{name:20s} {medians[old]:6.1f} {ratio[old]:4.2f} "
                    f"{medians[name]:6.1f} {ratio[name]:4.2f}"
                )
    lines.append(f"(bare median {bare:.1f} ms; measured in {seconds:.0f} s, with server start)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=12, help="measured presses per case")
    parser.add_argument("--json", type=Path, help="also write the raw times (ms) to this file")
    parser.add_argument(
        "--voila",
        action="store_true",
        help="measure on the classroom page (Voila, make classroom) instead of JupyterLab",
    )
    parser.add_argument(
        "--switch-cells",
        action="store_true",
        help="press right after focusing the control (the first move after switching cells), "
        "instead of on a page at rest",
    )
    parser.add_argument(
        "--quick-release",
        action="store_true",
        help="release each key at once (Playwright's press) instead of holding it until the "
        "change shows",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a copy of the widgets package (e.g. an older commit's) to measure beside this one",
    )
    args = parser.parse_args(argv)
    if args.presses < 1:
        parser.error(f"--presses: expected >= 1, got {args.presses}")
    if args.baseline is not None and not (args.baseline / "__init__.py").exists():
        parser.error(f"--baseline: {args.baseline} is not a package folder (no __init__.py)")
    reason = unavailable_reason()
    if reason is not None:
        print(f"browser latency benchmark skipped: {reason}")
        return 0
    start = time.monotonic()
    hold = not args.quick_release
    results = run(args.presses, args.baseline, args.switch_cells, args.voila, hold)
    print(
        report(results, args.presses, time.monotonic() - start, args.switch_cells, args.voila, hold)
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
