"""The checkers of lesson 11 name typical mistakes (what all checkers do: test_kit.py)."""

import pytest
import torch

from attention.exercises import lesson11 as M
from attention.exercises.lesson11 import check_greedy_step, check_sequence_loss, check_shift_right
from attention.models.toy.checkpoints import load_reverse_model
from attention.models.toy.data import PAD, make_batch
from tests.exercises.checker_answers import run

# --- shift right ------------------------------------------------------------------------------


def with_first_column(value):
    def fn(tgt_out, bos_id):
        return torch.cat([torch.full_like(tgt_out[:, :1], value), tgt_out[:, :-1]], dim=1)

    return fn


def off_by_one_token(tgt_out, bos_id):
    out = with_first_column(bos_id)(tgt_out, bos_id)
    out[1, 2] = 3 + (out[1, 2] - 3 + 1) % 10  # another digit
    return out


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda y, bos: y.clone(), "the input equals the target"),
        (
            lambda y, bos: torch.cat([y[:, 1:], torch.full_like(y[:, :1], PAD)], dim=1),
            "you shifted left",
        ),
        (
            lambda y, bos: torch.cat([torch.full_like(y[:, :1], bos), y], dim=1),
            "you added BOS but kept every target token",
        ),
        (with_first_column(PAD), "expected BOS (id 1) in every row"),
        (lambda y, bos: with_first_column(bos)(y, bos).float(), "expected integer token ids"),
        (lambda y, bos: with_first_column(bos)(y, bos)[:, :-1], "wrong shape: expected (5, 6)"),
        (lambda y, bos: torch.roll(y, 1, dims=1), "the first column holds [0, 0, 0, 0, 2]"),
        (off_by_one_token, "tgt_in: wrong value at position (1, 2): expected"),
    ],
)
def test_shift_right_mistakes(fn, message, capsys):
    ok, out = run(check_shift_right, fn, capsys)
    assert not ok and message in out, out


# --- greedy step ------------------------------------------------------------------------------


def decode(model, src, prefix, src_mask=True):
    memory = model.encode(src).output
    return model.decode(prefix, memory, model.src_mask(src) if src_mask else None)[0]  # (B, t, V)


def sample(model, src, prefix):
    probs = decode(model, src, prefix)[:, -1].softmax(-1)  # (B, V)
    return torch.multinomial(probs, 1)[:, 0]


def sample_categorical(model, src, prefix):
    return torch.distributions.Categorical(logits=decode(model, src, prefix)[:, -1]).sample()


def sample_with_a_fixed_seed(model, src, prefix):
    g = torch.Generator().manual_seed(0)
    return torch.multinomial(decode(model, src, prefix)[:, -1].softmax(-1), 1, generator=g)[:, 0]


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda m, s, p: decode(m, s, p)[:, 0].argmax(-1), "you read the logits of the first"),
        (lambda m, s, p: decode(m, s, p)[:, -1], "these look like logits or probabilities"),
        (lambda m, s, p: decode(m, s, p).softmax(-1), "these look like logits or probabilities"),
        (lambda m, s, p: decode(m, s, p).argmax(-1), "you took the argmax at every position"),
        (lambda m, s, p: decode(m, s, p[:, -1:])[:, -1].argmax(-1), "you fed only the newest"),
        (
            lambda m, s, p: decode(m, s, p, src_mask=False)[:, -1].argmax(-1),
            "you passed no source mask",
        ),
        (sample, "you sampled the next token instead of taking the argmax"),
        (sample_categorical, "you sampled the next token instead of taking the argmax"),
        (sample_with_a_fixed_seed, "you sampled the next token instead of taking the argmax"),
        (lambda m, s, p: decode(m, s, p)[:, -1].argmax(-1).float(), "expected integer token"),
        (lambda m, s, p: decode(m, s, p)[:, -1].argmin(-1), "wrong value at position (0,)"),
    ],
)
def test_greedy_step_mistakes(fn, message, capsys):
    ok, out = run(check_greedy_step, fn, capsys)
    assert not ok and message in out, out


def test_the_shipped_model_is_too_sure_to_catch_sampling_by_itself():
    """Why check_greedy_step also runs a flattened copy: sampling nearly always agrees here."""
    model = load_reverse_model().model
    batch = make_batch(M._TASK, M._GREEDY_TEXTS)
    with torch.no_grad():
        probs = decode(model, batch.src, batch.tgt_in[:, :4])[:, -1].softmax(-1)
    assert bool((probs.amax(-1) > 0.99).all())


def test_the_greedy_inputs_tell_the_named_mistakes_apart():
    """Each named mistake picks other tokens than the answer and than each other."""
    model = load_reverse_model().model
    batch = make_batch(M._TASK, M._GREEDY_TEXTS)
    src, prefix = batch.src, batch.tgt_in[:, :4]
    answers = [
        M._next_tokens(model, src, prefix, **how)
        for how in ({}, {"position": 0}, {"no_src_mask": True}, {"newest_only": True})
    ]
    for i, a in enumerate(answers):
        for b in answers[i + 1 :]:
            assert not torch.equal(a, b)


def test_greedy_step_accepts_the_probabilities_route(capsys):
    ok, out = run(
        check_greedy_step, lambda m, s, p: decode(m, s, p)[:, -1].softmax(-1).argmax(-1), capsys
    )
    assert ok, out


# --- loss -------------------------------------------------------------------------------------


def ce(logits, tgt, **kw):
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), **kw
    )


def masked_mean_over_every_position(logits, tgt, pad):
    losses = ce(logits, tgt, reduction="none").reshape(tgt.shape)
    return (losses * (tgt != pad)).mean()  # divides by B * T, PAD included


def per_sequence_mean(logits, tgt, pad):
    losses = ce(logits, tgt, reduction="none").reshape(tgt.shape)
    real = tgt != pad
    return ((losses * real).sum(1) / real.sum(1)).mean()


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda lg, y, pad: ce(lg, y), "your loss also averages over the PAD positions"),
        (masked_mean_over_every_position, "still divided by every position"),
        (lambda lg, y, pad: ce(lg.softmax(-1), y, ignore_index=pad), "you passed probabilities"),
        (lambda lg, y, pad: ce(lg, y, ignore_index=pad, reduction="sum"), "you summed the token"),
        (per_sequence_mean, "you averaged each sequence first"),
        (lambda lg, y, pad: ce(lg, y, ignore_index=pad, reduction="none"), "expected a scalar"),
        (lambda lg, y, pad: 2.5, "expected a torch.Tensor, got float"),
        (lambda lg, y, pad: ce(lg, y, ignore_index=pad) + 0.1, "loss: wrong value: expected"),
    ],
)
def test_sequence_loss_mistakes(fn, message, capsys):
    ok, out = run(check_sequence_loss, fn, capsys)
    assert not ok and message in out, out
