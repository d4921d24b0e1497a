"""Key press -> changed figure, in headless Chromium + JupyterLab: median of N presses each.

    python benchmarks/browser_latency.py [--presses 12]

Measures, in one run on one server and one browser (the same set-up as the browser tests,
tests/browser/harness.py):
  bare      slider -> text label: the floor of any widget that goes through the kernel
  naive     `interactive` + a fresh inline matplotlib 8x8 heatmap per move (the tutorial way)
  explorer  widgets.AttentionExplorer at a teaching size, and at seq_len 64 with all panels
            (seed slider; timed until every heatmap panel has redrawn)
and prints a table with the ratios the Widgets issue sets goals for: explorer / bare <= 1.5,
naive / explorer >= 3. Each time runs from the keydown event to the first animation frame
showing the change, measured inside the page, so it includes up to one frame of polling.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: make `tests` and `widgets` importable

from tests.browser import harness  # noqa: E402
from tests.browser_setup import unavailable_reason  # noqa: E402

NOTEBOOK = "bench_latency.ipynb"
VIEWPORT = {"width": 1400, "height": 1400}  # the 64-token explorer fits, so it is painted

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

EXPLORER_CELLS = [
    """\
from widgets import AttentionExplorer

teaching = AttentionExplorer(seq_len=8)
teaching.add_class("bench-teaching")
teaching""",
    """\
large = AttentionExplorer(seq_len=64)
large.add_class("bench-large")
large""",
]


@dataclass(frozen=True)
class Case:
    name: str
    control: str  # CSS selector of the control pressed
    targets: str  # CSS selector of the element(s) that must all change


BARE = Case("bare round trip (slider -> label)", ".bench-bare-slider", ".bench-bare-label")
NAIVE = Case("naive interact + inline 8x8 heatmap", ".bench-naive-slider", ".bench-naive-figure")
EXPLORER_TEACHING = Case(
    "AttentionExplorer seq_len=8", ".bench-teaching .ac-seed", ".bench-teaching .ac-heatmap"
)
EXPLORER_LARGE = Case(
    "AttentionExplorer seq_len=64, all panels", ".bench-large .ac-seed", ".bench-large .ac-heatmap"
)


def explorer_available() -> bool:
    try:
        import widgets
    except ImportError:
        return False
    return hasattr(widgets, "AttentionExplorer")


def write_notebook(path: Path, with_explorer: bool) -> None:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    cells = [BARE_CELL, NAIVE_CELL, *(EXPLORER_CELLS if with_explorer else [])]
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


def measure(
    notebook: harness.LabNotebook, cases: list[Case], presses: int, warmup: int = 2
) -> dict[str, list[float]]:
    """Press each case's control in turn, round after round, and time each press.

    Interleaving the cases means a burst of load from elsewhere on the machine hits all of
    them alike, so the ratios stay meaningful even when the absolute times wander.
    """
    page = notebook.page
    times: dict[str, list[float]] = {case.name: [] for case in cases}
    for round_ in range(warmup + presses):
        key = "ArrowRight" if round_ % 2 == 0 else "ArrowLeft"  # stays inside the slider range
        for case in cases:
            control = page.locator(case.control).first
            targets = page.locator(case.targets)
            targets.first.scroll_into_view_if_needed()
            wait_kernel_idle(notebook)
            elapsed = harness.key_to_change_ms(page, control, targets, key)
            if round_ >= warmup:
                times[case.name].append(elapsed)
    return times


def run(presses: int) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    with_explorer = explorer_available()
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="browser-latency-") as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        write_notebook(root / NOTEBOOK, with_explorer)
        server = harness.start_jupyterlab(root, Path(tmp) / "state")
        try:
            with sync_playwright() as playwright:
                browser = harness.launch_browser(playwright)
                page = browser.new_context(viewport=VIEWPORT).new_page()
                notebook = harness.LabNotebook(page, server, NOTEBOOK).open()
                notebook.run_all()
                errors = notebook.error_cells()
                if errors:
                    raise SystemExit(f"benchmark notebook failed: {'; '.join(map(str, errors))}")
                cases = [BARE, NAIVE] + (
                    [EXPLORER_TEACHING, EXPLORER_LARGE] if with_explorer else []
                )
                results = measure(notebook, cases, presses)
                browser.close()
        finally:
            server.stop()
    return results


def report(results: dict[str, list[float]], presses: int, seconds: float) -> str:
    medians = {name: statistics.median(times) for name, times in results.items()}
    lines = [
        f"Key press -> changed figure, headless Chromium + JupyterLab, median of {presses} "
        f"presses (ms; min-max)",
        "",
        f"{'case':44s} {'median':>8s} {'min':>7s} {'max':>7s}",
    ]
    for name, times in results.items():
        lines.append(f"{name:44s} {medians[name]:8.1f} {min(times):7.1f} {max(times):7.1f}")
    for name in (EXPLORER_TEACHING.name, EXPLORER_LARGE.name):
        if name not in results:
            lines.append(f"{name:44s} {'not available (no widgets.AttentionExplorer)':>8s}")
    lines.append("")
    bare, naive = medians[BARE.name], medians[NAIVE.name]
    lines.append(f"naive / bare                                  {naive / bare:5.2f}")
    for name in (EXPLORER_TEACHING.name, EXPLORER_LARGE.name):
        if name in medians:
            explorer = medians[name]
            lines.append(f"{name}: explorer / bare {explorer / bare:5.2f} (goal <= 1.5), "
                         f"naive / explorer {naive / explorer:5.2f} (goal >= 3)")  # fmt: skip
    lines.append(f"(measured in {seconds:.0f} s, including server start)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=12, help="measured presses per case")
    parser.add_argument("--json", type=Path, help="also write the raw times (ms) to this file")
    args = parser.parse_args(argv)
    if args.presses < 1:
        parser.error(f"--presses: expected >= 1, got {args.presses}")
    reason = unavailable_reason()
    if reason is not None:
        print(f"browser latency benchmark skipped: {reason}")
        return 0
    start = time.monotonic()
    results = run(args.presses)
    print(report(results, args.presses, time.monotonic() - start))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
