"""The checkers of lesson 16 reject each named slip with its name (what all checkers do:
test_kit.py). SLIPPED holds a wrong piece for each slip the debugger knows
(compare.SLIPS); tests/models/test_debugger.py feeds the same ones into the assembled model and
checks that the debugger finds them."""

from __future__ import annotations

import pytest
import torch

import attention.exercises as E
from attention.exercises import lesson16 as C
from attention.exercises.solutions import lesson16 as S
from attention.exercises.solutions.lesson15 import solution_perplexity
from attention.models.pretrained import sample_next
from attention.models.pretrained.compare import SLIPS, decoder_forward
from tests.exercises.checker_answers import run
from tests.exercises.slips16 import SLIPPED, eps_outside, rope_halves

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # the generation checks: many tiny ops


def test_every_slip_the_debugger_knows_has_a_wrong_piece_here():
    assert set(SLIPPED) == set(SLIPS)


@pytest.mark.parametrize("name", list(SLIPPED))
def test_each_named_slip_is_rejected_with_its_name(name, capsys):
    _, wrong, check = SLIPPED[name]
    ok, out = run(getattr(C, check), wrong, capsys)
    assert ok is False, out
    assert out.startswith("Not yet: ") and name in out, out


def test_the_norm_checker_names_a_forgotten_weight_and_a_layer_that_uses_globals(capsys):
    ok, out = run(
        C.check_rms_norm, lambda x, w, eps: x / torch.sqrt(x.pow(2).mean(-1, True) + eps), capsys
    )
    assert not ok and "the norm's weight forgotten" in out

    def my_layer(x, w, past, cfg, f):  # SmolLM2's sizes written in, not cfg's
        return x.view(1, x.shape[1], 9, 64), None

    ok, out = run(C.check_attention_layer, my_layer, capsys)
    assert not ok and "take the sizes from cfg" in out, out


def test_the_mask_checker_names_a_square_mask_after_a_cache(capsys):
    def square(t, past):
        return torch.ones(t, t).tril().bool()

    ok, out = run(C.check_cached_causal_mask, square, capsys)
    assert not ok and "the mask ignores the cache" in out, out


def test_the_layer_checker_names_a_cache_that_does_not_grow(capsys):
    right = S.solution_attention_layer

    def forgets(x, w, past, cfg, f):
        out, (k, v) = right(x, w, past, cfg, f)
        t = x.shape[1]
        return out, (k[:, :, -t:], v[:, :, -t:])

    ok, out = run(C.check_attention_layer, forgets, capsys)
    assert not ok and "holds only the new positions" in out, out


def no_attention_residual(x, w, past, cfg, f):
    h, kv = f.attention_layer(f.rms_norm(x, w["attn_norm"], cfg.norm_eps), w, past, cfg, f)
    g = f.rms_norm(h, w["ffn_norm"], cfg.norm_eps)
    return h + f.swiglu(g, w["w_gate"], w["w_up"], w["w_down"]), kv


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (no_attention_residual, "the residual forgotten around the attention"),
        (
            lambda x, w, past, cfg, f: S.solution_decoder_block(
                x, dict(w, ffn_norm=w["attn_norm"]), past, cfg, f
            ),
            "not w['attn_norm']",
        ),
    ],
)
def test_the_block_checker_names_its_slips(block, message, capsys):
    ok, out = run(C.check_decoder_block, block, capsys)
    assert not ok and message in out, out


def test_the_output_checker_names_a_forgotten_final_norm_and_a_fresh_random_layer(capsys):
    ok, out = run(C.check_output_layer, lambda x, weights, cfg, f: x @ weights["embed"].T, capsys)
    assert not ok and "the final norm forgotten" in out, out

    def fresh(x, weights, cfg, f):
        v, m = weights["embed"].shape
        return torch.nn.Linear(m, v, bias=False)(f.rms_norm(x, weights["norm"], cfg.norm_eps))

    ok, out = run(C.check_output_layer, fresh, capsys)
    assert not ok and "not tied" in out and "changed between two calls" in out, out


def test_use_pieces_keeps_what_runs_and_says_what_it_replaced(capsys):
    def my_rms_norm(x, weight, eps):
        raise NotImplementedError

    def my_swiglu(x, w_gate, w_up, w_down):
        return x @ w_down  # wrong shape: crashes on the small input

    f = C.use_pieces(rms_norm=my_rms_norm, swiglu=my_swiglu, rope=rope_halves)
    out = capsys.readouterr().out
    assert f.rope is rope_halves and f.rms_norm is S.solution_rms_norm
    assert f.swiglu is S.solution_swiglu and f.block is S.solution_decoder_block
    assert "your pieces: rope\n" in out
    assert "rms_norm (my_rms_norm unfinished)" in out
    assert "swiglu (RuntimeError on a small input" in out
    assert "block (not given)" in out

    def my_block(x, w, past, cfg, f):  # forgets to return the cache
        return S.solution_decoder_block(x, w, past, cfg, f)[0]

    f = C.use_pieces(block=my_block)
    out = capsys.readouterr().out
    assert f.block is S.solution_decoder_block
    assert "block (returned (1, 3, 24) on a small input, expected ((1, 3, 24), (" in out
    with pytest.raises(ValueError, match=r"unknown pieces \['norm'\]"):
        C.use_pieces(norm=my_rms_norm)
    with pytest.raises(TypeError, match="rope: expected a function, got Tensor"):
        C.use_pieces(rope=torch.zeros(2))


# --- the generation loop: each wrong loop written as a learner might ----------------------------


