"""The GRU encoder-decoder of lesson 3 (attention.models.toy.rnn): shapes, masks, the additive
attention it uses, greedy decoding consistent with teacher forcing, seeded training."""

from __future__ import annotations

import pytest
import torch

from attention import AdditiveAttention
from attention.explore import one_thread
from attention.models.toy.data import EOS, PAD, ToyTask, make_batch
from attention.models.toy.rnn import (
    RNNConfig,
    RNNSeq2Seq,
    greedy_tokens,
    rnn_exact_by_length,
    train_rnn,
)

TASK = ToyTask("reverse", min_len=1, max_len=6)
V = TASK.tokenizer.vocab_size


def _model(attention: bool, seed: int = 0) -> RNNSeq2Seq:
    torch.manual_seed(seed)
    return RNNSeq2Seq(RNNConfig(V, d_embed=8, d_hidden=16, attention=attention)).eval()


def test_shapes_and_attention_rows():
    batch = make_batch(TASK, ["3141", "27", "902105"])
    r = _model(True)(batch.src, batch.tgt_in)
    b, s = batch.src.shape
    t = batch.tgt_in.shape[1]
    assert r.logits.shape == (b, t, V)
    assert r.weights.shape == (b, t, s)
    torch.testing.assert_close(r.weights.sum(-1), torch.ones(b, t))
    assert (r.weights[1, :, 2:] == 0).all(), "'27' has two real tokens: padding gets weight 0"


def test_without_attention_there_is_no_attention_module():
    with_att, without = _model(True), _model(False)
    assert isinstance(with_att.attention, AdditiveAttention) and without.attention is None
    batch = make_batch(TASK, ["3141"])
    assert without(batch.src, batch.tgt_in).weights is None


@pytest.mark.parametrize("attention", [False, True])
def test_padding_changes_nothing(attention):
    model = _model(attention)
    batch = make_batch(TASK, ["27", "902105"])
    alone = make_batch(TASK, ["27"])
    together = model(batch.src, batch.tgt_in).logits[0, : alone.tgt_in.shape[1]]
    torch.testing.assert_close(model(alone.src, alone.tgt_in).logits[0], together)


def test_without_attention_the_decoder_sees_only_the_last_state():
    # Two inputs that leave the encoder in the same final state give the same output: the
    # decoder has nothing else to read. Forge that by copying the last state.
    model = _model(False)
    batch = make_batch(TASK, ["3141", "5926"])
    h, c, mask = model.encode(batch.src)
    s = c[:1].expand(2, -1)  # both start from sequence 0's summary
    y = batch.tgt_in[:, 0]
    out = model.step(y, s, h, c[:1].expand(2, -1), mask)[0]
    torch.testing.assert_close(out[0], out[1])


def test_greedy_agrees_with_teacher_forcing_on_its_own_outputs():
    model = _model(True)
    batch = make_batch(TASK, ["3141", "27"])
    greedy = model.greedy(batch.src, 5)
    tokens = greedy.logits.argmax(-1)  # (B, 5)
    fed = torch.cat([batch.tgt_in[:, :1], tokens[:, :-1]], dim=1)  # BOS + its own outputs
    forced = model(batch.src, fed)
    torch.testing.assert_close(forced.logits[:, :, 3:], greedy.logits[:, :, 3:])
    torch.testing.assert_close(forced.weights, greedy.weights)


def test_greedy_tokens_are_pad_after_the_first_eos():
    tokens = greedy_tokens(_model(True), make_batch(TASK, ["3141", "27"]).src, 8)
    for row in tokens:
        ends = (row == EOS).nonzero()
        if len(ends):
            assert (row[ends[0, 0] + 1 :] == PAD).all()


def test_training_is_seeded_and_lowers_the_loss():
    with one_thread():  # tiny matrices: a second thread only waits on a busy machine
        _train_twice()


def _train_twice() -> None:
    kw = dict(attention=True, steps=30, batch_size=32, d_hidden=16, seed=3)
    a, b = train_rnn(TASK, **kw), train_rnn(TASK, **kw)
    assert a.losses == b.losses
    assert sum(a.losses[-5:]) < sum(a.losses[:5])
    acc = rnn_exact_by_length(a.model, TASK, n=200)
    assert set(acc) <= set(range(1, 7)) and all(0 <= v <= 1 for v in acc.values())
    assert not a.model.training
