"""Train the encoder-decoder on a toy task with teacher forcing; watch, stop, save, reload.

One training step: the decoder reads tgt_in (the answer shifted right) under a causal mask, the
encoder reads src under a padding mask (both masks come from the model), and the loss is the
cross-entropy of the logits against tgt_out over the real (non-PAD) positions only.

    trainer = Trainer(model, task, TrainConfig(steps=500))
    history = trainer.run(callback=show)   # Ctrl-C / "interrupt kernel" keeps what was learned;
    history = trainer.run()                # running again resumes where it stopped

A checkpoint is one torch file with the weights, the model config, the task and a summary of
the training (loss curve, attention snapshots); `load_checkpoint` rebuilds the model from it.
"""

from __future__ import annotations

import math
import pickle
import time
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
from torch import Tensor

from .decoding import exact_match, greedy_decode, pad_to
from .toydata import (
    EOS,
    PAD,
    Batch,
    Tokenizer,
    ToyTask,
    batches,
    heldout_texts,
    make_batch,
    probe_text,
)
from .transformer import Transformer, TransformerConfig

SHIPPED_REVERSE = Path(__file__).parent / "data" / "reverse.pt"
CHECKPOINT_FORMAT = "attention-course/transformer-checkpoint"
CHECKPOINT_VERSION = 1


def make_model(task: ToyTask, *, seed: int = 0, **sizes) -> Transformer:
    """A Transformer sized for a toy task, initialised from `seed`; `sizes` override the config.

    Defaults: d_model=48, 4 heads, 2 encoder and 2 decoder layers, pre-LN (it trains stably at
    the high learning rates that make CPU training quick), max_len = task.max_len + 2.

    The core starts the embeddings at std 1/sqrt(d_model), so that after the sqrt(d_model)
    scaling they are the size of the positional encoding. With PyTorch's default N(0, 1) they
    would drown the positions, which reversal needs most: at d_model=64 that run needed about
    1500 steps to reach 99% instead of about 600.
    """
    v = task.tokenizer.vocab_size
    kw = dict(d_model=48, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, norm_first=True)
    kw.update(max_len=task.max_len + 2, pad_id=PAD)
    kw.update(sizes)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Transformer(TransformerConfig(src_vocab_size=v, tgt_vocab_size=v, **kw))


def sequence_loss(logits: Tensor, tgt_out: Tensor) -> Tensor:
    """Mean cross-entropy over the real target tokens: logits (B, T, V), tgt_out (B, T)."""
    v = logits.shape[-1]
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, v), tgt_out.reshape(-1), ignore_index=PAD
    )


@dataclass(frozen=True)
class TrainConfig:
    """How to train: AdamW with a linear warm-up then a cosine decay to 0."""

    steps: int = 500
    batch_size: int = 128
    lr: float = 3e-3
    warmup: int = 100
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    seed: int = 0
    eval_every: int = 0  # 0: no held-out evaluation during training
    n_eval: int = 200  # held-out strings used by those evaluations
    snapshot_steps: tuple[int, ...] = ()  # steps (0 = before training) to snapshot attention
    snapshot_text: str | None = None  # the example the snapshots look at; None: probe_text

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "n_eval"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: expected a positive int, got {getattr(self, name)}")
        if self.lr <= 0:
            raise ValueError(f"lr: expected a positive float, got {self.lr}")


def lr_factor(step: int, config: TrainConfig) -> float:
    """Multiplier of the base learning rate at a step: warm-up, then cosine down to 0."""
    if step < config.warmup:
        return (step + 1) / config.warmup
    done = (step - config.warmup) / max(1, config.steps - config.warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(done, 1.0)))


def log_spaced_steps(total: int, n: int = 12) -> tuple[int, ...]:
    """About n snapshot steps from 0 to total, dense early (attention changes fastest there)."""
    grid = {0, total} | {round(total ** (i / (n - 1))) for i in range(n - 1)}
    return tuple(sorted(s for s in grid if 0 <= s <= total))


