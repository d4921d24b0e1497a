"""The pretrained models' hook points, layer results and attention functions.

Every point has one name (.points): hook_name and parse_hook_name go both ways, and the
block's points read by hooks and kept in the layer's result are what its modules compute. No
hook is the plain forward pass bit for bit; a hook that hands back what it got changes
nothing; zeroing a head through its hook is the old ablation (and zeroing its slice of the
output projection, the reference); each layer's q, k, v, weights and heads are what the
core's attention makes of them; flash_attention and a plain softmax(q k^T / sqrt(D)) v of
the test's own run the real models and give their logits.
"""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch

from attention import flash_attention, repeat_kv, scaled_dot_product_attention
from attention.masks import causal_mask
from attention.models.cache import pretrained_model
from attention.models.pretrained import HOOK_POINTS
from attention.models.pretrained.points import (
    NAMES,
    hook_name,
    hook_points,
    parse_hook_name,
)
from attention.positional import apply_rope

TEXT = "The animal didn't cross the street because it was too tired."
OTHER = "A cat sat on the mat and looked at the door for a long time."


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # many mid-sized products


@pytest.fixture
def smol():
    return pretrained_model("smollm2")  # loaded once per process, shared with other tests


@pytest.fixture
def minilm():
    return pretrained_model("minilm")


@pytest.fixture(params=["smollm2", "minilm"])
def model_ids(request, smol, minilm):
    """(model, ids of TEXT, what the forward returns: logits or hidden states)."""
    model, tok = smol if request.param == "smollm2" else minilm
    ids = torch.tensor([tok.encode(TEXT)])
    return model, ids, (lambda out: out.logits) if model.causal else (lambda out: out.hidden)


def _zero_head(head: int):
    def hook(heads):
        heads = heads.clone()
        heads[:, head] = 0.0
        return heads

    return hook


# --- the hook points -----------------------------------------------------------------------------


def test_one_naming_scheme_for_both_models(smol, minilm):
    smol_points = (
        "resid_pre",
        "attn_norm",
        "weights",
        "heads",
        "attn_out",
        "resid_mid",
        "ffn_norm",
        "ffn",
        "resid_post",
    )
    for (model, _), emitted in ((smol, smol_points), (minilm, hook_points("minilm"))):
        names = model.hook_names()
        assert len(names) == len(emitted) * model.cfg.n_layers
        want = [(i, p) for i in range(model.cfg.n_layers) for p in emitted]
        assert [parse_hook_name(n) for n in names] == want
        assert [hook_name(i, p) for i, p in want] == names
    assert hook_points("minilm") == tuple(p for p in smol_points if not p.endswith("_norm"))
    # a hook's name is its point's name in its block, and nothing else
    assert hook_name(3, "heads") == "blocks.3.heads"
    assert parse_hook_name("blocks.3.heads") == (3, "heads")
    assert parse_hook_name("blocks.12.weights") == (12, "weights")
    assert parse_hook_name("blocks.0.resid_post") == (0, "resid_post")
    assert len(HOOK_POINTS) == len(smol_points) and set(smol_points) <= set(NAMES)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: parse_hook_name("blocks.x.resid_pre"),
            r"hook name: expected 'blocks.<layer>.<point>' with point one of \['resid_pre', "
            r"'attn_norm', 'weights', 'heads'.*got 'blocks.x.resid_pre'",
        ),
        (  # the old spelling of the heads point is not a second name for it
            lambda: parse_hook_name("blocks.3.attn.head_out"),
            r"point one of .*got 'blocks.3.attn.head_out'",
        ),
        (lambda: parse_hook_name("blocks.3.q"), r"point one of .*got 'blocks.3.q'"),
        (lambda: parse_hook_name(3), r"got 3"),
        (lambda: hook_name(3, "q"), r"point: expected one of \['resid_pre', .*got 'q'"),
    ],
)
def test_bad_hook_names_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_no_hook_and_reading_hooks_are_the_plain_forward_bit_for_bit(model_ids):
    model, ids, main = model_ids
    base = model(ids)
    assert torch.equal(main(model(ids, hooks={})), main(base))
    assert torch.equal(main(model(ids, hooks=None, ablate=set())), main(base))
    seen = {}
    reading = {name: partial(seen.__setitem__, name) for name in model.hook_names()}
    out = model(ids, hooks=reading)  # every point read, none replaced
    assert torch.equal(main(out), main(base))
    assert len(seen) == len(model.hook_names())
    last = model.cfg.n_layers - 1
    assert torch.equal(seen["blocks.0.resid_pre"], base.hidden_states[0])
    assert torch.equal(seen[hook_name(last, "resid_post")], base.hidden_states[-1])
    assert torch.equal(seen["blocks.2.heads"], base.layers[2].heads)


