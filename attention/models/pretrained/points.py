"""The activations of one block, named once: hooks, each layer's result and lesson 16's debugger.

A point's name is the key of the layer's result (out.layers[i].q, out.layers[i]["attn_out"]),
the step the debugger reports (layer 0, step 'q'), and, with its layer, a hook point:
hook_name(3, "heads") == "blocks.3.heads". The attention's points are named as the core's
MultiHeadResult names its fields. In the order a block reaches them:

    resid_pre   (B, T, M)         the residual stream entering the block
    attn_norm   (B, T, M)         RMSNorm(resid_pre): what the attention reads (SmolLM2)
    q_raw       (B, H, T, D)      queries before RoPE (q itself in a model without RoPE)
    k_raw       (B, Hkv, T, D)    this call's keys before RoPE (no cached keys)
    q           (B, H, T, D)      queries as attended: after RoPE
    k           (B, Hkv, Tk, D)   keys after RoPE, the cached ones first; Hkv = H unless grouped
    v           (B, Hkv, Tk, D)   values, the cached ones first
    mask        (T, Tk) bool      True = may attend (the debugger's; the models take it whole)
    weights     (B, H, T, Tk)     each head's attention map (rows sum to 1); a replacement is
                                  what the values are averaged by
    heads       (B, H, T, D)      each head's output, before the heads are merged
    attn_out    (B, T, M)         the heads merged and projected (w_o)
    resid_mid   (B, T, M)         the residual stream between the two halves (MiniLM: normed)
    ffn_norm    (B, T, M)         RMSNorm(resid_mid): what the feed-forward reads (SmolLM2)
    ffn         (B, T, M)         the feed-forward's output
    resid_post  (B, T, M)         the residual stream leaving the block

A point a model emits (its `models`) can be read or replaced there by a hook. Adding an
activation: a row below, and `emit("name", x)` where a block computes it (or, for a field of
the core's MultiHeadResult, the row alone).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BOTH = ("smollm2", "minilm")


@dataclass(frozen=True)
class Point:
    name: str  # the key in a layer's result, the debugger's step and the hook's last part
    models: tuple[str, ...] = ()  # the models whose blocks emit it through a hook
    attention: bool = False  # a field of the core's MultiHeadResult, read from the attention
    default: bool = False  # kept in out.layers[i] unless other points are asked for


POINTS = (
    Point("resid_pre", BOTH),
    Point("attn_norm", ("smollm2",)),
    Point("q_raw", attention=True, default=True),
    Point("k_raw", attention=True, default=True),
    Point("q", attention=True, default=True),
    Point("k", attention=True, default=True),
    Point("v", attention=True, default=True),
    Point("mask"),
    Point("weights", BOTH, attention=True, default=True),
    Point("heads", BOTH, attention=True, default=True),
    Point("attn_out", BOTH),
    Point("resid_mid", BOTH),
    Point("ffn_norm", ("smollm2",)),
    Point("ffn", BOTH),
    Point("resid_post", BOTH),
)
NAMES = tuple(p.name for p in POINTS)  # every point, in the order a block reaches them
ATTENTION = tuple(p.name for p in POINTS if p.attention)  # read from the core's result
DEFAULT = tuple(p.name for p in POINTS if p.default)  # what out.layers[i] keeps by default
HOOKED = tuple(p.name for p in POINTS if p.models)  # the points some model emits to hooks
_NAME = re.compile(r"blocks\.(\d+)\.(.+)")


def hook_points(model: str) -> tuple[str, ...]:
    """The points a model's blocks emit through hooks ("smollm2" or "minilm"), in order."""
    return tuple(p.name for p in POINTS if model in p.models)


def block_key(layer: int, name: str) -> str:
    """The name of something of block `layer`: "blocks.{layer}.{name}" (hooks, weights)."""
    return f"blocks.{layer}.{name}"


def hook_name(layer: int, point: str) -> str:
    """The hook point of `point` in block `layer`: (3, "heads") -> "blocks.3.heads"."""
    if point not in HOOKED:
        raise ValueError(f"point: expected one of {list(HOOKED)}, got {point!r}")
    return block_key(layer, point)


def parse_hook_name(name: str) -> tuple[int, str]:
    """(layer, point) of a hook point: "blocks.3.heads" -> (3, "heads")."""
    match = _NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None or match[2] not in HOOKED:
        raise ValueError(
            f"hook name: expected 'blocks.<layer>.<point>' with point one of {list(HOOKED)}, "
            f"got {name!r}"
        )
    return int(match[1]), match[2]
