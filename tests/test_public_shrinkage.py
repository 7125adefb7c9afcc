"""Each measured margin estimated alone (``polars_rap.public.shrinkage``, issue 19): the
empirical-Bayes shrinkage toward the public table's margin, a feature x label table's
association prior and its agreement with the label's margin, against their formulas."""

import math

import numpy as np

from polars_rap.public import shrinkage as public_shrinkage
from polars_rap.public.margins import MarginCounts, margin_names
from polars_rap.public.shrinkage import shrunk_margin

import public_rows  # tests/public_rows.py: the public-table tests' rows, fixtures and run()

declared, domain, private = public_rows.declared, public_rows.domain, public_rows.private  # fixtures: read COLUMNS
COLUMNS = ["AGEP", "SEX", "MAR", "SCHL", "RAC1P", "JWMNP", "PINCP_gt_50000"]


# ------------------------------------------------------------------ empirical Bayes
def test_shrunk_margin_matches_its_formula_pulling_small_cells_hardest_and_keeping_cells_the_public_lacks():
    public = np.array([0.6, 0.3, 0.1, 0.0])
    noisy = np.array([0.5, 0.35, 0.13, 0.02])
    std = 0.03
    gap = noisy - public
    tau2 = (float(np.sum(gap**2)) - 4 * std**2) / 1.0  # the public shares sum to 1
    factor = tau2 * public / (tau2 * public + std**2)  # 0.87, 0.77, 0.53
    factor[3] = 1.0  # a cell the public lacks keeps its measurement
    expected = (public + factor * gap) / (public + factor * gap).sum()
    np.testing.assert_allclose(shrunk_margin(noisy, std, public), expected, rtol=1e-12)
    assert 1 > factor[0] > factor[1] > factor[2]


def test_shrunk_margin_beats_one_factor_per_margin_when_deviations_scale_with_the_share():
    """The prior it assumes: 40 cells of very unequal public shares, deviations ~ sqrt(share)."""
    rng = np.random.default_rng(3)
    public = rng.dirichlet(np.full(40, 0.3))
    std, errors = 0.004, {"per cell": [], "one factor": []}
    for _ in range(200):
        true = np.clip(public + rng.normal(0, 0.03 * np.sqrt(public)), 0, None)
        true /= true.sum()
        noisy = true + rng.normal(0, std, 40)
        gap = noisy - public
        one = public + max(0.0, 1 - 40 * std**2 / float(np.sum(gap**2))) * gap
        errors["per cell"].append(np.abs(shrunk_margin(noisy, std, public) - true).sum())
        errors["one factor"].append(np.abs(np.clip(one, 0, None) / np.clip(one, 0, None).sum() - true).sum())
    assert np.mean(errors["per cell"]) < 0.9 * np.mean(errors["one factor"])


def test_shrunk_margin_keeps_the_public_margin_within_the_noise_and_the_measurement_beyond_it():
    public = np.array([0.25, 0.25, 0.25, 0.25])
    np.testing.assert_array_equal(shrunk_margin(public + [0.01, -0.01, 0.0, 0.0], 0.05, public), public)
    far = np.array([0.7, 0.1, 0.1, 0.1])
    assert np.abs(shrunk_margin(far, 1e-4, public) - far).max() < 1e-6
    assert np.array_equal(shrunk_margin(public, 0.01, public), public)  # no gap: nothing to divide
    assert np.array_equal(shrunk_margin(public, 0.0, public), public)  # nor with an exact release
    np.testing.assert_allclose(shrunk_margin(far, 0.0, public), far, rtol=1e-12)


