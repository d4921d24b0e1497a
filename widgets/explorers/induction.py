"""InductionExplorer: press Train and watch two heads compose into a copying circuit.

    explorer = InductionExplorer()     # the untrained model: the maps are noise
    explorer.train()                   # train to the step budget here (blocks; draws as it goes)
    explorer.train_button.click()      # or train in a background thread: the kernel stays free

A tiny attention-only Transformer (attention.models.toy.induction) learns to continue sequences
that repeat: the loss on the repeated part sits near ln V, then drops off a cliff when a layer-0
previous-token head and a layer-1 induction head form together (the mark on the loss curve).
Every panel is drawn in the browser from the numbers, so the page keeps up while it trains;
moving any training control starts again from scratch (and, once Train has been pressed,
trains again at once). After training, pick a head in *ablate head* to silence it and see the
loss and the scores move; the K-composition panel shows layer 1's induction score when its
keys no longer read one layer-0 head's output.
"""

from __future__ import annotations

import contextlib
import html
import threading
import time
from typing import Any

import ipywidgets as widgets
import numpy as np

from attention.explore import one_thread
from attention.explore.induction import (
    INDUCTION_HEADS,
    INDUCTION_STEPS,
    INDUCTION_VOCAB,
    MAX_LAYERS,
    POSITIONS,
    InductionExploration,
    InductionParams,
    ablate_options,
    read_run,
    start_run,
)
from attention.models.toy.induction import PHASE_LOSS, InductionRun

from ..views import Heatmap, SeriesChart
from ..views.style import PALETTE, css
from .base import Explorer
from .controls import check, choice, log_slider, menu, slider, steps

REPEAT_MAX = 16  # longest repeat the explorer offers: sequences of 33 tokens, maps of 33 x 33
DRAW_EVERY_S = 0.2  # while training, redraw at most this often (a redraw costs ~10-20 ms)


def settings_of(run: InductionRun) -> dict[str, Any]:
    """The InductionParams fields that reproduce `run`'s task and model."""
    t, c = run.task, run.config
    return {
        "n_layers": c.n_layers,
        "n_heads": c.n_heads,
        "lr": float(c.lr),
        "vocab": t.vocab,
        "min_repeat": t.min_repeat,
        "max_repeat": t.max_repeat,
        "positions": c.positions,
        "layer_norm": c.layer_norm,
        "mlp": c.mlp,
        "seed": c.seed,
    }


