"""Real trained models: the pure functions of attention.explore.model_view and the three views,
and lesson 12's measurements on the decoder (attention.experiments: induction, loss, chat).

The views are checked headless: set a control's value, then compare what each view holds
with the pure function's result for the same parameters. Errors go to `explorer.error`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention.experiments.chat import chat_answer
from attention.experiments.induction import induction_scores
from attention.experiments.loss import LossParams, text_loss
from attention.explore import (
    DEFAULT_TEXTS,
    MODEL_MAX_TOKENS,
    HeadViewParams,
    ModelViewParams,
    NeuronParams,
    encode_text,
    explore_head_view,
    explore_model_view,
    explore_neuron,
    model_maps,
    thumbnail_maps,
)
from attention.masks import causal_mask
from attention.models.cache import pretrained_model
from attention.models.head_scores import induction_score, previous_token_score, sink_share
from attention.multihead import split_heads
from attention.positional import apply_rope
from widgets.explorers.model_view import HeadView, ModelView, NeuronView
from widgets.views.style import css

TEXT = (Path(__file__).resolve().parents[2] / "lessons/data/pride_and_prejudice.txt").read_text()


# one torch thread for this module (tests/conftest.py says why)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def text_of(n_tokens: int) -> str:
    """A text of exactly n_tokens SmolLM2 tokens, cut from the shipped passage."""
    tok = pretrained_model("smollm2")[1]
    text = tok.decode(tok.encode(TEXT)[:n_tokens])
    assert len(tok.encode(text)) == n_tokens
    return text


# --- the maps and the numbers per head --------------------------------------------------------


def test_minilm_maps_are_cached_full_squares_with_rows_summing_to_one():
    maps = model_maps("minilm", DEFAULT_TEXTS["minilm"])
    assert maps is model_maps("minilm", DEFAULT_TEXTS["minilm"])  # one forward pass per text
    t = maps.seq_len
    assert maps.weights.shape == (6, 12, t, t) and not maps.causal
    assert maps.tokens[0] == "[CLS]" and maps.tokens[-1] == "[SEP]" and "it" in maps.tokens
    torch.testing.assert_close(maps.weights.sum(-1), torch.ones(6, 12, t))
    assert float(maps.weights.triu(1).sum()) > 1  # bidirectional: later tokens get weight
    assert len(maps.hidden_states) == 7 and maps.hidden_states[0].shape == (t, 384)


def test_smollm2_maps_are_causal():
    maps = model_maps("smollm2", DEFAULT_TEXTS["smollm2"])
    t = maps.seq_len
    assert maps.weights.shape == (30, 9, t, t) and maps.causal
    assert float(maps.weights.triu(1).abs().max()) == 0.0
    torch.testing.assert_close(maps.weights.sum(-1), torch.ones(30, 9, t))


def test_scores_per_head_on_hand_made_maps():
    t = 5
    eye = torch.eye(t)
    first = torch.zeros(t, t)
    first[:, 0] = 1.0
    previous = torch.diag(torch.ones(t - 1), -1)
    previous[0, 0] = 1.0
    w = torch.stack([eye, first, previous])  # (3, T, T)
    torch.testing.assert_close(sink_share(w), torch.tensor([0.0, 1.0, 0.25]))
    torch.testing.assert_close(previous_token_score(w), torch.tensor([0.0, 0.25, 1.0]))
    n = 3
    induct = torch.zeros(2 * n, 2 * n)
    for i in range(n, 2 * n):
        induct[i, i - n + 1] = 1.0
    assert float(induction_score(induct, n)) == 1.0
    assert float(induction_score(torch.eye(2 * n), n)) == 0.0


def test_thumbnails_keep_short_maps_and_max_pool_long_ones():
    w = torch.rand(2, 3, 10, 10)
    assert torch.equal(thumbnail_maps(w, 16), w.reshape(6, 10, 10))
    small = thumbnail_maps(w, 4)  # blocks of 3: 4 x 4 cells, the last block partial
    assert small.shape == (6, 4, 4)
    assert float(small[4, 1, 2]) == float(w[1, 1, 3:6, 6:9].max())
    assert float(small[5, 3, 3]) == float(w[1, 2, 9:, 9:].max())


def test_model_view_result_is_the_maps_of_the_chosen_head():
    r = explore_model_view(ModelViewParams("minilm", DEFAULT_TEXTS["minilm"], 3, 1))
    torch.testing.assert_close(r.weights, r.maps.weights[3, 1], rtol=0, atol=0)
    assert r.summary.sink_share == pytest.approx(float(r.maps.weights[3, 1, 1:, 0].mean()))
    assert r.sink_share.shape == r.previous_token.shape == (6, 12)
    assert r.thumbnails.shape == (72, r.maps.seq_len, r.maps.seq_len)


def test_the_it_animal_head_moves_when_tired_becomes_wide():
    # measured in lesson 12: layer 3, head 1 reads "animal" from "it"; "wide" moves it only
    # part of the way to "street"
    def it_to(text: str, word: str) -> float:
        maps = model_maps("minilm", text)
        return float(maps.weights[3, 1, maps.tokens.index("it"), maps.tokens.index(word)])

    tired = DEFAULT_TEXTS["minilm"]
    wide = tired.replace("tired", "wide")
    assert it_to(tired, "animal") > 0.5 > it_to(wide, "animal") > it_to(wide, "street")
    assert it_to(wide, "street") > 2 * it_to(tired, "street")


def test_head_view_lists_the_querys_top_keys():
    r = explore_head_view(HeadViewParams("minilm", DEFAULT_TEXTS["minilm"], 3, 1, query=10))
    assert r.maps.tokens[10] == "it"
    assert r.top_keys[0][:2] == (2, "animal")
    weights = [w for _, _, w in r.top_keys]
    assert weights == sorted(weights, reverse=True) and len(weights) == 5
    assert explore_head_view(HeadViewParams(query=-1)).top_keys == ()


@pytest.mark.parametrize(
    ("model", "layer", "head", "query", "key"),
    [
        ("minilm", 3, 1, 10, 2),
        ("minilm", 5, 11, 4, 12),
        ("smollm2", 0, 0, 3, 1),
        ("smollm2", 16, 0, 9, 8),
        ("smollm2", 29, 8, 20, 0),
        ("smollm2", 5, 4, 2, 7),  # a future key: masked
    ],
)
def test_neuron_view_rebuilds_the_models_weight_from_q_and_k(model, layer, head, query, key):
    r = explore_neuron(NeuronParams(model, DEFAULT_TEXTS[model], layer, head, query, key))
    assert r.weight == pytest.approx(r.model_weight, abs=1e-6)
    assert r.score == pytest.approx(float(r.q @ r.k), rel=1e-5, abs=1e-4)
    assert r.score == pytest.approx(float(r.product.sum()), rel=1e-6, abs=1e-5)
    torch.testing.assert_close(r.pair, r.product.view(-1, 2).sum(-1))
    assert r.masked == (model == "smollm2" and key > query)
    if r.masked:
        assert r.weight == 0.0 and r.row_scores[key] == float("-inf")
    if model == "minilm":
        assert not r.rope and torch.equal(r.q, r.q_raw) and r.score_raw == r.score
    else:  # RoPE turns each pair: its length stays, the products change
        assert r.rope and not torch.allclose(r.q, r.q_raw)
        torch.testing.assert_close(r.q.view(-1, 2).norm(dim=-1), r.q_raw.view(-1, 2).norm(dim=-1))


def test_neuron_view_at_query_zero_rope_changes_nothing():
    r = explore_neuron(NeuronParams("smollm2", DEFAULT_TEXTS["smollm2"], 2, 3, 0, 0))
    torch.testing.assert_close(r.q, r.q_raw)
    torch.testing.assert_close(r.k, r.k_raw)
    assert r.weight == pytest.approx(1.0)  # the first token sees only itself


# --- losses: ablation and other masks -----------------------------------------------------------


def test_the_causal_mask_given_equals_the_models_own():
    model, tok = pretrained_model("smollm2")
    ids = torch.tensor([tok.encode(DEFAULT_TEXTS["smollm2"])])
    out = model(ids)
    given = model(ids, mask=causal_mask(ids.shape[1]))
    assert torch.equal(given.logits, out.logits)
    assert all(torch.equal(a, b) for a, b in zip(given.attentions, out.attentions, strict=True))


@pytest.mark.parametrize(("model", "layer"), [("minilm", 3), ("smollm2", 0), ("smollm2", 16)])
def test_the_maps_q_and_k_are_the_layers_own_projections(model, layer):
    """The reference: project the layer's input with its weights and rotate by hand."""
    maps = model_maps(model, DEFAULT_TEXTS[model])
    m = pretrained_model(model)[0]
    block, cfg = m.layers[layer], m.cfg
    x = maps.hidden_states[layer][None]  # (1, T, M) the layer's input
    if model == "smollm2":
        x = block.attn_norm(x)  # pre-norm: attention reads the normalised input
    q_raw = split_heads(block.attn.q_proj(x), cfg.n_heads)[0]  # (H, T, D)
    k_raw = split_heads(block.attn.k_proj(x), block.attn.n_kv_heads)[0]  # (Hkv, T, D)
    torch.testing.assert_close(maps.q_raw[layer], q_raw, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(maps.k_raw[layer], k_raw, atol=1e-5, rtol=1e-5)
    assert maps.rotary == (model == "smollm2") and maps.causal == (model == "smollm2")
    if maps.rotary:
        rope = {"positions": torch.arange(maps.seq_len), "base": cfg.rope_base}
        q, k = (apply_rope(y, **rope, layout="interleaved") for y in (q_raw, k_raw))
    else:
        q, k = q_raw, k_raw
        assert maps.q is maps.q_raw  # no second copy without RoPE
    torch.testing.assert_close(maps.q[layer], q, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(maps.k[layer], k, atol=1e-5, rtol=1e-5)


def test_text_loss_causal_no_sink_window_and_ablation():
    text = text_of(48)
    base = text_loss(LossParams(text))
    model, tok = pretrained_model("smollm2")
    ids = torch.tensor([tok.encode(text)])
    by_hand = F.cross_entropy(model(ids).logits[0, :-1], ids[0, 1:])
    assert base.loss == pytest.approx(float(by_hand), rel=1e-5)
    assert base.perplexity == pytest.approx(np.exp(base.loss))
    assert base.n_tokens == 48 and base.first_keys_share.shape == (30, 4)

    no_sink = text_loss(LossParams(text, mask="no-sink"))
    assert float(no_sink.first_keys_share[:, 0].max()) == 0.0  # nobody reads token 0 now
    deep = slice(15, None)  # in deep layers the weight moves to the next token in line
    assert float(no_sink.first_keys_share[deep, 1].mean()) > 0.3
    assert float(base.first_keys_share[deep, 1].mean()) < 0.05

    wide = text_loss(LossParams(text, mask="window", window=48))  # sees everything: causal
    assert wide.loss == pytest.approx(base.loss, abs=1e-4)
    window = text_loss(LossParams(text, mask="window", window=8))
    sink = text_loss(LossParams(text, mask="window", window=8, sinks=1))
    assert window.loss > sink.loss + 1.0  # the window without the sink breaks the model
    assert text_loss(LossParams(text, ablate=((16, 0),))).loss != base.loss


def test_induction_scores_find_heads_that_copy_from_the_first_copy():
    r = induction_scores(n=12)
    assert r.scores.shape == r.previous_token.shape == (30, 9)
    assert len(r.ids) == 24 and r.ids[:12] == r.ids[12:]
    assert float(r.scores.max()) > 0.5
    assert r.loss_second < r.loss_first - 3  # the second copy is predictable
    top = divmod(int(r.scores.argmax()), 9)
    hurt = induction_scores(n=12, ablate=(top,))
    assert hurt.loss_second > r.loss_second and hurt.ablate == (top,)


def test_chat_answer_shows_the_template_tokens():
    c = chat_answer("What is the capital of France?", max_new_tokens=8)
    assert "Paris" in c.answer
    assert c.prompt.startswith("<|im_start|>system\n") and c.prompt.endswith("assistant\n")
    assert c.prompt_tokens[0] == "<|im_start|>" and "<|im_end|>" in c.prompt_tokens
    assert c.weights.shape == (len(c.answer_tokens), len(c.prompt_tokens))
    assert bool((c.weights.sum(-1) <= 1 + 1e-5).all())
    torch.testing.assert_close(c.weights[0].sum(), torch.tensor(1.0))  # all of it is prompt


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: model_maps("gpt2", "hi"), ValueError, r"model: expected one of \['minilm'"),
        (lambda: model_maps("minilm", ""), ValueError, "text: expected at least one token"),
        (lambda: model_maps("smollm2", ""), ValueError, "text: expected at least one token"),
        (lambda: encode_text("minilm", 3), TypeError, "text: expected a str, got int"),
        (
            lambda: model_maps("smollm2", text_of(MODEL_MAX_TOKENS + 1)),
            ValueError,
            "text: expected at most 128 tokens, got 129; shorten the text",
        ),
        (
            lambda: explore_model_view(ModelViewParams("minilm", "a b", 6, 0)),
            ValueError,
            r"layer: expected an int in \[0, 5\], got 6",
        ),
        (
            lambda: explore_neuron(NeuronParams("minilm", "a b", 0, 0, 4, 0)),
            ValueError,
            r"query: expected an int in \[0, 3\], got 4",
        ),
        (lambda: LossParams("x", mask="sink"), ValueError, r"mask: expected one of \['causal'"),
        (
            lambda: text_loss(LossParams(TEXT, mask="window", ablate=((0, 0),))),
            ValueError,
            "ablate: only with mask='causal'",
        ),
        (lambda: text_loss(LossParams("Hi")), ValueError, "text: expected at least 5 tokens"),
        (lambda: chat_answer("  "), ValueError, "question: expected a non-empty str"),
        (lambda: induction_scores(n=1), ValueError, r"n: expected an int in \[2, 64\]"),
    ],
)
def test_errors_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- the views ---------------------------------------------------------------------------------


