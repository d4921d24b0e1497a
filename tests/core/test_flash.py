"""flash_attention and the online softmax against torch's attention, over masks, sizes, tiles."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import attention as A

NEG_INF = float("-inf")


# ---- the online softmax on one row ----


@pytest.mark.parametrize("n", [1, 2, 7, 33])
@pytest.mark.parametrize("chunk_size", [1, 3, 8, 100])
def test_online_softmax_equals_torch_softmax(n, chunk_size):
    x = torch.randn(n, generator=torch.Generator().manual_seed(n)) * 5
    torch.testing.assert_close(A.online_softmax(x, chunk_size), torch.softmax(x, 0))


def test_online_softmax_trace_keeps_the_running_max_and_sum():
    x = torch.tensor([1.0, 3.0, 2.0, 5.0, -1.0])
    trace = list(A.online_softmax_steps(x))
    assert [s.seen for s in trace] == [1, 2, 3, 4, 5]
    assert [float(s.m) for s in trace] == [1.0, 3.0, 3.0, 5.0, 5.0]
    for s in trace:  # after each step l is the sum of exp(x - m) over what was read
        seen = x[: s.seen]
        torch.testing.assert_close(s.l, torch.exp(seen - seen.max()).sum())
    chunks = list(A.online_softmax_steps(x, chunk_size=2))
    assert [s.seen for s in chunks] == [2, 4, 5]
    torch.testing.assert_close(chunks[-1].l, trace[-1].l)


def test_online_softmax_of_masked_entries():
    x = torch.tensor([NEG_INF, 0.5, NEG_INF, 2.0])
    torch.testing.assert_close(A.online_softmax(x, 1), torch.softmax(x, 0))
    assert torch.equal(A.online_softmax(torch.full((3,), NEG_INF)), torch.zeros(3))


def test_online_softmax_is_stable_for_huge_scores():
    x = torch.tensor([1000.0, 1001.0, 999.0], dtype=torch.float64)
    torch.testing.assert_close(A.online_softmax(x), torch.softmax(x, 0))


# ---- flash_attention against torch ----


def _qkv(lead, tq, tk, d, dv, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, tq, d, generator=g, dtype=dtype)
    k = torch.randn(*lead, tk, d, generator=g, dtype=dtype)
    v = torch.randn(*lead, tk, dv, generator=g, dtype=dtype)
    return q, k, v, g


def _mask(kind, lead, tq, tk, g):
    if kind == "none":
        return None
    if kind == "causal":
        return A.causal_mask(tq, tk)
    if kind == "key_padding":
        lengths = torch.randint(1, tk + 1, (lead[0] if lead else 1,), generator=g)
        m = A.padding_mask(lengths, tk)  # (B, 1, Tk)
        return m.unsqueeze(1) if len(lead) == 2 else (m if lead else m[0])
    if kind == "random":
        return torch.rand(*lead, tq, tk, generator=g) > 0.5
    if kind == "window":
        return A.sliding_window_mask(max(tq, tk), 3, sinks=1)[:tq, :tk]
    raise AssertionError(kind)


SHAPES = [
    # (lead dims, Tq, Tk, D, Dv)
    ((), 1, 1, 1, 1),
    ((), 13, 13, 8, 8),
    ((), 5, 17, 4, 6),
    ((2,), 19, 11, 16, 16),
    ((2, 3), 23, 23, 8, 5),
    ((1, 2), 9, 31, 32, 32),
]
MASKS = ["none", "causal", "key_padding", "random", "window"]
BLOCKS = [1, 4, (3, 5), (8, 2), 64]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("block_size", BLOCKS)
def test_flash_equals_torch_sdpa(shape, kind, block_size):
    q, k, v, g = _qkv(*shape, seed=SHAPES.index(shape) * 10 + MASKS.index(kind))
    mask = _mask(kind, shape[0], shape[1], shape[2], g)
    got = A.flash_attention(q, k, v, mask, block_size=block_size)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(got.output, want, atol=1e-5, rtol=1e-5)
    core = A.scaled_dot_product_attention(q, k, v, mask)
    lse = torch.logsumexp(core.scores, dim=-1)  # -inf for a fully masked row
    torch.testing.assert_close(got.lse, lse, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.output, core.output, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", MASKS)
def test_flash_equals_torch_in_float64(shape, kind):
    q, k, v, g = _qkv(*shape, seed=7, dtype=torch.float64)
    mask = _mask(kind, shape[0], shape[1], shape[2], g)
    got = A.flash_attention(q, k, v, mask, block_size=(4, 3))
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(got.output, want, atol=1e-12, rtol=1e-12)
    assert got.output.dtype == got.lse.dtype == torch.float64


@pytest.mark.parametrize("tq,tk", [(1, 1), (7, 7), (5, 12), (12, 5), (33, 20)])
@pytest.mark.parametrize("block_size", [1, 4, (6, 5), 128])
def test_causal_option_equals_is_causal_and_the_mask(tq, tk, block_size):
    q, k, v, _ = _qkv((2, 2), tq, tk, 8, 8, seed=tq * tk)
    got = A.flash_attention(q, k, v, causal=True, block_size=block_size)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    valid = A.causal_mask(tq, tk).any(-1)  # rows with a key to see (all when tq <= tk)
    torch.testing.assert_close(got.output[..., valid, :], want[..., valid, :])
    masked = A.flash_attention(q, k, v, A.causal_mask(tq, tk), block_size=block_size)
    torch.testing.assert_close(got.output, masked.output, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(got.lse, masked.lse, atol=1e-6, rtol=1e-6)


def test_causal_and_a_mask_combine():
    q, k, v, g = _qkv((2,), 10, 10, 4, 4, seed=3)
    pad = A.padding_mask([10, 6], 10)  # (B, 1, Tk)
    got = A.flash_attention(q, k, v, pad, causal=True, block_size=3)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=pad & A.causal_mask(10))
    torch.testing.assert_close(got.output, want)


def test_fully_masked_rows_give_zero_output_and_minus_inf_lse():
    q, k, v, _ = _qkv((2,), 6, 9, 4, 4, seed=0)
    mask = torch.ones(2, 6, 9, dtype=torch.bool)
    mask[0, 2] = False
    mask[1, :, 4:] = False  # rows that see only an early key tile
    mask[1, 5] = False
    got = A.flash_attention(q, k, v, mask, block_size=(2, 4))
    assert torch.equal(got.output[0, 2], torch.zeros(4))
    assert torch.equal(got.output[1, 5], torch.zeros(4))
    assert got.lse[0, 2] == NEG_INF and got.lse[1, 5] == NEG_INF
    assert torch.isfinite(got.output).all()
    core = A.scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(got.output, core.output)


def test_scale_and_grouped_query_heads():
    q, _, _, g = _qkv((2, 6), 7, 7, 8, 8, seed=1)
    k, v = torch.randn(2, 2, 9, 8, generator=g), torch.randn(2, 2, 9, 8, generator=g)
    got = A.flash_attention(q, k, v, scale=0.3, block_size=4)
    want = F.scaled_dot_product_attention(q, k, v, scale=0.3, enable_gqa=True)
    torch.testing.assert_close(got.output, want)


@settings(max_examples=40, deadline=None)
@given(
    tq=st.integers(1, 20),
    tk=st.integers(1, 20),
    bq=st.integers(1, 24),
    bk=st.integers(1, 24),
    p=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**16),
)
def test_flash_equals_the_core_for_any_tiles_and_mask(tq, tk, bq, bk, p, seed):
    q, k, v, g = _qkv((2,), tq, tk, 4, 3, seed)
    mask = torch.rand(2, tq, tk, generator=g) >= p
    got = A.flash_attention(q, k, v, mask, block_size=(bq, bk))
    want = A.scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(got.output, want.output, atol=1e-5, rtol=1e-5)
    assert torch.equal(torch.isneginf(got.lse), want.fully_masked)


# ---- the steps: what a stepper shows ----


def test_steps_visit_every_tile_pair_and_hold_only_tiles():
    q, k, v, _ = _qkv((2,), 10, 7, 4, 5, seed=0)
    steps = list(A.flash_attention_steps(q, k, v, block_size=(4, 3)))
    assert [(s.i, s.j) for s in steps] == [(i, j) for i in range(3) for j in range(3)]
    assert steps[0].rows == (0, 4) and steps[2].cols == (6, 7) and steps[-1].rows == (8, 10)
    for s in steps:
        assert s.scores.shape == (2, s.rows[1] - s.rows[0], s.cols[1] - s.cols[0])
        assert s.scores.shape[-2] <= 4 and s.scores.shape[-1] <= 3  # never (Tq, Tk)
        assert s.m.shape == s.l.shape == (2, s.rows[1] - s.rows[0])
        assert s.acc.shape == (2, s.rows[1] - s.rows[0], 5)
    assert [s.last for s in steps] == [False, False, True] * 3


def test_steps_end_where_flash_attention_does():
    q, k, v, g = _qkv((), 9, 11, 4, 4, seed=2)
    mask = torch.rand(9, 11, generator=g) > 0.3
    result = A.flash_attention(q, k, v, mask, block_size=4)
    for s in A.flash_attention_steps(q, k, v, mask, block_size=4):
        r0, r1 = s.rows
        seen = A.scaled_dot_product_attention(q[r0:r1], k[: s.cols[1]], v[: s.cols[1]],
                                              mask[r0:r1, : s.cols[1]])  # fmt: skip
        torch.testing.assert_close(s.output, seen.output)  # the output over keys seen so far
        if s.last:
            torch.testing.assert_close(s.output, result.output[r0:r1])


def test_causal_steps_skip_the_future_tiles():
    q, k, v, _ = _qkv((), 12, 12, 4, 4, seed=0)
    pairs = [(s.i, s.j) for s in A.flash_attention_steps(q, k, v, causal=True, block_size=4)]
    assert pairs == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2)]


# ---- memory traffic under the SRAM / HBM model ----


@pytest.mark.parametrize("tq,tk,bq,bk", [(10, 7, 4, 3), (16, 16, 4, 4), (5, 9, 8, 2)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_step_bytes_add_up_to_the_traffic_formula(tq, tk, bq, bk, dtype):
    q, k, v, _ = _qkv((2, 3), tq, tk, 4, 6, seed=0, dtype=dtype)
    steps = list(A.flash_attention_steps(q, k, v, block_size=(bq, bk)))
    formula = A.flash_attention_traffic(tq, tk, 4, 6, block_size=(bq, bk), dtype=dtype)
    assert sum(s.bytes_read for s in steps) == 6 * formula.bytes_read  # B * H = 6 slices
    assert sum(s.bytes_written for s in steps) == 6 * formula.bytes_written
    n = dtype.itemsize
    assert formula.bytes_written == (tq * 6 + tq) * n
    assert formula.bytes_read == (tq * 4 + math.ceil(tq / bq) * tk * (4 + 6)) * n


def test_mask_tiles_are_read_one_byte_each():
    q, k, v, _ = _qkv((), 8, 8, 4, 4, seed=0)
    plain = sum(s.bytes_read for s in A.flash_attention_steps(q, k, v, block_size=4))
    mask = torch.ones(8, 8, dtype=torch.bool)
    masked = sum(s.bytes_read for s in A.flash_attention_steps(q, k, v, mask, block_size=4))
    assert masked - plain == 64


def test_naive_traffic_formula_and_the_quadratic_gap():
    t = A.naive_attention_traffic(4, 6, 2, 3)  # float32
    assert t.bytes_read == (4 * 2 + 6 * 2 + 2 * 4 * 6 + 6 * 3) * 4
    assert t.bytes_written == (2 * 4 * 6 + 4 * 3) * 4
    assert t.extra_bytes == 2 * 4 * 6 * 4
    extra = {
        n: A.naive_attention_traffic(n, n, 64).extra_bytes
        / A.flash_attention_traffic(n, n, 64).extra_bytes
        for n in (1024, 2048)
    }
    assert extra == {1024: 2048, 2048: 4096}  # 2 T^2 vs T: the gap doubles with T
    half = A.naive_attention_traffic(8, 8, 4, dtype=torch.float16)
    assert half.extra_bytes == 2 * 8 * 8 * 2


# ---- errors ----


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: A.online_softmax(torch.tensor([1.0, float("nan")])), ValueError,
         r"x: expected finite values or -inf \(masked\), got NaN or \+inf"),
        (lambda: A.online_softmax(torch.ones(2, 2)), ValueError,
         r"x: expected a 1-D tensor, got shape \(2, 2\)"),
        (lambda: A.online_softmax(torch.ones(3), 0), ValueError,
         r"chunk_size: expected a positive int, got 0"),
        (lambda: A.flash_attention(torch.ones(3, 4), torch.ones(3, 4), torch.ones(3, 4),
                                   block_size=0),
         ValueError, r"block_size: expected a positive int, got 0"),
        (lambda: A.flash_attention(torch.ones(3, 4), torch.ones(3, 4), torch.ones(3, 4),
                                   block_size=(2, 2, 2)),
         ValueError, r"block_size: expected an int or \(block_q, block_k\), got \(2, 2, 2\)"),
        (lambda: A.flash_attention(torch.ones(3, 4), torch.ones(3, 4), torch.ones(3, 4),
                                   causal=1),
         TypeError, r"causal: expected a bool, got int"),
        (lambda: A.flash_attention(torch.ones(3, 4), torch.ones(3, 4), torch.ones(3, 4),
                                   torch.ones(3, 3)),
         TypeError, r"mask: expected torch.bool \(True = may attend\), got torch.float32"),
        (lambda: A.flash_attention_steps(torch.ones(3, 4), torch.ones(3, 5), torch.ones(3, 4)),
         ValueError, r"key: last dim must equal query's width D=4"),
        (lambda: A.flash_attention_traffic(8, 8, 4, block_size=0), ValueError,
         r"block_size: expected a positive int, got 0"),
        (lambda: A.naive_attention_traffic(0, 8, 4), ValueError,
         r"tq: expected a positive int, got 0"),
    ],
)  # fmt: skip
def test_error_messages(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_steps_refuse_an_option_flash_attention_does_not_take() -> None:
    q = torch.randn(4, 8)
    with pytest.raises(
        TypeError, match=r"expected options causal, scale, block_size; got \['blok_size'\]"
    ):
        A.flash_attention_steps(q, q, q, blok_size=2)