@dataclass(frozen=True)
class AttentionSnapshot:
    """Attention of the model on one fixed example (teacher forced) at one training step."""

    step: int
    src: Tensor  # (S,) source ids
    tgt_in: Tensor  # (T,) decoder input ids (BOS + answer)
    encoder: Tensor  # (L_enc, H, S, S) encoder self-attention
    decoder_self: Tensor  # (L_dec, H, T, T) masked decoder self-attention
    cross: Tensor  # (L_dec, H, T, S) decoder queries over encoder keys


@torch.no_grad()
def snapshot_attention(model: Transformer, batch: Batch, step: int) -> AttentionSnapshot:
    """Record every attention map of the first example of `batch` (teacher forcing)."""
    was_training = model.training
    model.eval()
    out = model(batch.src[:1], batch.tgt_in[:1])
    model.train(was_training)
    return AttentionSnapshot(
        step=step,
        src=batch.src[0].clone(),
        tgt_in=batch.tgt_in[0].clone(),
        encoder=torch.stack([r.self_attn.weights[0] for r in out.encoder.layers]),
        decoder_self=torch.stack([r.self_attn.weights[0] for r in out.decoder.layers]),
        cross=torch.stack([r.cross_attn.weights[0] for r in out.decoder.layers]),
    )


SNAPSHOT_KINDS = ("cross", "encoder", "decoder")


@dataclass(frozen=True)
class SnapshotView:
    """One attention map of a snapshot, per head, labelled for a heatmap."""

    step: int
    kind: str  # "cross", "encoder" (self) or "decoder" (masked self)
    layer: int
    weights: Tensor  # (H, Tq, Tk)
    row_labels: tuple[str, ...]  # queries; for cross-attention the token each row predicts
    col_labels: tuple[str, ...]  # keys
    masked: Tensor  # (Tq, Tk) bool, True where the query could not attend (causal mask)
    on_target: Tensor | None  # (H,) cross only: mean weight on the source token being output


def snapshot_view(
    snapshot: AttentionSnapshot, tokenizer: Tokenizer, kind: str = "cross", layer: int = 0
) -> SnapshotView:
    """Pick one map of a snapshot and measure how much cross-attention lands where it should.

    For cross-attention, row t predicts tgt_out[t]; the "right" source positions are those that
    hold that token, and `on_target` is the weight they receive, averaged over the rows that
    output a symbol (EOS rows excluded). Uniform attention over n source tokens gives 1/n; for
    reversal the right cells form the anti-diagonal, and training moves weight onto them.
    """
    maps = {"cross": snapshot.cross, "encoder": snapshot.encoder, "decoder": snapshot.decoder_self}
    if kind not in maps:
        raise ValueError(f"kind: expected one of {SNAPSHOT_KINDS}, got {kind!r}")
    n_layers = maps[kind].shape[0]
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer: expected 0..{n_layers - 1} for {kind}, got {layer}")
    weights = maps[kind][layer]  # (H, Tq, Tk)
    src = tokenizer.token_names(snapshot.src)
    tgt_in = tokenizer.token_names(snapshot.tgt_in)
    tgt_out = torch.cat([snapshot.tgt_in[1:], torch.tensor([EOS])])  # (T,)
    predicts = tuple(f"\u2192{name}" for name in tokenizer.token_names(tgt_out))
    rows, cols = {"cross": (predicts, src), "encoder": (src, src), "decoder": (tgt_in, tgt_in)}[
        kind
    ]
    tq, tk = weights.shape[-2:]
    masked = torch.zeros(tq, tk, dtype=torch.bool)
    if kind == "decoder":
        masked = ~torch.ones(tq, tk, dtype=torch.bool).tril()
    on_target = None
    if kind == "cross":
        rows_used = tgt_out != EOS  # (T,)
        expected = (snapshot.src[None, :] == tgt_out[:, None]) & rows_used[:, None]  # (T, S)
        mass = (weights * expected).sum(-1)  # (H, T)
        on_target = mass[:, rows_used].mean(-1)  # (H,)
    return SnapshotView(
        snapshot.step, kind, layer, weights, tuple(rows), tuple(cols), masked, on_target
    )


