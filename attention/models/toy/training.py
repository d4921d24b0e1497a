"""Train the encoder-decoder on a toy task with teacher forcing; watch, stop, save, reload.

One training step: the decoder reads tgt_in (the answer shifted right) under a causal mask, the
encoder reads src under a padding mask (both masks come from the model), and the loss is the
cross-entropy of the logits against tgt_out over the real (non-PAD) positions only.

    trainer = Trainer(model, task, TrainConfig(steps=500))
    history = trainer.run(callback=show)   # Ctrl-C / "interrupt kernel" keeps what was learned;
    history = trainer.run()                # running again resumes where it stopped

Attention snapshots live in `snapshots.py` beside this module, checkpoints in `checkpoints.py`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ...sandbox.limits import check_fields, checked
from ...transformer import Transformer, TransformerConfig
from .data import (
    PAD,
    ToyTask,
    batches,
    heldout_texts,
    make_batch,
    probe_text,
)
from .decoding import exact_match, greedy_decode, pad_to
from .snapshots import AttentionSnapshot, snapshot_attention


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


def _positive_int(name: str, value: int) -> int:
    if value < 1:
        raise ValueError(f"{name}: expected a positive int, got {value}")
    return value


def _positive_float(name: str, value: float) -> float:
    if value <= 0:
        raise ValueError(f"{name}: expected a positive float, got {value}")
    return value


@dataclass(frozen=True)
class TrainConfig:
    """How to train: AdamW with a linear warm-up then a cosine decay to 0."""

    steps: int = checked(500, _positive_int)
    batch_size: int = checked(128, _positive_int)
    lr: float = checked(3e-3, _positive_float)
    warmup: int = 100
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    seed: int = 0
    eval_every: int = 0  # 0: no held-out evaluation during training
    n_eval: int = checked(200, _positive_int)  # held-out strings used by those evaluations
    snapshot_steps: tuple[int, ...] = ()  # steps (0 = before training) to snapshot attention
    snapshot_text: str | None = None  # the example the snapshots look at; None: probe_text

    def __post_init__(self) -> None:
        check_fields(self)


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
