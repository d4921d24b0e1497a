"""Does more training rescue a GRU encoder-decoder without attention? (lesson 3, section 6)

Trains the two GRU seq2seq models of lesson 3 (attention/models/toy/rnn.py, d_h = 64, batch 64,
a one-cycle learning rate peaking at 1e-2, seed 0) on the reverse task (1 to 10 digits) for each
number of steps given, without and with additive attention, and prints the exact-sequence
accuracy per input length on 1000 held-out strings (greedy decoding): the same experiment as the
lesson's `rnn_bottleneck` call, which trains for 200 steps, at more steps than a lesson can
afford. On one thread; each line says how long its training took.

Run: .venv/bin/python benchmarks/rnn_bottleneck.py [--steps 200 1000]
"""

from __future__ import annotations

import argparse

from attention.experiments.recurrent import BottleneckParams, rnn_bottleneck


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[200, 1000])
    args = parser.parse_args()
    for steps in args.steps:
        b = rnn_bottleneck(BottleneckParams(steps=steps))
        seconds = f"{b.seconds_without:.0f} s without attention, {b.seconds_with:.0f} s with"
        print(f"{steps} steps (training: {seconds})")
        print("  input length      " + " ".join(f"{n:5d}" for n in b.lengths))
        print("  without attention " + " ".join(f"{a:5.0%}" for a in b.exact_without))
        print("  with attention    " + " ".join(f"{a:5.0%}" for a in b.exact_with))


if __name__ == "__main__":
    main()
