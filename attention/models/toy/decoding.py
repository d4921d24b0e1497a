"""Free running (greedy decoding) and how it differs from teacher forcing.

Teacher forcing (training): the decoder reads the true answer shifted right, so every position
is predicted in one parallel pass:   logits_t = f(x, y_1 .. y_{t-1}).
Free running (inference): it reads its own previous outputs, one step at a time:
    y^_t = argmax f(x, y^_1 .. y^_{t-1}).
A single early mistake changes every later input: the decoder now sees prefixes it never met in
training (exposure bias). `exposure_bias` measures that on a batch.

With a key/value cache each step feeds only the newest token: the keys and values of earlier
positions are reused, not recomputed. `greedy_decode(use_cache=False)` recomputes the whole
prefix every step instead; both give the same tokens and the same attention weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ...transformer import Transformer
from .data import BOS, EOS, PAD, Batch


@dataclass(frozen=True)
class GreedyResult:
    """What greedy decoding produced, with the attention of every step.

    Row t of each decoder map is the attention of the query at step t; rows after a sequence's
    EOS are 0, as are the self-attention entries a step could not see yet.
    """

    tokens: Tensor  # (B, T) chosen ids, EOS included, PAD after it
    logits: Tensor  # (B, T, V) the logits each step chose from
    self_weights: tuple[Tensor, ...]  # per decoder layer (B, H, T, T)
    cross_weights: tuple[Tensor, ...]  # per decoder layer (B, H, T, S)
    encoder_weights: tuple[Tensor, ...]  # per encoder layer (B, H, S, S)
    lengths: Tensor  # (B,) tokens up to and including EOS (T when EOS never came)


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    src: Tensor,
    *,
    max_steps: int | None = None,
    use_cache: bool = True,
    forced: Tensor | None = None,
) -> GreedyResult:
    """Generate by feeding back the most likely token, one step at a time.

    Args:
        model: an encoder-decoder `Transformer` (put in eval mode by the caller if it has
            dropout).
        src: (B, S) source ids, PAD after each sequence.
        max_steps: at most this many output tokens; None means S + 1 (answers as long as
            the input, plus EOS). Decoding stops earlier once every sequence has emitted EOS.
        use_cache: feed only the newest token and reuse earlier keys/values (True), or
            re-run the decoder on the whole prefix at every step (False).
        forced: (B, P) ids to emit at the first P steps instead of the argmax (to inject a
            mistake, or P = T for teacher forcing one step at a time).

    The argmax never picks PAD or BOS: neither is a valid output.
    """
    b, s = src.shape
    steps = s + 1 if max_steps is None else max_steps
    if steps < 1:
        raise ValueError(f"max_steps: expected a positive int, got {max_steps}")
    if forced is not None and (forced.dim() != 2 or forced.shape[0] != b):
        raise ValueError(f"forced: expected shape ({b}, P), got {tuple(forced.shape)}")
    enc = model.encode(src)
    memory, src_mask = enc.output, model.src_mask(src)  # (B, S, M), (B, 1, S)
    ys = torch.full((b, 1), BOS, dtype=torch.long, device=src.device)  # (B, 1)
    cache = None
    logits_steps, self_rows, cross_rows = [], [], []
    for t in range(steps):
        inp = ys[:, -1:] if cache is not None else ys  # (B, 1) or (B, t + 1)
        logits, dec = model.decode(inp, memory, src_mask, cache=cache)
        if use_cache:
            cache = dec.cache
        step_logits = logits[:, -1]  # (B, V)
        logits_steps.append(step_logits)
        self_rows.append([r.self_attn.weights[:, :, -1] for r in dec.layers])  # (B, H, t + 1)
        cross_rows.append([r.cross_attn.weights[:, :, -1] for r in dec.layers])  # (B, H, S)
        if forced is not None and t < forced.shape[1]:
            nxt = forced[:, t]
        else:
            banned = torch.zeros_like(step_logits, dtype=torch.bool)
            banned[:, [PAD, BOS]] = True
            nxt = step_logits.masked_fill(banned, float("-inf")).argmax(-1)  # (B,)
        ys = torch.cat([ys, nxt[:, None]], dim=1)  # (B, t + 2)
        if bool((ys[:, 1:] == EOS).any(dim=1).all()):
            break
    tokens = ys[:, 1:]  # (B, T)
    n = tokens.shape[1]
    is_eos = tokens == EOS
    lengths = torch.where(is_eos.any(1), is_eos.int().argmax(1) + 1, torch.full_like(src[:, 0], n))
    alive = torch.arange(n, device=src.device)[None, :] < lengths[:, None]  # (B, T)
    tokens = tokens.masked_fill(~alive, PAD)
    rows = alive[:, None, :, None]  # (B, 1, T, 1)
    self_weights = tuple(
        torch.stack(
            [torch.nn.functional.pad(r[i], (0, n - r[i].shape[-1])) for r in self_rows], dim=2
        ).masked_fill(~rows, 0.0)  # (B, H, T, T)
        for i in range(len(model.decoder.layers))
    )
    cross_weights = tuple(
        torch.stack([r[i] for r in cross_rows], dim=2).masked_fill(~rows, 0.0)  # (B, H, T, S)
        for i in range(len(model.decoder.layers))
    )
    return GreedyResult(
        tokens=tokens,
        logits=torch.stack(logits_steps, dim=1),  # (B, T, V)
        self_weights=self_weights,
        cross_weights=cross_weights,
        encoder_weights=tuple(r.self_attn.weights for r in enc.layers),
        lengths=lengths,
    )


def pad_to(tokens: Tensor, width: int) -> Tensor:
    """(B, T) ids -> (B, width): PAD appended, or columns cut off (keep T <= width in practice)."""
    if tokens.shape[1] >= width:
        return tokens[:, :width]
    return torch.nn.functional.pad(tokens, (0, width - tokens.shape[1]), value=PAD)


def exact_match(pred: Tensor, target: Tensor) -> Tensor:
    """(B, T') predictions vs (B, T) targets, both PAD after EOS -> (B,) True where identical."""
    width = max(pred.shape[1], target.shape[1])
    return (pad_to(pred, width) == pad_to(target, width)).all(dim=1)


@torch.no_grad()
def teacher_forced_tokens(model: Transformer, batch: Batch) -> Tensor:
    """(B, T) the argmax at each position when the decoder reads the true prefix."""
    logits = model(batch.src, batch.tgt_in).logits  # (B, T, V)
    return logits.argmax(-1).masked_fill(batch.tgt_out == PAD, PAD)


@dataclass(frozen=True)
class Comparison:
    """One model, one batch, two ways of feeding the decoder."""

    target: Tensor  # (B, T) the true answer + EOS
    teacher_forced: Tensor  # (B, T) predictions given the true prefix
    free_running: Tensor  # (B, T) greedy output (PAD after EOS, cut or padded to T)
    exact_teacher_forced: float  # fraction of sequences with every position right
    exact_free_running: float


def compare_teacher_forcing(model: Transformer, batch: Batch) -> Comparison:
    """Run the same batch with teacher forcing and with free running, side by side."""
    t = batch.tgt_out.shape[1]
    tf = teacher_forced_tokens(model, batch)
    fr = greedy_decode(model, batch.src, max_steps=t).tokens
    return Comparison(
        target=batch.tgt_out,
        teacher_forced=tf,
        free_running=pad_to(fr, t),
        exact_teacher_forced=exact_match(tf, batch.tgt_out).float().mean().item(),
        exact_free_running=exact_match(fr, batch.tgt_out).float().mean().item(),
    )


@dataclass(frozen=True)
class ExposureBiasResult:
    """Per-position error rates (fraction of wrong tokens among sequences that reach t).

    `corrupted` forces the first output token to a wrong symbol and then runs free: position 0
    is wrong by construction, so compare positions 1 and later with `free_running`.
    """

    teacher_forcing: Tensor  # (T,) the decoder read the true prefix
    free_running: Tensor  # (T,) it read its own outputs
    corrupted: Tensor  # (T,) its own outputs after a wrong first token
    counts: Tensor  # (T,) how many sequences have a real target token at t
    recovered: float  # fraction of corrupted sequences whose positions 1.. are all right
    clean: float  # the same fraction without the corruption (free running)


def _position_error(pred: Tensor, target: Tensor) -> Tensor:
    real = target != PAD  # (B, T)
    wrong = (pred != target) & real
    return wrong.sum(0).float() / real.sum(0).clamp(min=1)  # (T,)


def exposure_bias(model: Transformer, batch: Batch, *, seed: int = 0) -> ExposureBiasResult:
    """Measure how errors grow when the decoder feeds on its own outputs."""
    target = batch.tgt_out  # (B, T)
    b, t = target.shape
    tf = teacher_forced_tokens(model, batch)
    fr = pad_to(greedy_decode(model, batch.src, max_steps=t).tokens, t)
    # A wrong first token: shift the true one by a random non-zero amount within the symbols.
    n_symbols = model.config.tgt_vocab_size - 3
    g = torch.Generator().manual_seed(seed)
    shift = torch.randint(1, max(n_symbols, 2), (b,), generator=g)
    first = target[:, 0]
    wrong = 3 + (first - 3 + shift) % max(n_symbols, 1)  # a symbol, never the right one
    corrupted = pad_to(
        greedy_decode(model, batch.src, max_steps=t, forced=wrong[:, None]).tokens, t
    )
    rest = target[:, 1:]
    return ExposureBiasResult(
        teacher_forcing=_position_error(tf, target),
        free_running=_position_error(fr, target),
        corrupted=_position_error(corrupted, target),
        counts=(target != PAD).sum(0),
        recovered=exact_match(corrupted[:, 1:], rest).float().mean().item(),
        clean=exact_match(fr[:, 1:], rest).float().mean().item(),
    )
