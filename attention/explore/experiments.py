"""Measurements behind the lessons' claims: frozen params in, frozen result out, draws seeded.

    recurrent_memory     lesson 1   |d h_T / d x_1| of nn.RNN, nn.LSTM, nn.GRU as the length grows
    rnn_bottleneck       lesson 3   a GRU seq2seq with and without additive attention: exact
                                    accuracy per input length on the reverse task
    projection_variance  lesson 5   var(q_i), var(q . k), var(q . k / sqrt(d_k)) with nn.Linear's
                                    default initialisation, at several d_k
    norm_placement       lesson 10  per-layer gradient norms of a deep post-LN and pre-LN encoder
                                    at initialisation and after training with and without warmup

Each runs torch on one thread (small tensors; a second thread only waits on a busy machine).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..models.toy.data import ToyTask
from ..models.toy.rnn import RNNSeq2Seq, rnn_exact_by_length, train_rnn
from ..positional import sinusoidal_positional_encoding
from ..transformer import Encoder
from ._util import check_int, one_thread

RECURRENT_KINDS = ("rnn", "lstm", "gru")
_SEEDS = (0, 2**31 - 1)  # the seeds torch.manual_seed and Generator take


def _check_lengths(name: str, values: tuple[int, ...], high: int) -> None:
    if not isinstance(values, tuple) or not values:
        raise TypeError(f"{name}: expected a non-empty tuple of ints, got {values!r}")
    for v in values:
        check_int(name, v, 1, high)


def _check_ints(params: object, **ranges: tuple[int, int]) -> None:
    """check_int each named field of params against its range: name=(low, high), inclusive."""
    for name, (low, high) in ranges.items():
        check_int(name, getattr(params, name), low, high)


# Lesson 1 ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecurrentMemoryParams:
    """Which cells, which lengths, how wide. lstm_forget_bias is added to the LSTM's forget-gate
    bias (0: PyTorch's default; 1 is a common initialisation that keeps the memory open)."""

    lengths: tuple[int, ...] = (1, 2, 5, 10, 20, 40, 80)
    kinds: tuple[str, ...] = RECURRENT_KINDS
    d_in: int = 8
    d_hidden: int = 8
    n_sentences: int = 32
    lstm_forget_bias: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        _check_lengths("lengths", self.lengths, 400)
        bad = [k for k in self.kinds if k not in RECURRENT_KINDS]
        if not self.kinds or bad:
            raise ValueError(f"kinds: expected some of {RECURRENT_KINDS}, got {self.kinds!r}")
        _check_ints(self, d_in=(1, 256), d_hidden=(1, 256), n_sentences=(1, 1024), seed=_SEEDS)


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

    max_len: int = 10
    steps: int = 200
    batch_size: int = 64
    lr: float = 1e-2  # the peak of train_rnn's one-cycle schedule
    d_hidden: int = 64
    n_eval: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        _check_ints(self, max_len=(2, 30), steps=(1, 100_000), batch_size=(1, 4096))
        _check_ints(self, d_hidden=(1, 1024), n_eval=(1, 100_000), seed=_SEEDS)
        if not (isinstance(self.lr, float) and 0 < self.lr < 1):
            raise ValueError(f"lr: expected a float in (0, 1), got {self.lr!r}")


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


# Lesson 5 ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProjectionVarianceParams:
    """Tokens x with N(0, 1) entries (what LayerNorm hands on) of width d_model, projected to
    q = x W_q and k = x W_k by nn.Linear(d_model, d_k) with PyTorch's default initialisation."""

    d_ks: tuple[int, ...] = (4, 16, 64, 256)
    d_model: int = 256
    n_tokens: int = 512
    n_inits: int = 8  # independent weight draws, pooled
    seed: int = 0

    def __post_init__(self) -> None:
        _check_lengths("d_ks", self.d_ks, 4096)
        _check_ints(self, d_model=(1, 4096), n_tokens=(2, 100_000), n_inits=(1, 1000), seed=_SEEDS)


@dataclass(frozen=True)
class ProjectionVarianceResult:
    params: ProjectionVarianceParams
    d_ks: tuple[int, ...]
    var_q: tuple[float, ...]  # variance of one entry q_i; 1/3 in theory for any width
    var_dot: tuple[float, ...]  # variance of q . k; d_k / 9 in theory
    var_scaled: tuple[float, ...]  # variance of q . k / sqrt(d_k); 1/9 in theory, flat in d_k


def projection_variance(params: ProjectionVarianceParams) -> ProjectionVarianceResult:
    """Measure the spread of projected queries and of their dot products with keys.

    nn.Linear draws its weights from U(-1/sqrt(d_model), 1/sqrt(d_model)), variance
    1 / (3 d_model), so var(q_i) = d_model * 1 * 1 / (3 d_model) = 1/3 and var(q . k) = d_k / 9.
    """
    p = params
    var_q, var_dot, var_scaled = [], [], []
    g = torch.Generator().manual_seed(p.seed)
    with one_thread(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(p.seed)
        for d_k in p.d_ks:
            qs, dots = [], []
            for _ in range(p.n_inits):
                w_q, w_k = nn.Linear(p.d_model, d_k), nn.Linear(p.d_model, d_k)
                x = torch.randn(2, p.n_tokens, p.d_model, generator=g)  # queries' and keys' tokens
                with torch.no_grad():
                    q, k = w_q(x[0]), w_k(x[1])  # (N, d_k) each: pair token i with token i
                qs.append(q.flatten())
                dots.append((q * k).sum(-1))  # (N,)
            dot = torch.cat(dots)
            var_q.append(torch.cat(qs).var().item())
            var_dot.append(dot.var().item())
            var_scaled.append((dot / math.sqrt(d_k)).var().item())
    return ProjectionVarianceResult(p, p.d_ks, tuple(var_q), tuple(var_dot), tuple(var_scaled))


# Lesson 10 --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NormPlacementParams:
    """A deep encoder stack learns to reverse random token sequences in place with Adam.

    Four runs from the same initial weights and batches: post-LN and pre-LN, each with a
    constant learning rate and with a linear warmup over `warmup` steps.
    """

    n_layers: int = 12
    d_model: int = 32
    n_heads: int = 4
    seq_len: int = 12
    vocab: int = 16
    batch_size: int = 32
    steps: int = 60
    lr: float = 1e-2
    warmup: int = 30
    seed: int = 0

    def __post_init__(self) -> None:
        _check_ints(self, n_layers=(1, 48), d_model=(1, 512), n_heads=(1, 64), seq_len=(1, 256))
        _check_ints(self, vocab=(2, 10_000), batch_size=(1, 4096), steps=(1, 100_000))
        _check_ints(self, warmup=(1, 100_000), seed=_SEEDS)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if not (isinstance(self.lr, float) and 0 < self.lr < 1):
            raise ValueError(f"lr: expected a float in (0, 1), got {self.lr!r}")


@dataclass(frozen=True)
class NormPlacementRun:
    norm_first: bool  # True: pre-LN
    warmup: bool
    losses: tuple[float, ...]  # training loss per step
    grad_norms: tuple[tuple[float, ...], ...]  # (steps, n_layers): each layer's gradient norm
    final_grad_norms: tuple[float, ...]  # (n_layers,) on a fresh batch after training


@dataclass(frozen=True)
class NormPlacementResult:
    params: NormPlacementParams
    init_grad_norms: dict[str, tuple[float, ...]]  # "post-LN"/"pre-LN" -> (n_layers,) at step 0
    runs: dict[tuple[str, bool], NormPlacementRun]  # ("post-LN" or "pre-LN", warmup) -> run
    seconds: float


def _layer_grad_norms(encoder: Encoder) -> tuple[float, ...]:
    """The gradient norm of each layer's parameters taken together."""
    return tuple(
        math.sqrt(sum(float(q.grad.pow(2).sum()) for q in layer.parameters() if q.grad is not None))
        for layer in encoder.layers
    )


class _Stack(nn.Module):
    def __init__(self, p: NormPlacementParams, norm_first: bool) -> None:
        super().__init__()
        self.embed = nn.Embedding(p.vocab, p.d_model)
        self.encoder = Encoder(p.n_layers, p.d_model, p.n_heads, norm_first=norm_first)
        self.head = nn.Linear(p.d_model, p.vocab)
        self.register_buffer("pe", sinusoidal_positional_encoding(p.seq_len, p.d_model))

    def loss(self, x: Tensor) -> Tensor:
        """x (B, T) ids; target: the same ids reversed, so every position needs attention."""
        logits = self.head(self.encoder(self.embed(x) + self.pe).output)  # (B, T, V)
        return nn.functional.cross_entropy(logits.flatten(0, 1), x.flip(1).flatten())


def norm_placement(params: NormPlacementParams) -> NormPlacementResult:
    """Gradient norms per layer and loss curves of post-LN and pre-LN stacks, +- warmup."""
    p = params
    start = time.perf_counter()
    init, runs = {}, {}
    with one_thread(), torch.random.fork_rng(devices=[]):
        for norm_first in (False, True):
            name = "pre-LN" if norm_first else "post-LN"
            torch.manual_seed(p.seed)
            initial = _Stack(p, norm_first).state_dict()
            for warm in (False, True):
                model = _Stack(p, norm_first)
                model.load_state_dict(initial)
                opt = torch.optim.Adam(model.parameters(), lr=p.lr, betas=(0.9, 0.98))
                g = torch.Generator().manual_seed(p.seed + 1)  # the same batches in every run
                losses, norms = [], []
                for step in range(p.steps):
                    factor = min(1.0, (step + 1) / p.warmup) if warm else 1.0
                    for group in opt.param_groups:
                        group["lr"] = p.lr * factor
                    loss = model.loss(
                        torch.randint(0, p.vocab, (p.batch_size, p.seq_len), generator=g)
                    )
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    norms.append(_layer_grad_norms(model.encoder))
                    losses.append(loss.item())
                    opt.step()
                init[name] = norms[0]
                g_eval = torch.Generator().manual_seed(p.seed + 2)
                opt.zero_grad(set_to_none=True)
                model.loss(
                    torch.randint(0, p.vocab, (p.batch_size, p.seq_len), generator=g_eval)
                ).backward()
                runs[name, warm] = NormPlacementRun(
                    norm_first, warm, tuple(losses), tuple(norms), _layer_grad_norms(model.encoder)
                )
    return NormPlacementResult(p, init, runs, time.perf_counter() - start)
