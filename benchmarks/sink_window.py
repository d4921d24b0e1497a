"""Perplexity of SmolLM2 under full, sliding-window and window + sink attention (StreamingLLM).

The text is lessons/data/lighthouse.txt (a short story written for the course, CC0), cut to
--tokens tokens. Every run scores the same predictions: the tokens after position --start,
each of which a window of W < start has cut off from the beginning of the text. Per window W:

    window W            each token sees the last W tokens (itself included)
    window W + S sinks  ... and the first S tokens of the text as well, for each S in --sinks

The mask is attention.masks.sliding_window_mask, applied in every layer by
attention.experiments.windows.masked_logits (the model's forward with that mask, the positions
kept; see lesson 15 for how this differs from a rolling key/value cache). Also printed, with
full attention: the weight each layer gives the first token, averaged over the queries 8-64,
64-256 and 256-1,024 tokens after it (attention.experiments.sinks.first_token_by_distance).
SmolLM2 here is the 4-bit GGUF file (Q4_1) dequantised to float32: these are the quantised
model's perplexities.

Run: .venv/bin/python benchmarks/sink_window.py [--tokens 1024] [--windows 32 64 128 256]
     [--sinks 1 4] [--start 256] [--threads 1]
Measured on this course's shared 2-core machine (one thread, busy; 2026-11-24): 6-100 s per
run, about 5 min in all. Last output (1024 tokens, after position 256; perplexity, ratio to full):
    full 21.76; window 32: 159.75 (7.34x), + 1 sink 34.62 (1.59x), + 4 sinks 34.47 (1.58x);
    window 64: 115.39 (5.30x), + 1 sink 30.85 (1.42x), + 4 sinks 30.82 (1.42x);
    window 128: 56.07 (2.58x), + 1 sink 27.14 (1.25x), + 4 sinks 27.14 (1.25x);
    window 256: 45.43 (2.09x), + 1 sink 24.65 (1.13x), + 4 sinks 24.72 (1.14x).
    Weight on the first token, queries 8-63 / 64-255 / 256-1023: layers 3-9 0.31-0.35 / 0.17-0.21
    / 0.09-0.12 (a pull that fades: "fading layers"); layers 12-29 0.34-0.81 / 0.28-0.64 /
    0.22-0.56 (sink layers: the far band keeps >= 0.2); layers 0-2, 10, 11 at most 0.13.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

TEXT = Path(__file__).resolve().parents[1] / "lessons" / "data" / "lighthouse.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--windows", type=int, nargs="+", default=[32, 64, 128, 256])
    parser.add_argument("--sinks", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--start", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import torch

    from attention.experiments.sinks import first_token_by_distance
    from attention.experiments.windows import window_run
    from attention.models import load_pretrained

    torch.set_num_threads(args.threads)
    model, tokenizer = load_pretrained("smollm2")
    ids = torch.tensor([tokenizer.encode(TEXT.read_text(encoding="utf-8"))[: args.tokens]])
    t = ids.shape[1]
    print(
        f"SmolLM2-135M, {t} tokens of {TEXT.name}, perplexity of tokens {args.start + 1}..{t - 1}"
    )
    print(f"{'attention':<24} {'perplexity':>10} {'vs full':>8} {'seconds':>8}")
    full_ppl = None
    for w in [None, *args.windows]:
        for s in [0] if w is None else [0, *args.sinks]:
            start = time.perf_counter()
            run = window_run(model, ids, w, s, start=args.start)
            seconds = time.perf_counter() - start
            full_ppl = full_ppl or run.perplexity
            ratio = run.perplexity / full_ppl
            print(f"{run.name:<24} {run.perplexity:>10.2f} {ratio:>7.2f}x {seconds:>8.1f}")
    bands = first_token_by_distance(model, ids)
    print("\nfull attention: mean weight on the first token, per layer and band of query positions")
    print("layer " + " ".join(f"{a:>4}-{b:<5}" for a, b in bands.bands))
    for layer, row in enumerate(bands.layer_share.tolist()):
        print(f"{layer:5} " + " ".join(f"{x:>10.2f}" for x in row))
    print(f"sink layers (far band >= {bands.threshold}): {list(bands.sink_layers)}")
    print(f"fading layers (near >= {bands.threshold}, far below): {list(bands.fading_layers)}")


if __name__ == "__main__":
    main()
