"""The query-key space (attention.explore.qk_space) and its explorer, QueryKeyExplorer.

References: q and k recomputed from each block's own weights and the residual stream read by a
hook in a fresh forward pass; the model's attention weights from that forward; torch.pca_lowrank
and an SVD by hand for the projection. The widget is checked headless: move a control, then
compare what the scatter view holds with the pure function's result.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attention.explore import (
    DEFAULT_TEXTS,
    QK_MAX_TOKENS,
    QKSpaceParams,
    explore_qk_space,
)
from attention.explore.qk_space import attention_weights, normalise, pca_2d
from attention.masks import causal_mask
from attention.models.cache import pretrained_model
from attention.multihead import split_heads
from attention.positional import apply_rope
from widgets.explorers.qk_space import QueryKeyExplorer, point_label

SMOL = DEFAULT_TEXTS["smollm2"]
MINI = DEFAULT_TEXTS["minilm"]


# one torch thread for this module (tests/conftest.py says why)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def fresh_runs():
    """Per model: the residual stream entering each block (hooked) and the attention weights,
    from a forward pass of its own, not the cached maps the explorer reads."""
    runs = {}
    with torch.no_grad():
        for name in ("minilm", "smollm2"):
            model, tok = pretrained_model(name)
            ids = torch.tensor([tok.encode(DEFAULT_TEXTS[name])])
            seen: dict[int, torch.Tensor] = {}
            hooks = {
                f"blocks.{i}.resid_pre": (lambda x, i=i, seen=seen: seen.__setitem__(i, x))
                for i in range(model.cfg.n_layers)
            }
            out = model(ids, hooks=hooks)
            runs[name] = (seen, [a[0] for a in out.attentions])
    return runs


def block_qk(name: str, resid: torch.Tensor, layer: int, head: int, before_rope: bool):
    """(q, k), each (T, D), of one head recomputed from the block's weights."""
    model = pretrained_model(name)[0]
    block = model.layers[layer]
    x = block.attn_norm(resid) if name == "smollm2" else resid  # SmolLM2 is pre-norm
    q = split_heads(block.attn.q_proj(x), model.cfg.n_heads)[0]  # (H, T, D)
    k = split_heads(block.attn.k_proj(x), block.attn.n_kv_heads)[0]  # (Hkv, T, D)
    kv = head // (model.cfg.n_heads // block.attn.n_kv_heads)
    q, k = q[head], k[kv]
    if name == "smollm2" and not before_rope:
        rope = {"positions": torch.arange(q.shape[0]), "base": model.cfg.rope_base}
        q, k = (apply_rope(y, **rope, layout="interleaved") for y in (q, k))
    return q, k


# --- q and k: the model's own, and its weights from them -----------------------------------


