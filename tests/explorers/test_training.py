"""The training views headless: the progress display follows a real run, the explorer's slider
shows the snapshot of the chosen step, the exposure-bias figure draws the measured curves."""

import numpy as np
import pytest
import torch

from attention.models.toy.checkpoints import load_reverse_model
from attention.models.toy.data import ToyTask, heldout_texts, make_batch
from attention.models.toy.decoding import exposure_bias
from attention.models.toy.training import TrainConfig, Trainer, TrainHistory, make_model
from widgets.explorers.training import (
    HELDOUT_ACC,
    LOSS,
    TRAIN_ACC,
    TrainingAttentionExplorer,
    TrainingProgress,
    exposure_bias_figure,
    log_axis,
)

TASK = ToyTask("reverse", max_len=5)


def tiny_trainer(steps=10, **kw):
    model = make_model(TASK, d_model=16, n_heads=2, n_encoder_layers=1, n_decoder_layers=1)
    return Trainer(model, TASK, TrainConfig(steps=steps, batch_size=8, warmup=2, n_eval=20, **kw))


@pytest.fixture(scope="module")
def shipped():
    return load_reverse_model()


def test_progress_follows_a_run():
    trainer = tiny_trainer(eval_every=5)
    progress = TrainingProgress(every=2)
    history = trainer.run(callback=progress)
    xs, loss = progress.series(LOSS)
    assert xs == [2, 4, 5, 6, 8, 10]  # every 2 steps, and at the evaluation of step 5
    windows = [(0, 2), (2, 4), (4, 5), (5, 6), (6, 8), (8, 10)]
    np.testing.assert_allclose(loss, [np.mean(history.loss[a:b]) for a, b in windows])
    _, acc = progress.series(TRAIN_ACC)
    np.testing.assert_allclose(acc[-1], np.mean(history.token_accuracy[8:10]))
    _, held = progress.series(HELDOUT_ACC)
    e5, e10 = history.eval_accuracy
    assert held == [None, None, e5, e5, e5, e10]  # each evaluation held until the next
    assert progress.loss_chart.x == xs and progress.loss_chart.series[0]["values"] == loss
    assert progress.acc_chart.series[1]["values"] == held  # None = a gap before step 5
    assert progress.acc_chart.y_range == [0.0, 1.0] and progress.loss_chart.y_log
    assert progress.bar.value == 1.0 and progress.bar.description == "step 10/10"
    assert progress.bar.bar_style == "success"
    assert progress.readout.value.endswith("· done")
    assert progress.updates == 7  # steps 2, 4, 5, 6, 8, 10 and the final call


def test_progress_reports_an_interrupt():
    trainer = tiny_trainer(steps=10)
    progress = TrainingProgress(every=100)

    def show_then_stop(p):
        progress(p)
        if p.step == 4 and not p.done:
            raise KeyboardInterrupt

    history = trainer.run(callback=show_then_stop)
    assert history.interrupted
    assert progress.bar.value == pytest.approx(0.4) and progress.bar.bar_style == ""
    assert "stopped early (interrupted)" in progress.readout.value
    xs, loss = progress.series(LOSS)
    assert xs == [4] and loss == [pytest.approx(np.mean(history.loss))]


def test_progress_can_draw_a_finished_history(shipped):
    progress = TrainingProgress()
    progress.show_history(shipped.history)
    h = shipped.history
    xs, loss = progress.series(LOSS)
    assert xs[-1] == h.steps[-1] and set(h.eval_steps) <= set(xs)
    _, held = progress.series(HELDOUT_ACC)
    assert [held[xs.index(s)] for s in h.eval_steps] == h.eval_accuracy
    assert progress.bar.value == 1.0 and progress.readout.value.endswith("· done")
    with pytest.raises(ValueError, match=r"name: expected one of \['train loss'"):
        progress.series("nope")


