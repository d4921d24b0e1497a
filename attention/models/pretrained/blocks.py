"""What both pretrained models share: each layer's result, the hook points, the loop over blocks.

Every block is the core's MultiHeadAttention plus the model's own norms and feed-forward. As it
runs it emits each of its points once (.points names them): `emit(point, x)` runs the hook on
that point, if any, and keeps x in the layer's result if it was asked for. The layer's result
(`LayerResult`) is those kept points: by default what the attention computed (q_raw, k_raw, q,
k, v, weights, heads), so views and experiments read them instead of recomputing them.

Hooks read or replace an activation as the model runs (TransformerLens's hook points, one
naming scheme for both models, `model.hook_names()`). Pass a dict {name: fn} to forward;
fn(tensor) returns None to leave the tensor as it is (reading), or a tensor of the same shape
to replace it. The names are points.hook_name(layer, point), e.g.

    blocks.{i}.resid_pre    (B, T, M)     the residual stream entering block i
    blocks.{i}.weights      (B, H, T, Tk) each head's attention map (rows sum to 1); a
                                          replacement is what the values are averaged by
    blocks.{i}.heads        (B, H, T, D)  each head's output, before the heads are merged
    blocks.{i}.resid_post   (B, T, M)     the residual stream leaving block i
    (and attn_norm, attn_out, resid_mid, ffn_norm, ffn: see .points)

    seen = {}
    def keep(x):                                    # reading: returns None
        seen["resid"] = x
    def silence_head_1(heads):                      # replacing: what ablate={(3, 1)} does
        heads = heads.clone()
        heads[:, 1] = 0.0
        return heads
    model(ids, hooks={"blocks.3.resid_post": keep, "blocks.3.heads": silence_head_1})

Without hooks the forward pass runs no hook code at all: the same operations, bit for bit.
`ablate={(layer, head), ...}` is a shorthand that attaches such hooks (scaling by 0 or 1).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

import torch
from torch import Tensor, nn

from ..._checks import shape_str
from ...functional import AttentionResult, repeat_kv, scaled_dot_product_attention
from ...multihead import MultiHeadResult
from . import points
from .checks import heads_to_keep

Hook = Callable[[Tensor], Tensor | None]
HOOK_POINTS = points.HOOKED  # the points a hook may name: "resid_pre", ..., "heads", ...


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


class LayerResult(Mapping[str, Tensor | None]):
    """What one block computed: the points asked for, by name (.points), read as
    out.layers[i].q or out.layers[i]["q"]. By default the attention's: q_raw, k_raw (B, H|Hkv,
    T, D) before RoPE, q, k (after RoPE, cached keys first), v, weights (None if the attention
    function keeps none) and heads (after any heads hook)."""

    def __init__(self, kept: Mapping[str, Tensor | None]) -> None:
        self._kept = dict(kept)

    def __getitem__(self, point: str) -> Tensor | None:
        try:
            return self._kept[point]
        except KeyError:
            raise KeyError(
                f"point: expected one of the points kept {list(self._kept)}, got {point!r}"
            ) from None

    def __getattr__(self, point: str) -> Tensor | None:
        kept = self.__dict__.get("_kept", {})
        if point not in kept:
            raise AttributeError(f"LayerResult has no {point!r}; the points kept are {list(kept)}")
        return kept[point]

    def __iter__(self) -> Iterator[str]:
        return iter(self._kept)

    def __len__(self) -> int:
        return len(self._kept)

    def __repr__(self) -> str:
        return f"LayerResult({', '.join(self._kept)})"


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
    """A model whose blocks run the core's attention; a subclass says how it sees the text in
    its class line: class SmolLM2(PretrainedModel, family="smollm2", causal=True, rotary=True)."""

    family: str  # "smollm2" or "minilm": which points its blocks emit (.points)
    causal: bool  # a token sees only itself and earlier tokens
    rotary: bool  # positions enter by rotating q and k (RoPE), so q_raw differs from q

    def __init_subclass__(cls, **more: Any) -> None:
        said = {k: more.pop(k) for k in ("family", "causal", "rotary") if k in more}
        super().__init_subclass__(**more)
        for k, v in said.items():  # a subclass of SmolLM2 keeps SmolLM2's unless it says
            setattr(cls, k, v)

    def __init__(self, cfg: ModelSizes) -> None:
        super().__init__()
        self.cfg = cfg

    @classmethod
    def _from_named_tensors(
        cls, cfg: ModelSizes, tensors: dict[str, Tensor], names: dict[str, str]
    ) -> Self:
        """cls(cfg) made on the meta device (no memory, no random init), whose parameters then
        take the tensors themselves, `names` {their name: ours}: one copy of the weights."""
        missing = sorted(set(names) - set(tensors))
        if missing:
            raise ValueError(f"tensors: missing {missing[:3]} ({len(missing)} in all)")
        with torch.device("meta"):
            model = cls(cfg)
        model.load_state_dict({ours: tensors[t] for t, ours in names.items()}, assign=True)
        return model.eval().requires_grad_(False)

    def hook_names(self) -> list[str]:
        """Every hook point of this model, in the order the forward pass reaches them."""
        emitted = points.hook_points(self.family)
        return [points.hook_name(i, p) for i in range(self.cfg.n_layers) for p in emitted]


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
                emitted = list(points.hook_points(model.family))
                raise ValueError(
                    f"hooks: unknown hook point {name!r}; expected 'blocks.<layer>.<point>' with "
                    f"layer in [0, {model.cfg.n_layers}) and point one of {emitted}"
                )
            if not callable(fn):
                raise TypeError(f"hooks[{name!r}]: expected a function, got {type(fn).__name__}")
    for layer, keep in heads_to_keep(ablate, model.cfg.n_layers, model.cfg.n_heads).items():
        name = points.hook_name(layer, "heads")
        hooks[name] = _silence(keep, hooks.get(name), name)
    return hooks


def _silence(keep: Tensor, then: Hook | None, name: str) -> Hook:
    """A heads hook that scales head h by keep[h] (0 silences it), then runs `then`."""

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


class Emit:
    """Block `layer`'s points as the block computes them: emit(point, x) runs the point's hook,
    if any, and keeps x in the layer's result if the point is one asked for."""

    def __init__(self, layer: int, hooks: dict[str, Hook], keep: Collection[str]) -> None:
        self.layer, self.hooks, self.keep = layer, hooks, keep
        self.kept: dict[str, Tensor | None] = {}

    def __call__(self, point: str, x: Tensor) -> Tensor:
        if self.hooks:  # no hooks: not even a lookup, the plain forward pass
            name = points.hook_name(self.layer, point)
            fn = self.hooks.get(name)
            if fn is not None:
                x = run_hook(fn, name, x)
        if point in self.keep:
            self.kept[point] = x
        return x

    def attention(self, attn: Mapping[str, Any]) -> dict[str, Any]:
        """The keywords of MultiHeadAttention.forward with the attention's own points (weights,
        heads) emitted: a head_hook, and the attention function with a weights hook."""
        if not self.hooks:
            return dict(attn)
        attn = dict(attn)
        if points.hook_name(self.layer, "heads") in self.hooks:
            attn["head_hook"] = lambda heads: self("heads", heads)
        name = points.hook_name(self.layer, "weights")
        fn = self.hooks.get(name)
        if fn is not None:
            attn["attention_fn"] = _weights_hooked(fn, name, attn)
        return attn

    def result(self, a: MultiHeadResult) -> LayerResult:
        """The kept points, with those of the core's result (q_raw, ..., heads) asked for."""
        kept = self.kept | {p: getattr(a, p) for p in points.ATTENTION if p in self.keep}
        return LayerResult({p: kept[p] for p in points.NAMES if p in kept})