class InductionExplorer(Explorer):
    """Train the toy model live; its loss, both scores per head, maps, ablation, K-composition.

    Args:
        run: an InductionRun trained elsewhere (e.g. in a lesson) to show and train on; its
            settings start the controls (the step budget: the smallest that it fits).
        **settings: initial values of any InductionParams field (n_layers, n_heads, lr, vocab,
            min_repeat, max_repeat, positions, layer_norm, mlp, seed, steps, ablate).

    `result` is the InductionExploration of the run as it stands (attention.explore.induction:
    read_run); `run` is the InductionRun itself. `train()` trains to the budget in this call;
    the Train button does it in a background thread and turns into Stop meanwhile.
    """

    CONTROLS = (
        slider("n_layers", 1, MAX_LAYERS, label="layers"),
        menu("n_heads", list(INDUCTION_HEADS), label="heads per layer"),
        log_slider("lr", 3e-4, 1e-2, label="learning rate"),
        slider("vocab", INDUCTION_VOCAB[0], INDUCTION_VOCAB[1], label="vocabulary V"),
        slider("min_repeat", 2, REPEAT_MAX, label="shortest repeat n"),
        slider("max_repeat", lambda v: v.min_repeat, REPEAT_MAX, label="longest repeat n"),
        choice("positions", POSITIONS),
        check("layer_norm", label="LayerNorm"),
        check("mlp", label="MLP after each attention"),
        slider("seed", 0, 99),
        steps("steps", list(INDUCTION_STEPS), label="training steps"),
        menu("ablate", lambda v: ablate_options(v.n_layers, v.n_heads), label="ablate head"),
    )

    def __init__(self, run: InductionRun | None = None, **settings: Any) -> None:
        if run is not None:  # show a run trained elsewhere: its settings, a budget it fits
            budget = min((s for s in INDUCTION_STEPS if s >= run.step), default=run.step)
            settings = {**settings_of(run), "steps": budget, **settings}
        start = InductionParams(**settings)  # validates the settings
        if run is not None and (run.task, run.config) != start.training_key():
            raise ValueError("run: its settings differ from the ones given; leave them out")
        if start.max_repeat > REPEAT_MAX:
            raise ValueError(f"max_repeat: expected at most {REPEAT_MAX}, got {start.max_repeat}")
        if start.steps not in INDUCTION_STEPS:
            raise ValueError(f"steps: expected one of {INDUCTION_STEPS}, got {start.steps}")
        self.run: InductionRun | None = run
        # train on one torch thread: on a busy 2-core machine a second one mostly waits
        # (benchmarks/induction.py prints both)
        self.single_thread = True
        self.live = False  # set by the Train button: a new setting trains again at once
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._new_run = False
        self._lock = threading.RLock()  # one of: a refresh, a training chunk, a draw
        self.draws = 0  # redraws so far (tests read it)
        self.train_button = widgets.Button(
            description="Train", icon="play", tooltip="train from here to the step budget"
        )
        self.train_button.add_class(css("train"))
        self.train_button.on_click(lambda _b: self._button_clicked())
        self.status = widgets.HTML("")
        self.status.add_class(css("status"))
        self.maps = self.panel(
            "maps", Heatmap(vmin=0.0, vmax=1.0, panel_size=150, colorbar_label="weight")
        )
        self.maps.add_class(css("panel-maps"))
        self.loss_chart, self.score_chart, self.curve_chart = (
            self.panel(key, SeriesChart(name=f"induction-{key}", width=380, height=200))
            for key in ("loss", "scores", "curves")
        )
        self.composition = self.panel(  # shown when the model has two layers
            "composition",
            Heatmap(title="", vmin=0.0, vmax=1.0, show_numbers=True, panel_size=160, digits=2),
        )
        self.composition.add_class(css("panel-composition"))
        self.readout = widgets.HTML("")
        self.readout.add_class(css("readout"))
        controls = self.declare(start)
        super().__init__(
            controls=[self.train_button, *controls],
            header=self.status,
            principal=self.maps,  # every head's map: what training and ablation change
            beside=[widgets.VBox([self.loss_chart, self.score_chart, self.curve_chart])],
            body=[
                widgets.HBox(
                    [self.composition, self.readout], layout=widgets.Layout(flex_flow="row wrap")
                )
            ],
        )
        self.refresh()

    # Training -----------------------------------------------------------------------------
    def train(self, *, draw: bool = True) -> InductionExploration:
        """Train the current run up to the step budget in this call, redrawing as it goes
        (`draw=False`: only at the end); a finished run starts again from scratch."""
        self._stop_thread()
        with self._lock:
            self._fresh_if_done()
        self._train_loop(draw=draw)
        return self.result

    def stop(self) -> None:
        """Stop a background training run (it keeps what it learned)."""
        self._stop_thread()
        self._draw_now()

    def _button_clicked(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            self.live = False
            self.stop()
            return
        self.live = True
        self._start_thread()

    def _start_thread(self) -> None:
        self._stop_thread()
        with self._lock:
            self._fresh_if_done()
        self._stop.clear()
        self._thread = threading.Thread(target=self._train_loop, daemon=True)
        self._set_button(running=True)
        self._thread.start()

    def _stop_thread(self) -> None:
        thread = self._thread
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            self._stop.set()
            thread.join()
        self._thread = None
        self._stop.clear()
        self._set_button(running=False)

    def _fresh_if_done(self) -> None:
        if self.run is not None and self.params is not None and self.run.step >= self.params.steps:
            self.run = start_run(self.params)

    def _train_loop(self, draw: bool = True) -> None:
        """Train in chunks of one record (10 steps) until the budget or a stop; redraw."""
        last = time.perf_counter()
        try:
            with one_thread() if self.single_thread else contextlib.nullcontext():
                while not self._stop.is_set():
                    with self._lock:
                        run, params = self.run, self.params
                        if run is None or params is None or run.step >= params.steps:
                            break
                        run.run(min(run.config.record_every, params.steps - run.step))
                    if draw and time.perf_counter() - last >= DRAW_EVERY_S:
                        self._draw_now()
                        last = time.perf_counter()
        except Exception as exc:  # noqa: BLE001 - shown to the learner, not raised
            self.error.show(exc)
        finally:
            if threading.current_thread() is self._thread:
                self._set_button(running=False)
        if not self._stop.is_set():  # a stop for new settings redraws after them
            self._draw_now()

    def _draw_now(self) -> None:
        """Read the run as it stands and redraw every panel (one message)."""
        with self._lock:
            if self.run is None or self.params is None:
                return
            try:
                with self._batch.collect(), one_thread():
                    result = read_run(self.run, self.params)
                    self._draw(result)
            except Exception as exc:  # noqa: BLE001
                self.error.show(exc)
            else:
                self.result = result

    def _set_button(self, *, running: bool) -> None:
        with self.train_button.hold_sync():
            self.train_button.description = "Stop" if running else "Train"
            self.train_button.icon = "stop" if running else "play"

    # The Explorer hooks --------------------------------------------------------------------
    def refresh(self) -> None:
        """Stop any training thread, recompute and redraw; train on if it was training (or, once
        Train was pressed, when the new settings started a fresh run)."""
        if self._busy:
            return
        was_training = self._thread is not None and self._thread.is_alive()
        self._stop_thread()  # before taking the lock: the thread needs it to finish its chunk
        self._new_run = False
        with self._lock:
            super().refresh()
        done = self.run is None or self.params is None or self.run.step >= self.params.steps
        if self.live and (was_training or self._new_run) and not done:
            self._start_thread()

    def _compute(self, params: InductionParams) -> InductionExploration:
        if self.run is None or (self.run.task, self.run.config) != params.training_key():
            self.run = start_run(params)  # new settings: from scratch
            self._new_run = True
        return read_run(self.run, params)

    def _draw(self, r: InductionExploration) -> None:
        self.draws += 1
        self._draw_maps(r)
        self._draw_loss(r)
        self._draw_curves(r)
        self._draw_scores(r)
        self._draw_composition(r)
        self._draw_readout(r)

    def _draw_maps(self, r: InductionExploration) -> None:
        p = r.params
        names = r.head_names
        n_layers, n_heads = p.n_layers, p.n_heads
        shown = r.ablated if r.ablated is not None else r.report  # the maps as they now are
        prev, ind = shown.previous_token.flatten(), shown.induction.flatten()  # (L * H,)
        t = r.maps.shape[-1]
        future = np.triu(np.ones((t, t), bool), 1)  # hatched: a causal head cannot look there
        silenced = "" if r.ablated is None else f", {names[p.ablate]} silenced"
        self.maps.set_data(
            shown.maps.reshape(n_layers * n_heads, t, t),
            masked=future,
            row_labels=r.tokens,
            col_labels=r.tokens,
            panel_titles=[
                f"{name} · prev {a:.2f} · ind {b:.2f}"
                for name, a, b in zip(names, prev.tolist(), ind.tolist(), strict=True)
            ],
            columns=n_heads if n_heads > 1 else n_layers,
            title=f"attention on the example (n = {r.repeat}), step {r.step}{silenced}",
        )

    def _draw_loss(self, r: InductionExploration) -> None:
        top = max([r.ln_vocab * 1.25, *(v for v in r.loss if v == v)])
        self.loss_chart.set_data(
            r.steps,
            [
                {
                    "name": "loss, repeated part",
                    "values": r.loss,
                    "color": PALETTE[0],
                    "kind": "line",
                },
                {
                    "name": "ln V (uniform guess)",
                    "values": [r.ln_vocab] * len(r.steps),
                    "color": PALETTE[2],
                    "kind": "line",
                    "dash": True,
                },
            ],
            x_range=[0.0, float(r.params.steps)],
            y_range=[0.0, float(top)],
            x_label="step",
            y_label="nats",
            title=f"loss on the repeated part (under {PHASE_LOSS:g}: copying)",
            markers=_phase_markers(r),
        )

    def _draw_curves(self, r: InductionExploration) -> None:
        best_prev = r.previous_token[:, 0].amax(-1).tolist()  # (R,) best layer-0 head
        best_ind = r.induction[:, 1:].flatten(1).amax(-1) if r.params.n_layers > 1 else None
        series = [
            {
                "name": "best previous-token score, layer 0",
                "values": best_prev,
                "color": PALETTE[1],
                "kind": "line",
            }
        ]
        if best_ind is not None:
            series.append(
                {
                    "name": "best induction score, layers 1+",
                    "values": best_ind.tolist(),
                    "color": PALETTE[0],
                    "kind": "line",
                }
            )
        else:
            series.append(
                {
                    "name": "induction score, layer 0",
                    "values": r.induction[:, 0].amax(-1).tolist(),
                    "color": PALETTE[0],
                    "kind": "line",
                }
            )
        self.curve_chart.set_data(
            r.steps,
            series,
            x_range=[0.0, float(r.params.steps)],
            y_range=[0.0, 1.4],  # room above 1 for the legend
            y_ticks=[0.0, 0.25, 0.5, 0.75, 1.0],
            x_label="step",
            title="scores over training",
            markers=_phase_markers(r),
            legend="top-left",
        )

    def _draw_scores(self, r: InductionExploration) -> None:
        names = r.head_names
        series = [
            {
                "name": "previous-token",
                "values": r.report.previous_token.flatten().tolist(),
                "color": PALETTE[1],
                "kind": "bar",
            },
            {
                "name": "induction",
                "values": r.report.induction.flatten().tolist(),
                "color": PALETTE[0],
                "kind": "bar",
            },
        ]
        title = "scores per head"
        if r.ablated is not None:
            series.append(
                {
                    "name": "induction, ablated",
                    "values": r.ablated.induction.flatten().tolist(),
                    "color": PALETTE[3],
                    "kind": "bar",
                }
            )
            title += f" ({names[r.params.ablate]} silenced)"
        self.score_chart.set_data(
            list(range(len(names))),
            series,
            x_ticks=[float(i) for i in range(len(names))],
            x_tick_labels=names,
            x_range=[-0.5, len(names) - 0.5],
            y_range=[0.0, 1.0],
            bar_mode="group",
            title=title,
            legend="top-left",
        )

    def _draw_composition(self, r: InductionExploration) -> None:
        if r.composition is None:
            self.composition.layout.display = "none"
            return
        self.composition.layout.display = None
        h = r.params.n_heads
        self.composition.set_data(
            r.composition,
            row_labels=[f"L1 H{i}" for i in range(h)],
            col_labels=[f"no L0 H{i}" for i in range(h)] + ["as trained"],
            title="K-composition: layer 1's induction score when its keys miss an L0 head",
        )

    def _draw_readout(self, r: InductionExploration) -> None:
        p = r.params
        lines = [
            f"<b>step {r.step}</b> of {p.steps} · {r.seconds:.1f} s of training · "
            f"loss on the repeated part <b>{r.report.loss:.2f}</b> nats (ln V = {r.ln_vocab:.2f})",
        ]
        if r.phase_step is not None:
            lines.append(f"phase change at step <b>{r.phase_step}</b> (loss under {PHASE_LOSS:g})")
        else:
            lines.append("no phase change yet")
        if p.min_repeat == p.max_repeat:
            lines.append(
                f"every sequence repeats after n = {p.min_repeat}: the fixed-length trap "
                "(a position alone finds the token to copy)"
            )
        if r.ablated is not None:
            name = r.head_names[p.ablate]
            lines.append(
                f"{html.escape(name)} silenced: loss {r.report.loss:.2f} → "
                f"<b>{r.ablated.loss:.2f}</b>; best induction score "
                f"{float(r.report.induction.max()):.2f} → "
                f"<b>{float(r.ablated.induction.max()):.2f}</b>"
            )
        self.readout.value = "<br>".join(lines)
        self.status.value = html.escape(
            f"step {r.step}/{p.steps} · loss {r.report.loss:.2f}"
            + (f" · phase change at step {r.phase_step}" if r.phase_step is not None else "")
        )


def _phase_markers(r: InductionExploration) -> list[dict]:
    """A marker at the phase change, once there is one."""
    if r.phase_step is None:
        return []
    return [{"x": float(r.phase_step), "label": f"phase change ({r.phase_step})"}]
