"""Associative recall, trained on the CPU in seconds: softmax attention against linear attention.

The task (multi-query associative recall, reduced to one query): a sequence of N key-value
pairs (N distinct keys out of `n_keys`, values out of `n_values`, all random), then one of the
keys; the answer is its value. Each pair is one position (the key's and the value's embeddings
added) and the query comes last, so one attention layer answers by looking the key up: no
positions and no previous-token head are needed, and the comparison is about attention alone.

    run = train_recall("linear", 16)          # one model, trained on N = 2, 4, 8, 16 and 32
    run.accuracy                              # {2: 0.96, 4: 0.87, ...}, on held-out sequences
    run.memory_numbers(32)                    # what its query reads: a (d, d) state and z

The model: embeddings of width d (keys, values and queries, three tables), one core
MultiHeadAttention layer with one head and no biases, and a linear read-out of the last
position's output into the values. The two kinds are the same module with the same parameters;
only the attention function differs:
    softmax   scaled_dot_product_attention: the query reads all N pairs (2 N d numbers cached)
    linear    linear_attention (elu + 1 features, normalised): the query reads a (d, d) state
              and a (d,) normaliser, d (d + 1) numbers whatever N
One model learns every N of `pairs`: training steps cycle through them (step s uses
pairs[s % len(pairs)]), so a whole accuracy curve costs one training run, a few seconds of one
thread at width 16. `benchmarks/recall.py` trains each (kind, width) over several seeds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...linear import LinearAttentionResult, linear_attention
from ...multihead import MultiHeadAttention
from .induction import _check_int  # the toy models' one range check

KINDS = ("softmax", "linear")
PAIRS = (2, 4, 8, 16, 32)
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


def memory_numbers(kind: str, d_model: int, n_pairs: int) -> int:
    """Numbers a query reads N pairs from: the cache, 2 N d (softmax: a key and a value per
    pair), or the state and normaliser, d (d + 1) (linear), whatever N."""
    return 2 * n_pairs * d_model if kind == "softmax" else d_model * (d_model + 1)


def _linear(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> LinearAttentionResult:
    return linear_attention(q, k, v)  # causal by construction: the query, last, sees every pair


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
        self.attn = MultiHeadAttention(d_model, 1, bias=False)
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
        return memory_numbers(self.kind, self.attn.d_model, n_pairs)


@dataclass(frozen=True)
class RecallRun:
    kind: str
    d_model: int
    accuracy: dict[int, float]  # pairs -> fraction right on EVAL_SEQUENCES held-out sequences
    final_loss: float  # the last training batch's, nats
    parameters: int
    seconds: float

    def memory_numbers(self, n_pairs: int) -> int:
        """What the query reads: the cache, 2 N d (softmax), or the state, d (d + 1) (linear)."""
        return memory_numbers(self.kind, self.d_model, n_pairs)


def train_recall(
    kind: str,
    d_model: int,
    *,
    pairs: Sequence[int] = PAIRS,
    steps: int = 1000,
    lr: float = 1e-2,
    batch: int = 128,
    n_keys: int = 64,
    n_values: int = 64,
    seed: int = 0,
    eval_sequences: int = EVAL_SEQUENCES,
) -> RecallRun:
    """Train one model from scratch on every N of `pairs` in turn; score it at each N.

    Adam, lr decaying linearly to 0 over `steps`; the model initialised from `seed` (torch's
    global generator is left alone) and fresh random batches from a generator seeded with it;
    the held-out sequences come from EVAL_SEED, the same for every run.
    """
    _check_int("d_model", d_model, 1, 1024)
    _check_int("n_keys", n_keys, 1, 65_536)
    _check_int("n_values", n_values, 2, 65_536)
    _check_int("steps", steps, 1, 1_000_000)
    _check_int("batch", batch, 1, 65_536)
    _check_int("eval_sequences", eval_sequences, 1, 65_536)
    pairs = tuple(pairs)
    if not pairs:
        raise ValueError("pairs: expected at least one number of pairs, got none")
    for n in pairs:
        _check_int("pairs", n, 1, n_keys)
    if not (isinstance(lr, (int, float)) and 0 < lr < float("inf")):
        raise ValueError(f"lr: expected a positive finite number, got {lr!r}")

    _check_int("seed", seed, 0, 2**63 - 1)
    start = time.perf_counter()
    with torch.random.fork_rng(devices=[]):  # the caller's global generator is left alone
        torch.manual_seed(seed)
        model = RecallModel(kind, d_model, n_keys, n_values)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 - s / steps)
    g = torch.Generator().manual_seed(seed)
    loss = torch.tensor(float("nan"))
    for step in range(steps):
        b = make_batch(batch, pairs[step % len(pairs)], n_keys, n_values, g)
        loss = F.cross_entropy(model(b.keys, b.values, b.query), b.answer)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    accuracy = {}
    for n in pairs:
        held_out = make_batch(
            eval_sequences, n, n_keys, n_values, torch.Generator().manual_seed(EVAL_SEED)
        )
        with torch.no_grad():
            guess = model(held_out.keys, held_out.values, held_out.query).argmax(-1)  # (B,)
        accuracy[n] = (guess == held_out.answer).float().mean().item()
    return RecallRun(
        kind=kind,
        d_model=d_model,
        accuracy=accuracy,
        final_loss=loss.item(),
        parameters=sum(p.numel() for p in model.parameters()),
        seconds=time.perf_counter() - start,
    )
