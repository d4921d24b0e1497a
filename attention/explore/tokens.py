"""TokenAttentionView: a typed sentence through one untrained self-attention layer, as lines."""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from .._checks import check_divisible
from ..multihead import MultiHeadAttention
from ..positional import sinusoidal_positional_encoding
from ._util import MAX_LEN, MAX_WIDTH, SEEDS, bounded, check_fields, check_int

__all__ = [
    "DEFAULT_SENTENCE",
    "QK_GAIN",
    "TokensExploration",
    "TokensParams",
    "TokenView",
    "as_head_weights",
    "explore_tokens",
    "token_view",
    "tokenize",
]

DEFAULT_SENTENCE = "The animal didn't cross the street because it was too tired"
QK_GAIN = 1.5  # std of W_q, W_k entries is QK_GAIN / sqrt(d_model)


def tokenize(sentence: str) -> tuple[str, ...]:
    """Split into words (keeping "didn't" whole) and punctuation marks."""
    return tuple(re.findall(r"\w+(?:'\w+)?|[^\w\s]", sentence))


@dataclass(frozen=True)
class TokensParams:
    """A small untrained self-attention layer over a typed sentence (deterministic).

    head: the head TokenAttentionView draws (explore_tokens computes them all); token_view
    checks it against the heads drawn, which are other weights' when the view was given some.
    """

    sentence: str = DEFAULT_SENTENCE
    d_model: int = bounded(32, 1, MAX_WIDTH)
    n_heads: int = 4
    seed: int = bounded(0, *SEEDS)
    head: int = bounded(0, 0, 2**31 - 1)

    def __post_init__(self) -> None:
        n = len(tokenize(self.sentence))
        if not 1 <= n <= MAX_LEN:
            raise ValueError(f"sentence: expected 1 to {MAX_LEN} tokens, got {n}")
        check_fields(self)
        check_divisible("d_model", self.d_model, self.n_heads)


@dataclass(frozen=True)
class TokensExploration:
    tokens: tuple[str, ...]  # T tokens
    weights: Tensor  # (H, T, T) self-attention weights


@lru_cache(maxsize=16)
@torch.no_grad()
def _token_layer(d_model: int, n_heads: int, seed: int) -> MultiHeadAttention:
    # nn.Linear's default init gives scores so small that every row is nearly uniform (mean
    # largest weight 0.16 on the default sentence); a larger W_q, W_k spreads them as a trained
    # layer's are (0.59), so the lines have something to show.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = MultiHeadAttention(d_model, n_heads).eval()
        for proj in (layer.q_proj, layer.k_proj):
            proj.weight.normal_(0.0, QK_GAIN / math.sqrt(d_model))
    return layer


def _embed(token: str, d_model: int, seed: int) -> Tensor:
    # The same word (ignoring case) always gets the same vector: a stand-in for a learned table.
    g = torch.Generator().manual_seed(zlib.crc32(token.lower().encode()) ^ seed)
    return torch.randn(d_model, generator=g)  # (M,)


@torch.no_grad()
def explore_tokens(params: TokensParams) -> TokensExploration:
    """Embed each token (+ sinusoidal positions) and run one untrained MultiHeadAttention."""
    tokens = tokenize(params.sentence)
    m = params.d_model
    emb = torch.stack([_embed(t, m, params.seed) for t in tokens])  # (T, M)
    x = emb + sinusoidal_positional_encoding(len(tokens), m)  # (T, M)
    result = _token_layer(m, params.n_heads, params.seed)(x[None])
    return TokensExploration(tokens=tokens, weights=result.weights[0])  # (H, T, T)


def as_head_weights(weights: Tensor) -> Tensor:
    """Accept (Tq, Tk), (H, Tq, Tk) or (1, H, Tq, Tk) weights -> (H, Tq, Tk) float.

    Raises:
        TypeError: not a tensor (numpy arrays and lists are converted).
        ValueError: another rank, an empty tensor, or a batch larger than 1.
    """
    w = torch.as_tensor(weights, dtype=torch.float32)
    if w.dim() == 4:
        if w.shape[0] != 1:
            raise ValueError(f"weights: expected batch 1 in (B, H, Tq, Tk), got {tuple(w.shape)}")
        w = w[0]
    if w.dim() == 2:
        w = w[None]  # (1, Tq, Tk)
    if w.dim() != 3 or w.numel() == 0:
        raise ValueError(
            f"weights: expected (Tq, Tk), (H, Tq, Tk) or (1, H, Tq, Tk), got {tuple(w.shape)}"
        )
    return w


@dataclass(frozen=True)
class TokenView:
    """What TokenAttentionView shows: one head's weights between two token lists."""

    query_tokens: tuple[str, ...]  # Tq
    key_tokens: tuple[str, ...]  # Tk
    weights: Tensor  # (H, Tq, Tk) every head
    head: int  # the head drawn

    @property
    def head_weights(self) -> Tensor:
        """(Tq, Tk) weights of the chosen head."""
        return self.weights[self.head]


def token_view(
    weights: Tensor,
    query_tokens: tuple[str, ...],
    key_tokens: tuple[str, ...] | None = None,
    head: int = 0,
) -> TokenView:
    """Check weights against the tokens and pick a head.

    Raises:
        ValueError: token counts that differ from Tq / Tk, or a head outside [0, H).
    """
    w = as_head_weights(weights)  # (H, Tq, Tk)
    n_heads, tq, tk = w.shape
    key_tokens = query_tokens if key_tokens is None else key_tokens
    if len(query_tokens) != tq:
        raise ValueError(
            f"tokens: expected {tq} query tokens for weights {tuple(w.shape)}, "
            f"got {len(query_tokens)}"
        )
    if len(key_tokens) != tk:
        raise ValueError(
            f"key_tokens: expected {tk} key tokens for weights {tuple(w.shape)}, "
            f"got {len(key_tokens)}"
        )
    check_int("head", head, 0, n_heads - 1)
    return TokenView(tuple(map(str, query_tokens)), tuple(map(str, key_tokens)), w, head)
