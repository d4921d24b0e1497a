"""A debugger for a decoder of your own: run it beside SmolLM2 and find the first step that differs.

Your model is eight functions, a `Pieces` (signatures below); `decoder_forward` runs them on
SmolLM2's weights (`plain_weights`). `compare(f, model, ids)` runs your pieces and the course's
model on the same ids and records every call of every piece. It then gives each call's own
inputs to the course's piece, in the order the forward pass made the calls, and reports the
first call whose result really differs (beyond the tolerance, or by less when a known slip of
that piece accounts for the difference): its layer and step, its size, and the slip (each known
slip is tried on your own inputs). A difference that only grows out of an earlier one is not
reported, nor float rounding, and only slips of the piece that differs are suggested:

    report = compare(my_pieces, model, ids)
    print(report)      # first difference: layer 0, step 'mask' (whole text): 12 entries differ
                       #   in your causal_mask: given the same inputs, the course's ...
                       #   matches: the causal mask off by one (the diagonal excluded): ...

The steps of block i are the models' points (.points), in the order the forward pass reaches
them:
    resid_pre   (B, T, M)        the residual stream entering the block
    attn_norm   (B, T, M)        rms_norm(x, attn_norm), what the attention layer reads
    q_raw, k_raw (B, H|Hkv, T, D) the projections, split into heads, before RoPE
    q, k                         after RoPE (k with the cached keys first)
    v           (B, Hkv, Tk, D)  the values (cached ones first)
    mask        (T, Tk) bool     True = may attend
    weights     (B, H, T, Tk)    softmax of the scaled scores
    heads       (B, H, T, D)     each head's output
    attn_out    (B, T, M)        the heads merged and projected by w_o
    resid_mid   (B, T, M)        x + attn_out
    ffn_norm, ffn, resid_post    rms_norm(resid_mid, ffn_norm), SwiGLU of it, resid_mid + ffn
then `logits` (B, T, V). Where the piece that differs is the layer or the block (their own code,
not a piece they call), the step is the first whose value differs from the course's. Both sides
are read by one recorder: the learner's from a run of their pieces, the course's from a run of
COURSE (the course's pieces, tested equal to SmolLM2) on the same ids. Two runs are compared:
the whole text at once, then (if that agrees) the text read in two calls with the cache, where
positions and masks must continue after the cached tokens.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ...functional import scaled_dot_product_attention
from ...language import translate
from ...masks import causal_mask as _core_causal_mask
from ...multihead import merge_heads
from ...positional import apply_rope
from .points import NAMES as STEPS
from .points import block_key
from .smollm2 import SmolLM2, SmolLM2Config, plain_weights

LAYER_NAMES = (
    "attn_norm",
    "w_q",
    "w_k",
    "w_v",
    "w_o",
    "ffn_norm",
    "w_gate",
    "w_up",
    "w_down",
)
PAIRS = {  # the pieces that return two things
    "attention": "(output, weights)",
    "attention_layer": "(output, (k, v))",
    "block": "(output, (k, v))",
}
Cache = list[tuple[Tensor, Tensor]]  # n_layers x (k, v), each (B, Hkv, Tpast, D)


@dataclass(frozen=True)
class Pieces:
    """The functions a LLaMA-style decoder is made of; `f` in the layer, block and output
    layer is the Pieces in use, so each piece calls the others through it (f.rope(...))."""

    rms_norm: Callable[..., Tensor]  # (x (..., M), weight (M,), eps) -> (..., M)
    rope: Callable[..., Tensor]  # (x (..., T, D), positions (T,), base) -> same shape,
    # pairs (x_2i, x_2i+1), the layout of the file's w_q and w_k
    causal_mask: Callable[..., Tensor]  # (t, past) -> (T, past + T) bool, True = may attend
    attention: Callable[..., tuple]  # (q (B, H, Tq, D), k, v (B, Hkv, Tk, D), mask (Tq, Tk))
    # -> (output (B, H, Tq, D), weights (B, H, Tq, Tk)); Hkv divides H (grouped-query)
    swiglu: Callable[..., Tensor]  # (x (..., M), w_gate (M, F), w_up (M, F), w_down (F, M))
    attention_layer: Callable[..., tuple]  # (x (B, T, M), w, past, cfg, f)
    # -> (output (B, T, M), (k, v) with the cached ones first, for the next call's past)
    block: Callable[..., tuple]  # (x (B, T, M), w, past, cfg, f) -> (output (B, T, M), (k, v))
    output_layer: Callable[..., Tensor]  # (x (B, T, M), weights, cfg, f) -> logits (B, T, V)

    def replace(self, **pieces: Callable[..., Any]) -> Pieces:
        """A copy with some pieces replaced: f.replace(rope=my_rope)."""
        return dataclasses.replace(self, **pieces)


def block_weights(weights: dict[str, Tensor], i: int) -> dict[str, Tensor]:
    """Block i's weights without the block_key prefix: {"attn_norm": ..., "w_q": ...}."""
    return {name: weights[block_key(i, name)] for name in LAYER_NAMES}


