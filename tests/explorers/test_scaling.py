"""ScalingExplorer and explore_scaling: the sqrt(d_k) facts as numbers, and the view = the maths."""

import math
import random

import numpy as np
import pytest
import torch

from attention.explore import D_K_MAX, N_KEYS_MAX, ScalingParams, explore_scaling
from widgets.explorers.scaling import ScalingExplorer

# --- the pure function ----------------------------------------------------------------------


@pytest.mark.parametrize("d_k", [1, 4, 16, 64, 256, 512])
def test_unscaled_variance_grows_like_d_k_and_scaled_stays_near_one(d_k):
    r = explore_scaling(ScalingParams(d_k=d_k, n_samples=32768, seed=1))
    # var(q·k) = d_k exactly; 32768 pairs give a standard error below 2% at every d_k.
    assert r.unscaled.variance == pytest.approx(d_k, rel=0.08)
    assert r.scaled.variance == pytest.approx(1.0, rel=0.08)
    assert r.var_unscaled_by_d_k[d_k - 1] == pytest.approx(r.unscaled.variance, rel=1e-4)


def test_variance_curve_over_every_d_k():
    r = explore_scaling(ScalingParams(n_samples=32768, seed=2))
    ratio = r.var_unscaled_by_d_k / r.d_k_grid  # should be ~1 everywhere
    assert r.d_k_grid.tolist() == list(range(1, D_K_MAX + 1))
    assert float(ratio.min()) > 0.85 and float(ratio.max()) < 1.15
    torch.testing.assert_close(r.var_scaled_by_d_k, ratio)
    # the unscaled variance really grows: ~512x from d_k = 1 to d_k = 512
    assert float(r.var_unscaled_by_d_k[-1] / r.var_unscaled_by_d_k[0]) > 400


