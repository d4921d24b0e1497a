"""Sinusoidal positional encoding: attention itself ignores order, so positions are added.

PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))
PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._checks import check_positive_int


def sinusoidal_positional_encoding(
    seq_len: int, d_model: int, *, base: float = 10000.0, offset: int = 0
) -> Tensor:
    """Return the (seq_len, d_model) table for positions offset .. offset + seq_len - 1.

    Each pair of columns (2i, 2i+1) is a sine and cosine of one frequency; frequencies fall
    geometrically from 1 to 1/base along the width. Values lie in [-1, 1].
    """
    check_positive_int("seq_len", seq_len)
    check_positive_int("d_model", d_model)
    pos = torch.arange(offset, offset + seq_len, dtype=torch.float64)[:, None]  # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(M/2),)
    angles = pos / base ** (two_i / d_model)  # (T, ceil(M/2))
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # an odd width has one cosine fewer
    return pe.float()
