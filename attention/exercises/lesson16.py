"""Self-checking exercises for lesson 16: the pieces of your own SmolLM2, and their assembly.

Pieces: RMSNorm, RoPE in the file's interleaved layout, the causal mask after a cache,
grouped-query attention, SwiGLU; assembly: the attention layer, the decoder block and the tied
output layer, which call the other pieces through `f` (attention.models.pretrained.compare's
Pieces). Each `check_*` runs the learner's function on fixed seeded inputs, compares with the
course's pieces (compare.COURSE, built on the core) through the kit in `_checking`, and names a
known slip by the name the debugger (compare.compare) uses for it: "LayerNorm (mean
subtracted) instead of RMSNorm", "kv heads tiled instead of repeated in place", ...
The layer, block and output layer are checked with the course's pieces as `f`, so a slip in
one of your other pieces does not show up as one in them.

The last exercise, `check_generate`, checks the learner's cached generation loop token for
token against a loop that reruns the whole text, and names the usual wrong loops.

`use_pieces(rms_norm=my_rms_norm, ...)` builds the model's Pieces from the learner's functions,
putting the course's solution in place of each one that is unfinished (still raises
NotImplementedError, itself or in a helper it calls) or crashes on a small input, and says
which; a piece that runs but that its check rejects is used, and the verdict printed beside it.
`yours_or_course(mine, course, check)` takes the learner's function only if its check passes
(the perplexity, the generation loop), and says which it took. "Not attempted yet" names the
unwritten helper (my_repeat_kv) when the function checked is written but calls it.

Reference solutions are in `attention.exercises.solutions.lesson16`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ..language import language, translate
from ..models.pretrained.compare import (
    COURSE,
    SLIPS,
    Pieces,
    attention_slips,
    decoder_forward,
    mask_slips,
    rms_norm_slips,
    rope_slips,
    swiglu_slips,
)
from ..models.pretrained.generate import sample_next
from ..models.pretrained.points import block_key
from ..models.pretrained.smollm2 import SmolLM2Config
from . import _checking
from ._checking import (
    NotAttempted,
    Wrong,
    attempt,
    checker,
    close,
    compare,
    expect_tensor,
    name_mistake,
    randn,
)
from .solutions import lesson16 as S

LESSON = "16_your_own_smollm2"
__all__ = [
    "check_attention_layer",
    "check_cached_causal_mask",
    "check_decoder_block",
    "check_generate",
    "check_gqa_attention",
    "check_output_layer",
    "check_rms_norm",
    "check_rope_interleaved",
    "check_swiglu",
    "use_pieces",
    "yours_or_course",
]

# a SmolLM2 in miniature: 6 query heads sharing 2 key/value heads of width 4
SMALL = SmolLM2Config(
    vocab_size=11, d_model=24, n_layers=1, n_heads=6, d_ff=16, n_kv_heads=2, rope_base=10000.0
)
LAYER_HINT = (
    "; take the sizes from cfg (cfg.n_heads, cfg.n_kv_heads, cfg.d_head, cfg.rope_base, "
    "cfg.norm_eps) and the other pieces from f (f.rope, f.attention, f.causal_mask, ...)"
)


_LIBRARY = (str(Path(torch.__file__).parent), str(Path(__file__).parents[1]))


def _unwritten(exc: NotAttempted, fn: Callable[..., Any]) -> str:
    """The function whose `raise NotImplementedError` stopped fn: fn itself, or a helper of
    yours it calls ("my_repeat_kv (my_attention calls it)")."""
    error = exc.__context__
    tb = error.__traceback__ if error is not None else None
    innermost = None
    while tb is not None:  # the last frame of your code: torch's and the course's are skipped
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith(_LIBRARY) and not code.co_name.startswith("<"):
            innermost = code.co_name
        tb = tb.tb_next
    outer = _checking.name_of(fn)
    if innermost is None or innermost == outer:
        return str(exc)
    return f"{innermost} ({outer} calls it)"


def call(fn: Callable[..., Any], *args: Any, hint: str = "") -> Any:
    """The kit's call, naming the unfinished helper when fn is written but calls a stub."""
    try:
        return _checking.call(fn, *args, hint=hint)
    except NotAttempted as exc:
        raise NotAttempted(_unwritten(exc, fn)) from None


