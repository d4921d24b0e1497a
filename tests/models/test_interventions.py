"""attention.models.interventions against the plain forward, hand computations and autograd.

No intervention is the plain forward; patching with a run's own activations changes nothing;
patching everything from the clean run gives the clean logits; the fast resume path equals the
whole forward with the same hook; rollout matches a 2-layer hand computation; the logit lens at
the last layer is the model's logits; gradient x input matches an analytic gradient and a finite
difference through SmolLM2; bad layers, heads and shapes are refused naming what was expected.
"""

from __future__ import annotations

import pytest
import torch

from attention.explore import one_thread
from attention.models import interventions as iv
from attention.models.cache import pretrained_model
from attention.models.pretrained.points import hook_name

PAIRS = iv.load_minimal_pairs()
TWO = [
    next(p for p in PAIRS if p.kind == "agreement"),
    next(p for p in PAIRS if p.kind == "name_copy"),
]


@pytest.fixture(autouse=True)
def _one_thread():
    with one_thread(), torch.no_grad():
        yield


@pytest.fixture
def smol():
    model, tok = pretrained_model("smollm2")
    return model, iv.encode_pairs(tok, TWO)


@pytest.fixture
def minilm():
    model, tok = pretrained_model("minilm")
    return model, iv.encode_pairs(tok, TWO, space=False)


def _mean_hidden(out):
    return out.hidden.mean((1, 2))  # (B,) a number that depends on every position


def test_no_intervention_and_own_activations_are_the_plain_forward(smol, minilm):
    model, b = smol
    plain = model(b.corrupted).logits
    assert torch.equal(iv.ablate_heads(model, b.corrupted, [], mode="zero").logits, plain)
    metric = iv.logit_diff_metric(b)
    own = iv.patch(model, b.corrupted, b.corrupted, metric, ["blocks.7.resid_post"])
    assert torch.equal(own, iv.answer_logit_diff(plain, b))
    enc, eb = minilm
    plain = enc(eb.corrupted, attention_mask=eb.real).hidden
    names = ["blocks.2.heads", "blocks.4.resid_pre"]
    own = iv.patch(enc, eb.corrupted, eb.corrupted, _mean_hidden, names, real=eb.real)
    assert torch.equal(own, _mean_hidden(enc(eb.corrupted, attention_mask=eb.real)))
    assert torch.equal(plain, enc(eb.corrupted, attention_mask=eb.real).hidden)


def test_patching_everything_from_clean_gives_the_clean_run(smol, minilm):
    model, b = smol
    metric = iv.logit_diff_metric(b)
    clean = iv.answer_logit_diff(model(b.clean).logits, b)
    patched = iv.patch(model, b.clean, b.corrupted, metric, ["blocks.0.resid_pre"])
    torch.testing.assert_close(patched, clean)
    last = hook_name(model.cfg.n_layers - 1, "resid_post")
    torch.testing.assert_close(iv.patch(model, b.clean, b.corrupted, metric, [last]), clean)
    assert (clean - iv.answer_logit_diff(model(b.corrupted).logits, b)).abs().min() > 1.0
    enc, eb = minilm
    got = iv.patch(enc, eb.clean, eb.corrupted, _mean_hidden, ["blocks.0.resid_pre"], real=eb.real)
    torch.testing.assert_close(got, _mean_hidden(enc(eb.clean, attention_mask=eb.real)))


def test_fast_patching_equals_the_whole_forward_with_the_same_hook(smol):
    model, b = smol
    runs = iv.prepare_patching(model, b)
    metric = iv.logit_diff_metric(b)
    torch.testing.assert_close(runs.base.clean, iv.answer_logit_diff(model(b.clean).logits, b))
    layers = iv.patch_layers(model, runs, [3, 20])
    heads = iv.patch_heads(model, runs, [20])
    for row, layer in enumerate([3, 20]):
        full = iv.patch(model, b.clean, b.corrupted, metric, [hook_name(layer, "heads")])
        want = iv.normalise(full, runs.base.clean, runs.base.corrupted)
        torch.testing.assert_close(layers[row], want, atol=1e-4, rtol=1e-4)
    full = iv.patch(model, b.clean, b.corrupted, metric, ["blocks.20.heads"], heads=[4])
    want = iv.normalise(full, runs.base.clean, runs.base.corrupted)
    torch.testing.assert_close(heads[0, 4], want, atol=1e-4, rtol=1e-4)
    # patching the residual stream at every position one at a time: the changed position of a
    # pair at layer 0 restores all of it, every other position nothing
    pos = iv.patch_positions(model, runs, 0)
    changed = b.changed()
    torch.testing.assert_close(pos[changed], torch.ones(int(changed.sum())), atol=1e-4, rtol=0)
    torch.testing.assert_close(pos[~changed], torch.zeros(int((~changed).sum())), atol=1e-4, rtol=0)


