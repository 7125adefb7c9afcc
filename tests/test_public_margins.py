"""public_use="margins" (issue 19): the one-way margins measured for the public rows, their
James-Stein estimates, the raked candidate, and the release's charges against their math."""

import math
from unittest import mock

import numpy as np
import pytest

import polars_rap
from polars_rap import DataError, ProjectionConfig, privacy, public_margins
from polars_rap.domain import Domain
from polars_rap.encoding import encode
from polars_rap.privacy import PrivacyLedger, split_budget
from polars_rap.public_margins import (
    MARGIN_STD, MAX_SHARE, MIN_SHARE, NUMERIC_CELLS, NUMERIC_WEIGHT, MarginCounts, margin_names, margins_share,
    measured_candidate, measured_margins, release_margins, shrunk_margin,
)
from polars_rap.public_prior import open_public, read_public
from polars_rap.public_reweight import CHECK_SHARE, margin_cells, rake

COLUMNS = ["AGEP", "SEX", "MAR", "SCHL", "RAC1P", "JWMNP", "PINCP_gt_50000"]
LABELS = ["PINCP_gt_50000"]
FAST = dict(relaxed_rows=60, rounds_lt=2, n_linear_thresholds=100, n_mixed_marginals=20,
            projection=ProjectionConfig(max_steps=8), progress=False)


@pytest.fixture(scope="module")
def declared(task):
    return {name: task.domain[name] for name in COLUMNS}


@pytest.fixture(scope="module")
def private(task):
    return task.frame.select(COLUMNS).sample(1500, seed=3)


@pytest.fixture(scope="module")
def public(task):
    return task.frame.select(COLUMNS).sample(1200, seed=11)


@pytest.fixture(scope="module")
def domain(private, declared):
    return Domain.from_mapping(private.schema, declared, LABELS)


def run(private, declared, **options):
    return polars_rap.synthesize(private, delta=1e-7, domain=declared, labels=LABELS,
                                 **{"epsilon": 1.0, "seed": 0, **FAST, **options})


# ------------------------------------------------------------------ the margins and their counts
def test_the_margins_are_every_categorical_block_but_null_indicators_then_each_numeric(domain):
    """JWMNP is nullable: its null indicator block is not measured apart (its numeric margin's
    null cell holds it); AGEP and JWMNP have NUMERIC_CELLS cells and a null cell."""
    assert margin_names(domain) == ["SEX", "MAR", "SCHL", "RAC1P", "PINCP_gt_50000", "AGEP", "JWMNP"]
    counts = MarginCounts(domain)
    assert [len(c) for c in counts.counts] == [*domain.block_sizes[:5], NUMERIC_CELLS + 1, NUMERIC_CELLS + 1]


def test_margin_counts_are_the_rows_cells_whatever_the_batches(private, domain):
    encoded = encode(private, domain)
    whole = MarginCounts(domain)
    whole.add(encoded)
    cells = margin_cells(encoded.codes, encoded.numerics, domain, numeric_cells=NUMERIC_CELLS)
    kept = [0, 1, 2, 3, 4, 6, 7]  # blocks SEX..PINCP, (JWMNP's indicator left out), AGEP, JWMNP
    for total, m in zip(whole.counts, kept, strict=True):
        np.testing.assert_array_equal(total, np.bincount(cells[m], minlength=len(total)))
        assert total.sum() == private.height
    # a null JWMNP falls in its null cell, a value on its mapped cell
    assert whole.counts[-1][NUMERIC_CELLS] == private["JWMNP"].null_count()
    parts = whole.fresh()
    for start in range(0, private.height, 400):
        part = parts.fresh()
        part.add(encode(private.slice(start, 400), domain))
        parts.merge(part)
    for a, b in zip(parts.counts, whole.counts, strict=True):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ budget and release, to the last float
def test_margins_share_is_the_precision_rule_capped_and_floored(domain):
    weights = 5 * 1.0 + 2 * NUMERIC_WEIGHT  # five categorical margins, two numeric
    n, rho = 10_000, 0.02
    needed = weights / (rho * n**2 * MARGIN_STD**2)
    assert MIN_SHARE < margins_share(domain, n, rho) == needed < MAX_SHARE
    # at that share a categorical margin's std is MARGIN_STD
    assert math.isclose(math.sqrt(2) / n / math.sqrt(2 * rho * needed / weights), MARGIN_STD, rel_tol=1e-12)
    assert margins_share(domain, n, rho / 1000) == MAX_SHARE
    assert weights / (5 * rho * n**2 * MARGIN_STD**2) < MIN_SHARE and margins_share(domain, n, 5 * rho) == 0.0


