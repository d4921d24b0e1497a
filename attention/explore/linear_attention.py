"""LinearAttentionExplorer: linear attention's parallel form against its recurrent state.

Random q, k, v (T, D) from a seed. Two ways to compute the same outputs (attention.linear):
    parallel   O = W V with W the causal (T, T) matrix of phi(q_t) . phi(k_s), rows normalised
    recurrent  S_t = S_{t-1} + phi(k_t) v_t^T (and z_t = z_{t-1} + phi(k_t)); o_t read from S_t
Step through the tokens: after `step` tokens the state S is (D, D) whatever the length, and the
rows read from it equal the parallel form's first `step` rows. Beside them, ordinary causal
softmax weights softmax(q k^T / sqrt(D)) for the same q and k.

variant "delta rule": the gated delta rule on unit keys, write strength `beta` and decay `gate`
(alpha) for every token, S_t = alpha (I - beta k_t k_t^T) S_{t-1} + beta k_t v_t^T, o_t = S_t^T q_t.
Its outputs are still a causal mix of the values, O = M V, with the implicit weights
M = (G * tril(Q K^T)) (I + diag(beta) (G * strict_tril(K K^T)))^-1 diag(beta)
(G[t, s] = alpha^(t - s)); they are not positive and need not sum to 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import Tensor

from ..functional import scaled_dot_product_attention
from ..linear import (
    LinearAttentionResult,
    delta_rule,
    delta_rule_recurrent,
    elu_plus_one,
    linear_attention,
    linear_attention_recurrent,
)
from ..masks import causal_mask
from ._util import SEEDS, bounded, bounded_float, check_fields, check_int

__all__ = ["LinearAttentionExploration", "LinearAttentionParams", "explore_linear_attention"]

LINEAR_VARIANTS = ("linear", "delta rule")
LINEAR_SEQ_MAX = 16
LINEAR_D_MAX = 8
GATE_RANGE = (0.5, 1.0)  # the decay alpha the explorer offers (the core takes (0, 1])


@dataclass(frozen=True)
class LinearAttentionParams:
    """Settings of the linear-attention explorer.

    seq_len: T (2..16). d_head: D, the width of q, k and v (2..8); the state is (D, D).
    step: tokens written into the state so far (1..T). variant: "linear" or "delta rule".
    gate: the delta rule's decay alpha in [0.5, 1]; beta: its write strength in [0, 1] (both
    unused by "linear"). seed: q, k and v.
    """

    seq_len: int = bounded(8, 2, LINEAR_SEQ_MAX)
    d_head: int = bounded(4, 2, LINEAR_D_MAX)
    step: int = 3
    variant: str = "linear"
    gate: float = bounded_float(1.0, *GATE_RANGE)
    beta: float = bounded_float(1.0, 0.0, 1.0)
    seed: int = bounded(0, *SEEDS)

    def __post_init__(self) -> None:
        check_fields(self)
        check_int("step", self.step, 1, self.seq_len)
        if self.variant not in LINEAR_VARIANTS:  # not one_of: this message shows the tuple
            raise ValueError(f"variant: expected one of {LINEAR_VARIANTS}, got {self.variant!r}")


@dataclass(frozen=True)
class LinearAttentionExploration:
    """Both forms for the params, the state after `step` tokens and the two weight maps."""

    params: LinearAttentionParams
    q: Tensor  # (T, D) as the variant reads them: phi(q) for "linear", q for "delta rule"
    k: Tensor  # (T, D) phi(k) for "linear", unit keys for "delta rule"
    v: Tensor  # (T, D)
    parallel: LinearAttentionResult  # the parallel form over all T rows (.output (T, D))
    recurrent: LinearAttentionResult  # the recurrent form over the first `step` tokens:
    # .output (step, D) the rows read from the state, .state (D, D) S after them, .normalizer
    # (D,) z after them ("linear"; None for the delta rule)
    implicit_weights: Tensor  # (T, T) the causal matrix M with parallel.output = M @ v
    softmax_weights: Tensor  # (T, T) causal softmax(q k^T / sqrt(D)) of the raw q and k
    max_difference: float  # max |recurrent - parallel| over the first `step` rows
    state_numbers: int  # D x D (+ D for the normaliser): the same at every step
    cache_numbers: int  # 2 x step x D: what softmax attention keeps after `step` tokens


@lru_cache(maxsize=32)
def _qkv(seq_len: int, d_head: int, seed: int) -> tuple[Tensor, Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    q, k, v = torch.randn(3, seq_len, d_head, generator=g).unbind(0)  # (T, D) each
    return q, k, v


def explore_linear_attention(
    params: LinearAttentionParams | None = None,
) -> LinearAttentionExploration:
    """Run the parallel and the recurrent form (attention.linear) for the params."""
    p = params or LinearAttentionParams()
    q, k, v = _qkv(p.seq_len, p.d_head, p.seed)
    t, d = p.seq_len, p.d_head
    softmax = scaled_dot_product_attention(q, k, v, causal_mask(t)).weights  # (T, T)
    if p.variant == "linear":
        par = linear_attention(q, k, v)
        rec = linear_attention_recurrent(q[: p.step], k[: p.step], v[: p.step])
        implicit = par.weights  # (T, T) phi(q) . phi(k), rows normalised
        fq, fk = elu_plus_one(q), elu_plus_one(k)
        state_numbers = d * d + d
    else:
        k = F.normalize(k, dim=-1)  # the delta rule wants unit keys
        beta = torch.full((t,), p.beta)
        alpha = torch.full((t,), p.gate)
        par = delta_rule(q, k, v, beta, alpha)
        s = p.step
        rec = delta_rule_recurrent(q[:s], k[:s], v[:s], beta[:s], alpha[:s])
        implicit = _delta_implicit_weights(k, beta, alpha, par.weights)
        fq, fk = q, k
        state_numbers = d * d
    diff = (rec.output - par.output[: p.step]).abs().max().item()
    return LinearAttentionExploration(
        params=p,
        q=fq,
        k=fk,
        v=v,
        parallel=par,
        recurrent=rec,
        implicit_weights=implicit,
        softmax_weights=softmax,
        max_difference=diff,
        state_numbers=state_numbers,
        cache_numbers=2 * p.step * d,
    )


def _delta_implicit_weights(k: Tensor, beta: Tensor, alpha: Tensor, scored: Tensor) -> Tensor:
    """M with delta_rule's output = M @ v: scored (G * tril(Q K^T)) times the solve's inverse.

    delta_rule solves (I + diag(beta) (G * strict_tril(K K^T))) U = diag(beta) V and returns
    scored @ U; solving against diag(beta) instead of V gives the matrix that maps V to U.
    """
    t = k.shape[0]
    log_g = torch.cumsum(torch.log(alpha), dim=-1)  # (T,)
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    decay = (log_g[:, None] - log_g[None, :]).masked_fill(~causal, float("-inf")).exp()
    system = torch.eye(t) + beta[:, None] * ((k @ k.T) * decay).tril(-1)  # (T, T)
    to_u = torch.linalg.solve_triangular(system, torch.diag(beta), upper=False)  # (T, T)
    return scored @ to_u  # (T, T) lower triangular