def _named(slips: list) -> list[tuple[Any, str]]:
    """(wrong result, "name: how to fix it") for the kit's mistake tables."""
    return [(wrong, f"{name}: {SLIPS[name]}") for name, wrong in slips]


def _pair(got: Any, names: str) -> tuple[Any, Any]:
    if got is None:
        raise Wrong("your function returned None; did you forget `return`?")
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise Wrong(f"expected a pair ({names}), got {type(got).__name__}")
    return got[0], got[1]


# --- the pieces ----------------------------------------------------------------------------------


@checker("x / sqrt(mean(x^2) + eps) * weight over the features: RMSNorm, as SmolLM2 has it.")
def check_rms_norm(fn: Callable[[Tensor, Tensor, float], Tensor]) -> None:
    """Check fn(x (..., M), weight (M,), eps) -> (..., M)."""
    g = torch.Generator().manual_seed(160)
    # small values make eps matter, as in SmolLM2's first layers
    for shape, scale, eps in (((2, 3, 8), 0.01, 1e-5), ((4, 6), 1.0, 0.5), ((5,), 1.0, 1e-5)):
        x = randn(g, *shape, scale=scale) + 0.5 * scale  # a mean away from 0 shows LayerNorm
        weight = 1.0 + randn(g, shape[-1], scale=0.3)
        want = COURSE.rms_norm(x, weight, eps)
        what = f"x of shape {shape}, eps={eps:g}"
        compare(call(fn, x, weight, eps), want, _named(rms_norm_slips(x, weight, eps)), what=what)


@checker("pair i = (x_2i, x_2i+1) turns by position * base^(-2i/D): the file's own layout.")
def check_rope_interleaved(fn: Callable[[Tensor, Tensor, float], Tensor]) -> None:
    """Check fn(x (..., T, D), positions (T,), base) -> RoPE of x, interleaved pairs."""
    g = torch.Generator().manual_seed(161)
    for shape, start, base in (((1, 2, 5, 8), 3, 10000.0), ((4, 6), 2, 100.0)):
        x = randn(g, *shape)
        positions = torch.arange(start, start + shape[-2])
        want = COURSE.rope(x, positions, base)
        mistakes = _named(rope_slips(x, positions, base))
        mistakes.append((x, "nothing was rotated: every pair turns by its position times theta_i"))
        what = f"RoPE of x {shape} at positions {positions.tolist()}, base={base:g}"
        compare(call(fn, x, positions, base), want, mistakes, what=what, atol=1e-4)


@checker(
    "the t new tokens sit at positions past .. past + t - 1 and see every key up to their own."
)
def check_cached_causal_mask(fn: Callable[[int, int], Tensor]) -> None:
    """Check fn(t, past) -> (t, past + t) bool, True = may attend."""
    for t, past in ((5, 0), (3, 4), (1, 6)):
        want = COURSE.causal_mask(t, past)
        got = call(fn, t, past)
        if isinstance(got, Tensor) and past and tuple(got.shape) == (t, t):
            ignores = "the mask ignores the cache"
            raise Wrong(f"t={t}, past={past}: shape (t, t): {ignores}: {SLIPS[ignores]}")
        mistakes = _named(mask_slips(t, past))
        compare(got, want, mistakes, what=f"t={t}, past={past}")


def _attention_cases(g: torch.Generator) -> list[tuple[Tensor, ...]]:
    """(q, k, v, mask): SmolLM2's heads (9 sharing 3, width 64) after a cache, then 4 sharing 2."""
    cases = []
    for b, h, hkv, tq, tk, d in ((1, 9, 3, 4, 6, 64), (2, 4, 2, 5, 5, 8)):
        q, k, v = randn(g, b, h, tq, d), randn(g, b, hkv, tk, d), randn(g, b, hkv, tk, d)
        cases.append((q, k, v, COURSE.causal_mask(tq, tk - tq)))
    return cases


@checker(
    "q k^T / sqrt(d_head), masked, softmax, times v; kv head j serves query heads j*n .. j*n+n-1."
)
def check_gqa_attention(fn: Callable[..., tuple]) -> None:
    """Check fn(q (B, H, Tq, D), k, v (B, Hkv, Tk, D), mask (Tq, Tk)) -> (output, weights).

    output (B, H, Tq, D), weights (B, H, Tq, Tk); Hkv divides H (grouped-query attention).
    """
    g = torch.Generator().manual_seed(162)
    for q, k, v, mask in _attention_cases(g):
        want_out, want_w = COURSE.attention(q, k, v, mask)
        got_out, got_w = _pair(call(fn, q, k, v, mask), "output, weights")
        slips = attention_slips(q, k, v, mask)
        what = f"q {tuple(q.shape)}, k and v {tuple(k.shape)}"
        compare(got_w, want_w, _named([(n, w) for n, (_, w) in slips]), what=f"weights for {what}")
        compare(
            got_out, want_out, _named([(n, o) for n, (o, _) in slips]), what=f"output for {what}"
        )


