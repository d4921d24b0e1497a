"""FlashAttention's forward in plain torch: exact attention tile by tile, in O(T) memory.

Naive attention stores every score S = q @ k.T and weight P, two (Tq, Tk) matrices: O(T^2).
FlashAttention takes one tile of queries at a time and streams the key/value tiles past it,
keeping for each query row a running max m, a running sum l and an unnormalised output acc:

    s     = q_tile @ k_tile.T * scale      (bq, bk): the only scores that ever exist
    m_new = max(m, rowmax(s))
    c     = exp(m - m_new)                 shrinks what was summed under the old max
    p     = exp(s - m_new)
    l     = c * l + rowsum(p)
    acc   = c * acc + p @ v_tile
    after the last key tile: output = acc / l,  lse = m + log(l)

The result is exact, not an approximation. `online_softmax` runs the same recurrence on one row.

Memory model of the byte counts: tiles sit in fast on-chip memory (SRAM); q, k, v, any mask and
the output sit in main memory (HBM). A step reads its k and v tiles (the q tile too when a query
tile starts, and the mask tile when a mask is given); when a query tile ends it writes the
output tile and lse, one number per row. Counts cover every batch and head (GQA: per query head).
"""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from torch import Tensor

from ._checks import check_attention_inputs, check_positive_int, check_tensor
from .functional import repeat_kv
from .masks import causal_mask

BLOCK = 128  # queries and keys per tile unless block_size says otherwise


@dataclass(frozen=True)
class FlashResult:
    """FlashAttention's output and each row's log-sum-exp (its backward needs it); no weights."""

    output: Tensor  # (..., Tq, Dv); 0 for a row whose keys are all masked
    lse: Tensor  # (..., Tq) log(sum_j exp(scores_ij)); -inf for a fully masked row


@dataclass(frozen=True)
class FlashStep:
    """One frame of the tile loop: the state after folding key tile j into query tile i."""

    i: int  # query tile index
    j: int  # key tile index
    rows: tuple[int, int]  # query positions [start, stop)
    cols: tuple[int, int]  # key positions [start, stop)
    scores: Tensor  # (..., bq, bk) this tile's scaled scores, -inf where masked
    m: Tensor  # (..., bq) running max of the scores seen so far
    l: Tensor  # (..., bq) running sum of exp(score - m)
    acc: Tensor  # (..., bq, Dv) running sum of exp(score - m) * v, not yet divided by l
    last: bool  # the query tile's last key tile: its output and lse were written
    bytes_read: int  # HBM -> SRAM in this step
    bytes_written: int  # SRAM -> HBM in this step

    @property
    def output(self) -> Tensor:
        """(..., bq, Dv) acc / l: the attention output over the keys seen so far."""
        return _normalise(self.acc, self.l)


class SoftmaxState(NamedTuple):
    seen: int  # how many entries of x were read
    m: Tensor  # () max of x[:seen]
    l: Tensor  # () sum of exp(x[:seen] - m)