def decoder_forward(
    f: Pieces,
    weights: dict[str, Tensor],
    cfg: SmolLM2Config,
    ids: Tensor,
    cache: Cache | None = None,
) -> tuple[Tensor, Cache]:
    """ids (B, T) -> (logits (B, T, V), the cache up to the last token), run by f's pieces.

    With a cache (from an earlier call) ids holds only the new tokens.

    Raises:
        TypeError: a block that does not return a pair (output, (k, v)).
    """
    x = weights["embed"][ids]  # (B, T, M)
    new_cache = []
    for i in range(cfg.n_layers):
        past = None if cache is None else cache[i]
        result = f.block(x, block_weights(weights, i), past, cfg, f)
        if _pair(result) is None:
            got = type(result).__name__
            raise TypeError(f"f.block: expected a pair (output, (k, v)), got {got} (layer {i})")
        x, kv = result  # (B, T, M), this layer's keys and values
        new_cache.append(kv)
    return f.output_layer(x, weights, cfg, f), new_cache


# --- the course's pieces -------------------------------------------------------------------------


def _rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))  # as SmolLM2's


def _rope(x: Tensor, positions: Tensor, base: float) -> Tensor:
    return apply_rope(x, positions, base=base, layout="interleaved")


def _causal_mask(t: int, past: int) -> Tensor:
    return _core_causal_mask(t, past + t, offset=past)  # (T, past + T)


def _attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    r = scaled_dot_product_attention(q, k, v, mask, check_finite=False)  # grouped-query
    return r.output, r.weights


def _swiglu(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    return (F.silu(x @ w_gate) * (x @ w_up)) @ w_down


def _split(x: Tensor, n_heads: int) -> Tensor:
    b, t, _ = x.shape
    return x.view(b, t, n_heads, -1).transpose(1, 2)  # (B, H, T, D)


def _attention_layer(x: Tensor, w: dict, past: Any, cfg: SmolLM2Config, f: Pieces) -> tuple:
    t = x.shape[1]
    p = 0 if past is None else past[0].shape[2]
    positions = torch.arange(p, p + t, device=x.device)  # (T,) after the cached tokens
    q = f.rope(_split(x @ w["w_q"], cfg.n_heads), positions, cfg.rope_base)  # (B, H, T, D)
    k = f.rope(_split(x @ w["w_k"], cfg.n_kv_heads), positions, cfg.rope_base)
    v = _split(x @ w["w_v"], cfg.n_kv_heads)  # (B, Hkv, T, D)
    if past is not None:
        k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
    heads, _ = f.attention(q, k, v, f.causal_mask(t, p))  # (B, H, T, D)
    return merge_heads(heads) @ w["w_o"], (k, v)


def _block(x: Tensor, w: dict, past: Any, cfg: SmolLM2Config, f: Pieces) -> tuple:
    a, kv = f.attention_layer(f.rms_norm(x, w["attn_norm"], cfg.norm_eps), w, past, cfg, f)
    h = x + a  # (B, T, M)
    g = f.rms_norm(h, w["ffn_norm"], cfg.norm_eps)
    return h + f.swiglu(g, w["w_gate"], w["w_up"], w["w_down"]), kv


def _output_layer(x: Tensor, weights: dict, cfg: SmolLM2Config, f: Pieces) -> Tensor:
    return f.rms_norm(x, weights["norm"], cfg.norm_eps) @ weights["embed"].T  # tied


COURSE = Pieces(
    rms_norm=_rms_norm,
    rope=_rope,
    causal_mask=_causal_mask,
    attention=_attention,
    swiglu=_swiglu,
    attention_layer=_attention_layer,
    block=_block,
    output_layer=_output_layer,
)
"""The course's own pieces: decoder_forward(COURSE, ...) is SmolLM2's forward pass."""


# --- the known slips: each one's name, and what it computes --------------------------------------

SLIPS = {
    "LayerNorm (mean subtracted) instead of RMSNorm": "RMSNorm divides x by sqrt(mean(x^2) + "
    "eps) and subtracts no mean",
    "eps outside the root": "x / sqrt(mean(x^2) + eps): eps goes under the square root",
    "the norm over the wrong axis": "take the mean of x^2 over the features, the last dim "
    "(mean(-1, keepdim=True))",
    "the norm's weight forgotten": "multiply by the learned weight (M,) at the end",
    "gate and up swapped (SiLU on the wrong branch)": "SiLU goes on the gate branch: "
    "silu(x @ w_gate) * (x @ w_up)",
    "SiLU after the product": "only the gate is passed through SiLU, before the product",
    "ReLU instead of SiLU": "SwiGLU's gate is silu(z) = z * sigmoid(z), not relu",
    "GELU instead of SiLU": "SwiGLU's gate is silu(z) = z * sigmoid(z), not gelu",
    "sigmoid instead of SiLU": "silu(z) = z * sigmoid(z): the z is missing",
    "no SiLU at all": "the gate branch goes through silu before the product",
    "the other RoPE layout (halves)": "this file's w_q and w_k pair features (x_2i, x_2i+1), "
    "the interleaved layout; (x_i, x_(i + D/2)) is the layout of HF transformers",
    "RoPE turned the wrong way": "(a, b) -> (a cos - b sin, b cos + a sin)",
    "RoPE frequencies with i instead of 2i": "theta_i = base^(-2i / D)",
    "RoPE applied to v": "only q and k are rotated; the values keep their content",
    "positions restarting at 0 after the cache": "the new tokens sit at positions past .. "
    "past + T - 1, after the cached ones",
    "kv heads tiled instead of repeated in place": "query head h reads kv head h // (H / Hkv): "
    "repeat_interleave on the head dim, not repeat",
    "scale 1/sqrt(d_model) instead of 1/sqrt(d_head)": "each head's scores are divided by "
    "sqrt(D), its own width, not by sqrt(M)",
    "scores not scaled": "divide q @ k^T by sqrt(D)",
    "scores divided by d_head, not its root": "divide by sqrt(D)",
    "the causal mask off by one (the diagonal excluded)": "query i may see key i itself: j <= i",
    "the causal mask off by one (one future key)": "query i sees keys j <= i, none after it",
    "the causal mask inverted": "True means 'may attend'",
    "the mask ignores the cache": "query i of this call sits at position past + i: "
    "causal_mask(t, past) is (T, past + T) with j <= past + i",
    "the mask not applied": "scores of keys the mask forbids become -inf before the softmax",
    "heads merged without transpose(1, 2)": "(B, H, T, D) -> transpose(1, 2) -> (B, T, H, D) "
    "-> reshape(B, T, H * D)",
    "w_o forgotten": "the merged heads are projected: merged @ w_o",
    "the residual forgotten": "each half of the block adds its result to its input: x + f(x)",
    "the final norm forgotten": "logits = rms_norm(x, norm) @ embed.T",
    "the output layer not tied": "the logits are rms_norm(x) @ embed.T, the embedding matrix "
    "itself; no new or random layer",
}


def rms_norm_slips(x: Tensor, weight: Tensor, eps: float) -> list[tuple[str, Tensor]]:
    """What each RMSNorm slip gives for (x, weight, eps)."""
    ms = x.pow(2).mean(-1, keepdim=True)
    centred = x - x.mean(-1, keepdim=True)
    slips = [
        (
            "LayerNorm (mean subtracted) instead of RMSNorm",
            centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + eps) * weight,
        ),
        ("eps outside the root", x / (torch.sqrt(ms) + eps) * weight),
        ("the norm's weight forgotten", x / torch.sqrt(ms + eps)),
    ]
    for dims in ([0], [-2], list(range(x.dim()))):
        if x.dim() > 1 and (dims != [0] or x.dim() > 2):
            ms_wrong = x.pow(2).mean(dims, keepdim=True)
            slips.append(("the norm over the wrong axis", x / torch.sqrt(ms_wrong + eps) * weight))
    return slips


