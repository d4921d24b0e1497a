"""What lessons 12 and 15 measure on SmolLM2: the first token's share by query distance
(attention.experiments.sinks) and sampling with temperature and top-k
(attention.experiments.sampling),
each against the model's own full maps or the model package's generate."""

import math
from pathlib import Path

import pytest
import torch

from attention.experiments.sampling import sample_continuations, sampling_probs
from attention.experiments.sinks import SINK_BANDS, first_token_by_distance
from attention.models import load_pretrained
from attention.models.pretrained import generate, sample_next, token_losses

STORY = Path(__file__).resolve().parents[2] / "lessons" / "data" / "lighthouse.txt"
PROMPT = "The keeper climbed the hundred and twelve steps of the lighthouse, lit the lamp and"


# one torch thread for this module (tests/conftest.py says why)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def smol():
    return load_pretrained("smollm2")


@pytest.fixture(scope="module")
def story_ids(smol):
    return smol[1].encode(STORY.read_text(encoding="utf-8"))


def test_band_shares_are_the_full_maps_first_column(smol, story_ids):
    model, _ = smol
    ids = torch.tensor([story_ids[:100]])
    got = first_token_by_distance(model, ids, ((8, 40), (40, 1000)))
    out = model(ids)
    maps = torch.stack(out.attentions)[:, 0]  # (L, H, T, T)
    want = torch.stack([maps[..., 8:40, 0].mean(-1), maps[..., 40:100, 0].mean(-1)], -1)
    assert got.bands == ((8, 40), (40, 100))  # the last band is cut to the text
    torch.testing.assert_close(got.share, want, atol=1e-6, rtol=0)
    torch.testing.assert_close(got.losses, token_losses(out.logits, ids)[0])
    torch.testing.assert_close(got.layer_share, want.mean(1))


def test_deep_layers_keep_the_first_token_early_layers_let_it_go(smol, story_ids):
    """On 512 tokens of the story: layers 12-29 are sinks, 3-9 a pull that fades."""
    model, _ = smol
    r = first_token_by_distance(model, torch.tensor([story_ids[:512]]), SINK_BANDS)
    assert r.bands[-1] == (256, 512)
    assert r.sink_layers == tuple(range(12, 30))
    assert r.fading_layers == tuple(range(3, 10))
    share = r.layer_share
    assert bool((share[3:10, 0] > 2 * share[3:10, -1]).all())  # fades by more than half
    assert bool((share[12:, -1] > 0.5 * share[12:, 0]).all())  # keeps at least half
    assert float(share[[0, 1, 11]].max()) < 0.05  # no pull at all


@pytest.mark.parametrize(
    ("bands", "message"),
    [
        ((), "expected at least one"),
        (((0, 8),), "1 <= start < stop"),
        (((8, 8),), "1 <= start < stop"),
        (((8, 64), (32, 128)), "not overlapping"),
        (((8, 64), (64, 256), (256, 1024)), "the last band starts at query 256 but the text has"),
    ],
)
def test_bad_bands_are_refused(smol, story_ids, bands, message):
    with pytest.raises(ValueError, match=message):
        first_token_by_distance(smol[0], torch.tensor([story_ids[:40]]), bands)


def test_ids_must_be_one_sequence(smol, story_ids):
    with pytest.raises(ValueError, match=r"ids: expected shape \(1, T\), got \(2, 40\)"):
        first_token_by_distance(smol[0], torch.tensor([story_ids[:40]] * 2), ((8, 20),))


def test_sampling_probs_is_what_sample_next_draws_from():
    logits = torch.randn(4, 50, generator=torch.Generator().manual_seed(0)) * 3
    for t, k in ((0.5, 5), (1.0, None), (2.0, 1)):
        probs = sampling_probs(logits, t, k)
        torch.testing.assert_close(probs.sum(-1), torch.ones(4))
        if k is not None:
            assert bool(((probs > 0).sum(-1) == k).all())
        g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
        drawn = torch.multinomial(probs, 1, generator=g1).squeeze(-1)
        assert torch.equal(drawn, sample_next(logits, temperature=t, top_k=k, generator=g2))
    greedy = sampling_probs(logits, 0.0)
    assert torch.equal(greedy.argmax(-1), logits.argmax(-1)) and bool((greedy.sum(-1) == 1).all())
    with pytest.raises(ValueError, match="temperature: expected a number >= 0"):
        sampling_probs(logits, -1.0)
    with pytest.raises(ValueError, match="top_k"):
        sampling_probs(logits, 1.0, 51)


def test_one_sample_is_generate_with_the_same_seed(smol):
    model, tok = smol
    run = sample_continuations(
        model, tok, PROMPT, temperature=1.0, top_k=20, n=1, new_tokens=8, seed=5
    )
    want = generate(model, tok, PROMPT, max_new_tokens=8, temperature=1.0, top_k=20, seed=5)
    assert run.ids[0].tolist() == want.new_ids
    assert run.texts == (want.text,)


def test_greedy_has_no_spread_and_top_k_bounds_the_entropy(smol):
    model, tok = smol
    greedy = sample_continuations(model, tok, PROMPT, temperature=0.0, n=3, new_tokens=6)
    assert greedy.name == "greedy" and greedy.entropy == 0.0 and greedy.distinct == 1
    row = greedy.ids[0].tolist()
    assert greedy.distinct_2 == pytest.approx(len(set(zip(row, row[1:], strict=False))) / 15)
    hot = sample_continuations(model, tok, PROMPT, temperature=1.5, top_k=5, n=3, new_tokens=6)
    assert hot.name == "temperature 1.5, top-k 5"
    assert 0 < hot.entropy <= math.log(5) and hot.distinct == 3
    again = sample_continuations(model, tok, PROMPT, temperature=1.5, top_k=5, n=3, new_tokens=6)
    assert torch.equal(again.ids, hot.ids)  # seeded


def test_sampling_arguments_are_checked(smol):
    model, tok = smol
    with pytest.raises(ValueError, match="n: expected"):
        sample_continuations(model, tok, PROMPT, temperature=1.0, n=0)
    with pytest.raises(ValueError, match="prompt: expected at least one token"):
        sample_continuations(model, tok, "", temperature=1.0)


def test_a_window_run_names_one_sink_in_the_singular(smol, story_ids):
    from attention.experiments.windows import window_run

    ids = torch.tensor([story_ids[:24]])
    assert window_run(smol[0], ids, 8, 1).name == "window 8 + 1 sink"
    assert window_run(smol[0], ids, 8, 4).name == "window 8 + 4 sinks"
