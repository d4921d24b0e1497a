"""A paged KV cache (vLLM's PagedAttention): keys and values in fixed-size blocks, found by table.

A server decoding many requests at once does not know how long each will grow. Reserving one
contiguous (max_len, ...) cache per request wastes every slot the request never fills. Paging
cuts the cache into blocks of `block_size` tokens taken from one shared pool as a sequence
grows; each sequence keeps a block table, the list of its physical blocks in order:
    token at position p  ->  block table[p // block_size], slot p % block_size
Blocks need not be adjacent, nor in order. Waste is at most block_size - 1 slots a sequence
(its last, partly filled block) instead of max_len - length.

Attention through the table reads the same keys and values in the same order, so it equals
attention over the contiguous cache exactly. Here the blocks are gathered into one tensor and
handed to the core's attention; a real kernel walks the table block by block with the online
softmax of flash.py, never building the copy.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ._checks import check_positive_int, check_sizes, check_tensor, shape_str
from .functional import AttentionResult, scaled_dot_product_attention


class PagedKVCache:
    """A pool of n_blocks blocks, each block_size tokens of Hkv heads of width D (keys, values).

    Blocks are handed out lowest free first and come back to the pool when a sequence is freed.
    The pool lives on `device` (default: torch's), where the keys and values appended must be.
    """

    def __init__(
        self,
        n_blocks: int,
        block_size: int,
        n_kv_heads: int,
        d_head: int,
        *,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> None:
        check_sizes(n_blocks=n_blocks, block_size=block_size, n_kv_heads=n_kv_heads, d_head=d_head)
        self.block_size, self.n_kv_heads, self.d_head = block_size, n_kv_heads, d_head
        shape = (n_blocks, n_kv_heads, block_size, d_head)
        self.k_blocks = torch.zeros(shape, dtype=dtype, device=device)  # (N, Hkv, bs, D)
        self.v_blocks = torch.zeros(shape, dtype=dtype, device=device)
        self.free_blocks: list[int] = list(range(n_blocks))
        self.block_tables: dict[object, list[int]] = {}  # seq -> its physical blocks, in order
        self.lengths: dict[object, int] = {}  # seq -> its number of tokens

    @property
    def n_blocks(self) -> int:
        return self.k_blocks.shape[0]

    @property
    def block_bytes(self) -> int:
        """Bytes of one block: keys and values of block_size tokens."""
        return 2 * self.k_blocks[0].numel() * self.k_blocks.element_size()

    @property
    def bytes_in_use(self) -> int:
        """Bytes of the blocks that sequences hold now (full or partly filled)."""
        return self.block_bytes * (self.n_blocks - len(self.free_blocks))

    def slot(self, seq: object, position: int) -> tuple[int, int]:
        """(physical block, offset in it) of token `position` of sequence `seq`."""
        length = self.lengths[self._known(seq)]
        if not 0 <= position < length:
            raise ValueError(f"position: expected 0 <= position < {length}, got {position}")
        return self.block_tables[seq][position // self.block_size], position % self.block_size

    def append(self, seq: object, k: Tensor, v: Tensor) -> None:
        """Append keys and values k, v (Hkv, Tnew, D) to sequence seq, taking blocks as needed."""
        want = (self.n_kv_heads, self.d_head)
        for name, x in (("k", k), ("v", v)):
            check_tensor(name, x, ndims=(3,))
            if (x.shape[0], x.shape[2]) != want or x.shape != k.shape:
                raise ValueError(
                    f"{name}: expected (Hkv, Tnew, D) = ({want[0]}, {k.shape[1]}, {want[1]}), got "
                    f"{shape_str(x.shape)}"
                )
        table = self.block_tables.setdefault(seq, [])
        start = self.lengths.setdefault(seq, 0)
        needed = math.ceil((start + k.shape[1]) / self.block_size) - len(table)
        if needed > len(self.free_blocks):
            raise RuntimeError(
                f"out of blocks: sequence {seq!r} needs {needed} more, {len(self.free_blocks)} of "
                f"{self.n_blocks} are free; free a finished sequence or make the pool larger"
            )
        table += [self.free_blocks.pop(0) for _ in range(needed)]
        for i in range(k.shape[1]):  # one token at a time: position -> (block, offset)
            block, offset = divmod(start + i, self.block_size)
            self.k_blocks[table[block], :, offset] = k[:, i]  # (Hkv, D)
            self.v_blocks[table[block], :, offset] = v[:, i]
        self.lengths[seq] = start + k.shape[1]

    def free(self, seq: object) -> None:
        """Give sequence seq's blocks back to the pool."""
        self.free_blocks = sorted(self.free_blocks + self.block_tables.pop(self._known(seq)))
        del self.lengths[seq]

    def gather(self, seq: object) -> tuple[Tensor, Tensor]:
        """Sequence seq's keys and values in order, (Hkv, T, D) each, read through its table."""
        table = torch.tensor(self.block_tables[self._known(seq)])  # (n,)
        t = self.lengths[seq]

        def read(blocks: Tensor) -> Tensor:
            picked = blocks[table]  # (n, Hkv, bs, D) in the table's order
            return picked.transpose(0, 1).reshape(self.n_kv_heads, -1, self.d_head)[:, :t]

        return read(self.k_blocks), read(self.v_blocks)  # (Hkv, T, D) each

    def _known(self, seq: object) -> object:
        if seq not in self.block_tables:
            raise KeyError(f"seq: no sequence {seq!r} in the cache; known: {list(self.lengths)}")
        return seq


def paged_attention(
    query: Tensor, cache: PagedKVCache, seq: object, mask: Tensor | None = None
) -> AttentionResult:
    """Attention of query (H, Tq, D) over sequence seq's keys and values in the paged cache.

    H may be a multiple of the cache's Hkv (grouped-query attention); mask broadcasts to
    (H, Tq, T). Returns the core's AttentionResult, shapes (H, Tq, ...).
    """
    check_tensor("query", query, ndims=(3,))
    k, v = cache.gather(seq)  # (Hkv, T, D)
    if mask is not None and mask.dim() == 3:
        mask = mask[None]  # (1, H, Tq, T)
    att = scaled_dot_product_attention(query[None], k[None], v[None], mask)
    return AttentionResult(att.scores[0], att.weights[0], att.output[0], att.fully_masked[0])


@dataclass(frozen=True)
class PagingMemory:
    """Cache memory for a batch of sequences: reserved contiguously, or paged."""

    used_bytes: int | float  # what the tokens themselves need: sum of lengths x bytes_per_token
    contiguous_bytes: int | float  # every sequence reserves max_len tokens
    paged_bytes: int | float  # every sequence holds ceil(length / block_size) blocks

    @property
    def contiguous_waste(self) -> float:
        """Fraction of the contiguous reservation no token uses."""
        return 1 - self.used_bytes / self.contiguous_bytes

    @property
    def paged_waste(self) -> float:
        """Fraction of the paged blocks no token uses (the last block's empty slots)."""
        return 1 - self.used_bytes / self.paged_bytes


def paging_memory(
    lengths: Sequence[int], max_len: int, block_size: int, *, bytes_per_token: float
) -> PagingMemory:
    """Bytes a batch of sequences of these lengths uses, reserves contiguously, and pages.
    bytes_per_token: one token's cache over all layers, e.g. kv_cache_bytes(..., seq_len=1)."""
    check_sizes(max_len=max_len, block_size=block_size)
    if not bytes_per_token > 0:
        raise ValueError(f"bytes_per_token: expected a positive number, got {bytes_per_token}")
    lengths = list(lengths)
    if not lengths:
        raise ValueError("lengths: expected at least one sequence, got none")
    for n in lengths:
        check_positive_int("length", n)
        if n > max_len:
            raise ValueError(f"lengths: a sequence of {n} tokens exceeds max_len={max_len}")
    paged_tokens = sum(math.ceil(n / block_size) * block_size for n in lengths)
    tokens = (sum(lengths), len(lengths) * max_len, paged_tokens)  # used, reserved, paged
    return PagingMemory(*(n * bytes_per_token for n in tokens))
