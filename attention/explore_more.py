"""Pure computations behind three explorers: scaling by sqrt(d_k), heads, positional encoding.

Each explorer is a frozen params dataclass -> a pure function -> a frozen result dataclass; the
widgets in `widgets/` only draw what these functions return, so `explorer.result` is the maths.
The same params always give the same numbers (every random draw is seeded).

- `explore_scaling(ScalingParams)`: q·k with and without dividing by sqrt(d_k): samples,
  histograms, variance for every d_k, one softmax row, its entropy and the gradient that reaches
  the scores through the softmax.
- `explore_heads(HeadsParams)`: multi-head attention step by step, beside the same computation
  with the transpose forgotten (q.view(B, H, T, D) instead of .view(B, T, H, D).transpose(1, 2)).
- `explore_positional(PositionalParams)`: the sinusoidal table and the shuffle test: without
  positions self-attention only permutes its output, with positions it does not.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from .functional import scaled_dot_product_attention
from .multihead import MultiHeadAttention, divisors
from .positional import sinusoidal_positional_encoding

D_K_MAX = 512  # widest q and k the scaling explorer draws
N_KEYS_MAX = 32  # longest softmax row it shows
HEADS_D_MODELS = (4, 6, 8, 12, 16, 24, 32, 48, 64)  # widths the heads explorer offers
HEADS_MAX = 16  # more heads than this do not fit as small multiples
HEADS_SEQ_MAX = 16
HEADS_BATCH_MAX = 4
PE_SEQ_MAX = 64
PE_D_MODEL_MAX = 128
PE_DIMS_MAX = 8  # curves drawn at once


def _check_int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name}: expected an int in [{low}, {high}], got {value}")
    return value


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name}: expected a bool, got {type(value).__name__}")
    return value


@contextmanager
def _one_thread() -> Iterator[None]:
    """Run torch on one thread for these teaching-size tensors, then restore the setting.

    At these sizes a second thread only adds synchronisation; measured on a busy 2-core
    machine, one heads update took ~1 ms single-threaded against ~13 ms median (and spikes
    of ~300 ms) with two threads.
    """
    n = torch.get_num_threads()
    if n == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def _entropy(weights: Tensor) -> Tensor:
    """Entropy in nats of each row of weights (..., K); 0 * log 0 counts as 0."""
    return -torch.special.xlogy(weights, weights).sum(-1)


# --- scaling: why divide by sqrt(d_k) -------------------------------------------------------


@dataclass(frozen=True)
class ScalingParams:
    """Settings of the scaling explorer.

    d_k: width of q and k (1..512). n_keys: length of the softmax row (2..32).
    temperature: softmax(scores / temperature), applied to both sides. seed: the random draws.
    fixed_axis: histogram range fixed at the widest d_k (shows the spread grow) instead of
    fitted to the current one. n_samples: q·k pairs in the pool; n_bins: histogram bins.
    """

    d_k: int = 64
    n_keys: int = 8
    temperature: float = 1.0
    seed: int = 0
    fixed_axis: bool = True
    n_samples: int = 2048
    n_bins: int = 81

    def __post_init__(self) -> None:
        _check_int("d_k", self.d_k, 1, D_K_MAX)
        _check_int("n_keys", self.n_keys, 2, N_KEYS_MAX)
        _check_int("seed", self.seed, 0, 2**31 - 1)
        _check_int("n_samples", self.n_samples, 2 * N_KEYS_MAX, 65536)
        _check_int("n_bins", self.n_bins, 2, 400)
        _check_bool("fixed_axis", self.fixed_axis)
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            raise TypeError(f"temperature: expected a float, got {type(t).__name__}")
        if not (math.isfinite(t) and 0.01 <= t <= 100):
            raise ValueError(f"temperature: expected a float in [0.01, 100], got {t}")


@dataclass(frozen=True)
class ScalingSide:
    """One side of the comparison: scores = q·k (unscaled) or q·k / sqrt(d_k) (scaled).

    The gradient is that of loss = upstream · weights, where `upstream` is a fixed seeded N(0, 1)
    vector standing for d loss / d weights arriving from the layers above; through the softmax,
    d loss / d scores = weights * (upstream - weights · upstream) / temperature, which vanishes
    as the weights approach one-hot.
    """

    samples: Tensor  # (N,) scores of n_samples independent (q, k) pairs
    variance: float  # empirical variance of samples
    hist: Tensor  # (n_bins,) fraction of samples in each bin (samples off the axis not counted)
    row_scores: Tensor  # (n_keys,) one query against n_keys keys
    row_weights: Tensor  # (n_keys,) softmax(row_scores / temperature)
    row_entropy: float  # nats; log(n_keys) is uniform, 0 is one-hot
    row_grad: Tensor  # (n_keys,) d loss / d row_scores for loss = upstream · row_weights
    row_grad_norm: float
    mean_entropy: float  # over the pool read as N // n_keys rows of n_keys scores
    mean_max_weight: float
    mean_grad_norm: float
    saturated_fraction: float  # rows whose largest weight exceeds 0.99


@dataclass(frozen=True)
class ScalingResult:
    """Everything explore_scaling computed, for the view and for learners' code."""

    params: ScalingParams
    bin_edges: Tensor  # (n_bins + 1,) shared by both histograms
    unscaled: ScalingSide
    scaled: ScalingSide
    max_entropy: float  # log(n_keys), the entropy of a uniform row
    d_k_grid: Tensor  # (D_K_MAX,) 1 .. D_K_MAX
    var_unscaled_by_d_k: Tensor  # (D_K_MAX,) empirical var(q·k) at every width; grows like d_k
    var_scaled_by_d_k: Tensor  # (D_K_MAX,) var(q·k / sqrt(d_k)); stays near 1


