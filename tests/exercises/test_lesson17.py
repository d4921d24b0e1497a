"""The checkers of lesson 17 name typical mistakes (what all checkers do: test_kit.py)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import attention.exercises as E
from attention.exercises import lesson17 as M
from attention.exercises.solutions import lesson17 as S
from tests.exercises.checker_answers import run, wrong_answer


def _diag(w, offset):
    return torch.diagonal(w, offset=offset, dim1=-2, dim2=-1)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda w, n: _diag(w, -n)[..., 1:].mean(-1), "off by one position: you read key i - n,"),
        (lambda w, n: _diag(w, -(n - 2))[..., 3:].mean(-1), "you read key i - n + 2"),
        (lambda w, n: _diag(w, -(n - 1))[..., 1:].mean(-1), "you included query n"),
        (lambda w, n: _diag(w, -(n - 1))[..., 2:].sum(-1), "you summed the weights"),
        # lesson 12's second copy (queries n .. 2n - 1), the pitfall "BOS shifts the positions"
        (lambda w, n: _diag(w, -(n - 1))[..., 1 : n + 1].mean(-1), "you forgot the BOS shift"),
        (lambda w, n: _diag(w, -1).mean(-1), "wrong value"),
    ],
)
def test_induction_score_mistakes(wrong, message, capsys):
    wrong_answer(E.check_toy_induction_score, wrong, message, capsys)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda w: _diag(w, 0).mean((0, -1)), "you counted the diagonal, each query's weight"),
        (
            lambda w: (_diag(w, 0)[..., 1:] + _diag(w, -1)).mean((0, -1)),
            "you counted the diagonal too",
        ),
        (lambda w: _diag(w, -1).sum(-1).mean(0) / w.shape[-1], "you divided by T = 7"),
        (lambda w: _diag(w, -1).mean(-1), "average over the batch (dim 0) too"),
    ],
)
def test_previous_token_score_mistakes(wrong, message, capsys):
    wrong_answer(E.check_batch_previous_token_score, wrong, message, capsys)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda m, t, layer, head: m(t).logits, "nothing was silenced"),
        (
            lambda m, t, layer, head: m(t, ablate=[(layer - 1, head)]).logits,
            "you silenced layer 0's head 1, the wrong layer",
        ),
        (
            lambda m, t, layer, head: m(t, ablate=[(layer + 1, head)]).logits,
            "you silenced layer 2's head 1, the wrong layer",
        ),
        (
            lambda m, t, layer, head: m(t, ablate=[(i, head) for i in range(3)]).logits,
            "in every layer",
        ),
        (lambda m, t, layer, head: m(t, ablate=[(layer, 0)]).logits, "you silenced head 0"),
        (lambda m, t, layer, head: None, "returned None"),
        (
            lambda m, t, layer, head: _without_residual(m, t, layer, head, every_layer=False),
            "you forgot the residual in layer 1: x = attention's output replaces the stream",
        ),
        (
            lambda m, t, layer, head: _without_residual(m, t, layer, head, every_layer=True),
            "you forgot the residual: x = attention's output replaces the stream in every layer",
        ),
    ],
)
def test_ablation_mistakes(wrong, message, capsys):
    wrong_answer(E.check_ablate_head, wrong, message, capsys)


def _without_residual(model, tokens, layer, head, *, every_layer):
    """The learner's loop with `x = att.output` where `x = x + att.output` belongs."""
    x = model.embed_tokens(tokens)
    for i in range(model.config.n_layers):
        out = model.attend(i, x, ablate=[head] if i == layer else []).output
        x = model.after_attention(i, out if every_layer or i == layer else x + out)
    return model.unembed(model.norm_out(x))


def test_a_stub_is_not_attempted(capsys):
    def my_ablate_head(model, tokens, layer, head):
        raise NotImplementedError

    ok, out = run(E.check_ablate_head, my_ablate_head, capsys)
    assert ok is False and out.startswith("Not attempted yet: write my_ablate_head")


# --- the repeated-part loss -------------------------------------------------------------------


def _ce(logits, targets):
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none"
    )


def _keep(tokens, repeat, shift=0):
    q = torch.arange(tokens.shape[1] - 1)[None, :]
    return q >= repeat[:, None] + shift


