"""Every error message of the core, matched by its text."""

import pytest
import torch

import attention as A

q3 = torch.randn(2, 4, 8)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: A.scaled_dot_product_attention([1.0], q3, q3), TypeError,
         r"query: expected a torch.Tensor, got list"),
        (lambda: A.scaled_dot_product_attention(q3.long(), q3, q3), TypeError,
         r"query: expected a floating tensor, got torch.int64; use query.float\(\)"),
        (lambda: A.scaled_dot_product_attention(torch.randn(8), q3, q3), ValueError,
         r"query: expected a 2-D or 3-D or 4-D tensor, got shape \(8,\)"),
        (lambda: A.scaled_dot_product_attention(q3, torch.randn(4, 8), q3), ValueError,
         r"key: expected a 3-D tensor, got shape \(4, 8\)"),
        (lambda: A.scaled_dot_product_attention(torch.randn(2, 0, 8), q3, q3), ValueError,
         r"query: expected a non-empty tensor, got shape \(2, 0, 8\)"),
        (lambda: A.scaled_dot_product_attention(q3, torch.randn(2, 4, 6), q3), ValueError,
         r"key: last dim must equal query's width D=8, got key shape \(2, 4, 6\)"),
        (lambda: A.scaled_dot_product_attention(q3, q3, torch.randn(2, 5, 8)), ValueError,
         r"value: length must equal key's length Tk=4, got value shape \(2, 5, 8\)"),
        (lambda: A.scaled_dot_product_attention(q3, torch.randn(3, 4, 8), torch.randn(3, 4, 8)),
         ValueError, r"key: leading dims \(3,\) must equal query's \(2,\)"),
        (lambda: A.scaled_dot_product_attention(q3 * float("nan"), q3, q3), ValueError,
         r"query: expected finite values, got NaN or inf"),
        (lambda: A.scaled_dot_product_attention(q3, q3, q3, torch.ones(4, 4)), TypeError,
         r"mask: expected torch.bool \(True = may attend\), got torch.float32; "
         r"use from_additive_mask\(mask\)"),
        (lambda: A.scaled_dot_product_attention(q3, q3, q3, torch.ones(4, 4, dtype=torch.int64)),
         TypeError, r"mask: expected torch.bool .*got torch.int64; use mask.bool\(\)"),
        (lambda: A.scaled_dot_product_attention(q3, q3, q3, torch.ones(5, 6, dtype=torch.bool)),
         ValueError, r"mask: shape \(5, 6\) does not broadcast to the scores' shape \(2, 4, 4\)"),
        (lambda: A.scaled_dot_product_attention(q3, q3, q3, scale=0.0), ValueError,
         r"scale: expected a positive finite number, got 0.0"),
        (lambda: A.MultiHeadAttention(10, 4), ValueError,
         r"d_model=10 is not divisible by n_heads=4; choose n_heads from \[1, 2, 5, 10\]"),
        (lambda: A.MultiHeadAttention(8, 0), ValueError,
         r"n_heads: expected a positive int, got 0"),
        (lambda: A.MultiHeadAttention(8.0, 2), TypeError, r"d_model: expected an int, got float"),
        (lambda: A.MultiHeadAttention(8, 2)(torch.randn(2, 4, 6)), ValueError,
         r"query: expected width d_model=8, got shape \(2, 4, 6\)"),
        (lambda: A.MultiHeadAttention(8, 2)(q3, q3), ValueError,
         r"key and value: give both \(cross-attention\) or neither \(self\)"),
        (lambda: A.MultiHeadAttention(8, 2)(q3, torch.randn(3, 4, 8), torch.randn(3, 4, 8)),
         ValueError, r"key: batch 3 differs from query's batch 2"),
        (lambda: A.MultiHeadAttention(8, 2)(q3, q3, torch.randn(2, 5, 8)), ValueError,
         r"value: length 5 differs from key's length 4"),
        (lambda: A.MultiHeadAttention(8, 2, kdim=5)(q3, q3, q3), ValueError,
         r"key: expected width 5, got shape \(2, 4, 8\)"),
        (lambda: A.MultiHeadAttention(8, 2).load_torch_weights(torch.nn.Linear(2, 2)), TypeError,
         r"mha: expected nn.MultiheadAttention, got Linear"),
        (lambda: A.MultiHeadAttention(8, 2).load_torch_weights(torch.nn.MultiheadAttention(8, 4)),
         ValueError, r"mha: expected embed_dim=8, num_heads=2, kdim=8, vdim=8; got 8, 4, 8, 8"),
        (lambda: A.split_heads(torch.randn(2, 3, 10), 4), ValueError,
         r"x's width=10 is not divisible by n_heads=4"),
        (lambda: A.merge_heads(q3), ValueError, r"x: expected a 4-D tensor, got shape \(2, 4, 8\)"),
        (lambda: A.causal_mask(0), ValueError, r"tq: expected a positive int, got 0"),
        (lambda: A.padding_mask([1, 5], 4), ValueError,
         r"lengths: expected values in \[0, max_len=4\], got \[1, 5\]"),
        (lambda: A.padding_mask(torch.tensor([1.5]), 4), ValueError,
         r"lengths: expected a 1-D tensor of ints \(B,\), got torch.float32 of shape \(1,\)"),
        (lambda: A.to_key_padding_mask(torch.ones(2, 3)), TypeError,
         r"mask: expected a torch.bool tensor, got torch.float32"),
        (lambda: A.to_key_padding_mask(torch.ones(2, 3, 4, dtype=torch.bool)), ValueError,
         r"mask: expected a key mask of shape \(B, 1, Tk\) or \(B, Tk\), got \(2, 3, 4\)"),
        (lambda: A.from_key_padding_mask(torch.ones(2, 1, 3, dtype=torch.bool)), ValueError,
         r"key_padding_mask: expected shape \(B, Tk\), got \(2, 1, 3\)"),
        (lambda: A.from_additive_mask(torch.ones(2, dtype=torch.bool)), TypeError,
         r"additive: expected a floating tensor of 0 and -inf, got torch.bool"),
        (lambda: A.valid_lens_to_mask([3], tk=2), ValueError,
         r"valid_lens: expected values in \[0, tk=2\], got \[3\]"),
        (lambda: A.valid_lens_to_mask(torch.ones(1, 1, 1, dtype=torch.long), tk=2), ValueError,
         r"valid_lens: expected ints of shape \(B,\) or \(B, Tq\), got torch.int64"),
        (lambda: A.mask_to_valid_lens(torch.ones(3, dtype=torch.bool)), ValueError,
         r"mask: expected shape \(B, 1, Tk\) or \(B, Tq, Tk\), got \(3,\)"),
        (lambda: A.sinusoidal_positional_encoding(0, 8), ValueError,
         r"seq_len: expected a positive int, got 0"),
        (lambda: A.AdditiveAttention(4, 6, 8)(torch.randn(1, 2, 5), torch.randn(1, 3, 6),
                                              torch.randn(1, 3, 2)),
         ValueError, r"query: expected width 4, got shape \(1, 2, 5\)"),
        (lambda: A.AdditiveAttention(4, 6, 8)(torch.randn(1, 2, 4), torch.randn(1, 3, 5),
                                              torch.randn(1, 3, 2)),
         ValueError, r"key: expected width 6, got shape \(1, 3, 5\)"),
        (lambda: A.AdditiveAttention(4, 6, 8)(torch.randn(1, 2, 4), torch.randn(1, 3, 6),
                                              torch.randn(1, 4, 2)),
         ValueError, r"value: expected batch and length matching key \(1, 3\)"),
    ],
)  # fmt: skip
def test_error_messages(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def _tiny():
    return A.Transformer(A.TransformerConfig(5, 5, d_model=8, n_heads=2, max_len=4))


@pytest.mark.parametrize(
    "src,tgt,exc,match",
    [
        (torch.ones(1, 3), torch.ones(1, 2, dtype=torch.long), TypeError,
         r"src: expected token ids, a torch.long tensor \(B, T\), got torch.float32 of shape"),
        (torch.ones(1, 0, dtype=torch.long), torch.ones(1, 2, dtype=torch.long), ValueError,
         r"src: expected at least one token, got shape \(B, 0\)"),
        (torch.ones(1, 5, dtype=torch.long), torch.ones(1, 2, dtype=torch.long), ValueError,
         r"src: length 5 exceeds max_len=4"),
        (torch.full((1, 2), 7), torch.ones(1, 2, dtype=torch.long), ValueError,
         r"src: token ids must lie in \[0, 5\)"),
        (torch.ones(2, 2, dtype=torch.long), torch.ones(1, 2, dtype=torch.long), ValueError,
         r"tgt: batch 1 differs from src's batch 2"),
    ],
)  # fmt: skip
def test_transformer_input_errors(src, tgt, exc, match):
    with pytest.raises(exc, match=match):
        _tiny()(src, tgt)


def test_decoder_cache_with_wrong_layer_count():
    dec = A.Decoder(2, 8, 2)
    with pytest.raises(ValueError, match="cache: expected 2 layers, got 1"):
        dec(torch.randn(1, 1, 8), torch.randn(1, 2, 8), cache=((None, None, None, None),))
