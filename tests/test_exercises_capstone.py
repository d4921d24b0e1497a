"""The checkers of lesson 16 reject each named slip with its name (what all checkers do:
test_exercises.py). SLIPPED holds the wrong pieces; tests/test_capstone.py feeds the same ones
into the assembled model and checks that the debugger finds them."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import attention.exercises as E
from attention.exercises import capstone as C
from attention.exercises import solution_capstone as S
from attention.positional import apply_rope


def run(check, fn, capsys) -> tuple[bool, str]:
    ok = check(fn)
    return ok, capsys.readouterr().out


# --- wrong pieces, each written as a learner might ----------------------------------------------


def layer_norm(x, weight, eps):
    c = x - x.mean(-1, keepdim=True)  # mean subtracted
    return c / torch.sqrt(c.pow(2).mean(-1, keepdim=True) + eps) * weight


def eps_outside(x, weight, eps):
    return x / (torch.sqrt(x.pow(2).mean(-1, keepdim=True)) + eps) * weight


def wrong_axis(x, weight, eps):
    return x / torch.sqrt(x.pow(2).mean(-2, keepdim=True) + eps) * weight


def swapped(x, w_gate, w_up, w_down):
    return (F.silu(x @ w_up) * (x @ w_gate)) @ w_down


def relu_gate(x, w_gate, w_up, w_down):
    return (F.relu(x @ w_gate) * (x @ w_up)) @ w_down


def gelu_gate(x, w_gate, w_up, w_down):
    return (F.gelu(x @ w_gate) * (x @ w_up)) @ w_down


def silu_after(x, w_gate, w_up, w_down):
    return F.silu((x @ w_gate) * (x @ w_up)) @ w_down


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


def mask_off_by_one(t, past):
    i = torch.arange(past, past + t)[:, None]
    return torch.arange(past + t)[None, :] < i  # the diagonal excluded


def _layer(*, rope_v=False, from_zero=False):
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
        return heads.transpose(1, 2).reshape(b, t, h * d) @ w["w_o"], (k, v)

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
}


def test_there_are_eight_new_checkers_each_with_a_solution(capsys):
    checks = [n for n in C.__all__ if n.startswith("check_")]
    assert len(checks) == 8 and set(checks) <= set(E.__all__)
    for name in checks:
        solution = getattr(S, name.replace("check_", "solution_"))
        ok, out = run(getattr(E, name), solution, capsys)
        assert ok, out


@pytest.mark.parametrize("name", list(SLIPPED))
def test_each_named_slip_is_rejected_with_its_name(name, capsys):
    _, wrong, check = SLIPPED[name]
    ok, out = run(getattr(C, check), wrong, capsys)
    assert ok is False, out
    assert out.startswith("Not yet: ") and name in out, out


def test_the_norm_checker_names_a_forgotten_weight_and_a_layer_that_uses_globals(capsys):
    ok, out = run(
        C.check_rms_norm, lambda x, w, eps: x / torch.sqrt(x.pow(2).mean(-1, True) + eps), capsys
    )
    assert not ok and "the norm's weight forgotten" in out

    def my_layer(x, w, past, cfg, f):  # SmolLM2's sizes written in, not cfg's
        return x.view(1, x.shape[1], 9, 64), None

    ok, out = run(C.check_attention_layer, my_layer, capsys)
    assert not ok and "take the sizes from cfg" in out, out


def test_the_mask_checker_names_a_square_mask_after_a_cache(capsys):
    def square(t, past):
        return torch.ones(t, t).tril().bool()

    ok, out = run(C.check_cached_causal_mask, square, capsys)
    assert not ok and "the mask ignores the cache" in out, out


def test_the_layer_checker_names_a_cache_that_does_not_grow(capsys):
    right = S.solution_attention_layer

    def forgets(x, w, past, cfg, f):
        out, (k, v) = right(x, w, past, cfg, f)
        t = x.shape[1]
        return out, (k[:, :, -t:], v[:, :, -t:])

    ok, out = run(C.check_attention_layer, forgets, capsys)
    assert not ok and "holds only the new positions" in out, out


def no_attention_residual(x, w, past, cfg, f):
    h, kv = f.attention_layer(f.rms_norm(x, w["attn_norm"], cfg.norm_eps), w, past, cfg, f)
    g = f.rms_norm(h, w["ffn_norm"], cfg.norm_eps)
    return h + f.swiglu(g, w["w_gate"], w["w_up"], w["w_down"]), kv


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (no_attention_residual, "the residual forgotten around the attention"),
        (
            lambda x, w, past, cfg, f: S.solution_decoder_block(
                x, dict(w, ffn_norm=w["attn_norm"]), past, cfg, f
            ),
            "not w['attn_norm']",
        ),
    ],
)
def test_the_block_checker_names_its_slips(block, message, capsys):
    ok, out = run(C.check_decoder_block, block, capsys)
    assert not ok and message in out, out


def test_the_output_checker_names_a_forgotten_final_norm_and_a_fresh_random_layer(capsys):
    ok, out = run(C.check_output_layer, lambda x, weights, cfg, f: x @ weights["embed"].T, capsys)
    assert not ok and "the final norm forgotten" in out, out

    def fresh(x, weights, cfg, f):
        v, m = weights["embed"].shape
        return torch.nn.Linear(m, v, bias=False)(f.rms_norm(x, weights["norm"], cfg.norm_eps))

    ok, out = run(C.check_output_layer, fresh, capsys)
    assert not ok and "not tied" in out and "changed between two calls" in out, out


def test_use_pieces_keeps_what_runs_and_says_what_it_replaced(capsys):
    def my_rms_norm(x, weight, eps):
        raise NotImplementedError

    def my_swiglu(x, w_gate, w_up, w_down):
        return x @ w_down  # wrong shape: crashes on the small input

    f = C.use_pieces(rms_norm=my_rms_norm, swiglu=my_swiglu, rope=rope_halves)
    out = capsys.readouterr().out
    assert f.rope is rope_halves and f.rms_norm is S.solution_rms_norm
    assert f.swiglu is S.solution_swiglu and f.block is S.solution_decoder_block
    assert "your pieces: rope\n" in out
    assert "rms_norm (unfinished)" in out and "swiglu (RuntimeError on a small input" in out
    assert "block (not given)" in out

    def my_block(x, w, past, cfg, f):  # forgets to return the cache
        return S.solution_decoder_block(x, w, past, cfg, f)[0]

    f = C.use_pieces(block=my_block)
    out = capsys.readouterr().out
    assert f.block is S.solution_decoder_block
    assert "block (returned (1, 3, 24) on a small input, expected ((1, 3, 24), (" in out
    with pytest.raises(ValueError, match=r"unknown pieces \['norm'\]"):
        C.use_pieces(norm=my_rms_norm)
    with pytest.raises(TypeError, match="rope: expected a function, got Tensor"):
        C.use_pieces(rope=torch.zeros(2))
