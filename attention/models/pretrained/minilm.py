"""all-MiniLM-L6-v2, a BERT encoder, with every attention map computed by the core.

x = LayerNorm(word_embedding[ids] + position_embedding[0..T-1] + type_embedding[0])
One block, 6 times (post-norm, residual around each half):
    h = LayerNorm(x + out(attention(x)))             12 heads of width 32, no causal mask
    x = LayerNorm(h + down(gelu(up(h))))
Every token attends to every other (bidirectional): the maps are full squares.
The attention is the core's MultiHeadAttention; each block returns what it computed (q, k, v,
weights, each head's output) in `out.layers`, and hooks and ablation work as .blocks describes.
sentence embedding = mean of the last hidden states over real tokens, scaled to length 1
(how sentence-transformers trained this model to compare sentences).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..._checks import shape_str
from ...multihead import AttentionFn, MultiHeadAttention, MultiHeadResult
from . import points
from .blocks import Emit, Hook, ModelOutput, ModelSizes, PretrainedModel, prepare_hooks, run_blocks
from .checks import check_ids
from .claims import encoder_layers


@dataclass(frozen=True)
class MiniLMConfig(ModelSizes):
    """Sizes of a BERT encoder. all-MiniLM-L6-v2: vocab_size 30522, d_model 384, 6 layers,
    12 heads, d_ff 1536 (the defaults below are its own)."""

    max_seq_len: int = 512
    n_types: int = 2  # token types (sentence A / B); every token here is type 0
    norm_eps: float = 1e-12

    @classmethod
    def from_tensors(cls, tensors: dict[str, Tensor]) -> MiniLMConfig:
        """Read the sizes from the weights' shapes (the head count is not stored: 12)."""
        vocab, d_model = tensors["embeddings.word_embeddings.weight"].shape
        n_layers = encoder_layers(tensors)  # checked: 0..n-1 all present, n <= len(tensors)
        return cls(
            vocab_size=vocab,
            d_model=d_model,
            n_layers=n_layers,
            n_heads=12,
            d_ff=tensors["encoder.layer.0.intermediate.dense.weight"].shape[0],
            max_seq_len=tensors["embeddings.position_embeddings.weight"].shape[0],
            n_types=tensors["embeddings.token_type_embeddings.weight"].shape[0],
        )


@dataclass(frozen=True)
class EncoderOutput(ModelOutput):
    """What one forward pass of the encoder computed: `layers` (q, k, v, weights, heads of each
    layer), `hidden_states`, `attentions` (each layer's weights), and:"""

    hidden: Tensor  # (B, T, M) the last layer's hidden states


class EncoderBlock(nn.Module):
    """Post-norm BERT block: LayerNorm(x + attention(x)), then LayerNorm(h + ffn(h)).

    The attention is the core's MultiHeadAttention (12 heads, biases, no positions of its own).
    """

    def __init__(self, cfg: MiniLMConfig) -> None:
        super().__init__()
        self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads)
        self.attn_norm = nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps)
        self.up = nn.Linear(cfg.d_model, cfg.d_ff)
        self.down = nn.Linear(cfg.d_ff, cfg.d_model)
        self.ffn_norm = nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps)

    def forward(self, x: Tensor, emit: Emit, **attn: Any) -> tuple[Tensor, MultiHeadResult]:
        """x (B, T, M) -> (output (B, T, M), what the attention computed), emitting the block's
        points; attn: the keywords of MultiHeadAttention.forward (mask, attention_fn, ...)."""
        a = self.attn(x, **emit.attention(attn))
        h = emit("resid_mid", self.attn_norm(x + emit("attn_out", a.output)))  # (B, T, M)
        return self.ffn_norm(h + emit("ffn", self.down(F.gelu(self.up(h))))), a


