"""The checkers of lesson 12 name typical mistakes (what all checkers do: test_kit.py)."""

import pytest
import torch

from attention.exercises import lesson12 as M
from attention.exercises.lesson12 import (
    check_chat_prompt,
    check_induction_score,
    check_previous_token_score,
    check_sampling_probs,
    check_sink_share,
    check_top_k_filter,
)
from attention.exercises.solutions.lesson12 import (
    solution_chat_prompt,
    solution_induction_score,
    solution_previous_token_score,
    solution_sampling_probs,
    solution_sink_share,
    solution_top_k_filter,
)
from tests.exercises.checker_answers import run


@pytest.mark.parametrize(
    ("check", "solution"),
    [
        (check_sink_share, solution_sink_share),
        (check_previous_token_score, solution_previous_token_score),
        (check_induction_score, solution_induction_score),
        (check_top_k_filter, solution_top_k_filter),
        (check_sampling_probs, solution_sampling_probs),
        (check_chat_prompt, solution_chat_prompt),
    ],
)
def test_reference_solutions_pass(check, solution, capsys):
    ok, out = run(check, solution, capsys)
    assert ok is True and out.startswith("Correct: "), out


def test_the_planted_maps_are_causal_and_tell_the_mistakes_apart():
    w = M._causal_weights((2, 3, 6, 6), seed=0)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 6))
    assert bool((w.triu(1) == 0).all())
    # the diagonals the induction checker reads differ from head to head as planted
    n, t = 6, 12
    bias = torch.stack([M._band(t, -(n - 1), 5.0), M._band(t, -n, 5.0)])
    w = M._causal_weights((2, t, t), seed=14, bias=bias)
    score = solution_induction_score(w, n)
    assert score[0] > 0.5 > score[1]


# --- sink share --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda w: w[..., :, 0].mean((1, 2)), "you included query 0"),
        (lambda w: w[..., 0, :].mean((1, 2)), "you read the first query's row"),
        (lambda w: w[..., 1:, -1].mean((1, 2)), "you read the last key's column"),
        (lambda w: w[..., 1:, 0].sum((1, 2)), "you summed over heads and queries"),
        (lambda w: w[..., 1:, 0].mean(-1), "that is one per head; average over the heads too"),
        (lambda w: w[..., 1:, 0].mean((1, 2)).tolist(), "expected a torch.Tensor, got list"),
        (lambda w: w[..., 1:, 1].mean((1, 2)), "sink share: wrong value at position (0,)"),
        (lambda w: None, "returned None"),
    ],
)
def test_sink_share_mistakes(fn, message, capsys):
    ok, out = run(check_sink_share, fn, capsys)
    assert not ok and message in out, out


# --- previous-token score ----------------------------------------------------------------------


def diagonal(w, offset):
    return torch.diagonal(w, offset=offset, dim1=-2, dim2=-1)


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda w: diagonal(w, 0).mean(-1), "you read the diagonal"),
        (lambda w: diagonal(w, 1).mean(-1), "the next token (offset +1)"),
        (lambda w: diagonal(w, -1).sum(-1) / w.shape[-1], "you divided by T = 10"),
        (lambda w: diagonal(w, -1).sum(-1), "you summed the weights"),
        (lambda w: diagonal(w, -2).mean(-1), "wrong value at position (0,)"),
        (lambda w: diagonal(w, -1), "wrong shape: expected (5,), got (5, 9)"),
    ],
)
def test_previous_token_mistakes(fn, message, capsys):
    ok, out = run(check_previous_token_score, fn, capsys)
    assert not ok and message in out, out


# --- induction score ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda w, n: diagonal(w, -n).mean(-1), "a duplicate-token head"),
        (lambda w, n: diagonal(w, -(n - 1)).mean(-1), "you included query n - 1"),
        (lambda w, n: diagonal(w, -1)[..., n - 1 :].mean(-1), "you read the previous token"),
        (lambda w, n: diagonal(w, -(n - 1))[..., 1:].sum(-1), "you summed the weights"),
        (lambda w, n: diagonal(w, -(n - 2)).mean(-1), "wrong value at position"),
        (lambda w, n: diagonal(w, -(n - 1))[..., 1:], "wrong shape: expected (4,), got (4, 6)"),
    ],
)
def test_induction_mistakes(fn, message, capsys):
    ok, out = run(check_induction_score, fn, capsys)
    assert not ok and message in out, out


# --- top-k filter ------------------------------------------------------------------------------


