"""Checkpoints: one torch file with the weights, the model config, the task and a summary of
the training (loss curve, attention snapshots); `load_checkpoint` rebuilds the model from it,
with a clear error for a missing, truncated or foreign file or another config.
"""

from __future__ import annotations

import pickle
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
from torch import Tensor

from ...transformer import Transformer, TransformerConfig
from ..errors import WeightFileError
from .data import ToyTask
from .snapshots import AttentionSnapshot
from .training import TrainHistory

SHIPPED_REVERSE = Path(__file__).parent / "reverse.pt"
CHECKPOINT_FORMAT = "attention-course/transformer-checkpoint"
CHECKPOINT_VERSION = 1


@dataclass(frozen=True)
class Checkpoint:
    """A model rebuilt from a file, with what was saved beside it."""

    model: Transformer
    task: ToyTask | None
    history: TrainHistory | None
    meta: dict


def _snapshot_to_dict(s: AttentionSnapshot, dtype: torch.dtype) -> dict:
    d = {f.name: getattr(s, f.name) for f in fields(s)}
    return {
        k: (v.to(dtype) if isinstance(v, Tensor) and v.is_floating_point() else v)
        for k, v in d.items()
    }


def save_checkpoint(
    path: str | Path,
    model: Transformer,
    *,
    task: ToyTask | None = None,
    history: TrainHistory | None = None,
    meta: dict | None = None,
    half: bool = False,
) -> Path:
    """Write weights + config (+ task, history, meta) to `path`; half=True stores float16."""
    for key, value in (meta or {}).items():
        if type(value) not in (str, int, float, bool, type(None)):
            raise TypeError(
                f"meta: values must be str, int, float, bool or None, got {type(value).__name__} "
                f"for {key!r}"
            )
    dtype = torch.float16 if half else torch.float32
    state = {
        k: (v.to(dtype) if v.is_floating_point() else v) for k, v in model.state_dict().items()
    }
    payload = {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "config": asdict(model.config),
        "state_dict": state,
        "task": None if task is None else asdict(task),
        "meta": dict(meta or {}),
        "history": None,
    }
    if history is not None:
        payload["history"] = {
            "steps": list(history.steps),
            "loss": list(history.loss),
            "token_accuracy": list(history.token_accuracy),
            "eval_steps": list(history.eval_steps),
            "eval_accuracy": list(history.eval_accuracy),
            "snapshots": [_snapshot_to_dict(s, dtype) for s in history.snapshots],
            "seconds": history.seconds,
        }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(payload, path)
    return path


def load_checkpoint(path: str | Path, *, expect: TransformerConfig | None = None) -> Checkpoint:
    """Rebuild the model saved at `path` (in eval mode, float32).

    Raises:
        FileNotFoundError: no file at `path`.
        WeightFileError (a ValueError): the file is truncated, damaged or not a checkpoint of
            this course (the message names it and how to get a good one).
        ValueError: its config differs from `expect` (the differing fields are named).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint: no file at {path}")
    fix = (
        "restore it with `git checkout -- attention/models/toy/reverse.pt` or reinstall the course"
        if path.resolve() == SHIPPED_REVERSE.resolve()
        else "save it again with save_checkpoint"
    )
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise WeightFileError(
            f"checkpoint: {path} holds objects other than tensors and plain values, so "
            "torch.load(weights_only=True) refuses it; load_checkpoint reads save_checkpoint files"
        ) from exc
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - a text file gives KeyError, a cut zip BadZipFile...
        said = (str(exc).strip().splitlines() or [type(exc).__name__])[0].split(". ")[0]
        raise WeightFileError(
            f"checkpoint: {path} is truncated or corrupt ({path.stat().st_size} bytes), "
            f"torch.load said: {type(exc).__name__}: {said}; {fix}"
        ) from None
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise WeightFileError(f"checkpoint: {path} is not a checkpoint saved by save_checkpoint")
    try:
        return _rebuild(payload, path, expect)
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, IndexError) as exc:
        if isinstance(exc, _ConfigMismatch):
            raise ValueError(str(exc)) from None
        said = f"no key {exc}" if type(exc) is KeyError else f"{type(exc).__name__}: {exc}"
        raise WeightFileError(
            f"checkpoint: {path} is damaged: {said.splitlines()[0][:200]}; {fix}"
        ) from None


class _ConfigMismatch(ValueError):
    pass


def _rebuild(payload: dict, path: Path, expect: TransformerConfig | None) -> Checkpoint:
    config = TransformerConfig(**payload["config"])
    if expect is not None and expect != config:
        diffs = [
            f"{f.name}={getattr(config, f.name)!r} in the file, "
            f"{getattr(expect, f.name)!r} expected"
            for f in fields(config)
            if getattr(config, f.name) != getattr(expect, f.name)
        ]
        raise _ConfigMismatch(f"checkpoint: {path} has a different config: " + "; ".join(diffs))
    model = Transformer(config)
    state = {
        k: (v.float() if v.is_floating_point() else v) for k, v in payload["state_dict"].items()
    }
    model.load_state_dict(state)
    model.eval()
    task = None if payload["task"] is None else ToyTask(**payload["task"])
    history = None
    if payload["history"] is not None:
        h = dict(payload["history"])
        snaps = [
            AttentionSnapshot(
                **{
                    k: (v.float() if isinstance(v, Tensor) and v.is_floating_point() else v)
                    for k, v in s.items()
                }
            )
            for s in h.pop("snapshots")
        ]
        history = TrainHistory(**h, snapshots=snaps)
    return Checkpoint(model=model, task=task, history=history, meta=payload["meta"])


def load_reverse_model() -> Checkpoint:
    """The pre-trained reverse-task checkpoint shipped with the course."""
    return load_checkpoint(SHIPPED_REVERSE)