class MiniLM(PretrainedModel, family="minilm", causal=False, rotary=False):
    """The encoder; build it with `load_pretrained("minilm")` or `from_hf_tensors`."""

    def __init__(self, cfg: MiniLMConfig) -> None:
        super().__init__(cfg)
        self.word_embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_embed = nn.Embedding(cfg.max_seq_len, cfg.d_model)
        self.type_embed = nn.Embedding(cfg.n_types, cfg.d_model)
        self.embed_norm = nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps)
        self.layers = nn.ModuleList(EncoderBlock(cfg) for _ in range(cfg.n_layers))

    @torch.no_grad()
    def forward(
        self,
        ids: Tensor,
        *,
        attention_mask: Tensor | None = None,
        need_weights: bool = True,
        ablate: Iterable[tuple[int, int]] | None = None,
        hooks: Mapping[str, Hook] | None = None,
        attention_fn: AttentionFn | None = None,
    ) -> EncoderOutput:
        """Contextual hidden states for every token of `ids`, with what every layer computed.

        Args:
            ids: (B, T) token ids (tokenizer.encode adds [CLS] ... [SEP]).
            attention_mask: (B, T) bool, True = a real token, False = padding that no token
                may attend to. None: all tokens are real.
            need_weights: keep each layer's result (q, k, v, weights, heads).
            ablate, hooks, attention_fn: as SmolLM2.forward takes them (the same hook points).
        """
        cfg = self.cfg
        check_ids(ids, vocab_size=cfg.vocab_size, max_len=cfg.max_seq_len)
        mask = None
        if attention_mask is not None:
            if not isinstance(attention_mask, Tensor) or attention_mask.dtype != torch.bool:
                got = getattr(attention_mask, "dtype", type(attention_mask).__name__)
                raise TypeError(
                    f"attention_mask: expected torch.bool (True = real token), got {got}; "
                    "use attention_mask.bool()"
                )
            if attention_mask.shape != ids.shape:
                raise ValueError(
                    f"attention_mask: expected ids' shape {shape_str(ids.shape)}, got "
                    f"{shape_str(attention_mask.shape)}"
                )
            mask = attention_mask[:, None, None, :]  # (B, 1, 1, Tk): keys only
        hooks = prepare_hooks(self, hooks, ablate)
        positions = torch.arange(ids.shape[1], device=ids.device)  # (T,)
        x = self.word_embed(ids) + self.pos_embed(positions) + self.type_embed.weight[0]
        run = run_blocks(
            self.layers,
            self.embed_norm(x),  # (B, T, M)
            hooks,
            keep=points.DEFAULT if need_weights else (),
            mask=mask,
            attention_fn=attention_fn,
            check_finite=False,  # the inputs are finite by construction (checked ids)
        )
        return EncoderOutput(layers=run.layers, hidden_states=run.hidden_states, hidden=run.output)

    def sentence_embedding(self, ids: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """(B, T) ids -> (B, M) unit vectors: the mean hidden state over real tokens.

        Cosine similarity of two sentences is then a dot product of their embeddings.
        """
        hidden = self(ids, attention_mask=attention_mask, need_weights=False).hidden
        real = torch.ones_like(ids, dtype=torch.bool) if attention_mask is None else attention_mask
        weights = real.unsqueeze(-1).to(hidden)  # (B, T, 1)
        mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1)  # (B, M)
        return F.normalize(mean, dim=-1)

    @classmethod
    def from_hf_tensors(cls, tensors: dict[str, Tensor]) -> MiniLM:
        """Build the model around Hugging Face BertModel-named tensors without copying them."""
        cfg = MiniLMConfig.from_tensors(tensors)
        names = {
            "embeddings.word_embeddings.weight": "word_embed.weight",
            "embeddings.position_embeddings.weight": "pos_embed.weight",
            "embeddings.token_type_embeddings.weight": "type_embed.weight",
            "embeddings.LayerNorm.weight": "embed_norm.weight",
            "embeddings.LayerNorm.bias": "embed_norm.bias",
        }
        parts = {
            "attention.self.query": "attn.q_proj",
            "attention.self.key": "attn.k_proj",
            "attention.self.value": "attn.v_proj",
            "attention.output.dense": "attn.out_proj",
            "attention.output.LayerNorm": "attn_norm",
            "intermediate.dense": "up",
            "output.dense": "down",
            "output.LayerNorm": "ffn_norm",
        }
        for i in range(cfg.n_layers):
            for theirs, ours in parts.items():
                for p in ("weight", "bias"):
                    names[f"encoder.layer.{i}.{theirs}.{p}"] = f"layers.{i}.{ours}.{p}"
        return cls._from_named_tensors(cfg, tensors, names)