def test_samples_are_the_dot_products_of_the_seeded_draws():
    p = ScalingParams(d_k=37, n_samples=256, seed=5)
    r = explore_scaling(p)
    g = torch.Generator().manual_seed(5)  # the draw order documented by _scaling_draws
    q = torch.randn(256, D_K_MAX, generator=g)
    k = torch.randn(256, D_K_MAX, generator=g)
    want = (q[:, :37] * k[:, :37]).sum(-1)
    torch.testing.assert_close(r.unscaled.samples, want, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(r.scaled.samples, want / math.sqrt(37), atol=1e-4, rtol=1e-4)
    row_q = torch.randn(D_K_MAX, generator=g)
    row_k = torch.randn(N_KEYS_MAX, D_K_MAX, generator=g)
    want_row = row_k[: p.n_keys, :37] @ row_q[:37]
    torch.testing.assert_close(r.unscaled.row_scores, want_row, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("fixed_axis", [True, False])
def test_histograms_count_the_samples(fixed_axis):
    r = explore_scaling(ScalingParams(d_k=100, fixed_axis=fixed_axis))
    edges = r.bin_edges.double().numpy()
    half = 4 * math.sqrt(D_K_MAX if fixed_axis else 100)
    assert edges[0] == pytest.approx(-half) and edges[-1] == pytest.approx(half)
    for side in (r.unscaled, r.scaled):
        counts, _ = np.histogram(side.samples.double().numpy(), bins=edges)
        np.testing.assert_allclose(side.hist.numpy(), counts / side.samples.numel(), atol=2e-3)
        assert float(side.hist.sum()) <= 1.0 + 1e-6
    # the scaled scores sit in a narrower band than the unscaled ones
    centers = (r.bin_edges[:-1] + r.bin_edges[1:]) / 2
    spread = [float((side.hist * centers**2).sum()) for side in (r.unscaled, r.scaled)]
    assert spread[0] > 20 * spread[1]


def _softmax_jacobian_grad(scores, upstream, t):
    """d(upstream · softmax(s / t)) / ds from the closed-form Jacobian (diag(p) - p p^T) / t."""
    p = torch.softmax(scores.double() / t, -1)
    jac = (torch.diag(p) - torch.outer(p, p)) / t
    return jac.T @ upstream.double()


@pytest.mark.parametrize("d_k,n_keys,t", [(1, 2, 1.0), (64, 8, 0.5), (512, 32, 3.0)])
def test_row_softmax_entropy_and_gradient(d_k, n_keys, t):
    r = explore_scaling(ScalingParams(d_k=d_k, n_keys=n_keys, temperature=t, seed=3))
    torch.testing.assert_close(r.scaled.row_scores, r.unscaled.row_scores / math.sqrt(d_k))
    for side in (r.unscaled, r.scaled):
        torch.testing.assert_close(side.row_weights, torch.softmax(side.row_scores / t, -1))
        assert float(side.row_weights.sum()) == pytest.approx(1.0, abs=1e-5)
        p = side.row_weights.double()
        entropy = float(-(p[p > 0] * p[p > 0].log()).sum())
        assert side.row_entropy == pytest.approx(entropy, abs=1e-5)
        assert 0.0 <= side.row_entropy <= r.max_entropy + 1e-6
    upstream = _row_upstream(3, n_keys)
    for side in (r.unscaled, r.scaled):
        want = _softmax_jacobian_grad(side.row_scores, upstream, t)
        torch.testing.assert_close(side.row_grad.double(), want, atol=1e-5, rtol=1e-4)
        assert side.row_grad_norm == pytest.approx(float(want.norm()), abs=1e-5)
    assert r.max_entropy == pytest.approx(math.log(n_keys))


def _row_upstream(seed, n_keys, n_samples=2048):
    g = torch.Generator().manual_seed(seed)
    torch.randn(n_samples, D_K_MAX, generator=g)  # q
    torch.randn(n_samples, D_K_MAX, generator=g)  # k
    torch.randn(D_K_MAX, generator=g)  # row q
    torch.randn(N_KEYS_MAX, D_K_MAX, generator=g)  # row keys
    torch.randn(n_samples, generator=g)  # pool upstream
    return torch.randn(N_KEYS_MAX, generator=g)[:n_keys]


def test_wide_unscaled_scores_saturate_the_softmax_and_starve_the_gradient():
    r = explore_scaling(ScalingParams(d_k=512, n_keys=8, n_samples=8192))
    un, sc = r.unscaled, r.scaled
    assert un.saturated_fraction > 0.5 and sc.saturated_fraction < 0.05
    assert un.mean_max_weight > 0.9 > sc.mean_max_weight
    assert un.mean_entropy < 0.3 < 1.0 < sc.mean_entropy < r.max_entropy
    assert un.mean_grad_norm < sc.mean_grad_norm / 4
    # at d_k = 1 the two are the same computation
    r1 = explore_scaling(ScalingParams(d_k=1))
    assert r1.unscaled.mean_grad_norm == pytest.approx(r1.scaled.mean_grad_norm)


def test_same_params_same_numbers_and_seed_matters():
    a = explore_scaling(ScalingParams(d_k=20, seed=4))
    b = explore_scaling(ScalingParams(d_k=20, seed=4))
    c = explore_scaling(ScalingParams(d_k=20, seed=5))
    assert torch.equal(a.unscaled.samples, b.unscaled.samples)
    assert not torch.equal(a.unscaled.samples, c.unscaled.samples)


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"d_k": 0}, ValueError, r"d_k: expected an int in \[1, 512\], got 0"),
        ({"d_k": 513}, ValueError, r"d_k: expected an int in \[1, 512\], got 513"),
        ({"d_k": 2.0}, TypeError, r"d_k: expected an int, got float"),
        ({"n_keys": 1}, ValueError, r"n_keys: expected an int in \[2, 32\], got 1"),
        ({"temperature": 0.0}, ValueError, r"temperature: expected a float in \[0.01, 100\]"),
        ({"temperature": float("nan")}, ValueError, r"temperature: expected a float"),
        ({"temperature": "1"}, TypeError, r"temperature: expected a float, got str"),
        ({"fixed_axis": 1}, TypeError, r"fixed_axis: expected a bool, got int"),
        ({"seed": -1}, ValueError, r"seed: expected an int in"),
    ],
)
def test_bad_params_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        ScalingParams(**kwargs)


# --- the widget -----------------------------------------------------------------------------


def _assert_view_matches(e: ScalingExplorer) -> None:
    """Everything the charts hold equals explore_scaling for the controls' current values."""
    assert e.error.message == ""
    p = ScalingParams(
        d_k=e.d_k.value,
        n_keys=e.n_keys.value,
        temperature=float(e.temperature.value),
        seed=e.seed.value,
        fixed_axis=e.fixed_axis.value,
    )
    assert e.result.params == p
    want = explore_scaling(p)
    hist = e.histogram.series
    assert [s["name"] for s in hist] == ["q·k", "q·k / √d_k"]
    np.testing.assert_allclose(hist[0]["values"], want.unscaled.hist.numpy(), atol=1e-7)
    np.testing.assert_allclose(hist[1]["values"], want.scaled.hist.numpy(), atol=1e-7)
    assert sum(hist[1]["values"]) > 0.9  # the scaled histogram is never empty
    centers = ((want.bin_edges[:-1] + want.bin_edges[1:]) / 2).numpy()
    np.testing.assert_allclose(e.histogram.x, centers, atol=1e-5)
    rows = e.row_chart.series
    np.testing.assert_allclose(rows[0]["values"], want.unscaled.row_weights.numpy(), atol=1e-7)
    np.testing.assert_allclose(rows[1]["values"], want.scaled.row_weights.numpy(), atol=1e-7)
    assert e.row_chart.x == list(range(p.n_keys))
    var = e.variance_chart.series
    np.testing.assert_allclose(var[0]["values"], want.var_unscaled_by_d_k.numpy(), rtol=1e-6)
    np.testing.assert_allclose(var[1]["values"], want.var_scaled_by_d_k.numpy(), rtol=1e-6)
    assert e.variance_chart.markers == [{"x": float(p.d_k), "label": f"d_k = {p.d_k}"}]
    for chart in (e.histogram, e.row_chart, e.variance_chart):
        values = [v for s in chart.series for v in s["values"]]
        assert values and all(v is not None and math.isfinite(v) for v in values)
    assert f"{want.unscaled.variance:.3g}" in e.readout.value
    assert f"{want.scaled.row_entropy:.3f}" in e.readout.value
    assert f"{want.unscaled.mean_grad_norm:.3g}" in e.readout.value


