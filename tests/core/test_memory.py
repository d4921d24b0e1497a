"""kv_cache_bytes (the formula) against the bytes real caches hold."""

import pytest
import torch

import attention as A
from attention.models.toy.checkpoints import load_reverse_model
from attention.models.toy.data import BOS, ToyTask, make_batch


def test_formula_by_hand():
    # 2 x layers x kv heads x head width x tokens x batch x bytes
    small = A.kv_cache_bytes(n_layers=2, n_kv_heads=4, d_head=16, seq_len=10)
    assert small == 2 * 2 * 4 * 16 * 10 * 4  # float32 by default
    one = dict(n_layers=1, n_kv_heads=1, d_head=1)
    assert A.kv_cache_bytes(**one, seq_len=1, batch=3) == 2 * 3 * 4
    assert A.kv_cache_bytes(**one, seq_len=3, bytes_per_value=0.5) == 3  # 4-bit values
    assert A.kv_cache_bytes(**one, seq_len=1, bytes_per_value=0.25) == 0.5
    big = dict(n_layers=30, n_kv_heads=3, d_head=64, seq_len=2048)
    assert A.kv_cache_bytes(**big, dtype=torch.bfloat16) == 2 * 30 * 3 * 64 * 2048 * 2
    assert A.kv_cache_bytes(**big, bytes_per_value=2) == A.kv_cache_bytes(**big, dtype=torch.half)
    assert isinstance(A.kv_cache_bytes(**big), int)


def test_grouped_query_attention_divides_the_cache():
    full = A.kv_cache_bytes(n_layers=4, n_kv_heads=8, d_head=32, seq_len=100)
    for hkv in (4, 2, 1):
        gqa = A.kv_cache_bytes(n_layers=4, n_kv_heads=hkv, d_head=32, seq_len=100)
        assert full == gqa * 8 // hkv


def test_cache_bytes_sums_nested_tensors():
    k, v = torch.zeros(2, 3, 4, 5), torch.zeros(2, 3, 4, 5, dtype=torch.float16)
    assert A.cache_bytes(k) == 2 * 3 * 4 * 5 * 4
    assert A.cache_bytes([(k, v), {"k": k, "none": None, "n": 3}]) == 120 * (4 + 2 + 4)
    assert A.cache_bytes(()) == 0


@torch.no_grad()
def test_the_toy_models_cache_holds_what_the_formula_says():
    model = load_reverse_model().model.eval()
    c = model.config
    src = make_batch(ToyTask("reverse"), ["3141", "2718281", "16"]).src  # (B, S), padded
    b, s = src.shape
    enc = model.encode(src)
    memory, src_mask = enc.output, model.src_mask(src)
    tokens, cache = torch.full((b, 1), BOS), None
    steps = 5
    for _ in range(steps):  # greedy decoding with a cache, one new token per step
        new = tokens if cache is None else tokens[:, -1:]  # (B, 1) once there is a cache
        logits, dec = model.decode(new, memory, src_mask, cache=cache)
        cache = dec.cache  # per layer (self k, self v, cross k, cross v)
        nxt = logits[:, -1, 3:].argmax(-1) + 3  # a symbol, never PAD/BOS/EOS
        tokens = torch.cat([tokens, nxt[:, None]], dim=1)
    sizes = dict(n_layers=c.n_decoder_layers, n_kv_heads=c.n_heads, d_head=c.d_model // c.n_heads)
    self_kv = [layer[:2] for layer in cache]
    assert self_kv[0][0].shape == (b, c.n_heads, steps, c.d_model // c.n_heads)
    assert A.cache_bytes(self_kv) == A.kv_cache_bytes(**sizes, seq_len=steps, batch=b)
    cross = A.kv_cache_bytes(**sizes, seq_len=s, batch=b)  # cross-attention keys: the source
    assert A.cache_bytes(cache) == A.kv_cache_bytes(**sizes, seq_len=steps, batch=b) + cross


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1])
@torch.no_grad()
def test_a_decoder_stack_with_gqa_holds_what_the_formula_says(n_kv_heads):
    torch.manual_seed(0)
    layers = [A.MultiHeadAttention(32, 4, n_kv_heads=n_kv_heads) for _ in range(3)]
    b, steps = 2, 7
    x = torch.randn(b, steps, 32)
    cache = [None] * len(layers)
    for t in range(steps):
        h = x[:, t : t + 1]  # (B, 1, M): the newest token only
        for i, layer in enumerate(layers):
            r = layer(h, past_kv=cache[i])
            cache[i], h = (r.k, r.v), r.output
    want = A.kv_cache_bytes(n_layers=3, n_kv_heads=n_kv_heads, d_head=8, seq_len=steps, batch=b)
    assert A.cache_bytes(cache) == want
    assert cache[0][0].shape == (b, n_kv_heads, steps, 8)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: A.kv_cache_bytes(n_layers=0, n_kv_heads=1, d_head=1, seq_len=1), ValueError,
         r"n_layers: expected a positive int, got 0"),
        (lambda: A.kv_cache_bytes(n_layers=1, n_kv_heads=1, d_head=1, seq_len=1, batch=1.0),
         TypeError, r"batch: expected an int, got float"),
        (lambda: A.kv_cache_bytes(n_layers=1, n_kv_heads=1, d_head=1, seq_len=1,
                                  dtype=torch.float16, bytes_per_value=2),
         ValueError, r"dtype and bytes_per_value: give one, not both"),
        (lambda: A.kv_cache_bytes(n_layers=1, n_kv_heads=1, d_head=1, seq_len=1, dtype="fp16"),
         TypeError, r"dtype: expected a torch.dtype such as torch.float16, got 'fp16'"),
        (lambda: A.kv_cache_bytes(n_layers=1, n_kv_heads=1, d_head=1, seq_len=1,
                                  bytes_per_value=0),
         ValueError, r"bytes_per_value: expected a positive number \(0.5 for 4-bit\), got 0"),
    ],
)  # fmt: skip
def test_error_messages(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
