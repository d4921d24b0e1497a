"""Attention sinks measured: the first token's share of attention, by layer and query distance.

A trained decoder gives its first token far more weight than "uniform over the past" (about
1 / position) would. Two different things produce that, and a short text cannot tell them
apart; the distance from the query to the first token can:

* a **pull towards early tokens** that fades with distance: near the start of a text the first
  token is one of few, and a head that likes the beginning of a text reads it; hundreds of
  tokens later the same head has let it go;
* an **attention sink**: the first token keeps a large share of the weight of queries at every
  distance, hundreds of tokens away, because the head parks there the weight it has nowhere
  better to put (a softmax row must sum to 1).

`first_token_by_distance` runs the model once and returns, per layer and head, the mean weight
on key 0 of the queries in each band of positions (query position = distance to token 0). It
keeps only that column of each map (a copy: a view would keep the whole map), so 1,024 tokens
cost one forward pass and no 30 x 9 x T x T tensor, and it makes the next-token logits for the
losses LOSS_ROWS positions at a time instead of one (T, V) tensor with its log-softmax (400 MB
at 1,024 tokens). Lesson 12's peak: benchmarks/lesson_memory.py. A layer is a *sink layer* when
its far band keeps at least SINK_THRESHOLD of the weight.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from ..functional import scaled_dot_product_attention
from ..models.pretrained import token_losses

__all__ = ["SINK_BANDS", "SINK_THRESHOLD", "SinkBands", "first_token_by_distance"]

SINK_BANDS: tuple[tuple[int, int], ...] = ((8, 64), (64, 256), (256, 1024))
"""Query positions [start, stop) of the three bands: near, middle, far from the first token."""

LOSS_ROWS = 256  # positions whose logits are made at once for the losses (50 MB at V = 49152)

SINK_THRESHOLD = 0.2
"""A sink layer keeps at least this share of its far queries' weight on the first token (a
uniform spread over 256 or more keys would give it under 0.004)."""


@dataclass(frozen=True)
class SinkBands:
    """The first token's share of attention per layer, head and band of query positions."""

    bands: tuple[tuple[int, int], ...]  # query positions [start, stop), stop <= n_tokens
    share: Tensor  # (L, H, n_bands) mean weight on key 0 of the band's queries
    n_tokens: int  # T, the text's length
    losses: Tensor = field(repr=False)  # (T - 1,) nats per predicted token, full attention
    threshold: float = SINK_THRESHOLD

    @property
    def layer_share(self) -> Tensor:
        """(L, n_bands): the share averaged over each layer's heads."""
        return self.share.mean(1)

    @property
    def sink_layers(self) -> tuple[int, ...]:
        """Layers whose far band still gives the first token >= threshold of its weight."""
        far = self.layer_share[:, -1]  # (L,)
        return tuple(int(i) for i in (far >= self.threshold).nonzero().flatten())

    @property
    def fading_layers(self) -> tuple[int, ...]:
        """Layers that give the first token >= threshold when near, < threshold when far."""
        near, far = self.layer_share[:, 0], self.layer_share[:, -1]
        fading = (near >= self.threshold) & (far < self.threshold)  # (L,)
        return tuple(int(i) for i in fading.nonzero().flatten())


def _check_bands(bands: Sequence[tuple[int, int]], t: int) -> tuple[tuple[int, int], ...]:
    bands = tuple((int(a), int(b)) for a, b in bands)
    if not bands:
        raise ValueError("bands: expected at least one (start, stop) pair, got none")
    for (a, b), nxt in zip(bands, (*bands[1:], None), strict=True):
        if not 1 <= a < b or (nxt is not None and nxt[0] < b):
            raise ValueError(
                f"bands: expected increasing (start, stop) pairs with 1 <= start < stop, "
                f"not overlapping, got {list(bands)}"
            )
    if bands[-1][0] >= t:
        raise ValueError(
            f"ids: the last band starts at query {bands[-1][0]} but the text has only {t} "
            f"tokens; give a longer text or nearer bands"
        )
    return tuple((a, min(b, t)) for a, b in bands)


@torch.no_grad()
def first_token_by_distance(
    model: Any,
    ids: Tensor,
    bands: Sequence[tuple[int, int]] = SINK_BANDS,
    *,
    threshold: float = SINK_THRESHOLD,
) -> SinkBands:
    """The weight each layer and head gives key 0, averaged over each band of query positions.

    Args:
        model: a causal pretrained model (SmolLM2) whose forward takes `attention_fn`.
        ids: (1, T) token ids. A band's stop beyond T is cut to T.
        bands: (start, stop) query positions, increasing; start >= 1 (query 0 can only read
            itself).
        threshold: the far-band share from which a layer counts as a sink layer.
    """
    if ids.dim() != 2 or ids.shape[0] != 1:
        raise ValueError(f"ids: expected shape (1, T), got {tuple(ids.shape)}")
    bands = _check_bands(bands, ids.shape[1])
    columns: list[Tensor] = []

    def attend(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> Tensor:
        result = scaled_dot_product_attention(q, k, v, mask, check_finite=False)
        # a copy: a view of the column would keep the layer's whole (1, H, T, T) map alive,
        # 30 of them (1.1 GB at 1,024 tokens) by the end of the forward pass
        columns.append(result.weights[0, :, :, 0].clone())  # (H, T) each query's weight on key 0
        return result.output  # (1, H, T, D)

    out = model(ids, need_weights=False, last_only=True, attention_fn=attend)
    first = torch.stack(columns)  # (L, H, T)
    share = torch.stack([first[..., a:b].mean(-1) for a, b in bands], dim=-1)  # (L, H, n_bands)
    last, t = out.hidden_states[-1], ids.shape[1]  # (1, T, M) the last block's output
    losses = []  # rows a..a+LOSS_ROWS predict the next LOSS_ROWS tokens: the same as all at once
    for a in range(0, t - 1, LOSS_ROWS):
        rows = slice(a, a + LOSS_ROWS + 1)
        losses.append(token_losses(model.head(last[:, rows]), ids[:, rows])[0])  # (<= LOSS_ROWS,)
    return SinkBands(bands, share, t, torch.cat(losses), threshold)  # losses: (T - 1,)
