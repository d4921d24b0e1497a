"""sliding_window_mask: the last W keys (the query itself included), plus attention sinks."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import attention as A


def _bool(rows):
    return torch.tensor(rows, dtype=torch.bool)


def test_window_two_by_hand():
    assert torch.equal(
        A.sliding_window_mask(5, 2),
        _bool(
            [
                [1, 0, 0, 0, 0],
                [1, 1, 0, 0, 0],
                [0, 1, 1, 0, 0],
                [0, 0, 1, 1, 0],
                [0, 0, 0, 1, 1],
            ]
        ),
    )


def test_window_three_with_one_sink_by_hand():
    assert torch.equal(
        A.sliding_window_mask(6, 3, sinks=1),
        _bool(
            [
                [1, 0, 0, 0, 0, 0],
                [1, 1, 0, 0, 0, 0],
                [1, 1, 1, 0, 0, 0],
                [1, 1, 1, 1, 0, 0],
                [1, 0, 1, 1, 1, 0],
                [1, 0, 0, 1, 1, 1],
            ]
        ),
    )


def test_sinks_stay_causal():
    # two sinks: query 0 still cannot see key 1, its future
    assert torch.equal(
        A.sliding_window_mask(4, 1, sinks=2),
        _bool([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 0, 1]]),
    )


def test_window_one_is_the_diagonal():
    assert torch.equal(A.sliding_window_mask(6, 1), torch.eye(6, dtype=torch.bool))


@pytest.mark.parametrize("seq_len", [1, 2, 7])
@pytest.mark.parametrize("extra", [0, 1, 5])
def test_window_at_least_seq_len_is_causal(seq_len, extra):
    got = A.sliding_window_mask(seq_len, seq_len + extra)
    assert torch.equal(got, A.causal_mask(seq_len))
    assert torch.equal(A.sliding_window_mask(seq_len, 1, sinks=seq_len + extra), got)


@pytest.mark.parametrize("seq_len,window", [(1, 1), (5, 1), (5, 4), (5, 5), (9, 3), (9, 8)])
def test_row_counts_off_by_one(seq_len, window):
    m = A.sliding_window_mask(seq_len, window)
    counts = m.sum(-1)
    assert counts.tolist() == [min(i + 1, window) for i in range(seq_len)]  # W includes itself
    for i in range(seq_len):  # the visible keys are the contiguous run i-W+1 .. i
        assert m[i].nonzero().flatten().tolist() == list(range(max(0, i - window + 1), i + 1))


@settings(max_examples=60, deadline=None)
@given(seq_len=st.integers(1, 16), window=st.integers(1, 18), sinks=st.integers(0, 18))
def test_definition(seq_len, window, sinks):
    m = A.sliding_window_mask(seq_len, window, sinks=sinks)
    assert m.shape == (seq_len, seq_len) and m.dtype == torch.bool
    for i in range(seq_len):
        for j in range(seq_len):
            assert bool(m[i, j]) == (j <= i and (i - window < j or j < sinks))
    assert (m.sum(-1) <= window + sinks).all()  # O(T * W) entries, not O(T^2)
    assert m.diagonal().all()  # every query sees itself: no row is fully masked


def test_windowed_attention_equals_torch_and_flash():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 11, 8, generator=g) for _ in range(3))
    mask = A.sliding_window_mask(11, 4, sinks=2)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    core = A.scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(core.output, want, atol=1e-5, rtol=1e-5)
    assert (core.weights[..., ~mask] == 0).all()
    flash = A.flash_attention(q, k, v, mask, block_size=3)
    torch.testing.assert_close(flash.output, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: A.sliding_window_mask(5, 0), ValueError,
         r"window: expected a positive int, got 0"),
        (lambda: A.sliding_window_mask(5, 2.5), TypeError, r"window: expected an int, got float"),
        (lambda: A.sliding_window_mask(0, 2), ValueError,
         r"seq_len: expected a positive int, got 0"),
        (lambda: A.sliding_window_mask(5, 2, sinks=-1), ValueError,
         r"sinks: expected an int >= 0, got -1"),
        (lambda: A.sliding_window_mask(5, 2, sinks=True), TypeError,
         r"sinks: expected an int, got bool"),
    ],
)  # fmt: skip
def test_error_messages(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
