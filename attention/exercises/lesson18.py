"""Checkers of lesson 18 (the intervention lab), each naming the typical mistakes.

check_rollout             attention rollout (Abnar & Zuidema) over the layers of one text
check_patching_effect     the normalised effect of an activation patch on a logit difference
check_occlusion           how much a score drops when each token in turn is blanked out
check_read_head           a hook that reads one head's output as the model runs
check_patch_head          a hook that copies one head at one position from the clean run
check_mean_ablate         a hook that replaces a head by its mean over clean and corrupted

The three hook exercises run the learner's function on a SmolLM2 in miniature (random weights,
the real model's code and hook points), through a wrapper that records which hook points
were used, on which ids, and whether a hook edited its tensor in place or returned nothing.

Reference solutions are in `attention.exercises.solutions.lesson18`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from ..models.pretrained.points import hook_name
from ..models.pretrained.smollm2 import SmolLM2, SmolLM2Config
from ._checking import Wrong, attempt, call, checker, close, compare, expect_tensor, raised

LESSON = "18_intervention_lab"
__all__ = [
    "check_mean_ablate",
    "check_occlusion",
    "check_patch_head",
    "check_patching_effect",
    "check_read_head",
    "check_rollout",
]


def _weights(n_layers: int, n_heads: int, t: int, seed: int) -> Tensor:
    """(L, H, T, T) random attention weights whose rows sum to 1 (bidirectional)."""
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(2.0 * torch.randn(n_layers, n_heads, t, t, generator=g), dim=-1)


def _rollout(weights: Tensor, *, identity: bool = True, scale: float = 0.5) -> Tensor:
    eye = torch.eye(weights.shape[-1])
    out = eye
    for layer in weights:
        a = layer.mean(0)
        if identity:
            a = scale * a + scale * eye if scale == 0.5 else a + eye
            if scale == 0.5:
                a = a / a.sum(-1, keepdim=True)
        out = a @ out
    return out


@checker("rows of the rollout sum to 1, the residual counted, the last layer on the left.")
def check_rollout(fn: Callable[[Tensor], Tensor]) -> None:
    """Check fn(weights (L, H, T, T)) -> (T, T)."""
    weights = _weights(3, 4, 5, seed=18)
    want = _rollout(weights)
    got = expect_tensor(call(fn, weights), what="rollout", shape=(5, 5))
    eye = torch.eye(5)
    wrong_order = eye
    for layer in weights:
        a = 0.5 * layer.mean(0) + 0.5 * eye
        wrong_order = wrong_order @ (a / a.sum(-1, keepdim=True))
    max_heads = eye
    for layer in weights:
        a = 0.5 * layer.amax(0) + 0.5 * eye
        max_heads = (a / a.sum(-1, keepdim=True)) @ max_heads
    mistakes = [
        (
            _rollout(weights, identity=False),
            "you left out the identity term: the residual connection carries each token past "
            "the attention, so add it, A = 0.5 W + 0.5 I, before chaining the layers",
        ),
        (
            _rollout(weights, scale=1.0),
            "you added the identity without renormalising: W + I has rows that sum to 2, and "
            "the product grows by 2 per layer; divide each row by its sum (or use 0.5 W + 0.5 I)",
        ),
        (
            wrong_order,
            "you multiplied in the wrong order: the later layer reads what the earlier one "
            "wrote, so rollout = A_L ... A_2 A_1 (the new layer on the left: a @ rollout)",
        ),
        (
            max_heads,
            "you took the largest weight over the heads; Abnar & Zuidema average the heads",
        ),
    ]
    compare(got, want, mistakes, what="rollout")


@checker("0 = the corrupted run's logit difference, 1 = the clean run's.")
def check_patching_effect(fn: Callable[..., Tensor]) -> None:
    """Check fn(clean, corrupted, patched (V,) logits, answer, other) -> a number."""
    g = torch.Generator().manual_seed(30)
    clean, corrupted, patched = torch.randn(3, 12, generator=g)
    answer, other = 3, 7
    clean[answer], clean[other] = 4.0, -1.0  # clean prefers the answer by 5
    corrupted[answer], corrupted[other] = -0.5, 1.5  # corrupted prefers the other by 2
    patched[answer], patched[other] = 2.0, 0.6  # the patch restores part of it

    def diff(x: Tensor) -> Tensor:
        return x[answer] - x[other]

    want = (diff(patched) - diff(corrupted)) / (diff(clean) - diff(corrupted))
    got = call(fn, clean, corrupted, patched, answer, other)
    if isinstance(got, (int, float)):
        got = torch.tensor(float(got))
    got = expect_tensor(got, what="patching effect")
    if got.dim() != 0:
        raise Wrong(f"expected one number (a 0-d tensor), got shape {tuple(got.shape)}")
    p = [torch.softmax(x, -1) for x in (clean, corrupted, patched)]
    mistakes = [
        (
            (diff(clean) - diff(patched)) / (diff(clean) - diff(corrupted)),
            "you measured the wrong direction: how far the patch is from the clean run "
            "(1 - effect); measure how far it moved the corrupted run towards the clean one",
        ),
        (
            diff(patched) - diff(corrupted),
            "you did not normalise: divide by clean - corrupted, so that 1 means all restored",
        ),
        (
            (patched[answer] - corrupted[answer]) / (clean[answer] - corrupted[answer]),
            "you used the answer's logit alone; use the logit difference answer - other, which "
            "ignores what shifts every logit alike",
        ),
        (
            (p[2][answer] - p[1][answer]) / (p[0][answer] - p[1][answer]),
            "you used probabilities; the exercise measures the logit difference",
        ),
    ]
    compare(got, want, mistakes, what="patching effect")


def _score_model(seed: int) -> Callable[[Tensor], Tensor]:
    """A small nonlinear score of (B, T) ids -> (B,)."""
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(20, 4, generator=g)
    w = torch.randn(4, generator=g)

    def score(ids: Tensor) -> Tensor:
        x = table[ids]  # (B, T, 4)
        return torch.tanh(x.sum(1)) @ w  # (B,)

    return score


@checker("each token blanked on its own, the score's drop positive when the token helped.")
def check_occlusion(fn: Callable[..., Tensor]) -> None:
    """Check fn(score, ids (T,), blank_id) -> (T,)."""
    score = _score_model(18)
    ids = torch.tensor([3, 8, 1, 14, 5, 9])
    blank = 0
    full = score(ids[None])[0]

    def blanked(pos: int, cumulative: bool) -> Tensor:
        x = ids.clone()
        if cumulative:
            x[: pos + 1] = blank
        else:
            x[pos] = blank
        return score(x[None])[0]

    want = torch.stack([full - blanked(i, False) for i in range(len(ids))])
    got = expect_tensor(call(fn, score, ids, blank), what="occlusion", shape=(len(ids),))
    mistakes = [
        (
            -want,
            "the sign is flipped: occlusion is score(with the token) - score(without it), "
            "positive when the token supported the score",
        ),
        (
            torch.stack([full - blanked(i, True) for i in range(len(ids))]),
            "your blanks pile up: each position must be blanked on its own, in a fresh copy of "
            "the ids (ids.clone() inside the loop), the other tokens as they were",
        ),
        (
            torch.stack([blanked(i, False) for i in range(len(ids))]),
            "you returned the score without each token; occlusion is the drop, full - that",
        ),
    ]
    compare(got, want, mistakes, what="occlusion")


# --- hooks: read a head, patch a head, ablate a head ---------------------------------------------

# a SmolLM2 in miniature: 3 layers of 4 query heads (2 key/value heads) of width 6
TINY = SmolLM2Config(
    vocab_size=13, d_model=24, n_layers=3, n_heads=4, n_kv_heads=2, d_ff=16, rope_base=10000.0
)
T = 7  # tokens per sequence: neither D = 6 nor H = 4, so a wrong axis shows in the shape


def _tiny_model() -> SmolLM2:
    torch.manual_seed(180)  # the checker restores the learner's random state afterwards
    model = SmolLM2(TINY).eval()
    with torch.no_grad():  # norms away from 1: a slip in any position or head shows
        for name, param in model.named_parameters():
            if "norm" in name:
                param.copy_(1.0 + 0.2 * torch.randn_like(param))
    return model


def _pair_ids() -> tuple[Tensor, Tensor]:
    """(2, T) clean and corrupted ids that differ at positions 0 and 2 only."""
    g = torch.Generator().manual_seed(181)
    clean = torch.randint(1, TINY.vocab_size, (2, T), generator=g)
    corrupted = clean.clone()
    corrupted[:, [0, 2]] = (clean[:, [0, 2]] + 5) % (TINY.vocab_size - 1) + 1
    return clean, corrupted


@dataclass
class _Call:
    ids: Tensor
    returned_none: dict[str, bool] = field(default_factory=dict)  # hook point -> its last call
    edited: set[str] = field(default_factory=set)  # hook points whose tensor was edited in place


class _Watched:
    """The model as the learner's function sees it. Each hook gets a copy of its tensor, so an
    edit in place is seen, and does not reach the run (only a returned tensor does: the
    contract of a hook, .pretrained.blocks)."""

    def __init__(self, model: SmolLM2) -> None:
        self._model = model
        self.calls: list[_Call] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def __call__(self, ids: Tensor, *args: Any, hooks: Any = None, **kw: Any) -> Any:
        record = _Call(ids.clone() if isinstance(ids, Tensor) else ids)
        self.calls.append(record)
        if isinstance(hooks, dict):
            hooks = {name: self._wrap(name, fn, record) for name, fn in hooks.items()}
        return self._model(ids, *args, hooks=hooks, **kw)

    @staticmethod
    def _wrap(name: str, fn: Any, record: _Call) -> Any:
        if not callable(fn):
            return fn  # the model refuses it, naming the hook point

        def hook(x: Tensor) -> Tensor | None:
            mine = x.clone()
            y = fn(mine)
            record.returned_none[name] = y is None
            if not torch.equal(mine, x):
                record.edited.add(name)
            return y

        return hook

    def hooked(self) -> set[str]:
        return {name for c in self.calls for name in c.returned_none}

    def ran(self, ids: Tensor) -> list[_Call]:
        return [c for c in self.calls if isinstance(c.ids, Tensor) and torch.equal(c.ids, ids)]


REPLACED = "expected a replacement of shape"  # the model's words for a hook's wrong return


def _run_watched(fn: Callable[..., Any], model: SmolLM2, *args: Any) -> tuple[Any, _Watched]:
    """fn(watched model, *args): (its result, the record); a hook that returned a tensor
    of another shape is named."""
    watched = _Watched(model)
    got, error = attempt(fn, watched, *args)
    if error is not None:
        if REPLACED in str(error):
            raise Wrong(
                f"{raised(fn, error)}: your hook returned a tensor, and the model takes a "
                "returned tensor as the replacement of what it was given; a hook that only "
                "reads stores what it needs and returns None"
            )
        if not watched.calls:
            raise Wrong(f"{raised(fn, error)}; run the model with your hook attached")
        raise Wrong(raised(fn, error))
    if not watched.calls:
        raise Wrong("you never ran the model: model(ids, hooks={hook point: your hook})")
    return got, watched


def _point(layer: int) -> str:
    return hook_name(layer, "heads")


def _expect_point(watched: _Watched, layer: int) -> None:
    point = _point(layer)
    used = watched.hooked()
    if not used:
        raise Wrong(
            f"you attached no hook (or it never ran): pass it to the model, "
            f"model(ids, hooks={{{point!r}: hook}}); this exercise is the hook"
        )
    if point not in used:
        raise Wrong(
            f"your hooks ran at {sorted(used)}; each head's output of layer {layer} is at "
            f"{point!r} (layers count from 0)"
        )


def _replaced(watched: _Watched, ids: Tensor, layer: int) -> bool:
    """Did a hook at layer's heads point return a tensor on a run of these ids?"""
    return any(c.returned_none.get(_point(layer)) is False for c in watched.ran(ids))