@checker("(silu(x @ w_gate) * (x @ w_up)) @ w_down: SiLU on the gate, the up branch linear.")
def check_swiglu(fn: Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]) -> None:
    """Check fn(x (..., M), w_gate (M, F), w_up (M, F), w_down (F, M)) -> (..., M)."""
    g = torch.Generator().manual_seed(163)
    for shape, m, ff in (((2, 3, 8), 8, 12), ((5, 6), 6, 4)):
        x = randn(g, *shape)
        w_gate, w_up, w_down = randn(g, m, ff), randn(g, m, ff), randn(g, ff, m, scale=0.5)
        want = COURSE.swiglu(x, w_gate, w_up, w_down)
        got = call(fn, x, w_gate, w_up, w_down)
        mistakes = _named(swiglu_slips(x, w_gate, w_up, w_down))
        compare(got, want, mistakes, what=f"x of shape {shape}, F={ff}")


# --- the assembly --------------------------------------------------------------------------------


def _layer_weights(g: torch.Generator, cfg: SmolLM2Config) -> dict[str, Tensor]:
    m, kv, ff = cfg.d_model, cfg.n_kv_heads * cfg.d_head, cfg.d_ff
    s = 1 / math.sqrt(m)
    return {
        "attn_norm": 1 + randn(g, m, scale=0.2),
        "w_q": randn(g, m, m, scale=s),
        "w_k": randn(g, m, kv, scale=s),
        "w_v": randn(g, m, kv, scale=s),
        "w_o": randn(g, m, m, scale=s),
        "ffn_norm": 1 + randn(g, m, scale=0.2),
        "w_gate": randn(g, m, ff, scale=s),
        "w_up": randn(g, m, ff, scale=s),
        "w_down": randn(g, ff, m, scale=1 / math.sqrt(ff)),
    }


def _past(g: torch.Generator, cfg: SmolLM2Config, p: int) -> tuple[Tensor, Tensor] | None:
    if not p:
        return None
    shape = (1, cfg.n_kv_heads, p, cfg.d_head)
    return randn(g, *shape), randn(g, *shape)


def _layer_variant(x, w, past, cfg, *, positions_from=None, rope_v=False, merge=True, w_o=True):
    """The course's attention layer, with one slip switched on."""
    b, t, _ = x.shape
    p = 0 if past is None else past[0].shape[2]
    start = p if positions_from is None else positions_from
    positions = torch.arange(start, start + t)
    split = lambda z, n: z.view(b, t, n, cfg.d_head).transpose(1, 2)  # noqa: E731
    q = COURSE.rope(split(x @ w["w_q"], cfg.n_heads), positions, cfg.rope_base)
    k = COURSE.rope(split(x @ w["w_k"], cfg.n_kv_heads), positions, cfg.rope_base)
    v = split(x @ w["w_v"], cfg.n_kv_heads)
    if rope_v:
        v = COURSE.rope(v, positions, cfg.rope_base)
    if past is not None:
        k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
    heads, _ = COURSE.attention(q, k, v, COURSE.causal_mask(t, p))  # (B, H, T, D)
    merged = heads.transpose(1, 2).reshape(b, t, -1) if merge else heads.reshape(b, t, -1)
    return (merged @ w["w_o"] if w_o else merged), (k, v)


def _layer_inputs(
    seed: int, t_first: int
) -> Iterator[tuple[int, int, Tensor, dict[str, Tensor], tuple[Tensor, Tensor] | None]]:
    """Inputs of two calls on one random layer of SMALL: t_first tokens, then 2 after 3 cached.

    Yields (t, p, x (1, t, M), w, past): t new tokens after p cached positions.
    """
    g = torch.Generator().manual_seed(seed)
    w = _layer_weights(g, SMALL)
    for t, p in ((t_first, 0), (2, 3)):
        yield t, p, randn(g, 1, t, SMALL.d_model), w, _past(g, SMALL, p)


