"""TokenAttentionView: the built-in model, any given weights, and the views vs the result."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from attention.explore import (
    DEFAULT_SENTENCE,
    MAX_LEN,
    TokensParams,
    as_head_weights,
    explore_tokens,
    token_view,
    tokenize,
)
from widgets.explorers.tokens import TokenAttentionView
from widgets.views.style import css


def random_weights(*shape: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(*shape, generator=g), dim=-1)


def assert_views_match(view: TokenAttentionView) -> None:
    assert view.error.message == ""
    r = view.result
    w = r.weights[r.head].numpy()
    np.testing.assert_array_equal(view.lines.weights, w)
    np.testing.assert_array_equal(view.heatmap.matrix, w)
    assert view.lines.query_tokens == list(r.query_tokens) == view.heatmap.row_labels
    assert view.lines.key_tokens == list(r.key_tokens) == view.heatmap.col_labels
    assert view.lines.title == f"head {r.head}"
    assert not np.isnan(w).any() and w.size


# --- the pure functions -----------------------------------------------------------------------


def test_tokenize_keeps_contractions_and_splits_punctuation():
    assert tokenize("It didn't, really.") == ("It", "didn't", ",", "really", ".")
    assert tokenize("   ") == ()


def test_model_is_deterministic_and_its_rows_sum_to_one():
    a = explore_tokens(TokensParams())
    b = explore_tokens(TokensParams())
    assert a.tokens == tokenize(DEFAULT_SENTENCE) and a.tokens[7] == "it"
    assert a.weights.shape == (4, 11, 11)
    torch.testing.assert_close(a.weights, b.weights, rtol=0, atol=0)
    torch.testing.assert_close(a.weights.sum(-1), torch.ones(4, 11))
    # not the near-uniform weights of a default-initialised layer: the lines show something
    assert a.weights.max(-1).values.mean() > 0.3
    other = explore_tokens(TokensParams(seed=1))
    assert not torch.allclose(a.weights, other.weights)


def test_same_word_same_embedding_positions_tell_them_apart():
    r = explore_tokens(TokensParams(sentence="cat cat", n_heads=1))
    # equal embeddings, different positions: rows differ only through the positional encoding
    assert not torch.allclose(r.weights[0, 0], r.weights[0, 1])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"sentence": ""}, "sentence: expected 1 to 64 tokens, got 0"),
        ({"sentence": "a " * 65}, "sentence: expected 1 to 64 tokens, got 65"),
        ({"n_heads": 5}, r"d_model=32 is not divisible by n_heads=5; choose n_heads from"),
    ],
)
def test_model_params_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TokensParams(**kwargs)


def test_weights_of_any_rank_become_heads():
    assert as_head_weights(torch.ones(2, 3)).shape == (1, 2, 3)
    assert as_head_weights(np.ones((2, 3, 4))).shape == (2, 3, 4)
    assert as_head_weights(torch.ones(1, 2, 3, 4)).shape == (2, 3, 4)
    with pytest.raises(ValueError, match=r"weights: expected batch 1 in \(B, H, Tq, Tk\)"):
        as_head_weights(torch.ones(2, 2, 3, 4))
    with pytest.raises(ValueError, match=r"weights: expected \(Tq, Tk\), \(H, Tq, Tk\)"):
        as_head_weights(torch.ones(4))


def test_token_view_checks_tokens_and_head():
    w = random_weights(2, 3, 4)
    with pytest.raises(
        ValueError, match=r"tokens: expected 3 query tokens for weights \(2, 3, 4\)"
    ):
        token_view(w, ("a", "b"), tuple("wxyz"))
    with pytest.raises(ValueError, match="key_tokens: expected 4 key tokens"):
        token_view(w, tuple("abc"))
    with pytest.raises(ValueError, match=r"head: expected an int in \[0, 1\], got 2"):
        token_view(w, tuple("abc"), tuple("wxyz"), head=2)
    torch.testing.assert_close(token_view(w, tuple("abc"), tuple("wxyz"), 1).head_weights, w[1])


# --- the view ---------------------------------------------------------------------------------


def test_constructible_with_no_arguments():
    view = TokenAttentionView()
    assert css("token-view") in view._dom_classes
    assert view.result.query_tokens == tokenize(DEFAULT_SENTENCE)
    expected = explore_tokens(TokensParams()).weights
    torch.testing.assert_close(view.result.weights, expected)
    assert view.head.max == 3
    assert_views_match(view)


def test_typing_a_sentence_and_choosing_a_head():
    view = TokenAttentionView()
    view.sentence.value = "Attention is all you need."
    view.head.value = 2
    assert view.result.query_tokens == ("Attention", "is", "all", "you", "need", ".")
    expected = explore_tokens(TokensParams(sentence="Attention is all you need."))
    torch.testing.assert_close(view.result.head_weights, expected.weights[2])
    assert_views_match(view)


def test_an_empty_sentence_shows_a_message_and_keeps_the_last_result():
    view = TokenAttentionView()
    good = view.result
    view.sentence.value = "   "
    assert "sentence: expected 1 to 64 tokens, got 0" in view.error.message
    assert view.result is good
    view.sentence.value = "back again"
    assert view.error.message == "" and view.result.query_tokens == ("back", "again")


def test_given_weights_with_key_tokens():
    w = random_weights(3, 2, 4)
    view = TokenAttentionView(weights=w, tokens=["je", "suis"], key_tokens=list("abcd"), head=1)
    assert view.sentence.layout.display == "none" and view.head.max == 2
    assert view.result.head == 1 and view.result.key_tokens == tuple("abcd")
    torch.testing.assert_close(view.result.weights, w)
    assert_views_match(view)
    view.head.value = 2
    np.testing.assert_array_equal(view.lines.weights, w[2].numpy())


@pytest.mark.parametrize("shape", [(5, 5), (1, 2, 5, 5)])
def test_given_weights_of_other_ranks(shape):
    w = random_weights(*shape)
    view = TokenAttentionView(weights=w, tokens=list("abcde"))
    assert view.result.weights.shape[-2:] == (5, 5)
    assert_views_match(view)


def test_constructor_errors():
    with pytest.raises(ValueError, match="tokens: required with weights"):
        TokenAttentionView(weights=torch.ones(2, 2))
    with pytest.raises(ValueError, match="tokens: expected 2 query tokens"):
        TokenAttentionView(weights=torch.ones(2, 2), tokens=["a"])
    with pytest.raises(ValueError, match="not divisible by n_heads=3"):
        TokenAttentionView(n_heads=3)


def test_selecting_a_token_in_the_browser_outlines_its_row():
    view = TokenAttentionView()
    # what the front end sends when a query token is clicked (model.set + save_changes)
    msg = {"content": {"data": {"method": "update", "state": {"selected": 7}}}, "buffers": []}
    view.lines._handle_msg(msg)
    assert view.lines.selected == 7 and view.heatmap.highlight_row == 7
    view.head.value = 1
    assert view.heatmap.highlight_row == 7  # kept across redraws


def test_sweep_sentences_and_heads():
    rng = random.Random(3)
    words = ["the", "animal", "it", "street", "was", "tired", ",", "didn't", "Über", "42"]
    view = TokenAttentionView()
    lengths = [1, 2, MAX_LEN] + [rng.randint(1, MAX_LEN) for _ in range(8)]
    for n in lengths:
        view.sentence.value = " ".join(rng.choice(words) for _ in range(n))
        view.head.value = rng.randint(0, 3)
        assert len(view.result.query_tokens) == n
        torch.testing.assert_close(view.result.weights.sum(-1), torch.ones(4, n))
        assert_views_match(view)


def test_export_of_the_heatmap(tmp_path):
    view = TokenAttentionView()
    names = sorted(p.name for p in view.export(tmp_path))
    assert names == ["token-view_weights.csv", "token-view_weights.png", "token-view_weights.svg"]
