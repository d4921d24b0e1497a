"""MaskFunctionExplorer: a mask or score function the learner types, evaluated safely on a grid.

The learner writes a small function in FlexAttention's style (torch.nn.attention.flex_attention):

    def mask(b, h, q_idx, kv_idx):                 # True = may attend
        return q_idx >= kv_idx

    def score(score, b, h, q_idx, kv_idx):         # the new score (-inf masks)
        return score - slope[h] * abs(q_idx - kv_idx)

The sandbox (attention/sandbox/whitelist.py) checks the text against a whitelist, compiles it
and runs it on a T x T grid with tensor arguments that broadcast, as FlexAttention's mask_mod
and score_mod see them; every refusal and failure is a MaskFunctionError naming what and where.
`explore_mask_function` then shows the mask, the softmax weights of fixed random scores through
it, and which of the course's masks (attention.masks) or score biases (ALiBi, tanh softcapping)
it equals, or the first cell where it differs from the nearest one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from ..functional import masked_softmax
from ..masks import causal_mask, document_mask, prefix_lm_mask, sliding_window_mask
from ..positional import alibi_bias, alibi_slopes
from ..sandbox.whitelist import (
    N_HEADS,
    CompiledFunction,
    Kind,
    MaskFunctionError,
    compile_mask_function,
    document_ids,
    run_mask_function,
)
from ._util import SEEDS, bounded, check_fields

__all__ = [
    "MASK_FUNCTION_MAX_T",
    "MaskFunctionError",
    "MaskFunctionExploration",
    "MaskFunctionParams",
    "compile_mask_function",
    "explore_mask_function",
]

MASK_FUNCTION_MAX_T = 32
SCORE_SCALE = 2.0  # spread of the random scores, so softcapping and ALiBi show
SOFTCAPS = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 50.0)  # caps the readout recognises

PRESETS: dict[str, str] = {
    "causal": "def mask(b, h, q_idx, kv_idx):\n    return q_idx >= kv_idx\n",
    "sliding window (4)": (
        "def mask(b, h, q_idx, kv_idx):\n"
        "    causal = q_idx >= kv_idx\n"
        "    return causal & (q_idx - kv_idx < 4)\n"
    ),
    "prefix-LM (4)": (
        "def mask(b, h, q_idx, kv_idx):\n"
        "    # the first 4 tokens see each other both ways\n"
        "    return (kv_idx < 4) | (q_idx >= kv_idx)\n"
    ),
    "document": (
        "def mask(b, h, q_idx, kv_idx):\n"
        "    same_doc = doc[q_idx] == doc[kv_idx]\n"
        "    return same_doc & (q_idx >= kv_idx)\n"
    ),
    "dilated (every 2nd)": (
        "def mask(b, h, q_idx, kv_idx):\n"
        "    causal = q_idx >= kv_idx\n"
        "    return causal & ((q_idx - kv_idx) % 2 == 0)\n"
    ),
    "chunked (4)": (
        "def mask(b, h, q_idx, kv_idx):\n"
        "    same_chunk = q_idx // 4 == kv_idx // 4\n"
        "    return same_chunk & (q_idx >= kv_idx)\n"
    ),
    "ALiBi (score)": (
        "def score(score, b, h, q_idx, kv_idx):\n"
        "    return score - slope[h] * abs(q_idx - kv_idx)\n"
    ),
    "softcap 2 (score)": (
        "def score(score, b, h, q_idx, kv_idx):\n    return 2.0 * torch.tanh(score / 2.0)\n"
    ),
}


# --- what it is compared with ----------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """The nearest known mask (or score function) and where the learner's differs from it."""

    name: str  # e.g. "causal_mask(12)", "ALiBi head 0 (slope 0.5)"
    cells: int  # cells that differ (0: equal)
    total: int  # cells compared
    first: tuple[int, int] | None  # (query, key) of the first difference, row by row
    yours: float | bool | None  # the learner's value there
    theirs: float | bool | None  # the reference's value there

    @property
    def equal(self) -> bool:
        return self.cells == 0


@lru_cache(maxsize=MASK_FUNCTION_MAX_T + 1)
def known_masks(seq_len: int) -> tuple[tuple[str, Tensor], ...]:
    """The course's masks at length T, simplest first: (how to build it, (T, T) bool)."""
    t = seq_len
    doc = document_ids(t)
    out = [(f"every key, no mask ({t} x {t} True)", torch.ones(t, t, dtype=torch.bool))]
    out.append((f"causal_mask({t})", causal_mask(t)))
    out += [(f"sliding_window_mask({t}, {w})", sliding_window_mask(t, w)) for w in range(1, t)]
    out += [(f"prefix_lm_mask({t}, {p})", prefix_lm_mask(t, p)) for p in range(2, t)]
    out.append(("document_mask(doc)", document_mask(doc)))
    out.append(("document_mask(doc, causal=False)", document_mask(doc, causal=False)))
    out += [
        (f"sliding_window_mask({t}, {w}, sinks={s})", sliding_window_mask(t, w, sinks=s))
        for s in range(1, 5)
        for w in range(1, t - s)
    ]
    return tuple(out)


def known_scores(scores: Tensor) -> list[tuple[str, Tensor]]:
    """Known score functions applied to scores (T, T): unchanged, ALiBi per head, softcaps."""
    t = scores.shape[-1]
    out = [("score unchanged", scores)]
    bias = alibi_bias(N_HEADS, t, t)  # (H, T, T)
    slopes = alibi_slopes(N_HEADS)
    out += [
        (f"ALiBi: score + alibi_bias({N_HEADS}, {t}, {t})[{h}] (slope {slopes[h].item():g})",
         scores + bias[h])
        for h in range(N_HEADS)
    ]  # fmt: skip
    out += [(f"tanh softcap {c:g}: {c:g} * tanh(score / {c:g})", c * torch.tanh(scores / c))
            for c in SOFTCAPS]  # fmt: skip
    return out


