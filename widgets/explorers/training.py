"""Watch a Transformer train: a live progress display, and its attention over training steps.

    progress = TrainingProgress()          # display it, then pass it as the callback:
    trainer.run(callback=progress)         # the bar and both charts update in place
    TrainingAttentionExplorer()            # the shipped reverse model's snapshots, by step
    TrainingAttentionExplorer(history, task)   # or the snapshots of your own run

The charts are the course's SeriesChart (drawn in the browser from the numbers), so an update is
one small message and nothing is rendered in the kernel (headless runs just keep the numbers).
"""

from __future__ import annotations

import html
import math
from typing import Any

import ipywidgets as widgets

from attention.explore import TrainingExploration, TrainingParams, explore_training
from attention.explore.training import snapshot_layers
from attention.models.toy.checkpoints import load_reverse_model
from attention.models.toy.data import ToyTask
from attention.models.toy.decoding import ExposureBiasResult
from attention.models.toy.training import Progress, TrainHistory

from ..views import Heatmap, SeriesChart
from ..views.picture import Pictured
from ..views.style import PALETTE, css
from .base import Explorer
from .controls import menu, steps

LOSS, TRAIN_ACC, HELDOUT_ACC = "train loss", "train token acc.", "held-out exact acc."
_COLORS = {LOSS: PALETTE[0], TRAIN_ACC: PALETTE[1], HELDOUT_ACC: PALETTE[2]}


def log_axis(values: list[float]) -> dict:
    """y_range and y_ticks for a log axis: whole decades around the positive values, with 2 and
    5 in between when the data span two decades or less."""
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    if not positive:
        return {"y_range": [], "y_ticks": []}
    lo, hi = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
    hi = max(hi, lo + 1)
    ticks = [10.0**k for k in range(lo, hi + 1)]
    if hi - lo <= 2:
        ticks = sorted(ticks + [m * 10.0**k for k in range(lo, hi) for m in (2, 5)])
    return {"y_range": [10.0**lo, 10.0**hi], "y_ticks": ticks}


