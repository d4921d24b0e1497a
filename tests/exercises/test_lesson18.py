"""The checkers of lesson 18 name typical mistakes (what all checkers do: test_kit.py)."""

from __future__ import annotations

import pytest
import torch

import attention.exercises as E
from attention.exercises import lesson18 as M
from attention.exercises.solutions import lesson18 as S
from attention.models.interventions import attention_rollout
from tests.exercises.checker_answers import run, wrong_answer

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # many tiny forwards (the hook checks)


def test_the_solution_is_the_packaged_rollout():
    w = torch.softmax(torch.randn(4, 3, 6, 6, generator=torch.Generator().manual_seed(1)), -1)
    torch.testing.assert_close(S.solution_rollout(w), attention_rollout(w[:, None])[0])


def _chain(weights, step, order="left"):
    out = torch.eye(weights.shape[-1])
    for layer in weights:
        a = step(layer)
        out = a @ out if order == "left" else out @ a
    return out


def _half(layer):
    a = 0.5 * layer.mean(0) + 0.5 * torch.eye(layer.shape[-1])
    return a / a.sum(-1, keepdim=True)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda w: _chain(w, lambda x: x.mean(0)), "you left out the identity term"),
        (
            lambda w: _chain(w, lambda x: x.mean(0) + torch.eye(x.shape[-1])),
            "you added the identity without renormalising",
        ),
        (lambda w: _chain(w, _half, order="right"), "you multiplied in the wrong order"),
        (
            lambda w: _chain(w, lambda x: _half(x.amax(0)[None])),
            "you took the largest weight over the heads",
        ),
        (lambda w: _chain(w, _half)[:, :-1], "shape"),
        (lambda w: _chain(w, _half) * 1.1, "wrong value"),
    ],
)
def test_rollout_mistakes(wrong, message, capsys):
    wrong_answer(E.check_rollout, wrong, message, capsys)


def _d(x, a, b):
    return x[a] - x[b]


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (
            lambda c, k, p, a, b: (_d(c, a, b) - _d(p, a, b)) / (_d(c, a, b) - _d(k, a, b)),
            "you measured the wrong direction",
        ),
        (lambda c, k, p, a, b: _d(p, a, b) - _d(k, a, b), "you did not normalise"),
        (
            lambda c, k, p, a, b: (p[a] - k[a]) / (c[a] - k[a]),
            "you used the answer's logit alone",
        ),
        (
            lambda c, k, p, a, b: (
                (p.softmax(-1)[a] - k.softmax(-1)[a]) / (c.softmax(-1)[a] - k.softmax(-1)[a])
            ),
            "you used probabilities",
        ),
        (lambda c, k, p, a, b: torch.zeros(2), "expected one number"),
    ],
)
def test_patching_effect_mistakes(wrong, message, capsys):
    wrong_answer(E.check_patching_effect, wrong, message, capsys)


def test_patching_effect_accepts_a_float(capsys):
    def as_float(c, k, p, a, b):
        return float(S.solution_patching_effect(c, k, p, a, b))

    ok, out = run(E.check_patching_effect, as_float, capsys)
    assert ok, out


def _occlusion_piling_up(score, ids, blank):
    full = score(ids[None])[0]
    x = ids.clone()
    out = []
    for pos in range(len(ids)):
        x[pos] = blank  # never restored
        out.append(full - score(x[None])[0])
    return torch.stack(out)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda s, i, b: -S.solution_occlusion(s, i, b), "the sign is flipped"),
        (_occlusion_piling_up, "your blanks pile up"),
        (
            lambda s, i, b: s(i[None])[0] - S.solution_occlusion(s, i, b),
            "you returned the score without each token",
        ),
        (lambda s, i, b: S.solution_occlusion(s, i, b)[:-1], "shape"),
    ],
)
def test_occlusion_mistakes(wrong, message, capsys):
    wrong_answer(E.check_occlusion, wrong, message, capsys)


def test_a_stub_is_not_attempted(capsys):
    def my_rollout(weights):
        raise NotImplementedError

    ok, out = run(E.check_rollout, my_rollout, capsys)
    assert not ok and "Not attempted yet" in out


# --- the hook exercises: each named mistake is named --------------------------------------------


def _point(layer):
    return f"blocks.{layer}.heads"


def _reader(pick, *, point=_point, edit=False, give_back=False):
    """A my_read_head that keeps pick(x, head) at point(layer); edit: it also zeroes x in place;
    give_back: its hook returns what it kept."""

    def my_read_head(model, ids, layer, head):
        seen = {}

        def keep(x):
            seen["x"] = pick(x, head).clone()
            if edit:
                x.zero_()
            return seen["x"] if give_back else None

        model(ids, hooks={point(layer): keep})
        return seen["x"]

    return my_read_head


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_reader(lambda x, h: x), "you returned every head's output"),
        (_reader(lambda x, h: x[h]), "you indexed the batch"),
        (_reader(lambda x, h: x[:, :, h]), "you indexed the positions"),
        (_reader(lambda x, h: x[:, (h + 1) % x.shape[1]]), "you read the next head"),
        (_reader(lambda x, h: x[:, h], give_back=True), "your hook returned a tensor"),
        (_reader(lambda x, h: x[:, h], edit=True), "your hook changed the tensor it was given"),
        (
            _reader(lambda x, h: x[:, h], point=lambda layer: _point(layer + 1)),
            "(layers count from 0)",
        ),
        (
            _reader(lambda x, h: x[:, h], point=lambda layer: f"blocks.{layer}.resid_post"),
            "your hooks ran at ['blocks.1.resid_post']",
        ),
        (lambda m, ids, layer, h: m(ids).layers[layer].heads[:, h], "you attached no hook"),
        (lambda m, ids, layer, h: torch.zeros(2, 7, 6), "you never ran the model"),
        (
            lambda m, ids, layer, h: m(ids, hooks={_point(layer): lambda x: None}) and None,
            "returned None",
        ),
    ],
)
def test_read_head_mistakes(wrong, message, capsys):
    wrong_answer(M.check_read_head, wrong, message, capsys)


