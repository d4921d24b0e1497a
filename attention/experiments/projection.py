"""Why scores are divided by sqrt(d_k), measured (lesson 5): the spread of projected q . k.

    projection_variance   var(q_i), var(q . k), var(q . k / sqrt(d_k)) with nn.Linear's default
                          initialisation, at several d_k

Torch runs on one thread (small tensors; a second thread only waits on a busy machine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from ..sandbox.limits import SEEDS, bounded, check_fields, one_thread
from ._checks import check_lengths

__all__ = ["ProjectionVarianceParams", "ProjectionVarianceResult", "projection_variance"]


# Lesson 5 ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProjectionVarianceParams:
    """Tokens x with N(0, 1) entries (what LayerNorm hands on) of width d_model, projected to
    q = x W_q and k = x W_k by nn.Linear(d_model, d_k) with PyTorch's default initialisation."""

    d_ks: tuple[int, ...] = (4, 16, 64, 256)
    d_model: int = bounded(256, 1, 4096)
    n_tokens: int = bounded(512, 2, 100_000)
    n_inits: int = bounded(8, 1, 1000)  # independent weight draws, pooled
    seed: int = bounded(0, *SEEDS)

    def __post_init__(self) -> None:
        check_lengths("d_ks", self.d_ks, 4096)
        check_fields(self)


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
