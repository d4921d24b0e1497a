"""RopeExplorer (lesson 15): rotated dot products, the two pair layouts, ALiBi, then the widget."""

import math
import random

import numpy as np
import pytest
import torch

from attention.explore.rope import RopeParams, explore_rope, pair_features
from widgets.explorers.rope import RopeExplorer

# --- RoPE and ALiBi: the pure function ---------------------------------------------------------


def _rope_by_hand(x: torch.Tensor, m: int, layout: str, base: float) -> torch.Tensor:
    """Turn each pair of x (D,) by m * base^(-2i/D) with an explicit 2 x 2 rotation matrix."""
    d = x.shape[0]
    out = x.double().clone()
    for i in range(d // 2):
        a, b = pair_features(d, i, layout)
        angle = m * base ** (-2 * i / d)
        rot = torch.tensor(
            [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]]
        )
        out[[a, b]] = rot.double() @ x[[a, b]].double()
    return out


@pytest.mark.parametrize("d_head,seq_len,base", [(2, 5, 10000.0), (8, 6, 100.0), (16, 16, 1e6)])
def test_rope_scores_are_rotated_dot_products(d_head, seq_len, base):
    r = explore_rope(RopeParams(d_head=d_head, seq_len=seq_len, base=base, pair=0))
    for layout in ("half", "interleaved"):
        for m in (0, seq_len - 1):
            rq = _rope_by_hand(r.query, m, layout, base)
            torch.testing.assert_close(
                r.rotated_query[layout][m].double(), rq, atol=1e-5, rtol=1e-5
            )
            for n in (0, seq_len // 2):
                rk = _rope_by_hand(r.key, n, layout, base)
                want = float(rq @ rk)
                assert float(r.matched[layout].scores[m, n]) == pytest.approx(want, abs=1e-4)
        rq = _rope_by_hand(r.query, 2, "half", base)
        rk = _rope_by_hand(r.key, 1, "interleaved", base)
        assert float(r.mixed.scores[2, 1]) == pytest.approx(float(rq @ rk), abs=1e-4)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("d_head", [4, 16, 64])
def test_matched_layouts_depend_only_on_the_offset_and_mixed_ones_do_not(seed, d_head):
    r = explore_rope(RopeParams(d_head=d_head, seq_len=24, seed=seed, pair=0))
    for s in r.matched.values():
        assert s.relative
        torch.testing.assert_close(s.scores[1:, 1:], s.scores[:-1, :-1], atol=1e-4, rtol=1e-4)
        assert s.spread < 1e-4
    assert not r.mixed.relative and r.mixed.spread > 0.1
    # the offset curve is the diagonal: scores[m, n] for m - n = o
    s = r.matched["half"]
    for o in (-23, -1, 0, 5, 23):
        i = int((s.offsets == o).nonzero())
        assert float(s.offset_mean[i]) == pytest.approx(
            float(s.scores[max(o, 0), max(-o, 0)]), abs=1e-4
        )


def test_with_two_features_both_layouts_are_one_pair():
    r = explore_rope(RopeParams(d_head=2, pair=0))
    assert r.mixed.relative  # (0, 1) is pair 0 either way: nothing to mix up
    torch.testing.assert_close(r.pairing["half"], r.pairing["interleaved"])


def test_pairing_and_the_turning_pair():
    r = explore_rope(RopeParams(d_head=8, seq_len=12, pair=2, base=100.0))
    for layout, table in r.pairing.items():
        assert torch.equal(table.sum(1), torch.ones(8)) and torch.equal(
            table.sum(0), 2 * torch.ones(4)
        )
        a, b = pair_features(8, 2, layout)
        assert table[a, 2] == 1 and table[b, 2] == 1
    assert pair_features(8, 2, "half") == (2, 6) and pair_features(8, 2, "interleaved") == (4, 5)
    assert (
        r.pair_marks.shape == (2, 8, 4)
        and r.pair_marks[0, 6, 2] == 2
        and r.pair_marks[1, 5, 2] == 2
    )
    assert int((r.pair_marks == 2).sum()) == 4  # the chosen pair, in each layout
    assert torch.equal(r.causal, torch.ones(12, 12, dtype=torch.bool).tril())
    radius = r.pair_xy.norm(dim=1)
    torch.testing.assert_close(radius, torch.full((12,), r.pair_radius), atol=1e-5, rtol=1e-5)
    angle = torch.atan2(r.pair_xy[:, 1].double(), r.pair_xy[:, 0].double())
    step = torch.remainder(angle[1:] - angle[:-1], 2 * math.pi)
    theta = 100.0 ** (-2 * 2 / 8)
    torch.testing.assert_close(
        step, torch.full((11,), theta, dtype=torch.float64), atol=1e-5, rtol=0
    )
    assert float(r.angles[2]) == pytest.approx(theta)


def test_alibi_biases_and_weights():
    r = explore_rope(RopeParams(seq_len=10, alibi_heads=8))
    torch.testing.assert_close(r.alibi_slopes, torch.tensor([2.0 ** -(h + 1) for h in range(8)]))
    m, n = 7, 3
    for h in range(8):
        assert float(r.alibi_bias[h, m, n]) == pytest.approx(-float(r.alibi_slopes[h]) * (m - n))
        assert float(r.alibi_bias[h, n, m]) == 0.0  # above the diagonal: masked, shown as 0
    torch.testing.assert_close(r.alibi_weights.sum(-1), torch.ones(8))
    # a steeper slope looks closer: more weight on the last key than a gentler head
    assert bool((r.alibi_weights[:-1, -1] > r.alibi_weights[1:, -1]).all())


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"d_head": 7}, ValueError, r"d_head: RoPE rotates pairs, so it must be even, got 7"),
        ({"pair": 8}, ValueError, r"pair: expected an int in \[0, 7\], got 8"),
        ({"base": 1.0}, ValueError, r"base: expected a float in \[10, 1e\+06\], got 1.0"),
        ({"base": "big"}, TypeError, r"base: expected a float, got str"),
        ({"alibi_heads": 0}, ValueError, r"alibi_heads: expected an int in \[1, 16\]"),
    ],
)
def test_bad_rope_params_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        RopeParams(**kwargs)


