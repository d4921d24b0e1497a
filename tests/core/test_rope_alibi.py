"""apply_rope, alibi_slopes and alibi_bias: hand-computed cases, properties, and transformers."""

import math

import pytest
import torch

from attention.positional import alibi_bias, alibi_slopes, apply_rope


def _half_to_interleaved(d: int) -> torch.Tensor:
    """Feature order that puts pair (i, i + D/2) of the half layout at (2i, 2i + 1)."""
    return torch.stack([torch.arange(d // 2), torch.arange(d // 2) + d // 2], dim=1).flatten()


def test_rope_hand_computed_pair():
    # D = 2: one pair turning by 1 radian per position (theta_0 = base^0 = 1).
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 2.0]])  # (T=3, D=2)
    got = apply_rope(x, torch.tensor([0, 1, 3]))
    want = torch.tensor(
        [[1.0, 0.0], [math.cos(1), math.sin(1)], [-2 * math.sin(3), 2 * math.cos(3)]]
    )
    torch.testing.assert_close(got, want)


def test_rope_hand_computed_frequencies():
    # D = 4, base = 100: pair 0 turns by 1 rad per position, pair 1 by 100^(-2/4) = 0.1 rad.
    x = torch.ones(1, 4)
    c0, s0, c1, s1 = math.cos(2), math.sin(2), math.cos(0.2), math.sin(0.2)
    half = apply_rope(x, torch.tensor([2]), base=100.0, layout="half")
    torch.testing.assert_close(half, torch.tensor([[c0 - s0, c1 - s1, c0 + s0, c1 + s1]]))
    inter = apply_rope(x, torch.tensor([2]), base=100.0, layout="interleaved")
    torch.testing.assert_close(inter, torch.tensor([[c0 - s0, c0 + s0, c1 - s1, c1 + s1]]))


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_position_zero_is_identity_and_lengths_are_kept(layout):
    x = torch.randn(2, 3, 7, 16, generator=torch.Generator().manual_seed(0))
    y = apply_rope(x, torch.arange(7), layout=layout)
    torch.testing.assert_close(y[..., 0, :], x[..., 0, :])
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    assert y.shape == x.shape and y.dtype == x.dtype


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_scores_depend_only_on_the_offset(layout):
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(1, 32, generator=g), torch.randn(1, 32, generator=g)

    def score(m: int, n: int) -> float:
        qm = apply_rope(q, torch.tensor([m]), layout=layout)
        kn = apply_rope(k, torch.tensor([n]), layout=layout)
        return float(qm @ kn.T)

    for offset in (0, 1, 5, -3):
        scores = [score(n + offset, n) for n in (3, 10, 50, 200)]
        assert max(scores) - min(scores) < 1e-3, (offset, scores)
    assert abs(score(5, 0) - score(0, 0)) > 1e-3  # but the offset itself matters


def test_rope_layouts_are_the_same_rotation_in_another_feature_order():
    x = torch.randn(2, 4, 9, 64, generator=torch.Generator().manual_seed(2))
    order = _half_to_interleaved(64)
    pos = torch.arange(3, 12)
    half = apply_rope(x, pos, base=100000.0, layout="half")
    inter = apply_rope(x[..., order], pos, base=100000.0, layout="interleaved")
    torch.testing.assert_close(inter, half[..., order])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_rope_interleaved_complex_path_equals_the_pair_formula(dtype):
    # Contiguous float32/64 pairs are rotated as complex numbers; other inputs pair by pair.
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 6, 33, generator=g).to(dtype)[..., 1:]  # odd offset: the pair path
    pos = torch.arange(4, 10)
    theta = 10000.0 ** (-torch.arange(0, 32, 2, dtype=torch.float64) / 32)
    angles = pos[:, None] * theta  # (T, D/2)
    cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    want = torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1).flatten(-2)
    assert torch.equal(apply_rope(x, pos, layout="interleaved"), want)
    assert torch.equal(apply_rope(x.contiguous(), pos, layout="interleaved"), want)


