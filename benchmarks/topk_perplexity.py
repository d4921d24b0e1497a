"""Perplexity of SmolLM2 under top-k sparse attention, over several texts, with its spread.

Every layer's attention is attention.sparse.topk_attention (each query keeps its k highest
scores among the keys the causal mask allows, the rest are masked before the softmax), plugged
into the model through its forward's `attention_fn`. The texts are --windows windows of
--tokens tokens: every other window of lessons/data/lighthouse.txt (a short story written for
the course, CC0) and the start of lessons/data/pride_and_prejudice.txt. Each window is scored
on its own (perplexity of its tokens 2..T, attention.models.pretrained.perplexity); per k the
script prints, over the windows, the median ratio of the perplexity to dense attention's and
its spread (min, quartiles, max). A query at position t < k sees at most t + 1 keys, so top-k
changes nothing for the first k positions of a window. SmolLM2 here is the 4-bit GGUF file
(Q4_1) dequantised to float32: these are the quantised model's perplexities.

Run: .venv/bin/python benchmarks/topk_perplexity.py [--windows 8] [--tokens 256]
     [--ks 1 2 4 8 16 32 64] [--threads 1]
Measured on this course's shared 2-core machine (one thread, busy; 2026-11-24): 3 min 17 s.
Last output (8 windows of 256 tokens; dense perplexity per window 18.45 (Pride and Prejudice),
26.70, 38.37, 25.76, 28.28, 26.07, 38.53, 34.66; ratio to dense, median [min, max] over windows):
    k = 1: 209 [85, 298]; 2: 9.30 [6.50, 24.9]; 4: 2.60 [1.87, 5.88]; 8: 1.42 [1.23, 1.57];
    16: 1.17 [1.08, 1.20]; 32: 1.04 [1.01, 1.07]; 64: 1.01 [0.99, 1.03].
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "lessons" / "data"
TEXTS = (DATA / "lighthouse.txt", DATA / "pride_and_prejudice.txt")


def windows(token_lists: list[list[int]], n_windows: int, tokens: int) -> list[tuple[str, list]]:
    """Up to n_windows windows of `tokens` ids: the start of the last text, then every other
    window of the first (0, 2, 4, ... x tokens), as (label, ids) pairs.

    Raises ValueError when the texts cannot give n_windows windows of that length.
    """
    first, *others = token_lists
    picked = [
        (f"{TEXTS[i + 1].stem}[0:{tokens}]", ids[:tokens])
        for i, ids in enumerate(others)
        if len(ids) >= tokens
    ]
    starts = range(0, len(first) - tokens + 1, 2 * tokens)
    for s in starts:
        if len(picked) == n_windows:
            break
        picked.append((f"{TEXTS[0].stem}[{s}:{s + tokens}]", first[s : s + tokens]))
    if len(picked) < n_windows:
        raise ValueError(
            f"--windows: the texts give {len(picked)} windows of {tokens} tokens, "
            f"expected {n_windows}; ask for fewer windows or fewer tokens"
        )
    return picked


def quartiles(xs: list[float]) -> tuple[float, float, float, float, float]:
    """(min, lower quartile, median, upper quartile, max) of xs (inclusive method)."""
    xs = sorted(xs)
    if len(xs) == 1:
        return (xs[0],) * 5
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return xs[0], q1, q2, q3, xs[-1]


def window_perplexities(model, ids, top_k: int | None) -> list[float]:
    """Perplexity of each row of ids (B, T) with top-k attention in every layer (None: dense)."""
    import attention as A
    from attention.models.pretrained import perplexity, token_losses

    def topk(q, k, v, mask):
        return A.topk_attention(q, k, v, top_k, mask)

    out = model(ids, need_weights=False, attention_fn=None if top_k is None else topk)
    losses = token_losses(out.logits, ids)  # (B, T - 1)
    return [perplexity(row) for row in losses]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import torch

    from attention.models import load_pretrained

    torch.set_num_threads(args.threads)
    model, tokenizer = load_pretrained("smollm2")
    token_lists = [tokenizer.encode(p.read_text(encoding="utf-8")) for p in TEXTS]
    picked = windows(token_lists, args.windows, args.tokens)
    ids = torch.tensor([w for _, w in picked])  # (N, T)
    print(f"SmolLM2-135M, {len(picked)} windows of {args.tokens} tokens:")
    print("  " + ", ".join(label for label, _ in picked))

    start = time.perf_counter()
    dense = window_perplexities(model, ids, None)
    print(f"dense perplexity per window: {', '.join(f'{p:.2f}' for p in dense)}")
    print(
        f"{'k':>6} | {'median ppl':>10} | {'median ratio':>12} | {'min':>7} | {'q1':>7} | "
        f"{'q3':>7} | {'max':>9} | {'seconds':>7}"
    )
    lo, q1, med, q3, hi = quartiles(dense)
    print(
        f"{'dense':>6} | {med:10.2f} | {1:12.2f} | {1:7.2f} | {1:7.2f} | {1:7.2f} | {1:9.2f} | "
        f"{time.perf_counter() - start:7.1f}"
    )
    for k in sorted(args.ks):
        start = time.perf_counter()
        ppl = window_perplexities(model, ids, k)
        ratios = [p / d for p, d in zip(ppl, dense, strict=True)]
        lo, q1, med, q3, hi = quartiles(ratios)
        print(
            f"{k:>6} | {statistics.median(ppl):10.2f} | {med:12.2f} | {lo:7.2f} | {q1:7.2f} | "
            f"{q3:7.2f} | {hi:9.2f} | {time.perf_counter() - start:7.1f}"
        )


if __name__ == "__main__":
    main()