class TrainingProgress(Pictured, widgets.VBox):
    """A progress bar, a one-line readout and live loss / accuracy charts.

    Call it with each `Progress` (pass it as `Trainer.run(callback=...)`). It redraws every
    `every` steps (default: total // 50), at every held-out evaluation and at the end. Each
    point of the training curves is the mean over the steps since the previous point; the
    held-out curve holds the last evaluation until the next one.
    """

    def __init__(self, *, every: int | None = None) -> None:
        self.every = every
        self.bar = widgets.FloatProgress(
            value=0.0,
            min=0.0,
            max=1.0,
            description="step 0",
            style={"description_width": "initial"},
        )
        self.bar.add_class(css("train-bar"))
        self.readout = widgets.HTML("waiting for the first step")
        self.readout.add_class(css("train-readout"))
        self.loss_chart = SeriesChart(name="train-loss", width=360, height=210, y_log=True)
        self.acc_chart = SeriesChart(name="train-accuracy", width=440, height=210)
        self._x: list[int] = []
        self._y: dict[str, list[float | None]] = {n: [] for n in _COLORS}
        self._window: list[tuple[float, float]] = []
        self._held: float | None = None
        self.updates = 0  # redraws so far (tests read it)
        super().__init__(
            [
                widgets.HBox([self.bar, self.readout]),
                widgets.HBox([self.loss_chart, self.acc_chart]),
            ]
        )
        self.add_class(css("training-progress"))

    def series(self, name: str) -> tuple[list[int], list[float | None]]:
        """(steps, values) of one curve: LOSS, TRAIN_ACC or HELDOUT_ACC."""
        if name not in self._y:
            raise ValueError(f"name: expected one of {list(self._y)}, got {name!r}")
        return list(self._x), list(self._y[name])

    def __call__(self, p: Progress) -> None:
        if p.step > 0 and not p.done and not math.isnan(p.loss):
            self._window.append((p.loss, p.token_accuracy))
        if p.heldout_accuracy is not None:
            self._held = p.heldout_accuracy
        every = self.every or max(1, p.total // 50)
        if p.done or p.step % every == 0 or p.heldout_accuracy is not None:
            self._flush(p)

    def _flush(self, p: Progress) -> None:
        if self._window and (not self._x or self._x[-1] != p.step):
            self._x.append(p.step)
            for name, i in ((LOSS, 0), (TRAIN_ACC, 1)):
                self._y[name].append(sum(w[i] for w in self._window) / len(self._window))
            self._y[HELDOUT_ACC].append(self._held)
            self._window = []
        elif self._x and self._x[-1] == p.step:
            self._y[HELDOUT_ACC][-1] = self._held
        text = f"loss {p.loss:.3g} · token acc. {p.token_accuracy:.1%}"
        if self._held is not None:
            text += f" · held-out exact acc. {self._held:.1%}"
        if p.done:
            text += " · stopped early (interrupted)" if p.step < p.total else " · done"
        with self.hold_sync():
            self.bar.value = p.step / max(p.total, 1)
            self.bar.description = f"step {p.step}/{p.total}"
            self.bar.bar_style = "success" if p.done and p.step >= p.total else ""
            self.readout.value = html.escape(text)
        self._draw(p.total)
        self.updates += 1
        if p.done:  # for saved notebooks and the site: the curves at the end, not the start
            self.show_final_picture("the curves when training stopped")

    def _draw(self, total: int) -> None:
        def curve(name: str) -> dict:
            values = [math.nan if v is None else v for v in self._y[name]]  # nan: a gap
            return {"name": name, "values": values, "color": _COLORS[name], "kind": "line"}

        x_range = [0.0, float(total)]
        self.loss_chart.set_data(
            self._x,
            [curve(LOSS)],
            x_range=x_range,
            x_label="step",
            title="loss (log scale)",
            **log_axis([v for v in self._y[LOSS] if v is not None]),
        )
        self.acc_chart.set_data(
            self._x,
            [curve(TRAIN_ACC), curve(HELDOUT_ACC)],
            x_range=x_range,
            y_range=[0.0, 1.0],
            x_label="step",
            title="accuracy",
            legend="right",
        )

    def show_history(self, history: TrainHistory, total: int | None = None) -> None:
        """Draw a finished run (e.g. one loaded from a checkpoint) in one go."""
        total = total or (history.steps[-1] if history.steps else 1)
        evals = dict(zip(history.eval_steps, history.eval_accuracy, strict=True))
        self._x, self._y, self._window, self._held = [], {n: [] for n in _COLORS}, [], None
        for i, (step, loss, acc) in enumerate(
            zip(history.steps, history.loss, history.token_accuracy, strict=True)
        ):
            self(Progress(step, total, loss, acc, evals.get(step), history.seconds, False))
            if i == len(history.steps) - 1:
                self(Progress(step, total, loss, acc, None, history.seconds, True))


# --- attention over training ---------------------------------------------------------------


_KIND_LABELS = {"cross": "cross-attention", "encoder": "encoder self", "decoder": "decoder self"}


class TrainingAttentionExplorer(Explorer):
    """A slider over training steps: every head's attention on one fixed example at that step.

    Args:
        history: a TrainHistory with snapshots; None loads the shipped reverse checkpoint's.
        task: the task of that history (for the token labels); None with the checkpoint.
        kind: "cross" (decoder queries over source keys), "encoder" or "decoder".
        step: the step shown first (default: the last snapshot).

    `result` is the TrainingExploration of `attention.explore.explore_training` for the
    current TrainingParams; the choices of the step slider and the layer menu come from the
    history.
    """

    CONTROLS = (
        steps("step", lambda v: v.snapshot_steps, label="training step", width="300px"),
        menu("kind", [(v, k) for k, v in _KIND_LABELS.items()], label="attention"),
        menu("layer", lambda v: list(range(snapshot_layers(v.history, v.kind)))),
    )

    def __init__(
        self,
        history: TrainHistory | None = None,
        task: ToyTask | None = None,
        *,
        kind: str = "cross",
        step: int | None = None,
    ) -> None:
        if history is None:
            ckpt = load_reverse_model()
            history, task = ckpt.history, ckpt.task
        if history is None or not history.snapshots:
            raise ValueError("history: no attention snapshots; train with snapshot_steps=...")
        if task is None:
            raise ValueError("task: required with a history (it labels the tokens)")
        snapshot_steps = [s.step for s in history.snapshots]
        last = snapshot_layers(history, "cross") - 1  # the last decoder layer is the sharpest
        start = TrainingParams(snapshot_steps[-1] if step is None else step, kind, last)
        history.snapshot_at(start.step)  # refuses a step with no snapshot, naming those there are
        self.history, self.task = history, task
        controls = self.declare(start, snapshot_steps=snapshot_steps, history=history)
        self.play = widgets.Play(
            value=self.step.index,
            min=0,
            max=len(snapshot_steps) - 1,
            interval=700,
            description="play",
        )  # same start as the slider: the link copies the play's value onto the slider
        self.play.add_class(css("play"))
        widgets.jslink((self.play, "value"), (self.step, "index"))
        self.readout = widgets.HTML()
        self.readout.add_class(css("readout"))
        self.heatmap = self.panel(
            "weights", Heatmap(title="", vmin=0.0, vmax=1.0, panel_size=180, columns=2)
        )
        self.heatmap.add_class(css("panel-weights"))
        # the play button above (not a control the explorer watches: it moves the step slider
        # in the browser), the controls in a column, every head's weights beside them
        super().__init__(
            controls=controls,
            principal=self.heatmap,
            beside=[self.readout],
            body=[],
            header=widgets.HBox([self.play]),
        )
        self.refresh()

    def _compute(self, params: TrainingParams) -> TrainingExploration:
        return explore_training(params, self.history, self.task)

    def _draw(self, r: TrainingExploration) -> None:
        heads = r.weights.shape[0]
        what = {
            "cross": "rows: the token each decoder position outputs; columns: source tokens",
            "encoder": "rows and columns: source tokens",
            "decoder": "rows and columns: decoder inputs (hatched: the future, masked)",
        }[r.kind]
        self.heatmap.set_data(
            r.weights,
            masked=r.masked,
            row_labels=r.row_labels,
            col_labels=r.col_labels,
            panel_titles=[f"head {h}" for h in range(heads)],
            title=f"{_KIND_LABELS[r.kind]}, layer {r.layer}, step {r.step}",
        )
        loss = ""
        if 0 < r.step <= len(self.history.loss):
            loss = f" · training loss at this step {self.history.loss[r.step - 1]:.3g}"
        text = f"<b>step {r.step}</b>{loss}<br>{html.escape(what)}"
        if r.on_target is not None:
            per_head = ", ".join(f"{v:.2f}" for v in r.on_target.tolist())
            text += (
                "<br>weight on the source token being output, per head: "
                f"<b>{html.escape(per_head)}</b> (1 = perfectly sharp)"
            )
        self.readout.value = text


def exposure_bias_figure(result: ExposureBiasResult, title: str = "") -> Any:
    """A matplotlib figure of the per-position error rates of `exposure_bias` (made under
    plt.ioff(), so it only appears where you display it)."""
    import matplotlib.pyplot as plt

    positions = list(range(len(result.counts)))
    with plt.ioff():
        fig, ax = plt.subplots(figsize=(6.4, 3.2))
    curves = (
        ("teacher forcing (true prefix)", result.teacher_forcing, "#1f77b4", "o"),
        ("free running (own prefix)", result.free_running, "#ff7f0e", "s"),
        ("free running after a wrong first token", result.corrupted, "#d62728", "^"),
    )
    for label, values, color, marker in curves:
        ax.plot(positions, values.tolist(), label=label, color=color, marker=marker, ms=4)
    ax.set(xlabel="output position t", ylabel="fraction of wrong tokens", ylim=(-0.02, 1.02))
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