def _patcher(*, where=None, source_run="clean", target_run="corrupted", copy=True, give_back=True):
    """A my_patch_head with one slip: where(head, pos) -> the index patched, the run the value
    comes from and the run patched, an edit in place (copy=False), no return (give_back=False)."""
    where = where or (lambda h, p: (slice(None), h, p))

    def my_patch_head(model, clean, corrupted, layer, head, pos):
        ids = {"clean": clean, "corrupted": corrupted}
        source = {}

        def keep(x):
            source["x"] = x.clone()

        def restore(x):
            if copy:
                x = x.clone()
            idx = where(head, pos)
            x[idx] = source["x"][idx]
            return x if give_back else None

        model(ids[source_run], hooks={_point(layer): keep})
        return model(ids[target_run], hooks={_point(layer): restore}).logits

    return my_patch_head


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (
            _patcher(source_run="corrupted", target_run="clean"),
            "you patched from the wrong run",
        ),
        (
            lambda m, c, k, layer, h, p: m(c, hooks={_point(layer): lambda x: None}).logits,
            "you returned the clean run's logits",
        ),
        (_patcher(give_back=False), "the hook on the corrupted run returned None"),
        (_patcher(copy=False, give_back=False), "in place and returned nothing"),
        (_patcher(source_run="corrupted"), "you never ran the clean prefix"),
        (_patcher(where=lambda h, p: (slice(None), h)), "you patched every position"),
        (
            _patcher(where=lambda h, p: (slice(None), slice(None), p)),
            "you patched every head at that position",
        ),
        (_patcher(where=lambda h, p: (slice(None), h, p - 1)), "one before pos = 4"),
        (_patcher(where=lambda h, p: (slice(None), h, p + 1)), "one after pos = 4"),
        (
            lambda m, c, k, layer, h, p: (
                m(k, hooks={f"blocks.{layer}.resid_pre": lambda x: None}).logits
            ),
            "your hooks ran at ['blocks.1.resid_pre']",
        ),
    ],
)
def test_patch_head_mistakes(wrong, message, capsys):
    wrong_answer(M.check_patch_head, wrong, message, capsys)


def test_patch_head_edited_in_place_and_returned_is_accepted(capsys):
    ok, out = run(M.check_patch_head, _patcher(copy=False), capsys)
    assert ok, out


def _ablator(mean_of, *, runs=("clean", "corrupted"), give_back=True, copy=True):
    """A my_mean_ablate whose hook sets x[:, head] (or x) to mean_of(cached outputs, x, head)."""

    def my_mean_ablate(model, clean, corrupted, layer, head):
        ids = {"clean": clean, "corrupted": corrupted}
        seen = []

        def keep(x):
            seen.append(x.clone())

        for r in runs:
            model(ids[r], hooks={_point(layer): keep})
        outs = torch.cat(seen)  # (N, H, T, D)

        def ablate(x):
            if copy:
                x = x.clone()
            index, value = mean_of(outs, x, head)
            x[index] = value
            return x if give_back else None

        return model(clean, hooks={_point(layer): ablate}).logits

    return my_mean_ablate


def _balanced(outs, x, head):
    return (slice(None), head), outs[:, head].mean((0, 1))


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (_ablator(_balanced, runs=("clean",)), "your mean is over the clean run alone"),
        (_ablator(_balanced, runs=("corrupted",)), "your mean is over the corrupted run alone"),
        (_ablator(lambda o, x, h: ((slice(None), h), 0.0)), "you zeroed the head"),
        (
            _ablator(lambda o, x, h: ((slice(None), h), o[:, h].mean(0))),
            "you kept one mean per position",
        ),
        (_ablator(lambda o, x, h: ((slice(None), h), x.mean(1))), "you averaged over the heads"),
        (
            _ablator(lambda o, x, h: (slice(None), o.mean((0, 2))[None, :, None])),
            "you ablated every head of the layer",
        ),
        (_ablator(_balanced, give_back=False), "the hook on the clean run returned None"),
        (_ablator(_balanced, give_back=False, copy=False), "in place and returned nothing"),
        (lambda m, c, k, layer, h: m(c).logits, "you attached no hook"),
    ],
)
def test_mean_ablate_mistakes(wrong, message, capsys):
    wrong_answer(M.check_mean_ablate, wrong, message, capsys)


def test_the_balanced_mean_is_the_packaged_ablation():
    """The solution's mean is iv.ablate_heads's mean with mean_ids = clean and corrupted."""
    from attention.models.interventions import ablate_heads

    model = M._tiny_model()
    clean, corrupted = M._pair_ids()
    both = torch.cat([clean, corrupted])
    want = ablate_heads(model, clean, [(1, 2)], mode="mean", mean_ids=both).logits
    torch.testing.assert_close(S.solution_mean_ablate(model, clean, corrupted, 1, 2), want)
    torch.testing.assert_close(
        S.solution_patch_head(model, clean, corrupted, 0, 3, 6)[:, :6],
        model(corrupted).logits[:, :6],
    )  # a patch at the last position cannot reach earlier positions of a causal model