def assert_model_view_matches(view: ModelView) -> None:
    assert view.error.message == ""
    r = view.result
    want = explore_model_view(view.params)
    assert r.params == view.params and r.summary == want.summary
    np.testing.assert_array_equal(view.thumbs.values, r.thumbnails.numpy())
    np.testing.assert_array_equal(view.matrix.matrix, r.weights.numpy())
    np.testing.assert_array_equal(view.lines.weights, r.weights.numpy())
    tokens = list(r.maps.tokens)
    assert view.lines.query_tokens == view.matrix.row_labels == view.matrix.col_labels == tokens
    p = r.params
    assert view.thumbs.panel_titles[p.layer * r.maps.n_heads + p.head] == f"▶{p.layer}.{p.head}"
    assert view.thumbs.columns == r.maps.n_heads
    assert f"layer {p.layer}, head {p.head}" in view.readout.value


def test_model_view_follows_its_controls():
    view = ModelView()
    assert css("model-view") in view._dom_classes
    assert css("principal") in view.thumbs._dom_classes
    assert_model_view_matches(view)
    view.layer.value, view.head.value = 3, 1
    assert_model_view_matches(view)
    assert f"{view.result.summary.sink_share:.3f}" in view.readout.value
    view.thumbs.click(0, 0, panel=5 * 12 + 11)  # a click on a thumbnail opens that head
    assert (view.layer.value, view.head.value) == (5, 11)
    assert_model_view_matches(view)


