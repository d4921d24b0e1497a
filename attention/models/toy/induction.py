"""Induction heads, formed in front of you: a tiny attention-only model learns to copy.

The task: after a BOS token, n distinct random tokens, then the same n again (and again, up to
the sequence's length). Nothing predicts the first copy; every later token is predictable by a
model that finds the earlier occurrence of the current token and copies the token after it.
Two heads in two layers do it together (Olsson et al. 2022, "In-context learning and induction
heads"): a layer-0 *previous-token* head writes "the token before me was A" into each position,
and a layer-1 *induction* head whose keys read that (K-composition) attends from the current A
to the position after the earlier A, and copies what it finds there.

    task = InductionTask(vocab=64, min_repeat=4, max_repeat=16)  # n drawn per sequence
    run = InductionRun(task, InductionConfig(n_layers=2, n_heads=1, seed=0))
    history = run.run(steps=1200)      # or in chunks: run.run(100); run.run(100) ...
    history.phase_step                 # the first recorded step with the loss under PHASE_LOSS
    evaluate(run.model, run.probe, ablate=((0, 0),))   # silence layer 0's head: loss, scores
    composition_scores(run.model)      # K-, Q-, V-composition from the weights (Elhage et al.)

The trap: with one repeat length for every sequence (min_repeat == max_repeat, `fixed`), the
token to copy always sits n - 1 positions back, so one layer can find it by position alone; no
previous-token head is needed. Each sequence therefore gets its own n.

The model is built from the core's layers (MultiHeadAttention, FeedForward, apply_rope,
sinusoidal_positional_encoding, causal_mask); the per-head scores are the ones lesson 12 reads
off SmolLM2 (attention.models.head_scores).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...layers import FeedForward
from ...masks import causal_mask
from ...multihead import MultiHeadAttention, MultiHeadResult
from ...positional import apply_rope, sinusoidal_positional_encoding
from ...sandbox.limits import check_int as _check_int
from ..head_scores import induction_score, previous_token_score

BOS = 0  # token 0 opens every sequence; the random tokens are 1..vocab
POSITIONS = ("learned", "sinusoidal", "rotary")
PHASE_LOSS = 1.0  # nats on the repeated part: under it, the model copies (ln 64 = 4.16 before)
MAX_VOCAB, MAX_REPEAT, MAX_LAYERS, MAX_HEADS = 512, 32, 3, 4

Head = tuple[int, int]  # (layer, head)


# --- the task ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class InductionTask:
    """Sequences of BOS + n distinct random tokens repeated, n drawn per sequence.

    vocab: random tokens are 1..vocab (the model's vocabulary is vocab + 1, BOS = 0).
    min_repeat, max_repeat: n is drawn uniformly from this range for each sequence; equal
        values give the fixed-length variant, which one layer solves by position alone.
    Every sequence is seq_len = 1 + 2 * max_repeat tokens long.
    """

    vocab: int = 64
    min_repeat: int = 4
    max_repeat: int = 16

    def __post_init__(self) -> None:
        _check_int("max_repeat", self.max_repeat, 2, MAX_REPEAT)
        _check_int("min_repeat", self.min_repeat, 2, self.max_repeat)
        _check_int("vocab", self.vocab, self.max_repeat, MAX_VOCAB)  # n distinct tokens

    @property
    def seq_len(self) -> int:
        return 1 + 2 * self.max_repeat

    @property
    def fixed(self) -> bool:
        """One repeat length for every sequence: the positional shortcut is open."""
        return self.min_repeat == self.max_repeat


@dataclass(frozen=True)
class InductionBatch:
    tokens: Tensor  # (B, T) int64: BOS, then n distinct tokens repeated to length T
    repeat: Tensor  # (B,) int64: each sequence's n

    def repeated(self) -> Tensor:
        """(B, T - 1) bool: True where the next token is a repeat (logit position q >= n)."""
        t = self.tokens.shape[1]
        return torch.arange(t - 1, device=self.tokens.device)[None, :] >= self.repeat[:, None]


def make_sequences(
    task: InductionTask, repeats: Sequence[int] | Tensor, generator: torch.Generator
) -> InductionBatch:
    """One sequence per entry of `repeats` (each n in [2, task.max_repeat])."""
    n = torch.as_tensor(repeats, dtype=torch.int64)  # (B,)
    if n.dim() != 1 or len(n) == 0 or int(n.min()) < 2 or int(n.max()) > task.max_repeat:
        raise ValueError(
            f"repeats: expected one length in [2, {task.max_repeat}] per sequence, got {n.tolist()}"
        )
    b, t = len(n), task.seq_len
    # n distinct tokens per row: the first max_repeat of a random permutation of 1..vocab
    perm = torch.rand(b, task.vocab, generator=generator).argsort(-1)[:, : task.max_repeat] + 1
    pos = torch.arange(t - 1)[None, :] % n[:, None]  # (B, T - 1) which of the n comes here
    body = perm.gather(1, pos)  # (B, T - 1)
    tokens = torch.cat([torch.full((b, 1), BOS), body], dim=1)  # (B, T)
    return InductionBatch(tokens, n)


def sample_batch(
    task: InductionTask, batch_size: int, generator: torch.Generator
) -> InductionBatch:
    """batch_size sequences, each with its own n drawn from [min_repeat, max_repeat]."""
    n = torch.randint(task.min_repeat, task.max_repeat + 1, (batch_size,), generator=generator)
    return make_sequences(task, n, generator)


def example_repeat(task: InductionTask) -> int:
    """The n of the fixed example whose maps are recorded: the middle of the range."""
    return (task.min_repeat + task.max_repeat) // 2


# --- the model --------------------------------------------------------------------------------


@dataclass(frozen=True)
class InductionConfig:
    """The model and how to train it (AdamW at a constant learning rate)."""

    n_layers: int = 2
    n_heads: int = 1
    d_model: int = 32
    positions: str = "learned"  # "learned", "sinusoidal" (added) or "rotary" (turns q and k)
    layer_norm: bool = False  # pre-LN before each sub-layer and the unembedding
    mlp: bool = False  # a feed-forward sub-layer after each attention
    lr: float = 3e-3
    batch_size: int = 32
    seed: int = 0
    record_every: int = 10  # steps between records of the probe's loss, scores and maps
    probe_size: int = 64  # sequences the loss and scores are measured on

    def __post_init__(self) -> None:
        _check_int("n_layers", self.n_layers, 1, MAX_LAYERS)
        _check_int("n_heads", self.n_heads, 1, MAX_HEADS)
        _check_int("d_model", self.d_model, 4, 512)
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            ok = [h for h in range(1, MAX_HEADS + 1) if self.d_model % (2 * h) == 0]
            raise ValueError(
                f"n_heads={self.n_heads}: d_model={self.d_model} must split into heads of even "
                f"width; choose n_heads from {ok}"
            )
        if self.positions not in POSITIONS:
            raise ValueError(f"positions: expected one of {POSITIONS}, got {self.positions!r}")
        if not (isinstance(self.lr, float | int) and 0 < self.lr <= 1):
            raise ValueError(f"lr: expected a float in (0, 1], got {self.lr!r}")
        _check_int("batch_size", self.batch_size, 1, 4096)
        _check_int("seed", self.seed, 0, 2**31 - 1)
        _check_int("record_every", self.record_every, 1, 10_000)
        _check_int("probe_size", self.probe_size, 1, 4096)


@dataclass(frozen=True)
class InductionForward:
    logits: Tensor  # (B, T, V + 1)
    layers: tuple[MultiHeadResult, ...]  # per layer: q, k, v, weights (B, H, T, T), heads, ...
    residual: tuple[Tensor, ...]  # L + 1 x (B, T, M): the input of layer l is [l]

    @property
    def weights(self) -> Tensor:
        """(L, B, H, T, T) every head's attention."""
        return torch.stack([layer.weights for layer in self.layers])


class InductionModel(nn.Module):
    """An attention-only Transformer (optionally with LayerNorm and MLPs) on the core's layers.

    x = embed(tokens) (+ positions); per layer x = x + attn(LN(x)) (+ x = x + mlp(LN(x)));
    logits = unembed(LN(x)). LN is the identity without layer_norm.
    """

    def __init__(self, task: InductionTask, config: InductionConfig) -> None:
        super().__init__()
        self.task, self.config = task, config
        m, t = config.d_model, task.seq_len
        self.embed = nn.Embedding(task.vocab + 1, m)
        if config.positions == "learned":
            self.pos = nn.Parameter(torch.randn(t, m) * 0.1)  # (T, M)
        else:
            self.register_buffer("pos", sinusoidal_positional_encoding(t, m), persistent=False)
        self.attn = nn.ModuleList(
            MultiHeadAttention(m, config.n_heads) for _ in range(config.n_layers)
        )

        def norm() -> nn.Module:
            return nn.LayerNorm(m) if config.layer_norm else nn.Identity()

        self.norm_attn = nn.ModuleList(norm() for _ in range(config.n_layers))
        self.mlp = nn.ModuleList(
            FeedForward(m) if config.mlp else nn.Identity() for _ in range(config.n_layers)
        )
        self.norm_mlp = nn.ModuleList(norm() for _ in range(config.n_layers))
        self.norm_out = norm()
        self.unembed = nn.Linear(m, task.vocab + 1)
        self.register_buffer("mask", causal_mask(t), persistent=False)  # (T, T) True = may attend

    def _rope(self, t: int) -> Callable[[Tensor], Tensor] | None:
        if self.config.positions != "rotary":
            return None
        positions = torch.arange(t, device=self.unembed.weight.device)
        return lambda x: apply_rope(x, positions)

    def embed_tokens(self, tokens: Tensor) -> Tensor:
        """(B, T) -> (B, T, M): token embeddings, plus the positions unless they are rotary."""
        x = self.embed(tokens)  # (B, T, M)
        if self.config.positions != "rotary":
            x = x + self.pos[: tokens.shape[1]]
        return x

    def attend(
        self, layer: int, x: Tensor, *, keys: Tensor | None = None, ablate: Sequence[int] = ()
    ) -> MultiHeadResult:
        """Layer `layer`'s attention on residual x (B, T, M); its keys read `keys` if given.

        ablate: heads of this layer whose output is zeroed before the heads are merged.
        """
        t = x.shape[1]
        norm = self.norm_attn[layer]
        hook = None
        if ablate:
            keep = torch.ones(self.config.n_heads, 1, 1, device=x.device)
            keep[list(ablate)] = 0.0

            def hook(heads: Tensor) -> Tensor:  # (B, H, T, D)
                return heads * keep

        h = norm(x)
        k = None if keys is None else norm(keys)
        return self.attn[layer](
            h,
            k,
            None if keys is None else h,
            self.mask[:t, :t],
            rope=self._rope(t),
            head_hook=hook,
            check_finite=False,
        )

    def after_attention(self, layer: int, x: Tensor) -> Tensor:
        """The rest of layer `layer` after its attention: x + mlp(LN(x)), or x without MLP."""
        return x + self.mlp[layer](self.norm_mlp[layer](x)) if self.config.mlp else x

    def forward(self, tokens: Tensor, ablate: Sequence[Head] = ()) -> InductionForward:
        """tokens (B, T) -> logits (B, T, V + 1) and every layer's attention.

        ablate: (layer, head) pairs whose output is zeroed (the head is silenced).
        """
        if tokens.dim() != 2 or tokens.shape[1] > self.task.seq_len:
            raise ValueError(
                f"tokens: expected (B, T) with T <= {self.task.seq_len}, got {tuple(tokens.shape)}"
            )
        check_heads(ablate, self.config)
        x = self.embed_tokens(tokens)
        residual, layers = [x], []
        for i in range(self.config.n_layers):
            att = self.attend(i, x, ablate=[h for layer, h in ablate if layer == i])
            x = self.after_attention(i, x + att.output)
            residual.append(x)
            layers.append(att)
        logits = self.unembed(self.norm_out(x))  # (B, T, V + 1)
        return InductionForward(logits, tuple(layers), tuple(residual))


def check_heads(heads: Sequence[Head], config: InductionConfig) -> tuple[Head, ...]:
    """Return heads as a tuple of (layer, head) pairs, each inside the model; else ValueError."""
    out = []
    for pair in heads:
        ok = isinstance(pair, tuple | list) and len(pair) == 2
        if ok:
            layer, head = pair
            ok = 0 <= layer < config.n_layers and 0 <= head < config.n_heads
        if not ok:
            raise ValueError(
                f"ablate: expected (layer, head) pairs with layer in [0, {config.n_layers - 1}] "
                f"and head in [0, {config.n_heads - 1}], got {pair!r}"
            )
        out.append((int(pair[0]), int(pair[1])))
    return tuple(out)


def make_model(task: InductionTask, config: InductionConfig) -> InductionModel:
    """The model, initialised from config.seed (torch's global generator is left alone)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        return InductionModel(task, config)


def repeated_loss(logits: Tensor, batch: InductionBatch) -> Tensor:
    """Mean cross-entropy of the next token over the repeated part only (what copying predicts).

    logits (B, T, V + 1): position q predicts token q + 1; q counts once q >= n.
    """
    v = logits.shape[-1]
    target = batch.tokens[:, 1:]  # (B, T - 1)
    losses = F.cross_entropy(logits[:, :-1].reshape(-1, v), target.reshape(-1), reduction="none")
    keep = batch.repeated().reshape(-1)
    return losses[keep].mean()


# --- measuring the heads ----------------------------------------------------------------------


@dataclass(frozen=True)
class HeadReport:
    """The model on the probe: the loss it is trained on and what each head does."""

    loss: float  # mean next-token loss on the repeated part (nats)
    previous_token: Tensor  # (L, H) previous_token_score, averaged over the probe
    induction: Tensor  # (L, H) induction_score with each sequence's own n, averaged
    maps: Tensor  # (L, H, T, T) every head's weights on the example (the probe's first row)
    ablate: tuple[Head, ...]


def scores_of(weights: Tensor, repeat: Tensor) -> tuple[Tensor, Tensor]:
    """Previous-token and induction scores (L, H) of weights (L, B, H, T, T), averaged over B.

    Each sequence's induction score uses its own n, on its first two copies (BOS, then n
    tokens twice: the T' = 1 + 2n first positions, start=1), as lesson 12 scores SmolLM2 on n
    tokens read twice; a causal map's top-left T' x T' block is exactly the map of those T'
    tokens. Later copies have several earlier occurrences to share the weight between.
    """
    prev = previous_token_score(weights).mean(1)  # (L, H)
    ind = torch.stack(
        [
            induction_score(weights[:, b, :, : 1 + 2 * n, : 1 + 2 * n], n, start=1)
            for b, n in enumerate(repeat.tolist())
        ]
    ).mean(0)  # (L, H)
    return prev, ind


@torch.no_grad()
def evaluate(
    model: InductionModel, probe: InductionBatch, ablate: Sequence[Head] = ()
) -> HeadReport:
    """Loss and per-head scores of the model on the probe, with `ablate`'s heads silenced."""
    was_training = model.training
    model.eval()
    out = model(probe.tokens, ablate=ablate)
    model.train(was_training)
    weights = out.weights  # (L, B, H, T, T)
    prev, ind = scores_of(weights, probe.repeat)
    return HeadReport(
        loss=float(repeated_loss(out.logits, probe)),
        previous_token=prev,
        induction=ind,
        maps=weights[:, 0].clone(),
        ablate=check_heads(ablate, model.config),
    )


def make_probe(task: InductionTask, config: InductionConfig) -> InductionBatch:
    """The fixed measuring batch: row 0 (the example) has n = example_repeat, the rest vary."""
    g = torch.Generator().manual_seed(10_000 + config.seed)
    n = torch.randint(task.min_repeat, task.max_repeat + 1, (config.probe_size,), generator=g)
    n[0] = example_repeat(task)
    return make_sequences(task, n, g)


@torch.no_grad()
def key_composition(model: InductionModel, probe: InductionBatch) -> Tensor:
    """How much layer 1's heads find their keys through layer 0's heads' outputs.

    Entry [h1, h0]: layer-1 head h1's induction score on the probe when its keys read the
    residual stream *without* layer-0 head h0's output (queries and values unchanged), next to
    column H (the last): its score with nothing removed. A large drop is K-composition.
    Returns (H, H + 1); ValueError for a 1-layer model.
    """
    cfg = model.config
    if cfg.n_layers < 2:
        raise ValueError("key_composition: needs n_layers >= 2, got a 1-layer model")
    was_training = model.training
    model.eval()
    x0 = model.embed_tokens(probe.tokens)  # (B, T, M)
    att0 = model.attend(0, x0)
    x1 = model.after_attention(0, x0 + att0.output)  # (B, T, M) layer 1's input
    d = model.attn[0].d_head
    w_o = model.attn[0].out_proj.weight  # (M, H * D)
    cols = []
    for h0 in range(cfg.n_heads):
        part = att0.heads[:, h0] @ w_o[:, h0 * d : (h0 + 1) * d].T  # (B, T, M) head h0's write
        w = model.attend(1, x1, keys=x1 - part).weights  # (B, H, T, T)
        cols.append(scores_of(w[None], probe.repeat)[1][0])  # (H,)
    cols.append(scores_of(model.attend(1, x1).weights[None], probe.repeat)[1][0])
    model.train(was_training)
    return torch.stack(cols, dim=1)  # (H, H + 1)


def later_copy_weights(weights: Tensor, repeat: Tensor) -> tuple[float, float]:
    """Where an induction head looks from the third copy on: the first occurrence, or any?

    weights (B, T, T): one head on sequences BOS + n tokens repeated, repeat (B,) each n.
    Over the queries i >= 2n + 1 (the third copy on), the mean weight on the key after the
    *first* occurrence of token i (key ((i - 1) mod n) + 2, inside the first n + 1 positions)
    and on every key after an earlier occurrence (i + 1 - j a multiple of n, 2 <= j <= i).
    Returns (first, every); nan when no sequence reaches a third copy.
    """
    b, t, _ = weights.shape
    i = torch.arange(t, device=weights.device)[:, None]  # (T, 1) queries
    j = torch.arange(t, device=weights.device)[None, :]  # (1, T) keys
    n = repeat.to(weights.device)[:, None, None]  # (B, 1, 1)
    every = (j >= 2) & (j <= i) & ((i + 1 - j) % n == 0)  # (B, T, T) x_{j-1} = x_i
    first = j == (i - 1) % n + 2  # (B, T, T)
    late = (i >= 2 * n + 1)[..., 0]  # (B, T) queries of the third copy on
    on_first = (weights * first).sum(-1)[late]  # (Q,)
    on_every = (weights * every).sum(-1)[late]  # (Q,)
    return float(on_first.mean()), float(on_every.mean())


@dataclass(frozen=True)
class HeadWeights:
    """One head's projection weights, as nn.Linear stores them (biases left out)."""

    w_q: Tensor  # (D, M): q = x @ w_q.T
    w_k: Tensor  # (D, M): k = x @ w_k.T
    w_v: Tensor  # (D, M): v = x @ w_v.T
    w_o: Tensor  # (M, D): the head's columns of the output projection, out = v @ w_o.T


def head_weights(model: InductionModel, layer: int, head: int) -> HeadWeights:
    """Head `head` of layer `layer`'s four weight matrices (detached); ValueError off the model."""
    ((layer, head),) = check_heads([(layer, head)], model.config)
    attn = model.attn[layer]
    part = slice(head * attn.d_head, (head + 1) * attn.d_head)
    return HeadWeights(
        attn.q_proj.weight[part].detach(),  # (D, M)
        attn.k_proj.weight[part].detach(),  # (D, M)
        attn.v_proj.weight[part].detach(),  # (D, M)
        attn.out_proj.weight[:, part].detach(),  # (M, D)
    )


def composition_score(w_a: Tensor, w_b: Tensor) -> Tensor:
    """||w_a @ w_b||_F / (||w_a||_F ||w_b||_F): how much w_a reads what w_b writes, in [0, 1].

    Elhage et al. (2021): w_b is an earlier head's W_OV, w_a a later head's W_QK (K-composition),
    W_QK.T (Q-composition) or W_OV (V-composition). Random matrices of the toy's size already
    score about 0.18 (tests/models/test_induction.py): a score means something against that
    baseline.
    """
    return torch.linalg.norm(w_a @ w_b) / (torch.linalg.norm(w_a) * torch.linalg.norm(w_b))


COMPOSITIONS = ("K", "Q", "V")


@torch.no_grad()
def composition_scores(model: InductionModel) -> Tensor:
    """(3, H, H) the K-, Q- and V-composition of layer-1 head h1 (row) with layer-0 head h0.

    From the weights alone (Elhage et al. 2021), with W_QK = w_q.T @ w_k and W_OV = w_o @ w_v
    (both (M, M), column-vector convention: score = x_i.T W_QK x_j, a head writes W_OV x_j).
    Biases, LayerNorm and positions are left out. ValueError for a 1-layer model.
    """
    cfg = model.config
    if cfg.n_layers < 2:
        raise ValueError("composition_scores: needs n_layers >= 2, got a 1-layer model")
    out = torch.zeros(len(COMPOSITIONS), cfg.n_heads, cfg.n_heads)
    for h1 in range(cfg.n_heads):
        late = head_weights(model, 1, h1)
        w_qk = late.w_q.T @ late.w_k  # (M, M)
        reads = (w_qk, w_qk.T, late.w_o @ late.w_v)  # K, Q, V: (M, M) each
        for h0 in range(cfg.n_heads):
            early = head_weights(model, 0, h0)
            w_ov = early.w_o @ early.w_v  # (M, M)
            for c, w_a in enumerate(reads):
                out[c, h1, h0] = composition_score(w_a, w_ov)
    return out


# --- training ---------------------------------------------------------------------------------


@dataclass
class InductionHistory:
    """What a run recorded: every step's training loss; every record_every steps the probe."""

    train_loss: list[float] = field(default_factory=list)  # one per step
    steps: list[int] = field(default_factory=list)  # the recorded steps (0 = untrained)
    loss: list[float] = field(default_factory=list)  # probe loss on the repeated part
    previous_token: list[Tensor] = field(default_factory=list)  # (L, H) per record
    induction: list[Tensor] = field(default_factory=list)  # (L, H) per record
    maps: list[Tensor] = field(default_factory=list)  # (L, H, T, T) per record
    seconds: float = 0.0  # time spent in run()

    @property
    def phase_step(self) -> int | None:
        """The first recorded step whose probe loss is under PHASE_LOSS (None: not yet)."""
        return next((s for s, v in zip(self.steps, self.loss, strict=True) if v < PHASE_LOSS), None)

    def scores(self, which: str) -> Tensor:
        """(R, L, H) the recorded "previous_token" or "induction" scores."""
        if which not in ("previous_token", "induction"):
            raise ValueError(f"which: expected 'previous_token' or 'induction', got {which!r}")
        return torch.stack(getattr(self, which))


@dataclass(frozen=True)
class CurveShape:
    """Where a recorded loss curve falls fastest, and how flat it is before that.

    A plateau, then a cliff (Olsson et al. 2022's phase change seen in a loss curve) shows as a
    `flattest` near 0 and a long `plateau`; a loss that falls steadily has neither.
    """

    window: int  # steps over which a fall is measured
    cliff: float  # nats fallen over the steepest `window` steps
    cliff_at: int  # the step where that window starts
    flattest: float  # the slowest `window`-step fall from step `window` to the cliff / cliff
    plateau: int  # the longest stretch before the cliff where every `window`-step fall is
    # under `flat` x the cliff (steps, window included; 0: no such window)


def curve_shape(
    steps: Sequence[int], loss: Sequence[float], window: int = 50, flat: float = 0.2
) -> CurveShape:
    """The cliff and the plateau of a loss recorded at evenly spaced steps (see CurveShape).

    flattest is nan when the cliff comes within the first `window` steps (nothing before it).
    """
    every = steps[1] - steps[0] if len(steps) > 1 else 0
    if every <= 0 or window % every or len(steps) <= window // every:
        raise ValueError(
            f"steps: expected evenly spaced records dividing window={window} and spanning more "
            f"than it, got {len(steps)} records every {every} steps"
        )
    w = window // every  # records per window
    falls = [loss[i] - loss[i + w] for i in range(len(loss) - w)]  # falls[i] from steps[i]
    c = max(range(len(falls)), key=falls.__getitem__)
    before = falls[w:c]  # windows starting after the first `window` steps, before the cliff
    flattest = min(before) / falls[c] if before else math.nan
    run = longest = 0
    for f in falls[:c]:
        run = run + 1 if f < flat * falls[c] else 0
        longest = max(longest, run)
    span = (longest - 1) * every + window if longest else 0
    return CurveShape(window, falls[c], steps[c], flattest, span)


class InductionRun:
    """A model, its optimiser, its data stream and its history: train in chunks, resume exactly.

    Everything random comes from config.seed (the model's initial weights, the batches, the
    probe), so two runs with the same settings record the same numbers.
    """

    def __init__(self, task: InductionTask, config: InductionConfig) -> None:
        self.task, self.config = task, config
        self.model = make_model(task, config)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=config.lr)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.probe = make_probe(task, config)
        self.step = 0
        self.history = InductionHistory()
        self._record()

    def _record(self) -> None:
        r, h = evaluate(self.model, self.probe), self.history
        h.steps.append(self.step)
        h.loss.append(r.loss)
        h.previous_token.append(r.previous_token)
        h.induction.append(r.induction)
        h.maps.append(r.maps)

    def train_step(self) -> float:
        """One AdamW step on a fresh batch; returns its loss on the repeated part."""
        batch = sample_batch(self.task, self.config.batch_size, self.generator)
        loss = repeated_loss(self.model(batch.tokens).logits, batch)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.step += 1
        value = loss.item()
        self.history.train_loss.append(value)
        if self.step % self.config.record_every == 0:
            self._record()
        return value

    def run(
        self,
        steps: int,
        *,
        until_formed: bool = False,
        callback: Callable[[InductionRun], bool | None] | None = None,
    ) -> InductionHistory:
        """Train `steps` more steps (fewer with until_formed: stop at the phase change).

        callback(run) is called after every record; returning True stops the run there.
        """
        _check_int("steps", steps, 0, 10**7)
        start, end = time.perf_counter(), self.step + steps
        try:
            while self.step < end:
                self.train_step()
                if self.step % self.config.record_every == 0:
                    if callback is not None and callback(self):
                        break
                    if until_formed and self.history.phase_step is not None:
                        break
        finally:
            self.history.seconds += time.perf_counter() - start
        return self.history


def ln_vocab(task: InductionTask) -> float:
    """ln V: the loss of a uniform guess over the random tokens."""
    return math.log(task.vocab)