def _edited_in_place(watched: _Watched, *, reading: bool) -> None:
    for c in watched.calls:
        for name in sorted(c.edited):
            if reading:
                raise Wrong(
                    f"your hook changed the tensor it was given at {name!r} (an edit in place, "
                    "x[...] = ... or x.mul_(...)): a hook that reads must leave the run as it "
                    "was; store a copy, x[:, head].clone(), and return None"
                )
            if c.returned_none.get(name):
                raise Wrong(
                    f"your hook edited the tensor at {name!r} in place and returned nothing: a "
                    "hook's returned tensor is the only replacement the model promises to use; "
                    "edit a copy (x = x.clone()) and return it"
                )


@checker("a hook at blocks.<layer>.heads keeps x[:, head] and returns None.")
def check_read_head(fn: Callable[..., Tensor]) -> None:
    """Check fn(model, ids (B, T), layer, head) -> (B, T, D) that head's output."""
    model = _tiny_model()
    ids, _ = _pair_ids()
    for layer, head in ((1, 1), (2, 3)):
        heads = model(ids).layers[layer].heads  # (B, H, T, D)
        got, watched = _run_watched(fn, model, ids, layer, head)
        _edited_in_place(watched, reading=True)
        _expect_point(watched, layer)
        mistakes = [
            (heads, "you returned every head's output (B, H, T, D); keep one head: x[:, head]"),
            (
                heads[:, :, head],
                "you indexed the positions: x[:, :, head] is every head at position `head`; "
                "the heads are the second axis, x[:, head]",
            ),
            (
                heads[:, (head + 1) % TINY.n_heads],
                "you read the next head: heads count from 0, x[:, head]",
            ),
        ]
        if head < len(ids):  # x[head] exists only for a head number below the batch size
            mistakes.append(
                (
                    heads[head],
                    "you indexed the batch: x[head] is sequence number `head`; the heads are "
                    "the second axis, x[:, head]",
                )
            )
        what = f"layer {layer}, head {head}"
        compare(expect_tensor(got, what=what), heads[:, head], mistakes, what=what, atol=1e-6)


