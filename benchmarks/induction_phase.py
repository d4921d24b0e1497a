"""Does lesson 17's toy show a plateau, then a cliff? The probe loss's shape over settings.

    .venv/bin/python benchmarks/induction_phase.py                 # the grid below, seeds 0-2
    .venv/bin/python benchmarks/induction_phase.py --seeds 1 --only lr=3e-4

Each run is lesson 17's model (InductionTask(), two layers of one head, attention only,
learned positions) with one setting changed, trained until the loss on the repeated part falls
under PHASE_LOSS (1 nat, the lesson's "phase change") and 200 steps more, or MAX_STEPS. The
curve is the probe loss recorded every 10 steps (a fixed batch of 64 sequences).

What a plateau-then-cliff would look like, in numbers (curve_shape in the toy's module): the
*cliff* is the steepest fall of the loss over WINDOW steps; a *plateau* is a stretch before it
where the loss falls at under FLAT of the cliff's rate. The table prints, per run:
  cliff     the steepest WINDOW-step fall (nats) and the step where that window starts
  flattest  the slowest WINDOW-step fall between step WINDOW and the cliff, as a fraction of
            the cliff (1.00 = as steep; 0 = flat)
  plateau   the longest stretch of steps before the cliff where every WINDOW-step fall is
            under FLAT of the cliff (0: no window that flat)
  verdict   "plateau" when that stretch lasts at least MIN_PLATEAU steps, else "steady"
and the loss every 100 steps. One thread; each run prints its wall time (the machine may be
shared, so the times are only a guide).
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace

import torch

from attention.models.toy.induction import (
    InductionConfig,
    InductionRun,
    InductionTask,
    curve_shape,
)

WINDOW = 50  # steps over which a fall is measured
FLAT = 0.2  # a plateau falls at under this fraction of the cliff's rate
MIN_PLATEAU = 150  # steps
MAX_STEPS = 4000
AFTER = 200  # steps trained after the phase change

BASE = InductionConfig()  # the lesson's model: d_model 32, lr 3e-3, batch 32
TASK = InductionTask()  # vocab 64, n from 4 to 16
SETTINGS: dict[str, tuple[InductionTask, InductionConfig]] = {
    "lesson (lr=3e-3)": (TASK, BASE),
    "lr=1e-2": (TASK, replace(BASE, lr=1e-2)),
    "lr=1e-3": (TASK, replace(BASE, lr=1e-3)),
    "lr=3e-4": (TASK, replace(BASE, lr=3e-4)),
    "d_model=16": (TASK, replace(BASE, d_model=16)),
    "d_model=128": (TASK, replace(BASE, d_model=128)),
    "vocab=256": (InductionTask(vocab=256), BASE),
    "layer_norm": (TASK, replace(BASE, layer_norm=True)),
}


def train(task: InductionTask, config: InductionConfig) -> tuple[InductionRun, float]:
    run = InductionRun(task, config)
    start = time.perf_counter()
    run.run(MAX_STEPS, until_formed=True)
    if run.history.phase_step is not None:
        run.run(AFTER)
    return run, time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--only", action="append", help="a setting's name (repeatable)")
    args = p.parse_args()
    torch.set_num_threads(1)
    names = args.only or list(SETTINGS)
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print(
        f"cliff = steepest {WINDOW}-step fall of the probe loss; flattest = slowest {WINDOW}-step "
        f"fall before it / the cliff; plateau = the longest stretch before it where every "
        f"{WINDOW}-step fall is < {FLAT:g} x the cliff"
    )
    head = "setting          seed | phase | cliff (nats @ step) | flattest | plateau | verdict"
    print(head)
    curves = []
    for name in names:
        task, config = SETTINGS[name]
        for seed in range(args.seeds):
            run, seconds = train(task, replace(config, seed=seed))
            h = run.history
            s = curve_shape(h.steps, h.loss, WINDOW, FLAT)
            verdict = "plateau" if s.plateau >= MIN_PLATEAU else "steady"
            phase = f"{h.phase_step:5d}" if h.phase_step is not None else " none"
            print(
                f"{name:16} {seed:4d} | {phase} | {s.cliff:5.2f} @ {s.cliff_at:5d}        | "
                f"{s.flattest:8.2f} | {s.plateau:7d} | {verdict} ({seconds:.0f} s)",
                flush=True,
            )
            curves.append((name, seed, h.steps, h.loss))
    print("\nthe probe loss every 100 steps (nats), from step 0")
    for name, seed, steps, loss in curves:
        every = 100 // (steps[1] - steps[0])
        print(f"{name:16} {seed:4d} | " + " ".join(f"{v:.2f}" for v in loss[::every]))


if __name__ == "__main__":
    main()
