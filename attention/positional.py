"""Positions: attention itself ignores order, so the model must be told where tokens are.

Three ways, from the original Transformer to today's LLMs:
  sinusoidal (added to the input)  PE[pos, 2i] = sin(pos / 10000^(2i / d_model)),
                                   PE[pos, 2i+1] = cos(same angle)
  RoPE (rotates q and k)           pair i at position m turns by m * base^(-2i / D)
  ALiBi (biases the scores)        scores[h, i, j] -= slope_h * |i - j|
"""

from functools import lru_cache

import torch
from torch import Tensor

from ._checks import check_base, check_int, check_positive_int, check_rope_inputs, check_sizes


def sinusoidal_positional_encoding(
    seq_len: int, d_model: int, *, base: float = 10000.0, offset: int = 0
) -> Tensor:
    """Return the (seq_len, d_model) table for positions offset .. offset + seq_len - 1.

    Each pair of columns (2i, 2i+1) is a sine and cosine of one frequency; frequencies fall
    geometrically from 1 to 1/base along the width. Values lie in [-1, 1].
    """
    check_sizes(seq_len=seq_len, d_model=d_model)
    check_base(base)
    check_int("offset", offset)
    pos = torch.arange(offset, offset + seq_len, dtype=torch.float64)[:, None]  # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(M/2),)
    angles = pos / base ** (two_i / d_model)  # (T, ceil(M/2))
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # an odd width has one cosine fewer
    return pe.float()


def apply_rope(
    x: Tensor, positions: Tensor, *, base: float = 10000.0, layout: str = "half"
) -> Tensor:
    """Rotate each pair of x's features by an angle proportional to its position (RoPE).

    Pair i of the token at position m turns by angle m * theta_i, theta_i = base^(-2i / D):
        (a, b) -> (a cos - b sin, b cos + a sin)
    A rotation keeps lengths, and rotating q by m and k by n makes q . k depend only on the
    offset m - n: queries and keys carry relative position without anything being added.

    x (..., T, D), D even, queries or keys, usually (B, H, T, D), -> the same shape and dtype;
    positions (T,) the rows' integer positions (e.g. arange(past, past + T)). The slowest pair
    turns by base^(-(D - 2) / D) per position. layout: which features form pair i. "half":
    (i, i + D/2), as in HF transformers' rotate_half; "interleaved": (2i, 2i + 1), as in Meta's
    LLaMA code and GGUF files.
    """
    check_rope_inputs(x, positions, base, layout)
    d = x.shape[-1]
    key = (tuple(positions.tolist()), d, float(base), x.dtype, x.device)
    cos, sin, turn = _rope_table(*key)  # (T, D/2) each
    if layout == "half":
        a, b = x[..., : d // 2], x[..., d // 2 :]  # (..., T, D/2) each
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)  # (..., T, D)
    if _complex_viewable(x):
        # The same rotation, 6x faster: pair (a, b) as the complex number a + ib, turned by
        # multiplying with cos + i sin = (a cos - b sin) + i (b cos + a sin).
        z = torch.view_as_complex(x.unflatten(-1, (d // 2, 2)))  # (..., T, D/2) complex
        return torch.view_as_real(z * turn).flatten(-2)  # (..., T, D)
    a, b = x[..., 0::2], x[..., 1::2]  # (..., T, D/2) each
    return torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1).flatten(-2)  # (..., T, D)


def _complex_viewable(x: Tensor) -> bool:
    # view_as_complex needs float32/64 pairs that sit side by side at even offsets
    strides_even = all(s % 2 == 0 for s in (x.storage_offset(), *x.stride()[:-1]))
    return x.dtype in (torch.float32, torch.float64) and x.stride(-1) == 1 and strides_even


@lru_cache(maxsize=64)
def _rope_table(
    positions: tuple[int, ...], d: int, base: float, dtype: torch.dtype, device: torch.device
) -> tuple[Tensor, Tensor, Tensor | None]:
    # Every layer rotates by the same angles: compute them once (in float64), as normal tensors
    # even under inference_mode: an inference tensor could not be saved for backward later.
    with torch.inference_mode(False):
        theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (D/2,)
        angles = torch.tensor(positions, dtype=torch.float64)[:, None] * theta  # (T, D/2)
        cos, sin = angles.cos().to(device, dtype), angles.sin().to(device, dtype)
        turn = torch.complex(cos, sin) if dtype in (torch.float32, torch.float64) else None
        return cos, sin, turn  # turn = cos + i sin, for the complex path


def alibi_slopes(n_heads: int) -> Tensor:
    """Return ALiBi's (H,) per-head slopes: a geometric sequence, as in the paper's reference.

    For H a power of two: slope_h = r^(h + 1), r = 2^(-8 / H), h = 0 .. H - 1 (H = 8 gives
    1/2, 1/4, ..., 1/256). Otherwise take the slopes of the largest power of two P < H, then
    every other slope of 2P for the remaining H - P heads.
    """
    check_positive_int("n_heads", n_heads)

    def power_of_two(n: int) -> list[float]:
        r = 2.0 ** (-8.0 / n)
        return [r ** (h + 1) for h in range(n)]

    p = 1 << (n_heads.bit_length() - 1)  # largest power of two <= n_heads
    slopes = power_of_two(p) + power_of_two(2 * p)[0::2][: n_heads - p]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(n_heads: int, tq: int, tk: int) -> Tensor:
    """Return ALiBi's (H, Tq, Tk) additive score bias: -slope_h * |query pos - key pos|.

    Added to q @ k.T / sqrt(D) instead of any positional encoding, it penalises far keys linearly,
    each head at its own slope. Query i sits at key position Tk - Tq + i (decoding with a cache).
    """
    check_sizes(tq=tq, tk=tk)
    if tq > tk:  # the queries are the last Tq of the keys' positions
        raise ValueError(
            f"tq: expected at most tk={tk} queries (they sit at the last Tq key positions), "
            f"got tq={tq}"
        )
    q_pos = torch.arange(tk - tq, tk)[:, None]  # (Tq, 1)
    distance = (q_pos - torch.arange(tk)[None, :]).abs()  # (Tq, Tk)
    return -alibi_slopes(n_heads)[:, None, None] * distance  # (H, Tq, Tk)