def test_constructible_without_arguments_and_displayable():
    import ipywidgets

    e = ScalingExplorer()
    assert isinstance(e, ipywidgets.VBox)
    assert "ac-scaling-explorer" in e._dom_classes
    assert e.result.params == ScalingParams()
    _assert_view_matches(e)


def test_moving_d_k_updates_every_panel():
    e = ScalingExplorer()
    before = list(e.histogram.series[0]["values"])
    e.d_k.value = 512
    assert e.result.params.d_k == 512
    assert e.histogram.series[0]["values"] != before
    _assert_view_matches(e)
    assert "d_k = 512" in e.readout.value
    e.fixed_axis.value = False
    assert e.histogram.x_range[1] == pytest.approx(4 * math.sqrt(512))
    _assert_view_matches(e)


def test_control_ranges_make_invalid_settings_unreachable():
    e = ScalingExplorer()
    assert (e.d_k.min, e.d_k.max) == (1, D_K_MAX)
    assert (e.n_keys.min, e.n_keys.max) == (2, N_KEYS_MAX)
    e.d_k.value = 10_000  # a slider clamps: the widget can never hold d_k > 512
    e.temperature.value = 1e-9
    assert e.d_k.value == D_K_MAX
    _assert_view_matches(e)


def test_seeded_sweep_over_every_control():
    e = ScalingExplorer()
    rng = random.Random(0)
    corners = [
        dict(d_k=1, n_keys=2, temperature=0.1, seed=0, fixed_axis=True),
        dict(d_k=512, n_keys=32, temperature=0.1, seed=99, fixed_axis=False),
        dict(d_k=512, n_keys=2, temperature=10.0, seed=0, fixed_axis=True),
        dict(d_k=1, n_keys=32, temperature=10.0, seed=99, fixed_axis=False),
    ]
    randoms = [
        dict(
            d_k=rng.randint(1, 512),
            n_keys=rng.randint(2, 32),
            temperature=10 ** rng.uniform(-1, 1),
            seed=rng.choice([0, 1, 99]),
            fixed_axis=rng.random() < 0.5,
        )
        for _ in range(8)
    ]
    for setting in corners + randoms:
        for name, value in setting.items():
            getattr(e, name).value = value
        _assert_view_matches(e)


def test_export_saves_each_chart_as_png_svg_and_csv(tmp_path):
    import csv

    from matplotlib.image import imread

    e = ScalingExplorer(d_k=8)
    paths = e.export(tmp_path)
    names = sorted(p.name for p in paths)
    assert names == sorted(
        f"scaling-explorer_{chart}.{ext}"
        for chart in ("histogram", "row_weights", "variance")
        for ext in ("png", "svg", "csv")
    )
    with (tmp_path / "scaling-explorer_histogram.csv").open(encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["score", "q·k", "q·k / √d_k"]
    assert len(rows) == 1 + e.result.params.n_bins
    got = np.array([[float(v) for v in row[1:]] for row in rows[1:]])
    np.testing.assert_allclose(got[:, 0], e.result.unscaled.hist.numpy(), atol=1e-7)
    np.testing.assert_allclose(got[:, 1], e.result.scaled.hist.numpy(), atol=1e-7)
    image = imread(tmp_path / "scaling-explorer_variance.png")
    assert image.ndim == 3 and image.shape[0] > 100 and image.std() > 0.01  # not blank
    assert "<svg" in (tmp_path / "scaling-explorer_row_weights.svg").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"temperature": 50.0}, r"temperature: expected a value in \[0.1, 10\], got 50.0"),
        ({"seed": 500}, r"seed: expected a value in \[0, 99\], got 500"),
        ({"d_k": 0}, r"d_k: expected an int in \[1, 512\], got 0"),  # the params refuse it first
    ],
)
def test_starting_values_outside_the_controls_are_refused_not_clamped(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ScalingExplorer(**kwargs)
