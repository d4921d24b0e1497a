"""The paged KV cache: attention through the block table equals attention over the contiguous
cache, blocks are reused after a sequence is freed, and the memory arithmetic."""

from __future__ import annotations

import pytest
import torch

import attention as A


def _fill(cache: A.PagedKVCache, lengths: dict, seed: int = 0) -> dict:
    """Grow the sequences interleaved, a few tokens at a time, as a server does; keep copies."""
    g = torch.Generator().manual_seed(seed)
    full = {s: ([], []) for s in lengths}
    done = dict.fromkeys(lengths, 0)
    while any(done[s] < n for s, n in lengths.items()):
        for s, n in lengths.items():
            step = min(3, n - done[s])
            if step:
                k, v = (torch.randn(2, step, 4, generator=g) for _ in range(2))
                cache.append(s, k, v)
                full[s][0].append(k)
                full[s][1].append(v)
                done[s] += step
    return {s: (torch.cat(ks, 1), torch.cat(vs, 1)) for s, (ks, vs) in full.items()}


def test_gather_through_the_table_returns_the_contiguous_cache():
    cache = A.PagedKVCache(n_blocks=12, block_size=4, n_kv_heads=2, d_head=4)
    full = _fill(cache, {"a": 10, "b": 3, "c": 7})
    assert cache.block_tables["a"] != sorted(range(len(cache.block_tables["a"])))  # scattered
    for s, (k, v) in full.items():
        got_k, got_v = cache.gather(s)
        assert torch.equal(got_k, k) and torch.equal(got_v, v)
    p = 9
    block, offset = cache.slot("a", p)
    assert torch.equal(cache.k_blocks[block, :, offset], full["a"][0][:, p])


@pytest.mark.parametrize("n_heads", [2, 6])
def test_paged_attention_equals_attention_over_the_contiguous_cache(n_heads):
    cache = A.PagedKVCache(n_blocks=12, block_size=4, n_kv_heads=2, d_head=4)
    full = _fill(cache, {"a": 10, "b": 5})
    q = torch.randn(n_heads, 3, 4)
    k, v = full["a"]
    mask = A.causal_mask(3, 10, offset=7)
    got = A.paged_attention(q, cache, "a", mask)
    want = A.scaled_dot_product_attention(q[None], k[None], v[None], mask)
    torch.testing.assert_close(got.output, want.output[0])
    torch.testing.assert_close(got.weights, want.weights[0])


def test_blocks_come_back_and_memory_is_counted():
    cache = A.PagedKVCache(n_blocks=5, block_size=4, n_kv_heads=2, d_head=4)
    _fill(cache, {"a": 9, "b": 6})  # 3 + 2 blocks: the pool is full
    assert cache.free_blocks == [] and cache.bytes_in_use == 5 * cache.block_bytes
    assert cache.block_bytes == 2 * 2 * 4 * 4 * 4
    with pytest.raises(RuntimeError, match="out of blocks: sequence 'b' needs 1 more, 0 of 5"):
        cache.append("b", torch.randn(2, 3, 4), torch.randn(2, 3, 4))
    freed = list(cache.block_tables["a"])
    cache.free("a")
    cache.append("c", torch.randn(2, 12, 4), torch.randn(2, 12, 4))
    assert sorted(cache.block_tables["c"]) == sorted(freed)


def test_paging_memory_by_hand():
    m = A.paging_memory([5, 17, 64], max_len=64, block_size=16, bytes_per_token=10)
    assert m.used_bytes == 86 * 10
    assert m.contiguous_bytes == 3 * 64 * 10
    assert m.paged_bytes == (16 + 32 + 64) * 10
    assert m.contiguous_waste == pytest.approx(1 - 86 / 192)
    assert m.paged_waste == pytest.approx(1 - 86 / 112)
    one = A.paging_memory([8, 8], max_len=8, block_size=1, bytes_per_token=2)
    assert one.contiguous_waste == one.paged_waste == 0


def test_a_real_paged_cache_holds_what_paging_memory_says():
    lengths = {"a": 13, "b": 2, "c": 30}
    cache = A.PagedKVCache(n_blocks=20, block_size=8, n_kv_heads=2, d_head=4)
    _fill(cache, lengths)
    per_token = A.kv_cache_bytes(n_layers=1, n_kv_heads=2, d_head=4, seq_len=1)
    m = A.paging_memory(lengths.values(), max_len=32, block_size=8, bytes_per_token=per_token)
    assert cache.bytes_in_use == m.paged_bytes
    contiguous = torch.zeros(3, 2, 2, 32, 4)  # (B, k and v, Hkv, max_len, D)
    assert A.cache_bytes(contiguous) == m.contiguous_bytes


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda c: c.append("a", torch.randn(3, 2, 4), torch.randn(3, 2, 4)),
            ValueError,
            r"k: expected \(Hkv, Tnew, D\) = \(2, 2, 4\), got \(3, 2, 4\)",
        ),
        (
            lambda c: c.append("a", torch.randn(2, 2, 4), torch.randn(2, 3, 4)),
            ValueError,
            r"v: expected \(Hkv, Tnew, D\)",
        ),
        (lambda c: c.gather("zz"), KeyError, "no sequence 'zz'"),
        (lambda c: c.slot("a", 5), ValueError, r"position: expected 0 <= position < 4, got 5"),
        (lambda c: c.free("zz"), KeyError, "no sequence 'zz'"),
        (lambda c: A.PagedKVCache(0, 4, 2, 4), ValueError, "n_blocks: expected a positive int"),
        (
            lambda c: A.paging_memory([3, 70], 64, 16, bytes_per_token=1),
            ValueError,
            "a sequence of 70 tokens exceeds max_len=64",
        ),
        (
            lambda c: A.paging_memory([], 64, 16, bytes_per_token=1),
            ValueError,
            "at least one sequence",
        ),
        (lambda c: A.paging_memory([3], 64, 16, bytes_per_token=0), ValueError, "bytes_per_token"),
    ],
)
def test_bad_input_is_refused_by_name(call, error, message):
    cache = A.PagedKVCache(n_blocks=4, block_size=2, n_kv_heads=2, d_head=4)
    cache.append("a", torch.randn(2, 4, 4), torch.randn(2, 4, 4))
    with pytest.raises(error, match=message):
        call(cache)