@lru_cache(maxsize=4)
def _scaling_draws(seed: int, n_samples: int) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Seeded draws at the widest d_k; a narrower d_k reads the first d_k coordinates."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n_samples, D_K_MAX, generator=g)
    k = torch.randn(n_samples, D_K_MAX, generator=g)
    dots = (q * k).cumsum(-1)  # (N, D_K_MAX): column d-1 is q[:d] · k[:d]
    row_q = torch.randn(D_K_MAX, generator=g)
    row_k = torch.randn(N_KEYS_MAX, D_K_MAX, generator=g)
    row_dots = (row_q * row_k).cumsum(-1)  # (N_KEYS_MAX, D_K_MAX)
    upstream = torch.randn(n_samples, generator=g)  # d loss / d weights, pool then row
    row_upstream = torch.randn(N_KEYS_MAX, generator=g)
    return dots, row_dots, upstream, row_upstream, dots.var(0)


def _softmax_and_grad(scores: Tensor, upstream: Tensor, temperature: float) -> tuple[Tensor, ...]:
    """weights = softmax(scores / t) and d(upstream · weights)/d scores, by autograd."""
    with torch.enable_grad():
        s = scores.detach().clone().requires_grad_(True)
        weights = torch.softmax(s / temperature, dim=-1)
        (grad,) = torch.autograd.grad((weights * upstream).sum(), s)
    return weights.detach(), grad


def _scaling_side(
    p: ScalingParams,
    samples: Tensor,
    row_scores: Tensor,
    upstream: Tensor,
    row_up: Tensor,
    edges: Tensor,
) -> ScalingSide:
    lo, hi = float(edges[0]), float(edges[-1])
    hist = torch.histc(samples, bins=p.n_bins, min=lo, max=hi) / samples.numel()
    row_weights, row_grad = _softmax_and_grad(row_scores, row_up, p.temperature)
    n_rows = samples.numel() // p.n_keys
    rows = samples[: n_rows * p.n_keys].view(n_rows, p.n_keys)  # (R, K)
    up = upstream[: n_rows * p.n_keys].view(n_rows, p.n_keys)
    weights, grad = _softmax_and_grad(rows, up, p.temperature)
    max_weight = weights.max(-1).values
    return ScalingSide(
        samples=samples,
        variance=float(samples.var()),
        hist=hist,
        row_scores=row_scores,
        row_weights=row_weights,
        row_entropy=float(_entropy(row_weights)),
        row_grad=row_grad,
        row_grad_norm=float(row_grad.norm()),
        mean_entropy=float(_entropy(weights).mean()),
        mean_max_weight=float(max_weight.mean()),
        mean_grad_norm=float(grad.norm(dim=-1).mean()),
        saturated_fraction=float((max_weight > 0.99).float().mean()),
    )


