"""Encoder and decoder layers against torch's, parameter counts, and the small Transformer."""

import pytest
import torch

import attention as A


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("use_mask", [False, True])
def test_encoder_layer_matches_nn_transformer_encoder_layer(norm_first, use_mask):
    torch.manual_seed(0)
    theirs = torch.nn.TransformerEncoderLayer(
        16, 4, 48, dropout=0.0, batch_first=True, norm_first=norm_first
    ).eval()
    ours = A.EncoderLayer(16, 4, 48, norm_first=norm_first).load_torch_weights(theirs)
    x = torch.randn(3, 7, 16)
    if use_mask:
        mask = A.padding_mask([7, 5, 2], 7)
        want = theirs(x, src_key_padding_mask=A.to_key_padding_mask(mask))
        got = ours(x, mask).output
        keep = mask[:, 0]  # torch's fast path may leave padded rows unspecified
        torch.testing.assert_close(got[keep], want[keep], atol=1e-5, rtol=1e-5)
    else:
        torch.testing.assert_close(ours(x).output, theirs(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_nn_transformer_decoder_layer(norm_first):
    torch.manual_seed(1)
    theirs = torch.nn.TransformerDecoderLayer(
        16, 2, 32, dropout=0.0, batch_first=True, norm_first=norm_first
    ).eval()
    ours = A.DecoderLayer(16, 2, 32, norm_first=norm_first).load_torch_weights(theirs)
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 8, 16)
    causal = A.causal_mask(5)
    mem_mask = A.padding_mask([8, 3], 8)
    want = theirs(
        x, memory, tgt_mask=~causal, memory_key_padding_mask=A.to_key_padding_mask(mem_mask)
    )
    got = ours(x, memory, causal, mem_mask)
    torch.testing.assert_close(got.output, want, atol=1e-5, rtol=1e-5)
    assert (got.cross_attn.weights[1, :, :, 3:] == 0).all()


def test_loading_weights_of_another_norm_placement_is_refused():
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True)
    with pytest.raises(ValueError, match="expected norm_first=False, got True"):
        A.EncoderLayer(8, 2, 16).load_torch_weights(theirs)


@pytest.mark.parametrize("d_model", [8, 32, 64])
def test_parameter_counts_reproduce_the_textbook_formulas(d_model):
    f = A.parameter_formula(d_model)
    assert A.count_parameters(A.MultiHeadAttention(d_model, 4, bias=False)) == f["mha"]
    assert A.count_parameters(A.FeedForward(d_model), weights_only=True) == f["ffn"]
    assert A.count_parameters(A.EncoderLayer(d_model, 4), weights_only=True) == f["encoder_layer"]
    assert A.count_parameters(A.DecoderLayer(d_model, 4), weights_only=True) == f["decoder_layer"]
    # Biases and LayerNorm are a small extra, linear in d_model.
    extra = A.count_parameters(A.EncoderLayer(d_model, 4)) - f["encoder_layer"]
    assert extra == 4 * d_model + (4 * d_model + d_model) + 2 * 2 * d_model


def test_feed_forward_is_the_same_mlp_at_every_position():
    ffn = A.FeedForward(8)
    x = torch.randn(1, 5, 8)
    torch.testing.assert_close(ffn(x)[0, 3], ffn(x[:, 3:4])[0, 0])


def _model(norm_first=False, tie_output=False):
    torch.manual_seed(0)
    cfg = A.TransformerConfig(11, 13, d_model=16, n_heads=2, norm_first=norm_first,
                              tie_output=tie_output)  # fmt: skip
    return A.Transformer(cfg).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_step_by_step_decoding_with_cache_equals_teacher_forcing(norm_first):
    model = _model(norm_first)
    src = torch.tensor([[3, 4, 5, 6, 0, 0], [7, 8, 9, 10, 4, 5]])
    tgt = torch.tensor([[1, 6, 5, 4, 3], [1, 5, 4, 10, 9]])
    full = model(src, tgt)
    memory = model.encode(src).output
    cache, logits = None, []
    for t in range(tgt.shape[1]):
        step_logits, result = model.decode(
            tgt[:, t : t + 1], memory, model.src_mask(src), cache=cache
        )
        cache = result.cache
        logits.append(step_logits)
    torch.testing.assert_close(torch.cat(logits, 1), full.logits, atol=1e-5, rtol=1e-5)
    last_cross = result.layers[-1].cross_attn.weights[:, :, 0]
    torch.testing.assert_close(last_cross, full.decoder.layers[-1].cross_attn.weights[:, :, -1])


def test_transformer_masks_padding_and_future_tokens():
    model = _model()
    src = torch.tensor([[3, 4, 5, 0, 0]])
    tgt = torch.tensor([[1, 6, 5, 4]])
    base = model(src, tgt).logits
    # Padding is invisible: the same source without its padding gives the same logits ...
    torch.testing.assert_close(model(src[:, :3], tgt).logits, base, atol=1e-5, rtol=1e-5)
    # ... while filling the padded slots with real tokens changes them.
    assert not torch.allclose(model(torch.tensor([[3, 4, 5, 9, 2]]), tgt).logits, base)
    future = tgt.clone()
    future[0, 3] = 9
    changed = model(src, future).logits
    torch.testing.assert_close(changed[:, :3], base[:, :3])  # earlier positions cannot see it
    assert not torch.allclose(changed[:, 3], base[:, 3])


def test_embeddings_are_scaled_by_sqrt_d_model_and_positions_added():
    model = _model()
    tokens = torch.tensor([[2, 3]])
    x = model._embed(tokens, model.src_embed, "src")
    want = model.src_embed(tokens) * 4.0 + A.sinusoidal_positional_encoding(2, 16)
    torch.testing.assert_close(x, want)


def test_tied_output_shares_the_target_embedding():
    model = _model(tie_output=True)
    assert model.generator.weight is model.tgt_embed.weight


def test_scaled_embeddings_start_at_the_size_of_the_positional_encoding():
    cfg = A.TransformerConfig(500, 500, d_model=64, n_heads=4)
    model = A.Transformer(cfg)
    scaled = model.src_embed.weight[1:] * 64**0.5  # row 0 is padding
    assert abs(scaled.std().item() - 1.0) < 0.05
    assert (model.src_embed.weight[cfg.pad_id] == 0).all()
