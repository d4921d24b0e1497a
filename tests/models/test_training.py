"""Training: loss goes down, masks hold, seeds reproduce, interrupts keep the model, snapshots,
checkpoints (round trip and the three errors), and the shipped checkpoint's accuracy."""

import pytest
import torch

from attention.models.toy.checkpoints import (
    SHIPPED_REVERSE,
    load_checkpoint,
    load_reverse_model,
    save_checkpoint,
)
from attention.models.toy.data import EOS, PAD, ToyTask, make_batch, probe_text
from attention.models.toy.snapshots import AttentionSnapshot, snapshot_attention, snapshot_view
from attention.models.toy.training import (
    TrainConfig,
    Trainer,
    evaluate,
    log_spaced_steps,
    lr_factor,
    make_model,
    sequence_loss,
    train,
)

TASK = ToyTask("reverse", max_len=6)


def tiny(seed=0, **kw):
    return make_model(
        TASK, d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, seed=seed, **kw
    )


def quick(steps=6, **kw):
    return TrainConfig(steps=steps, batch_size=16, warmup=2, **kw)


def weights_equal(a, b):
    return all(
        torch.equal(x, y)
        for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )


def test_a_few_steps_make_the_loss_go_down():
    model = tiny()
    batch = make_batch(TASK, ["123456", "9876", "55", "1"])  # a fixed batch to measure on
    with torch.no_grad():
        before = sequence_loss(model(batch.src, batch.tgt_in).logits, batch.tgt_out).item()
    history = train(model, TASK, TrainConfig(steps=30, batch_size=32, warmup=5, lr=3e-3))
    with torch.no_grad():
        after = sequence_loss(model(batch.src, batch.tgt_in).logits, batch.tgt_out).item()
    assert after < 0.85 * before, (before, after)
    assert history.loss[-1] < history.loss[0]
    assert history.steps == list(range(1, 31)) and not history.interrupted
    assert all(0.0 <= a <= 1.0 for a in history.token_accuracy)


def test_sequence_loss_ignores_pad_positions():
    tgt_out = torch.tensor([[4, EOS, PAD], [5, 6, EOS]])
    logits = torch.randn(2, 3, 13)
    noisy = logits.clone()
    noisy[0, 2] += 100 * torch.randn(13)  # the PAD position of sequence 0
    torch.testing.assert_close(sequence_loss(logits, tgt_out), sequence_loss(noisy, tgt_out))
    by_hand = -torch.log_softmax(logits, -1)[[0, 0, 1, 1, 1], [0, 1, 0, 1, 2], [4, EOS, 5, 6, EOS]]
    torch.testing.assert_close(sequence_loss(logits, tgt_out), by_hand.mean())


def test_padded_source_positions_change_no_logit():
    model = tiny(seed=2).eval()
    batch = make_batch(TASK, ["123456", "12"])  # sequence 1 has 4 padded source positions
    pad = batch.src == PAD

    def scramble_padding(_module, _inputs, output):
        return output + 50.0 * torch.randn_like(output) * pad.unsqueeze(-1)

    clean = model(batch.src, batch.tgt_in).logits
    hook = model.src_embed.register_forward_hook(scramble_padding)
    try:
        noisy = model(batch.src, batch.tgt_in).logits
    finally:
        hook.remove()
    torch.testing.assert_close(noisy, clean, atol=1e-5, rtol=1e-5)
    # The same sequence alone, without any padding, gives the same logits too
    alone = model(batch.src[1:, :2], batch.tgt_in[1:, :3]).logits
    torch.testing.assert_close(alone[0], clean[1, :3], atol=1e-5, rtol=1e-5)


def test_a_future_target_token_changes_no_earlier_logit():
    model = tiny(seed=3).eval()
    batch = make_batch(TASK, ["314159"])
    logits = model(batch.src, batch.tgt_in).logits  # (1, T, V)
    changed = batch.tgt_in.clone()
    changed[0, 4] = 3 + (changed[0, 4] - 3 + 5) % 10  # another digit at position 4
    new = model(batch.src, changed).logits
    torch.testing.assert_close(new[:, :4], logits[:, :4], atol=1e-6, rtol=1e-6)
    assert not torch.allclose(new[:, 4], logits[:, 4])  # position 4 itself does see it


