"""The maths behind lesson 18's explorers: patching one pair, rollout against raw attention.

    table = patching_table("agreement")             # SmolLM2 on the pairs of one kind, once
    explore_patching(PatchingParams(pair=0, layer=26, head=-1), table)
        one pair's logit differences and P(answer | answer or alternative) in the clean, the
        corrupted and the patched run (a layer's whole attention output, or one head)
    explore_rollout(RolloutParams(model="minilm", text=..., layer=5, query=9))
        row `query` of the raw attention at `layer` (heads averaged) and of the rollout
        through layers 0..layer

Every model run happens when the table is built or a text is first seen (cached per kernel);
moving a control afterwards only reads numbers, so it redraws at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from ..models import interventions as iv
from ..models.cache import pretrained_model
from ._util import check_choice, one_thread

__all__ = [
    "PatchingExploration",
    "PatchingParams",
    "RolloutExploration",
    "RolloutParams",
    "explore_patching",
    "explore_rollout",
]

KINDS = ("agreement", "name_copy")  # the kinds SmolLM2 solves (lesson 18, section 2)
ROLLOUT_MODELS = ("minilm", "smollm2")
MAX_ROLLOUT_CHARS = 400


@dataclass(frozen=True)
class PatchingTable:
    """Patching effects of one kind's pairs, computed once (iv.prepare_patching and patch_*)."""

    kind: str
    pairs: tuple[iv.MinimalPair, ...]
    clean_ld: Tensor  # (B,) logit differences
    corrupted_ld: Tensor  # (B,)
    layers: tuple[int, ...]  # the layers whose attention output was patched
    layer_effect: Tensor  # (len(layers), B)
    head_layers: tuple[int, ...]  # the layers whose heads were patched one at a time
    head_effect: Tensor  # (len(head_layers), H, B)

    @property
    def n_heads(self) -> int:
        return self.head_effect.shape[1]


def make_patching_table(
    runs: iv.PatchRuns,
    kind: str,
    layers: tuple[int, ...],
    layer_effect: Tensor,
    head_layers: tuple[int, ...],
    head_effect: Tensor,
) -> PatchingTable:
    """A table from effects already computed (lesson 18 computes them in its own cells)."""
    b = len(runs.batch)
    if layer_effect.shape != (len(layers), b):
        raise ValueError(
            f"layer_effect: expected ({len(layers)}, {b}) for the layers and pairs given, got "
            f"{tuple(layer_effect.shape)}"
        )
    if (
        head_effect.dim() != 3
        or head_effect.shape[0] != len(head_layers)
        or (head_effect.shape[2] != b)
    ):
        raise ValueError(
            f"head_effect: expected ({len(head_layers)}, H, {b}), got {tuple(head_effect.shape)}"
        )
    return PatchingTable(
        kind=kind,
        pairs=runs.batch.pairs,
        clean_ld=runs.base.clean,
        corrupted_ld=runs.base.corrupted,
        layers=tuple(layers),
        layer_effect=layer_effect,
        head_layers=tuple(head_layers),
        head_effect=head_effect,
    )


@lru_cache(maxsize=2)
def patching_table(
    kind: str = "agreement", first_layer: int = 14, n_head_layers: int = 2
) -> PatchingTable:
    """SmolLM2 on one kind's pairs: the layers from first_layer on patched (before 14 none
    moves the answer: benchmarks/head_sweep.py), the heads of the n_head_layers layers with
    the largest median effect patched one at a time (cached per kernel; seconds)."""
    check_choice("kind", kind, KINDS)
    model, tok = pretrained_model("smollm2")
    batch = iv.encode_pairs(tok, [p for p in iv.load_minimal_pairs() if p.kind == kind])
    with one_thread(), torch.no_grad():
        runs = iv.prepare_patching(model, batch)
        layers = tuple(range(first_layer, model.cfg.n_layers))
        layer_effect = iv.patch_layers(model, runs, layers)
        top = layer_effect.median(1).values.argsort(descending=True)[:n_head_layers]
        head_layers = tuple(sorted(layers[int(i)] for i in top))
        head_effect = iv.patch_heads(model, runs, head_layers)
    return make_patching_table(runs, kind, layers, layer_effect, head_layers, head_effect)


@dataclass(frozen=True)
class PatchingParams:
    pair: int = 0  # index into the table's pairs
    layer: int = 26
    head: int = -1  # -1: the layer's whole attention output; else one head


@dataclass(frozen=True)
class PatchingExploration:
    params: PatchingParams
    pair: iv.MinimalPair
    clean_ld: float
    corrupted_ld: float
    effect: float | None  # None when this (layer, head) was not patched
    patched_ld: float | None
    layer_curve: tuple[float, ...]  # this pair's effect per layer of table.layers
    head_bars: tuple[float, ...] | None  # this pair's effect per head of `layer`, if patched
    note: str  # what the readout says besides the numbers

    @staticmethod
    def probability(ld: float) -> float:
        """P(answer | answer or alternative) = sigmoid(logit difference)."""
        return 1.0 / (1.0 + math.exp(-ld))


