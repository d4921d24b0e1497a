"""TrainingAttentionExplorer: one attention map of a training run, at one of its snapshot steps.

The run's history (a TrainHistory recorded with snapshot_steps=...) and its task are the data;
the params pick the step, the kind of attention and the layer. The shipped reverse model's
cross-attention sharpens into the anti-diagonal as the steps go by.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..models.toy.snapshots import SNAPSHOT_KINDS, SnapshotView, snapshot_view
from ._util import bounded, check_fields

if TYPE_CHECKING:  # annotations only: the trainer need not load with every explorer
    from ..models.toy.data import ToyTask
    from ..models.toy.training import TrainHistory

__all__ = ["TrainingExploration", "TrainingParams", "explore_training"]

TrainingExploration = SnapshotView  # the map per head, its labels, and how sharp it is


@dataclass(frozen=True)
class TrainingParams:
    """Which attention map of a run's snapshots to show.

    step: a step the history has a snapshot of (history.snapshot_at checks it). kind: "cross"
    (decoder queries over source keys), "encoder" (self) or "decoder" (masked self).
    layer: 0 .. snapshot_layers(history, kind) - 1.
    """

    step: int = bounded(0, 0, 2**31 - 1)
    kind: str = "cross"
    layer: int = bounded(0, 0, 2**31 - 1)

    def __post_init__(self) -> None:
        check_fields(self)
        if self.kind not in SNAPSHOT_KINDS:  # not one_of: this message shows the tuple
            raise ValueError(f"kind: expected one of {SNAPSHOT_KINDS}, got {self.kind!r}")


def snapshot_layers(history: TrainHistory, kind: str) -> int:
    """How many layers of attention of `kind` the history's snapshots hold."""
    snap = history.snapshots[0]
    return (snap.encoder if kind == "encoder" else snap.cross).shape[0]  # (L, H, Tq, Tk)


def explore_training(
    params: TrainingParams, history: TrainHistory, task: ToyTask
) -> TrainingExploration:
    """Every head's weights of one map of the snapshot at params.step, labelled by task's tokens.

    Raises:
        ValueError: a step the history has no snapshot of, or a layer outside the kind's.
    """
    snap = history.snapshot_at(params.step)
    return snapshot_view(snap, task.tokenizer, params.kind, params.layer)
