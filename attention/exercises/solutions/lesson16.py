"""Reference solutions to lesson 16, your own SmolLM2 (checked by attention.exercises.lesson16).

Each lesson shows the same code in a hidden cell tagged `solution`;
tests/exercises/test_solution_copies.py keeps the two equal. The layer, the block and the output
layer call the other pieces through `f` (a Pieces: yours, or the course's where yours is
unfinished);
the generation loop runs `decoder_forward` with a cache and picks each token with `sample_next`.
"""

import math

import torch
import torch.nn.functional as F

from ...models.pretrained.compare import decoder_forward
from ...models.pretrained.generate import sample_next


def solution_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    mean_square = x.pow(2).mean(dim=-1, keepdim=True)  # (..., 1) over the features, no mean
    return x / torch.sqrt(mean_square + eps) * weight  # (..., M)


def solution_rope_interleaved(
    x: torch.Tensor, positions: torch.Tensor, base: float
) -> torch.Tensor:
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (D/2,) pair i's speed
    angles = positions[:, None] * theta  # (T, D/2) in float64, like the course's tables
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]  # pair i = (x_2i, x_2i+1): neighbours
    turned = torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1)  # (..., T, D/2, 2)
    return turned.flatten(-2)  # (..., T, D), each pair back in its place


def solution_cached_causal_mask(t: int, past: int) -> torch.Tensor:
    i = torch.arange(past, past + t)[:, None]  # (T, 1) the new tokens' positions
    j = torch.arange(past + t)[None, :]  # (1, past + T) every key's position, cached ones first
    return j <= i  # (T, past + T), True = may attend: itself and everything before it


def solution_gqa_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    n_rep = q.shape[1] // k.shape[1]  # query heads per key/value head
    k = k.repeat_interleave(n_rep, dim=1)  # (B, H, Tk, D): head h reads kv head h // n_rep
    v = v.repeat_interleave(n_rep, dim=1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, Tq, Tk), sqrt(d_head)
    scores = scores.masked_fill(~mask, float("-inf"))  # True = may attend
    weights = torch.softmax(scores, dim=-1)  # (B, H, Tq, Tk)
    return weights @ v, weights  # (B, H, Tq, D), (B, H, Tq, Tk)


def solution_swiglu(
    x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor
) -> torch.Tensor:
    gate = F.silu(x @ w_gate)  # (..., F) SiLU on the gate branch only
    return (gate * (x @ w_up)) @ w_down  # (..., M)


def solution_attention_layer(x, w, past, cfg, f):
    b, t, _ = x.shape
    h, hkv, d = cfg.n_heads, cfg.n_kv_heads, cfg.d_head
    p = 0 if past is None else past[0].shape[2]  # how many tokens the cache holds
    positions = torch.arange(p, p + t)  # (T,) the new tokens come after the cached ones
    q = (x @ w["w_q"]).view(b, t, h, d).transpose(1, 2)  # (B, H, T, D)
    k = (x @ w["w_k"]).view(b, t, hkv, d).transpose(1, 2)  # (B, Hkv, T, D)
    v = (x @ w["w_v"]).view(b, t, hkv, d).transpose(1, 2)  # (B, Hkv, T, D), never rotated
    q, k = f.rope(q, positions, cfg.rope_base), f.rope(k, positions, cfg.rope_base)
    if past is not None:
        k = torch.cat([past[0], k], dim=2)  # (B, Hkv, p + T, D) cached keys first
        v = torch.cat([past[1], v], dim=2)
    heads, _ = f.attention(q, k, v, f.causal_mask(t, p))  # (B, H, T, D)
    merged = heads.transpose(1, 2).reshape(b, t, h * d)  # (B, T, M)
    return merged @ w["w_o"], (k, v)


def solution_decoder_block(x, w, past, cfg, f):
    a, kv = f.attention_layer(f.rms_norm(x, w["attn_norm"], cfg.norm_eps), w, past, cfg, f)
    x = x + a  # (B, T, M) the residual stream plus what attention read
    g = f.rms_norm(x, w["ffn_norm"], cfg.norm_eps)
    return x + f.swiglu(g, w["w_gate"], w["w_up"], w["w_down"]), kv


def solution_output_layer(x, weights, cfg, f):
    x = f.rms_norm(x, weights["norm"], cfg.norm_eps)  # the final norm
    return x @ weights["embed"].T  # (B, T, V): tied, the embedding matrix is the output layer


def solution_generate(f, weights, cfg, prompt_ids, n_new, temperature=0.0, top_k=None, seed=0):
    g = torch.Generator().manual_seed(seed)  # one generator for the whole loop
    logits, cache = decoder_forward(f, weights, cfg, prompt_ids)  # (1, T, V): the prompt, once
    new, chosen_by = [], []
    for i in range(n_new):
        last = logits[:, -1]  # (1, V) the prediction after everything read so far
        nxt = sample_next(last, temperature=temperature, top_k=top_k, generator=g)  # (1,)
        new.append(int(nxt))
        chosen_by.append(last)
        if i + 1 < n_new:  # feed only the new token: the cache holds all the others
            logits, cache = decoder_forward(f, weights, cfg, nxt[:, None], cache)  # (1, 1, V)
    return new, torch.stack(chosen_by, dim=1)  # n_new ids, (1, n_new, V) the logits behind them
