"""Lesson 18's explorers: the pure functions against attention.models.interventions, the
views against the pure functions after a control moves, bad settings refused with a message."""

from __future__ import annotations

import math
import time

import pytest
import torch

from attention.explore import one_thread
from attention.explore.interventions import (
    PatchingParams,
    RolloutParams,
    explore_patching,
    explore_rollout,
    make_patching_table,
)
from attention.models import interventions as iv
from attention.models.cache import pretrained_model
from tests.explorers.contract import check_contract
from widgets import PatchingExplorer, RolloutExplorer

TEXT = "The trophy did not fit in the drawer because it was too big."


@pytest.fixture(scope="module")
def table():
    model, tok = pretrained_model("smollm2")
    pairs = [p for p in iv.load_minimal_pairs() if p.kind == "agreement"][:3]
    with one_thread(), torch.no_grad():
        runs = iv.prepare_patching(model, iv.encode_pairs(tok, pairs))
        layers = (25, 26, 27)
        effect = iv.patch_layers(model, runs, layers)
        heads = iv.patch_heads(model, runs, [26])
        # the patched run's logit difference, to check the explorer's reconstruction of it
        hook = {"blocks.0.heads": lambda x: x}
        heads_26 = runs.clean_heads[26]

        def only(h):
            def f(x):
                x = x.clone()
                x[:, h] = heads_26[:, h]
                return x

            return f

        hook = {"blocks.0.heads": only(4)}
        patched = iv.resume_logit_diff(model, runs.batch, 26, runs.corrupted_resid[26], hook)
    return make_patching_table(runs, "agreement", layers, effect, (26,), heads), patched


def test_explore_patching_reads_the_table(table):
    t, patched = table
    r = explore_patching(PatchingParams(pair=1, layer=26, head=-1), t)
    assert r.pair == t.pairs[1] and r.effect == pytest.approx(float(t.layer_effect[1, 1]))
    assert r.layer_curve == pytest.approx(t.layer_effect[:, 1].tolist())
    assert r.head_bars == pytest.approx(t.head_effect[0, :, 1].tolist())
    r = explore_patching(PatchingParams(pair=2, layer=26, head=4), t)
    assert r.patched_ld == pytest.approx(float(patched[2]), abs=1e-4)  # corrupted + e * gap
    assert r.probability(r.clean_ld) == pytest.approx(1 / (1 + math.exp(-r.clean_ld)))
    r = explore_patching(PatchingParams(pair=0, layer=25, head=3), t)
    assert r.effect is None and r.head_bars is None and "only in layers 26" in r.note


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (PatchingParams(pair=3), r"pair: expected an index in \[0, 3\), got 3"),
        (PatchingParams(layer=2), "layer: expected one of the patched layers 25..27, got 2"),
        (PatchingParams(layer=26, head=9), r"head: expected -1 \(the whole layer\) or a head"),
    ],
)
def test_bad_patching_params_are_refused(table, params, message):
    with pytest.raises(ValueError, match=message):
        explore_patching(params, table[0])


def test_patching_explorer_redraws_from_the_table(table):
    t, _ = table
    ex = PatchingExplorer(table=t)
    check_contract(ex)
    assert list(ex.layer.options) == [25, 26, 27] and ex.pair.max == 2 and ex.layer.value == 26
    ex.pair.value, ex.head.value = 1, 4
    start = time.perf_counter()
    ex.head.value = 5
    elapsed = time.perf_counter() - start  # no model run: reading the table (not asserted)
    assert ex.error.message == ""
    assert ex.result == explore_patching(PatchingParams(pair=1, layer=26, head=5), t)
    assert ex.chart.series[0]["values"] == pytest.approx(t.layer_effect[:, 1].tolist())
    assert ex.heads.series[0]["values"] == pytest.approx(t.head_effect[0, :, 1].tolist())
    assert f"effect {ex.result.effect:.2f}" in ex.readout.value
    assert "P(are | are or is)" in ex.readout.value and "nan" not in ex.readout.value.lower()
    ex.layer.value = 25  # heads not patched there: a note, empty bars, no error
    assert ex.error.message == "" and "only in layers 26" in ex.readout.value
    assert all(v is None for v in ex.heads.series[0]["values"])
    print(f"a key press took {elapsed * 1000:.1f} ms")


def test_explore_rollout_against_the_models_weights():
    model, tok = pretrained_model("minilm")
    ids = torch.tensor([tok.encode(TEXT)])
    with torch.no_grad():
        out = model(ids)
    r = explore_rollout(RolloutParams("minilm", TEXT, layer=3, query=10))
    want = iv.attention_rollout(out.attentions[:4])[0, 10]
    torch.testing.assert_close(r.rollout, want)
    torch.testing.assert_close(r.raw, out.attentions[3][0].mean(0)[10])
    assert r.tokens[10] == "it" and r.n_layers == 6
    assert r.rollout.sum() == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (RolloutParams(model="bert"), r"model: expected one of \['minilm', 'smollm2'\]"),
        (RolloutParams(text="  "), "text: expected some words, got an empty text"),
        (RolloutParams(text="a" * 401), "text: expected at most 400 characters, got 401"),
        (RolloutParams(layer=6), r"layer: expected an integer in \[0, 6\), got 6"),
        (RolloutParams(query=16), r"query: expected a token index in \[0, 16\), got 16"),
    ],
)
def test_bad_rollout_params_are_refused(params, message):
    with pytest.raises(ValueError, match=message):
        explore_rollout(params)


def test_rollout_explorer_follows_its_controls():
    ex = RolloutExplorer(text=TEXT, layer=5, query=10)
    check_contract(ex)
    ex.layer.value = 2
    assert ex.error.message == ""
    want = explore_rollout(RolloutParams("minilm", TEXT, 2, ex.query.value))
    torch.testing.assert_close(
        torch.as_tensor(ex.map.values[0]), torch.stack([want.raw, want.rollout])
    )
    assert "rollout through layers 0..2" in ex.readout.value
    ex.text.value = "Alice gave Bob a book."
    assert ex.query.max == len(ex.result.tokens) - 1 and ex.error.message == ""
    ex.text.value = ""
    assert "text: expected some words" in ex.error.message
    ex.text.value = TEXT
    assert ex.error.message == "" and ex.query.max == 15