@dataclass(frozen=True)
class EvalResult:
    exact: float  # fraction of sequences decoded exactly right (free running)
    token: float  # fraction of target tokens (EOS included) right
    n: int  # sequences evaluated


@torch.no_grad()
def evaluate(
    model: Transformer, task: ToyTask, *, n: int = 1000, seed: int = 1234, batch_size: int = 500
) -> EvalResult:
    """Exact-sequence accuracy of greedy decoding on n held-out strings the model never saw."""
    was_training = model.training
    model.eval()
    texts = heldout_texts(task, n, seed=seed)
    exact = tokens = total_tokens = 0
    for i in range(0, n, batch_size):
        batch = make_batch(task, texts[i : i + batch_size])
        t = batch.tgt_out.shape[1]
        pred = greedy_decode(model, batch.src, max_steps=t).tokens
        exact += int(exact_match(pred, batch.tgt_out).sum())
        real = batch.tgt_out != PAD
        tokens += int(((pad_to(pred, t) == batch.tgt_out) & real).sum())
        total_tokens += int(real.sum())
    model.train(was_training)
    return EvalResult(exact=exact / n, token=tokens / total_tokens, n=n)


@dataclass(frozen=True)
class Progress:
    """What a progress display receives after every step."""

    step: int  # steps done so far
    total: int  # steps planned
    loss: float  # this step's training loss
    token_accuracy: float  # this batch's teacher-forced token accuracy
    heldout_accuracy: float | None  # exact-sequence accuracy, when evaluated at this step
    seconds: float  # wall time since this run() started
    done: bool  # the last call of a run (finished or interrupted)


@dataclass
class TrainHistory:
    """Curves and snapshots of a training run (grows when a Trainer resumes)."""

    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    token_accuracy: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    eval_accuracy: list[float] = field(default_factory=list)
    snapshots: list[AttentionSnapshot] = field(default_factory=list)
    interrupted: bool = False
    seconds: float = 0.0  # wall time spent in run()

    def snapshot_at(self, step: int) -> AttentionSnapshot:
        """The snapshot taken at `step` (ValueError listing the steps available)."""
        for s in self.snapshots:
            if s.step == step:
                return s
        raise ValueError(f"step: no snapshot at {step}; have {[s.step for s in self.snapshots]}")