def _fold(m: Tensor, l: Tensor, s: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Fold scores s (..., n) into the running max m and sum l (...) -> m, l, c, p."""
    m_new = torch.maximum(m, s.amax(dim=-1))  # (...)
    m_ref = m_new.masked_fill(torch.isneginf(m_new), 0.0)  # nothing seen yet: no -inf - -inf
    c = torch.exp(m - m_ref)  # (...) rescales the old sums; 0 while nothing was seen
    p = (s - m_ref.unsqueeze(-1)).exp_()  # (..., n) 0 where masked
    return m_new, c * l + p.sum(dim=-1), c, p


def _normalise(acc: Tensor, l: Tensor) -> Tensor:
    return acc / torch.where(l > 0, l, 1.0).unsqueeze(-1)  # a row with no keys stays 0


def online_softmax_steps(x: Tensor, chunk_size: int = 1) -> Iterator[SoftmaxState]:
    """Read a row x (T,) chunk by chunk; yield the running (m, l) after each chunk.

    m_new = max(m, max(chunk));  l = l * exp(m - m_new) + sum(exp(chunk - m_new))
    """
    check_tensor("x", x, ndims=(1,), finite=False)
    if bool(torch.isnan(x).any() | torch.isposinf(x).any()):
        raise ValueError("x: expected finite values or -inf (masked), got NaN or +inf")
    check_positive_int("chunk_size", chunk_size)
    m, l = x.new_tensor(float("-inf")), x.new_zeros(())
    for start in range(0, len(x), chunk_size):
        m, l, _, _ = _fold(m, l, x[start : start + chunk_size])
        yield SoftmaxState(min(start + chunk_size, len(x)), m, l)


def online_softmax(x: Tensor, chunk_size: int = 1) -> Tensor:
    """softmax of a row x (T,) from one pass of running (m, l): exp(x - m) / l.

    Equals torch.softmax(x, 0); -inf entries get 0, and an all -inf row gives 0, not NaN.
    """
    *_, (_, m, l) = online_softmax_steps(x, chunk_size)  # run to the end, keep the last state
    return torch.exp(x - m) / l if l > 0 else torch.zeros_like(x)


def _tiles(n: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(start + size, n)) for start in range(0, n, size)]


def _loop(q, k, v, mask, causal, scale, block_q, block_k, out, lse) -> Iterator[FlashStep]:
    """The tile loop; it writes each finished query tile into out and lse (main memory)."""
    nbytes = q.element_size()
    for i, (r0, r1) in enumerate(_tiles(q.shape[-2], block_q)):
        q_tile = q[..., r0:r1, :]  # (..., bq, D) read once, kept on chip
        q_scaled = q_tile * scale  # scaling q once costs less than scaling every score tile
        m = q.new_full(q_tile.shape[:-1], float("-inf"))  # (..., bq)
        l = q.new_zeros(q_tile.shape[:-1])  # (..., bq)
        acc = q.new_zeros((*q_tile.shape[:-1], v.shape[-1]))  # (..., bq, Dv)
        # causal: key tiles starting after the tile's last query are all masked; skip them
        cols = [t for t in _tiles(k.shape[-2], block_k) if not causal or t[0] < r1]
        for j, (c0, c1) in enumerate(cols):
            k_tile, v_tile = k[..., c0:c1, :], v[..., c0:c1, :]  # (..., bk, D), (..., bk, Dv)
            read = (k_tile.numel() + v_tile.numel() + (q_tile.numel() if j == 0 else 0)) * nbytes
            s = q_scaled @ k_tile.transpose(-2, -1)  # (..., bq, bk)
            if mask is not None:
                tile_mask = mask[..., r0:r1, c0:c1]  # (..., bq, bk)
                s = s.masked_fill(~tile_mask, float("-inf"))
                read += tile_mask.numel()  # one byte per bool
            if causal and c1 - 1 > r0:  # built on chip from the positions, never read
                visible = causal_mask(r1 - r0, c1 - c0, offset=r0 - c0, device=q.device)
                s = s.masked_fill(~visible, float("-inf"))
            m, l, c, p = _fold(m, l, s)
            acc = c.unsqueeze(-1) * acc + p @ v_tile  # (..., bq, Dv)
            last = j == len(cols) - 1
            if last:
                out[..., r0:r1, :] = _normalise(acc, l)
                lse[..., r0:r1] = m + torch.log(l)  # log 0 = -inf for a fully masked row
            written = (acc.numel() + l.numel()) * nbytes if last else 0
            yield FlashStep(i, j, (r0, r1), (c0, c1), s, m, l, acc, last, read, written)


def _prepare(query, key, value, mask, causal=False, scale=None, block_size=BLOCK) -> tuple:
    n_rep, scale = check_attention_inputs(query, key, value, mask, scale, finite=True)
    if n_rep > 1:
        key, value = repeat_kv(key, n_rep), repeat_kv(value, n_rep)  # (B, H, Tk, D)
    blocks = block_size if isinstance(block_size, tuple) else (block_size,) * 2
    if len(blocks) != 2:
        raise ValueError(f"block_size: expected an int or (block_q, block_k), got {block_size}")
    block_q, block_k = (check_positive_int("block_size", b) for b in blocks)
    if not isinstance(causal, bool):
        raise TypeError(f"causal: expected a bool, got {type(causal).__name__}")
    target = (*query.shape[:-1], key.shape[-2])  # (..., Tq, Tk)
    if mask is not None:
        mask = mask.to(query.device).expand(target)  # a view: no copy
    out = query.new_zeros((*query.shape[:-1], value.shape[-1]))  # (..., Tq, Dv)
    lse = query.new_empty(query.shape[:-1])  # (..., Tq)
    return query, key, value, mask, causal, scale, block_q, block_k, out, lse


def flash_attention_steps(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None,
                          **options: Any) -> Iterator[FlashStep]:  # fmt: skip
    """FlashAttention one step at a time: a FlashStep per (query tile, key tile), in loop order.
    The arguments are flash_attention's; inputs are checked before the first step."""
    if unknown := sorted(set(options) - {"causal", "scale", "block_size"}):
        raise TypeError(f"flash_attention_steps: expected options causal, scale, block_size; "
                        f"got {unknown}")  # fmt: skip
    return _loop(*_prepare(query, key, value, mask, **options))


def flash_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    *,
    causal: bool = False,
    scale: float | None = None,
    block_size: int | tuple[int, int] = BLOCK,
) -> FlashResult:
    """Exact attention computed tile by tile, never holding more than (bq, bk) scores.

    query, key, value, mask and scale are scaled_dot_product_attention's (grouped-query heads
    too); the output equals its softmax(scores) @ v. causal: also hide key j from query i when
    j > i (torch's is_causal); key tiles wholly in the future are skipped, and no (Tq, Tk) mask
    is built. block_size: queries and keys per tile, an int or (block_q, block_k); it need not
    divide Tq or Tk.
    """
    *args, out, lse = _prepare(query, key, value, mask, causal, scale, block_size)
    for _ in _loop(*args, out, lse):  # each query tile's last step fills its rows of out, lse
        pass
    return FlashResult(output=out, lse=lse)