@pytest.mark.parametrize("base", [10000.0, 100000.0])
def test_rope_half_matches_transformers_llama(base):
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    from transformers import LlamaConfig

    cfg = LlamaConfig(hidden_size=4 * 32, num_attention_heads=4, rope_theta=base)
    rotary = llama.LlamaRotaryEmbedding(cfg)
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(2, 4, 10, 32, generator=g), torch.randn(2, 4, 10, 32, generator=g)
    pos = torch.arange(5, 15)
    cos, sin = rotary(q, pos[None].expand(2, -1))  # (B, T, D)
    want_q, want_k = llama.apply_rotary_pos_emb(q, k, cos, sin)
    torch.testing.assert_close(apply_rope(q, pos, base=base), want_q, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(apply_rope(k, pos, base=base), want_k, atol=1e-5, rtol=1e-5)


def test_rope_errors():
    with pytest.raises(ValueError, match=r"D must be even, got D=5"):
        apply_rope(torch.randn(3, 5), torch.arange(3))
    with pytest.raises(ValueError, match=r"layout: expected 'half' or 'interleaved', got 'pairs'"):
        apply_rope(torch.randn(3, 4), torch.arange(3), layout="pairs")
    with pytest.raises(
        TypeError, match=r"positions: expected an integer tensor, got torch.float32"
    ):
        apply_rope(torch.randn(3, 4), torch.arange(3.0))
    with pytest.raises(ValueError, match=r"positions: expected shape \(3,\) to match x's T=3"):
        apply_rope(torch.randn(3, 4), torch.arange(4))
    with pytest.raises(TypeError, match=r"x: expected a floating tensor"):
        apply_rope(torch.ones(3, 4, dtype=torch.long), torch.arange(3))


def _reference_slopes(n: int) -> list[float]:
    """get_slopes from the ALiBi paper's reference code (ofirpress/attention_with_linear_biases)."""

    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + _reference_slopes(2 * closest)[0::2][: n - closest]


def test_alibi_slopes_hand_computed():
    torch.testing.assert_close(alibi_slopes(8), 2.0 ** -torch.arange(1.0, 9.0))
    torch.testing.assert_close(alibi_slopes(1), torch.tensor([2.0**-8]))
    # 12 heads: the 8 slopes of 8 heads, then every other slope of 16 heads.
    want = [2.0**-i for i in range(1, 9)] + [2.0 ** -(i / 2) for i in (1, 3, 5, 7)]
    torch.testing.assert_close(alibi_slopes(12), torch.tensor(want))


@pytest.mark.parametrize("n_heads", [*range(1, 20), 24, 32, 40, 64, 80])
def test_alibi_slopes_match_the_paper_reference(n_heads):
    torch.testing.assert_close(alibi_slopes(n_heads), torch.tensor(_reference_slopes(n_heads)))


@pytest.mark.parametrize("n_heads", [1, 3, 8, 12, 16])
def test_alibi_slopes_match_transformers_bloom(n_heads):
    bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")
    alibi = bloom.build_alibi_tensor(torch.ones(1, 2, dtype=torch.long), n_heads, torch.float32)
    torch.testing.assert_close(alibi_slopes(n_heads), alibi[:, 0, 1])  # slope * key position 1


def test_alibi_bias_hand_computed():
    bias = alibi_bias(2, 3, 3)  # slopes 2^-4, 2^-8
    dist = torch.tensor([[0.0, 1, 2], [1, 0, 1], [2, 1, 0]])
    torch.testing.assert_close(bias, torch.stack([-dist / 16, -dist / 256]))
    assert bias.shape == (2, 3, 3)
    # Queries are the last Tq positions, as when decoding with a key/value cache.
    torch.testing.assert_close(alibi_bias(4, 2, 5), alibi_bias(4, 5, 5)[:, 3:])


def test_alibi_bias_gives_bloom_weights_under_a_causal_mask():
    bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")
    h, t = 6, 9
    scores = torch.randn(h, t, t, generator=torch.Generator().manual_seed(4))
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    # BLOOM adds slope * key position; per query row that differs from ours by a constant.
    theirs = bloom.build_alibi_tensor(torch.ones(1, t, dtype=torch.long), h, torch.float32)
    ours = torch.softmax((scores + alibi_bias(h, t, t)).masked_fill(~causal, -math.inf), -1)
    want = torch.softmax((scores + theirs).masked_fill(~causal, -math.inf), -1)
    torch.testing.assert_close(ours, want)


def test_alibi_errors():
    with pytest.raises(ValueError, match=r"n_heads: expected a positive int, got 0"):
        alibi_slopes(0)
    with pytest.raises(TypeError, match=r"tq: expected an int, got float"):
        alibi_bias(4, 2.0, 3)


def test_a_rope_table_cached_under_inference_mode_still_enters_autograd():
    # the cached angle table is shared by every later call: made under inference_mode it
    # would be an inference tensor, which autograd cannot save for backward
    positions = torch.arange(5) + 1000  # a table no other test made before
    with torch.inference_mode():
        apply_rope(torch.randn(1, 2, 5, 8), positions)
    x = torch.randn(1, 2, 5, 8, requires_grad=True)
    apply_rope(x, positions).square().sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