@pytest.mark.parametrize(
    ("name", "layer", "head", "before"),
    [
        ("minilm", 0, 0, False),
        ("minilm", 4, 11, False),
        ("smollm2", 0, 0, False),
        ("smollm2", 12, 5, False),
        ("smollm2", 29, 8, False),
        ("smollm2", 12, 5, True),
        ("smollm2", 3, 1, True),
    ],
)
@torch.no_grad()
def test_q_and_k_are_the_blocks_and_make_the_models_weights(fresh_runs, name, layer, head, before):
    text = DEFAULT_TEXTS[name]
    r = explore_qk_space(QKSpaceParams(name, text, layer, head, before_rope=before))
    resid, attentions = fresh_runs[name]
    q, k = block_qk(name, resid[layer], layer, head, before)
    torch.testing.assert_close(r.q, q, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(r.k, k, atol=1e-4, rtol=1e-4)
    model_weights = attentions[layer][head]  # (T, T) of the fresh forward
    torch.testing.assert_close(r.weights, model_weights, atol=1e-6, rtol=1e-5)
    if before:  # the rotated ones make the scores; the unrotated ones do not
        q_rot, k_rot = block_qk(name, resid[layer], layer, head, False)
        torch.testing.assert_close(attention_weights(q_rot, k_rot, True), model_weights,
                                   atol=1e-5, rtol=1e-4)  # fmt: skip
        assert not torch.allclose(attention_weights(r.q, r.k, True), model_weights, atol=1e-3)
    else:
        torch.testing.assert_close(attention_weights(r.q, r.k, r.causal), model_weights,
                                   atol=1e-5, rtol=1e-4)  # fmt: skip
    assert r.causal == r.rotary == (name == "smollm2")
    assert r.kv_head == (head // 3 if name == "smollm2" else head)
    assert r.n_kv_heads == (3 if name == "smollm2" else 12)
    assert r.tokens == tuple(
        pretrained_model(name)[1].tokens(pretrained_model(name)[1].encode(text))
    )


# --- the normalisation keeps each query's scores up to a constant ----------------------------


@pytest.mark.parametrize(("name", "layer", "head"), [("minilm", 2, 3), ("smollm2", 7, 4)])
def test_normalisation_keeps_each_querys_ranking_and_weights(name, layer, head):
    r = explore_qk_space(QKSpaceParams(name, DEFAULT_TEXTS[name], layer, head))
    n = r.normalised
    scores, scores2 = r.q.double() @ r.k.double().T, n.q.double() @ n.k.double().T  # (T, T)
    offset = scores2 - scores  # the same for every key of a query: c (q . v)
    torch.testing.assert_close(offset, offset[:, :1].expand_as(offset), atol=1e-3, rtol=1e-4)
    expected = n.scale * (r.q.double() @ n.shift.double())  # (T,)
    torch.testing.assert_close(offset[:, 0], expected, atol=1e-3, rtol=1e-4)
    visible = causal_mask(len(r.tokens)) if r.causal else torch.ones_like(scores, dtype=torch.bool)
    for i in range(len(r.tokens)):  # each query ranks its visible keys the same way
        keys = visible[i].nonzero()[:, 0]
        a, b = scores[i, keys], scores2[i, keys]
        da, db = a[:, None] - a[None], b[:, None] - b[None]  # every pair of keys
        clear = da.abs() > 1e-3  # pairs that are not ties in float arithmetic
        assert torch.equal(da[clear].sign(), db[clear].sign()), i
        assert torch.equal(a.argmax(), b.argmax())
    torch.testing.assert_close(attention_weights(n.q, n.k, r.causal), r.weights,
                               atol=1e-5, rtol=1e-4)  # fmt: skip
    # the two things it sets: equal mean norms after the scaling, equal means after the shift
    q_norm = n.q.norm(dim=-1).mean()
    k_norm = (n.k - n.shift).norm(dim=-1).mean()
    assert float(q_norm) == pytest.approx(float(k_norm), rel=1e-5)
    torch.testing.assert_close(n.q.mean(0), n.k.mean(0), atol=1e-5, rtol=1e-5)
    assert n.scale == pytest.approx(math.sqrt(r.k.norm(dim=-1).mean() / r.q.norm(dim=-1).mean()))


def test_normalisation_does_not_keep_dot_products_between_two_keys():
    """What it does not claim: keys among themselves (and distances) change."""
    r = explore_qk_space(QKSpaceParams("smollm2", SMOL, 7, 4))
    kk, kk2 = r.k @ r.k.T, r.normalised.k @ r.normalised.k.T
    assert not torch.allclose(kk, kk2, rtol=0.05)


def test_normalise_refuses_zero_vectors():
    with pytest.raises(ValueError, match="expected non-zero vectors"):
        normalise(torch.zeros(3, 4), torch.ones(3, 4))


# --- the projection ---------------------------------------------------------------------------


def test_pca_matches_an_svd_by_hand_and_torch_pca_lowrank():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(40, 16, generator=g) @ torch.randn(16, 16, generator=g) + 3.0  # (N, D)
    points, directions, shares = pca_2d(x)
    centred = (x - x.mean(0)).double()
    cov = centred.T @ centred / (x.shape[0] - 1)  # (D, D)
    evals, evecs = torch.linalg.eigh(cov)  # ascending
    for c in range(2):
        ref = evecs[:, -1 - c]
        assert abs(float(ref @ directions[:, c].double())) == pytest.approx(1.0, abs=1e-5)
        assert shares[c] == pytest.approx(float(evals[-1 - c] / evals.sum()), rel=1e-6)
    torch.testing.assert_close(directions.T @ directions, torch.eye(2), atol=1e-6, rtol=0)
    torch.testing.assert_close(points.double(), centred @ directions.double(), atol=1e-4, rtol=0)
    torch.manual_seed(0)
    _, _, v = torch.pca_lowrank(x, q=4, center=True, niter=6)  # (D, 4)
    for c in range(2):  # the same axes up to a sign
        assert abs(float(v[:, c] @ directions[:, c])) == pytest.approx(1.0, abs=1e-4)
    # the sign rule: each direction's largest entry is positive, so the picture is reproducible
    for c in range(2):
        assert directions[directions[:, c].abs().argmax(), c] > 0
    again, _, _ = pca_2d(x.flip(0))
    torch.testing.assert_close(again.flip(0), points, atol=1e-4, rtol=0)


def test_the_points_are_the_projected_normalised_queries_then_keys():
    r = explore_qk_space(QKSpaceParams("smollm2", SMOL, 5, 2))
    t = len(r.tokens)
    both = torch.cat([r.normalised.q, r.normalised.k])  # (2T, D)
    torch.testing.assert_close(r.points, (both - both.mean(0)) @ r.components, atol=1e-4, rtol=0)
    assert r.queries.shape == r.keys.shape == (t, 2) and torch.isfinite(r.points).all()
    assert 0 < r.explained[1] <= r.explained[0] < 1


def test_nearest_agreement_counts_queries_whose_nearest_visible_key_is_their_top_key():
    r = explore_qk_space(QKSpaceParams("smollm2", SMOL, 2, 0))
    t = len(r.tokens)
    hits_plane = hits_full = 0
    for i in range(t):
        top = int(r.weights[i, : i + 1].argmax())
        plane = [float((r.queries[i] - r.keys[j]).norm()) for j in range(i + 1)]
        full = [float((r.normalised.q[i] - r.normalised.k[j]).norm()) for j in range(i + 1)]
        hits_plane += int(np.argmin(plane)) == top
        hits_full += int(np.argmin(full)) == top
    assert r.nearest_agrees == pytest.approx((hits_plane / t, hits_full / t))
    assert r.nearest_by_chance == pytest.approx(sum(1 / (i + 1) for i in range(t)) / t)
    mini = explore_qk_space(QKSpaceParams("minilm", MINI, 2, 0))
    assert mini.nearest_by_chance == pytest.approx(1 / len(mini.tokens))  # every key visible


def test_a_chosen_query_lists_its_strongest_keys():
    r = explore_qk_space(QKSpaceParams("minilm", MINI, 3, 1, query=7))
    values, keys = r.weights[7].sort(descending=True)
    assert [j for j, _, _ in r.top_keys] == keys[:5].tolist()
    assert [w for _, _, w in r.top_keys] == pytest.approx(values[:5].tolist())
    assert [tok for _, tok, _ in r.top_keys] == [r.tokens[j] for j in keys[:5].tolist()]
    assert explore_qk_space(QKSpaceParams("minilm", MINI, 3, 1)).top_keys == ()


# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        (
            {"model": "gpt2"},
            ValueError,
            r"model: expected one of \['minilm', 'smollm2'\], got 'gpt2'",
        ),
        ({"layer": 6}, ValueError, r"layer: expected an int in \[0, 5\], got 6"),
        ({"model": "smollm2", "text": SMOL, "layer": 30}, ValueError, r"\[0, 29\], got 30"),
        ({"head": -1}, ValueError, r"head: expected an int in \[0, 11\], got -1"),
        ({"layer": 1.0}, TypeError, "layer: expected an int, got float"),
        ({"text": ""}, ValueError, "text: expected at least one token, got an empty text"),
        ({"text": "   "}, ValueError, "expected at least one token"),
        (
            {"text": "word " * 80},
            ValueError,
            rf"text: expected at most {QK_MAX_TOKENS} tokens, got",
        ),
        ({"before_rope": True}, ValueError, "before_rope: expected False for 'minilm'"),
        ({"before_rope": 1}, TypeError, "before_rope: expected a bool, got int"),
        ({"query": 15}, ValueError, r"query: expected an int in \[-1, 14\], got 15"),
        ({"query": 64}, ValueError, r"query: expected an int in \[-1, 63\], got 64"),
    ],
)
def test_bad_settings_are_refused_naming_expected_and_given(settings, error, match):
    with pytest.raises(error, match=match):
        explore_qk_space(QKSpaceParams(**{"text": MINI, **settings}))


