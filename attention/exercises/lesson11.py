"""Self-checking exercises for lesson 11: shift right, one greedy step, the padded loss.

Each `check_*` runs the learner's function on fixed inputs (the shipped reverse model for the
greedy step), compares with the reference through the kit in `_checking` and prints one line,
naming the mistake when it is a known one.

Reference solutions are in `attention.exercises.solutions.lesson11`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..models.toy.checkpoints import load_reverse_model
from ..models.toy.data import BOS, PAD, ToyTask, make_batch, shift_right
from ..models.toy.training import sequence_loss
from ._checking import Wrong, call, checker, compare, expect_tensor, name_mistake

LESSON = "11_encoder_decoder"
__all__ = ["check_greedy_step", "check_sequence_loss", "check_shift_right"]


def _token_ids(got: Any, *, what: str, shape: tuple[int, ...]) -> Tensor:
    got = expect_tensor(got, what=what)
    if got.is_floating_point() or got.dtype == torch.bool:
        raise Wrong(f"{what}: expected integer token ids (torch.long), got {got.dtype}")
    return expect_tensor(got, what=what, shape=shape)


_TASK = ToyTask("reverse")
_TEXTS = ["314", "27", "9", "4096", "55512"]


@checker("the decoder reads BOS then the answer, one step late, so position t never sees y_t.")
def check_shift_right(fn: Callable[[Tensor, int], Tensor]) -> None:
    """Check fn(tgt_out (B, T), bos_id) -> tgt_in (B, T): BOS, then tgt_out without its last
    column."""
    tgt_out = make_batch(_TASK, _TEXTS).tgt_out  # (B, T)
    want = shift_right(tgt_out, BOS)
    got = call(fn, tgt_out, BOS)
    if isinstance(got, Tensor) and tuple(got.shape) == (tgt_out.shape[0], tgt_out.shape[1] + 1):
        raise Wrong(
            f"wrong shape: expected {tuple(want.shape)}, got {tuple(got.shape)}: you added BOS "
            "but kept every target token; drop the last column so the input keeps length T"
        )
    got = _token_ids(got, what="tgt_in", shape=tuple(want.shape))
    left = torch.cat([tgt_out[:, 1:], torch.full_like(tgt_out[:, :1], PAD)], dim=1)
    mistakes = [
        (
            tgt_out,
            "the input equals the target: at position t the decoder would read y_t, the very "
            "token it must predict, and learn to copy it",
        ),
        (
            left,
            "you shifted left: position t would read y_(t+1), a future token. Shift right: "
            "BOS first, then y_1 .. y_(T-1)",
        ),
    ]
    name_mistake(got, mistakes)
    if torch.equal(got[:, 1:], want[:, 1:]) and not bool((got[:, 0] == BOS).all()):
        raise Wrong(
            f"the first column holds {got[:, 0].tolist()}, expected BOS (id {BOS}) in every row: "
            "the first input is the start token, the signal to begin"
        )
    compare(got, want, what="tgt_in")


@checker("the loss averages -log p(y_t) over the real tokens only; PAD positions do not count.")
def check_sequence_loss(fn: Callable[[Tensor, Tensor, int], Tensor]) -> None:
    """Check fn(logits (B, T, V), tgt_out (B, T), pad_id) -> scalar mean cross-entropy over
    the non-PAD positions."""
    g = torch.Generator().manual_seed(11)
    tgt_out = make_batch(_TASK, _TEXTS).tgt_out  # (B, T), plenty of PAD
    b, t = tgt_out.shape
    v = _TASK.tokenizer.vocab_size
    logits = torch.randn(b, t, v, generator=g) * 2.0
    want = sequence_loss(logits, tgt_out)
    got = expect_tensor(call(fn, logits, tgt_out, PAD))
    if got.dim() != 0:
        raise Wrong(
            f"expected a scalar (shape ()), got shape {tuple(got.shape)}: average the token "
            "losses into one number"
        )
    ce = torch.nn.functional.cross_entropy
    flat = logits.reshape(-1, v), tgt_out.reshape(-1)
    per_token = ce(*flat, reduction="none").reshape(b, t)
    real = tgt_out != PAD
    mistakes = [
        (ce(*flat), "your loss also averages over the PAD positions: pass ignore_index=pad_id "
         "(or mask them out) so filler tokens neither count nor dilute the mean"),
        ((per_token * real).mean(),
         "you zeroed the PAD losses but still divided by every position: (loss * mask).mean() "
         "divides by B * T, PAD included, so the loss shrinks as padding grows; divide the sum "
         "by the number of real tokens, (loss * mask).sum() / mask.sum()"),
        (ce(torch.softmax(flat[0], -1), flat[1], ignore_index=PAD),
         "you passed probabilities to cross_entropy, which applies log-softmax itself: give it "
         "the raw logits"),
        ((per_token * real).sum(), "you summed the token losses; take the mean over real tokens"),
        (((per_token * real).sum(1) / real.sum(1)).mean(),
         "you averaged each sequence first, then the batch: a short sequence's tokens then "
         "weigh more than a long one's; average over all real tokens at once"),
    ]  # fmt: skip
    compare(got, want, mistakes, what="loss", atol=1e-6)


# Sources of unequal length (padding matters) on which each named mistake picks other tokens.
_GREEDY_TEXTS = ["83989", "71965", "3423209", "71122"]
_FLATTEN = 0.1  # logits times this: the same argmax, but only about 0.2 likely


@torch.no_grad()
def _next_tokens(model: Any, src: Tensor, prefix: Tensor, **how: Any) -> Tensor:
    """The greedy next tokens (B,), or one of the known wrong ways to get them."""
    memory = model.encode(src).output  # (B, S, M)
    mask = None if how.get("no_src_mask") else model.src_mask(src)  # (B, 1, S)
    tgt = prefix[:, -1:] if how.get("newest_only") else prefix  # (B, t) or (B, 1)
    logits, _ = model.decode(tgt, memory, mask)  # (B, t, V)
    return logits[:, how.get("position", -1)].argmax(-1)  # (B,)


@checker("next token = argmax of the logits at the last position of the prefix.")
def check_greedy_step(fn: Callable[[Any, Tensor, Tensor], Tensor]) -> None:
    """Check fn(model, src (B, S), prefix (B, t)) -> next token ids (B,) by greedy choice.

    Runs on the shipped reverse model; the prefix is BOS plus the first 3 answer tokens. That
    model is ~0.9998 sure of each token, so sampling would nearly always agree with the argmax:
    the check also runs fn, under three seeds, on a copy whose logits are 10x smaller.
    """
    model = load_reverse_model().model
    batch = make_batch(_TASK, _GREEDY_TEXTS)
    src, prefix = batch.src, batch.tgt_in[:, :4]  # (B, S), (B, 4)
    want = _next_tokens(model, src, prefix)
    with torch.no_grad():
        got = call(fn, model, src, prefix)
    (b, t), v = prefix.shape, model.config.tgt_vocab_size
    if isinstance(got, Tensor) and tuple(got.shape) in ((b, v), (b, t, v)):
        raise Wrong(
            f"expected token ids of shape ({b},), got {tuple(got.shape)}: these look like "
            "logits or probabilities; take the argmax over the vocabulary (the last dim)"
        )
    if isinstance(got, Tensor) and tuple(got.shape) == (b, t):
        raise Wrong(
            f"expected one token per sequence ({b},), got {tuple(got.shape)}: you took the "
            "argmax at every position; only the last position's logits give the next token"
        )
    got = _token_ids(got, what="next token", shape=(b,))
    if not torch.equal(got, want):  # a known mistake?
        mistakes = [
            (
                _next_tokens(model, src, prefix, position=0),
                "you read the logits of the first position (logits[:, 0], after BOS); the next "
                "token comes from the last position of the prefix, logits[:, -1]",
            ),
            (
                _next_tokens(model, src, prefix, no_src_mask=True),
                "you passed no source mask, so the decoder's cross-attention also reads the PAD "
                "tokens of the shorter sources: pass model.src_mask(src) to model.decode",
            ),
            (
                _next_tokens(model, src, prefix, newest_only=True),
                "you fed only the newest token without a cache: the decoder saw one token at "
                "position 0 and forgot the prefix; feed the whole prefix (or pass cache=...)",
            ),
        ]
        name_mistake(got, mistakes)
    flat = load_reverse_model().model  # every route to its logits goes through the generator
    flat.generator.register_forward_hook(lambda module, inputs, logits: logits * _FLATTEN)
    picks = []
    for seed in range(3):
        torch.manual_seed(seed)  # the checker restores the learner's random state
        with torch.no_grad():
            picks.append(_token_ids(call(fn, flat, src, prefix), what="next token", shape=(b,)))
    varies = any(not torch.equal(p, picks[0]) for p in picks)
    if varies or (torch.equal(got, want) and not torch.equal(picks[0], want)):
        seed = next(i for i, p in enumerate(picks) if not torch.equal(p, want))
        raise Wrong(
            "you sampled the next token instead of taking the argmax: on a copy of the "
            f"model whose logits are {1 / _FLATTEN:g}x smaller (the same argmax, now only "
            f"about 0.2 likely) your function picked {picks[seed].tolist()} under seed {seed}, "
            f"not {want.tolist()}. Greedy decoding is deterministic: logits[:, -1].argmax(-1)"
        )
    compare(got, want, what="next token")
