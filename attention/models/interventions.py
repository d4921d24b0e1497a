"""Interventions on the pretrained models: does a head or a token *cause* the answer?

Everything goes through the models' hook points (.pretrained.blocks), so one design serves
MiniLM and SmolLM2:

    load_minimal_pairs()                  the course's evaluation set (minimal_pairs.tsv)
    encode_pairs(tokenizer, pairs)        clean and corrupted ids, padded to one length
    answer_logit_diff(logits, batch)      logit(answer) - logit(alternative) at the target
    cache_activations(model, ids, names)  read hook points
    ablate_heads(model, ids, heads, mode) zero or mean ablation of heads (the mean over any
                                          ids: mean_ids, e.g. clean and corrupted together)
    patch_layers / patch_heads / patch_positions
                                          activation patching, clean -> corrupted, batched
    attention_rollout(weights)            Abnar & Zuidema (2020), with the residual identity
    gradient_x_input(fn, x)               saliency: d metric / d input, times the input
    occlusion(model, batch, blank_id)     blank a token out, see the metric drop
    logit_lens(model, hidden_states)      SmolLM2: what each layer's residual would predict

A patching effect is normalised: 0 = the corrupted run's logit difference, 1 = the clean
run's. Pairs whose clean and corrupted runs barely differ make that ratio meaningless; callers
choose which pairs to keep (`PairBatch.gap`).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor

from .pretrained import PretrainedModel, Tokenizer
from .pretrained.blocks import Hook
from .pretrained.points import hook_name, parse_hook_name

# Package data beside this module, so an installed course (a wheel, not only `pip install -e`)
# finds it; pyproject's package-data ships it.
PAIRS_FILE = Path(__file__).with_name("minimal_pairs.tsv")
KINDS = ("agreement", "coreference", "name_copy")
COLUMNS = ("kind", "clean", "corrupted", "answer", "alternative")
Metric = Callable[[object], Tensor]  # a forward's output -> (B,) one number per sequence


@dataclass(frozen=True)
class MinimalPair:
    """Two prefixes that differ in a word or two, and the next word each should get."""

    kind: str  # one of KINDS
    clean: str  # its next word should be `answer`
    corrupted: str  # its next word should be `alternative`
    answer: str
    alternative: str


def load_minimal_pairs(path: str | Path | None = None) -> list[MinimalPair]:
    """Read the tab-separated pairs file (lines starting with '#' are notes)."""
    path = PAIRS_FILE if path is None else Path(path)
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    rows = list(csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows or tuple(rows[0]) != COLUMNS:
        got = rows[0] if rows else "nothing"
        raise ValueError(f"{path.name}: expected the header {list(COLUMNS)}, got {got}")
    pairs = []
    for n, row in enumerate(rows[1:], start=2):
        if len(row) != len(COLUMNS) or row[0] not in KINDS:
            raise ValueError(
                f"{path.name}: row {n}: expected {len(COLUMNS)} fields with a kind in "
                f"{list(KINDS)}, got {row}"
            )
        pairs.append(MinimalPair(*row))
    return pairs


@dataclass(frozen=True)
class PairBatch:
    """Pairs encoded for one model, right-padded to one length T (causal: padding after the
    target cannot change it; an encoder gets `real` as its attention mask)."""

    pairs: tuple[MinimalPair, ...]
    clean: Tensor  # (B, T) ids
    corrupted: Tensor  # (B, T) ids
    real: Tensor  # (B, T) bool, True = a token of the sentence (same in clean and corrupted)
    target: Tensor  # (B,) the position whose next-token logits are read: the prefix's last
    answer: Tensor  # (B,) token id of the clean run's next word
    alternative: Tensor  # (B,) token id of the corrupted run's next word

    def __len__(self) -> int:
        return len(self.pairs)

    def changed(self) -> Tensor:
        """(B, T) bool: the positions where clean and corrupted differ."""
        return self.clean != self.corrupted


def word_id(tokenizer: Tokenizer, word: str, *, space: bool) -> int:
    """The single token id of a word (with a leading space for a BPE tokenizer like SmolLM2's)."""
    ids = tokenizer.encode((" " if space else "") + word, add_special_tokens=False)
    if len(ids) != 1:
        raise ValueError(
            f"answer {word!r}: expected one token, got {len(ids)}: {tokenizer.tokens(ids)}"
        )
    return ids[0]


def encode_pairs(
    tokenizer: Tokenizer, pairs: Sequence[MinimalPair], *, space: bool = True, pad_id: int = 0
) -> PairBatch:
    """Encode the pairs; clean and corrupted of a pair must have the same number of tokens.

    space: answers get a leading space (SmolLM2's BPE); False for MiniLM's WordPiece. For an
    encoder that adds [CLS] ... [SEP], the target is the last word before [SEP].
    """
    if not pairs:
        raise ValueError("pairs: expected at least one MinimalPair, got none")
    clean, corrupted = [], []
    for p in pairs:
        a, b = tokenizer.encode(p.clean), tokenizer.encode(p.corrupted)
        if len(a) != len(b):
            raise ValueError(
                f"pair {p.clean!r} / {p.corrupted!r}: expected the same number of tokens, got "
                f"{len(a)} and {len(b)}"
            )
        clean.append(a)
        corrupted.append(b)
    t = max(len(a) for a in clean)
    sep = 1 if tokenizer.encode("a")[-1] == tokenizer.eos_id else 0  # [SEP] ends MiniLM's
    lengths = torch.tensor([len(a) for a in clean])

    def pad(rows: list[list[int]]) -> Tensor:
        return torch.tensor([r + [pad_id] * (t - len(r)) for r in rows])  # (B, T)

    return PairBatch(
        pairs=tuple(pairs),
        clean=pad(clean),
        corrupted=pad(corrupted),
        real=torch.arange(t)[None, :] < lengths[:, None],
        target=lengths - 1 - sep,
        answer=torch.tensor([word_id(tokenizer, p.answer, space=space) for p in pairs]),
        alternative=torch.tensor([word_id(tokenizer, p.alternative, space=space) for p in pairs]),
    )


def answer_logit_diff(logits: Tensor, batch: PairBatch) -> Tensor:
    """(B, T, V) next-token logits -> (B,) logit(answer) - logit(alternative) at the target."""
    if logits.dim() != 3 or logits.shape[:2] != batch.clean.shape:
        raise ValueError(
            f"logits: expected (B, T, V) with (B, T) = {tuple(batch.clean.shape)}, got "
            f"{tuple(logits.shape)}"
        )
    rows = torch.arange(len(batch))
    at = logits[rows, batch.target]  # (B, V)
    return at[rows, batch.answer] - at[rows, batch.alternative]


def logit_diff_metric(batch: PairBatch) -> Metric:
    """A metric for SmolLM2's output: the pairs' answer logit differences, (B,)."""
    return lambda out: answer_logit_diff(out.logits, batch)


def _forward(model: PretrainedModel, ids: Tensor, real: Tensor | None, **kw) -> object:
    if model.causal:
        return model(ids, **kw)
    return model(ids, attention_mask=real, **kw)


def check_layer_head(model: PretrainedModel, layer: int, head: int | None = None) -> None:
    """Refuse a layer or head the model does not have, naming the valid range."""
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < n_layers:
        raise ValueError(f"layer: expected an integer in [0, {n_layers}), got {layer!r}")
    if head is not None and (
        isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < n_heads
    ):
        raise ValueError(f"head: expected an integer in [0, {n_heads}), got {head!r}")


def cache_activations(
    model: PretrainedModel, ids: Tensor, names: Iterable[str], real: Tensor | None = None
) -> dict[str, Tensor]:
    """Run the model once and keep the activations at the named hook points."""
    seen: dict[str, Tensor] = {}

    def keep(name: str) -> Hook:
        def hook(x: Tensor) -> None:
            seen[name] = x.detach().clone()

        return hook

    _forward(model, ids, real, hooks={n: keep(n) for n in names}, need_weights=False)
    return seen


def ablate_heads(
    model: PretrainedModel,
    ids: Tensor,
    heads: Iterable[tuple[int, int]],
    *,
    mode: str = "zero",
    real: Tensor | None = None,
    mean_ids: Tensor | None = None,
    mean_real: Tensor | None = None,
    **kw,
) -> object:
    """The forward pass with heads (layer, head) silenced.

    mode "zero": the head's output is 0; "mean": it is replaced by its mean over a batch and
    its real positions (what the head says on average, the information of this input
    removed). Zero ablation can push the residual stream where training never took it.

    The mean is taken over `ids` (with `real`), or over `mean_ids` (with `mean_real`) when
    given. Take it over text that carries no answer of its own: the clean prefixes of a
    minimal-pair set all share one answer (all plural), so their mean still says "plural";
    a balanced mean, over the clean and the corrupted prefixes together, does not.
    """
    if mode not in ("zero", "mean"):
        raise ValueError(f"mode: expected 'zero' or 'mean', got {mode!r}")
    if mode == "zero" and (mean_ids is not None or mean_real is not None):
        raise ValueError("mean_ids, mean_real: only mode='mean' takes a mean, got mode='zero'")
    if mean_real is not None and mean_ids is None:
        raise ValueError("mean_real: expected it with mean_ids (the ids it marks), got no mean_ids")
    if mean_real is not None and mean_real.shape != mean_ids.shape:
        raise ValueError(
            f"mean_real: expected the shape of mean_ids {tuple(mean_ids.shape)}, got "
            f"{tuple(mean_real.shape)}"
        )
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        check_layer_head(model, layer, head)
        by_layer.setdefault(layer, []).append(head)
    names = [hook_name(layer, "heads") for layer in by_layer]
    means = {}
    if mode == "mean":
        source, source_real = (ids, real) if mean_ids is None else (mean_ids, mean_real)
        cached = cache_activations(model, source, names, source_real)
        w = torch.ones_like(source, dtype=torch.bool) if source_real is None else source_real
        w = w.float()
        w = w[:, None, :, None]  # (B, 1, T, 1)
        for name, x in cached.items():  # x (B, H, T, D)
            means[name] = (x * w).sum((0, 2)) / w.sum((0, 2))  # (H, D)

    def replace(name: str, hs: list[int]) -> Hook:
        def hook(x: Tensor) -> Tensor:
            x = x.clone()
            x[:, hs] = 0.0 if mode == "zero" else means[name][hs][None, :, None, :]
            return x

        return hook

    hooks = {n: replace(n, by_layer[parse_hook_name(n)[0]]) for n in names}
    return _forward(model, ids, real, hooks=hooks, **kw)


def patch(
    model: PretrainedModel,
    clean: Tensor,
    corrupted: Tensor,
    metric: Metric,
    names: Iterable[str],
    *,
    heads: Sequence[int] | None = None,
    real: Tensor | None = None,
) -> Tensor:
    """The metric of the corrupted run with the clean run's activations at the named hook
    points copied in (only the listed heads of a blocks.<layer>.heads point, if `heads` is
    given): (B,).

    Works for both models (any metric of their output); the batched, faster path for SmolLM2's
    logit differences is prepare_patching + patch_layers / patch_heads / patch_positions.
    """
    names = list(names)
    if heads is not None:
        for name in names:
            if parse_hook_name(name)[1] != "heads":
                raise ValueError(
                    f"heads: only a 'blocks.<layer>.heads' point has heads, got {name!r}"
                )
        for h in heads:
            check_layer_head(model, 0, h)
    if clean.shape != corrupted.shape:
        raise ValueError(
            f"clean, corrupted: expected ids of one shape, got {tuple(clean.shape)} and "
            f"{tuple(corrupted.shape)}"
        )
    source = cache_activations(model, clean, names, real)
    hooks = {n: _copy_heads(source[n], heads) for n in names}
    return metric(_forward(model, corrupted, real, hooks=hooks, need_weights=False))


def normalise(effect: Tensor, clean: Tensor, corrupted: Tensor) -> Tensor:
    """(metric - corrupted) / (clean - corrupted): 0 = nothing restored, 1 = all of it."""
    return (effect - corrupted) / (clean - corrupted)


@dataclass(frozen=True)
class Baseline:
    """The metric of the clean and corrupted runs, (B,) each; gap = clean - corrupted."""

    clean: Tensor
    corrupted: Tensor

    @property
    def gap(self) -> Tensor:
        return self.clean - self.corrupted


def resume_logit_diff(
    model: PretrainedModel, batch: PairBatch, layer: int, x: Tensor, hooks: dict[str, Hook]
) -> Tensor:
    """SmolLM2 from the residual stream x (B, T, M) entering `layer` to the pairs' logit
    differences (B,), with hooks named relative to `layer` ("blocks.0" is block `layer`).

    The blocks before `layer` are not run again (model.run_from): in a causal model a patch at
    layer L leaves them as they were. Only the logits of the answer and the alternative are
    computed (their difference is one dot product with the difference of two rows of the
    output layer).
    Equal to model(ids, hooks=...) run whole (tests/models/test_interventions.py checks it).
    """
    if not model.causal or not model.rotary:
        raise ValueError(
            f"resume_logit_diff: expected a causal model with RoPE (SmolLM2), got "
            f"{type(model).__name__}"
        )
    named = {}
    for name, fn in hooks.items():
        at, point = parse_hook_name(name)
        named[hook_name(layer + at, point)] = fn
    run = model.run_from(layer, x, hooks=named)
    h = model.norm(run.output[torch.arange(len(batch)), batch.target])  # (B, M)
    w = model.embed.weight
    return (h * (w[batch.answer] - w[batch.alternative])).sum(-1)  # (B,)


def logit_diffs(model: PretrainedModel, batch: PairBatch) -> Baseline:
    """SmolLM2's logit differences on the clean and the corrupted sentences (B,) each, without
    the full output layer (resume_logit_diff from the embeddings)."""
    runs = [
        resume_logit_diff(model, batch, 0, model.embed(ids), {})
        for ids in (batch.clean, batch.corrupted)
    ]
    return Baseline(*runs)


@dataclass(frozen=True)
class PatchRuns:
    """One pass over the clean and one over the corrupted sentences, with what patching needs:
    the logit differences, each layer's input and each head's output."""

    batch: PairBatch
    base: Baseline
    clean_heads: tuple[Tensor, ...]  # n_layers x (B, H, T, D)
    clean_resid: tuple[Tensor, ...]  # n_layers + 1 x (B, T, M) entering each block, then out
    corrupted_resid: tuple[Tensor, ...]  # n_layers x (B, T, M)
    clean_weights: tuple[Tensor, ...]  # n_layers x (B, H, T, T) the clean run's attention


def prepare_patching(model: PretrainedModel, batch: PairBatch) -> PatchRuns:
    """Run the clean and the corrupted sentences once each (SmolLM2), keeping what patch_*
    need to resume from any layer."""
    if not model.causal:
        raise ValueError(
            f"prepare_patching: expected a causal model (SmolLM2), got {type(model).__name__}"
        )
    clean = model(batch.clean)
    corrupted = model(batch.corrupted, need_weights=False)
    base = Baseline(
        answer_logit_diff(clean.logits, batch), answer_logit_diff(corrupted.logits, batch)
    )
    return PatchRuns(
        batch=batch,
        base=base,
        clean_heads=tuple(r.heads for r in clean.layers),
        clean_resid=clean.hidden_states,
        corrupted_resid=corrupted.hidden_states[:-1],
        clean_weights=clean.attentions,
    )


def _copy_heads(source: Tensor, heads: Sequence[int] | None) -> Hook:
    def hook(x: Tensor) -> Tensor:
        if heads is None:
            return source
        x = x.clone()
        x[:, heads] = source[:, heads]
        return x

    return hook


def patch_layers(
    model: PretrainedModel, runs: PatchRuns, layers: Iterable[int] | None = None
) -> Tensor:
    """Copy each layer's attention output (all heads, all positions) from the clean run into
    the corrupted one: (L, B) normalised effects, one row per layer asked for (all by default).
    Does this layer's attention carry what the changed word did to the answer?"""
    layers = list(range(model.cfg.n_layers)) if layers is None else list(layers)
    rows = []
    for layer in layers:
        check_layer_head(model, layer)
        hook = _copy_heads(runs.clean_heads[layer], None)
        x = runs.corrupted_resid[layer]
        rows.append(resume_logit_diff(model, runs.batch, layer, x, {"blocks.0.heads": hook}))
    return normalise(torch.stack(rows), runs.base.clean, runs.base.corrupted)  # (L, B)


def patch_heads(model: PretrainedModel, runs: PatchRuns, layers: Iterable[int]) -> Tensor:
    """Copy one head's output at a time from the clean run into the corrupted one: (L, H, B)
    normalised effects for the layers asked for."""
    out = []
    for layer in layers:
        check_layer_head(model, layer)
        x = runs.corrupted_resid[layer]
        row = []
        for h in range(model.cfg.n_heads):
            hook = _copy_heads(runs.clean_heads[layer], [h])
            row.append(resume_logit_diff(model, runs.batch, layer, x, {"blocks.0.heads": hook}))
        out.append(torch.stack(row))
    return normalise(torch.stack(out), runs.base.clean, runs.base.corrupted)  # (L, H, B)


def patch_positions(model: PretrainedModel, runs: PatchRuns, layer: int) -> Tensor:
    """Copy the clean residual stream entering `layer` at one position at a time into the
    corrupted run: (B, T) normalised effects (0 at padding). Where, at that depth, sits what
    decides the answer?"""
    check_layer_head(model, layer)
    batch = runs.batch
    clean, corrupted = runs.clean_resid[layer], runs.corrupted_resid[layer]
    cols = []
    for pos in range(batch.clean.shape[1]):
        x = corrupted.clone()
        x[:, pos] = clean[:, pos]
        cols.append(resume_logit_diff(model, batch, layer, x, {}))
    base = runs.base
    effect = normalise(torch.stack(cols, dim=1), base.clean[:, None], base.corrupted[:, None])
    return effect.masked_fill(~batch.real, 0.0)  # (B, T)


# --- token importance without an intervention --------------------------------------------------


def attention_rollout(weights: Sequence[Tensor] | Tensor, *, residual: bool = True) -> Tensor:
    """Abnar & Zuidema's attention rollout: how much of each input token reaches each position.

    weights: L layers of (B, H, T, T) (or one (L, B, H, T, T) tensor), first layer first.
    Each layer's heads are averaged; with residual=True the skip connection is added as an
    identity, A = 0.5 W + 0.5 I, rows renormalised to sum to 1; then the layers are chained,
    rollout = A_L ... A_2 A_1 (the last layer on the left). Returns (B, T, T): row t says how
    much of each input token flowed into position t.
    """
    layers = list(weights) if not isinstance(weights, Tensor) else list(weights.unbind(0))
    if not layers:
        raise ValueError("weights: expected at least one layer of (B, H, T, T), got none")
    shape = layers[0].shape
    for i, w in enumerate(layers):
        if w.dim() != 4 or w.shape != shape or w.shape[-1] != w.shape[-2]:
            raise ValueError(
                f"weights[{i}]: expected (B, H, T, T) like weights[0] {tuple(shape)}, got "
                f"{tuple(w.shape)}"
            )
    eye = torch.eye(shape[-1], dtype=layers[0].dtype)
    out = None
    for w in layers:
        a = w.mean(1)  # (B, T, T) heads averaged
        if residual:
            a = 0.5 * a + 0.5 * eye
            a = a / a.sum(-1, keepdim=True)
        out = a if out is None else a @ out  # the later layer on the left
    return out


def gradient_x_input(fn: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    """Saliency of each position: sum over the width of (d fn(x).sum() / d x) * x.

    fn maps x (B, T, M) to (B,) one number per sequence; returns (B, T).
    """
    if x.dim() != 3:
        raise ValueError(f"x: expected (B, T, M), got {tuple(x.shape)}")
    with torch.enable_grad(), torch.inference_mode(False):
        leaf = x.detach().clone().requires_grad_(True)
        y = fn(leaf)
        if y.dim() != 1 or y.shape[0] != x.shape[0]:
            raise ValueError(f"fn: expected a (B,) = ({x.shape[0]},) result, got {tuple(y.shape)}")
        (grad,) = torch.autograd.grad(y.sum(), leaf)
    return (grad * leaf.detach()).sum(-1)


def model_gradient_x_input(
    model: PretrainedModel, ids: Tensor, metric: Metric, real: Tensor | None = None
) -> Tensor:
    """gradient_x_input with respect to the first block's input (the embedded tokens): (B, T).

    Needs autograd: call it outside torch.inference_mode (torch.no_grad is fine), with ids and
    the metric's tensors made outside it too (inference tensors cannot enter a backward pass).
    """
    if torch.is_inference_mode_enabled() or torch.is_inference(ids):
        raise RuntimeError(
            "model_gradient_x_input: expected to run outside torch.inference_mode (with ids made "
            "outside it), got inference mode; use torch.no_grad() instead"
        )
    embedded = cache_activations(model, ids, ["blocks.0.resid_pre"], real)["blocks.0.resid_pre"]
    forward = type(model).forward.__wrapped__  # the forward without its torch.no_grad

    def fn(x: Tensor) -> Tensor:
        kw = {} if model.causal else {"attention_mask": real}
        out = forward(model, ids, hooks={"blocks.0.resid_pre": lambda _: x}, **kw)
        return metric(out)

    return gradient_x_input(fn, embedded)


def occlusion(
    model: PretrainedModel, ids: Tensor, metric: Metric, blank_id: int, real: Tensor | None = None
) -> Tensor:
    """How much the metric drops when each token in turn is replaced by `blank_id`: (B, T).

    Positive = the token supported the answer (metric(ids) - metric(ids with it blanked)).
    """
    full = metric(_forward(model, ids, real, need_weights=False))
    cols = []
    for pos in range(ids.shape[1]):
        blanked = ids.clone()
        blanked[:, pos] = blank_id
        cols.append(full - metric(_forward(model, blanked, real, need_weights=False)))
    drop = torch.stack(cols, dim=1)  # (B, T)
    return drop if real is None else drop.masked_fill(~real, 0.0)


def logit_lens(model: PretrainedModel, hidden_states: Sequence[Tensor]) -> Tensor:
    """SmolLM2: apply the final norm and the tied output layer to every layer's residual
    stream. hidden_states: n_layers + 1 of (B, T, M) (out.hidden_states) -> (L + 1, B, T, V);
    the last entry is the model's own logits."""
    if not model.causal:
        raise ValueError(
            "logit_lens: expected a model with an output layer (SmolLM2), got "
            f"{type(model).__name__}, an encoder without one"
        )
    want = model.cfg.n_layers + 1
    if len(hidden_states) != want:
        raise ValueError(f"hidden_states: expected {want} tensors, got {len(hidden_states)}")
    return torch.stack([F.linear(model.norm(h), model.embed.weight) for h in hidden_states])


def lens_logit_diff(
    model: PretrainedModel, hidden_states: Sequence[Tensor], batch: PairBatch
) -> Tensor:
    """The logit lens read as the pairs' logit difference at the target: (L + 1, B).

    Row l is what the residual stream entering block l would answer if the model stopped
    there (the final norm and the output layer applied); the last row is the model's own.
    Only two rows of the output layer are used: no (L + 1, B, T, V) tensor is made.
    """
    if not model.causal:
        raise ValueError(
            "lens_logit_diff: expected a model with an output layer (SmolLM2), got "
            f"{type(model).__name__}"
        )
    rows = torch.arange(len(batch))
    w = model.embed.weight
    direction = w[batch.answer] - w[batch.alternative]  # (B, M)
    return torch.stack(
        [(model.norm(h[rows, batch.target]) * direction).sum(-1) for h in hidden_states]
    )


def spearman(a: Tensor, b: Tensor) -> float:
    """Spearman's rank correlation of two 1-D tensors (ties get their mean rank); nan when
    either is constant."""
    if a.shape != b.shape or a.dim() != 1:
        raise ValueError(
            f"a, b: expected two 1-D tensors of one length, got {tuple(a.shape)}, {tuple(b.shape)}"
        )
    ra, rb = _ranks(a.double()), _ranks(b.double())
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = (ra.square().sum() * rb.square().sum()).sqrt()
    return float("nan") if denom == 0 else float((ra * rb).sum() / denom)


def _ranks(x: Tensor) -> Tensor:
    order = x.argsort()
    ranks = torch.empty_like(x)
    ranks[order] = torch.arange(len(x), dtype=x.dtype)
    for v in x.unique():  # ties: their mean rank
        same = x == v
        if same.sum() > 1:
            ranks[same] = ranks[same].mean()
    return ranks


def bootstrap_ci(
    values: Tensor, *, n: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """A percentile bootstrap interval for the mean of (N,) values (resampled over the N)."""
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(len(values), (n, len(values)), generator=g)
    means = values[idx].mean(1)
    lo, hi = torch.quantile(means, torch.tensor([(1 - level) / 2, (1 + level) / 2]))
    return float(lo), float(hi)