def keep_top(logits, k, fill=float("-inf"), strict=False):
    kth = logits.topk(k, dim=-1).values[..., -1:]
    drop = logits <= kth if strict else logits < kth
    return logits.masked_fill(drop, fill)


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda x, k: keep_top(x, k + 1), "you kept 5 logits per row"),
        (lambda x, k: keep_top(x, k, strict=True), "you kept 3 logits per row"),
        (lambda x, k: keep_top(x, k, fill=0.0), "you set the others to 0"),
        (lambda x, k: torch.softmax(keep_top(x, k), -1), "you returned probabilities"),
        (
            lambda x, k: x.masked_fill(
                x > x.topk(k, -1, largest=False).values[..., -1:], float("-inf")
            ),
            "you kept the k smallest logits",
        ),
        (
            lambda x, k: x.masked_fill(x < x.flatten().topk(k).values[-1], float("-inf")),
            "you took the top k of the whole batch",
        ),
        (lambda x, k: x.topk(k, dim=-1).values, "you returned only the k values"),
        (lambda x, k: x.clone(), "filtered logits: wrong value at position"),
    ],
)
def test_top_k_mistakes(fn, message, capsys):
    ok, out = run(check_top_k_filter, fn, capsys)
    assert not ok and message in out, out


# --- sampling probabilities -------------------------------------------------------------------


def sampling(x, t, k, *, scale=None, k_shift=0, after=False, renorm=True):
    """The learner's distribution with one thing changed (see the parameters)."""
    scores = x / t if scale is None else x * scale
    keep = None if k is None else keep_top(scores, k + k_shift)
    if not after:
        return torch.softmax(scores if keep is None else keep, -1)
    probs = torch.softmax(scores, -1)
    if keep is not None:
        probs = probs.masked_fill(keep == float("-inf"), 0.0)
    return probs / probs.sum(-1, keepdim=True) if renorm else probs


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda x, t, k: sampling(x, 1.0, k), "the temperature changed nothing"),
        (
            lambda x, t, k: sampling(x, 1.0, k) / t,
            "divided the probabilities by the temperature after",
        ),
        (
            lambda x, t, k: sampling(x, t, k, scale=t),
            "you multiplied the logits by the temperature 0.5",
        ),
        (lambda x, t, k: keep_top(x / t, k), "you returned the (filtered) logits"),
        (lambda x, t, k: torch.softmax(x, -1), "you returned softmax(logits): apply the temp"),
        (lambda x, t, k: sampling(x, t, k, k_shift=-1), "you kept 3 tokens; keep exactly k = 4"),
        (lambda x, t, k: sampling(x, t, k, k_shift=1), "you kept 5 tokens; keep exactly k = 4"),
        (
            lambda x, t, k: sampling(x, t, k, after=True, renorm=False),
            "without renormalising",
        ),
        (lambda x, t, k: sampling(x, t, None), "top_k = 4 was ignored"),
        (lambda x, t, k: sampling(x, t, k if k is None else k + 2), "wrong value at position"),
        (lambda x, t, k: sampling(x, t, k)[0], "wrong shape: expected (3, 12), got (12,)"),
        (lambda x, t, k: None, "returned None"),
    ],
)
def test_sampling_probs_mistakes(fn, message, capsys):
    ok, out = run(check_sampling_probs, fn, capsys)
    assert not ok and message in out, out


def test_sampling_probs_filters_after_softmax_and_renormalises_is_right(capsys):
    """Zeroing after the softmax and renormalising gives the same distribution: accepted."""
    ok, out = run(check_sampling_probs, lambda x, t, k: sampling(x, t, k, after=True), capsys)
    assert ok, out


def test_sampling_probs_without_top_k_must_not_filter(capsys):
    ok, out = run(check_sampling_probs, lambda x, t, k: sampling(x, t, k or 3), capsys)
    assert not ok and "probabilities (T=2.0, top_k=None)" in out, out


# --- chat prompt -------------------------------------------------------------------------------

SYSTEM = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"  # noqa: E501


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda q: solution_chat_prompt(q).removeprefix(SYSTEM), "the system turn is missing"),
        (
            lambda q: solution_chat_prompt(q).removesuffix("<|im_start|>assistant\n"),
            "end with an open assistant turn",
        ),
        (lambda q: solution_chat_prompt(q)[:-1], "the last newline is missing"),
        (
            lambda q: solution_chat_prompt("What is the capital of France?"),
            "does not contain the question",
        ),
        (
            lambda q: solution_chat_prompt(q).replace("user\n", "user: "),
            "from character 114 on: expected '\\nWhat is the capital of ', got ': What",
        ),
        (
            lambda q: solution_chat_prompt(q).encode(),
            "expected a str (the prompt's text), got bytes",
        ),
        (lambda q: None, "returned None"),
    ],
)
def test_chat_prompt_mistakes(fn, message, capsys):
    ok, out = run(check_chat_prompt, fn, capsys)
    assert not ok and message in out, out


def test_checkers_never_raise_and_report_a_stub(capsys):
    def my_sink_share(weights):
        raise NotImplementedError

    ok, out = run(check_sink_share, my_sink_share, capsys)
    assert not ok and out.startswith("Not attempted yet: write my_sink_share")