class Trainer:
    """Owns the model, optimiser and data stream, so a stopped run can resume exactly.

    The data generator is seeded from config.seed and so is torch's global generator
    (dropout, if any), at construction.
    """

    def __init__(self, model: Transformer, task: ToyTask, config: TrainConfig) -> None:
        if model.config.src_vocab_size < task.tokenizer.vocab_size:
            raise ValueError(
                f"model: src_vocab_size={model.config.src_vocab_size} is smaller than the "
                f"task's vocabulary ({task.tokenizer.vocab_size})"
            )
        self.model, self.task, self.config = model, task, config
        torch.manual_seed(config.seed)
        self._data = batches(
            task, config.batch_size, generator=torch.Generator().manual_seed(config.seed)
        )
        self.optimizer = torch.optim.AdamW(
            model.parameters(), lr=config.lr, betas=(0.9, 0.98), weight_decay=config.weight_decay
        )
        self.step = 0
        self.history = TrainHistory()
        self._probe = make_batch(task, [config.snapshot_text or probe_text(task)])
        self._eval_texts = heldout_texts(task, config.n_eval, seed=config.seed + 1)

    def _maybe_snapshot(self) -> None:
        if self.step in self.config.snapshot_steps:
            if not self.history.snapshots or self.history.snapshots[-1].step != self.step:
                self.history.snapshots.append(
                    snapshot_attention(self.model, self._probe, self.step)
                )

    def _train_step(self) -> tuple[float, float]:
        batch = next(self._data)
        for group in self.optimizer.param_groups:
            group["lr"] = self.config.lr * lr_factor(self.step, self.config)
        logits = self.model(batch.src, batch.tgt_in).logits  # (B, T, V)
        loss = sequence_loss(logits, batch.tgt_out)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
        self.optimizer.step()
        real = batch.tgt_out != PAD
        right = (logits.detach().argmax(-1) == batch.tgt_out) & real
        return loss.item(), (right.sum() / real.sum()).item()

    def _heldout_accuracy(self) -> float:
        self.model.eval()
        batch = make_batch(self.task, self._eval_texts)
        pred = greedy_decode(self.model, batch.src, max_steps=batch.tgt_out.shape[1]).tokens
        self.model.train()
        return exact_match(pred, batch.tgt_out).float().mean().item()

    def run(self, callback: Callable[[Progress], None] | None = None) -> TrainHistory:
        """Train until config.steps; a KeyboardInterrupt stops cleanly and keeps the model.

        `callback(progress)` is called after every step and once more at the end
        (progress.done). Returns the history (also at self.history). An interrupt raised between
        steps (e.g. by the callback) resumes exactly; Ctrl-C usually lands inside a step, whose
        update may then be dropped or partly applied: the model stays usable either way.
        """
        h, cfg = self.history, self.config
        h.interrupted = False
        start = time.perf_counter()
        was_training = self.model.training
        self.model.train()
        loss = acc = float("nan")
        try:
            self._maybe_snapshot()
            while self.step < cfg.steps:
                loss, acc = self._train_step()
                self.step += 1
                h.steps.append(self.step)
                h.loss.append(loss)
                h.token_accuracy.append(acc)
                held = None
                if cfg.eval_every and (self.step % cfg.eval_every == 0 or self.step == cfg.steps):
                    held = self._heldout_accuracy()
                    h.eval_steps.append(self.step)
                    h.eval_accuracy.append(held)
                self._maybe_snapshot()
                if callback is not None:
                    callback(
                        Progress(
                            self.step,
                            cfg.steps,
                            loss,
                            acc,
                            held,
                            time.perf_counter() - start,
                            False,
                        )
                    )
        except KeyboardInterrupt:
            h.interrupted = True
        finally:
            self.model.train(was_training)
            h.seconds += time.perf_counter() - start
        if callback is not None:
            held = h.eval_accuracy[-1] if h.eval_steps and h.eval_steps[-1] == self.step else None
            callback(
                Progress(self.step, cfg.steps, loss, acc, held, time.perf_counter() - start, True)
            )
        return h


def train(
    model: Transformer,
    task: ToyTask,
    config: TrainConfig,
    callback: Callable[[Progress], None] | None = None,
) -> TrainHistory:
    """Train `model` in place (see Trainer.run); returns the history."""
    return Trainer(model, task, config).run(callback)


# --- checkpoints ----------------------------------------------------------------------------


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
        ValueError: the file is truncated or not a checkpoint of this course, or its config
            differs from `expect` (the differing fields are named).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint: no file at {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise ValueError(
            f"checkpoint: {path} holds objects other than tensors and plain values, so "
            "torch.load(weights_only=True) refuses it; load_checkpoint reads save_checkpoint files"
        ) from exc
    except (RuntimeError, EOFError, OSError, zipfile.BadZipFile, ValueError) as exc:
        said = (str(exc).strip().splitlines() or [type(exc).__name__])[0].split(". ")[0]
        raise ValueError(
            f"checkpoint: {path} is truncated or corrupt ({path.stat().st_size} bytes), "
            f"torch.load said: {said}; save it again"
        ) from exc
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"checkpoint: {path} is not a checkpoint saved by save_checkpoint")
    config = TransformerConfig(**payload["config"])
    if expect is not None and expect != config:
        diffs = [
            f"{f.name}={getattr(config, f.name)!r} in the file, "
            f"{getattr(expect, f.name)!r} expected"
            for f in fields(config)
            if getattr(config, f.name) != getattr(expect, f.name)
        ]
        raise ValueError(f"checkpoint: {path} has a different config: " + "; ".join(diffs))
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
