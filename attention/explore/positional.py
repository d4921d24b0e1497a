"""PositionalEncodingExplorer: the sinusoidal table and the shuffle test.

Without positions self-attention only permutes its output when its input is shuffled; with
positions it does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..multihead import MultiHeadAttention
from ..positional import sinusoidal_positional_encoding
from ._util import SEEDS, bounded, check_fields, check_int, flag, seeded_mha

__all__ = [
    "PE_D_MODEL_MAX",
    "PE_DIMS_MAX",
    "PE_SEQ_MAX",
    "PositionalExploration",
    "PositionalParams",
    "ShuffleCheck",
    "explore_positional",
    "shuffle_permutation",
]

PE_SEQ_MAX = 64
PE_D_MODEL_MAX = 128
PE_DIMS_MAX = 8  # curves drawn at once


@dataclass(frozen=True)
class PositionalParams:
    """Settings of the positional-encoding explorer.

    seq_len (1..64) tokens of width d_model (2..128). dims: the encoding columns drawn as
    curves (1..8 distinct, each < d_model). shuffle: 0 keeps the order, any other value is
    the seed of a shuffle (never the identity when seq_len > 1). seed: embeddings and weights.
    add_positions: which shuffle test the explorer shows (the result holds both).
    """

    seq_len: int = bounded(16, 1, PE_SEQ_MAX)
    d_model: int = bounded(32, 2, PE_D_MODEL_MAX)
    dims: tuple[int, ...] = (0, 1, 8, 9)  # a fast sin/cos pair and a slower one
    shuffle: int = bounded(1, *SEEDS)
    seed: int = bounded(0, *SEEDS)
    add_positions: bool = flag(True)

    def __post_init__(self) -> None:
        check_fields(self)
        if not isinstance(self.dims, tuple):
            raise TypeError(f"dims: expected a tuple of ints, got {type(self.dims).__name__}")
        if not 1 <= len(self.dims) <= PE_DIMS_MAX or len(set(self.dims)) != len(self.dims):
            raise ValueError(f"dims: expected 1 to {PE_DIMS_MAX} distinct ints, got {self.dims}")
        for i in self.dims:
            check_int("dims", i, 0, self.d_model - 1)


@dataclass(frozen=True)
class ShuffleCheck:
    """Self-attention on tokens in order and shuffled: is the output only permuted?"""

    inputs: Tensor  # (T, M) what attention sees for tokens in order (x, or x + PE)
    shuffled_inputs: Tensor  # (T, M) the same for the shuffled tokens (x[perm], or x[perm] + PE)
    output: Tensor  # (T, M) attention(inputs)
    shuffled_output: Tensor  # (T, M) attention(shuffled_inputs)
    permuted_output: Tensor  # (T, M) output[perm]: what a mere permutation would give
    max_abs_diff: float  # max |shuffled_output - permuted_output|; ~1e-7 means "only permuted"


@dataclass(frozen=True)
class PositionalExploration:
    """The sinusoidal table, its selected columns, and the shuffle test with and without it."""

    params: PositionalParams
    encoding: Tensor  # (T, M) sinusoidal table, values in [-1, 1]
    curves: Tensor  # (len(dims), T) encoding[:, dims].T
    permutation: Tensor  # (T,) long: shuffled token i is original token permutation[i]
    tokens: Tensor  # (T, M) token embeddings, N(0, 1) entries
    without_positions: ShuffleCheck
    with_positions: ShuffleCheck


def shuffle_permutation(seq_len: int, shuffle: int) -> Tensor:
    """The permutation `shuffle` names: identity for 0, else a seeded non-identity shuffle."""
    if shuffle == 0 or seq_len == 1:
        return torch.arange(seq_len)
    perm = torch.randperm(seq_len, generator=torch.Generator().manual_seed(shuffle))
    if torch.equal(perm, torch.arange(seq_len)):
        perm = perm.roll(1)  # a shuffle button that changes nothing would teach nothing
    return perm


def _shuffle_check(mha: MultiHeadAttention, x: Tensor, perm: Tensor, pe: Tensor) -> ShuffleCheck:
    inputs, shuffled_inputs = x + pe, x[perm] + pe  # positions stay with the slots
    with torch.no_grad():
        both = mha(torch.stack([inputs, shuffled_inputs])).output  # (2, T, M)
    return ShuffleCheck(
        inputs=inputs,
        shuffled_inputs=shuffled_inputs,
        output=both[0],
        shuffled_output=both[1],
        permuted_output=both[0][perm],
        max_abs_diff=float((both[1] - both[0][perm]).abs().max()),
    )


def _explore_positional(p: PositionalParams) -> PositionalExploration:
    pe = sinusoidal_positional_encoding(p.seq_len, p.d_model)  # (T, M)
    perm = shuffle_permutation(p.seq_len, p.shuffle)
    x = torch.randn(p.seq_len, p.d_model, generator=torch.Generator().manual_seed(p.seed))
    mha = seeded_mha(p.d_model, 1, p.seed)
    return PositionalExploration(
        params=p,
        encoding=pe,
        curves=pe[:, list(p.dims)].T.contiguous(),
        permutation=perm,
        tokens=x,
        without_positions=_shuffle_check(mha, x, perm, torch.zeros_like(pe)),
        with_positions=_shuffle_check(mha, x, perm, pe),
    )


def explore_positional(params: PositionalParams | None = None) -> PositionalExploration:
    """Build the sinusoidal table and shuffle the tokens fed to self-attention, with and without it.

    Self-attention is permutation-equivariant: attention(x[perm]) == attention(x)[perm]. Adding
    PE (which stays with the slots when the tokens move) breaks that: order now matters.
    """
    return _explore_positional(params or PositionalParams())
