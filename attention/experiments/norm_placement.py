"""Post-LN against pre-LN, measured (lesson 10): gradient norms per layer of a deep encoder.

    norm_placement   per-layer gradient norms of a deep post-LN and pre-LN encoder at
                     initialisation and after training with and without warmup

Torch runs on one thread (small tensors; a second thread only waits on a busy machine).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..positional import sinusoidal_positional_encoding
from ..sandbox.limits import SEEDS, bounded, check_fields, checked, one_thread
from ..transformer import Encoder
from ._checks import check_rate

__all__ = ["NormPlacementParams", "NormPlacementResult", "NormPlacementRun", "norm_placement"]


# Lesson 10 --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NormPlacementParams:
    """A deep encoder stack learns to reverse random token sequences in place with Adam.

    Four runs from the same initial weights and batches: post-LN and pre-LN, each with a
    constant learning rate and with a linear warmup over `warmup` steps.
    """

    n_layers: int = bounded(12, 1, 48)
    d_model: int = bounded(32, 1, 512)
    n_heads: int = bounded(4, 1, 64)
    seq_len: int = bounded(12, 1, 256)
    vocab: int = bounded(16, 2, 10_000)
    batch_size: int = bounded(32, 1, 4096)
    steps: int = bounded(60, 1, 100_000)
    lr: float = checked(1e-2, check_rate)
    warmup: int = bounded(30, 1, 100_000)
    seed: int = bounded(0, *SEEDS)

    def __post_init__(self) -> None:
        check_fields(self)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")


@dataclass(frozen=True)
class NormPlacementRun:
    norm_first: bool  # True: pre-LN
    warmup: bool
    losses: tuple[float, ...]  # training loss per step
    grad_norms: tuple[tuple[float, ...], ...]  # (steps, n_layers): each layer's gradient norm
    final_grad_norms: tuple[float, ...]  # (n_layers,) on a fresh batch after training


@dataclass(frozen=True)
class NormPlacementResult:
    params: NormPlacementParams
    init_grad_norms: dict[str, tuple[float, ...]]  # "post-LN"/"pre-LN" -> (n_layers,) at step 0
    runs: dict[tuple[str, bool], NormPlacementRun]  # ("post-LN" or "pre-LN", warmup) -> run
    seconds: float


def _layer_grad_norms(encoder: Encoder) -> tuple[float, ...]:
    """The gradient norm of each layer's parameters taken together."""
    return tuple(
        math.sqrt(sum(float(q.grad.pow(2).sum()) for q in layer.parameters() if q.grad is not None))
        for layer in encoder.layers
    )


class _Stack(nn.Module):
    def __init__(self, p: NormPlacementParams, norm_first: bool) -> None:
        super().__init__()
        self.embed = nn.Embedding(p.vocab, p.d_model)
        self.encoder = Encoder(p.n_layers, p.d_model, p.n_heads, norm_first=norm_first)
        self.head = nn.Linear(p.d_model, p.vocab)
        self.register_buffer("pe", sinusoidal_positional_encoding(p.seq_len, p.d_model))

    def loss(self, x: Tensor) -> Tensor:
        """x (B, T) ids; target: the same ids reversed, so every position needs attention."""
        logits = self.head(self.encoder(self.embed(x) + self.pe).output)  # (B, T, V)
        return nn.functional.cross_entropy(logits.flatten(0, 1), x.flip(1).flatten())


def norm_placement(params: NormPlacementParams) -> NormPlacementResult:
    """Gradient norms per layer and loss curves of post-LN and pre-LN stacks, +- warmup."""
    p = params
    start = time.perf_counter()
    init, runs = {}, {}
    with one_thread(), torch.random.fork_rng(devices=[]):
        for norm_first in (False, True):
            name = "pre-LN" if norm_first else "post-LN"
            torch.manual_seed(p.seed)
            initial = _Stack(p, norm_first).state_dict()
            for warm in (False, True):
                model = _Stack(p, norm_first)
                model.load_state_dict(initial)
                opt = torch.optim.Adam(model.parameters(), lr=p.lr, betas=(0.9, 0.98))
                g = torch.Generator().manual_seed(p.seed + 1)  # the same batches in every run
                losses, norms = [], []
                for step in range(p.steps):
                    factor = min(1.0, (step + 1) / p.warmup) if warm else 1.0
                    for group in opt.param_groups:
                        group["lr"] = p.lr * factor
                    loss = model.loss(
                        torch.randint(0, p.vocab, (p.batch_size, p.seq_len), generator=g)
                    )
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    norms.append(_layer_grad_norms(model.encoder))
                    losses.append(loss.item())
                    opt.step()
                init[name] = norms[0]
                g_eval = torch.Generator().manual_seed(p.seed + 2)
                opt.zero_grad(set_to_none=True)
                model.loss(
                    torch.randint(0, p.vocab, (p.batch_size, p.seq_len), generator=g_eval)
                ).backward()
                runs[name, warm] = NormPlacementRun(
                    norm_first, warm, tuple(losses), tuple(norms), _layer_grad_norms(model.encoder)
                )
    return NormPlacementResult(p, init, runs, time.perf_counter() - start)