@checker("q, k rotated at positions past .. past + t - 1, v not; the cache grows by t positions.")
def check_attention_layer(fn: Callable[..., tuple]) -> None:
    """Check fn(x (B, T, M), w, past, cfg, f) -> (output (B, T, M), (k, v)).

    w: the layer's weights {"w_q" (M, H*D), "w_k", "w_v" (M, Hkv*D), "w_o" (H*D, M), ...};
    past: None or the cached (k, v), each (B, Hkv, Tpast, D), keys already rotated; the
    returned k, v hold the cached positions first, then the t new ones. Run with the course's
    pieces as f, on a small SmolLM2 (cfg: 6 query heads sharing 2 kv heads of width 4).
    """
    cfg = SMALL
    for t, p, x, w, past in _layer_inputs(seed=164, t_first=5):
        want, (want_k, want_v) = _layer_variant(x, w, past, cfg)
        got, kv = _pair(call(fn, x, w, past, cfg, COURSE, hint=LAYER_HINT), "output, (k, v)")
        slips = [
            ("RoPE applied to v", _layer_variant(x, w, past, cfg, rope_v=True)[0]),
            (
                "heads merged without transpose(1, 2)",
                _layer_variant(x, w, past, cfg, merge=False)[0],
            ),
            ("w_o forgotten", _layer_variant(x, w, past, cfg, w_o=False)[0]),
        ]
        if p:
            wrong = _layer_variant(x, w, past, cfg, positions_from=0)[0]
            slips.insert(0, ("positions restarting at 0 after the cache", wrong))
        what = f"t={t} new tokens after {p} cached"
        compare(got, want, _named(slips), what=f"output, {what}")
        got_k, got_v = _pair(kv, "k, v")
        for name, got_x, want_x in (("k", got_k, want_k), ("v", got_v, want_v)):
            if isinstance(got_x, Tensor) and p and got_x.shape[2] == t:
                raise Wrong(
                    f"{name} returned for {what} holds only the new positions: return the "
                    "cached ones first, then the new (the next call's past)"
                )
            compare(got_x, want_x, _named(slips[:1]) if name == "v" else (), what=f"{name}, {what}")


def _block_variant(x, w, past, cfg, *, resid=(True, True), post_norm=False, same_norm=False):
    """The course's block, with one slip switched on."""
    eps = cfg.norm_eps
    norm2 = w["attn_norm"] if same_norm else w["ffn_norm"]
    if post_norm:  # norm after the residual (the original Transformer's), not before
        a, kv = COURSE.attention_layer(x, w, past, cfg, COURSE)
        h = COURSE.rms_norm(x + a, w["attn_norm"], eps)
        return COURSE.rms_norm(
            h + COURSE.swiglu(h, w["w_gate"], w["w_up"], w["w_down"]), norm2, eps
        ), kv
    a, kv = COURSE.attention_layer(COURSE.rms_norm(x, w["attn_norm"], eps), w, past, cfg, COURSE)
    h = x + a if resid[0] else a
    ffn = COURSE.swiglu(COURSE.rms_norm(h, norm2, eps), w["w_gate"], w["w_up"], w["w_down"])
    return (h + ffn if resid[1] else ffn), kv


@checker("x + attention(norm(x)), then + swiglu(norm(.)): pre-norm, a residual around each half.")
def check_decoder_block(fn: Callable[..., tuple]) -> None:
    """Check fn(x (B, T, M), w, past, cfg, f) -> (output (B, T, M), (k, v) from the layer).

    Run with the course's pieces as f on a small SmolLM2 (see check_attention_layer).
    """
    cfg = SMALL
    for t, p, x, w, past in _layer_inputs(seed=165, t_first=4):
        want, (want_k, _) = _block_variant(x, w, past, cfg)
        got, kv = _pair(call(fn, x, w, past, cfg, COURSE, hint=LAYER_HINT), "output, (k, v)")
        residual = SLIPS["the residual forgotten"]
        mistakes = [
            (
                _block_variant(x, w, past, cfg, resid=(False, True))[0],
                f"the residual forgotten around the attention: {residual}",
            ),
            (
                _block_variant(x, w, past, cfg, resid=(True, False))[0],
                f"the residual forgotten around the feed-forward: {residual}",
            ),
            (
                _block_variant(x, w, past, cfg, resid=(False, False))[0],
                f"the residual forgotten: {residual}",
            ),
            (
                _block_variant(x, w, past, cfg, post_norm=True)[0],
                "norm after the residual (post-norm): LLaMA-style blocks normalise each half's "
                "input, x + attention(rms_norm(x)), and leave the residual stream itself alone",
            ),
            (
                _block_variant(x, w, past, cfg, same_norm=True)[0],
                "the feed-forward's norm uses w['ffn_norm'], not w['attn_norm']",
            ),
        ]
        what = f"t={t} new tokens after {p} cached"
        compare(got, want, mistakes, what=f"output, {what}")
        got_k, _ = _pair(kv, "k, v")
        compare(got_k, want_k, what=f"k returned, {what} (return the attention layer's (k, v))")


