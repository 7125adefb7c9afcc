"""The public rows' weights fitted to every released margin at once (polars_rap.public.tilt)."""

from __future__ import annotations

import numpy as np
import pytest

from polars_rap.public.reweight import rake
from polars_rap.public.shrinkage import shrunk_margin
from polars_rap.public.tilt import TAU2_FLOOR, prior_variance, tilt_objective, tilted_weights


def reference_objective(theta, index, target, precision, penalty):
    """The negative log posterior in plain NumPy: the tilted weights, their cell shares, the
    squared misfit and the prior."""
    logits = theta[index].sum(axis=1)
    weights = np.exp(logits - logits.max())
    weights /= weights.sum()
    shares = np.bincount(index.ravel(), weights=np.repeat(weights, index.shape[1]), minlength=len(theta))
    return 0.5 * np.sum(precision * (shares - target) ** 2) + 0.5 * np.sum(penalty * theta**2), weights


@pytest.fixture
def problem():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, 500)
    b = (a + (rng.random(500) < 0.3)) % 4
    c = rng.integers(0, 2, 500)
    index = np.stack([a, b + 3, c + 7], axis=1).astype(np.int32)
    return (rng.normal(size=9) * 0.4, index, rng.random(9), rng.random(9) * 100, rng.random(9) * 10)


def test_kernel_matches_the_numpy_reference(problem):
    value, _, weights = tilt_objective(*problem)
    expected, expected_weights = reference_objective(*problem)
    assert value == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-12)


def test_gradient_matches_central_differences(problem):
    theta, *rest = problem
    _, gradient, _ = tilt_objective(theta, *rest)
    step = 1e-6
    numeric = [(reference_objective(theta + e, *rest)[0] - reference_objective(theta - e, *rest)[0]) / (2 * step)
               for e in np.eye(len(theta)) * step]
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-7)


def test_prior_variance_is_the_moment_estimate_with_a_floor():
    public = np.array([0.5, 0.3, 0.2])
    noisy = np.array([0.6, 0.25, 0.15])
    assert prior_variance(noisy, 0.01, public) == pytest.approx((0.01 + 0.0025 + 0.0025 - 3e-4) / 1.0, rel=1e-12)
    assert prior_variance(public + 0.001, 0.01, public) == TAU2_FLOOR  # within the noise


def test_exact_releases_are_raked_to():
    """Released without noise, every margin is a constraint: the same weights as raking the
    public rows to them from equal weights."""
    rng = np.random.default_rng(0)
    cells = [rng.integers(0, 3, 2000), rng.integers(0, 4, 2000)]
    targets = [np.array([0.5, 0.3, 0.2]), np.array([0.1, 0.2, 0.3, 0.4])]
    weights = tilted_weights(cells, [(t, 0.0) for t in targets])
    np.testing.assert_allclose(weights, rake(cells, targets), rtol=1e-12)
    for cell, target in zip(cells, targets, strict=True):
        np.testing.assert_allclose(np.bincount(cell, weights=weights, minlength=len(target)), target, atol=1e-9)


def test_one_margin_alone_is_the_empirical_bayes_estimate_to_first_order():
    """With a single margin the mode's shares are the per-cell shrinkage of shrunk_margin up to
    the tilt's curvature: close at a small deviation."""
    rng = np.random.default_rng(1)
    cell = rng.choice(4, size=40_000, p=[0.4, 0.3, 0.2, 0.1])
    public = np.bincount(cell, minlength=4) / len(cell)
    noisy = public + np.array([0.02, -0.01, -0.004, -0.006])
    weights = tilted_weights([cell], [(noisy, 0.005)])
    shares = np.bincount(cell, weights=weights, minlength=4)
    np.testing.assert_allclose(shares, shrunk_margin(noisy, 0.005, public), atol=2e-3)
    assert np.abs(shares - noisy).sum() < np.abs(public - noisy).sum()  # pulled toward the release