def test_replacing_with_itself_changes_nothing(model_ids):
    model, ids, main = model_ids
    same = {name: torch.clone for name in model.hook_names()}  # a new tensor, the same values
    assert torch.equal(main(model(ids, hooks=same)), main(model(ids)))


def test_reading_and_replacing_an_attention_map(model_ids):
    model, ids, main = model_ids
    base = model(ids)
    seen = {}
    out = model(ids, hooks={"blocks.1.weights": partial(seen.__setitem__, "w")})
    assert torch.equal(seen["w"], base.layers[1].weights)
    assert torch.equal(main(out), main(base))

    def uniform_head_2(w):  # head 2 spreads its weight evenly over the keys it may see
        w = w.clone()
        allowed = (w[:, 2] > 0).float() if model.causal else torch.ones_like(w[:, 2])
        w[:, 2] = allowed / allowed.sum(-1, keepdim=True)
        return w

    out = model(ids, hooks={"blocks.1.weights": uniform_head_2})
    v = base.layers[1].v[:, 2 // (model.cfg.n_heads // base.layers[1].v.shape[1])]  # (B, T, D)
    t = ids.shape[1]
    if model.causal:  # query i averages the values of keys 0..i
        want = v.cumsum(-2) / torch.arange(1, t + 1)[:, None]
    else:
        want = v.mean(-2, keepdim=True).expand_as(v)
    torch.testing.assert_close(out.layers[1].heads[:, 2], want)
    torch.testing.assert_close(out.layers[1].heads[:, 1], base.layers[1].heads[:, 1])
    assert not torch.equal(main(out), main(base))


def test_a_weights_hook_needs_the_cores_attention(smol):
    model, _ = smol
    with pytest.raises(ValueError, match=r"hooks\['blocks.0.weights'\]: expected the core"):
        model(
            torch.tensor([[1, 2, 3]]),
            attention_fn=flash_attention,
            hooks={"blocks.0.weights": lambda w: w},
        )


def test_zeroing_a_head_through_its_hook_is_the_ablation(model_ids):
    model, ids, main = model_ids
    layer, head = 4, 2
    hooked = model(ids, hooks={hook_name(layer, "heads"): _zero_head(head)})
    ablated = model(ids, ablate={(layer, head)})
    assert torch.equal(main(hooked), main(ablated))
    assert not torch.allclose(main(hooked), main(model(ids)), atol=1e-3)
    assert float(hooked.layers[layer].heads[:, head].abs().max()) == 0.0  # what was merged
    # the reference: the head's slice of the output projection zeroed instead
    d = model.cfg.d_model // model.cfg.n_heads
    w = model.layers[layer].attn.out_proj.weight
    saved = w[:, head * d : (head + 1) * d].clone()
    try:
        w[:, head * d : (head + 1) * d] = 0.0
        manual = model(ids)
    finally:
        w[:, head * d : (head + 1) * d] = saved
    torch.testing.assert_close(main(manual), main(hooked), atol=1e-5, rtol=0)


def test_ablation_runs_before_a_hook_on_the_same_point(smol):
    model, tok = smol
    ids = torch.tensor([tok.encode(TEXT)])
    seen = {}
    out = model(ids, ablate={(3, 1)}, hooks={"blocks.3.heads": partial(seen.__setitem__, "h")})
    assert float(seen["h"][:, 1].abs().max()) == 0.0 and float(seen["h"][:, 0].abs().max()) > 0
    assert torch.equal(out.logits, model(ids, ablate={(3, 1)}).logits)


def test_patching_the_residual_stream_moves_another_runs_prediction(smol):
    """Activation patching: put text B's residual stream into text A's run."""
    model, tok = smol
    a, b = tok.encode(TEXT), tok.encode(OTHER)
    n = min(len(a), len(b))
    ids_a, ids_b = torch.tensor([a[:n]]), torch.tensor([b[:n]])
    run_b = model(ids_b)
    last = model.cfg.n_layers - 1
    # everything the last block wrote, and everything block 0 read: the whole of B's run
    for name, x in (
        (hook_name(last, "resid_post"), run_b.hidden_states[-1]),
        ("blocks.0.resid_pre", run_b.hidden_states[0]),
    ):
        patched = model(ids_a, hooks={name: lambda _, x=x: x})
        assert torch.equal(patched.logits, run_b.logits), name
    # block 10's output patched: the layers before it still ran on A, later ones read B
    patched = model(ids_a, hooks={"blocks.10.resid_post": lambda _: run_b.hidden_states[11]})
    torch.testing.assert_close(patched.logits, run_b.logits, atol=1e-4, rtol=0)
    torch.testing.assert_close(patched.layers[3].q, model(ids_a).layers[3].q, atol=0, rtol=0)


# --- what each layer returns ---------------------------------------------------------------------


def test_each_layer_returns_what_the_core_makes_of_its_q_k_v(smol, minilm):
    for (model, tok), mask in ((smol, causal_mask), (minilm, lambda t: None)):
        ids = torch.tensor([tok.encode(TEXT)])
        t = ids.shape[1]
        out = model(ids)
        assert len(out.layers) == model.cfg.n_layers
        for r in (out.layers[0], out.layers[-1]):
            att = scaled_dot_product_attention(r.q, r.k, r.v, mask(t))
            torch.testing.assert_close(r.weights, att.weights, atol=1e-6, rtol=0)
            torch.testing.assert_close(r.heads, att.output, atol=1e-6, rtol=0)
            h = model.cfg.n_heads
            assert r.q.shape == (1, h, t, model.cfg.d_model // h)
            heads = r.weights @ repeat_kv(r.v, h // r.v.shape[1])  # (1, H, T, D)
            torch.testing.assert_close(r.heads, heads, atol=1e-5, rtol=0)
        assert out.attentions[5] is out.layers[5].weights


def test_q_and_k_before_and_after_rope(smol, minilm):
    model, tok = smol
    ids = torch.tensor([tok.encode(TEXT)])
    r = model(ids).layers[7]
    assert r.k.shape == r.k_raw.shape == (1, 3, ids.shape[1], 64)  # 3 shared key/value heads
    rope = {"positions": torch.arange(ids.shape[1]), "base": model.cfg.rope_base}
    torch.testing.assert_close(r.q, apply_rope(r.q_raw, **rope, layout="interleaved"))
    torch.testing.assert_close(r.k, apply_rope(r.k_raw, **rope, layout="interleaved"))
    assert not torch.allclose(r.q, r.q_raw)
    # with a cache, k holds every key and k_raw the new ones only
    first = model(ids[:, :-1], use_cache=True)
    step = model(ids[:, -1:], cache=first.cache).layers[7]
    assert step.k_raw.shape[2] == 1 and step.k.shape[2] == ids.shape[1]
    torch.testing.assert_close(step.k, r.k, atol=1e-5, rtol=0)
    bert = minilm[0](torch.tensor([minilm[1].encode(TEXT)])).layers[2]
    assert bert.q_raw is bert.q and bert.k_raw is bert.k  # no RoPE: the same tensors
    assert smol[0].rotary and smol[0].causal and not (minilm[0].rotary or minilm[0].causal)


def test_each_point_is_what_the_blocks_modules_compute(smol, minilm):
    """A block's points, read by hooks, kept in its result (keep=) and equal to its modules'."""
    for model, tok in (smol, minilm):
        ids = torch.tensor([tok.encode(TEXT)])
        i, block = 4, model.layers[4]
        seen = {}
        names = [hook_name(i, p) for p in hook_points(model.family)]
        out = model(ids, hooks={n: partial(seen.__setitem__, parse_hook_name(n)[1]) for n in names})
        r = out.layers[i]
        assert torch.equal(seen["heads"], r.heads) and torch.equal(seen["weights"], r.weights)
        attn_out = block.attn.out_proj(r.heads.transpose(1, 2).flatten(2))  # (B, T, M)
        torch.testing.assert_close(seen["attn_out"], attn_out, atol=1e-5, rtol=0)
        x = out.hidden_states[i]
        assert torch.equal(seen["resid_pre"], x)
        assert torch.equal(seen["resid_post"], out.hidden_states[i + 1])
        if model.causal:  # pre-norm: x + attention(norm(x)), then + ffn(norm(.))
            assert torch.equal(seen["attn_norm"], block.attn_norm(x))
            assert torch.equal(seen["resid_mid"], x + seen["attn_out"])
            assert torch.equal(seen["ffn_norm"], block.ffn_norm(seen["resid_mid"]))
            assert torch.equal(seen["ffn"], block.ffn(seen["ffn_norm"]))
            assert torch.equal(seen["resid_post"], seen["resid_mid"] + seen["ffn"])
        else:  # post-norm: norm(x + attention(x)), then norm(. + ffn(.))
            assert torch.equal(seen["resid_mid"], block.attn_norm(x + seen["attn_out"]))
            ffn = block.down(torch.nn.functional.gelu(block.up(seen["resid_mid"])))
            assert torch.equal(seen["ffn"], ffn)
            assert torch.equal(seen["resid_post"], block.ffn_norm(seen["resid_mid"] + ffn))


def test_a_layers_result_is_the_cache_of_the_points_asked_for(smol):
    model, tok = smol
    ids = torch.tensor([tok.encode(TEXT)])
    out = model(ids)
    r = out.layers[2]
    assert list(r) == ["q_raw", "k_raw", "q", "k", "v", "weights", "heads"]  # the default
    assert r["heads"] is r.heads and dict(r)["q"] is r.q
    x = model.embed(ids)
    run = model.run_from(0, x, keep=("resid_mid", "heads", "ffn"))
    r2 = run.layers[2]
    assert list(r2) == ["heads", "resid_mid", "ffn"]  # in the order the block reaches them
    torch.testing.assert_close(r2.heads, r.heads, atol=0, rtol=0)
    torch.testing.assert_close(r2.resid_mid + r2.ffn, out.hidden_states[3], atol=0, rtol=0)
    with pytest.raises(AttributeError, match=r"LayerResult has no 'ffn_norm'; the points kept"):
        r2.ffn_norm  # noqa: B018
    with pytest.raises(KeyError, match=r"point: expected one of the points kept"):
        r2["q"]  # noqa: B018


def test_run_from_a_layer_is_the_rest_of_the_forward_pass(smol):
    model, tok = smol
    ids = torch.tensor([tok.encode(TEXT)])
    hooks = {hook_name(20, "heads"): _zero_head(3)}
    out = model(ids, hooks=hooks)
    run = model.run_from(12, out.hidden_states[12], hooks=hooks, keep=("heads",))
    assert torch.equal(run.output, out.hidden_states[-1])  # the same operations, bit for bit
    assert len(run.layers) == 18 and float(run.layers[8].heads[:, 3].abs().max()) == 0.0
    with pytest.raises(ValueError, match=r"layer: expected an integer in \[0, 30\), got 30"):
        model.run_from(30, out.hidden_states[12])
    with pytest.raises(
        ValueError, match=r"keep: expected points among \['q_raw', .*got \['mask'\]"
    ):
        model.run_from(0, out.hidden_states[0], keep=("mask",))


def test_need_weights_false_keeps_no_layer_results(smol):
    model, tok = smol
    out = model(torch.tensor([tok.encode(TEXT)]), need_weights=False, use_cache=True)
    assert out.layers == () and out.attentions == ()
    assert len(out.cache.keys) == 30  # the cache is kept all the same


# --- other attention functions -------------------------------------------------------------------


def softmax_attention(q, k, v, mask):
    """A learner's attention: softmax(q k^T / sqrt(D)) v, sharing key/value heads by hand."""
    n_rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def test_flash_attention_runs_smollm2(smol):
    model, tok = smol
    ids = torch.tensor([tok.encode(TEXT + " " + OTHER)])  # 29 tokens: several tiles of 8
    base = model(ids)
    flash = model(ids, attention_fn=partial(flash_attention, block_size=8))
    torch.testing.assert_close(flash.logits, base.logits, atol=1e-4, rtol=0)
    assert flash.attentions == () and flash.layers[3].weights is None  # never holds them
    torch.testing.assert_close(flash.layers[3].heads, base.layers[3].heads, atol=1e-5, rtol=0)
    cached = model(ids[:, :-1], use_cache=True, attention_fn=flash_attention)
    step = model(ids[:, -1:], cache=cached.cache, attention_fn=flash_attention)
    torch.testing.assert_close(step.logits, base.logits[:, -1:], atol=1e-4, rtol=0)


def test_a_learners_attention_runs_both_models(smol, minilm):
    model, tok = smol
    ids = torch.tensor([tok.encode(TEXT)])
    out = model(ids, attention_fn=softmax_attention)
    torch.testing.assert_close(out.logits, model(ids).logits, atol=1e-4, rtol=0)
    assert out.attentions == ()  # a plain tensor: no weights to keep
    bert, tok = minilm
    a, b = tok.encode("Attention is all you need."), tok.encode("Hello")
    ids = torch.tensor([a, b + [0] * (len(a) - len(b))])  # padded: the mask is used
    real = ids != 0
    out = bert(ids, attention_mask=real, attention_fn=softmax_attention)
    want = bert(ids, attention_mask=real)
    torch.testing.assert_close(out.hidden[real], want.hidden[real], atol=1e-5, rtol=0)


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"hooks": {"blocks.30.resid_post": print}},
            ValueError,
            r"hooks: unknown hook point 'blocks.30.resid_post'; expected 'blocks.<layer>.<point>' "
            r"with layer in \[0, 30\) and point one of "
            r"\['resid_pre', 'attn_norm', 'weights', 'heads', 'attn_out'",
        ),
        ({"hooks": {"blocks.0.attn": print}}, ValueError, r"unknown hook point 'blocks.0.attn'"),
        (
            {"hooks": {"blocks.1.resid_pre": 3}},
            TypeError,
            r"hooks\['blocks.1.resid_pre'\]: expected a function, got int",
        ),
        (
            {"hooks": {"blocks.2.resid_post": lambda x: x[:, 1:]}},
            ValueError,
            r"hooks\['blocks.2.resid_post'\]: expected a replacement of shape \(1, 3, 576\), "
            r"got \(1, 2, 576\)",
        ),
        (
            {"hooks": {"blocks.2.heads": lambda h: h.sum(1)}},
            ValueError,
            r"hooks\['blocks.2.heads'\]: expected a replacement of shape \(1, 9, 3, 64\)",
        ),
        (
            {"hooks": {"blocks.2.resid_pre": lambda x: x.tolist()}},
            TypeError,
            r"hooks\['blocks.2.resid_pre'\]: expected None or a Tensor, got list",
        ),
        (
            {"attention_fn": lambda q, k, v, mask: v},
            ValueError,
            r"attention_fn: expected an output of shape \(B, H, Tq, Dv\) = \(1, 9, 3, 64\), "
            r"got \(1, 3, 3, 64\)",
        ),
    ],
)
def test_bad_hooks_are_refused(smol, kwargs, error, match):
    with pytest.raises(error, match=match):
        smol[0](torch.tensor([[1, 2, 3]]), **kwargs)
