"""Time to the phase change of the induction toy, with and without live drawing, 1 and 2 threads.

    .venv/bin/python benchmarks/induction.py              # seeds 0-4, the explorer's defaults
    .venv/bin/python benchmarks/induction.py --seeds 3

Three ways, each until the loss on the repeated part falls under PHASE_LOSS (the phase change):
  plain     InductionRun.run(until_formed=True): training and the probe records, nothing drawn
  explorer  InductionExplorer.train(): the same, plus a redraw of every panel at most every
            DRAW_EVERY_S seconds (reading the run, the ablation and K-composition, and the
            views' messages): the kernel's whole cost of watching it train
  every     the explorer redrawing after every record (every 10 steps)
The drawing itself happens in the browser, in another process. Goal (issue 27): the phase change
on screen in under 10 s with drawing, one thread. The machine may be shared: the script prints
wall time and this process's CPU time; wall time is only meaningful on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from attention.models.toy.induction import InductionConfig, InductionRun, InductionTask
from widgets import registry  # noqa: F401 - the explorer's name comes from the registry
from widgets.explorers import induction as live


def plain(seed: int) -> tuple[float, int]:
    run = InductionRun(InductionTask(), InductionConfig(seed=seed))
    start = time.perf_counter()
    run.run(3000, until_formed=True)
    return time.perf_counter() - start, run.history.phase_step or -1


def explorer(seed: int, threads: int, draw_every_s: float) -> tuple[float, int, int]:
    e = live.InductionExplorer(seed=seed, steps=3000)
    e.single_thread = threads == 1
    seen: dict[str, float] = {}
    draw = e._draw

    def draw_and_time(r) -> None:  # the first redraw that shows the phase change stops it
        draw(r)
        if r.phase_step is not None and "t" not in seen:
            seen["t"] = time.perf_counter()
            e._stop.set()

    e._draw = draw_and_time
    old, live.DRAW_EVERY_S = live.DRAW_EVERY_S, draw_every_s
    try:
        start = time.perf_counter()
        e.train()
    finally:
        live.DRAW_EVERY_S = old
    return seen.get("t", time.perf_counter()) - start, e.result.phase_step or -1, e.draws


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=5)
    args = p.parse_args()
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print("way      threads | phase step (per seed)       | seconds to the phase change")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for way in ("plain", "explorer", "every"):
            cpu, times, steps, draws = time.process_time(), [], [], []
            for seed in range(args.seeds):
                if way == "plain":
                    t, step = plain(seed)
                else:
                    t, step, n = explorer(
                        seed, threads, live.DRAW_EVERY_S if way == "explorer" else 0
                    )
                    draws.append(n)
                times.append(t)
                steps.append(step)
            extra = f"; {statistics.mean(draws):.0f} redraws per run" if draws else ""
            print(
                f"{way:8} {threads:7d} | {' '.join(f'{s:4d}' for s in steps):27} | "
                f"{min(times):.1f}-{max(times):.1f} s (median {statistics.median(times):.1f}); "
                f"CPU {time.process_time() - cpu:.1f} s in all{extra}"
            )


if __name__ == "__main__":
    main()
