"""ScalingExplorer: q·k with and without dividing by sqrt(d_k), as numbers.

Samples, histograms, the variance at every d_k, one softmax row, its entropy and the gradient
that reaches the scores through the softmax. Every random draw is seeded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from ._util import SEEDS, bounded, bounded_float, check_fields, flag

__all__ = [
    "D_K_MAX",
    "N_KEYS_MAX",
    "ScalingExploration",
    "ScalingParams",
    "ScalingSide",
    "explore_scaling",
]

D_K_MAX = 512  # widest q and k the scaling explorer draws
N_KEYS_MAX = 32  # longest softmax row it shows


def _entropy(weights: Tensor) -> Tensor:
    """Entropy in nats of each row of weights (..., K); 0 * log 0 counts as 0."""
    return -torch.special.xlogy(weights, weights).sum(-1)


@dataclass(frozen=True)
class ScalingParams:
    """Settings of the scaling explorer.

    d_k: width of q and k (1..512). n_keys: length of the softmax row (2..32).
    temperature: softmax(scores / temperature), applied to both sides. seed: the random draws.
    fixed_axis: histogram range fixed at the widest d_k (shows the spread grow) instead of
    fitted to the current one. n_samples: q·k pairs in the pool; n_bins: histogram bins.
    """

    d_k: int = bounded(64, 1, D_K_MAX)
    n_keys: int = bounded(8, 2, N_KEYS_MAX)
    temperature: float = bounded_float(1.0, 0.01, 100)
    seed: int = bounded(0, *SEEDS)
    fixed_axis: bool = flag(True)
    n_samples: int = bounded(2048, 2 * N_KEYS_MAX, 65536)
    n_bins: int = bounded(81, 2, 400)

    def __post_init__(self) -> None:
        check_fields(self)


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
class ScalingExploration:
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


def _explore_scaling(p: ScalingParams) -> ScalingExploration:
    dots, row_dots, upstream, row_up, var_by_d = _scaling_draws(p.seed, p.n_samples)
    root = math.sqrt(p.d_k)
    raw = dots[:, p.d_k - 1].clone()  # (N,)
    row_raw = row_dots[: p.n_keys, p.d_k - 1].clone()  # (K,)
    half = 4.0 * math.sqrt(D_K_MAX if p.fixed_axis else p.d_k)  # 4 sd of the widest scores
    edges = torch.linspace(-half, half, p.n_bins + 1)
    row_up = row_up[: p.n_keys]
    grid = torch.arange(1, D_K_MAX + 1)
    return ScalingExploration(
        params=p,
        bin_edges=edges,
        unscaled=_scaling_side(p, raw, row_raw, upstream, row_up, edges),
        scaled=_scaling_side(p, raw / root, row_raw / root, upstream, row_up, edges),
        max_entropy=math.log(p.n_keys),
        d_k_grid=grid,
        var_unscaled_by_d_k=var_by_d.clone(),
        var_scaled_by_d_k=var_by_d / grid,
    )


def explore_scaling(params: ScalingParams | None = None) -> ScalingExploration:
    """Compare scores q·k and q·k / sqrt(d_k) for q, k with independent N(0, 1) entries.

    var(q·k) = d_k, so unscaled scores grow with the width, the softmax saturates (one weight
    near 1) and the gradient through it vanishes; var(q·k / sqrt(d_k)) = 1 at every width.
    """
    return _explore_scaling(params or ScalingParams())