def _explore_scaling(p: ScalingParams) -> ScalingResult:
    dots, row_dots, upstream, row_up, var_by_d = _scaling_draws(p.seed, p.n_samples)
    root = math.sqrt(p.d_k)
    raw = dots[:, p.d_k - 1].clone()  # (N,)
    row_raw = row_dots[: p.n_keys, p.d_k - 1].clone()  # (K,)
    half = 4.0 * math.sqrt(D_K_MAX if p.fixed_axis else p.d_k)  # 4 sd of the widest scores
    edges = torch.linspace(-half, half, p.n_bins + 1)
    row_up = row_up[: p.n_keys]
    grid = torch.arange(1, D_K_MAX + 1)
    return ScalingResult(
        params=p,
        bin_edges=edges,
        unscaled=_scaling_side(p, raw, row_raw, upstream, row_up, edges),
        scaled=_scaling_side(p, raw / root, row_raw / root, upstream, row_up, edges),
        max_entropy=math.log(p.n_keys),
        d_k_grid=grid,
        var_unscaled_by_d_k=var_by_d.clone(),
        var_scaled_by_d_k=var_by_d / grid,
    )


# --- heads: one big projection, split, attend, merge ----------------------------------------


def head_choices(d_model: int) -> list[int]:
    """The head counts the heads explorer offers for a width: divisors up to HEADS_MAX."""
    return [h for h in divisors(d_model) if h <= HEADS_MAX]


@dataclass(frozen=True)
class HeadsParams:
    """Settings of the heads explorer: d_model from HEADS_D_MODELS, n_heads dividing it."""

    d_model: int = 16
    n_heads: int = 4
    seq_len: int = 6
    batch: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        _check_int("d_model", self.d_model, 1, max(HEADS_D_MODELS))
        if self.d_model not in HEADS_D_MODELS:
            raise ValueError(f"d_model: expected one of {list(HEADS_D_MODELS)}, got {self.d_model}")
        _check_int("n_heads", self.n_heads, 1, HEADS_MAX)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                f"choose n_heads from {head_choices(self.d_model)}"
            )
        _check_int("seq_len", self.seq_len, 1, HEADS_SEQ_MAX)
        _check_int("batch", self.batch, 1, HEADS_BATCH_MAX)
        _check_int("seed", self.seed, 0, 2**31 - 1)


@dataclass(frozen=True)
class HeadsPath:
    """One way through multi-head attention, from the split to the output."""

    q: Tensor  # (B, H, T, D) queries as the heads see them
    k: Tensor  # (B, H, T, D)
    v: Tensor  # (B, H, T, D)
    weights: Tensor  # (B, H, T, T)
    heads: Tensor  # (B, H, T, D) each head's output
    concat: Tensor  # (B, T, M) heads merged, before the output projection
    output: Tensor  # (B, T, M)
    shapes: tuple[tuple[str, tuple[int, ...]], ...]  # (step, shape) from input to output
    source_token: Tensor  # (H, T) long: the token whose q, k, v row (h, t) holds
    source_chunk: Tensor  # (H, T) long: which D-wide slice of that token's width


@dataclass(frozen=True)
class HeadsResult:
    """Every step of multi-head attention, done right and with the transpose forgotten."""

    params: HeadsParams
    x: Tensor  # (B, T, M) input
    q_proj: Tensor  # (B, T, M) the big projections x W_q, x W_k, x W_v (one matmul each)
    k_proj: Tensor
    v_proj: Tensor
    q_split: Tensor  # (B, T, H, D) q_proj.view(B, T, H, D), before the transpose
    right: HeadsPath  # view(B, T, H, D).transpose(1, 2), as MultiHeadAttention does
    wrong: HeadsPath  # view(B, H, T, D) straight away: same shapes, scrambled contents
    weights_max_diff: float  # max |wrong.weights - right.weights|
    output_max_diff: float  # max |wrong.output - right.output|