def _loss(logits, tokens, repeat, shift=0):
    losses = _ce(logits[:, :-1], tokens[:, 1:]).view(tokens.shape[0], -1)
    return losses[_keep(tokens, repeat, shift)].mean()


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (
            lambda lg, tk, n: _ce(lg, tk).view(tk.shape)[:, :-1][_keep(tk, n)].mean(),
            "you scored position q's logits on token q itself",
        ),
        (
            lambda lg, tk, n: _ce(lg[:, :-1], tk[:, 1:]).mean(),
            "you averaged over every position, the first copy too",
        ),
        (lambda lg, tk, n: _loss(lg, tk, n, shift=-1), "you included logit position n - 1"),
        (lambda lg, tk, n: _loss(lg, tk, n, shift=1), "you left out logit position n,"),
        (lambda lg, tk, n: _loss(lg, tk, n[:1].expand_as(n)), "you used the first sequence's n"),
        (
            lambda lg, tk, n: _ce(lg[:, :-1], tk[:, 1:]).view(tk.shape[0], -1)[_keep(tk, n)].sum(),
            "you summed the losses",
        ),
        (
            lambda lg, tk, n: torch.stack(
                [_ce(lg[i, :-1], tk[i, 1:])[int(n[i]) :].mean() for i in range(len(n))]
            ).mean(),
            "you averaged each sequence first",
        ),
        (lambda lg, tk, n: _loss(lg, tk, n).item() + 0.5, "wrong value"),
        (lambda lg, tk, n: "2.0", "loss: expected a number, got str"),
    ],
)
def test_repeated_loss_mistakes(wrong, message, capsys):
    wrong_answer(M.check_repeated_loss, wrong, message, capsys)


def test_repeated_loss_solution_against_a_loop():
    g = torch.Generator().manual_seed(3)
    tokens = torch.randint(1, 9, (3, 9), generator=g)
    logits, repeat = torch.randn(3, 9, 9, generator=g), torch.tensor([2, 3, 4])
    losses = [
        F.cross_entropy(logits[b, q], tokens[b, q + 1])
        for b in range(3)
        for q in range(8)
        if q >= repeat[b]
    ]  # 6 + 5 + 4 positions
    torch.testing.assert_close(
        S.solution_repeated_loss(logits, tokens, repeat), torch.stack(losses).mean()
    )


# --- K-composition ----------------------------------------------------------------------------


def _comp(a, b, norm=torch.linalg.norm):
    return norm(a @ b) / (norm(a) * norm(b))


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda q, k, v, o: _comp(k.T @ q, o @ v), "that is Q-composition"),
        (lambda q, k, v, o: _comp(q.T @ k, v.T @ o.T), "you used W_OV transposed"),
        (lambda q, k, v, o: _comp(o @ v, k.T @ q), "you used W_OV transposed"),  # same norm
        (lambda q, k, v, o: _comp(o @ v, q.T @ k), "you multiplied in the wrong order"),
        (lambda q, k, v, o: torch.linalg.norm(q.T @ k @ o @ v), "you did not normalise"),
        (
            lambda q, k, v, o: (
                torch.linalg.norm(q.T @ k @ o @ v)
                / (
                    torch.linalg.norm(q)
                    * torch.linalg.norm(k)
                    * torch.linalg.norm(v)
                    * torch.linalg.norm(o)
                )
            ),
            "norms of the four weight matrices",
        ),
        (lambda q, k, v, o: _comp(q.T @ k, o @ v) ** 2, "you squared the norms"),
        (
            lambda q, k, v, o: _comp(q.T @ k, o @ v, lambda a: torch.linalg.matrix_norm(a, ord=2)),
            "you used the spectral norm",
        ),
        # the missing transpose: w_q @ w_k.T is (D, D), which cannot meet W_OV (M, M)
        (lambda q, k, v, o: _comp(q @ k.T, o @ v), "W_QK = w_q.T @ w_k and W_OV = w_o @ w_v"),
        (lambda q, k, v, o: _comp(q.T @ k, o @ v) + 0.1, "wrong value"),
        (
            lambda q, k, v, o: torch.stack([_comp(q.T @ k, o @ v)] * 2),
            "K-composition: expected one number, got a tensor of shape (2,)",
        ),
    ],
)
def test_k_composition_mistakes(wrong, message, capsys):
    wrong_answer(M.check_k_composition, wrong, message, capsys)


def test_k_composition_solution_by_hand():
    # W_QK = w_q.T @ w_k = 2 I and W_OV = w_o @ w_v = diag(1, 0): ||2 diag(1, 0)|| = 2,
    # ||2 I|| = 2 sqrt(2), ||diag(1, 0)|| = 1, so the score is 1 / sqrt(2)
    eye = torch.eye(2)
    score = S.solution_k_composition(2 * eye, eye, torch.diag(torch.tensor([1.0, 0.0])), eye)
    torch.testing.assert_close(score, torch.tensor(2**-0.5))
