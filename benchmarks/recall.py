"""Associative recall, trained on the CPU: softmax attention against linear attention.

The task (multi-query associative recall, reduced to one query): a sequence of N key-value
pairs (N distinct keys out of --keys, values out of --values, all random), then one of the
keys; the answer is its value. Each pair is one position (the key's and the value's embeddings
added), the query is the last one, so one attention layer can answer by looking the key up:
no positions and no previous-token head are needed, and the comparison is about the attention
alone.

The model: embeddings of width d (keys, values and queries, three tables), one
attention.MultiHeadAttention layer with one head and no biases, and a linear read-out of the
last position's output into the values. The two models are the same module with the same
parameters; only the attention function differs:
    softmax   the core's scaled_dot_product_attention: the query reads all N pairs
              (it keeps 2 N d numbers, a key and a value per pair)
    linear    attention.linear_attention (elu + 1 feature map, normalised, causal): the query
              reads a (d, d) state and a (d,) normaliser, d (d + 1) numbers whatever N
Each (model, N, d) is trained from scratch on fresh random batches (Adam, lr --lr decaying
linearly to 0 over --steps steps, batch --batch, seed --seed) and scored on 2,048 held-out
sequences: the fraction of queries whose most likely value is right (chance: 1 / --values).

Run: nice -n 10 .venv/bin/python benchmarks/recall.py [--pairs 2 4 8 16 32] [--widths 16 32 64]
     [--kinds softmax linear] [--steps 1000] [--threads 1]
     fewer points, e.g. --pairs 4 16 --widths 16 --steps 300, for a quick look.
Measured on this course's shared 2-core machine (one thread, busy; 2026-11-24): the full sweep,
30 models, in 6 min 6 s (2.4-80 s a model). Accuracy, softmax / linear, for N = 2, 4, 8, 16, 32:
    d = 16 (linear state 272 numbers):   99.7-100% / 96.6, 88.9, 75.0, 49.7, 19.3%
    d = 32 (state 1,056):                99.9-100% / 99.7, 99.3, 97.8, 95.2, 88.1%
    d = 64 (state 4,160):                100%      / 100, 99.9, 99.8, 99.8, 99.9%
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import attention as A

KINDS = ("softmax", "linear")
EVAL_SEQUENCES = 2048
EVAL_SEED = 10_000  # the held-out sequences' generator seed, apart from any training seed


@dataclass(frozen=True)
class RecallBatch:
    keys: Tensor  # (B, N) int64, distinct within a row
    values: Tensor  # (B, N) int64
    query: Tensor  # (B,) int64, one of the row's keys
    answer: Tensor  # (B,) int64, the value stored with that key


def make_batch(
    batch: int, n_pairs: int, n_keys: int, n_values: int, generator: torch.Generator
) -> RecallBatch:
    """`batch` random sequences of n_pairs (key, value) pairs and a query for one of the keys."""
    if not 1 <= n_pairs <= n_keys:
        raise ValueError(f"n_pairs: expected 1..{n_keys} (distinct keys), got {n_pairs}")
    keys = torch.rand(batch, n_keys, generator=generator).argsort(-1)[:, :n_pairs]  # (B, N)
    values = torch.randint(0, n_values, (batch, n_pairs), generator=generator)  # (B, N)
    pick = torch.randint(0, n_pairs, (batch,), generator=generator)  # (B,)
    rows = torch.arange(batch)
    return RecallBatch(keys, values, keys[rows, pick], values[rows, pick])


def _linear(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> A.LinearAttentionResult:
    return A.linear_attention(q, k, v)  # causal by construction: the mask adds nothing


class RecallModel(nn.Module):
    """Pairs and a query -> logits over the values, through one attention layer of `kind`."""

    def __init__(self, kind: str, d_model: int, n_keys: int, n_values: int) -> None:
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {kind!r}")
        self.kind = kind
        self.key = nn.Embedding(n_keys, d_model)
        self.value = nn.Embedding(n_values, d_model)
        self.question = nn.Embedding(n_keys, d_model)
        self.attn = A.MultiHeadAttention(d_model, 1, bias=False)
        self.read_out = nn.Linear(d_model, n_values)

    def forward(self, keys: Tensor, values: Tensor, query: Tensor) -> Tensor:
        pairs = self.key(keys) + self.value(values)  # (B, N, M): one position per pair
        x = torch.cat([pairs, self.question(query)[:, None]], dim=1)  # (B, N + 1, M)
        fn = None if self.kind == "softmax" else _linear
        # no mask: the query is last, so it sees every pair either way
        out = self.attn(x, attention_fn=fn, check_finite=False).output  # (B, N + 1, M)
        return self.read_out(out[:, -1])  # (B, V)

    def memory_numbers(self, n_pairs: int) -> int:
        """Numbers the query reads the pairs from: 2 N d (keys and values) or d (d + 1)."""
        d = self.attn.d_model
        return 2 * n_pairs * d if self.kind == "softmax" else d * (d + 1)


@dataclass(frozen=True)
class RecallRun:
    kind: str
    n_pairs: int
    d_model: int
    accuracy: float  # on EVAL_SEQUENCES held-out sequences
    final_loss: float  # the last training batch's, nats
    memory_numbers: int  # what the query reads: the cache (softmax) or the state (linear)
    parameters: int
    seconds: float


def train_recall(
    kind: str,
    n_pairs: int,
    d_model: int,
    *,
    steps: int = 1000,
    lr: float = 1e-2,
    batch: int = 128,
    n_keys: int = 64,
    n_values: int = 64,
    seed: int = 0,
    eval_sequences: int = EVAL_SEQUENCES,
) -> RecallRun:
    """Train one model from scratch on the recall task and score it on held-out sequences."""
    start = time.perf_counter()
    torch.manual_seed(seed)
    model = RecallModel(kind, d_model, n_keys, n_values)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 - s / steps)
    g = torch.Generator().manual_seed(seed)
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        b = make_batch(batch, n_pairs, n_keys, n_values, g)
        loss = F.cross_entropy(model(b.keys, b.values, b.query), b.answer)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    held_out = make_batch(
        eval_sequences, n_pairs, n_keys, n_values, torch.Generator().manual_seed(EVAL_SEED)
    )
    with torch.no_grad():
        guess = model(held_out.keys, held_out.values, held_out.query).argmax(-1)  # (B,)
    return RecallRun(
        kind=kind,
        n_pairs=n_pairs,
        d_model=d_model,
        accuracy=(guess == held_out.answer).float().mean().item(),
        final_loss=loss.item(),
        memory_numbers=model.memory_numbers(n_pairs),
        parameters=sum(p.numel() for p in model.parameters()),
        seconds=time.perf_counter() - start,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    parser.add_argument("--widths", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--keys", type=int, default=64)
    parser.add_argument("--values", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(
        f"associative recall: N pairs (keys of {args.keys}, values of {args.values}), one query; "
        f"{args.steps} steps, batch {args.batch}, lr {args.lr}, seed {args.seed}; accuracy on "
        f"{EVAL_SEQUENCES} held-out sequences (chance {1 / args.values:.1%})"
    )
    columns = [(kind, d) for d in args.widths for kind in args.kinds]
    runs: dict[tuple[str, int, int], RecallRun] = {}
    start = time.perf_counter()
    for kind, d in columns:
        for n in args.pairs:
            runs[kind, d, n] = train_recall(
                kind,
                n,
                d,
                steps=args.steps,
                lr=args.lr,
                batch=args.batch,
                n_keys=args.keys,
                n_values=args.values,
                seed=args.seed,
            )
    first = {(kind, d): runs[kind, d, args.pairs[0]] for kind, d in columns}
    print("\n" + " | ".join(["model   ", *(f"{kind:>7} d={d:<3}" for kind, d in columns)]))
    print(" | ".join(["params  ", *(f"{first[c].parameters:>13,}" for c in columns)]))
    state = [
        f"{'2 N d':>13}" if kind == "softmax" else f"{first[kind, d].memory_numbers:>13,}"
        for kind, d in columns
    ]
    print(" | ".join(["state   ", *state]))
    for n in args.pairs:
        cells = [f"{runs[kind, d, n].accuracy:>13.1%}" for kind, d in columns]
        print(" | ".join([f"N = {n:<4}", *cells]))
    print("\nnumbers the query reads (cache 2 N d for softmax, state d (d + 1) for linear):")
    for n in args.pairs:
        cells = [f"{runs[kind, d, n].memory_numbers:>13,}" for kind, d in columns]
        print(" | ".join([f"N = {n:<4}", *cells]))
    seconds = [r.seconds for r in runs.values()]
    print(
        f"\n{len(runs)} models trained in {time.perf_counter() - start:.0f} s "
        f"({min(seconds):.1f}-{max(seconds):.1f} s each)"
    )


if __name__ == "__main__":
    main()