def test_a_precise_release_carries_to_an_associated_margin():
    """Two columns that go together in the public rows (b equals a in 90% of them): a precise
    release of a's margin moves b's estimate toward the truth even where b's own release is
    too noisy to, which shrinking b alone cannot."""
    rng = np.random.default_rng(2)
    a = rng.integers(0, 2, 20_000)
    b = np.where(rng.random(20_000) < 0.9, a, 1 - a)
    true_a, true_b = np.array([0.7, 0.3]), np.array([0.66, 0.34])  # the private rows: a tilted toward 0
    noisy_b, std_b = true_b + np.array([-0.05, 0.05]), 0.08  # b's release: far off, and noisy
    released = [(true_a, 0.001), (noisy_b, std_b)]
    joint = np.bincount(b, weights=tilted_weights([a, b], released), minlength=2)
    public_b = np.bincount(b, minlength=2) / len(b)
    alone = shrunk_margin(noisy_b, std_b, public_b)
    assert np.abs(joint - true_b).sum() < 0.5 * np.abs(alone - true_b).sum()


def test_a_cell_no_public_row_holds_gets_no_weight():
    cells = [np.array([0, 0, 1, 1, 0, 1])]
    weights = tilted_weights(cells, [(np.array([0.3, 0.3, 0.4]), 0.01)])
    assert weights.sum() == pytest.approx(1.0) and np.all(weights > 0)
    assert np.isfinite(weights).all()


def test_a_fit_stopped_short_of_the_mode_says_so(monkeypatch, caplog):
    import polars_rap.public.tilt as public_tilt

    monkeypatch.setattr(public_tilt, "MAX_ITERATIONS", 1)
    rng = np.random.default_rng(4)
    cells = [rng.integers(0, 3, 1000), rng.integers(0, 4, 1000)]
    released = [(np.array([0.5, 0.3, 0.2]), 0.01), (np.array([0.1, 0.2, 0.3, 0.4]), 0.01)]
    with caplog.at_level("INFO", logger="polars_rap.public.tilt"):
        weights = tilted_weights(cells, released)
    assert weights.sum() == pytest.approx(1.0)
    assert "short of the mode" in caplog.text


def test_a_rare_code_whose_release_falls_below_zero_keeps_its_public_share():
    """A binary feature x label table whose rare code (2% of the public rows) is released below 0
    in both label cells, within the noise: the rows keep most of the public share (the prior holds
    the code's log-factors near 0), where a clipped estimate would hold it at 0 and lose the code."""
    rng = np.random.default_rng(5)
    feature = (rng.random(50_000) < 0.02).astype(np.int64)
    label = rng.integers(0, 2, 50_000)
    table = feature * 2 + label
    public = np.bincount(table, minlength=4) / len(table)
    noisy = np.array([public[0] + 0.013, public[1] + 0.013, -0.004, -0.003])  # the rare code's cells below 0
    weights = tilted_weights([table, label], [(noisy, 0.008), (np.array([0.5, 0.5]), 0.002)])
    rare = np.bincount(feature, weights=weights, minlength=2)[1]
    assert rare > 0.5 * 0.02


def test_the_fit_is_the_same_whatever_the_threads():
    """The kernel sums the rows in fixed parts and adds them in order: one thread or several give
    the same weights to the last bit (a fit reproducible from one machine to another)."""
    import numba

    rng = np.random.default_rng(8)
    cells = [rng.integers(0, 5, 30_000), rng.integers(0, 3, 30_000), rng.integers(0, 7, 30_000)]
    released = [(np.array([0.3, 0.25, 0.2, 0.15, 0.1]), 0.01), (np.array([0.5, 0.3, 0.2]), 0.02),
                (np.full(7, 1 / 7) + np.linspace(-0.03, 0.03, 7), 0.01)]
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        alone = tilted_weights(cells, released)
        numba.set_num_threads(threads)
        together = tilted_weights(cells, released)
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(alone, together)
