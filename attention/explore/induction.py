"""InductionExplorer: train the toy attention-only model and read its circuit, record by record.

    params = InductionParams(n_layers=2, n_heads=1, steps=1000)
    r = explore_induction(params)           # trains (cached per training settings), then reads
    r.phase_step, r.loss[-1], r.induction[-1]          # when the circuit formed, where it got
    explore_induction(replace(params, ablate=0))        # silence head 0 (layer 0, head 0)

The explorer trains live instead: `start_run(params)` makes the untrained run, it trains it in
chunks (`run.run(k)`) and `read_run(run, params)` turns the run as it stands into the same
InductionExploration after every chunk. The training settings (everything but `ablate` and
`steps`) pick the run; `ablate` and the step only change what is read from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from ..models.toy.induction import (
    MAX_HEADS,
    MAX_LAYERS,
    MAX_REPEAT,
    POSITIONS,
    HeadReport,
    InductionConfig,
    InductionRun,
    InductionTask,
    evaluate,
    key_composition,
)
from ._util import bounded, check_fields, check_int, flag

INDUCTION_HEADS = (1, 2, 4)  # heads per layer the explorer offers (d_model 32: even widths)
INDUCTION_STEPS = (250, 500, 1000, 1500, 2000, 3000)  # training budgets the explorer offers
INDUCTION_VOCAB = (16, 256)  # smallest and largest vocabulary the explorer offers


@dataclass(frozen=True)
class InductionParams:
    """What to train and what to read from it.

    n_layers 1..3, n_heads 1, 2 or 4 per layer (d_model 32), lr (AdamW, constant), vocab
    (random tokens; max_repeat..512), min_repeat..max_repeat (each sequence's repeat length n
    is drawn from this range; equal values: the fixed-length variant), positions ("learned",
    "sinusoidal", "rotary"), layer_norm, mlp, seed, steps (the training budget).
    ablate: -1, or the head silenced when reading: layer * n_heads + head.
    """

    n_layers: int = 2
    n_heads: int = 1
    lr: float = 3e-3
    vocab: int = 64
    min_repeat: int = 4
    max_repeat: int = 16
    positions: str = "learned"
    layer_norm: bool = flag(False)
    mlp: bool = flag(False)
    seed: int = 0
    steps: int = bounded(1000, 1, 100_000)
    ablate: int = -1

    def __post_init__(self) -> None:
        check_fields(self)
        self.task(), self.config()  # validate the rest where it is defined
        n = self.n_layers * self.n_heads
        check_int("ablate", self.ablate, -1, n - 1)

    def task(self) -> InductionTask:
        return InductionTask(self.vocab, self.min_repeat, self.max_repeat)

    def config(self) -> InductionConfig:
        same = ("n_layers", "n_heads", "positions", "layer_norm", "mlp", "seed")
        # a log slider's lr comes back from the browser as 0.0030000000000000005: 3 digits keep
        # one setting one run
        return InductionConfig(**{n: getattr(self, n) for n in same}, lr=float(f"{self.lr:.3g}"))

    @property
    def ablate_head(self) -> tuple[int, int] | None:
        """(layer, head) of the silenced head, or None."""
        return None if self.ablate < 0 else divmod(self.ablate, self.n_heads)

    def training_key(self) -> tuple:
        """What picks the run: every setting but ablate and steps."""
        return (self.task(), self.config())


def head_names(n_layers: int, n_heads: int) -> list[str]:
    """["L0 H0", "L0 H1", ...]: every head, layer by layer."""
    return [f"L{layer} H{head}" for layer in range(n_layers) for head in range(n_heads)]


def ablate_options(n_layers: int, n_heads: int) -> list[tuple[str, int]]:
    """The ablation menu: ("none", -1), then ("L0 H0", 0), ... (the value layer * H + head)."""
    return [("none", -1)] + [(name, i) for i, name in enumerate(head_names(n_layers, n_heads))]


@dataclass(frozen=True)
class InductionExploration:
    """A run as it stands: its curves, each head's scores and maps, an ablation, K-composition.

    The recorded curves have one entry per record (every 10 steps, from step 0); maps and
    scores without "_at" are the latest record's.
    """

    params: InductionParams
    step: int  # steps trained so far
    seconds: float  # time spent training
    steps: list[int]  # (R,) recorded steps
    loss: list[float]  # (R,) loss on the repeated part of the probe (nats)
    previous_token: Tensor  # (R, L, H) previous-token score per head
    induction: Tensor  # (R, L, H) induction score per head
    phase_step: int | None  # first recorded step with the loss under PHASE_LOSS
    maps: Tensor  # (L, H, T, T) every head's weights on the example, latest record
    tokens: list[str]  # T labels of the example ("BOS", "12", ...)
    repeat: int  # the example's n
    ln_vocab: float  # ln V, the loss of a uniform guess over the random tokens
    report: HeadReport  # the model now on the probe, nothing silenced
    ablated: HeadReport | None  # ... with params.ablate's head silenced
    composition: Tensor | None  # (H, H + 1) layer 1's induction score, see key_composition
    head_names: list[str]  # L * H names, "L0 H0", ...

    @property
    def done(self) -> bool:
        return self.step >= self.params.steps


def start_run(params: InductionParams) -> InductionRun:
    """The untrained run of params' training settings (step 0 recorded)."""
    return InductionRun(params.task(), params.config())


def read_run(run: InductionRun, params: InductionParams) -> InductionExploration:
    """What the explorer shows of `run` now, with params.ablate's head silenced.

    Raises:
        ValueError: a run trained with other settings than params'.
    """
    if (run.task, run.config) != params.training_key():
        raise ValueError("run: trained with other settings than params; start_run(params)")
    h = run.history
    probe = run.probe
    report = evaluate(run.model, probe)
    head = params.ablate_head
    ablated = None if head is None else evaluate(run.model, probe, ablate=(head,))
    composition = None if params.n_layers < 2 else key_composition(run.model, probe)
    example = probe.tokens[0].tolist()
    return InductionExploration(
        params=params,
        step=run.step,
        seconds=h.seconds,
        steps=list(h.steps),
        loss=list(h.loss),
        previous_token=h.scores("previous_token"),
        induction=h.scores("induction"),
        phase_step=h.phase_step,
        maps=h.maps[-1],
        tokens=["BOS" if t == 0 else str(t) for t in example],
        repeat=int(probe.repeat[0]),
        ln_vocab=math.log(params.vocab),
        report=report,
        ablated=ablated,
        composition=composition,
        head_names=head_names(params.n_layers, params.n_heads),
    )


@lru_cache(maxsize=8)
def _trained(key: tuple, steps: int) -> InductionRun:
    task, config = key
    run = InductionRun(task, config)
    run.run(steps)
    return run


def explore_induction(params: InductionParams) -> InductionExploration:
    """Train params' model for params.steps steps (once per setting: cached), then read it."""
    with torch.random.fork_rng(devices=[]):
        run = _trained(params.training_key(), params.steps)
    return read_run(run, params)


__all__ = [
    "INDUCTION_HEADS",
    "INDUCTION_STEPS",
    "INDUCTION_VOCAB",
    "MAX_HEADS",
    "MAX_LAYERS",
    "MAX_REPEAT",
    "POSITIONS",
    "InductionExploration",
    "InductionParams",
    "ablate_options",
    "explore_induction",
    "head_names",
    "read_run",
    "start_run",
]