def test_release_charges_each_margin_its_weight_and_the_stated_noise(private, domain):
    encoded = encode(private, domain)
    counts = MarginCounts(domain)
    counts.add(encoded)
    ledger = PrivacyLedger(1.0)
    rho = 0.3
    released = release_margins(counts, private.height, rho, ledger, np.random.default_rng(0))
    weights = np.array([1.0] * 5 + [NUMERIC_WEIGHT] * 2)
    assert [e.rho for e in ledger.events] == [rho * float(w / weights.sum()) for w in weights]
    assert math.isclose(math.fsum(e.rho for e in ledger.events), rho, rel_tol=1e-15)
    assert all(e.mechanism == "gaussian" for e in ledger.events)
    assert ledger.events[0].description == "public margins: SEX's one-way margin"
    for (noisy, std), event, total in zip(released, ledger.events, counts.counts, strict=True):
        assert math.isclose(std, math.sqrt(2.0) / private.height / math.sqrt(2 * event.rho), rel_tol=1e-12)
        assert noisy.shape == total.shape
        np.testing.assert_allclose(noisy * private.height, np.rint(noisy * private.height), atol=1e-6)  # counts


def test_the_release_is_the_gaussian_mechanism_on_the_true_shares(private, domain):
    """Each margin goes through privacy.gaussian_mechanism with the true shares, L2 sensitivity
    sqrt(2)/n (two cells move by one count) and n_rows = n."""
    encoded = encode(private, domain)
    counts = MarginCounts(domain)
    counts.add(encoded)
    seen = []

    def spy(values, l2_sensitivity, rho, ledger, rng, description="", round=None, *, n_rows=1):
        seen.append((values.copy(), l2_sensitivity, n_rows))
        return privacy.gaussian_mechanism(values, l2_sensitivity, rho, ledger, rng, description, round,
                                          n_rows=n_rows)

    with mock.patch.object(public_margins, "gaussian_mechanism", spy):
        release_margins(counts, private.height, 0.2, PrivacyLedger(1.0), np.random.default_rng(1))
    n = private.height
    for (values, l2, n_rows), total in zip(seen, counts.counts, strict=True):
        np.testing.assert_array_equal(values, total / float(n))
        assert l2 == math.sqrt(2.0) / n and round((l2 * n) ** 2) == 2 and n_rows == n


# ------------------------------------------------------------------ James-Stein
def test_shrunk_margin_matches_its_formula():
    public = np.array([0.5, 0.3, 0.2])
    noisy = np.array([0.62, 0.25, 0.13])
    std = 0.04
    gap = noisy - public
    factor = 1 - 3 * std**2 / float(np.sum(gap**2))
    np.testing.assert_allclose(shrunk_margin(noisy, std, public), public + factor * gap, rtol=1e-12)
    assert 0 < factor < 1


def test_shrunk_margin_keeps_the_public_margin_within_the_noise_and_the_measurement_beyond_it():
    public = np.array([0.25, 0.25, 0.25, 0.25])
    np.testing.assert_array_equal(shrunk_margin(public + [0.01, -0.01, 0.0, 0.0], 0.05, public), public)
    far = np.array([0.7, 0.1, 0.1, 0.1])
    assert np.abs(shrunk_margin(far, 1e-4, public) - far).max() < 1e-6
    assert np.array_equal(shrunk_margin(public, 0.01, public), public)  # no gap: nothing to divide


def test_shrunk_margin_clips_negative_shares_and_sums_to_one():
    public = np.array([0.6, 0.3, 0.1])
    out = shrunk_margin(np.array([0.9, 0.3, -0.2]), 0.01, public)
    assert out.min() == 0.0 and math.isclose(out.sum(), 1.0, rel_tol=1e-12) and out[2] == 0.0