def test_zero_and_mean_ablation(smol):
    model, b = smol
    zero = iv.ablate_heads(model, b.clean, [(5, 1), (5, 2)], mode="zero", need_weights=True)
    assert zero.layers[5].heads[:, [1, 2]].abs().max() == 0
    mean = iv.ablate_heads(model, b.clean, [(5, 1)], mode="mean", real=b.real, need_weights=True)
    heads = model(b.clean).layers[5].heads[:, 1]  # (B, T, D)
    w = b.real.float()[:, :, None]  # the mean over the real positions of both pairs
    want = (heads * w).sum((0, 1)) / w.sum((0, 1))
    torch.testing.assert_close(mean.layers[5].heads[:, 1], want.expand_as(heads))
    assert torch.equal(mean.layers[5].heads[:, 0], model(b.clean).layers[5].heads[:, 0])


def test_balanced_mean_ablation_averages_the_ids_it_is_given(smol):
    model, b = smol
    both, real = torch.cat([b.clean, b.corrupted]), torch.cat([b.real, b.real])  # (2B, T)
    out = iv.ablate_heads(
        model,
        b.clean,
        [(5, 1)],
        mode="mean",
        real=b.real,
        mean_ids=both,
        mean_real=real,
        need_weights=True,
    )
    heads = torch.cat([model(ids).layers[5].heads[:, 1] for ids in (b.clean, b.corrupted)])
    w = real.float()[:, :, None]  # (2B, T, 1) the real positions of clean and corrupted
    want = (heads * w).sum((0, 1)) / w.sum((0, 1))  # (D,)
    torch.testing.assert_close(out.layers[5].heads[:, 1], want.expand(len(b), *heads.shape[1:]))
    clean_only = iv.ablate_heads(model, b.clean, [(5, 1)], mode="mean", real=b.real)
    assert not torch.allclose(out.logits, clean_only.logits)  # the two means differ
    same = iv.ablate_heads(
        model, b.clean, [(5, 1)], mode="mean", real=b.real, mean_ids=b.clean, mean_real=b.real
    )
    assert torch.equal(same.logits, clean_only.logits)  # mean_ids = ids is the default


def test_rollout_against_a_hand_computation():
    w1 = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    w2 = torch.tensor([[1.0, 0.0], [0.2, 0.8]])
    # two heads that average to w1 and w2
    l1 = torch.stack(
        [w1 + torch.tensor([[0.0, 0.0], [0.1, -0.1]]), w1 - torch.tensor([[0.0, 0.0], [0.1, -0.1]])]
    )
    l2 = torch.stack([w2, w2])
    weights = [l1[None], l2[None]]  # 2 layers of (1, 2, 2, 2)
    # A = 0.5 W + 0.5 I: A1 = [[1, 0], [.25, .75]], A2 = [[1, 0], [.1, .9]]; A2 @ A1
    want = torch.tensor([[1.0, 0.0], [0.1 + 0.9 * 0.25, 0.9 * 0.75]])
    torch.testing.assert_close(iv.attention_rollout(weights)[0], want)
    torch.testing.assert_close(iv.attention_rollout(torch.stack(weights))[0], want)
    torch.testing.assert_close(iv.attention_rollout(weights, residual=False)[0], w2 @ w1)
    # rows of a rollout of real attention sum to 1
    model, tok = pretrained_model("minilm")
    out = model(torch.tensor([tok.encode("The trophy did not fit in the drawer.")]))
    roll = iv.attention_rollout(out.attentions)
    torch.testing.assert_close(roll.sum(-1), torch.ones(roll.shape[:-1]))


def test_logit_lens_last_layer_is_the_models_logits(smol, minilm):
    model, b = smol
    out = model(b.clean)
    lens = iv.logit_lens(model, out.hidden_states)
    assert lens.shape == (model.cfg.n_layers + 1, *out.logits.shape)
    torch.testing.assert_close(lens[-1], out.logits, atol=0, rtol=0)
    with pytest.raises(ValueError, match=r"expected 31 tensors, got 30"):
        iv.logit_lens(model, out.hidden_states[1:])
    enc, eb = minilm
    with pytest.raises(ValueError, match="expected a model with an output layer"):
        iv.logit_lens(enc, enc(eb.clean).hidden_states)


