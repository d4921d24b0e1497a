"""Windows and sinks on a tiny randomly initialised SmolLM2 (no weight files): masked logits,
one-token windows, the model's mask and RoPE layout checked, window runs, first-token attention."""

import math

import pytest
import torch

from attention.experiments.windows import (
    first_token_attention,
    masked_logits,
    token_losses,
    window_experiment,
    window_run,
)
from attention.masks import causal_mask, sliding_window_mask
from tests.experiments.tiny import tiny_smollm2

# --- windows and sinks on a (tiny) SmolLM2 -----------------------------------------------------


def test_masked_logits_with_the_causal_mask_equal_the_models_forward():
    model = tiny_smollm2()
    ids = torch.randint(0, 48, (2, 9), generator=torch.Generator().manual_seed(0))
    causal = masked_logits(model, ids, causal_mask(9))  # given, not the model's default
    torch.testing.assert_close(causal, model(ids).logits, atol=1e-5, rtol=1e-5)
    wide = sliding_window_mask(9, 9)
    torch.testing.assert_close(
        masked_logits(model, ids, wide), model(ids).logits, atol=1e-5, rtol=1e-5
    )
    half = masked_logits(model, ids, rope_layout="half")
    assert not torch.allclose(half, model(ids).logits, atol=1e-3)


def test_a_window_of_one_token_is_the_model_on_each_token_alone():
    """With mask = each token sees only itself, position t's logits are those of the token
    read alone (RoPE turns q and k by the same angle, so the position cannot matter)."""
    model = tiny_smollm2()
    ids = torch.randint(0, 48, (1, 7), generator=torch.Generator().manual_seed(3))
    alone = torch.cat([model(ids[:, t : t + 1]).logits for t in range(7)], dim=1)  # (1, 7, V)
    got = model(ids, mask=sliding_window_mask(7, 1))
    torch.testing.assert_close(got.logits, alone, atol=1e-5, rtol=1e-5)
    assert torch.equal(got.attentions[0][0, 0], torch.eye(7))  # every weight on itself
    assert not torch.allclose(got.logits, model(ids).logits, atol=1e-3)


def test_the_models_mask_and_rope_layout_are_checked():
    model = tiny_smollm2()
    ids = torch.zeros(1, 5, dtype=torch.long)
    with pytest.raises(ValueError, match=r"does not broadcast to the scores' shape \(5, 5\)"):
        model(ids, mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="mask: expected torch.bool"):
        model(ids, mask=torch.ones(5, 5))
    with pytest.raises(ValueError, match="rope_layout: expected 'half' or 'interleaved'"):
        model(ids, rope_layout="halves")


def test_window_runs_and_token_losses():
    model = tiny_smollm2(1)
    ids = torch.randint(0, 48, (1, 24), generator=torch.Generator().manual_seed(1))
    logits = model(ids).logits
    losses = token_losses(logits, ids)
    want = -torch.log_softmax(logits[0, :-1], -1)[torch.arange(23), ids[0, 1:]]
    torch.testing.assert_close(losses[0], want)
    runs = window_experiment(model, ids, [4, 30], sinks=2, start=8)
    assert [r.name for r in runs] == [
        "full",
        "window 4",
        "window 4 + 2 sinks",
        "window 30",
        "window 30 + 2 sinks",
    ]
    full = runs[0]
    assert full.perplexity == pytest.approx(math.exp(float(want[8:].mean())), rel=1e-5)
    assert runs[3].perplexity == pytest.approx(full.perplexity, rel=1e-5)  # window >= T: full
    assert runs[1].perplexity != pytest.approx(full.perplexity, rel=1e-3)
    # a window only changes tokens that have more than `window` tokens before them
    torch.testing.assert_close(runs[1].losses[:3], full.losses[:3], atol=1e-5, rtol=1e-5)
    one = window_run(model, ids, 4, 2)
    assert one.perplexity == pytest.approx(math.exp(float(one.losses.mean())))


def test_first_token_attention_per_layer():
    model = tiny_smollm2()
    ids = torch.randint(0, 48, (1, 12), generator=torch.Generator().manual_seed(2))
    maps = model(ids).attentions
    share = first_token_attention(maps, skip=4)
    assert share.shape == (2,)
    assert float(share[1]) == pytest.approx(float(maps[1][0, :, 4:, 0].mean()))
