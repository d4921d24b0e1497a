"""Attention snapshots: every attention map of one fixed example, recorded during training.

A slider over the snapshots' steps shows the cross-attention sharpen into the task's pattern
(the anti-diagonal for reversal); `snapshot_view` picks one map and measures how much weight
lands on the source token being written.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ...transformer import Transformer
from .data import EOS, Batch, Tokenizer


@dataclass(frozen=True)
class AttentionSnapshot:
    """Attention of the model on one fixed example (teacher forced) at one training step."""

    step: int
    src: Tensor  # (S,) source ids
    tgt_in: Tensor  # (T,) decoder input ids (BOS + answer)
    encoder: Tensor  # (L_enc, H, S, S) encoder self-attention
    decoder_self: Tensor  # (L_dec, H, T, T) masked decoder self-attention
    cross: Tensor  # (L_dec, H, T, S) decoder queries over encoder keys


@torch.no_grad()
def snapshot_attention(model: Transformer, batch: Batch, step: int) -> AttentionSnapshot:
    """Record every attention map of the first example of `batch` (teacher forcing)."""
    was_training = model.training
    model.eval()
    out = model(batch.src[:1], batch.tgt_in[:1])
    model.train(was_training)
    return AttentionSnapshot(
        step=step,
        src=batch.src[0].clone(),
        tgt_in=batch.tgt_in[0].clone(),
        encoder=torch.stack([r.self_attn.weights[0] for r in out.encoder.layers]),
        decoder_self=torch.stack([r.self_attn.weights[0] for r in out.decoder.layers]),
        cross=torch.stack([r.cross_attn.weights[0] for r in out.decoder.layers]),
    )


SNAPSHOT_KINDS = ("cross", "encoder", "decoder")


@dataclass(frozen=True)
class SnapshotView:
    """One attention map of a snapshot, per head, labelled for a heatmap."""

    step: int
    kind: str  # "cross", "encoder" (self) or "decoder" (masked self)
    layer: int
    weights: Tensor  # (H, Tq, Tk)
    row_labels: tuple[str, ...]  # queries; for cross-attention the token each row predicts
    col_labels: tuple[str, ...]  # keys
    masked: Tensor  # (Tq, Tk) bool, True where the query could not attend (causal mask)
    on_target: Tensor | None  # (H,) cross only: mean weight on the source token being output


def snapshot_view(
    snapshot: AttentionSnapshot, tokenizer: Tokenizer, kind: str = "cross", layer: int = 0
) -> SnapshotView:
    """Pick one map of a snapshot and measure how much cross-attention lands where it should.

    For cross-attention, row t predicts tgt_out[t]; the "right" source positions are those that
    hold that token, and `on_target` is the weight they receive, averaged over the rows that
    output a symbol (EOS rows excluded). Uniform attention over n source tokens gives 1/n; for
    reversal the right cells form the anti-diagonal, and training moves weight onto them.
    """
    maps = {"cross": snapshot.cross, "encoder": snapshot.encoder, "decoder": snapshot.decoder_self}
    if kind not in maps:
        raise ValueError(f"kind: expected one of {SNAPSHOT_KINDS}, got {kind!r}")
    n_layers = maps[kind].shape[0]
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer: expected 0..{n_layers - 1} for {kind}, got {layer}")
    weights = maps[kind][layer]  # (H, Tq, Tk)
    src = tokenizer.token_names(snapshot.src)
    tgt_in = tokenizer.token_names(snapshot.tgt_in)
    tgt_out = torch.cat([snapshot.tgt_in[1:], torch.tensor([EOS])])  # (T,)
    predicts = tuple(f"\u2192{name}" for name in tokenizer.token_names(tgt_out))
    rows, cols = {"cross": (predicts, src), "encoder": (src, src), "decoder": (tgt_in, tgt_in)}[
        kind
    ]
    tq, tk = weights.shape[-2:]
    masked = torch.zeros(tq, tk, dtype=torch.bool)
    if kind == "decoder":
        masked = ~torch.ones(tq, tk, dtype=torch.bool).tril()
    on_target = None
    if kind == "cross":
        rows_used = tgt_out != EOS  # (T,)
        expected = (snapshot.src[None, :] == tgt_out[:, None]) & rows_used[:, None]  # (T, S)
        mass = (weights * expected).sum(-1)  # (H, T)
        on_target = mass[:, rows_used].mean(-1)  # (H,)
    return SnapshotView(
        snapshot.step, kind, layer, weights, tuple(rows), tuple(cols), masked, on_target
    )
