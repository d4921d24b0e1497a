"""What both pretrained models share: each layer's result, the hook points, the loop over blocks.

Every block is the core's MultiHeadAttention plus the model's own norms and feed-forward, and
returns what its attention computed (`LayerResult`): views and experiments read q, k, v, the
weights and each head's output from there instead of recomputing them.

Hooks read or replace an activation as the model runs (TransformerLens's hook points, one
naming scheme for both models). Pass a dict {name: fn} to forward; fn(tensor) returns None to
leave the tensor as it is (reading), or a tensor of the same shape to replace it:

    blocks.{i}.resid_pre        (B, T, M)    the residual stream entering block i
    blocks.{i}.attn.weights     (B, H, T, Tk) each head's attention map (rows sum to 1); a
                                             replacement is what the values are averaged by
    blocks.{i}.attn.head_out    (B, H, T, D) each head's output, before the heads are merged
    blocks.{i}.resid_post       (B, T, M)    the residual stream leaving block i

    seen = {}
    def keep(x):                                    # reading: returns None
        seen["resid"] = x
    def silence_head_1(heads):                      # replacing: what ablate={(3, 1)} does
        heads = heads.clone()
        heads[:, 1] = 0.0
        return heads
    model(ids, hooks={"blocks.3.resid_post": keep, "blocks.3.attn.head_out": silence_head_1})

Without hooks the forward pass runs no hook code at all: the same operations, bit for bit.
`ablate={(layer, head), ...}` is a shorthand that attaches such hooks (scaling by 0 or 1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

from ..._checks import shape_str
from ...functional import AttentionResult, repeat_kv, scaled_dot_product_attention
from ...multihead import MultiHeadResult
from .checks import heads_to_keep

Hook = Callable[[Tensor], Tensor | None]
HOOK_POINTS = ("resid_pre", "attn.weights", "attn.head_out", "resid_post")


@dataclass(frozen=True)
class ModelSizes:
    """The sizes both models have; MiniLMConfig and SmolLM2Config add their own."""

    vocab_size: int
    d_model: int  # M
    n_layers: int
    n_heads: int  # H
    d_ff: int  # the feed-forward's hidden width

    @property
    def d_head(self) -> int:
        """D = M / H, the width of one head."""
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class LayerResult:
    """What one block's attention computed: the parts of the core's MultiHeadResult a view or
    an experiment reads (scores, merged heads and projection are not kept, to save memory)."""

    q_raw: Tensor  # (B, H, T, D) queries before RoPE; q itself in a model without RoPE
    k_raw: Tensor  # (B, Hkv, T, D) this call's keys before RoPE (no cached keys)
    q: Tensor  # (B, H, T, D) as attended: after RoPE
    k: Tensor  # (B, Hkv, Tpast + T, D) after RoPE, cached keys first; Hkv = H unless grouped
    v: Tensor  # (B, Hkv, Tpast + T, D)
    weights: Tensor | None  # (B, H, T, Tpast + T); None if the attention function keeps none
    heads: Tensor  # (B, H, T, D) each head's output as merged (after any head_out hook)

    @classmethod
    def of(cls, a: MultiHeadResult) -> LayerResult:
        return cls(a.q_raw, a.k_raw, a.q, a.k, a.v, a.weights, a.heads)


@dataclass(frozen=True)
class ModelOutput:
    """What both models' forward passes return; CausalLMOutput and EncoderOutput add theirs."""

    layers: tuple[LayerResult, ...]  # n_layers; () if need_weights=False
    # n_layers + 1 x (B, T, M): each block's input (after its resid_pre hook), then the output
    hidden_states: tuple[Tensor, ...]

    @property
    def attentions(self) -> tuple[Tensor, ...]:
        """Each layer's weights (B, H, T, Tpast + T); () without weights (need_weights=False or
        an attention function such as flash_attention that keeps none)."""
        return tuple(r.weights for r in self.layers if r.weights is not None)


class PretrainedModel(nn.Module):
    """A model whose blocks run the core's attention; subclasses say how they see the text."""

    causal: bool  # a token sees only itself and earlier tokens
    rotary: bool  # positions enter by rotating q and k (RoPE), so q_raw differs from q

    def hook_names(self) -> list[str]:
        """Every hook point of this model, in the order the forward pass reaches them."""
        return [f"blocks.{i}.{p}" for i in range(self.cfg.n_layers) for p in HOOK_POINTS]


def prepare_hooks(
    model: PretrainedModel,
    hooks: Mapping[str, Hook] | None,
    ablate: Iterable[tuple[int, int]] | None,
) -> dict[str, Hook]:
    """Check the hooks' names and functions, and add the ablation's; {} when there are none."""
    hooks = dict(hooks or {})
    if hooks:
        known = set(model.hook_names())
        for name, fn in hooks.items():
            if name not in known:
                raise ValueError(
                    f"hooks: unknown hook point {name!r}; expected 'blocks.<layer>.<point>' with "
                    f"layer in [0, {model.cfg.n_layers}) and point one of {list(HOOK_POINTS)}"
                )
            if not callable(fn):
                raise TypeError(f"hooks[{name!r}]: expected a function, got {type(fn).__name__}")
    for layer, keep in heads_to_keep(ablate, model.cfg.n_layers, model.cfg.n_heads).items():
        name = f"blocks.{layer}.attn.head_out"
        hooks[name] = _silence(keep, hooks.get(name), name)
    return hooks