def test_log_axis_ticks_cover_the_data():
    assert log_axis([2.5, 0.03]) == {
        "y_range": [0.01, 10.0],
        "y_ticks": [0.01, 0.1, 1.0, 10.0],
    }
    narrow = log_axis([0.3, 0.9])
    assert narrow["y_range"] == [0.1, 1.0] and narrow["y_ticks"] == [0.1, 0.2, 0.5, 1.0]
    assert log_axis([]) == {"y_range": [], "y_ticks": []}


def test_explorer_slider_shows_the_snapshot_of_that_step(shipped):
    ex = TrainingAttentionExplorer()
    h = shipped.history
    assert list(ex.step.options) == [s.step for s in h.snapshots]
    assert ex.step.value == h.snapshots[-1].step and ex.layer.value == 1
    assert ex.play.value == ex.step.index  # the play/slider link must not reset the slider
    for step in (0, h.snapshots[5].step, h.snapshots[-1].step):
        ex.step.value = step
        want = h.snapshot_at(step).cross[1].numpy()
        np.testing.assert_allclose(ex.heatmap.values, want, rtol=1e-6)
        assert ex.result.step == step and ex.heatmap.title.endswith(f"step {step}")
    first = TrainingAttentionExplorer(step=0).result.on_target
    assert bool((ex.result.on_target > first + 0.2).all())  # the pattern sharpened
    assert "weight on the source token being output" in ex.readout.value
    assert ex.error.message == ""


def test_explorer_kinds_and_layers(shipped):
    ex = TrainingAttentionExplorer(step=0)
    snap = shipped.history.snapshot_at(0)
    ex.kind.value = "encoder"
    ex.layer.value = 0
    np.testing.assert_allclose(ex.heatmap.values, snap.encoder[0].numpy(), rtol=1e-6)
    assert (
        ex.heatmap.row_labels
        == ex.heatmap.col_labels
        == list(shipped.task.tokenizer.token_names(snap.src))
    )
    ex.kind.value = "decoder"
    np.testing.assert_allclose(ex.heatmap.values, snap.decoder_self[0].numpy(), rtol=1e-6)
    assert ex.heatmap.masked[0].tolist() == (~np.tril(np.ones((11, 11), bool))).tolist()
    assert "weight on the source token" not in ex.readout.value


def test_explorer_on_a_fresh_run():
    trainer = tiny_trainer(steps=4, snapshot_steps=(0, 2, 4))
    history = trainer.run()
    ex = TrainingAttentionExplorer(history, TASK, kind="cross", step=2)
    assert list(ex.layer.options) == [0]
    np.testing.assert_allclose(
        ex.heatmap.values, history.snapshot_at(2).cross[0].numpy(), rtol=1e-6
    )
    assert ex.heatmap.values.shape == (2, 6, 5)  # (H, T, S): BOS + 5 outputs, 5 sources


def test_explorer_errors():
    with pytest.raises(ValueError, match="history: no attention snapshots"):
        TrainingAttentionExplorer(TrainHistory(), TASK)
    history = tiny_trainer(steps=1, snapshot_steps=(0,)).run()
    with pytest.raises(ValueError, match="task: required with a history"):
        TrainingAttentionExplorer(history)
    with pytest.raises(
        ValueError, match=r"kind: expected one of \('cross', 'encoder', 'decoder'\)"
    ):
        TrainingAttentionExplorer(history, TASK, kind="self")


def test_exposure_bias_figure_draws_the_curves(shipped):
    import matplotlib

    matplotlib.use("Agg")
    task = shipped.task
    res = exposure_bias(shipped.model, make_batch(task, heldout_texts(task, 50)))
    fig = exposure_bias_figure(res, title="shipped model")
    lines = fig.axes[0].get_lines()
    assert len(lines) == 3
    for line, curve in zip(
        lines, (res.teacher_forcing, res.free_running, res.corrupted), strict=True
    ):
        np.testing.assert_allclose(line.get_ydata(), curve.numpy())
    assert torch.is_tensor(res.counts)