def _patched(model: SmolLM2, source: Tensor, target: Tensor, layer: int, heads, pos) -> Tensor:
    """The target run's logits with heads[:, heads, pos] copied from the source run."""
    cached = model(source).layers[layer].heads  # (B, H, T, D)

    def hook(x: Tensor) -> Tensor:
        x = x.clone()
        x[:, heads, pos] = cached[:, heads, pos]
        return x

    return model(target, hooks={_point(layer): hook}, need_weights=False).logits


@checker("the corrupted run, one head at one position copied in from the clean run.")
def check_patch_head(fn: Callable[..., Tensor]) -> None:
    """Check fn(model, clean, corrupted (B, T), layer, head, pos) -> (B, T, V) logits."""
    model = _tiny_model()
    clean, corrupted = _pair_ids()
    every = slice(None)
    for layer, head, pos in ((1, 2, 4), (0, 1, 5)):
        want = _patched(model, clean, corrupted, layer, head, pos)
        got, watched = _run_watched(fn, model, clean, corrupted, layer, head, pos)
        got = expect_tensor(got, what="the patched logits")
        if close(got, want):
            continue
        _edited_in_place(watched, reading=False)
        _expect_point(watched, layer)
        plain = model(corrupted).logits
        if close(got, plain):
            if not _replaced(watched, corrupted, layer):
                raise Wrong(
                    "your patch changed nothing: the hook on the corrupted run returned None, "
                    "so the model went on with its own tensor; return the patched copy"
                )
            if not watched.ran(clean):
                raise Wrong(
                    "your patch changed nothing: you never ran the clean prefix, so what you "
                    "copied came from the corrupted run itself; cache the clean run's head "
                    "output first"
                )
        mistakes = [
            (
                _patched(model, corrupted, clean, layer, head, pos),
                "you patched from the wrong run: the clean run with the corrupted run's head "
                "copied in; run the corrupted prefix, copy in from the clean one",
            ),
            (
                model(clean).logits,
                "you returned the clean run's logits; return the corrupted run's, patched",
            ),
            (plain, "your patch changed nothing: the logits are the corrupted run's own"),
            (
                _patched(model, clean, corrupted, layer, head, every),
                "you patched every position of the head; copy position pos only: x[:, head, pos]",
            ),
            (
                _patched(model, clean, corrupted, layer, every, pos),
                "you patched every head at that position; copy one head: x[:, head, pos]",
            ),
            (
                _patched(model, clean, corrupted, layer, head, pos - 1),
                f"you patched position {pos - 1}, one before pos = {pos} (positions count from 0)",
            ),
            (
                _patched(model, clean, corrupted, layer, head, pos + 1),
                f"you patched position {pos + 1}, one after pos = {pos}",
            ),
        ]
        what = f"layer {layer}, head {head}, pos {pos}"
        compare(got, want, mistakes, what=what)


