"""Greedy decoding: cached == uncached, free running == teacher forcing on its own output,
the exposure-bias experiment, and the shipped model's behaviour."""

import pytest
import torch

from attention.models.toy.checkpoints import load_reverse_model
from attention.models.toy.data import BOS, EOS, PAD, ToyTask, heldout_texts, make_batch, shift_right
from attention.models.toy.decoding import (
    compare_teacher_forcing,
    exact_match,
    exposure_bias,
    greedy_decode,
    pad_to,
    teacher_forced_tokens,
)
from attention.models.toy.training import TrainConfig, make_model, train

TASK = ToyTask("reverse")


@pytest.fixture(scope="module")
def shipped():
    return load_reverse_model().model


def tiny_model(seed=0):
    return make_model(TASK, d_model=32, n_heads=2, seed=seed).eval()


def test_cached_and_uncached_decoding_agree_on_tokens_and_weights():
    model = tiny_model()
    src = make_batch(TASK, ["31", "4159265", "9"]).src  # padded sources
    fast = greedy_decode(model, src, max_steps=8, use_cache=True)
    slow = greedy_decode(model, src, max_steps=8, use_cache=False)
    assert torch.equal(fast.tokens, slow.tokens)
    torch.testing.assert_close(fast.logits, slow.logits, atol=1e-5, rtol=1e-5)
    for a, b in zip(
        fast.self_weights + fast.cross_weights, slow.self_weights + slow.cross_weights, strict=True
    ):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    assert len(fast.self_weights) == 2 and fast.cross_weights[0].shape == (3, 2, 8, 7)


