"""The Transformer's layers: the position-wise feed-forward network and the encoder and decoder
layers, post-LN or pre-LN.

    post-LN (the 2017 paper):  x = LN(x + Sublayer(x))
    pre-LN (most modern code): x = x + Sublayer(LN(x))

Every sub-layer keeps the shape (B, T, M), which is what makes the residual sums possible.
The stacks and the whole encoder-decoder model are in transformer.py.
"""

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ._checks import check_positive_int
from .multihead import MultiHeadAttention, MultiHeadResult, split_heads


class FeedForward(nn.Module):
    """Position-wise MLP, the same at every position: max(0, x W_1 + b_1) W_2 + b_2."""

    def __init__(self, d_model: int, d_ff: int | None = None, dropout: float = 0.0) -> None:
        super().__init__()
        d_ff = 4 * d_model if d_ff is None else check_positive_int("d_ff", d_ff)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, M) -> (B, T, M)."""
        return self.linear2(self.dropout(torch.relu(self.linear1(x))))  # (B, T, M)


@dataclass(frozen=True)
class EncoderLayerResult:
    self_attn: MultiHeadResult
    output: Tensor  # (B, T, M)


@dataclass(frozen=True)
class DecoderLayerResult:
    self_attn: MultiHeadResult  # its k, v are the key/value cache for the next step
    cross_attn: MultiHeadResult
    output: Tensor  # (B, T, M)


class _Block(nn.Module):
    """What encoder and decoder layers share: the constructor, norm placement, dropout."""

    cross_attention = False
    _torch_names = {"self_attn": "self_attn"}  # our attention -> torch's, for load_torch_weights

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int | None = None,
        *,
        norm_first: bool = False,
        dropout: float = 0.0,
        eps: float = 1e-5,
    ) -> None:
        """Build the sub-layers; d_ff=None means 4 * d_model, norm_first=True means pre-LN."""
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        n_sublayers = 3 if self.cross_attention else 2  # one LayerNorm each
        self.norms = nn.ModuleList(nn.LayerNorm(d_model, eps=eps) for _ in range(n_sublayers))
        self.dropout = nn.Dropout(dropout)
        if self.cross_attention:  # made last, so the weights above draw as an encoder layer's
            self.cross_attn = MultiHeadAttention(d_model, n_heads)

    def _residual(self, x: Tensor, i: int, sublayer) -> tuple[Tensor, object]:
        """Apply sublayer i with its residual and LayerNorm; return (new x, sublayer result)."""
        norm = self.norms[i]
        out = sublayer(norm(x) if self.norm_first else x)
        y = out.output if isinstance(out, MultiHeadResult) else out
        x = x + self.dropout(y)
        return (x if self.norm_first else norm(x)), out

    @torch.no_grad()
    def _load_common(self, layer: nn.Module) -> "_Block":
        if layer.norm_first != self.norm_first:
            raise ValueError(
                f"layer: expected norm_first={self.norm_first}, got {layer.norm_first}"
            )
        act = layer.activation
        if not (act is torch.nn.functional.relu or isinstance(act, nn.ReLU)):
            raise ValueError("layer: expected a ReLU activation (activation='relu')")
        for ours, theirs in self._torch_names.items():
            getattr(self, ours).load_torch_weights(getattr(layer, theirs))
        for ours, theirs in ((self.ffn.linear1, layer.linear1), (self.ffn.linear2, layer.linear2)):
            ours.load_state_dict(theirs.state_dict())
        for i, norm in enumerate(self.norms):
            norm.load_state_dict(getattr(layer, f"norm{i + 1}").state_dict())
        return self


class EncoderLayer(_Block):
    """Self-attention then feed-forward, each wrapped in a residual and a LayerNorm."""

    def forward(self, x: Tensor, mask: Tensor | None = None) -> EncoderLayerResult:
        """x (B, T, M), mask broadcastable to (B, T, T) (True = may attend) -> (B, T, M)."""
        x, attn = self._residual(x, 0, lambda h: self.self_attn(h, mask=mask))
        x, _ = self._residual(x, 1, self.ffn)
        return EncoderLayerResult(self_attn=attn, output=x)

    def load_torch_weights(self, layer: nn.TransformerEncoderLayer) -> "EncoderLayer":
        """Copy the weights of a torch.nn.TransformerEncoderLayer (ReLU, same sizes)."""
        return self._load_common(layer)


class DecoderLayer(_Block):
    """Masked self-attention, cross-attention to the encoder's output, then feed-forward."""

    cross_attention = True  # _Block adds self.cross_attn and a third LayerNorm
    _torch_names = {"self_attn": "self_attn", "cross_attn": "multihead_attn"}

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        *,
        past_kv: tuple[Tensor, Tensor] | None = None,
        memory_kv: tuple[Tensor, Tensor] | None = None,
    ) -> DecoderLayerResult:
        """x (B, T, M), memory (B, S, M) -> (B, T, M).

        self_mask broadcasts to (B, T, T) (usually causal and padding), memory_mask to
        (B, T, S). For step-by-step decoding pass the previous step's self-attention k, v as
        past_kv and its cross-attention k, v as memory_kv (memory is then not re-projected).
        """

        def cross(h: Tensor) -> MultiHeadResult:
            if memory_kv is None:
                return self.cross_attn(h, memory, memory, memory_mask)
            q = split_heads(self.cross_attn.q_proj(h), self.cross_attn.n_heads)  # (B, H, T, D)
            return self.cross_attn.attend(q, *memory_kv, memory_mask)

        x, sa = self._residual(x, 0, lambda h: self.self_attn(h, mask=self_mask, past_kv=past_kv))
        x, ca = self._residual(x, 1, cross)
        x, _ = self._residual(x, 2, self.ffn)
        return DecoderLayerResult(self_attn=sa, cross_attn=ca, output=x)

    def load_torch_weights(self, layer: nn.TransformerDecoderLayer) -> "DecoderLayer":
        """Copy the weights of a torch.nn.TransformerDecoderLayer (ReLU, same sizes)."""
        return self._load_common(layer)