def _mean_ablated(
    model: SmolLM2, runs: list[Tensor], ids: Tensor, layer: int, head: int, how: str
) -> Tensor:
    """The logits of `ids` with `head` of `layer` replaced: a mean over `runs` (how="mean"),
    per position ("position"), zero ("zero"), the mean of the heads ("heads"), or every head by
    its own mean ("all")."""
    outs = torch.cat([model(r).layers[layer].heads for r in runs])  # (N, H, T, D)

    def hook(x: Tensor) -> Tensor:
        x = x.clone()
        if how == "mean":
            x[:, head] = outs[:, head].mean((0, 1))  # (D,)
        elif how == "position":
            x[:, head] = outs[:, head].mean(0)  # (T, D)
        elif how == "zero":
            x[:, head] = 0.0
        elif how == "heads":
            x[:, head] = x.mean(1)  # (B, T, D)
        else:
            x[:] = outs.mean((0, 2))[None, :, None]  # (1, H, 1, D)
        return x

    return model(ids, hooks={_point(layer): hook}, need_weights=False).logits


@checker("head's output everywhere = its mean over both runs' sequences and positions.")
def check_mean_ablate(fn: Callable[..., Tensor]) -> None:
    """Check fn(model, clean, corrupted (B, T), layer, head) -> (B, T, V) the clean run's
    logits with that head mean-ablated, the mean over clean and corrupted together."""
    model = _tiny_model()
    clean, corrupted = _pair_ids()
    layer, head = 1, 1
    both = [clean, corrupted]
    want = _mean_ablated(model, both, clean, layer, head, "mean")
    got, watched = _run_watched(fn, model, clean, corrupted, layer, head)
    got = expect_tensor(got, what="the ablated logits")
    _edited_in_place(watched, reading=False)
    if close(got, want):
        return
    _expect_point(watched, layer)
    if close(got, model(clean).logits) and not _replaced(watched, clean, layer):
        raise Wrong(
            "your ablation changed nothing: the hook on the clean run returned None, so the "
            "model went on with its own tensor; return the edited copy"
        )
    mistakes = [
        (
            _mean_ablated(model, [clean], clean, layer, head, "mean"),
            "your mean is over the clean run alone: it still carries what the clean prefixes "
            "share (in the lesson, 'plural'); average over clean and corrupted together",
        ),
        (
            _mean_ablated(model, [corrupted], clean, layer, head, "mean"),
            "your mean is over the corrupted run alone: it carries the corrupted prefixes' "
            "answer; average over clean and corrupted together",
        ),
        (
            _mean_ablated(model, both, clean, layer, head, "zero"),
            "you zeroed the head: that is zero ablation; replace it by its mean",
        ),
        (
            _mean_ablated(model, both, clean, layer, head, "position"),
            "you kept one mean per position; this lab's mean is over the sequences and the "
            "positions together, one vector of width D (iv.ablate_heads)",
        ),
        (
            _mean_ablated(model, both, clean, layer, head, "heads"),
            "you averaged over the heads; average this head's output over the sequences and "
            "positions of both runs",
        ),
        (
            _mean_ablated(model, both, clean, layer, head, "all"),
            "you ablated every head of the layer; replace only x[:, head]",
        ),
        (model(clean).logits, "your ablation changed nothing: the logits are the clean run's own"),
    ]
    compare(got, want, mistakes, what="the ablated logits")
