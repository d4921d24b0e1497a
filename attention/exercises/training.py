"""Self-checking exercises for lesson 11: shift right, one greedy step, the padded loss.

Each `check_*` takes the learner's function, runs it on fixed inputs, compares with the
reference and prints one line: "Correct: ...", "Not attempted yet: ..." (the stub still raises
NotImplementedError) or "Not yet: ..." naming the mistake when it is a known one. It returns
True or False and never raises, so a notebook that runs every cell keeps going.

Reference solutions are in `attention.exercises.training_solutions`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..models.toy.checkpoints import load_reverse_model
from ..models.toy.data import BOS, PAD, ToyTask, make_batch, shift_right
from ..models.toy.training import sequence_loss
from ._checking import Wrong as _Wrong
from ._checking import call as _call
from ._checking import checker as _checker

__all__ = ["check_greedy_step", "check_sequence_loss", "check_shift_right"]


def _tensor(what: str, got: Any, shape: tuple[int, ...], *, integer: bool) -> Tensor:
    if not isinstance(got, Tensor):
        raise _Wrong(f"{what}: expected a torch.Tensor, got {type(got).__name__}")
    if integer and (got.is_floating_point() or got.dtype == torch.bool):
        raise _Wrong(f"{what}: expected integer token ids (torch.long), got {got.dtype}")
    if tuple(got.shape) != shape:
        raise _Wrong(f"{what}: wrong shape: expected {shape}, got {tuple(got.shape)}")
    return got


def _first_difference(got: Tensor, want: Tensor) -> str:
    index = tuple(int(i) for i in (got != want).nonzero()[0])
    return f"at position {index}: expected {int(want[index])}, got {int(got[index])}"


_TASK = ToyTask("reverse")
_TEXTS = ["314", "27", "9", "4096", "55512"]


@_checker("the decoder reads BOS then the answer, one step late, so position t never sees y_t.")
def check_shift_right(fn: Callable[[Tensor, int], Tensor]) -> None:
    """Check fn(tgt_out (B, T), bos_id) -> tgt_in (B, T): BOS, then tgt_out without its last
    column."""
    tgt_out = make_batch(_TASK, _TEXTS).tgt_out  # (B, T)
    want = shift_right(tgt_out, BOS)
    got = _call(fn, tgt_out, BOS)
    if isinstance(got, Tensor) and tuple(got.shape) == (tgt_out.shape[0], tgt_out.shape[1] + 1):
        raise _Wrong(
            f"wrong shape: expected {tuple(want.shape)}, got {tuple(got.shape)}: you added BOS "
            "but kept every target token; drop the last column so the input keeps length T"
        )
    got = _tensor("tgt_in", got, tuple(want.shape), integer=True)
    if torch.equal(got, want):
        return
    if torch.equal(got, tgt_out):
        raise _Wrong(
            "the input equals the target: at position t the decoder would read y_t, the very "
            "token it must predict, and learn to copy it"
        )
    left = torch.cat([tgt_out[:, 1:], torch.full_like(tgt_out[:, :1], PAD)], dim=1)
    if torch.equal(got, left):
        raise _Wrong(
            "you shifted left: position t would read y_(t+1), a future token. Shift right: "
            "BOS first, then y_1 .. y_(T-1)"
        )
    if torch.equal(got[:, 1:], want[:, 1:]) and not bool((got[:, 0] == BOS).all()):
        raise _Wrong(
            f"the first column holds {got[:, 0].tolist()}, expected BOS (id {BOS}) in every row: "
            "the first input is the start token, the signal to begin"
        )
    raise _Wrong(f"wrong token {_first_difference(got, want)}")


def _greedy_inputs() -> tuple[Any, Tensor, Tensor, Tensor]:
    """The shipped model, sources (B, S), prefixes (B, 4) = BOS + 3 answer tokens, answer."""
    model = load_reverse_model().model
    batch = make_batch(_TASK, ["31415", "271828", "16180", "777123"])
    prefix = batch.tgt_in[:, :4]  # (B, 4)
    with torch.no_grad():
        memory = model.encode(batch.src).output
        logits, _ = model.decode(prefix, memory, model.src_mask(batch.src))  # (B, 4, V)
    return model, batch.src, prefix, logits


@_checker("next token = argmax of the logits at the last position of the prefix.")
def check_greedy_step(fn: Callable[[Any, Tensor, Tensor], Tensor]) -> None:
    """Check fn(model, src (B, S), prefix (B, t)) -> next token ids (B,) by greedy choice.

    Runs on the shipped reverse model; the prefix is BOS plus the first 3 answer tokens.
    """
    model, src, prefix, logits = _greedy_inputs()
    want = logits[:, -1].argmax(-1)  # (B,)
    with torch.no_grad():
        got = _call(fn, model, src, prefix)
    b, v = prefix.shape[0], logits.shape[-1]
    if isinstance(got, Tensor) and tuple(got.shape) in ((b, v), (b, prefix.shape[1], v)):
        raise _Wrong(
            f"expected token ids of shape ({b},), got {tuple(got.shape)}: these look like "
            "logits or probabilities; take the argmax over the vocabulary (the last dim)"
        )
    if isinstance(got, Tensor) and tuple(got.shape) == (b, prefix.shape[1]):
        raise _Wrong(
            f"expected one token per sequence ({b},), got {tuple(got.shape)}: you took the "
            "argmax at every position; only the last position's logits give the next token"
        )
    got = _tensor("next token", got, (b,), integer=True)
    if torch.equal(got, want):
        return
    if torch.equal(got, logits[:, 0].argmax(-1)):
        raise _Wrong(
            "you read the logits of the first position (logits[:, 0], after BOS); the next "
            "token comes from the last position of the prefix, logits[:, -1]"
        )
    with torch.no_grad():
        memory = model.encode(src).output
        last_only, _ = model.decode(prefix[:, -1:], memory, model.src_mask(src))
    if torch.equal(got, last_only[:, -1].argmax(-1)):
        raise _Wrong(
            "you fed only the newest token without a cache: the decoder saw one token at "
            "position 0 and forgot the prefix; feed the whole prefix (or pass cache=...)"
        )
    raise _Wrong(f"wrong token {_first_difference(got, want)}")


@_checker("the loss averages -log p(y_t) over the real tokens only; PAD positions do not count.")
def check_sequence_loss(fn: Callable[[Tensor, Tensor, int], Tensor]) -> None:
    """Check fn(logits (B, T, V), tgt_out (B, T), pad_id) -> scalar mean cross-entropy over
    the non-PAD positions."""
    g = torch.Generator().manual_seed(11)
    tgt_out = make_batch(_TASK, _TEXTS).tgt_out  # (B, T), plenty of PAD
    b, t = tgt_out.shape
    v = _TASK.tokenizer.vocab_size
    logits = torch.randn(b, t, v, generator=g) * 2.0
    want = sequence_loss(logits, tgt_out)
    got = _call(fn, logits, tgt_out, PAD)
    if not isinstance(got, Tensor):
        raise _Wrong(f"expected a torch.Tensor, got {type(got).__name__}")
    if got.dim() != 0:
        raise _Wrong(
            f"expected a scalar (shape ()), got shape {tuple(got.shape)}: average the token "
            "losses into one number"
        )
    if torch.isclose(got.detach(), want, rtol=1e-4, atol=1e-6):
        return
    ce = torch.nn.functional.cross_entropy
    flat = logits.reshape(-1, v), tgt_out.reshape(-1)
    per_token = ce(*flat, reduction="none").reshape(b, t)
    real = tgt_out != PAD
    mistakes = [
        (ce(*flat), "your loss also averages over the PAD positions: pass ignore_index=pad_id "
         "(or mask them out) so filler tokens neither count nor dilute the mean"),
        (ce(torch.softmax(flat[0], -1), flat[1], ignore_index=PAD),
         "you passed probabilities to cross_entropy, which applies log-softmax itself: give it "
         "the raw logits"),
        ((per_token * real).sum(), "you summed the token losses; take the mean over real tokens"),
        (((per_token * real).sum(1) / real.sum(1)).mean(),
         "you averaged each sequence first, then the batch: a short sequence's tokens then "
         "weigh more than a long one's; average over all real tokens at once"),
    ]  # fmt: skip
    for wrong, message in mistakes:
        if torch.isclose(got.detach(), wrong, rtol=1e-4, atol=1e-6):
            raise _Wrong(message)
    raise _Wrong(f"wrong value: expected {want.item():.4f}, got {got.item():.4f}")
