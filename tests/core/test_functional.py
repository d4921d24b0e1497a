"""scaled_dot_product_attention against torch's own, over many shapes and masks."""

import math

import pytest
import torch
import torch.nn.functional as F

import attention as A

SHAPES = [
    # (lead dims, Tq, Tk, D, Dv)
    ((), 1, 1, 1, 1),
    ((), 5, 5, 8, 8),
    ((), 3, 7, 4, 6),
    ((2,), 6, 6, 16, 16),
    ((3,), 4, 9, 8, 5),
    ((2, 4), 5, 5, 8, 8),
    ((2, 3), 1, 12, 16, 3),
    ((1, 2), 11, 4, 32, 32),
]


def _inputs(lead, tq, tk, d, dv, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, tq, d, generator=g)
    k = torch.randn(*lead, tk, d, generator=g)
    v = torch.randn(*lead, tk, dv, generator=g)
    return q, k, v, g


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(5))
def test_matches_torch_without_mask(shape, seed):
    q, k, v, _ = _inputs(*shape, seed)
    got = A.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(
        got.output, F.scaled_dot_product_attention(q, k, v), atol=1e-5, rtol=1e-5
    )
    assert not got.fully_masked.any()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("mask_rank", ["full", "keys", "square"])
def test_matches_torch_with_random_masks(shape, seed, mask_rank):
    lead, tq, tk, d, dv = shape
    q, k, v, g = _inputs(*shape, seed)
    if mask_rank == "full":
        mask = torch.rand(*lead, tq, tk, generator=g) > 0.4
    elif mask_rank == "keys":
        mask = torch.rand(*lead, 1, tk, generator=g) > 0.4
    else:
        mask = torch.rand(tq, tk, generator=g) > 0.4
    mask.view(-1, tk)[0] = False  # at least one fully masked row
    got = A.scaled_dot_product_attention(q, k, v, mask)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    # torch returns NaN for rows whose keys are all masked in some versions, 0 in others.
    want = torch.nan_to_num(want, nan=0.0)
    torch.testing.assert_close(got.output, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.fully_masked, ~mask.any(-1).expand(*lead, tq))


@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0])
def test_explicit_scale_matches_torch(scale):
    q, k, v, _ = _inputs((2,), 4, 6, 8, 8, 0)
    got = A.scaled_dot_product_attention(q, k, v, scale=scale).output
    want = F.scaled_dot_product_attention(q, k, v, scale=scale)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_hand_computation_on_a_tiny_example():
    # One query, two keys: scores [1, 0] / sqrt(1); softmax = [e/(e+1), 1/(e+1)].
    q = torch.tensor([[1.0]])
    k = torch.tensor([[1.0], [0.0]])
    v = torch.tensor([[10.0], [20.0]])
    r = A.scaled_dot_product_attention(q, k, v)
    w0 = math.e / (math.e + 1)
    torch.testing.assert_close(r.weights, torch.tensor([[w0, 1 - w0]]))
    torch.testing.assert_close(r.output, torch.tensor([[10 * w0 + 20 * (1 - w0)]]))


def test_scores_are_scaled_and_masked_entries_are_minus_inf():
    q, k, v, _ = _inputs((), 3, 4, 4, 2, 1)
    mask = A.causal_mask(3, 4)
    r = A.scaled_dot_product_attention(q, k, v, mask)
    raw = q @ k.T / 2.0  # sqrt(D) = 2
    torch.testing.assert_close(r.scores[mask], raw[mask])
    assert torch.isneginf(r.scores[~mask]).all()
    assert (r.weights[~mask] == 0).all()


def test_fully_masked_row_gets_zero_weights_output_and_finite_gradients():
    q, k, v, _ = _inputs((1,), 3, 4, 8, 8, 2)
    q.requires_grad_(True)
    mask = torch.ones(1, 3, 4, dtype=torch.bool)
    mask[0, 1] = False
    r = A.scaled_dot_product_attention(q, k, v, mask)
    assert r.fully_masked.tolist() == [[False, True, False]]
    assert (r.weights[0, 1] == 0).all() and (r.output[0, 1] == 0).all()
    r.output.sum().backward()
    assert torch.isfinite(q.grad).all()


def test_masked_softmax_handles_all_minus_inf_rows():
    scores = torch.tensor([[1.0, 2.0], [float("-inf"), float("-inf")]])
    w = A.masked_softmax(scores)
    torch.testing.assert_close(w[0], torch.softmax(scores[0], -1))
    assert (w[1] == 0).all()
    mask = torch.tensor([[True, False], [True, True]])
    torch.testing.assert_close(
        A.masked_softmax(torch.zeros(2, 2), mask)[0], torch.tensor([1.0, 0.0])
    )


def test_mask_broadcast_check_agrees_with_torch():
    """check_mask's own broadcast test accepts exactly what torch.broadcast_shapes maps onto
    the scores' shape (without growing it)."""
    import itertools

    from attention._checks import check_mask

    target = (2, 3, 4, 5)
    dims = [(1, 2, 3), (1, 3), (1, 4, 2), (1, 5, 4)]
    shapes = [()]
    for n in range(1, 6):
        tail = dims[-n:] if n <= 4 else [(1, 2), *dims]
        shapes += list(itertools.product(*tail))
    for shape in shapes:
        try:
            ok = torch.broadcast_shapes(shape, target) == target and len(shape) <= len(target)
        except RuntimeError:
            ok = False
        mask = torch.ones(shape, dtype=torch.bool)
        if ok:
            assert check_mask(mask, target) is mask
        else:
            with pytest.raises(ValueError, match="does not broadcast"):
                check_mask(mask, target)


def test_rows_with_no_key_are_found_as_isneginf_all_finds_them():
    from attention.functional import _all_neginf

    inf = float("-inf")
    scores = torch.tensor([[inf, inf], [inf, 0.0], [float("nan"), inf], [1.0, 2.0]])
    assert _all_neginf(scores).tolist() == torch.isneginf(scores).all(-1).tolist()
    assert _all_neginf(scores).tolist() == [True, False, False, False]


def test_check_finite_false_skips_only_the_scan_for_nan_and_inf():
    q, k, v, _ = _inputs((2,), 3, 4, 8, 8, seed=0)
    q[0, 1, 2] = float("nan")
    with pytest.raises(ValueError, match="query: expected finite values"):
        A.scaled_dot_product_attention(q, k, v)
    got = A.scaled_dot_product_attention(q, k, v, check_finite=False)  # the NaN flows through
    assert got.output[0, 1].isnan().all() and not got.output[1].isnan().any()
    with pytest.raises(ValueError, match="key: last dim must equal"):
        A.scaled_dot_product_attention(q, k[..., :4], v, check_finite=False)
    with pytest.raises(TypeError, match="mask: expected torch.bool"):
        A.scaled_dot_product_attention(q, k, v, torch.ones(3, 4), check_finite=False)