# --- the explorer --------------------------------------------------------------------------------


def test_moving_the_layer_slider_sends_the_new_heads_points():
    view = QueryKeyExplorer("smollm2", layer=3, head=1)
    before = view.space.points.copy()
    view.layer.value = 4
    assert view.error.message == "" and view.params.layer == 4
    r = explore_qk_space(QKSpaceParams("smollm2", SMOL, 4, 1))
    np.testing.assert_allclose(view.space.points, r.points.numpy(), atol=1e-6)
    assert not np.allclose(view.space.points, before)
    t = len(r.tokens)
    assert view.space.groups == [0] * t + [1] * t and view.space.sources == list(range(t))
    assert (
        view.space.labels[:t]
        == view.space.labels[t:]
        == [point_label(i, tok) for i, tok in enumerate(r.tokens)]
    )
    np.testing.assert_allclose(view.space.links[:, t:], r.weights.numpy(), atol=1e-7)
    assert not view.space.links[:, :t].any()  # no lines from a query to a query
    assert "layer 4, head 1, after RoPE" in view.space.title
    assert "layer 4, head 1, after RoPE (reads key head 0 of 3)" in view.readout.value


def test_rope_check_reprojects_and_is_hidden_for_minilm():
    view = QueryKeyExplorer("smollm2", layer=5, head=0)
    after = view.space.points.copy()
    view.before_rope.value = True
    assert view.error.message == "" and view.params.before_rope
    assert "before RoPE" in view.space.title and not np.allclose(view.space.points, after)
    assert "the weights are still the model&#x27;s" in view.readout.value
    view.model.value = "minilm"
    assert view.before_rope.layout.display == "none" and view.before_rope.value is False
    assert view.error.message == "" and view.params.text == MINI and view.params.layer == 5
    with pytest.raises(ValueError, match="before_rope: expected False for 'minilm'"):
        QueryKeyExplorer("minilm", before_rope=True)