# ------------------------------------------------------------------ the candidate
def test_exact_margins_rake_the_public_rows_to_the_private_margins(private, public, declared, domain):
    """Released without noise (std 0), the targets are the private margins; the raked public
    rows' weighted margins match them exactly on every margin whose cells the public rows all
    hold (SEX, MAR, the label, JWMNP here; the sample lacks a few SCHL, RAC1P and AGEP cells),
    and the candidate draws rows by those weights."""
    encoded = encode(private, domain)
    counts = MarginCounts(domain)
    counts.add(encoded)
    table = read_public(open_public(public, declared, COLUMNS), domain)
    exact = [(total / private.height, 0.0) for total in counts.counts]
    cells, targets = measured_margins(table, exact, domain)
    for target, total in zip(targets, counts.counts, strict=True):
        np.testing.assert_allclose(target, total / private.height, atol=1e-15)
    weights = rake(cells, targets)
    held = 0
    for cell, target in zip(cells, targets, strict=True):
        if np.all(np.bincount(cell, minlength=len(target))[target > 0] > 0):
            np.testing.assert_allclose(np.bincount(cell, weights=weights, minlength=len(target)), target, atol=1e-12)
            held += 1
    assert held == 4
    rows, effective = measured_candidate(table, exact, domain, 4000, np.random.default_rng(0))
    assert rows.shape == (4000, domain.n_coords) and 1.0 <= effective <= public.height
    assert effective == round(float(1.0 / np.square(weights).sum()), 1)
    drawn = rows[:, :domain.block_sizes[0]].mean(axis=0)  # SEX is the first block: within sampling noise
    np.testing.assert_allclose(drawn, targets[0], atol=0.02)


# ------------------------------------------------------------------ end to end
def test_margins_charge_their_share_before_the_loop_and_the_report_records_them(private, public, declared):
    result = run(private, declared, public=public, public_use=["margins"])
    report = result.report
    budget = split_budget(1.0, 1e-7)
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget == budget.rho
    check, *rest = report.events
    assert check.mechanism == "exponential" and check.rho == CHECK_SHARE * budget.rho
    margins = [e for e in report.events if e.description.startswith("public margins: ")]
    assert report.events[1:1 + len(margins)] == tuple(margins)  # right after the check, before the loop
    remaining = budget.rho - check.rho
    domain = result.domain
    expected = margins_share(domain, private.height, remaining) * remaining
    record = report.public_data
    assert record["margins_rho"] == expected
    assert math.isclose(math.fsum(e.rho for e in margins), expected, rel_tol=1e-14)
    assert list(record["margins_noise_std"]) == margin_names(domain)
    assert record["reweight_margins"] in (None, "measured") and set(record["reweight_effective_rows"]) == {"measured"}
    assert "one-way margins measured for it charged rho" in report.summary()


def test_margins_the_budget_already_knows_are_not_measured_and_the_run_is_the_one_without_them(
        private, public, declared):
    """At epsilon 50 the margins' share would be under MIN_SHARE: no margin is measured, no
    check is charged, and the release is the run without a public table, bit for bit."""
    without = run(private, declared, epsilon=50.0)
    skipped = run(private, declared, public=public, public_use=["margins"], epsilon=50.0)
    assert [e.description for e in skipped.report.events] == [e.description for e in without.report.events]
    assert skipped.data.equals(without.data)
    record = skipped.report.public_data
    assert record["margins_rho"] == 0.0 and record["margins_noise_std"] == {} and "reweight_released" not in record
    assert "its margins were not measured" in skipped.report.summary()


def test_margins_and_reweight_offer_three_candidates_to_one_check(private, public, declared):
    result = run(private, declared, public=public, public_use=["reweight", "margins"])
    record = result.report.public_data
    assert set(record["reweight_effective_rows"]) == {"one-way", "x-label", "measured"}
    assert sum(e.mechanism == "exponential" for e in result.report.events) == 1


def test_matching_margins_release_the_public_rows_and_wrong_ones_do_not(private, public, declared):
    """The sensitive rows as their own public table win the check at a large epsilon; rows whose
    categories are all wrong lose it, though raked to the measured margins (a category they lack
    cannot be raked into them)."""
    import polars as pl

    matched = run(private, declared, public=private, public_use=["margins"], epsilon=8.0)
    assert matched.report.public_data["reweight_released"] == "reweighted public rows"
    assert set(map(tuple, matched.data.rows())) <= set(map(tuple, private.rows()))
    wrong = public.with_columns(pl.lit(2, dtype=pl.Int32).alias("SEX"), pl.lit(1, dtype=pl.Int32).alias("MAR"))
    lost = run(private, declared, public=wrong, public_use=["margins"], epsilon=8.0)
    assert lost.report.public_data["reweight_released"] == "synthetic rows"


def test_a_public_table_lacking_a_column_is_refused_for_margins_naming_it(private, public, declared):
    with pytest.raises(DataError, match=r"lacks columns \['JWMNP'\].*drop 'margins'"):
        run(private, declared, public=public.drop("JWMNP"), public_use=["margins"])
