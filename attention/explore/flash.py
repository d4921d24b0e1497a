"""FlashStepper: FlashAttention's tile loop one step at a time, beside naive attention.

Each step folds one key tile into one query tile's running max m, running sum l and
unnormalised output acc (attention.flash). After step s the learner sees which tile is on chip,
m, l and acc / l for every query row, the exact softmax matrix that naive attention stores, and
the bytes both move between main memory and the on-chip tile memory (attention.memory).
Every random draw is seeded, and the steps of one setting are computed once and cached.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from ..flash import FlashStep, flash_attention_steps
from ..functional import scaled_dot_product_attention
from ..masks import causal_mask
from ..memory import MemoryTraffic, flash_attention_traffic, naive_attention_traffic
from ._util import SEEDS, bounded, check_fields, check_int, flag

__all__ = ["FlashExploration", "FlashParams", "explore_flash"]

FLASH_SEQ_MAX = 32  # longest sequence the stepper offers (32 x 32 = 1024 steps at tile size 1)
FLASH_D_HEAD_MAX = 16
FLASH_TILES_MAX = 16  # tiles per side at most: 256 steps, and every tile stays visible
VALUE_BYTES = 4  # float32, the dtype the stepper computes in

# The sizes of the "at real sizes" curves: a head of width 64, tiles of 128 x 128, 2-byte numbers
REAL_D_HEAD = 64
REAL_BLOCK = 128
REAL_VALUE_BYTES = 2
REAL_SEQ_LENS = tuple(2**p for p in range(8, 18))  # 256 .. 131072

NOT_READ, READ, ON_CHIP = 0, 1, 2  # values of FlashExploration.tile_state


def min_block_size(seq_len: int) -> int:
    """The smallest tile the stepper offers: at most FLASH_TILES_MAX tiles per side."""
    return math.ceil(seq_len / FLASH_TILES_MAX)


def flash_step_count(seq_len: int, block_size: int, causal: bool) -> int:
    """How many (query tile, key tile) steps flash_attention takes on a (T, T) problem.

    Without a mask: ceil(T / B)^2. Causal: key tiles that start after a query tile's last row
    are skipped, so query tile i takes i + 1 key tiles (with equal tile sizes).
    """
    n = math.ceil(seq_len / block_size)
    if not causal:
        return n * n
    starts = range(0, seq_len, block_size)
    return sum(sum(1 for c0 in starts if c0 < min(r0 + block_size, seq_len)) for r0 in starts)


@dataclass(frozen=True)
class FlashParams:
    """Settings of the FlashAttention stepper.

    seq_len: queries = keys (2..32). block_size: queries and keys per tile, from
    min_block_size(seq_len) (at most 16 tiles per side) to seq_len.
    causal: hide future keys (and skip the tiles wholly in the future). seed: q, k, v.
    step: how many tiles have been folded in (0 = none yet, up to flash_step_count(...)).
    d_head: width of q, k and v (1..16).
    """

    seq_len: int = bounded(8, 2, FLASH_SEQ_MAX)
    block_size: int = 2
    causal: bool = flag(False)
    seed: int = bounded(0, *SEEDS)
    step: int = 0
    d_head: int = bounded(4, 1, FLASH_D_HEAD_MAX)

    def __post_init__(self) -> None:
        check_fields(self)
        check_int("block_size", self.block_size, min_block_size(self.seq_len), self.seq_len)
        check_int("step", self.step, 0, self.n_steps)

    @property
    def n_steps(self) -> int:
        return flash_step_count(self.seq_len, self.block_size, self.causal)


@dataclass(frozen=True)
class TrafficCurves:
    """Bytes per head against the sequence length at real sizes (REAL_* constants)."""

    seq_lens: tuple[int, ...]
    naive_moved: tuple[float, ...]  # read + written by naive attention
    flash_moved: tuple[float, ...]  # read + written by flash attention
    naive_stored: tuple[float, ...]  # S and P kept in main memory: 2 T^2 numbers
    flash_stored: tuple[float, ...]  # lse kept in main memory: T numbers


@dataclass(frozen=True)
class FlashExploration:
    """The state after `params.step` steps, and the naive computation it will equal."""

    params: FlashParams
    query: Tensor  # (T, D)
    key: Tensor  # (T, D)
    value: Tensor  # (T, D)
    allowed: Tensor  # (T, T) bool, True = may attend
    weights: Tensor  # (T, T) softmax(q k^T / sqrt(D)): what naive attention writes to memory
    output: Tensor  # (T, D) weights @ v, the exact answer
    n_steps: int
    current: FlashStep | None  # the step just taken (None before the first)
    tile_state: Tensor  # (T, T) int: 0 not read yet, 1 read in an earlier step, 2 on chip now
    skipped: Tensor  # (T, T) bool: in a causal key tile wholly in the future, never read
    m: Tensor  # (T,) running max of each query row now; -inf before the row's first tile
    l: Tensor  # (T,) running sum of exp(score - m) now; 0 before the row's first tile
    partial: Tensor  # (T, D) acc / l now: the output over the keys seen so far (0 if none)
    started: Tensor  # (T,) bool: the row has folded in at least one key tile
    finished: Tensor  # (T,) bool: the row's output has been written to main memory
    final_m: Tensor  # (T,) m after the last step: the row's largest allowed score
    final_l: Tensor  # (T,) l after the last step: sum over allowed keys of exp(score - final_m)
    bytes_read: int  # flash, main memory -> chip, steps 1..step
    bytes_written: int  # flash, chip -> main memory, steps 1..step
    step_bytes: tuple[tuple[int, int], ...]  # (read, written) of every step, in order
    naive: MemoryTraffic  # naive attention for the same (T, T, D), float32
    flash_total: MemoryTraffic  # flash_attention_traffic for the same sizes (no causal skip)
    max_error: float  # max |partial - output| over finished rows (0.0 when none)
    curves: TrafficCurves

    @property
    def flash_read_total(self) -> int:
        return sum(r for r, _ in self.step_bytes)

    @property
    def flash_written_total(self) -> int:
        return sum(w for _, w in self.step_bytes)


@lru_cache(maxsize=8)
def _problem(seq_len: int, d_head: int, seed: int) -> tuple[Tensor, Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(seq_len, d_head, generator=g)  # (T, D)
    k = torch.randn(seq_len, d_head, generator=g)
    v = torch.randn(seq_len, d_head, generator=g)
    return q, k, v


@lru_cache(maxsize=16)
def _steps(seq_len: int, block_size: int, causal: bool, d_head: int, seed: int):
    q, k, v = _problem(seq_len, d_head, seed)
    steps = tuple(flash_attention_steps(q, k, v, causal=causal, block_size=block_size))
    allowed = causal_mask(seq_len) if causal else torch.ones(seq_len, seq_len, dtype=torch.bool)
    ref = scaled_dot_product_attention(q, k, v, allowed)
    final_m = torch.full((seq_len,), float("-inf"))
    final_l = torch.zeros(seq_len)
    read = torch.zeros(seq_len, seq_len, dtype=torch.bool)
    for s in steps:
        read[s.rows[0] : s.rows[1], s.cols[0] : s.cols[1]] = True
        if s.last:
            final_m[s.rows[0] : s.rows[1]] = s.m
            final_l[s.rows[0] : s.rows[1]] = s.l
    return steps, allowed, ref.weights, ref.output, final_m, final_l, ~read


@lru_cache(maxsize=1)
def traffic_curves() -> TrafficCurves:
    """Naive and flash traffic and storage per head at REAL_SEQ_LENS (see the constants)."""
    naive = [
        naive_attention_traffic(t, t, REAL_D_HEAD, bytes_per_value=REAL_VALUE_BYTES)
        for t in REAL_SEQ_LENS
    ]
    flash = [
        flash_attention_traffic(
            t, t, REAL_D_HEAD, block_size=REAL_BLOCK, bytes_per_value=REAL_VALUE_BYTES
        )
        for t in REAL_SEQ_LENS
    ]
    return TrafficCurves(
        seq_lens=REAL_SEQ_LENS,
        naive_moved=tuple(float(n.bytes_read + n.bytes_written) for n in naive),
        flash_moved=tuple(float(f.bytes_read + f.bytes_written) for f in flash),
        naive_stored=tuple(float(n.extra_bytes) for n in naive),
        flash_stored=tuple(float(f.extra_bytes) for f in flash),
    )


def explore_flash(params: FlashParams | None = None) -> FlashExploration:
    """Run FlashAttention on seeded (T, D) q, k, v and return its state after `params.step` steps.

    Rows of finished query tiles hold their final m, l and output; rows of the current tile hold
    the step's running values; rows not started hold m = -inf, l = 0 and a zero output.
    """
    p = params or FlashParams()
    t, d = p.seq_len, p.d_head
    steps, allowed, weights, output, final_m, final_l, skipped = _steps(
        t, p.block_size, p.causal, d, p.seed
    )
    q, k, v = _problem(t, d, p.seed)
    m = torch.full((t,), float("-inf"))
    l = torch.zeros(t)
    partial = torch.zeros(t, d)
    started = torch.zeros(t, dtype=torch.bool)
    finished = torch.zeros(t, dtype=torch.bool)
    tile_state = torch.full((t, t), NOT_READ, dtype=torch.int64)
    done = steps[: p.step]
    for s in done:
        (r0, r1), (c0, c1) = s.rows, s.cols
        tile_state[r0:r1, c0:c1] = READ
        m[r0:r1], l[r0:r1], partial[r0:r1] = s.m, s.l, s.output
        started[r0:r1] = True
        finished[r0:r1] = s.last
    current = done[-1] if done else None
    if current is not None:
        (r0, r1), (c0, c1) = current.rows, current.cols
        tile_state[r0:r1, c0:c1] = ON_CHIP
    err = (partial - output).abs()[finished]  # (rows finished, D)
    step_bytes = tuple((s.bytes_read, s.bytes_written) for s in steps)
    return FlashExploration(
        params=p,
        query=q,
        key=k,
        value=v,
        allowed=allowed,
        weights=weights,
        output=output,
        n_steps=len(steps),
        current=current,
        tile_state=tile_state,
        skipped=skipped,
        m=m,
        l=l,
        partial=partial,
        started=started,
        finished=finished,
        final_m=final_m,
        final_l=final_l,
        bytes_read=sum(r for r, _ in step_bytes[: p.step]),
        bytes_written=sum(w for _, w in step_bytes[: p.step]),
        step_bytes=step_bytes,
        naive=naive_attention_traffic(t, t, d, bytes_per_value=VALUE_BYTES),
        flash_total=flash_attention_traffic(
            t, t, d, block_size=p.block_size, bytes_per_value=VALUE_BYTES
        ),
        max_error=float(err.max()) if err.numel() else 0.0,
        curves=traffic_curves(),
    )