def test_same_seed_same_run_other_seed_other_run():
    runs = []
    for seed in (0, 0, 1):
        model = tiny()
        runs.append((model, train(model, TASK, quick(seed=seed))))
    (m0, h0), (m1, h1), (m2, h2) = runs
    assert h0.loss == h1.loss and weights_equal(m0, m1)
    assert h0.loss != h2.loss and not weights_equal(m0, m2)
    assert not weights_equal(tiny(seed=0), tiny(seed=1))  # init seeds differ too


def test_keyboard_interrupt_keeps_the_model_and_resuming_matches_a_full_run():
    full = tiny()
    train(full, TASK, quick(steps=6))

    model = tiny()
    start = {k: v.clone() for k, v in model.state_dict().items()}
    trainer = Trainer(model, TASK, quick(steps=6))
    seen = []

    def stop_at_3(p):
        seen.append((p.step, p.done))
        if p.step == 3 and not p.done:
            raise KeyboardInterrupt

    history = trainer.run(callback=stop_at_3)
    assert history.interrupted and history.steps == [1, 2, 3]
    assert seen[-1] == (3, True)  # the display hears about the stop
    assert any(not torch.equal(start[k], v) for k, v in model.state_dict().items())
    assert model.training  # the mode it was in before

    history = trainer.run()
    assert not history.interrupted and history.steps == list(range(1, 7))
    assert weights_equal(model, full)


def test_snapshots_at_chosen_steps():
    model = tiny()
    fresh = snapshot_attention(model, make_batch(TASK, [probe_text(TASK)]), 0)
    history = train(model, TASK, quick(steps=5, snapshot_steps=(0, 2, 5)))
    assert [s.step for s in history.snapshots] == [0, 2, 5]
    s0 = history.snapshot_at(0)
    torch.testing.assert_close(s0.cross, fresh.cross)
    assert s0.encoder.shape == (1, 2, 6, 6)  # (L, H, S, S)
    assert s0.decoder_self.shape == (1, 2, 7, 7)  # BOS + 6 symbols
    assert s0.cross.shape == (1, 2, 7, 6)
    torch.testing.assert_close(s0.cross.sum(-1), torch.ones(1, 2, 7))
    assert not torch.equal(history.snapshot_at(5).cross, s0.cross)
    with pytest.raises(ValueError, match=r"step: no snapshot at 3; have \[0, 2, 5\]"):
        history.snapshot_at(3)


def test_snapshot_view_measures_weight_on_the_right_source_token():
    src = torch.tensor([4, 5, 6])  # "123"
    tgt_in = torch.tensor([1, 6, 5, 4])  # BOS "321"
    cross = torch.zeros(1, 1, 4, 3)
    cross[0, 0, 0] = torch.tensor([0.0, 0.0, 1.0])  # predicts "3" -> looks at "3": right
    cross[0, 0, 1] = torch.tensor([0.5, 0.5, 0.0])  # predicts "2": half right
    cross[0, 0, 2] = torch.tensor([0.0, 1.0, 0.0])  # predicts "1" but looks at "2": wrong
    cross[0, 0, 3] = torch.tensor([1.0, 0.0, 0.0])  # predicts EOS: not scored
    snap = AttentionSnapshot(
        3, src, tgt_in, torch.zeros(1, 1, 3, 3), torch.zeros(1, 1, 4, 4), cross
    )
    view = snapshot_view(snap, TASK.tokenizer, "cross", 0)
    torch.testing.assert_close(view.on_target, torch.tensor([(1.0 + 0.5 + 0.0) / 3]))
    assert view.row_labels == ("\u21923", "\u21922", "\u21921", "\u2192<eos>")
    assert view.col_labels == ("1", "2", "3")
    dec = snapshot_view(snap, TASK.tokenizer, "decoder", 0)
    assert dec.on_target is None and dec.masked[0].tolist() == [False, True, True, True]
    with pytest.raises(
        ValueError, match=r"kind: expected one of \('cross', 'encoder', 'decoder'\)"
    ):
        snapshot_view(snap, TASK.tokenizer, "both", 0)
    with pytest.raises(ValueError, match="layer: expected 0..0 for encoder, got 1"):
        snapshot_view(snap, TASK.tokenizer, "encoder", 1)