def test_gradient_x_input_against_autograd_and_a_finite_difference(smol):
    c = torch.tensor([1.0, -2.0, 0.5])
    x = torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(0))
    got = iv.gradient_x_input(lambda x: (c * x**2).sum((1, 2)), x)
    torch.testing.assert_close(got, (2 * c * x * x).sum(-1))  # d/dx c x^2 = 2 c x
    # through SmolLM2: gxi at position p is the derivative of the metric along x_p itself
    model, b = smol
    metric = iv.logit_diff_metric(b)
    gxi = iv.model_gradient_x_input(model, b.clean, metric)
    x = model(b.clean, need_weights=False).hidden_states[0]
    p, eps = 1, 1e-2

    def scaled(s):
        y = x.clone()
        y[:, p] *= s
        return metric(model(b.clean, hooks={"blocks.0.resid_pre": lambda _: y}))

    fd = (scaled(1 + eps) - scaled(1 - eps)) / (2 * eps)
    torch.testing.assert_close(gxi[:, p], fd, rtol=0.05, atol=0.05)


def test_occlusion_is_the_drop_when_a_token_is_blanked(smol):
    model, b = smol
    metric = iv.logit_diff_metric(b)
    occ = iv.occlusion(model, b.clean, metric, blank_id=0, real=b.real)
    ids = b.clean.clone()
    ids[:, 1] = 0
    want = metric(model(b.clean)) - metric(model(ids))
    torch.testing.assert_close(occ[:, 1], want)
    assert (occ[~b.real] == 0).all()


def test_spearman_and_bootstrap():
    a = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert iv.spearman(a, a**3) == pytest.approx(1.0)
    assert iv.spearman(a, -a) == pytest.approx(-1.0)
    assert iv.spearman(torch.tensor([1.0, 2.0, 2.0, 3.0]), a) == pytest.approx(0.9486833)
    lo, hi = iv.bootstrap_ci(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert 1.0 < lo < 3.0 < hi < 5.0


def test_bad_input_is_refused_naming_what_was_expected(smol):
    model, b = smol
    runs = iv.prepare_patching(model, b)
    with pytest.raises(ValueError, match=r"layer: expected an integer in \[0, 30\), got 30"):
        iv.patch_layers(model, runs, [30])
    with pytest.raises(ValueError, match=r"head: expected an integer in \[0, 9\), got 9"):
        iv.ablate_heads(model, b.clean, [(0, 9)])
    with pytest.raises(ValueError, match="mode: expected 'zero' or 'mean', got 'one'"):
        iv.ablate_heads(model, b.clean, [(0, 1)], mode="one")
    with pytest.raises(ValueError, match="only mode='mean' takes a mean, got mode='zero'"):
        iv.ablate_heads(model, b.clean, [(0, 1)], mode="zero", mean_ids=b.corrupted)
    with pytest.raises(
        ValueError, match=r"mean_real: expected the shape of mean_ids \(2, 14\), got \(1, 14\)"
    ):
        iv.ablate_heads(
            model, b.clean, [(0, 1)], mode="mean", mean_ids=b.clean, mean_real=b.real[:1]
        )
    with pytest.raises(ValueError, match="mean_real: expected it with mean_ids"):
        iv.ablate_heads(model, b.clean, [(0, 1)], mode="mean", mean_real=b.real)
    with pytest.raises(ValueError, match="unknown hook point 'blocks.3.attn'"):
        iv.patch(model, b.clean, b.corrupted, iv.logit_diff_metric(b), ["blocks.3.attn"])
    with pytest.raises(ValueError, match=r"heads: only a 'blocks.<layer>.heads' point has heads, "):
        iv.patch(model, b.clean, b.corrupted, iv.logit_diff_metric(b), ["blocks.3.ffn"], heads=[0])
    with pytest.raises(ValueError, match=r"expected \(B, H, T, T\) like weights\[0\]"):
        iv.attention_rollout([torch.ones(1, 2, 3, 3), torch.ones(1, 2, 4, 4)])
    with pytest.raises(ValueError, match=r"logits: expected \(B, T, V\) with \(B, T\) = \(2, "):
        iv.answer_logit_diff(torch.zeros(3, 4, 5), b)
    _, tok = pretrained_model("smollm2")
    bad = iv.MinimalPair("agreement", "The keys", "The key to", "are", "is")
    with pytest.raises(ValueError, match="expected the same number of tokens, got 2 and 3"):
        iv.encode_pairs(tok, [bad])
    bad = iv.MinimalPair("agreement", "The keys", "The key", "suitcase", "is")
    with pytest.raises(ValueError, match=r"answer 'suitcase': expected one token, got 2"):
        iv.encode_pairs(tok, [bad])