def swiglu_slips(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> list:
    """What each SwiGLU slip gives."""
    g, u = x @ w_gate, x @ w_up  # (..., F)
    return [
        ("gate and up swapped (SiLU on the wrong branch)", (g * F.silu(u)) @ w_down),
        ("SiLU after the product", F.silu(g * u) @ w_down),
        ("ReLU instead of SiLU", (F.relu(g) * u) @ w_down),
        ("GELU instead of SiLU", (F.gelu(g) * u) @ w_down),
        ("GELU instead of SiLU", (F.gelu(g, approximate="tanh") * u) @ w_down),
        ("sigmoid instead of SiLU", (torch.sigmoid(g) * u) @ w_down),
        ("no SiLU at all", (g * u) @ w_down),
    ]


def rope_slips(x: Tensor, positions: Tensor, base: float) -> list[tuple[str, Tensor]]:
    """What each RoPE slip gives for x (..., T, D) at `positions`."""
    d = x.shape[-1]
    theta = base ** (-torch.arange(d // 2, dtype=torch.float64) / d)  # i, not 2i
    angles = positions.double()[:, None] * theta  # (T, D/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    wrong_theta = torch.stack([a * cos - b * sin, b * cos + a * sin], -1).flatten(-2)
    return [
        ("the other RoPE layout (halves)", apply_rope(x, positions, base=base, layout="half")),
        ("RoPE turned the wrong way", _rope(x, -positions, base)),
        ("RoPE frequencies with i instead of 2i", wrong_theta),
        ("positions restarting at 0 after the cache", _rope(x, positions - positions[0], base)),
    ]


def mask_slips(t: int, past: int) -> list[tuple[str, Tensor]]:
    """What each causal-mask slip gives for t new tokens after `past` cached ones."""
    want = _causal_mask(t, past)
    slips = [
        (
            "the causal mask off by one (the diagonal excluded)",
            _core_causal_mask(t, past + t, offset=past - 1),
        ),
        (
            "the causal mask off by one (one future key)",
            _core_causal_mask(t, past + t, offset=past + 1),
        ),
        ("the causal mask inverted", ~want),
    ]
    if past:
        slips.append(("the mask ignores the cache", _core_causal_mask(t, past + t)))
    return slips


def attention_slips(q: Tensor, k: Tensor, v: Tensor, mask: Tensor) -> list:
    """What each attention slip gives: (name, (output, weights))."""
    n_rep = q.shape[1] // k.shape[1]
    d = q.shape[-1]
    kt, vt = k.repeat(1, n_rep, 1, 1), v.repeat(1, n_rep, 1, 1)  # tiled: 0, 1, 2, 0, 1, 2, ...

    def run(k: Tensor, v: Tensor, mask: Tensor | None, scale: float | None = None) -> tuple:
        r = scaled_dot_product_attention(q, k, v, mask, scale=scale, check_finite=False)
        return r.output, r.weights

    return [
        ("kv heads tiled instead of repeated in place", run(kt, vt, mask)),
        (
            "scale 1/sqrt(d_model) instead of 1/sqrt(d_head)",
            run(k, v, mask, 1 / math.sqrt(q.shape[1] * d)),
        ),
        ("scores not scaled", run(k, v, mask, 1.0)),
        ("scores divided by d_head, not its root", run(k, v, mask, 1 / d)),
        ("the mask not applied", run(k, v, None)),
    ]


# --- recording a run of the learner's pieces ------------------------------------------------------


@dataclass
class _Call:
    piece: str
    layer: int  # block index; -1 before the blocks, n_layers for the output layer
    args: tuple
    result: Any


class PieceError(Exception):
    """A piece raised while the debugger ran it; the message names the piece and the layer."""


class _Recorder:
    def __init__(self, f: Pieces, n_layers: int) -> None:
        self.calls: list[_Call] = []
        self.layer = -1
        self.n_layers = n_layers
        self.plain = f  # the pieces unrecorded: what the course's code calls when it re-runs one
        wrapped = {
            field.name: self._wrap(field.name, getattr(f, field.name))
            for field in dataclasses.fields(Pieces)
        }
        self.pieces = Pieces(**wrapped)

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any) -> Any:
            if name == "block":
                self.layer += 1
            elif name == "output_layer":
                self.layer = self.n_layers
            layer = self.layer
            try:
                result = fn(*args)
            except PieceError:
                raise
            except Exception as exc:  # noqa: BLE001 - reported with where it happened
                where = "the output layer" if layer >= self.n_layers else f"layer {layer}"
                whose = (
                    f"the course's {name} raised, on what your pieces gave it,"
                    if _is_course(name, fn)
                    else f"your {name} raised"
                )
                raise PieceError(f"{where}: {whose} {type(exc).__name__}: {exc}") from exc
            if name in PAIRS and _pair(result) is None:
                where = "the output layer" if layer >= self.n_layers else f"layer {layer}"
                raise PieceError(
                    f"{where}: your {name} returned {type(result).__name__}; expected a pair "
                    f"{PAIRS[name]}"
                )
            self.calls.append(_Call(name, layer, args, result))
            return result

        wrapped.__name__ = getattr(fn, "__name__", name)
        return wrapped

    def of(self, layer: int, piece: str) -> list[_Call]:
        return [c for c in self.calls if c.layer == layer and c.piece == piece]


def _is_course(name: str, fn: Callable[..., Any]) -> bool:
    """fn is the course's piece: COURSE's, or the reference solution use_pieces puts in."""
    module = getattr(fn, "__module__", "")
    return fn is getattr(COURSE, name) or module == "attention.exercises.solutions.lesson16"


def _steps(rec: _Recorder, i: int, cfg: SmolLM2Config) -> dict[str, Any]:
    """The value at each step of block i in a recorded run of some pieces (the learner's, or
    COURSE for the course's); steps the pieces never computed are left out."""
    steps: dict[str, Any] = {}
    block = rec.of(i, "block")
    layer = rec.of(i, "attention_layer")
    norms, ropes = rec.of(i, "rms_norm"), rec.of(i, "rope")
    att, ffn = rec.of(i, "attention"), rec.of(i, "swiglu")
    if block:
        steps["resid_pre"] = block[0].args[0]
    if layer:
        steps["attn_norm"] = layer[0].args[0]
    q_calls = [c for c in ropes if _heads(c.args[0]) == cfg.n_heads]
    k_calls = [c for c in ropes if _heads(c.args[0]) == cfg.n_kv_heads]
    if q_calls:
        steps["q_raw"] = q_calls[0].args[0]
    if k_calls:
        steps["k_raw"] = k_calls[0].args[0]
    masks = rec.of(i, "causal_mask")
    if masks:
        steps["mask"] = masks[0].result
    if att:
        q, k, v, mask = att[0].args
        steps |= {"q": q, "k": k, "v": v, "mask": mask}
        out = _pair(att[0].result)
        if out is not None:
            steps["weights"], steps["heads"] = out[1], out[0]
    if layer and _pair(layer[0].result) is not None:
        steps["attn_out"] = layer[0].result[0]
    if len(norms) > 1:
        steps["resid_mid"] = norms[1].args[0]
    if ffn:
        steps["ffn_norm"], steps["ffn"] = ffn[0].args[0], ffn[0].result
    if block and _pair(block[0].result) is not None:
        steps["resid_post"] = block[0].result[0]
    return steps


def _heads(x: Any) -> int | None:
    return int(x.shape[1]) if isinstance(x, Tensor) and x.dim() == 4 else None


def _pair(result: Any) -> tuple | None:
    return tuple(result) if isinstance(result, (tuple, list)) and len(result) == 2 else None


# --- the report --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gap:
    """The first step where the learner's value really differs from the course's.

    For a piece that differs on its own inputs (`piece`), the sizes compare its result with
    the course's piece on those same inputs; otherwise they compare the step's value with the
    course model's: max |got - want| > tol * max(1, max |want|).
    """

    run: str  # "whole text" or "with the cache"
    layer: int | None  # None for the logits
    step: str  # one of STEPS, or "logits"
    max_diff: float  # the largest |got - want| (inf for another shape; mask: entries differing)
    scale: float  # the largest |want|
    where: tuple[int, ...]  # index of the largest difference
    detail: str  # e.g. "expected shape (1, 9, 5, 64), got (1, 9, 64, 5)"
    piece: str | None = None  # the piece whose own result differs, None if none does


@dataclass(frozen=True)
class Comparison:
    """What compare found: the first real difference (None: the two agree everywhere), the
    slips that account for it, and the usual slips of the piece it is in."""

    first: Gap | None
    matches: tuple[str, ...]
    suspects: tuple[str, ...]
    logits_max_diff: float | None  # whole text; None if the learner's model did not finish
    error: str | None  # a piece that raised, and where
    tol: float

    @property
    def ok(self) -> bool:
        return self.first is None and self.error is None

    def __str__(self) -> str:
        # every line through translate(): English as it is, or the chosen language's
        lines = []
        if self.logits_max_diff is not None:
            lines.append(
                translate(f"logits: largest difference {self.logits_max_diff:.2e} (whole text)")
            )
        if self.error is not None:
            lines.append(translate(f"stopped: {self.error}"))
        if self.first is None and self.error is None:
            lines.append(
                translate(
                    f"every step of every layer agrees within {self.tol:g}, both runs (whole "
                    "text, and with the cache)"
                )
            )
            return "\n".join(lines)
        g = self.first
        if g is not None:
            where = "the logits" if g.layer is None else f"layer {g.layer}, step {g.step!r}"
            size = (
                f"{int(g.max_diff)} entries differ"
                if g.step == "mask" and math.isfinite(g.max_diff)
                else f"largest difference {g.max_diff:.3g} at {g.where} "
                f"(values up to {g.scale:.3g})"
            )
            lines.append(translate(f"first difference: {where} ({g.run}): {size}"))
            if g.detail:
                lines.append("  " + translate(g.detail))
            if g.piece is not None:
                lines.append(
                    "  "
                    + translate(
                        f"in your {g.piece}: given the same inputs, the course's {g.piece} "
                        "returns something else (every piece before it agrees)"
                    )
                )
            else:
                lines.append(
                    "  "
                    + translate(
                        "each of your pieces, called through f, agrees with the course's on its "
                        "own inputs: float rounding grown over the layers, or a piece of yours "
                        "that calls another directly (my_rope(...) instead of f.rope(...)), which "
                        "the debugger cannot watch"
                    )
                )
        for name in self.matches:
            lines.append("  " + translate(f"matches: {name}: {SLIPS[name]}"))
        if not self.matches and self.suspects:
            lines.append(
                "  "
                + translate(f"usual slips in {g.piece}:")
                + " "
                + translate("; ").join(translate(s) for s in self.suspects)
            )
        return "\n".join(lines)


SUSPECTS = {  # by piece: shown when no known slip accounts for the difference
    "rms_norm": (
        "LayerNorm (mean subtracted) instead of RMSNorm",
        "eps outside the root",
        "the norm over the wrong axis",
        "the norm's weight forgotten",
    ),
    "rope": (
        "the other RoPE layout (halves)",
        "RoPE turned the wrong way",
        "RoPE frequencies with i instead of 2i",
    ),
    "causal_mask": (
        "the causal mask off by one (the diagonal excluded)",
        "the causal mask off by one (one future key)",
        "the mask ignores the cache",
    ),
    "attention": (
        "kv heads tiled instead of repeated in place",
        "scale 1/sqrt(d_model) instead of 1/sqrt(d_head)",
        "the mask not applied",
    ),
    "swiglu": (
        "gate and up swapped (SiLU on the wrong branch)",
        "ReLU instead of SiLU",
        "GELU instead of SiLU",
    ),
    "attention_layer": (
        "positions restarting at 0 after the cache",
        "RoPE applied to v",
        "heads merged without transpose(1, 2)",
        "w_o forgotten",
    ),
    "block": (
        "the residual forgotten",
        "each half's norm reads its input: x + attention(rms_norm(x)), not rms_norm after the "
        "residual; the second norm uses w['ffn_norm']",
    ),
    "output_layer": ("the final norm forgotten", "the output layer not tied"),
}
LEAVES = ("rms_norm", "rope", "causal_mask", "attention", "swiglu")  # call no other piece
COMPOSITE_STEP = {"attention_layer": "attn_out", "block": "resid_post", "output_layer": "logits"}


def _gap(got: Any, want: Tensor, tol: float) -> tuple[float, float, tuple[int, ...], str] | None:
    """(max diff, scale, where, detail) if got differs from want beyond tol, else None."""
    if not isinstance(got, Tensor):
        return math.inf, 0.0, (), f"expected a tensor, got {type(got).__name__}"
    if tuple(got.shape) != tuple(want.shape):
        detail = f"expected shape {tuple(want.shape)}, got {tuple(got.shape)}"
        return math.inf, 0.0, (), detail
    if want.dtype == torch.bool or got.dtype == torch.bool:
        wrong = got.bool() != want if got.dtype == torch.bool else torch.ones_like(want)
        n = int(wrong.sum())
        if not n:
            return None
        detail = "" if got.dtype == torch.bool else f"expected a bool mask, got {got.dtype}"
        return float(n), 1.0, tuple(int(j) for j in wrong.nonzero()[0]), detail
    diff = (got.detach().double() - want.double()).abs()
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
    scale = float(want.abs().max()) if want.numel() else 0.0
    largest = float(diff.max()) if diff.numel() else 0.0
    if largest <= tol * max(1.0, scale):
        return None
    where = tuple(int(j) for j in torch.unravel_index(diff.argmax(), diff.shape))
    return largest, scale, where, ""


def _max_diff(a: Tensor, b: Tensor) -> float:
    d = (a.detach().double() - b.detach().double()).abs()
    return float(torch.nan_to_num(d, nan=math.inf).max()) if d.numel() else 0.0


def _explains(got: Any, wrong: Any, want: Any, tol: float = 1e-3) -> bool:
    """A slip's result `wrong` accounts for got: got is within tol of it and a hundred times
    closer to it than to the right result `want` (so a slip that changes little, like eps
    outside the root on large vectors, is never named where got is simply right)."""
    if not isinstance(got, Tensor) or not isinstance(wrong, Tensor) or got.shape != wrong.shape:
        return False
    if got.dtype == torch.bool or wrong.dtype == torch.bool:
        return got.dtype == wrong.dtype and bool(torch.equal(got, wrong))
    scale = max(1.0, float(wrong.abs().max())) if wrong.numel() else 1.0
    d_wrong = _max_diff(got, wrong)
    if not isinstance(want, Tensor) or want.shape != got.shape or want.dtype == torch.bool:
        return d_wrong <= tol * scale
    return d_wrong <= min(tol * scale, 0.01 * _max_diff(got, want))


def _parts(result: Any, piece: str) -> list[tuple[str, Any]]:
    """The tensors a piece returns, in the order they are compared."""
    pair = _pair(result) if piece in PAIRS else None
    if piece == "attention" and pair is not None:
        return [("weights", pair[1]), ("heads", pair[0])]
    if pair is not None:
        kv = _pair(pair[1]) or (pair[1], None)
        return [("output", pair[0]), ("k", kv[0]), ("v", kv[1])]
    return [("output", result)]


def _leaf_slips(call: _Call) -> list[tuple[str, Any]]:
    """(name, what the slip returns) for a leaf piece's call, on the call's own inputs."""
    if call.piece == "rms_norm":
        return rms_norm_slips(*call.args)
    if call.piece == "rope":
        return rope_slips(*call.args)
    if call.piece == "causal_mask":
        return mask_slips(*call.args)
    if call.piece == "swiglu":
        return swiglu_slips(*call.args)
    return [(name, (out, w)) for name, (out, w) in attention_slips(*call.args)]


def _local_gap(call: _Call, plain: Pieces, tol: float) -> tuple[str, tuple, list[str]] | None:
    """Does this call's result really differ from the course's piece on the same inputs?

    A leaf is compared with the course's leaf; the layer, the block and the output layer with
    the course's code calling your other pieces (so only their own code is judged).
    Returns (the part that differs, its gap, the slips that account for it) or None: None
    when the difference is within tol of the largest value and no known slip accounts for it.
    """
    fn = getattr(COURSE, call.piece)
    args = call.args if call.piece in LEAVES else (*call.args[:-1], plain)
    try:
        want = fn(*args)
    except Exception:  # noqa: BLE001 - odd inputs: the piece that made them is judged instead
        return None
    got_parts, want_parts = _parts(call.result, call.piece), _parts(want, call.piece)
    slips = []
    if call.piece in LEAVES:
        try:  # naming the slip is best effort: odd inputs may not fit a variant
            slips = [(n, _parts(w, call.piece)) for n, w in _leaf_slips(call)]
        except Exception:  # noqa: BLE001
            slips = []
    found = list(  # the slips whose every part accounts for yours
        dict.fromkeys(
            n
            for n, w in slips
            if all(
                _explains(g, x, r)
                for (_, g), (_, x), (_, r) in zip(got_parts, w, want_parts, strict=False)
            )
        )
    )
    for (part, got), (_, right) in zip(got_parts, want_parts, strict=False):
        if right is None:
            continue
        gap = _gap(got, right, tol)
        comparable = (
            isinstance(got, Tensor) and isinstance(right, Tensor) and got.shape == right.shape
        )
        if gap is None and found and comparable and _max_diff(got, right) > 0:
            diff = (got.detach().double() - right.double()).abs()  # small, but a slip's
            where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
            gap = (_max_diff(got, right), float(right.abs().max()), where, "")
        if gap is not None:
            return part, gap, found
    return None


def _step_of(call: _Call, rec: _Recorder, part: str, cfg: SmolLM2Config) -> tuple[int | None, str]:
    """The layer and step a leaf's call computes."""
    if call.layer >= rec.n_layers:
        return None, "logits"
    if call.piece == "rms_norm":
        norms = rec.of(call.layer, "rms_norm")
        first = next(j for j, c in enumerate(norms) if c is call)
        return call.layer, "attn_norm" if first == 0 else "ffn_norm"
    if call.piece == "rope":
        return call.layer, "q" if _heads(call.args[0]) == cfg.n_heads else "k"
    if call.piece == "causal_mask":
        return call.layer, "mask"
    if call.piece == "attention":
        return call.layer, part
    return call.layer, "ffn"


def _matches(
    rec: _Recorder, cfg: SmolLM2Config, i: int, step: str, steps: dict, want: dict, past: int
) -> list[str]:
    """The known slips of a layer's or a block's own code that account for this step."""
    found: list[str] = []
    got = steps.get(step)

    def test(candidates: list, value: Any, right: Any) -> None:
        for name, wrong in candidates:
            if name not in found and _explains(value, wrong, right):
                found.append(name)

    ropes = rec.of(i, "rope")
    if step in ("q", "k"):
        positions = ropes[0].args[1] if ropes else None
        if isinstance(positions, Tensor) and past and int(positions[0]) == 0:
            found.append("positions restarting at 0 after the cache")
    elif step == "v" and isinstance(got, Tensor) and got.shape == want["v"].shape:
        t = want["k_raw"].shape[2]
        positions = torch.arange(past, past + t)
        new = want["v"][:, :, -t:]  # the course's values of this call's tokens
        test([("RoPE applied to v", _rope(new, positions, cfg.rope_base))], got[:, :, -t:], new)
        if "RoPE applied to v" not in found and len(ropes) > 2:
            found.append("RoPE applied to v")
    elif step == "attn_out" and "heads" in steps:
        heads = steps["heads"]
        b, h, t, d = heads.shape
        w_o = rec.of(i, "attention_layer")[0].args[1]["w_o"]
        test(
            [
                ("heads merged without transpose(1, 2)", heads.reshape(b, t, h * d) @ w_o),
                ("w_o forgotten", merge_heads(heads)),
            ],
            got,
            want[step],
        )
    elif step == "resid_mid" and "attn_out" in steps:
        test([("the residual forgotten", steps["attn_out"])], got, want[step])
    elif step == "resid_post" and "ffn" in steps:
        test([("the residual forgotten", steps["ffn"])], got, want[step])
    return found


def _logit_slips(call: _Call, plain: Pieces) -> list[str]:
    x, weights, cfg, _ = call.args
    if _explains(call.result, x @ weights["embed"].T, _output_layer(x, weights, cfg, COURSE)):
        return ["the final norm forgotten"]
    other = dict(weights, embed=weights["embed"].roll(1, dims=0))  # another embedding
    again = plain.output_layer(x, other, cfg, plain)
    if isinstance(again, Tensor) and _explains(again, call.result, None, tol=1e-6):
        return ["the output layer not tied"]  # the logits do not depend on the embedding
    return []


def _in_layer(
    rec: _Recorder, course: _Recorder, cfg: SmolLM2Config, i: int, past: int, tol: float
) -> tuple[str, tuple, list[str]] | None:
    """The first step of block i whose value differs from the course's, and its slips: both
    read by one recorder, `course` being the same run of COURSE."""
    steps, want = _steps(rec, i, cfg), _steps(course, i, cfg)
    for step in STEPS:
        if step in steps and step in want:
            gap = _gap(steps[step], want[step], tol)
            if gap is not None:
                try:
                    found = _matches(rec, cfg, i, step, steps, want, past)
                except Exception:  # noqa: BLE001
                    found = []
                return step, gap, found
    return None


def _first_real(
    rec: _Recorder,
    course: Callable[[], _Recorder],
    cfg: SmolLM2Config,
    out: Any,
    logits: Any,
    past: int,
    run: str,
    tol: float,
) -> tuple[Gap, list[str], tuple[str, ...]] | None:
    """The earliest call of a piece whose own result really differs, as (gap, slips, suspects);
    failing that, the first step whose value differs from the course's (course(): the same
    run of COURSE, recorded), or the logits from the course model's (out)."""
    for call in rec.calls:  # in the order they finished: a piece's inner calls come first
        if _is_course(call.piece, getattr(rec.plain, call.piece)):
            continue  # the course's own piece: it is the reference
        local = _local_gap(call, rec.plain, tol)
        if local is None:
            continue
        part, gap, found = local
        suspects = SUSPECTS[call.piece]
        if call.piece in LEAVES:
            layer, step = _step_of(call, rec, part, cfg)
            return Gap(run, layer, step, *gap, piece=call.piece), found, suspects
        if call.piece == "output_layer":
            try:
                found = _logit_slips(call, rec.plain)
            except Exception:  # noqa: BLE001
                found = []
            return Gap(run, None, "logits", *gap, piece=call.piece), found, suspects
        inside = _in_layer(rec, course(), cfg, call.layer, past, tol)
        if part in ("k", "v"):  # the cache it returns: only the next call would read it
            step, detail = (
                part,
                (
                    f"in the ({part} of the) cache your {call.piece} returns for the next call: "
                    "the cached positions first, then the new ones"
                ),
            )
            gap = (*gap[:3], gap[3] or detail)
        elif inside is not None:
            step, gap, found = inside
        else:
            step = COMPOSITE_STEP[call.piece]
        return Gap(run, call.layer, step, *gap, piece=call.piece), found, suspects
    if logits is not None and _gap(logits, out.logits, tol) is None:
        return None  # no piece differs and the logits agree
    for i in range(cfg.n_layers):  # no piece differs: rounding, if anything
        inside = _in_layer(rec, course(), cfg, i, past, tol)
        if inside is not None:
            step, gap, _ = inside
            return Gap(run, i, step, *gap), [], ()
    gap = _gap(logits, out.logits, tol) if logits is not None else None
    if gap is not None:
        return Gap(run, None, "logits", *gap), [], ()
    return None


def _record(
    f: Pieces, weights: dict[str, Tensor], cfg: SmolLM2Config, ids: Tensor, cut: int | None
) -> tuple[_Recorder, Tensor | None, str | None]:
    """f's pieces run on ids, recorded: the whole text (cut None), or ids[:, :cut] to fill the
    cache (not recorded: the first run compared it) and the rest with it. Returns (the
    recorder, the logits, None), or (the recorder so far, None, the error) if a piece raised."""
    rec = _Recorder(f, cfg.n_layers)
    try:
        if cut is None:
            logits, _ = decoder_forward(rec.pieces, weights, cfg, ids)
        else:
            warm = _Recorder(f, cfg.n_layers)
            _, cache = decoder_forward(warm.pieces, weights, cfg, ids[:, :cut])
            logits, _ = decoder_forward(rec.pieces, weights, cfg, ids[:, cut:], cache)
    except PieceError as err:
        return rec, None, str(err)
    return rec, logits, None


def compare(
    f: Pieces, model: SmolLM2, ids: Tensor, *, tol: float = 1e-3, split: int | None = None
) -> Comparison:
    """Run f's pieces and the course's model on ids (B, T); report the first real difference.

    Two runs: the whole text at once; then, if that agrees, ids[:, :split] followed by the rest
    with the cache (split defaults to T - 2), which checks positions and masks after a cache.
    Each call of each piece is compared with the course's piece on the same inputs, in the
    order the forward pass makes them; the first whose result really differs is reported:
    by more than tol * max(1, its largest value), or by less when a known slip accounts for the
    difference. A difference that only grows out of an earlier one is never reported, nor is
    float rounding. If no piece differs, the steps are compared with COURSE's (recorded by the
    same recorder) and the logits with the course model's.

    Raises:
        TypeError: f is not a Pieces.
        ValueError: ids shorter than 3 tokens, or split outside [1, T).
    """
    if not isinstance(f, Pieces):
        raise TypeError(
            f"f: expected a Pieces (the functions of your model), got {type(f).__name__}"
        )
    t = ids.shape[-1]
    if ids.dim() != 2 or t < 3:
        raise ValueError(f"ids: expected (B, T) with T >= 3, got shape {tuple(ids.shape)}")
    split = t - 2 if split is None else split
    if not 1 <= split < t:
        raise ValueError(f"split: expected 1 <= split < T = {t}, got {split}")
    cfg, weights = model.cfg, plain_weights(model)
    logits_diff = None
    for run, cut in (("whole text", None), ("with the cache", split)):
        with torch.no_grad():
            if cut is None:
                out, past = model(ids, need_weights=False), 0
            else:
                first = model(ids[:, :cut], use_cache=True, need_weights=False)
                out, past = model(ids[:, cut:], cache=first.cache), cut
        rec, logits, error = _record(f, weights, cfg, ids, cut)  # the run compared with `out`
        course = functools.cache(lambda cut=cut: _record(COURSE, weights, cfg, ids, cut)[0])
        with torch.no_grad():
            try:
                found = _first_real(rec, course, cfg, out, logits, past, run, tol)
            except Exception:  # noqa: BLE001 - a piece that fails on a re-run: say where it stopped
                found = None
        if error is not None and found is not None and found[0].layer is None:
            found = None  # the logits are missing because a piece raised: that is reported
        if cut is None and isinstance(logits, Tensor) and logits.shape == out.logits.shape:
            logits_diff = float((logits - out.logits).abs().max())
        if found is not None:
            gap, matches, suspects = found
            return Comparison(gap, tuple(matches), suspects, logits_diff, error, tol)
        if error is not None:
            return Comparison(None, (), (), logits_diff, error, tol)
    return Comparison(None, (), (), logits_diff, None, tol)
