"""Wrong pieces of lesson 16, each written as a learner might, and SLIPPED: for each slip the
debugger knows (compare.SLIPS), the piece it is in, a wrong version and the checker that names it.
Shared by tests/exercises/test_lesson16.py (the checkers name each), test_capstone.py and
tests/models/test_debugger.py (the debugger finds each in the assembled model)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attention.exercises.solutions import lesson16 as S
from attention.positional import apply_rope

# --- wrong pieces, each written as a learner might ----------------------------------------------


def layer_norm(x, weight, eps):
    c = x - x.mean(-1, keepdim=True)  # mean subtracted
    return c / torch.sqrt(c.pow(2).mean(-1, keepdim=True) + eps) * weight


def eps_outside(x, weight, eps):
    return x / (torch.sqrt(x.pow(2).mean(-1, keepdim=True)) + eps) * weight


def wrong_axis(x, weight, eps):
    return x / torch.sqrt(x.pow(2).mean(-2, keepdim=True) + eps) * weight


def weight_forgotten(x, weight, eps):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def swapped(x, w_gate, w_up, w_down):
    return (F.silu(x @ w_up) * (x @ w_gate)) @ w_down


def relu_gate(x, w_gate, w_up, w_down):
    return (F.relu(x @ w_gate) * (x @ w_up)) @ w_down


def gelu_gate(x, w_gate, w_up, w_down):
    return (F.gelu(x @ w_gate) * (x @ w_up)) @ w_down


def silu_after(x, w_gate, w_up, w_down):
    return F.silu((x @ w_gate) * (x @ w_up)) @ w_down


def sigmoid_gate(x, w_gate, w_up, w_down):
    return (torch.sigmoid(x @ w_gate) * (x @ w_up)) @ w_down


def no_silu(x, w_gate, w_up, w_down):
    return ((x @ w_gate) * (x @ w_up)) @ w_down


def _rope(x, positions, base, *, sign=1.0, step=2):
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d // 2 * step, step, dtype=torch.float64) / d)
    angles = positions[:, None] * theta
    cos, sin = angles.cos().to(x.dtype), sign * angles.sin().to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, b * cos + a * sin], -1).flatten(-2)


def rope_backwards(x, positions, base):
    return _rope(x, positions, base, sign=-1.0)


def rope_i_not_2i(x, positions, base):
    return _rope(x, positions, base, step=1)


def rope_halves(x, positions, base):
    return apply_rope(x, positions, base=base, layout="half")


def tiled(q, k, v, mask):
    n = q.shape[1] // k.shape[1]
    return S.solution_gqa_attention(q, k.repeat(1, n, 1, 1), v.repeat(1, n, 1, 1), mask)


def scale_d_model(q, k, v, mask):
    n = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(n, 1), v.repeat_interleave(n, 1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[1] * q.shape[-1])  # sqrt(M)
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
    return weights @ v, weights


def _scaled(scale=None, masked=True):
    def my_attention(q, k, v, mask):
        n = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(n, 1), v.repeat_interleave(n, 1)
        d = q.shape[-1]
        scores = q @ k.transpose(-2, -1) * (1 / math.sqrt(d) if scale is None else scale(d))
        if masked:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, -1)
        return weights @ v, weights

    return my_attention


def mask_one_future(t, past):
    i = torch.arange(past, past + t)[:, None]
    return torch.arange(past + t)[None, :] <= i + 1


def mask_inverted(t, past):
    i = torch.arange(past, past + t)[:, None]
    return torch.arange(past + t)[None, :] > i


def mask_off_by_one(t, past):
    i = torch.arange(past, past + t)[:, None]
    return torch.arange(past + t)[None, :] < i  # the diagonal excluded


def _layer(*, rope_v=False, from_zero=False, transpose=True, w_o=True):
    def my_attention_layer(x, w, past, cfg, f):
        b, t, _ = x.shape
        h, hkv, d = cfg.n_heads, cfg.n_kv_heads, cfg.d_head
        p = 0 if past is None else past[0].shape[2]
        positions = torch.arange(t) if from_zero else torch.arange(p, p + t)
        q = f.rope((x @ w["w_q"]).view(b, t, h, d).transpose(1, 2), positions, cfg.rope_base)
        k = f.rope((x @ w["w_k"]).view(b, t, hkv, d).transpose(1, 2), positions, cfg.rope_base)
        v = (x @ w["w_v"]).view(b, t, hkv, d).transpose(1, 2)
        if rope_v:
            v = f.rope(v, positions, cfg.rope_base)
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        heads, _ = f.attention(q, k, v, f.causal_mask(t, p))
        merged = (heads.transpose(1, 2) if transpose else heads).reshape(b, t, h * d)
        return (merged @ w["w_o"] if w_o else merged), (k, v)

    return my_attention_layer


_UNTIED = {}


def untied(x, weights, cfg, f):
    m, v = weights["embed"].shape[1], weights["embed"].shape[0]
    if (m, v) not in _UNTIED:  # a separate output layer, made once
        _UNTIED[(m, v)] = torch.randn(m, v, generator=torch.Generator().manual_seed(0)) * 0.05
    return f.rms_norm(x, weights["norm"], cfg.norm_eps) @ _UNTIED[(m, v)]


def ignores_cache(t, past):
    i = torch.arange(t)[:, None]  # positions counted from 0, as if nothing were cached
    return torch.arange(past + t)[None, :] <= i


def no_final_norm(x, weights, cfg, f):
    return x @ weights["embed"].T


def no_residual(x, w, past, cfg, f):
    a, kv = f.attention_layer(f.rms_norm(x, w["attn_norm"], cfg.norm_eps), w, past, cfg, f)
    return f.swiglu(
        f.rms_norm(a, w["ffn_norm"], cfg.norm_eps), w["w_gate"], w["w_up"], w["w_down"]
    ), kv


# name -> (the piece it replaces, the wrong function, its checker)
SLIPPED = {
    "LayerNorm (mean subtracted) instead of RMSNorm": ("rms_norm", layer_norm, "check_rms_norm"),
    "eps outside the root": ("rms_norm", eps_outside, "check_rms_norm"),
    "the norm over the wrong axis": ("rms_norm", wrong_axis, "check_rms_norm"),
    "gate and up swapped (SiLU on the wrong branch)": ("swiglu", swapped, "check_swiglu"),
    "ReLU instead of SiLU": ("swiglu", relu_gate, "check_swiglu"),
    "GELU instead of SiLU": ("swiglu", gelu_gate, "check_swiglu"),
    "SiLU after the product": ("swiglu", silu_after, "check_swiglu"),
    "the other RoPE layout (halves)": ("rope", rope_halves, "check_rope_interleaved"),
    "RoPE applied to v": ("attention_layer", _layer(rope_v=True), "check_attention_layer"),
    "positions restarting at 0 after the cache": (
        "attention_layer",
        _layer(from_zero=True),
        "check_attention_layer",
    ),
    "kv heads tiled instead of repeated in place": ("attention", tiled, "check_gqa_attention"),
    "scale 1/sqrt(d_model) instead of 1/sqrt(d_head)": (
        "attention",
        scale_d_model,
        "check_gqa_attention",
    ),
    "the causal mask off by one (the diagonal excluded)": (
        "causal_mask",
        mask_off_by_one,
        "check_cached_causal_mask",
    ),
    "the mask ignores the cache": ("causal_mask", ignores_cache, "check_cached_causal_mask"),
    "the output layer not tied": ("output_layer", untied, "check_output_layer"),
    "the final norm forgotten": ("output_layer", no_final_norm, "check_output_layer"),
    "the norm's weight forgotten": ("rms_norm", weight_forgotten, "check_rms_norm"),
    "sigmoid instead of SiLU": ("swiglu", sigmoid_gate, "check_swiglu"),
    "no SiLU at all": ("swiglu", no_silu, "check_swiglu"),
    "RoPE turned the wrong way": ("rope", rope_backwards, "check_rope_interleaved"),
    "RoPE frequencies with i instead of 2i": ("rope", rope_i_not_2i, "check_rope_interleaved"),
    "scores not scaled": ("attention", _scaled(lambda d: 1.0), "check_gqa_attention"),
    "scores divided by d_head, not its root": (
        "attention",
        _scaled(lambda d: 1 / d),
        "check_gqa_attention",
    ),
    "the mask not applied": ("attention", _scaled(masked=False), "check_gqa_attention"),
    "the causal mask off by one (one future key)": (
        "causal_mask",
        mask_one_future,
        "check_cached_causal_mask",
    ),
    "the causal mask inverted": ("causal_mask", mask_inverted, "check_cached_causal_mask"),
    "heads merged without transpose(1, 2)": (
        "attention_layer",
        _layer(transpose=False),
        "check_attention_layer",
    ),
    "w_o forgotten": ("attention_layer", _layer(w_o=False), "check_attention_layer"),
    "the residual forgotten": ("block", no_residual, "check_decoder_block"),
}