@checker("logits = rms_norm(x, norm) @ embed.T: the embedding matrix is the output layer (tied).")
def check_output_layer(fn: Callable[..., Tensor]) -> None:
    """Check fn(x (B, T, M), weights, cfg, f) -> logits (B, T, V).

    weights["norm"] (M,) is the final norm's weight, weights["embed"] (V, M) the embedding.
    """
    g = torch.Generator().manual_seed(166)
    cfg = SMALL
    x = randn(g, 2, 3, cfg.d_model, scale=3.0)
    weights = {
        "norm": 1 + randn(g, cfg.d_model, scale=0.2),
        "embed": randn(g, cfg.vocab_size, cfg.d_model),
    }
    want = COURSE.output_layer(x, weights, cfg, COURSE)
    got = expect_tensor(call(fn, x, weights, cfg, COURSE, hint=LAYER_HINT), what="logits")
    norm_forgotten = f"the final norm forgotten: {SLIPS['the final norm forgotten']}"
    mistakes = [(x @ weights["embed"].T, norm_forgotten)]
    if not close(got, want):
        name_mistake(got, mistakes)
        other = dict(weights, embed=randn(g, cfg.vocab_size, cfg.d_model))
        again = call(fn, x, weights, cfg, COURSE)
        changed = call(fn, x, other, cfg, COURSE)
        not_tied = f"the output layer not tied: {SLIPS['the output layer not tied']}"
        if not close(again, got):
            raise Wrong(f"{not_tied} (your logits changed between two calls on the same input)")
        if close(changed, got):
            raise Wrong(f"{not_tied} (your logits did not change when the embedding did)")
    compare(got, want, mistakes, what=f"logits of x {tuple(x.shape)}")


# --- your own cached generation loop ------------------------------------------------------------

# a SmolLM2 in miniature with a vocabulary big enough for greedy runs that do not repeat
TINY = SmolLM2Config(
    vocab_size=40, d_model=24, n_layers=2, n_heads=6, d_ff=16, n_kv_heads=2, rope_base=10000.0
)
PROMPTS = ((3, 17, 5, 29, 11), (7,), (2, 9, 33))  # a few prompts, one of a single token
N_NEW = 6

# how each known wrong loop goes, and what to do instead
LOOP_SLIPS = {
    "whole sequence again": "with the cache, feed only the new token: decoder_forward(f, weights, "
    "cfg, nxt[:, None], cache); the cache holds every earlier token already, and feeding them "
    "again puts them in twice, at later positions",
    "cache not passed": "pass the cache to decoder_forward: without it each step sees only its own "
    "new token, and the prompt is forgotten",
    "cache not kept": "keep the cache each call returns (logits, cache = decoder_forward(..., "
    "cache)): with the prompt's cache alone each new token sees none of the tokens generated "
    "before it, and every one of them sits at the same position",
    "new token not fed": "feed the token you just picked (nxt[:, None]), not the prompt's last "
    "token again: the next step sees only what goes into the model",
    "last prompt token twice": "off by one: the prompt's last logits already predict the first "
    "new token, so pick it from them; feeding the prompt's last token again puts it in the cache "
    "twice and moves every later token one position on",
    "first position": "off by one: pick from the logits at the LAST position (logits[:, -1]), "
    "the prediction after the whole prompt; logits[:, 0] predicts the prompt's second token",
    "generator every step": "make one generator before the loop (torch.Generator()."
    "manual_seed(seed)) and pass it to sample_next at every step: a fresh one each step repeats "
    "the same random draw",
    "greedy always": "pass temperature and top_k to sample_next: your sampled run is the greedy "
    "one",
}


