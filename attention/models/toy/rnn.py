"""A GRU encoder-decoder, with or without Bahdanau's additive attention, for the toy tasks.

Encoder: a GRU reads the source; h_j is its state after token j, c = h_n the last real one.
Decoder, one step per output token (teacher forcing feeds y_{t-1}, greedy decoding its own):
    context_t = c                                         without attention: the bottleneck
    context_t = sum_j a_tj h_j,  a_t = softmax_j(w_v . tanh(W_q s_{t-1} + W_k h_j))   with it
    s_t       = GRUCell([embed(y_{t-1}); context_t], s_{t-1}),   s_0 = c
    logits_t  = Linear([s_t; context_t])
Without attention every output must be read from the one vector c of width d_hidden, whatever
the input's length; with it each step reads the encoder state it needs (Bahdanau, Cho and
Bengio, 2015). `rnn_exact_by_length` measures what that does to long inputs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ...additive import AdditiveAttention
from .data import BOS, EOS, PAD, ToyTask, batches, heldout_texts, make_batch
from .decoding import exact_match
from .training import sequence_loss


@dataclass(frozen=True)
class RNNConfig:
    """Sizes of the GRU encoder-decoder; `attention` switches Bahdanau attention on."""

    vocab_size: int
    d_embed: int = 32
    d_hidden: int = 64
    attention: bool = True


@dataclass(frozen=True)
class RNNResult:
    logits: Tensor  # (B, T, V)
    weights: Tensor | None  # (B, T, S) attention of each output step over the source; None without


class RNNSeq2Seq(nn.Module):
    """GRU encoder-decoder over token ids (PAD = 0); see the module docstring for the equations."""

    def __init__(self, config: RNNConfig) -> None:
        super().__init__()
        c = self.config = config
        self.embed = nn.Embedding(c.vocab_size, c.d_embed, padding_idx=PAD)
        self.encoder = nn.GRU(c.d_embed, c.d_hidden, batch_first=True)
        self.cell = nn.GRUCell(c.d_embed + c.d_hidden, c.d_hidden)
        self.attention = (
            AdditiveAttention(c.d_hidden, c.d_hidden, c.d_hidden) if c.attention else None
        )
        self.out = nn.Linear(2 * c.d_hidden, c.vocab_size)

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(B, S) ids -> states h (B, S, Dh), last real state c (B, Dh), mask (B, 1, S)."""
        h, _ = self.encoder(self.embed(src))  # (B, S, Dh); a state never reads later PADs
        lengths = (src != PAD).sum(1).clamp_min(1)  # (B,)
        c = h[torch.arange(src.shape[0], device=src.device), lengths - 1]  # (B, Dh)
        return h, c, (src != PAD).unsqueeze(1)

    def step(
        self, y_prev: Tensor, s: Tensor, h: Tensor, c: Tensor, mask: Tensor
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """One decoder step: y_prev (B,) ids, s (B, Dh) -> logits (B, V), new s, weights (B, S)."""
        if self.attention is None:
            context, weights = c, None  # (B, Dh): the same vector at every step
        else:
            r = self.attention(s.unsqueeze(1), h, h, mask)  # query (B, 1, Dh) over (B, S, Dh)
            context, weights = r.output[:, 0], r.weights[:, 0]  # (B, Dh), (B, S)
        s = self.cell(torch.cat([self.embed(y_prev), context], -1), s)  # (B, Dh)
        return self.out(torch.cat([s, context], -1)), s, weights

    def forward(self, src: Tensor, tgt_in: Tensor) -> RNNResult:
        """Teacher forcing: src (B, S), tgt_in (B, T) = BOS + answer -> logits (B, T, V)."""
        h, c, mask = self.encode(src)
        s, logits, weights = c, [], []
        for t in range(tgt_in.shape[1]):  # one step after another: each needs the last state
            out, s, w = self.step(tgt_in[:, t], s, h, c, mask)
            logits.append(out)
            weights.append(w)
        return RNNResult(
            logits=torch.stack(logits, 1),  # (B, T, V)
            weights=None if self.attention is None else torch.stack(weights, 1),  # (B, T, S)
        )

    @torch.no_grad()
    def greedy(self, src: Tensor, max_steps: int) -> RNNResult:
        """Free running: feed back the most likely token (never PAD or BOS) for max_steps steps.

        The logits' argmax is the output (B, T); tokens after a sequence's first EOS are
        replaced by PAD by `greedy_tokens`.
        """
        h, c, mask = self.encode(src)
        y = torch.full((src.shape[0],), BOS, dtype=torch.long, device=src.device)
        s, logits, weights = c, [], []
        for _ in range(max_steps):
            out, s, w = self.step(y, s, h, c, mask)
            out[:, [PAD, BOS]] = float("-inf")
            y = out.argmax(-1)  # (B,)
            logits.append(out)
            weights.append(w)
        return RNNResult(
            torch.stack(logits, 1), None if self.attention is None else torch.stack(weights, 1)
        )


def greedy_tokens(model: RNNSeq2Seq, src: Tensor, max_steps: int) -> Tensor:
    """(B, S) -> (B, max_steps) greedy output ids, PAD after the first EOS."""
    tokens = model.greedy(src, max_steps).logits.argmax(-1)  # (B, T)
    after_eos = (tokens == EOS).long().cumsum(1) - (tokens == EOS).long() > 0  # past the first EOS
    return tokens.masked_fill(after_eos, PAD)


@dataclass(frozen=True)
class RNNTraining:
    model: RNNSeq2Seq
    losses: tuple[float, ...]  # training loss per step
    seconds: float  # wall time of the training loop


def train_rnn(
    task: ToyTask,
    *,
    attention: bool,
    steps: int = 200,
    batch_size: int = 64,
    lr: float = 1e-2,
    d_hidden: int = 64,
    seed: int = 0,
) -> RNNTraining:
    """Train a fresh RNNSeq2Seq with teacher forcing and Adam; seeded, so runs repeat exactly.

    The learning rate follows one cycle (Smith and Topin, 2019): up to `lr` over the first
    fifth of the steps, then down to nearly 0, so that lesson 3's 200 steps suffice (the
    figures, with a constant rate beside them: benchmarks/README.md).
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = RNNSeq2Seq(
            RNNConfig(task.tokenizer.vocab_size, d_hidden=d_hidden, attention=attention)
        )
    data = batches(task, batch_size, generator=torch.Generator().manual_seed(seed))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.2)
    losses = []
    start = time.perf_counter()
    for _ in range(steps):
        batch = next(data)
        loss = sequence_loss(model(batch.src, batch.tgt_in).logits, batch.tgt_out)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
        losses.append(loss.item())
    model.eval()
    return RNNTraining(model, tuple(losses), time.perf_counter() - start)


def rnn_exact_by_length(
    model: RNNSeq2Seq, task: ToyTask, n: int = 1000, seed: int = 1234
) -> dict[int, float]:
    """Exact-sequence accuracy of greedy decoding on n held-out strings, per input length."""
    texts = heldout_texts(task, n, seed=seed)
    batch = make_batch(task, texts)
    pred = greedy_tokens(model, batch.src, batch.tgt_out.shape[1])
    right = exact_match(pred, batch.tgt_out)  # (n,)
    lengths = torch.tensor([len(t) for t in texts])
    return {
        n_: right[lengths == n_].float().mean().item()
        for n_ in range(task.min_len, task.max_len + 1)
        if bool((lengths == n_).any())
    }