def explore_patching(params: PatchingParams, table: PatchingTable) -> PatchingExploration:
    """Read one pair's patching effect at one layer (or head) out of the table."""
    n = len(table.pairs)
    if not 0 <= params.pair < n:
        raise ValueError(f"pair: expected an index in [0, {n}), got {params.pair}")
    if params.layer not in table.layers:
        raise ValueError(
            f"layer: expected one of the patched layers {table.layers[0]}..{table.layers[-1]}, "
            f"got {params.layer}"
        )
    if not -1 <= params.head < table.n_heads:
        raise ValueError(
            f"head: expected -1 (the whole layer) or a head in [0, {table.n_heads}), got "
            f"{params.head}"
        )
    i = params.pair
    clean, corrupted = float(table.clean_ld[i]), float(table.corrupted_ld[i])
    row = table.layers.index(params.layer)
    curve = tuple(float(x) for x in table.layer_effect[:, i])
    bars = None
    if params.layer in table.head_layers:
        bars = tuple(
            float(x) for x in table.head_effect[table.head_layers.index(params.layer), :, i]
        )
    if params.head == -1:
        effect, note = curve[row], f"layer {params.layer}'s whole attention output patched"
    elif bars is not None:
        effect, note = bars[params.head], f"head {params.layer}.{params.head} patched alone"
    else:
        effect = None
        layers = ", ".join(str(x) for x in table.head_layers)
        note = (
            f"heads were patched one at a time only in layers {layers} (the ones that matter "
            "most); pick one of them, or head -1 for the whole layer"
        )
    patched = None if effect is None else corrupted + effect * (clean - corrupted)
    return PatchingExploration(
        params=params,
        pair=table.pairs[i],
        clean_ld=clean,
        corrupted_ld=corrupted,
        effect=effect,
        patched_ld=patched,
        layer_curve=curve,
        head_bars=bars,
        note=note,
    )


# --- rollout against raw attention --------------------------------------------------------------


@dataclass(frozen=True)
class RolloutParams:
    model: str = "minilm"
    text: str = "The trophy did not fit in the drawer because it was too big."
    layer: int = 5  # raw attention of this layer; rollout through layers 0..layer
    query: int = 10  # the token whose row is shown ("it" in the default text, for MiniLM)


@dataclass(frozen=True)
class RolloutExploration:
    params: RolloutParams
    tokens: tuple[str, ...]
    raw: Tensor  # (T,) row `query` of layer `layer`'s weights, heads averaged
    rollout: Tensor  # (T,) row `query` of the rollout through layer `layer`
    n_layers: int


@lru_cache(maxsize=16)
def _attentions(model_name: str, text: str) -> tuple[tuple[str, ...], Tensor]:
    """(tokens, (L, 1, H, T, T) weights) of a text, computed once per kernel."""
    model, tok = pretrained_model(model_name)
    ids = tok.encode(text)
    with torch.no_grad():
        out = model(torch.tensor([ids]))
    return tuple(tok.tokens(ids)), torch.stack(out.attentions)


def rollout_length(model_name: str, text: str) -> int:
    """How many tokens the text has for the model (1 for a text explore_rollout refuses: the
    refusal is then its message, not a control's range)."""
    if model_name not in ROLLOUT_MODELS or not text.strip() or len(text) > MAX_ROLLOUT_CHARS:
        return 1
    return len(_attentions(model_name, text)[0])


def explore_rollout(params: RolloutParams) -> RolloutExploration:
    """Raw attention of one query at one layer against the rollout through that layer."""
    check_choice("model", params.model, ROLLOUT_MODELS)
    if not params.text.strip():
        raise ValueError("text: expected some words, got an empty text")
    if len(params.text) > MAX_ROLLOUT_CHARS:
        raise ValueError(
            f"text: expected at most {MAX_ROLLOUT_CHARS} characters, got {len(params.text)}"
        )
    tokens, weights = _attentions(params.model, params.text)
    n_layers, t = weights.shape[0], weights.shape[-1]
    if not 0 <= params.layer < n_layers:
        raise ValueError(f"layer: expected an integer in [0, {n_layers}), got {params.layer}")
    if not 0 <= params.query < t:
        raise ValueError(f"query: expected a token index in [0, {t}), got {params.query}")
    roll = iv.attention_rollout(weights[: params.layer + 1])[0, params.query]  # (T,)
    raw = weights[params.layer, 0].mean(0)[params.query]  # (T,)
    return RolloutExploration(params, tokens, raw, roll, n_layers)