def _gen(*, slip=""):
    def my_generate(f, weights, cfg, prompt_ids, n_new, temperature=0.0, top_k=None, seed=0):
        g = torch.Generator().manual_seed(seed)
        logits, cache = decoder_forward(f, weights, cfg, prompt_ids)
        if slip == "twice":
            logits, cache = decoder_forward(f, weights, cfg, prompt_ids[:, -1:], cache)
        ids, new, steps = prompt_ids, [], []
        for i in range(n_new):
            last = logits[:, 0] if slip == "first" and i == 0 else logits[:, -1]
            if slip == "generator":
                g = torch.Generator().manual_seed(seed)
            t = 0.0 if slip == "greedy" else temperature
            nxt = sample_next(last, temperature=t, top_k=top_k if t else None, generator=g)
            new.append(int(nxt))
            steps.append(last)
            ids = torch.cat([ids, nxt[:, None]], dim=1)
            if slip == "whole":
                logits, cache = decoder_forward(f, weights, cfg, ids, cache)
            elif slip == "no cache":
                logits, _ = decoder_forward(f, weights, cfg, nxt[:, None])
            elif slip == "not kept":
                logits, _ = decoder_forward(f, weights, cfg, nxt[:, None], cache)
            elif slip == "not fed":
                logits, cache = decoder_forward(f, weights, cfg, prompt_ids[:, -1:], cache)
            else:
                logits, cache = decoder_forward(f, weights, cfg, nxt[:, None], cache)
        if slip == "late":
            steps = [*steps[1:], logits[:, -1]]  # the logits after each token
        if slip == "one short":
            new = new[:-1]
        return new, torch.stack(steps, dim=1)

    return my_generate


@pytest.mark.parametrize(
    ("slip", "message"),
    [
        ("whole", "feed only the new token"),
        ("no cache", "pass the cache to decoder_forward"),
        ("not kept", "keep the cache each call returns"),
        ("not fed", "feed the token you just picked"),
        ("twice", "off by one: the prompt's last logits already predict the first new token"),
        ("first", "off by one: pick from the logits at the LAST position"),
        ("generator", "make one generator before the loop"),
        ("greedy", "pass temperature and top_k to sample_next"),
        ("late", "return the logits each token was picked from"),
        ("one short", "expected 6 new ids, got 5"),
    ],
)
def test_the_generation_checker_names_each_wrong_loop(slip, message, capsys):
    ok, out = run(C.check_generate, _gen(slip=slip), capsys)
    assert ok is False and message in out, out


def test_the_generation_checker_passes_a_right_loop_and_names_an_unwritten_helper(capsys):
    ok, out = run(C.check_generate, _gen(), capsys)
    assert ok, out

    def my_next_token(logits):
        raise NotImplementedError

    def my_generate(f, weights, cfg, prompt_ids, n_new, temperature=0.0, top_k=None, seed=0):
        logits, _ = decoder_forward(f, weights, cfg, prompt_ids)
        return [my_next_token(logits)], logits

    ok, out = run(C.check_generate, my_generate, capsys)
    assert out == (
        "Not attempted yet: write my_next_token (my_generate calls it) above, then run this cell\n"
    )


def test_not_attempted_names_the_unwritten_helper_not_the_written_function(capsys):
    def my_repeat_kv(x, n_rep):
        raise NotImplementedError  # not pasted yet

    def my_attention(q, k, v, mask):
        n = q.shape[1] // k.shape[1]
        k, v = my_repeat_kv(k, n), my_repeat_kv(v, n)
        return S.solution_gqa_attention(q, k, v, mask)

    ok, out = run(C.check_gqa_attention, my_attention, capsys)
    assert out == (
        "Not attempted yet: write my_repeat_kv (my_attention calls it) above, then run this cell\n"
    )
    f = C.use_pieces(attention=my_attention)
    out = capsys.readouterr().out
    assert f.attention is S.solution_gqa_attention
    assert "attention (my_repeat_kv (my_attention calls it) unfinished)" in out, out


def test_a_piece_its_check_rejects_is_never_used_silently(capsys):
    f = C.use_pieces(rms_norm=eps_outside, swiglu=S.solution_swiglu)
    out = capsys.readouterr().out
    assert f.rms_norm is eps_outside  # used, so that the debugger can find it, and said so
    assert "your pieces: rms_norm, swiglu\n" in out
    assert (
        "used although its check rejects it: rms_norm (check_rms_norm said Not yet: eps outside "
        "the root: x / sqrt(mean(x^2) + eps)" in out
    ), out
    assert "swiglu (check_swiglu" not in out

    def my_perplexity(logits, ids):  # no shift: scores each token with its own logits
        logp = torch.log_softmax(logits, -1)
        return torch.exp(-logp.gather(-1, ids[:, None]).mean())

    chosen = C.yours_or_course(my_perplexity, solution_perplexity, E.check_perplexity)
    out = capsys.readouterr().out
    assert chosen is solution_perplexity
    assert out.startswith(
        "using the course's solution_perplexity: check_perplexity says of your my_perplexity: "
        "Not yet: the logits at position t predict the NEXT token"
    ), out
    assert C.yours_or_course(solution_perplexity, my_perplexity, E.check_perplexity) is (
        solution_perplexity
    )
    assert capsys.readouterr().out == (
        "using your solution_perplexity (it passes check_perplexity)\n"
    )

    def my_stub(logits, ids):
        raise NotImplementedError

    assert C.yours_or_course(my_stub, solution_perplexity, E.check_perplexity) is (
        solution_perplexity
    )
    assert "Not attempted yet: my_stub is unfinished" in capsys.readouterr().out
    with pytest.raises(TypeError, match="mine: expected a function, got int"):
        C.yours_or_course(3, solution_perplexity, E.check_perplexity)