def test_schedule_and_snapshot_steps():
    cfg = TrainConfig(steps=100, warmup=10)
    assert lr_factor(0, cfg) == pytest.approx(0.1)
    assert lr_factor(9, cfg) == pytest.approx(1.0)
    assert lr_factor(10, cfg) == pytest.approx(1.0)
    assert lr_factor(55, cfg) == pytest.approx(0.5)
    assert lr_factor(100, cfg) == pytest.approx(0.0, abs=1e-12)
    steps = log_spaced_steps(1000, 8)
    assert steps[0] == 0 and steps[-1] == 1000 and list(steps) == sorted(set(steps))


def test_config_errors():
    with pytest.raises(ValueError, match="steps: expected a positive int, got 0"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="lr: expected a positive float, got -1"):
        TrainConfig(lr=-1)
    small = make_model(ToyTask(alphabet="digits"))
    with pytest.raises(ValueError, match=r"src_vocab_size=13 is smaller than the task's vocab"):
        Trainer(small, ToyTask(alphabet="letters", max_len=6), quick())


# --- checkpoints ----------------------------------------------------------------------------


@pytest.fixture
def trained(tmp_path):
    model = tiny()
    history = train(model, TASK, quick(snapshot_steps=(0, 6)))
    path = save_checkpoint(
        tmp_path / "ck" / "m.pt", model, task=TASK, history=history, meta={"a": 1}
    )
    return model.eval(), history, path


def test_checkpoint_round_trip(trained):
    model, history, path = trained
    ck = load_checkpoint(path, expect=model.config)
    batch = make_batch(TASK, ["12345", "9"])
    assert ck.model.config == model.config and not ck.model.training
    assert torch.equal(
        ck.model(batch.src, batch.tgt_in).logits, model(batch.src, batch.tgt_in).logits
    )
    assert ck.task == TASK and ck.meta == {"a": 1}
    assert ck.history.loss == history.loss and ck.history.steps == history.steps
    torch.testing.assert_close(ck.history.snapshot_at(6).cross, history.snapshot_at(6).cross)


def test_half_precision_checkpoint_is_smaller_and_close(trained, tmp_path):
    model, history, path = trained
    half = save_checkpoint(tmp_path / "half.pt", model, task=TASK, history=history, half=True)
    assert half.stat().st_size < 0.7 * path.stat().st_size
    ck = load_checkpoint(half)
    assert all(p.dtype == torch.float32 for p in ck.model.parameters())
    batch = make_batch(TASK, ["12345"])
    torch.testing.assert_close(
        ck.model(batch.src, batch.tgt_in).logits,
        model(batch.src, batch.tgt_in).logits,
        atol=0.05,
        rtol=0.01,
    )


def test_checkpoint_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"checkpoint: no file at .*nothing\.pt"):
        load_checkpoint(tmp_path / "nothing.pt")


def test_checkpoint_truncated_file(trained, tmp_path):
    _, _, path = trained
    cut = tmp_path / "cut.pt"
    data = path.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"cut\.pt is truncated or corrupt \(\d+ bytes\)"):
        load_checkpoint(cut)
    cut.write_bytes(b"")
    with pytest.raises(ValueError, match=r"is truncated or corrupt \(0 bytes\)"):
        load_checkpoint(cut)


def test_checkpoint_config_mismatch(trained):
    model, _, path = trained
    other = make_model(TASK, d_model=64).config
    with pytest.raises(
        ValueError, match=r"different config: d_model=32 in the file, 64 expected; n_heads=2"
    ):
        load_checkpoint(path, expect=other)


def test_not_a_checkpoint(tmp_path):
    path = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(3)}, path)
    with pytest.raises(ValueError, match="is not a checkpoint saved by save_checkpoint"):
        load_checkpoint(path)


def test_shipped_checkpoint_is_small_and_accurate():
    assert SHIPPED_REVERSE.stat().st_size < 450_000  # "a few hundred KB at most"
    ck = load_reverse_model()
    assert ck.task == ToyTask("reverse", max_len=10)
    assert len(ck.history.snapshots) >= 8 and ck.history.snapshots[0].step == 0
    result = evaluate(ck.model, ck.task, n=500)
    assert result.exact >= 0.99 and result.token >= result.exact
    assert result.n == 500