@dataclass(frozen=True)
class StackRun:
    """The blocks' output, the residual stream between them, each layer's result, the cache."""

    output: Tensor  # (B, T, M) the last block's output
    hidden_states: tuple[Tensor, ...]  # 1 + the blocks run x (B, T, M)
    layers: tuple[LayerResult, ...]  # one per block run, or () when none kept
    kv: tuple[tuple[Tensor, Tensor], ...]  # one (k, v) per block, (B, Hkv, Tpast + T, D) each


def run_blocks(
    blocks: Sequence[nn.Module],
    x: Tensor,
    hooks: dict[str, Hook],
    *,
    keep: Collection[str],
    first: int = 0,
    pasts: Sequence[tuple[Tensor, Tensor]] | None = None,
    **attn: Any,
) -> StackRun:
    """Run x (B, T, M) through the blocks with the hooks attached; blocks[0] is block `first`.

    Each block is called as block(x, emit, past_kv=..., **attn) -> (output, MultiHeadResult),
    `attn` being the keywords of MultiHeadAttention.forward that all blocks share (mask, rope,
    attention_fn, check_finite); it emits its points through emit (Emit). keep: the points
    each layer's result keeps (.points.NAMES); empty: no layer result.
    """
    hidden, layers, kv = [], [], []
    for i, block in enumerate(blocks, start=first):
        emit = Emit(i, hooks, keep)
        x = emit("resid_pre", x)
        hidden.append(x)
        past = None if pasts is None else pasts[i - first]
        x, a = block(x, emit, past_kv=past, **attn)
        x = emit("resid_post", x)
        if keep:
            layers.append(emit.result(a))
        kv.append((a.k, a.v))
        del a  # the scores and merged heads go now, not after the next block (1% of a forward)
    hidden.append(x)
    return StackRun(x, tuple(hidden), tuple(layers), tuple(kv))


def _weights_hooked(fn: Hook, name: str, attn: Mapping[str, Any]) -> Callable[..., Any]:
    """The core's attention function with a weights hook between softmax and values:
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