def test_model_view_sends_the_thumbnails_once_per_text():
    view = ModelView()
    sent = view.thumbs.values
    view.head.value = 4
    assert view.thumbs.values is sent  # another head: only the titles' marker moved
    view.text.value = "The trophy didn't fit in the suitcase because it was too big"
    assert view.thumbs.values is not sent
    assert_model_view_matches(view)


def test_model_view_switches_model_and_keeps_sliders_in_range():
    view = ModelView(layer=5, head=11)
    view.model.value = "smollm2"
    assert view.text.value == DEFAULT_TEXTS["smollm2"]  # the default text follows the model
    assert (view.layer.max, view.head.max) == (29, 8) and view.head.value == 8
    assert_model_view_matches(view)
    view.text.value = "my own text"
    view.model.value = "minilm"
    assert view.text.value == "my own text"  # a text of the learner's own stays
    assert (view.layer.max, view.head.max) == (5, 11)
    assert_model_view_matches(view)


def test_model_view_at_128_tokens_of_smollm2():
    view = ModelView("smollm2", text_of(128), layer=17, head=3)
    assert view.thumbs.values.shape == (270, 32, 32)  # max-pooled blocks of 4 x 4
    assert view.matrix.values.shape == (1, 128, 128)
    assert bool(view.matrix.masked[0].sum() == 128 * 127 // 2)  # the future, hatched
    assert_model_view_matches(view)


def test_model_view_errors_are_shown_not_raised():
    view = ModelView()
    good = view.result
    view.text.value = ""
    assert view.error.message == "ValueError: text: expected at least one token, got an empty text"
    assert view.result is good
    view.text.value = DEFAULT_TEXTS["minilm"]
    assert view.error.message == ""
    with pytest.raises(ValueError, match=r"layer, head: expected layer in \[0, 6\)"):
        ModelView(layer=6)
    with pytest.raises(ValueError, match=r"model: expected one of"):
        ModelView("bert")


def test_head_view_readout_follows_the_clicked_token():
    view = HeadView(layer=3, head=1)
    assert view.error.message == "" and css("principal") in view.lines._dom_classes
    r = view.result
    np.testing.assert_array_equal(view.lines.weights, r.weights.numpy())
    np.testing.assert_array_equal(view.strip.values, thumbnail_maps(r.maps.weights[3:4]).numpy())
    assert "click a token" in view.readout.value
    view.lines.selected = 10  # what a click on "it" sends from the browser
    assert view.result.params.query == 10
    want = explore_head_view(HeadViewParams(layer=3, head=1, query=10))
    assert view.result.top_keys == want.top_keys and view.result.summary == want.summary
    assert "&#x27;animal&#x27;" in view.readout.value
    view.strip.click(0, 0, panel=7)  # a click in the strip picks that head
    assert view.head.value == 7 and view.result.params.head == 7
    np.testing.assert_array_equal(view.lines.weights, view.result.weights.numpy())


def test_neuron_view_panels_hold_the_pure_functions_numbers():
    view = NeuronView(layer=16, head=0, query=9, key=8)
    assert view.error.message == "" and css("principal") in view.vectors._dom_classes

    def matches() -> None:
        r = view.result
        want = explore_neuron(view.params)
        assert r.params == view.params and (r.score, r.weight) == (want.score, want.weight)
        if r.rope:
            want = torch.stack([torch.stack([r.q_raw, r.k_raw]), torch.stack([r.q, r.k])])
            prods = torch.stack([r.product_raw, r.product])[:, None]
        else:
            want = torch.stack([r.q, r.k])[None]
            prods = r.product[None, None]
        np.testing.assert_array_equal(view.vectors.values, want.numpy())
        np.testing.assert_array_equal(view.products.values, prods.numpy())
        assert view.pairs.series[-1]["values"] == pytest.approx(r.pair.tolist())
        assert f"{r.model_weight:.4f}" in view.readout.value

    matches()
    view.key.value = 12  # the future of query 9
    assert view.result.masked and "weight 0" in view.readout.value
    matches()
    view.model.value = "minilm"
    assert view.query.max == len(encode_text("minilm", DEFAULT_TEXTS["minilm"])) - 1
    matches()
    assert len(view.pairs.series) == 1 and view.vectors.panel_titles == ["no RoPE in this model"]


def test_neuron_view_clamps_to_a_shorter_text_and_shows_errors():
    view = NeuronView(query=20, key=3)
    view.text.value = "Short text."
    assert view.error.message == ""
    assert view.query.max == view.key.max == 2 and view.result.params.query == 2
    view.text.value = ""
    assert "text: expected at least one token" in view.error.message
    with pytest.raises(ValueError, match=r"query: expected a value in \[0, \d+\], got 99"):
        NeuronView(query=99)