def _tiny_weights() -> dict[str, Tensor]:
    g = torch.Generator().manual_seed(171)  # a seed where every slip in LOOP_SLIPS shows
    cfg = TINY
    weights = {
        "embed": randn(g, cfg.vocab_size, cfg.d_model, scale=0.5),
        "norm": 1 + randn(g, cfg.d_model, scale=0.2),
    }
    for i in range(cfg.n_layers):
        block = _layer_weights(g, cfg)
        block["w_o"] = block["w_o"] * 8  # loud blocks: the next token is not the last one again
        block["w_down"] = block["w_down"] * 8
        weights |= {block_key(i, k): w for k, w in block.items()}
    return weights


def _loop(weights, cfg, prompt, n_new, *, slip="", temperature=0.0, top_k=None, seed=0):
    """The course's cached loop on the course's pieces, with one known slip switched on."""
    f = COURSE
    g = torch.Generator().manual_seed(seed)
    logits, cache = decoder_forward(f, weights, cfg, prompt)  # (1, T, V)
    if slip == "last prompt token twice":
        logits, cache = decoder_forward(f, weights, cfg, prompt[:, -1:], cache)
    ids, new, chosen_by = prompt, [], []
    for step in range(n_new):
        last = logits[:, 0] if slip == "first position" and step == 0 else logits[:, -1]
        if slip == "generator every step":
            g = torch.Generator().manual_seed(seed)
        t = 0.0 if slip == "greedy always" else temperature
        nxt = sample_next(last, temperature=t, top_k=None if t == 0 else top_k, generator=g)
        new.append(int(nxt))
        chosen_by.append(last)
        ids = torch.cat([ids, nxt[:, None]], dim=1)
        if slip == "whole sequence again":
            logits, cache = decoder_forward(f, weights, cfg, ids, cache)
        elif slip == "cache not passed":
            logits, _ = decoder_forward(f, weights, cfg, nxt[:, None])
        elif slip == "cache not kept":
            logits, _ = decoder_forward(f, weights, cfg, nxt[:, None], cache)
        elif slip == "new token not fed":
            logits, cache = decoder_forward(f, weights, cfg, prompt[:, -1:], cache)
        else:
            logits, cache = decoder_forward(f, weights, cfg, nxt[:, None], cache)
    return new, torch.stack(chosen_by, dim=1)


def _uncached(weights, cfg, prompt, n_new, *, temperature=0.0, top_k=None, seed=0):
    """The reference: every step reruns the whole text without a cache."""
    g = torch.Generator().manual_seed(seed)
    ids, new, chosen_by = prompt, [], []
    for _ in range(n_new):
        last = decoder_forward(COURSE, weights, cfg, ids)[0][:, -1]  # (1, V)
        nxt = sample_next(last, temperature=temperature, top_k=top_k, generator=g)
        new.append(int(nxt))
        chosen_by.append(last)
        ids = torch.cat([ids, nxt[:, None]], dim=1)
    return new, torch.stack(chosen_by, dim=1)


def _as_ids(got: Any, what: str) -> list[int]:
    if isinstance(got, Tensor) and got.dim() <= 2 and not got.is_floating_point():
        got = got.reshape(-1).tolist()
    if not isinstance(got, (list, tuple)) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in got
    ):
        raise Wrong(f"{what}: the new ids should be a list of ints, got {type(got).__name__}")
    return list(got)