# --- RopeExplorer -------------------------------------------------------------------------------


def _assert_rope_view_matches(e: RopeExplorer) -> None:
    assert e.error.message == ""
    p = RopeParams(
        e.d_head.value,
        e.seq_len.value,
        float(e.base.value),
        e.pair.value,
        e.seed.value,
        e.alibi_heads.value,
    )
    assert e.result.params == p
    want = explore_rope(p)
    panels = [want.matched["half"], want.matched["interleaved"], want.mixed]
    for k, s in enumerate(panels):
        np.testing.assert_allclose(e.scores.values[k], s.scores.numpy(), atol=1e-6)
        assert e.scores.panel_titles[k] in s.name
    np.testing.assert_allclose(
        e.offsets.series[0]["values"], panels[0].offset_mean.numpy(), atol=1e-6
    )
    np.testing.assert_allclose(
        e.rotation.series[0]["values"], want.pair_xy[:, 0].numpy(), atol=1e-6
    )
    np.testing.assert_allclose(e.alibi.values, want.alibi_bias.numpy(), atol=1e-7)
    assert len(e.alibi_chart.series) == p.alibi_heads
    assert e.pairing.values.shape == (2, p.d_head, p.d_head // 2)
    assert "NOT a function of m − n" in e.readout.value or p.d_head == 2


def test_rope_explorer_constructible_and_follows_every_control():
    e = RopeExplorer()
    assert "ac-rope-explorer" in e._dom_classes
    assert e.result.params == RopeParams()
    _assert_rope_view_matches(e)
    e.pair.value = 7
    e.d_head.value = 4  # the pair follows the narrower width
    assert e.pair.max == 1 and e.pair.value == 1
    _assert_rope_view_matches(e)
    rng = random.Random(1)
    for _ in range(6):
        e.d_head.value = rng.randrange(2, 65, 2)
        e.seq_len.value = rng.randint(2, 64)
        e.base.value = 10 ** rng.uniform(1, 6)
        e.pair.value = rng.randint(0, e.pair.max)
        e.seed.value = rng.randint(0, 99)
        e.alibi_heads.value = rng.randint(1, 16)
        _assert_rope_view_matches(e)


def test_rope_export(tmp_path):
    e = RopeExplorer(d_head=4, seq_len=5)
    names = sorted(p.name for p in e.export(tmp_path))
    views = ("scores", "by_offset", "pairing", "rotation", "alibi", "alibi_weights")
    assert names == sorted(f"rope-explorer_{v}.{x}" for v in views for x in ("png", "svg", "csv"))