@lru_cache(maxsize=16)
def _seeded_mha(d_model: int, n_heads: int, seed: int) -> MultiHeadAttention:
    """A MultiHeadAttention whose initial weights depend only on the seed."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MultiHeadAttention(d_model, n_heads).eval()


def _right_sources(h: int, t: int) -> tuple[Tensor, Tensor]:
    token = torch.arange(t).expand(h, t)  # head h, row t reads token t ...
    chunk = torch.arange(h)[:, None].expand(h, t)  # ... in its own slice h
    return token.clone(), chunk.clone()


def _wrong_sources(h: int, t: int) -> tuple[Tensor, Tensor]:
    # .view(B, H, T, D) cuts the flat (T * M) row-major buffer into H * T rows of D numbers:
    # row (h, t) is the (h * T + t)-th D-chunk, i.e. token (h*T + t) // H, slice (h*T + t) % H.
    flat = torch.arange(h * t).view(h, t)
    return flat // h, flat % h


def _explore_heads(p: HeadsParams) -> HeadsResult:
    b, t, m, h = p.batch, p.seq_len, p.d_model, p.n_heads
    d = m // h
    mha = _seeded_mha(m, h, p.seed)
    g = torch.Generator().manual_seed(p.seed)
    x = torch.randn(b, t, m, generator=g)  # (B, T, M)
    with torch.no_grad():
        res = mha(x)  # the reference: split_heads, attend, merge_heads, project
        q_proj, k_proj, v_proj = mha.q_proj(x), mha.k_proj(x), mha.v_proj(x)  # (B, T, M) each
        wq, wk, wv = (z.view(b, h, t, d) for z in (q_proj, k_proj, v_proj))  # (B, H, T, D) wrong
        att = scaled_dot_product_attention(wq, wk, wv)  # (B, H, T, T) weights
        wrong_concat = att.output.reshape(b, t, m)  # the merge forgets its transpose too
        wrong_output = mha.out_proj(wrong_concat)  # (B, T, M)
    steps = [("x", (b, t, m)), ("q = x W_q", (b, t, m))]
    right_shapes = (
        *steps,
        ("q.view(B, T, H, D)", (b, t, h, d)),
        (".transpose(1, 2)", (b, h, t, d)),
        ("weights = softmax(q k^T / sqrt(D))", (b, h, t, t)),
        ("heads = weights v", (b, h, t, d)),
        ("heads.transpose(1, 2)", (b, t, h, d)),
        ("concat = .reshape(B, T, M)", (b, t, m)),
        ("output = concat W_o", (b, t, m)),
    )
    wrong_shapes = (
        *steps,
        ("q.view(B, H, T, D)", (b, h, t, d)),
        ("weights = softmax(q k^T / sqrt(D))", (b, h, t, t)),
        ("heads = weights v", (b, h, t, d)),
        ("concat = heads.reshape(B, T, M)", (b, t, m)),
        ("output = concat W_o", (b, t, m)),
    )
    right_token, right_chunk = _right_sources(h, t)
    wrong_token, wrong_chunk = _wrong_sources(h, t)
    right = HeadsPath(
        q=res.q,
        k=res.k,
        v=res.v,
        weights=res.weights,
        heads=res.heads,
        concat=res.concat,
        output=res.output,
        shapes=right_shapes,
        source_token=right_token,
        source_chunk=right_chunk,
    )
    wrong = HeadsPath(
        q=wq,
        k=wk,
        v=wv,
        weights=att.weights,
        heads=att.output,
        concat=wrong_concat,
        output=wrong_output,
        shapes=wrong_shapes,
        source_token=wrong_token,
        source_chunk=wrong_chunk,
    )
    return HeadsResult(
        params=p,
        x=x,
        q_proj=q_proj,
        k_proj=k_proj,
        v_proj=v_proj,
        q_split=q_proj.view(b, t, h, d),
        right=right,
        wrong=wrong,
        weights_max_diff=float((wrong.weights - right.weights).abs().max()),
        output_max_diff=float((wrong.output - right.output).abs().max()),
    )


# --- positional encoding: attention ignores order unless positions are added -----------------


@dataclass(frozen=True)
class PositionalParams:
    """Settings of the positional-encoding explorer.

    seq_len (1..64) tokens of width d_model (2..128). dims: the encoding columns drawn as
    curves (1..8 distinct, each < d_model). shuffle: 0 keeps the order, any other value is
    the seed of a shuffle (never the identity when seq_len > 1). seed: embeddings and weights.
    """

    seq_len: int = 16
    d_model: int = 32
    dims: tuple[int, ...] = (0, 1, 8, 9)  # a fast sin/cos pair and a slower one
    shuffle: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        _check_int("seq_len", self.seq_len, 1, PE_SEQ_MAX)
        _check_int("d_model", self.d_model, 2, PE_D_MODEL_MAX)
        _check_int("shuffle", self.shuffle, 0, 2**31 - 1)
        _check_int("seed", self.seed, 0, 2**31 - 1)
        if not isinstance(self.dims, tuple):
            raise TypeError(f"dims: expected a tuple of ints, got {type(self.dims).__name__}")
        if not 1 <= len(self.dims) <= PE_DIMS_MAX or len(set(self.dims)) != len(self.dims):
            raise ValueError(f"dims: expected 1 to {PE_DIMS_MAX} distinct ints, got {self.dims}")
        for i in self.dims:
            _check_int("dims", i, 0, self.d_model - 1)


@dataclass(frozen=True)
class ShuffleCheck:
    """Self-attention on tokens in order and shuffled: is the output only permuted?"""

    inputs: Tensor  # (T, M) what attention sees for tokens in order (x, or x + PE)
    shuffled_inputs: Tensor  # (T, M) the same for the shuffled tokens (x[perm], or x[perm] + PE)
    output: Tensor  # (T, M) attention(inputs)
    shuffled_output: Tensor  # (T, M) attention(shuffled_inputs)
    permuted_output: Tensor  # (T, M) output[perm]: what a mere permutation would give
    max_abs_diff: float  # max |shuffled_output - permuted_output|; ~1e-7 means "only permuted"


@dataclass(frozen=True)
class PositionalResult:
    """The sinusoidal table, its selected columns, and the shuffle test with and without it."""

    params: PositionalParams
    encoding: Tensor  # (T, M) sinusoidal table, values in [-1, 1]
    curves: Tensor  # (len(dims), T) encoding[:, dims].T
    permutation: Tensor  # (T,) long: shuffled token i is original token permutation[i]
    tokens: Tensor  # (T, M) token embeddings, N(0, 1) entries
    without_positions: ShuffleCheck
    with_positions: ShuffleCheck


def shuffle_permutation(seq_len: int, shuffle: int) -> Tensor:
    """The permutation `shuffle` names: identity for 0, else a seeded non-identity shuffle."""
    if shuffle == 0 or seq_len == 1:
        return torch.arange(seq_len)
    perm = torch.randperm(seq_len, generator=torch.Generator().manual_seed(shuffle))
    if torch.equal(perm, torch.arange(seq_len)):
        perm = perm.roll(1)  # a shuffle button that changes nothing would teach nothing
    return perm


def _shuffle_check(mha: MultiHeadAttention, x: Tensor, perm: Tensor, pe: Tensor) -> ShuffleCheck:
    inputs, shuffled_inputs = x + pe, x[perm] + pe  # positions stay with the slots
    with torch.no_grad():
        both = mha(torch.stack([inputs, shuffled_inputs])).output  # (2, T, M)
    return ShuffleCheck(
        inputs=inputs,
        shuffled_inputs=shuffled_inputs,
        output=both[0],
        shuffled_output=both[1],
        permuted_output=both[0][perm],
        max_abs_diff=float((both[1] - both[0][perm]).abs().max()),
    )


def _explore_positional(p: PositionalParams) -> PositionalResult:
    pe = sinusoidal_positional_encoding(p.seq_len, p.d_model)  # (T, M)
    perm = shuffle_permutation(p.seq_len, p.shuffle)
    x = torch.randn(p.seq_len, p.d_model, generator=torch.Generator().manual_seed(p.seed))
    mha = _seeded_mha(p.d_model, 1, p.seed)
    return PositionalResult(
        params=p,
        encoding=pe,
        curves=pe[:, list(p.dims)].T.contiguous(),
        permutation=perm,
        tokens=x,
        without_positions=_shuffle_check(mha, x, perm, torch.zeros_like(pe)),
        with_positions=_shuffle_check(mha, x, perm, pe),
    )


def explore_scaling(params: ScalingParams | None = None) -> ScalingResult:
    """Compare scores q·k and q·k / sqrt(d_k) for q, k with independent N(0, 1) entries.

    var(q·k) = d_k, so unscaled scores grow with the width, the softmax saturates (one weight
    near 1) and the gradient through it vanishes; var(q·k / sqrt(d_k)) = 1 at every width.
    """
    with _one_thread():
        return _explore_scaling(params or ScalingParams())


def explore_heads(params: HeadsParams | None = None) -> HeadsResult:
    """Run multi-head attention step by step, and again with the split's transpose forgotten."""
    with _one_thread():
        return _explore_heads(params or HeadsParams())


def explore_positional(params: PositionalParams | None = None) -> PositionalResult:
    """Build the sinusoidal table and shuffle the tokens fed to self-attention, with and without it.

    Self-attention is permutation-equivariant: attention(x[perm]) == attention(x)[perm]. Adding
    PE (which stays with the slots when the tokens move) breaks that: order now matters.
    """
    with _one_thread():
        return _explore_positional(params or PositionalParams())