@checker(
    "the prompt once, then one new token per step with the cache: the uncached model's tokens."
)
def check_generate(fn: Callable[..., tuple]) -> None:
    """Check fn(f, weights, cfg, prompt_ids (1, T), n_new, temperature=0.0, top_k=None, seed=0)
    -> (new ids: a list of n_new ints, logits (1, n_new, V): the logits each was picked from).

    Run with the course's pieces as f on a small SmolLM2 (2 blocks, a vocabulary of 40),
    greedy on three prompts, then sampled (temperature 0.8, top_k 5, seed 3); compared token for
    token with a loop that reruns the whole text without a cache at every step.
    """
    cfg, weights = TINY, _tiny_weights()
    runs = [(prompt, {}) for prompt in PROMPTS]
    runs.append((PROMPTS[0], {"temperature": 0.8, "top_k": 5, "seed": 3}))
    for prompt, kw in runs:
        ids = torch.tensor([prompt])
        sampled = f", temperature {kw['temperature']}, top_k {kw['top_k']}" if kw else ""
        what = f"prompt {list(prompt)}, {N_NEW} new tokens{sampled}"
        want_ids, want_logits = _uncached(weights, cfg, ids, N_NEW, **kw)
        args = (kw.get("temperature", 0.0), kw.get("top_k"), kw.get("seed", 0))
        got = _pair(call(fn, COURSE, weights, cfg, ids, N_NEW, *args), "new ids, logits")
        got_ids = _as_ids(got[0], what)
        if len(got_ids) != N_NEW:
            raise Wrong(f"{what}: expected {N_NEW} new ids, got {len(got_ids)}: one per step")
        if got_ids != want_ids:
            sampling = ("generator every step", "greedy always")  # slips only sampling shows
            slips = [s for s in LOOP_SLIPS if (s in sampling) == bool(kw)]
            for slip in slips:
                if _loop(weights, cfg, ids, N_NEW, slip=slip, **kw)[0] == got_ids:
                    raise Wrong(f"{what}: {LOOP_SLIPS[slip]}", named=True)
            first = next(
                i for i, (a, b) in enumerate(zip(got_ids, want_ids, strict=True)) if a != b
            )
            raise Wrong(
                f"{what}: new token {first} is {got_ids[first]}, expected {want_ids[first]} "
                f"(expected ids {want_ids}, got {got_ids})"
            )
        whole = torch.tensor([prompt + tuple(want_ids)])  # (1, T + n_new)
        after = decoder_forward(COURSE, weights, cfg, whole)[0][:, -1:]  # after the last new one
        shifted = torch.cat([want_logits[:, 1:], after], dim=1)  # (1, n_new, V), a step late
        mistakes = [
            (
                shifted,
                "return the logits each token was picked from: step i's are those after the "
                "prompt and the first i new tokens (yours are one step later)",
            )
        ]
        compare(got[1], want_logits, mistakes, what=f"the logits, {what}", atol=1e-4)


# --- the model from your pieces ------------------------------------------------------------------


def _probe_args(name: str) -> tuple:
    """Small inputs to try each piece on (the checkers' first case)."""
    g = torch.Generator().manual_seed(167)
    cfg = SMALL
    x = randn(g, 1, 3, cfg.d_model)
    if name == "rms_norm":
        return x, torch.ones(cfg.d_model), cfg.norm_eps
    if name == "rope":
        return randn(g, 1, 2, 3, 4), torch.arange(3), 10000.0
    if name == "causal_mask":
        return 3, 2
    if name == "attention":
        return _attention_cases(g)[1]
    if name == "swiglu":
        return x, randn(g, cfg.d_model, 8), randn(g, cfg.d_model, 8), randn(g, 8, cfg.d_model)
    w = _layer_weights(g, cfg)
    if name in ("attention_layer", "block"):
        return x, w, None, cfg, COURSE
    return (
        x,
        {"norm": torch.ones(cfg.d_model), "embed": randn(g, cfg.vocab_size, cfg.d_model)},
        cfg,
        COURSE,
    )


SOLUTIONS = {
    "rms_norm": S.solution_rms_norm,
    "rope": S.solution_rope_interleaved,
    "causal_mask": S.solution_cached_causal_mask,
    "attention": S.solution_gqa_attention,
    "swiglu": S.solution_swiglu,
    "attention_layer": S.solution_attention_layer,
    "block": S.solution_decoder_block,
    "output_layer": S.solution_output_layer,
}


def _form(x: Any) -> Any:
    """The shapes of a result: (2, 3) for a tensor, a tuple of forms for a pair, else a name."""
    if isinstance(x, Tensor):
        return tuple(x.shape)
    if isinstance(x, (tuple, list)):
        return tuple(_form(item) for item in x)
    return type(x).__name__


CHECKS = {
    "rms_norm": check_rms_norm,
    "rope": check_rope_interleaved,
    "causal_mask": check_cached_causal_mask,
    "attention": check_gqa_attention,
    "swiglu": check_swiglu,
    "attention_layer": check_attention_layer,
    "block": check_decoder_block,
    "output_layer": check_output_layer,
}