def test_picking_a_query_lists_its_keys_and_a_new_text_drops_it():
    view = QueryKeyExplorer("minilm", layer=3, head=1)
    assert view.params.query == -1 and "click a query" in view.readout.value
    view.space.select(7)  # what a click on query 7 sends back
    assert view.params.query == 7 and view.result.top_keys
    j, tok, w = view.result.top_keys[0]
    assert f"key {point_label(j, tok)}" in view.readout.value and f"{w:.3f}" in view.readout.value
    view.text.value = "A short one."  # 6 tokens: query 7 is gone
    assert view.error.message == "" and view.params.query == -1 and view.space.selected == -1


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "text: expected at least one token, got an empty text"),
        ("word " * 80, f"text: expected at most {QK_MAX_TOKENS} tokens, got 82; shorten"),
    ],
)
def test_a_bad_text_shows_a_message_not_a_traceback(text, match):
    view = QueryKeyExplorer("minilm")
    good = view.space.points.copy()
    view.text.value = text
    assert match in view.error.message and "Traceback" not in view.error.message
    assert view.error.layout.display is None  # shown
    np.testing.assert_array_equal(view.space.points, good)  # the last good picture stays
    assert np.isfinite(view.space.points).all()
    view.text.value = "Back to a fine text."
    assert view.error.message == "" and view.error.layout.display == "none"


def test_the_explorer_refuses_bad_starting_settings():
    with pytest.raises(ValueError, match=r"layer: expected a value in \[0, 5\], got 9"):
        QueryKeyExplorer("minilm", layer=9)
    with pytest.raises(ValueError, match="model: expected one of"):
        QueryKeyExplorer("bert")


def test_every_head_of_a_layer_draws_finite_points():
    view = QueryKeyExplorer("smollm2", layer=0)
    for h in range(9):
        view.head.value = h
        assert view.error.message == "" and np.isfinite(view.space.points).all()
        assert np.isfinite(view.space.links).all()


def test_the_picture_and_export_show_the_picked_query(tmp_path, monkeypatch):
    from widgets.views import picture

    view = QueryKeyExplorer("smollm2", layer=3, head=1, query=10)
    paths = view.export(tmp_path)
    assert [p.name for p in paths] == ["query-key-explorer_space.png",
                                       "query-key-explorer_space.svg",
                                       "query-key-explorer_space.csv"]  # fmt: skip
    rows = paths[2].read_text().splitlines()
    t = len(view.result.tokens)
    assert len(rows) == 1 + 2 * t and rows[1 + t + 0].startswith(f"{t},key,0:It,")
    weight = float(rows[1 + t].split(",")[-1])  # key 0's weight from query 10
    assert weight == pytest.approx(float(view.result.weights[10, 0]), rel=1e-6)
    monkeypatch.setattr(picture, "_setting", True)
    data = view._repr_mimebundle_()
    data = data[0] if isinstance(data, tuple) else data
    assert "image/png" in data
    assert data["text/plain"].startswith("QueryKeyExplorer: 1 panel (queries and keys, layer 3")
