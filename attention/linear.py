"""Linear attention: drop the softmax and causal attention becomes an RNN with a fixed-size state.

Replace exp(q . k) by phi(q) . phi(k) for a positive feature map phi (here elu(x) + 1). Then
    o_t = sum_{s<=t} (phi(q_t) . phi(k_s)) v_s / sum_{s<=t} phi(q_t) . phi(k_s)
        = S_t^T phi(q_t) / (z_t . phi(q_t)),   S_t = sum_{s<=t} phi(k_s) v_s^T   (D, Dv)
                                               z_t = sum_{s<=t} phi(k_s)         (D,)
Two ways to compute the same numbers:
    parallel   W = tril(phi(Q) phi(K)^T), rows divided by their sums; O = W V   (training)
    recurrent  S_t = S_{t-1} + phi(k_t) v_t^T; z_t = z_{t-1} + phi(k_t)        (decoding)
The recurrent state is D x Dv numbers per head whatever the length: no growing KV cache, and,
as lesson 1's RNN, everything the past left behind must fit in it.

The delta rule (DeltaNet) writes with correction instead of pure addition, and Gated DeltaNet
also decays the state by a gate alpha_t in (0, 1] (keys of unit length, write strength beta_t):
    S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,   o_t = S_t^T q_t
Reading k_t from alpha_t S_{t-1} gives the old value; the update moves it by beta_t toward v_t.
Its parallel form: with u_t = beta_t (v_t - alpha_t S_{t-1}^T k_t) the state is
S_t = sum_{s<=t} g(t, s) k_s u_s^T, g(t, s) = alpha_{s+1} ... alpha_t, so U solves the lower
triangular system (I + diag(beta) (G * strict_tril(K K^T))) U = diag(beta) V and
O = (G * tril(Q K^T)) U. Production kernels solve it chunk by chunk; here, in one piece.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from ._checks import check_tensor, shape_str


def elu_plus_one(x: Tensor) -> Tensor:
    """phi(x) = elu(x) + 1: positive, so every weight phi(q) . phi(k) is positive."""
    return F.elu(x) + 1


@dataclass(frozen=True)
class LinearAttentionResult:
    """What a linear-attention pass computed; `state` is all a decoder carries forward."""

    output: Tensor  # (..., T, Dv)
    state: Tensor  # (..., D, Dv) S after the last token
    normalizer: Tensor | None  # (..., D) z after the last token; None without normalising
    weights: Tensor | None  # (..., T, T) the causal matrix the parallel form builds; None when
    # the recurrent form ran (it never exists there)


def _check_qkv(query: Tensor, key: Tensor, value: Tensor) -> None:
    check_tensor("query", query, ndims=(2, 3, 4))
    check_tensor("key", key, ndims=(query.dim(),))
    check_tensor("value", value, ndims=(query.dim(),))
    if key.shape != query.shape:
        raise ValueError(
            f"key: expected query's shape {shape_str(query.shape)} (causal self-attention), "
            f"got {shape_str(key.shape)}"
        )
    if value.shape[:-1] != query.shape[:-1]:
        raise ValueError(
            f"value: expected leading shape {shape_str(query.shape[:-1])} like query's, got "
            f"{shape_str(value.shape)}"
        )


def _features(query, key, value, feature_map) -> tuple[Tensor, Tensor]:
    _check_qkv(query, key, value)
    phi = (lambda x: x) if feature_map is None else feature_map
    return phi(query), phi(key)


def linear_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    *,
    feature_map: Callable[[Tensor], Tensor] | None = elu_plus_one,
    normalize: bool = True,
) -> LinearAttentionResult:
    """Causal linear attention, parallel form: every position at once, a (T, T) matrix.

    query, key (..., T, D) and value (..., T, Dv) of rank 2, 3 or 4; feature_map: phi on queries
    and keys (None = identity); normalize=False skips the division by the row sums (which
    needs a positive phi) and gives o_t = S_t^T q_t.
    """
    fq, fk = _features(query, key, value, feature_map)
    t = query.shape[-2]
    causal = torch.ones(t, t, dtype=torch.bool, device=query.device).tril()  # (T, T)
    weights = (fq @ fk.transpose(-2, -1)).masked_fill(~causal, 0.0)  # (..., T, T)
    z = fk.sum(dim=-2) if normalize else None  # (..., D)
    if normalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)  # rows sum to 1
    state = fk.transpose(-2, -1) @ value  # (..., D, Dv) = sum_t phi(k_t) v_t^T
    return LinearAttentionResult(weights @ value, state, z, weights)


def linear_attention_recurrent(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    *,
    feature_map: Callable[[Tensor], Tensor] | None = elu_plus_one,
    normalize: bool = True,
) -> LinearAttentionResult:
    """Causal linear attention, recurrent form: one token at a time through a (D, Dv) state.

    Same arguments and the same output as linear_attention; nothing of size T x T is built.
    """
    fq, fk = _features(query, key, value, feature_map)
    *lead, t, d = query.shape
    state = query.new_zeros(*lead, d, value.shape[-1])  # (..., D, Dv) S_0 = 0
    z = query.new_zeros(*lead, d)  # (..., D)
    outputs = []
    for i in range(t):
        k_i, q_i = fk[..., i, :], fq[..., i, :]  # (..., D)
        state = state + k_i[..., :, None] * value[..., i, None, :]  # write phi(k) v^T
        z = z + k_i
        o = (q_i[..., None, :] @ state)[..., 0, :]  # (..., Dv) read: S^T phi(q)
        if normalize:
            o = o / (q_i * z).sum(dim=-1, keepdim=True)
        outputs.append(o)
    z = z if normalize else None
    return LinearAttentionResult(torch.stack(outputs, dim=-2), state, z, None)


def _check_gates(query, key, value, beta: Tensor, alpha: Tensor | None) -> Tensor:
    """_check_qkv, then beta (..., T) in [0, 1], alpha (..., T) in (0, 1] (default 1) -> alpha."""
    _check_qkv(query, key, value)
    want = tuple(value.shape[:-1])
    for name, g, ok, interval in (
        ("beta", beta, lambda g: (g >= 0) & (g <= 1), "[0, 1]"),
        ("alpha", alpha, lambda g: (g > 0) & (g <= 1), "(0, 1]"),
    ):
        if g is None:
            continue
        check_tensor(name, g, ndims=(len(want),))
        if tuple(g.shape) != want:
            raise ValueError(
                f"{name}: expected one gate per token, shape {shape_str(want)}, got "
                f"{shape_str(g.shape)}"
            )
        if not bool(ok(g).all()):
            raise ValueError(
                f"{name}: expected values in {interval}, got {g.min():.3g} .. {g.max():.3g}"
            )
    return torch.ones_like(beta) if alpha is None else alpha


def delta_rule(
    query: Tensor, key: Tensor, value: Tensor, beta: Tensor, alpha: Tensor | None = None
) -> LinearAttentionResult:
    """Gated delta rule, parallel form (one triangular solve); alpha=None is plain DeltaNet.

    query, key (..., T, D), keys of unit length (F.normalize(k, dim=-1)); value (..., T, Dv);
    beta (..., T) in [0, 1]; alpha (..., T) in (0, 1]. Returns o_t = S_t^T q_t, the last state
    S_T and, as weights, the (T, T) matrix G * tril(Q K^T) that multiplies the corrected U.
    """
    alpha = _check_gates(query, key, value, beta, alpha)
    t = query.shape[-2]
    log_g = torch.cumsum(torch.log(alpha), dim=-1)  # (..., T) log(alpha_1 ... alpha_t)
    causal = torch.ones(t, t, dtype=torch.bool, device=query.device).tril()  # (T, T)
    # decay[t, s] = alpha_{s+1} ... alpha_t for s <= t (exp of a non-positive number), else 0
    decay = (log_g[..., :, None] - log_g[..., None, :]).masked_fill(~causal, float("-inf")).exp()
    kk = (key @ key.transpose(-2, -1)) * decay  # (..., T, T)
    system = torch.eye(t, dtype=query.dtype, device=query.device) + beta[..., :, None] * kk.tril(-1)
    bv = beta[..., :, None] * value  # (..., T, Dv)
    u = torch.linalg.solve_triangular(system, bv, upper=False)  # (..., T, Dv) U
    weights = (query @ key.transpose(-2, -1)) * decay  # (..., T, T) lower triangular
    last = decay[..., -1, :]  # (..., T) g(T, s)
    state = (key * last[..., :, None]).transpose(-2, -1) @ u  # (..., D, Dv)
    return LinearAttentionResult(weights @ u, state, None, weights)


def delta_rule_recurrent(
    query: Tensor, key: Tensor, value: Tensor, beta: Tensor, alpha: Tensor | None = None
) -> LinearAttentionResult:
    """Gated delta rule, one token at a time: S = alpha (I - beta k k^T) S + beta k v^T.

    Same arguments and outputs as delta_rule (weights None: the recurrence builds no matrix).
    """
    alpha = _check_gates(query, key, value, beta, alpha)
    *lead, t, d = query.shape
    state = query.new_zeros(*lead, d, value.shape[-1])  # (..., D, Dv)
    outputs = []
    for i in range(t):
        k_i, v_i = key[..., i, :], value[..., i, :]  # (..., D), (..., Dv)
        a_i, b_i = alpha[..., i, None, None], beta[..., i, None]  # (..., 1, 1), (..., 1)
        state = a_i * state  # forget a little everywhere
        old = (k_i[..., None, :] @ state)[..., 0, :]  # (..., Dv) what the state says for k_i
        state = state + k_i[..., :, None] * (b_i * (v_i - old))[..., None, :]  # move it to v_i
        outputs.append((query[..., i, None, :] @ state)[..., 0, :])  # (..., Dv) S^T q
    return LinearAttentionResult(torch.stack(outputs, dim=-2), state, None, None)