def test_a_table_split_by_the_label_is_made_to_agree_with_the_labels_margin(domain):
    """SEX x label's columns are scaled to the label's margin (each feature's share within a
    label kept); a label column the table holds nothing of gets the table's feature shares; the
    other margins pass through unchanged."""
    names = margin_names(domain)
    targets = [np.full(len(c), 1.0 / len(c)) for c in MarginCounts(domain).counts]
    sex, label = names.index("SEX x PINCP_gt_50000"), names.index("PINCP_gt_50000")
    targets[sex] = np.array([0.3, 0.2, 0.4, 0.1])  # (SEX code 0, no), (0, yes), (1, no), (1, yes)
    targets[label] = np.array([0.6, 0.4])
    out = public_shrinkage.label_consistent(targets, domain)
    table = out[sex].reshape(2, 2)
    np.testing.assert_allclose(table.sum(axis=0), [0.6, 0.4], atol=1e-15)
    np.testing.assert_allclose(table[:, 0] / table[:, 0].sum(), [0.3 / 0.7, 0.4 / 0.7], atol=1e-15)
    np.testing.assert_allclose(table[:, 1] / table[:, 1].sum(), [0.2 / 0.3, 0.1 / 0.3], atol=1e-15)
    assert all(out[m] is targets[m] for m in range(len(names)) if m != sex)
    targets[sex] = np.array([0.5, 0.0, 0.5, 0.0])  # no share of "yes"
    np.testing.assert_allclose(public_shrinkage.label_consistent(targets, domain)[sex], [0.3, 0.2, 0.3, 0.2],
                               atol=1e-15)


def test_the_association_prior_is_the_public_table_with_the_released_margins():
    """Raking keeps the public 2 x 2 table's odds ratio and takes the feature's estimated margin
    and the label's estimate as its margins; an empty public table is returned as it is, and a
    feature margin of no share leaves the public table's own feature shares."""
    public = np.array([0.4, 0.1, 0.2, 0.3])
    prior = public_shrinkage.association_prior(public, np.array([0.34, 0.66]), np.array([0.7, 0.3])).reshape(2, 2)
    np.testing.assert_allclose(prior.sum(axis=1), [0.34, 0.66], atol=1e-12)
    np.testing.assert_allclose(prior.sum(axis=0), [0.7, 0.3], atol=1e-12)
    odds = prior[0, 0] * prior[1, 1] / (prior[0, 1] * prior[1, 0])
    assert math.isclose(odds, 0.4 * 0.3 / (0.1 * 0.2), rel_tol=1e-9)
    assert public_shrinkage.association_prior(np.zeros(4), np.array([0.34, 0.66]), np.array([0.7, 0.3])).sum() == 0
    same = public_shrinkage.association_prior(public, np.zeros(2), np.array([0.5, 0.5])).reshape(2, 2)
    np.testing.assert_allclose(same.sum(axis=1), [0.5, 0.5], atol=1e-12)


def test_a_rare_code_of_a_split_feature_keeps_its_share_when_its_sum_is_noise():
    """A disability flag's rare code (1.5% of the rows, public 2%) whose released cells sum below
    0 (noise std 0.008 a cell, as on acs-income-CA at ε = 0.25): its feature shares are the
    table's sums shrunk toward the public ones (std 0.008 * sqrt(2) for a sum of two cells), so
    the code keeps most of the public share (0.014 of 0.02: the large gap on the other code draws
    the factor up), where the raw sums, clipped, gave it none. Exact releases keep their sums."""
    public = np.array([0.98 * 0.7, 0.98 * 0.3, 0.02 * 0.8, 0.02 * 0.2])  # (code 0, label no), ..., (1, yes)
    noisy = np.array([0.69, 0.32, -0.006, -0.004])  # the rare code's true cells 0.012 / 0.003, drawn low
    features = public_shrinkage._feature_shares(noisy, 0.008, public, 2)
    np.testing.assert_allclose(features, shrunk_margin(np.array([1.01, -0.01]), 0.008 * math.sqrt(2), [0.98, 0.02]),
                               rtol=1e-15)
    assert 0.01 < features[1] < 0.02
    table = public_shrinkage.association_prior(public, features, np.array([0.7, 0.3])).reshape(2, 2)
    np.testing.assert_allclose(table[1].sum(), features[1], rtol=1e-9)  # the prior holds the code's share
    assert shrunk_margin(noisy, 0.008, table.ravel()).reshape(2, 2)[1].sum() > 0.01  # and so does the estimate
    exact = np.array([0.5, 0.3, 0.15, 0.05])
    np.testing.assert_allclose(public_shrinkage._feature_shares(exact, 0.0, public, 2), [0.8, 0.2], atol=1e-15)


def test_shrunk_margin_clips_negative_shares_and_sums_to_one():
    public = np.array([0.6, 0.3, 0.1])
    out = shrunk_margin(np.array([0.9, 0.3, -0.2]), 0.01, public)
    assert out.min() == 0.0 and math.isclose(out.sum(), 1.0, rel_tol=1e-12) and out[2] == 0.0
