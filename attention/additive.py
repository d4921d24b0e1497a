"""Additive (Bahdanau) attention: a small MLP scores each query-key pair.

    score(q, k) = w_v . tanh(W_q q + W_k k)

Unlike the dot product it works when queries and keys have different widths.
"""

import torch
from torch import Tensor, nn

from ._checks import check_batch, check_mask, check_sizes, check_tensor, shape_str
from .functional import AttentionResult, masked_softmax


class AdditiveAttention(nn.Module):
    """Score with w_v . tanh(W_q q + W_k k), softmax over keys, average the values."""

    def __init__(self, query_size: int, key_size: int, hidden_size: int) -> None:
        super().__init__()
        check_sizes(query_size=query_size, key_size=key_size, hidden_size=hidden_size)
        self.w_q = nn.Linear(query_size, hidden_size, bias=False)
        self.w_k = nn.Linear(key_size, hidden_size, bias=False)
        self.w_v = nn.Linear(hidden_size, 1, bias=False)

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
    ) -> AttentionResult:
        """query (B, Tq, Dq), key (B, Tk, Dk), value (B, Tk, Dv), mask -> (B, Tq, Tk)."""
        check_batch("query", query, self.w_q.in_features)
        check_batch("key", key, self.w_k.in_features)
        check_tensor("value", value, ndims=(3,))
        if key.shape[:2] != value.shape[:2] or query.shape[0] != key.shape[0]:
            raise ValueError(
                f"value: expected batch and length matching key {shape_str(key.shape[:2])} and "
                f"query batch {query.shape[0]}, got value shape {shape_str(value.shape)}"
            )
        b, tq, tk = query.shape[0], query.shape[1], key.shape[1]
        features = self.w_q(query).unsqueeze(2) + self.w_k(key).unsqueeze(1)  # (B, Tq, Tk, h)
        scores = self.w_v(torch.tanh(features)).squeeze(-1)  # (B, Tq, Tk)
        if mask is not None:
            check_mask(mask, (b, tq, tk))
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = masked_softmax(scores)  # (B, Tq, Tk)
        fully_masked = torch.isneginf(scores).all(dim=-1)  # (B, Tq)
        return AttentionResult(scores, weights, weights @ value, fully_masked)  # output (B, Tq, Dv)