def test_cached_and_uncached_agree_on_the_trained_model(shipped):
    batch = make_batch(TASK, heldout_texts(TASK, 64))
    fast = greedy_decode(shipped, batch.src, use_cache=True)
    slow = greedy_decode(shipped, batch.src, use_cache=False)
    assert torch.equal(fast.tokens, slow.tokens)
    for a, b in zip(fast.cross_weights, slow.cross_weights, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_free_running_attention_equals_teacher_forcing_on_its_own_output():
    # Stacking each step's attention row gives the matrices of one parallel pass over the
    # generated sequence: the causal mask makes the two computations the same.
    model = tiny_model(seed=3)
    src = make_batch(TASK, ["2718", "28"]).src
    out = greedy_decode(model, src, max_steps=6)
    raw = out.tokens.masked_fill(out.tokens == PAD, EOS)  # what was fed after EOS is irrelevant
    tf = model(src, shift_right(raw))
    for t in range(out.tokens.shape[1]):
        alive = out.lengths > t
        for layer in range(2):
            torch.testing.assert_close(
                out.cross_weights[layer][alive, :, t],
                tf.decoder.layers[layer].cross_attn.weights[alive, :, t],
                atol=1e-6,
                rtol=1e-5,
            )
            torch.testing.assert_close(
                out.self_weights[layer][alive, :, t],
                tf.decoder.layers[layer].self_attn.weights[alive, :, t],
                atol=1e-6,
                rtol=1e-5,
            )


def test_forced_tokens_reproduce_teacher_forcing_logits():
    model = tiny_model(seed=1)
    batch = make_batch(TASK, ["123", "45"])
    t = batch.tgt_out.shape[1]
    forced = greedy_decode(model, batch.src, max_steps=t, forced=batch.tgt_out)
    want = model(batch.src, batch.tgt_in).logits
    real = batch.tgt_out != PAD
    assert torch.equal(forced.tokens, batch.tgt_out)
    torch.testing.assert_close(forced.logits[real], want[real], atol=1e-5, rtol=1e-5)


def test_greedy_never_emits_pad_or_bos_and_pads_after_eos():
    model = tiny_model()
    with torch.no_grad():
        model.generator.bias.zero_()
        model.generator.bias[PAD] = 100.0  # the raw argmax would always be PAD
        model.generator.bias[BOS] = 90.0
        model.generator.bias[EOS] = 80.0  # so EOS wins among the allowed tokens
    out = greedy_decode(model, make_batch(TASK, ["12", "3"]).src, max_steps=5)
    assert out.tokens.tolist() == [[EOS], [EOS]]  # stopped as soon as every row ended
    assert out.lengths.tolist() == [1, 1]


def test_rows_after_eos_are_pad_and_zero_weights():
    model = tiny_model()
    with torch.no_grad():
        model.generator.bias.zero_()
    src = make_batch(TASK, ["12", "3"]).src
    first = greedy_decode(model, src, max_steps=4).tokens[:, 0]
    eos_first_row = torch.tensor([[EOS], [first[1].item()]])  # row 0 ends at once
    out = greedy_decode(model, src, max_steps=4, forced=eos_first_row)
    assert out.lengths[0] == 1
    assert out.tokens[0, 1:].eq(PAD).all()
    assert out.cross_weights[0][0, :, 1:].eq(0).all()
    torch.testing.assert_close(out.cross_weights[0][0, :, 0].sum(-1), torch.ones(2))


def test_greedy_errors():
    model = tiny_model()
    src = make_batch(TASK, ["12"]).src
    with pytest.raises(ValueError, match=r"forced: expected shape \(1, P\), got \(2, 1\)"):
        greedy_decode(model, src, forced=torch.ones(2, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="max_steps: expected a positive int, got 0"):
        greedy_decode(model, src, max_steps=0)


def test_exact_match_and_pad_to():
    target = torch.tensor([[5, 6, EOS, PAD], [7, EOS, PAD, PAD]])
    pred = torch.tensor([[5, 6, EOS], [7, 8, EOS]])
    assert exact_match(pred, target).tolist() == [True, False]
    assert exact_match(torch.tensor([[5, 6, 7, EOS, PAD]]), target[:1]).tolist() == [False]
    assert pad_to(pred, 5).tolist()[0] == [5, 6, EOS, PAD, PAD]
    assert pad_to(pred, 2).shape == (2, 2)


def test_shipped_model_reverses_held_out_strings(shipped):
    batch = make_batch(TASK, heldout_texts(TASK, 200, seed=7))
    cmp = compare_teacher_forcing(shipped, batch)
    assert cmp.exact_free_running >= 0.98
    assert cmp.exact_teacher_forced >= cmp.exact_free_running - 0.01
    assert torch.equal(cmp.target, batch.tgt_out)
    tf = teacher_forced_tokens(shipped, batch)
    assert torch.equal(tf, cmp.teacher_forced) and tf[batch.tgt_out == PAD].eq(PAD).all()


def test_exposure_bias_measures_per_position_errors(shipped):
    batch = make_batch(TASK, heldout_texts(TASK, 200, seed=8))
    res = exposure_bias(shipped, batch, seed=0)
    t = batch.tgt_out.shape[1]
    for curve in (res.teacher_forcing, res.free_running, res.corrupted):
        assert curve.shape == (t,) and bool(((curve >= 0) & (curve <= 1)).all())
    assert res.corrupted[0] == 1.0  # the forced first token is always wrong
    assert res.free_running[0] == res.teacher_forcing[0]  # same input at step 0: BOS only
    assert res.counts.tolist() == (batch.tgt_out != PAD).sum(0).tolist()
    assert 0.0 <= res.recovered <= 1.0 and 0.0 <= res.clean <= 1.0


def test_exact_accuracy_is_the_same_under_teacher_forcing_and_free_running():
    # A sequence comes out exactly right when free running iff every teacher-forced step is
    # right: up to the first mistake both read the same prefix. Per-position errors differ.
    task = ToyTask("reverse", max_len=5)
    model = make_model(task, d_model=32, n_heads=2, seed=4)
    train(model, task, TrainConfig(steps=60, batch_size=64, warmup=10))
    model.eval()
    batch = make_batch(task, heldout_texts(task, 300, seed=9))
    tf = teacher_forced_tokens(model, batch)
    fr = greedy_decode(model, batch.src).tokens
    ok_tf, ok_fr = exact_match(tf, batch.tgt_out), exact_match(fr, batch.tgt_out)
    assert 0.05 < ok_fr.float().mean() < 0.95  # partly trained: both kinds of sequence occur
    assert torch.equal(ok_tf, ok_fr)
    res = exposure_bias(model, batch)
    assert res.free_running.sum() > 1.5 * res.teacher_forcing.sum()  # errors pile up when free