def _nearest(
    yours: Tensor, refs: list[tuple[str, Tensor]] | tuple[tuple[str, Tensor], ...], where: Tensor
) -> Comparison:
    """Compare yours (T, T) with each reference on the cells `where`; the first equal, or the
    one with the fewest differing cells (the first of them on a tie)."""
    stack = torch.stack([r for _, r in refs])  # (N, T, T)
    if yours.dtype == torch.bool:
        differ = stack != yours
    else:
        differ = ~torch.isclose(stack, yours, rtol=1e-5, atol=1e-5)
    differ &= where
    counts = differ.flatten(1).sum(-1)  # (N,)
    best = int(counts.argmin())  # argmin returns the first of equal minima
    name, ref = refs[best]
    n = int(counts[best])
    first = yours_v = ref_v = None
    if n:
        i, j = (int(x) for x in differ[best].nonzero()[0])
        first, yours_v, ref_v = (i, j), yours[i, j].item(), ref[i, j].item()
    return Comparison(name, n, int(where.sum()), first, yours_v, ref_v)


# --- the exploration ------------------------------------------------------------------------


@dataclass(frozen=True)
class MaskFunctionParams:
    """The learner's function (its source text), the grid size, the head h and the scores' seed."""

    source: str = PRESETS["causal"]
    seq_len: int = bounded(12, 2, MASK_FUNCTION_MAX_T)
    head: int = bounded(0, 0, N_HEADS - 1)
    seed: int = bounded(0, *SEEDS)

    def __post_init__(self) -> None:
        if not isinstance(self.source, str):
            raise TypeError(f"source: expected a str, got {type(self.source).__name__}")
        check_fields(self)


@dataclass(frozen=True)
class MaskFunctionExploration:
    """The learner's function on a T x T grid, the weights it gives and what it equals."""

    params: MaskFunctionParams
    function: CompiledFunction  # .fn is a mask_mod / score_mod flex_attention accepts
    kind: Kind
    doc: Tensor  # (T,) the document ids the function may read as doc[...]
    scores: Tensor  # (T, T) the fixed random scores, before the function
    new_scores: Tensor  # (T, T) after the score function (the scores, for a mask function)
    mask: Tensor  # (T, T) bool, True = may attend (a score function: where it is not -inf)
    bias: Tensor | None  # (T, T) new_scores - scores where allowed, 0 elsewhere; score only
    weights: Tensor  # (T, T) masked softmax of new_scores
    fully_masked: Tensor  # (T,) rows that may attend to nothing (weights 0, not NaN)
    mask_match: Comparison  # against the course's masks
    score_match: Comparison | None  # against the known score functions (score only)
    summary: tuple[str, ...]  # the readout's lines


def _said(c: Comparison, what: str) -> str:
    if c.equal:
        return f"{what} equals {c.name}"
    i, j = c.first  # type: ignore[misc]
    yours, theirs = c.yours, c.theirs
    if isinstance(yours, float):
        yours, theirs = f"{yours:.3g}", f"{theirs:.3g}"
    return (
        f"{what} equals none of the known ones; nearest: {c.name}, {c.cells} of {c.total} cells "
        f"differ, the first at query {i}, key {j} (yours {yours}, it {theirs})"
    )


def explore_mask_function(params: MaskFunctionParams) -> MaskFunctionExploration:
    """Compile and run the learner's function on the grid; weights; compare with known ones.

    Raises:
        MaskFunctionError: the function is refused or fails (the message says why and where).
    """
    t = params.seq_len
    compiled = compile_mask_function(params.source, t)
    g = torch.Generator().manual_seed(params.seed)
    scores = torch.randn(t, t, generator=g) * SCORE_SCALE  # (T, T)
    everywhere = torch.ones(t, t, dtype=torch.bool)
    if compiled.kind == "mask":
        mask = run_mask_function(compiled, t, params.head)
        new_scores, bias, score_match = scores, None, None
    else:
        new_scores = run_mask_function(compiled, t, params.head, scores)
        mask = ~torch.isneginf(new_scores)
        bias = torch.where(mask, new_scores - scores, torch.zeros(()))
        score_match = _nearest(new_scores, known_scores(scores), mask)
    fully_masked = ~mask.any(-1)
    mask_match = _nearest(mask, known_masks(t), everywhere)
    kind_word = "mask function" if compiled.kind == "mask" else "score function"
    signature = f"{compiled.name}({', '.join(compiled.args)})"
    lines = [f"T = {t}, head h = {params.head}: your {kind_word} {signature}"]
    if score_match is not None:
        lines.append(_said(score_match, "its scores (where not -inf)"))
    if compiled.kind == "mask" or not bool(mask.all()):
        lines.append(_said(mask_match, "its mask"))
    else:
        lines.append("its mask: every key (it returns no -inf)")
    n_empty = int(fully_masked.sum())
    if n_empty:
        lines.append(f"{n_empty} query row(s) may attend to nothing: weights 0, not NaN")
    return MaskFunctionExploration(
        params=params,
        function=compiled,
        kind=compiled.kind,
        doc=document_ids(t),
        scores=scores,
        new_scores=new_scores,
        mask=mask,
        bias=bias,
        weights=masked_softmax(new_scores, mask),
        fully_masked=fully_masked,
        mask_match=mask_match,
        score_match=score_match,
        summary=tuple(lines),
    )