def verdict(check: Callable[..., bool], fn: Callable[..., Any]) -> str | None:
    """None if fn passes check, else what the check says; printed and recorded nowhere (the
    check cell above already did both)."""
    try:
        with torch.random.fork_rng(devices=[]), torch.device("cpu"):
            check.__wrapped__(fn)
    except NotAttempted as exc:
        return f"Not attempted yet: {exc} is unfinished"
    except Wrong as exc:
        return f"Not yet: {exc}"
    except BaseException as exc:  # noqa: BLE001 - the kit's deadline, or what fn returned
        if isinstance(exc, KeyboardInterrupt):
            raise
        return f"Not yet: {type(exc).__name__}: {exc}"
    return None


def _short(message: str, width: int = 150) -> str:
    return message if len(message) <= width else message[: width - 3] + "..."


def _said(name: str, check: str, why: str) -> str:
    """'rms_norm (check_rms_norm said Not yet: ...)', the verdict cut to 150 characters in
    English; in another language the whole line is translated (a cut text has no entry)."""
    if language() == "en":
        return f"{name} ({check} said {_short(why)})"
    return translate(f"{name} ({check} said {why})")


def use_pieces(*, quiet: bool = False, **mine: Callable[..., Any]) -> Pieces:
    """Your model's Pieces: each of your functions that runs, the course's solution for the rest.

    mine: rms_norm=my_rms_norm, rope=..., causal_mask=..., attention=..., swiglu=...,
    attention_layer=..., block=..., output_layer=... (a piece left out is the course's). Each
    is tried once on a small input: one that raises NotImplementedError (unfinished, or calling
    a helper that is), any other error, or other shapes than the course's gives, is replaced by
    the course's solution. One that runs is used even when its check rejects it, so that the
    model and the debugger show what it changes; the rejection is printed with it. Prints
    which pieces are yours and which the course's, unless quiet.
    """
    unknown = sorted(set(mine) - set(SOLUTIONS))
    if unknown:
        raise ValueError(f"unknown pieces {unknown}; expected some of {list(SOLUTIONS)}")
    chosen, yours, course, rejected = {}, [], [], []
    for name, solution in SOLUTIONS.items():
        fn = mine.get(name)
        if fn is None:
            chosen[name] = solution
            course.append(f"{name} (not given)")
            continue
        if not callable(fn):
            raise TypeError(f"{name}: expected a function, got {type(fn).__name__}")
        try:
            got, error = attempt(fn, *_probe_args(name))
        except NotAttempted as exc:
            got, error = None, NotImplementedError(_unwritten(exc, fn))
        want = _form(solution(*_probe_args(name)))
        if error is None and _form(got) == want:
            chosen[name] = fn
            yours.append(name)
            why = verdict(CHECKS[name], fn)
            if why is not None:
                rejected.append((name, CHECKS[name].__name__, why))
            continue
        chosen[name] = solution
        if isinstance(error, NotImplementedError):
            stub = str(error) if str(error) else _checking.name_of(fn)
            course.append(f"{name} ({stub} unfinished)")
        elif error is not None:
            course.append(f"{name} ({type(error).__name__} on a small input: {error})")
        else:
            course.append(f"{name} (returned {_form(got)} on a small input, expected {want})")
    if not quiet:  # each line through translate(): English as it is, or the chosen language's
        print(translate("your pieces:"), ", ".join(yours) if yours else translate("none yet"))
        print(
            translate("the course's solutions for:"),
            translate("; ").join(translate(c) for c in course) if course else translate("none"),
        )
        for name, check, why in rejected:
            print(translate("used although its check rejects it:"), _said(name, check, why))
        if rejected:
            print(
                translate(
                    "  (the model below runs them as you wrote them; section 6 finds what they "
                    "change)"
                )
            )
    return Pieces(**chosen)


def yours_or_course(
    mine: Callable[..., Any], course: Callable[..., Any], check: Callable[..., bool]
) -> Callable:
    """mine if its check passes, else course, and say why: for a function from an earlier
    lesson (perplexity) or the loop that generates; a function its check rejected is never used
    silently."""
    if not callable(mine):
        raise TypeError(f"mine: expected a function, got {type(mine).__name__}")
    why = verdict(check, mine)
    if why is None:
        print(translate(f"using your {_checking.name_of(mine)} (it passes {check.__name__})"))
        return mine
    english = (
        f"using the course's {course.__name__}: {check.__name__} says of your "
        f"{_checking.name_of(mine)}: "
    )
    print(english + _short(why) if language() == "en" else translate(english + why))
    return course
