"""The Transformer: encoder and decoder stacks of layers.py's layers, and a small encoder-decoder
model over token ids (embeddings scaled by sqrt(M), sinusoidal positions, tied output).
"""

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ._checks import check_positive_int, check_token_ids
from .layers import DecoderLayer, DecoderLayerResult, EncoderLayer, EncoderLayerResult
from .masks import causal_mask
from .positional import sinusoidal_positional_encoding

# per decoder layer (self k, self v, cross k, cross v), each (B, H, T or S, D)
DecoderCache = tuple[tuple[Tensor, Tensor, Tensor, Tensor], ...]


@dataclass(frozen=True)
class EncoderResult:
    layers: tuple[EncoderLayerResult, ...]
    output: Tensor  # (B, S, M)


@dataclass(frozen=True)
class DecoderResult:
    layers: tuple[DecoderLayerResult, ...]
    output: Tensor  # (B, T, M)

    @property
    def cache(self) -> DecoderCache:
        """The next step's key/value cache: pass it back as `cache`."""
        return tuple(
            (r.self_attn.k, r.self_attn.v, r.cross_attn.k, r.cross_attn.v) for r in self.layers
        )


class _Stack(nn.Module):
    """What Encoder and Decoder share: n_layers fresh layers of the subclass's `layer_type`, and
    the final LayerNorm a pre-LN stack needs (Identity for post-LN: its layers end with one)."""

    layer_type: type[nn.Module]  # EncoderLayer or DecoderLayer

    def __init__(
        self,
        n_layers: int,
        d_model: int,
        n_heads: int,
        d_ff: int | None = None,
        *,
        norm_first: bool = False,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        check_positive_int("n_layers", n_layers)
        self.layers = nn.ModuleList(
            self.layer_type(d_model, n_heads, d_ff, norm_first=norm_first, dropout=dropout)
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()


class Encoder(_Stack):
    """A stack of n_layers encoder layers; pre-LN stacks end with one more LayerNorm."""

    layer_type = EncoderLayer

    def forward(self, x: Tensor, mask: Tensor | None = None) -> EncoderResult:
        results = []
        for layer in self.layers:
            results.append(layer(x, mask))
            x = results[-1].output
        return EncoderResult(layers=tuple(results), output=self.norm(x))


class Decoder(_Stack):
    """A stack of n_layers decoder layers; pre-LN stacks end with one more LayerNorm."""

    layer_type = DecoderLayer

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        *,
        cache: DecoderCache | None = None,
    ) -> DecoderResult:
        """With `cache` (a previous DecoderResult.cache) x holds only the new positions."""
        if cache is not None and len(cache) != len(self.layers):
            raise ValueError(f"cache: expected {len(self.layers)} layers, got {len(cache)}")
        results = []
        for i, layer in enumerate(self.layers):
            past = None if cache is None else (cache[i][0], cache[i][1])
            mem_kv = None if cache is None else (cache[i][2], cache[i][3])
            results.append(layer(x, memory, self_mask, memory_mask, past_kv=past, memory_kv=mem_kv))
            x = results[-1].output
        return DecoderResult(layers=tuple(results), output=self.norm(x))


@dataclass(frozen=True)
class TransformerConfig:
    """Sizes of the encoder-decoder model; the defaults train on toy tasks in seconds."""

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 64
    n_heads: int = 4
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    d_ff: int | None = None  # None means 4 * d_model
    norm_first: bool = False
    dropout: float = 0.0
    max_len: int = 64
    pad_id: int = 0
    tie_output: bool = False  # share the target embedding with the output projection


@dataclass(frozen=True)
class TransformerResult:
    logits: Tensor  # (B, T, tgt_vocab_size)
    encoder: EncoderResult
    decoder: DecoderResult


class Transformer(nn.Module):
    """A small encoder-decoder Transformer over token ids, returning every attention map."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        c = self.config = config
        check_positive_int("max_len", c.max_len)
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, c.d_model, padding_idx=c.pad_id)
        kw = dict(norm_first=c.norm_first, dropout=c.dropout)
        self.encoder = Encoder(c.n_encoder_layers, c.d_model, c.n_heads, c.d_ff, **kw)
        self.decoder = Decoder(c.n_decoder_layers, c.d_model, c.n_heads, c.d_ff, **kw)
        # Entries of std 1/sqrt(M): after the sqrt(M) scaling below they have std 1, the same
        # size as the positional encoding, so neither drowns the other.
        for table in (self.src_embed, self.tgt_embed):
            nn.init.normal_(table.weight, std=c.d_model**-0.5)
            with torch.no_grad():
                table.weight[c.pad_id].zero_()
        self.generator = nn.Linear(c.d_model, c.tgt_vocab_size)
        if c.tie_output:
            self.generator.weight = self.tgt_embed.weight
        pe = sinusoidal_positional_encoding(c.max_len, c.d_model)
        self.register_buffer("pe", pe, persistent=False)  # (max_len, M)
        self.dropout = nn.Dropout(c.dropout)

    def _embed(self, tokens: Tensor, table: nn.Embedding, name: str, offset: int = 0) -> Tensor:
        """Token ids (B, T) -> embeddings * sqrt(M) + positional encoding, (B, T, M)."""
        check_token_ids(name, tokens, table.num_embeddings, self.config.max_len, offset)
        x = table(tokens) * math.sqrt(self.config.d_model)  # (B, T, M)
        return self.dropout(x + self.pe[offset : offset + tokens.shape[1]])

    def src_mask(self, src: Tensor) -> Tensor:
        """(B, S) ids -> (B, 1, S): every query may attend to the non-padding source tokens."""
        return (src != self.config.pad_id).unsqueeze(1)

    def tgt_mask(self, tgt: Tensor) -> Tensor:
        """(B, T) ids -> (B, T, T): causal and not padding."""
        causal = causal_mask(tgt.shape[1], device=tgt.device)  # (T, T)
        return causal & (tgt != self.config.pad_id).unsqueeze(1)  # (B, T, T)

    def encode(self, src: Tensor) -> EncoderResult:
        """(B, S) source ids -> encoder result with memory (B, S, M)."""
        return self.encoder(self._embed(src, self.src_embed, "src"), self.src_mask(src))

    def decode(
        self, tgt: Tensor, memory: Tensor, src_mask: Tensor, *, cache: DecoderCache | None = None
    ) -> tuple[Tensor, DecoderResult]:
        """(B, T) target ids (only the new ones when `cache` is given) -> (logits, result).

        Without a cache the self-attention mask is causal and hides PAD keys. With a cache it is
        only causal: the cached keys carry no token ids, so feed back real tokens only (greedy
        decoding never emits PAD or BOS).
        """
        past = 0 if cache is None else cache[0][0].shape[2]
        x = self._embed(tgt, self.tgt_embed, "tgt", offset=past)
        if cache is None:
            self_mask = self.tgt_mask(tgt)
        else:
            total = past + tgt.shape[1]
            self_mask = causal_mask(tgt.shape[1], total, offset=past, device=tgt.device)
        result = self.decoder(x, memory, self_mask, src_mask, cache=cache)
        return self.generator(result.output), result

    def forward(self, src: Tensor, tgt: Tensor) -> TransformerResult:
        """Teacher forcing: src (B, S), tgt (B, T) shifted right -> logits (B, T, V)."""
        if src.shape[0] != tgt.shape[0]:
            raise ValueError(f"tgt: batch {tgt.shape[0]} differs from src's batch {src.shape[0]}")
        enc = self.encode(src)
        logits, dec = self.decode(tgt, enc.output, self.src_mask(src))
        return TransformerResult(logits=logits, encoder=enc, decoder=dec)


def count_parameters(module: nn.Module, *, weights_only: bool = False) -> int:
    """Number of trainable parameters; weights_only keeps matrices (no biases, no norms)."""
    params = {id(p): p for p in module.parameters() if p.requires_grad}.values()
    return sum(p.numel() for p in params if not weights_only or p.dim() >= 2)


def parameter_formula(d_model: int) -> dict[str, int]:
    """The weight counts of the textbook layers (biases and LayerNorm ignored), with 4x FFN."""
    m2 = d_model * d_model
    return {"mha": 4 * m2, "ffn": 8 * m2, "encoder_layer": 12 * m2, "decoder_layer": 16 * m2}
