"""Associative recall, trained on the CPU: softmax attention against linear attention.

The task, the model and the training are attention.models.toy.recall's (lesson 19 trains
three of these models live): N key-value pairs, one position each, then one of the keys; one
attention layer of width d, softmax or linear, answers with the key's value. One model learns
every N of --pairs (the training steps cycle through them) and is scored at each N on 2,048
held-out sequences (chance: 1 / --values). This script trains each (kind, width) once per
seed and prints the median accuracy and, over the seeds, its range.

Run: nice -n 10 .venv/bin/python benchmarks/recall.py [--pairs 2 4 8 16 32]
     [--widths 16 32 64] [--kinds softmax linear] [--seeds 0 1 2] [--steps 1000] [--threads 1]
Measured on this course's shared 2-core machine (one thread; 2026-11-25): see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from attention.models.toy.recall import (
    EVAL_SEQUENCES,
    KINDS,
    PAIRS,
    RecallRun,
    memory_numbers,
    train_recall,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, nargs="+", default=list(PAIRS))
    parser.add_argument("--widths", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--keys", type=int, default=64)
    parser.add_argument("--values", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(
        f"associative recall: N pairs (keys of {args.keys}, values of {args.values}), one query; "
        f"one model per (kind, width, seed) trained on N = {args.pairs} in turn, {args.steps} "
        f"steps, batch {args.batch}, lr {args.lr}, seeds {args.seeds}; accuracy on "
        f"{EVAL_SEQUENCES} held-out sequences (chance {1 / args.values:.1%}), "
        "median [min-max] over the seeds"
    )
    columns = [(kind, d) for d in args.widths for kind in args.kinds]
    runs: dict[tuple[str, int], list[RecallRun]] = {}
    start = time.perf_counter()
    for kind, d in columns:
        runs[kind, d] = [
            train_recall(
                kind,
                d,
                pairs=args.pairs,
                steps=args.steps,
                lr=args.lr,
                batch=args.batch,
                n_keys=args.keys,
                n_values=args.values,
                seed=seed,
            )
            for seed in args.seeds
        ]
    width = 22
    print("\n" + " | ".join(["model   ", *(f"{f'{kind} d={d}':>{width}}" for kind, d in columns)]))
    print(" | ".join(["params  ", *(f"{runs[c][0].parameters:>{width},}" for c in columns)]))
    state = [
        f"{'2 N d':>{width}}" if kind == "softmax" else f"{memory_numbers(kind, d, 1):>{width},}"
        for kind, d in columns
    ]
    print(" | ".join(["state   ", *state]))
    for n in args.pairs:
        cells = []
        for c in columns:
            acc = [r.accuracy[n] for r in runs[c]]
            cell = f"{statistics.median(acc):.1%} [{min(acc):.1%}-{max(acc):.1%}]"
            cells.append(f"{cell:>{width}}")
        print(" | ".join([f"N = {n:<4}", *cells]))
    seconds = [r.seconds for rs in runs.values() for r in rs]
    print(
        f"\n{len(seconds)} models trained in {time.perf_counter() - start:.0f} s "
        f"({min(seconds):.1f}-{max(seconds):.1f} s each)"
    )


if __name__ == "__main__":
    main()