def _silence(keep: Tensor, then: Hook | None, name: str) -> Hook:
    """A head_out hook that scales head h by keep[h] (0 silences it), then runs `then`."""

    def hook(heads: Tensor) -> Tensor:
        heads = heads * keep.to(heads)[:, None, None]  # (B, H, T, D)
        return heads if then is None else run_hook(then, name, heads)

    return hook


def run_hook(fn: Hook, name: str, x: Tensor) -> Tensor:
    """fn(x), or x when fn returns None; a replacement must keep x's shape."""
    y = fn(x)
    if y is None:
        return x
    if not isinstance(y, Tensor):
        raise TypeError(f"hooks[{name!r}]: expected None or a Tensor, got {type(y).__name__}")
    if y.shape != x.shape:
        raise ValueError(
            f"hooks[{name!r}]: expected a replacement of shape {shape_str(x.shape)}, "
            f"got {shape_str(y.shape)}"
        )
    return y


def _hooked(hooks: dict[str, Hook], name: str, x: Tensor) -> Tensor:
    fn = hooks.get(name)
    return x if fn is None else run_hook(fn, name, x)


@dataclass(frozen=True)
class StackRun:
    """The blocks' output, the residual stream between them, each layer's result, the cache."""

    output: Tensor  # (B, T, M) the last block's output
    hidden_states: tuple[Tensor, ...]  # n_layers + 1 x (B, T, M)
    layers: tuple[LayerResult, ...]  # n_layers, or () when not kept
    kv: tuple[tuple[Tensor, Tensor], ...]  # n_layers x (k, v), each (B, Hkv, Tpast + T, D)


def run_blocks(
    blocks: Sequence[nn.Module],
    x: Tensor,
    hooks: dict[str, Hook],
    *,
    keep: bool,
    pasts: Sequence[tuple[Tensor, Tensor]] | None = None,
    **attn: Any,
) -> StackRun:
    """Run x (B, T, M) through the blocks with the hooks attached.

    Each block is called as block(x, past_kv=..., head_hook=..., **attn) -> (output,
    MultiHeadResult), `attn` being the keywords of MultiHeadAttention.forward that all
    blocks share (mask, rope, attention_fn, check_finite). keep: keep each LayerResult.
    """
    hidden, layers, kv = [], [], []
    for i, block in enumerate(blocks):
        head_hook, block_attn = None, attn
        if hooks:  # no hooks: not even a lookup, the plain forward pass
            x = _hooked(hooks, f"blocks.{i}.resid_pre", x)
            fn = hooks.get(f"blocks.{i}.attn.head_out")
            if fn is not None:
                head_hook = _named(fn, f"blocks.{i}.attn.head_out")
            fn = hooks.get(f"blocks.{i}.attn.weights")
            if fn is not None:
                attend = _weights_hooked(fn, f"blocks.{i}.attn.weights", attn)
                block_attn = {**attn, "attention_fn": attend}
        hidden.append(x)
        past = None if pasts is None else pasts[i]
        x, a = block(x, past_kv=past, head_hook=head_hook, **block_attn)
        if hooks:
            x = _hooked(hooks, f"blocks.{i}.resid_post", x)
        if keep:
            layers.append(LayerResult.of(a))
        kv.append((a.k, a.v))
        del a  # the scores and merged heads go now, not after the next block (1% of a forward)
    hidden.append(x)
    return StackRun(x, tuple(hidden), tuple(layers), tuple(kv))


def _named(fn: Hook, name: str) -> Callable[[Tensor], Tensor]:
    return lambda heads: run_hook(fn, name, heads)


def _weights_hooked(fn: Hook, name: str, attn: Mapping[str, Any]) -> Callable[..., Any]:
    """The core's attention function with an attn.weights hook between softmax and values:
    reading leaves its result as it is (bit for bit); a replacement W gives output W @ v."""
    if attn.get("attention_fn") is not None:
        raise ValueError(
            f"hooks[{name!r}]: expected the core's attention (attention_fn=None) to read or "
            f"replace its weights, got attention_fn={attn['attention_fn']!r}, which may keep none"
        )
    check_finite = attn.get("check_finite", True)

    def attend(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> AttentionResult:
        att = scaled_dot_product_attention(q, k, v, mask, check_finite=check_finite)
        weights = run_hook(fn, name, att.weights)  # (B, H, Tq, Tk)
        if weights is att.weights:
            return att
        output = weights @ repeat_kv(v, q.shape[1] // v.shape[1])  # (B, H, Tq, D)
        return AttentionResult(att.scores, weights, output, att.fully_masked)

    return attend
