"""Recurrent networks measured (lessons 1 and 3): frozen params in, frozen result out, seeded.

    recurrent_memory   lesson 1   |d h_T / d x_1| of nn.RNN, nn.LSTM, nn.GRU as the length grows
    rnn_bottleneck     lesson 3   a GRU seq2seq with and without additive attention: exact
                                  accuracy per input length on the reverse task

Each runs torch on one thread (small tensors; a second thread only waits on a busy machine).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..models.toy.data import ToyTask
from ..models.toy.rnn import RNNSeq2Seq, rnn_exact_by_length, train_rnn
from ..sandbox.limits import SEEDS, bounded, check_fields, checked, one_thread
from ._checks import check_lengths, check_rate

__all__ = [
    "RECURRENT_KINDS",
    "BottleneckParams",
    "BottleneckResult",
    "RecurrentMemoryParams",
    "RecurrentMemoryResult",
    "recurrent_memory",
    "rnn_bottleneck",
]

RECURRENT_KINDS = ("rnn", "lstm", "gru")


# Lesson 1 ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecurrentMemoryParams:
    """Which cells, which lengths, how wide. lstm_forget_bias is added to the LSTM's forget-gate
    bias (0: PyTorch's default; 1 is a common initialisation that keeps the memory open)."""

    lengths: tuple[int, ...] = (1, 2, 5, 10, 20, 40, 80)
    kinds: tuple[str, ...] = RECURRENT_KINDS
    d_in: int = bounded(8, 1, 256)
    d_hidden: int = bounded(8, 1, 256)
    n_sentences: int = bounded(32, 1, 1024)
    lstm_forget_bias: float = 0.0
    seed: int = bounded(0, *SEEDS)

    def __post_init__(self) -> None:
        check_lengths("lengths", self.lengths, 400)
        bad = [k for k in self.kinds if k not in RECURRENT_KINDS]
        if not self.kinds or bad:
            raise ValueError(f"kinds: expected some of {RECURRENT_KINDS}, got {self.kinds!r}")
        check_fields(self)


@dataclass(frozen=True)
class RecurrentMemoryResult:
    params: RecurrentMemoryParams
    lengths: tuple[int, ...]
    sensitivity: dict[str, tuple[float, ...]]  # kind -> median |d h_T / d x_1| at each length
    decay_per_step: dict[str, float]  # kind -> geometric mean factor per step, longest two lengths


def _first_token_sensitivity(net: nn.Module, x: Tensor) -> Tensor:
    """x (N, T, d_in) -> (N,) Frobenius norm of d h_T / d x_1 for each sentence."""
    x = x.clone().requires_grad_(True)
    h_last = net(x)[0][:, -1]  # (N, Dh) the final state h_T (for an LSTM its h, not its c)
    squares = torch.zeros(x.shape[0], dtype=x.dtype)
    for i in range(h_last.shape[1]):  # one row of the Jacobian per backward pass
        (grad,) = torch.autograd.grad(h_last[:, i].sum(), x, retain_graph=True)
        squares += grad[:, 0].pow(2).sum(-1)  # sentences are independent: no cross terms
    return squares.sqrt()


def recurrent_memory(params: RecurrentMemoryParams) -> RecurrentMemoryResult:
    """How much the last state of an untrained RNN, LSTM and GRU still depends on the first token.

    Default PyTorch initialisation, N(0, 1) inputs, float64 so that tiny values do not underflow.
    """
    p = params
    cells = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}
    out: dict[str, tuple[float, ...]] = {}
    with one_thread(), torch.random.fork_rng(devices=[]):
        for kind in p.kinds:
            torch.manual_seed(p.seed)
            net = cells[kind](p.d_in, p.d_hidden, batch_first=True).double()
            if kind == "lstm" and p.lstm_forget_bias:
                with torch.no_grad():  # gates are ordered input, forget, cell, output
                    net.bias_ih_l0[p.d_hidden : 2 * p.d_hidden] += p.lstm_forget_bias
            g = torch.Generator().manual_seed(p.seed + 1)
            values = []
            for t in p.lengths:
                x = torch.randn(p.n_sentences, t, p.d_in, generator=g, dtype=torch.float64)
                values.append(_first_token_sensitivity(net, x).median().item())
            out[kind] = tuple(values)
    decay = {}
    (t0, t1) = p.lengths[-2:] if len(p.lengths) > 1 else (p.lengths[0], p.lengths[0])
    for kind, values in out.items():
        a, b = values[-2] if len(values) > 1 else values[-1], values[-1]
        decay[kind] = (b / a) ** (1 / (t1 - t0)) if t1 > t0 and a > 0 and b > 0 else float("nan")
    return RecurrentMemoryResult(p, p.lengths, out, decay)


# Lesson 3 ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BottleneckParams:
    """The reverse task up to max_len digits; both models get the same data, steps and sizes."""

    max_len: int = bounded(10, 2, 30)
    steps: int = bounded(200, 1, 100_000)
    batch_size: int = bounded(64, 1, 4096)
    lr: float = checked(1e-2, check_rate)  # the peak of train_rnn's one-cycle schedule
    d_hidden: int = bounded(64, 1, 1024)
    n_eval: int = bounded(1000, 1, 100_000)
    seed: int = bounded(0, *SEEDS)

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class BottleneckResult:
    params: BottleneckParams
    lengths: tuple[int, ...]  # input lengths evaluated
    exact_without: tuple[float, ...]  # exact-sequence accuracy per length, no attention
    exact_with: tuple[float, ...]  # the same with additive attention
    seconds_without: float  # wall time of each training loop
    seconds_with: float
    losses_without: tuple[float, ...]
    losses_with: tuple[float, ...]
    model_without: RNNSeq2Seq
    model_with: RNNSeq2Seq


def rnn_bottleneck(params: BottleneckParams) -> BottleneckResult:
    """Train the GRU seq2seq without and with attention; exact accuracy per input length."""
    p = params
    task = ToyTask("reverse", min_len=1, max_len=p.max_len)
    kw = dict(steps=p.steps, batch_size=p.batch_size, lr=p.lr, d_hidden=p.d_hidden, seed=p.seed)
    with one_thread():
        runs = [train_rnn(task, attention=a, **kw) for a in (False, True)]
        acc = [rnn_exact_by_length(r.model, task, n=p.n_eval) for r in runs]
    lengths = tuple(sorted(set(acc[0]) & set(acc[1])))
    return BottleneckResult(
        params=p,
        lengths=lengths,
        exact_without=tuple(acc[0][n] for n in lengths),
        exact_with=tuple(acc[1][n] for n in lengths),
        seconds_without=runs[0].seconds,
        seconds_with=runs[1].seconds,
        losses_without=runs[0].losses,
        losses_with=runs[1].losses,
        model_without=runs[0].model,
        model_with=runs[1].model,
    )
