"""public_use="margins" (issue 19): the one-way margins measured for the public rows, the
fitted candidate, the check's independent rows, and the release's charges against their math
(each margin's own empirical-Bayes estimate: ``test_public_shrinkage.py``)."""

import math
from unittest import mock

import numpy as np
import polars as pl
import pytest

from polars_rap import DataError
from polars_rap.privacy import ledger as privacy
from polars_rap.public import margins as public_margins
from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import encode
from polars_rap.privacy.ledger import PrivacyLedger, gaussian_noise_std, split_budget
from polars_rap.public.margins import FIRST_CHECK_TABLES, FIRST_PART, LABEL_WEIGHT, LOOP_RESERVE, MARGIN_STD, MAX_SHARE, MIN_SHARE, NUMERIC_CELLS, NUMERIC_WEIGHT, UNHELD_Z, MarginCounts, candidate_weights, check_margins, combined, independent_rows, loop_ratio, margin_names, margins_share, measured_candidate, own_margins_row, release_margins
from polars_rap.public.prior import open_public, read_public
from polars_rap.public.reweight import CHECK_SHARE, margin_cells, rake, reweighted_candidate
from polars_rap.public.shrinkage import measured_margins

import public_rows  # tests/public_rows.py: the public-table tests' rows, fixtures and run()
from public_rows import run

declared, domain = public_rows.declared, public_rows.domain  # the shared fixtures: they read COLUMNS
private, public = public_rows.private, public_rows.public

COLUMNS = ["AGEP", "SEX", "MAR", "SCHL", "RAC1P", "JWMNP", "PINCP_gt_50000"]


# ------------------------------------------------------------------ the margins and their counts
def test_the_margins_are_every_categorical_block_but_null_indicators_then_each_numeric(domain):
    """JWMNP is nullable: its null indicator block is not measured apart (its numeric margin's
    null cell holds it); AGEP and JWMNP have NUMERIC_CELLS cells and a null cell. SEX, the one
    binary feature, is measured split by the label: 2 x 2 cells."""
    assert margin_names(domain) == ["SEX x PINCP_gt_50000", "MAR", "SCHL", "RAC1P", "PINCP_gt_50000", "AGEP",
                                    "JWMNP"]
    counts = MarginCounts(domain)
    assert [len(c) for c in counts.counts] == [4, *domain.block_sizes[1:5], NUMERIC_CELLS + 1, NUMERIC_CELLS + 1]


def test_a_binary_feature_is_split_by_a_lone_label_only(private, declared):
    """SEX x label's cells are ``sex * 2 + label`` (its counts the 2 x 2 table); a second label
    leaves every feature's margin one-way (which label would it be split by)."""
    domain = Domain.from_mapping(private.schema, declared, ["PINCP_gt_50000"])
    counts = MarginCounts(domain)
    counts.add(encode(private, domain))
    table = private.group_by("SEX", "PINCP_gt_50000").len()
    for sex, label, count in table.iter_rows():
        cell = list(domain["SEX"].categories).index(sex) * 2 + list(domain["PINCP_gt_50000"].categories).index(label)
        assert counts.counts[0][cell] == count
    two = Domain.from_mapping(private.schema, declared, ["PINCP_gt_50000", "SEX"])
    assert margin_names(two)[0] == "SEX" and len(MarginCounts(two).counts[0]) == 2


def test_margin_counts_are_the_rows_cells_whatever_the_batches(private, domain):
    encoded = encode(private, domain)
    whole = MarginCounts(domain)
    whole.add(encoded)
    cells = margin_cells(encoded.codes, encoded.numerics, domain, numeric_cells=NUMERIC_CELLS)
    kept = [0, 1, 2, 3, 4, 6, 7]  # blocks SEX..PINCP, (JWMNP's indicator left out), AGEP, JWMNP
    cells[0] = cells[0] * 2 + cells[4]  # SEX split by the label
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
    roots = np.sqrt(domain.block_sizes[:4])  # SEX, MAR, SCHL, RAC1P
    features = (math.sqrt(4) + roots[1:].sum()) / roots.mean()  # SEX's margin split by the label: 4 cells
    weights = features + LABEL_WEIGHT + 2 * NUMERIC_WEIGHT  # the four features, the label, 2 numerics
    n, rho = 10_000, 0.02
    needed = weights / (rho * n**2 * MARGIN_STD**2)
    assert MIN_SHARE < margins_share(domain, n, rho) == needed < MAX_SHARE
    # at that share a categorical feature's margin has std MARGIN_STD
    assert math.isclose(math.sqrt(2) / n / math.sqrt(2 * rho * needed / weights), MARGIN_STD, rel_tol=1e-12)
    assert margins_share(domain, n, rho / 1000) == MAX_SHARE
    assert weights / (5 * rho * n**2 * MARGIN_STD**2) < MIN_SHARE and margins_share(domain, n, 5 * rho) == 0.0


def test_release_charges_each_margin_its_weight_and_the_stated_noise(private, domain):
    """A feature's weight grows with the square root of its cells (SCHL's 24 over SEX x label's
    4), scaled by the features' codes' (averaging 1 but for the split), the label's is
    LABEL_WEIGHT, a numeric's NUMERIC_WEIGHT; the charges are rho in those proportions."""
    encoded = encode(private, domain)
    counts = MarginCounts(domain)
    counts.add(encoded)
    ledger = PrivacyLedger(1.0)
    rho = 0.3
    released = release_margins(counts, private.height, rho, ledger, np.random.default_rng(0))
    roots = np.sqrt(domain.block_sizes[:4])  # SEX, MAR, SCHL, RAC1P: sqrt of their codes
    cells = np.sqrt([4, *domain.block_sizes[1:4]])  # SEX's margin split by the label
    weights = np.array([*(cells / roots.mean()), LABEL_WEIGHT, NUMERIC_WEIGHT, NUMERIC_WEIGHT])
    assert [e.rho for e in ledger.events] == [rho * float(w / weights.sum()) for w in weights]
    assert math.isclose(math.fsum(e.rho for e in ledger.events), rho, rel_tol=1e-15)
    assert all(e.mechanism == "gaussian" for e in ledger.events)
    assert ledger.events[0].description == "public margins: SEX x PINCP_gt_50000's margin"
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
    np.testing.assert_allclose(drawn, targets[0].reshape(2, 2).sum(axis=1), atol=0.02)  # its table, summed


# ------------------------------------------------------------------ end to end
@pytest.mark.parametrize("which", ["itself", "label flipped"])
def test_margins_charge_their_stages_before_the_loop_and_the_report_records_them(private, public, declared, which):
    """The events, in order: the margins' check (CHECK_SHARE of the loop's budget), the first
    FIRST_PART of the margins' share, then, if the public table passed, the rest; the final
    check (CHECK_SHARE of what is left), whose candidate is fitted to what was measured; then
    the loop's; the ledger closes to the last float.
    The sensitive rows as their own public table pass; other rows of the same table with the
    label flipped, whose every feature goes with the label the wrong way round, lose to
    independence."""
    label = "PINCP_gt_50000"
    low, high = declared[label]
    flipped = public.with_columns(pl.when(pl.col(label) == low).then(pl.lit(high)).otherwise(pl.lit(low))
                                  .cast(public.schema[label]).alias(label))
    table = private if which == "itself" else flipped
    result = run(private, declared, public=table, public_use=["margins"])
    report, domain = result.report, result.domain
    record = report.public_data
    budget = split_budget(1.0, 1e-7)
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget == budget.rho
    check, *events = report.events
    assert check.mechanism == "exponential" and check.rho == CHECK_SHARE * budget.rho == record["margins_check_rho"]
    assert record["margins_check_passed"] == (which == "itself")
    assert record["margins_check_rival"] > 0.0  # the dry run's loop over independence (applied up to 1)
    rho = margins_share(domain, private.height, budget.rho) * (budget.rho - check.rho)
    k = len(margin_names(domain))
    first, events = events[:k], events[k:]
    assert all(e.description.endswith(" (first part)") for e in first)
    assert math.isclose(math.fsum(e.rho for e in first), FIRST_PART * rho, rel_tol=1e-14)
    spent = math.fsum(e.rho for e in first)
    if record["margins_check_passed"]:
        second, events = events[:k], events[k:]
        assert all(e.description.endswith(" (second part)") for e in second)
        assert math.isclose(math.fsum(e.rho for e in second), (1 - FIRST_PART) * rho, rel_tol=1e-14)
        spent = math.fsum(e.rho for e in first + second)
    final, *events = events
    assert final.mechanism == "exponential" and final.rho == record["reweight_check_rho"]
    assert math.isclose(final.rho, CHECK_SHARE * (budget.rho - check.rho - spent), rel_tol=1e-14)
    assert record["reweight_margins"] in (None, "measured") and set(record["reweight_effective_rows"]) == {"measured"}
    assert list(record["margins_noise_std"]) == margin_names(domain)
    if not record["margins_check_passed"]:  # the first part's noise: what the candidate was fitted to
        first_stds = [gaussian_noise_std(math.sqrt(2.0) / private.height, e.rho) for e in first]
        np.testing.assert_allclose(list(record["margins_noise_std"].values()), first_stds, rtol=1e-12)
    assert not any(e.description.startswith("public margins") for e in events)
    assert record["margins_rho"] == spent
    assert "its margins measured for it charged rho" in report.summary()


def test_the_independent_row_answers_a_categorical_marginal_with_the_product_of_margins(private, domain):
    from polars_rap.kernels import cpu
    from polars_rap.workload.queries import CLASS_CODES
    from polars_rap.workload.builders import build_workload

    encoded = encode(private, domain)
    counts = MarginCounts(domain)
    counts.add(encoded)
    targets = [total / private.height for total in counts.counts]
    row = independent_rows(targets, domain)
    queries = build_workload(domain, np.random.default_rng(0), classes=("CM",))
    groups = np.flatnonzero(queries.group_class == CLASS_CODES["CM"])
    answers = cpu.answers_relaxed(row, queries, np.inf)
    names = margin_names(domain)

    def shares(block):  # a block's measured shares; a null indicator's from its numeric margin's null cell
        if block.indicator:
            null = targets[names.index(block.source)][NUMERIC_CELLS]
            return np.array([1.0 - null, null])
        if block.source == "SEX":  # measured split by the label: its table summed over the label
            return targets[names.index("SEX x PINCP_gt_50000")].reshape(2, 2).sum(axis=1)
        return targets[names.index(block.source)]

    assert any(domain.blocks[b].indicator for b in queries.group_columns)  # JWMNP's null indicator is paired too
    for g in groups:
        blocks = [domain.blocks[b] for b in queries.group_columns[
            queries.group_column_offsets[g]:queries.group_column_offsets[g + 1]]]
        product = shares(blocks[0])
        for block in blocks[1:]:
            product = np.multiply.outer(product, shares(block))
        np.testing.assert_allclose(answers[queries.group_query_indices(np.array([g]))], product.ravel(), atol=1e-12)


def test_the_checks_margins_are_the_fitted_rows_own_where_the_public_rows_hold_every_cell(
        public, declared, domain):
    """The check weighs the fitted rows against the same rows with every column independent:
    where the public table holds every cell of a margin, the margin is the public rows' weighted
    shares, whatever the release says (its noise already went into the weights)."""
    table = read_public(open_public(public, declared, COLUMNS), domain)
    cells = public_margins._cells(table.codes, table.numerics, domain)
    released = [(np.bincount(cell, minlength=len(total)) / len(cell) + 0.02 * (np.arange(len(total)) % 2 - 0.5), 0.01)
                for cell, total in zip(cells, MarginCounts(domain).counts, strict=True)]
    weights = candidate_weights(table, released, domain)
    assert np.ptp(weights) > 0  # the release moved the weights
    full = 0
    for margin, cell, (noisy, _) in zip(check_margins(table, weights, released, domain), cells, released, strict=True):
        if (np.bincount(cell, minlength=len(noisy)) > 0).all():
            full += 1
            np.testing.assert_allclose(margin, np.bincount(cell, weights=weights, minlength=len(noisy)), atol=1e-12)
    assert full >= 3


def test_a_cell_no_public_row_holds_keeps_its_release_only_beyond_the_noise(domain):
    """Four public rows hold MAR's first two codes only. A release of 0.3 in its third (30 stds)
    is a share no weight can give them: it stays, the held cells scaled to fill the rest; 2 stds
    in the fourth is the noise of an empty cell and stays out."""
    from types import SimpleNamespace

    std, mar = 0.01, margin_names(domain).index("MAR")
    block = [b.source for b in domain.blocks].index("MAR")
    codes = np.zeros((4, len(domain.blocks)), dtype=np.int32)
    codes[:, block] = [0, 0, 1, 1]
    table = SimpleNamespace(codes=codes, numerics=np.full((4, len(domain.numeric_columns)), 0.5))
    released = [(np.full(len(t), 1.0 / len(t)), std) for t in MarginCounts(domain).counts]
    noisy = np.zeros(domain.block_sizes[block])
    noisy[:4] = [0.4, 0.3 - 2 * std, 0.3, 2 * std]
    released[mar] = (noisy, std)
    shares = check_margins(table, np.array([0.1, 0.2, 0.3, 0.4]), released, domain)[mar]
    assert 2 * std < UNHELD_Z * std < 0.3
    np.testing.assert_allclose(shares[:4], [0.3 * 0.7, 0.7 * 0.7, 0.3, 0.0], atol=1e-12)
    assert shares.sum() == pytest.approx(1.0, abs=1e-12)


def test_the_loop_ratio_is_the_dry_runs_error_over_independences_on_the_rows_own_answers(
        private, declared, domain):
    """A dry run that gives back the rows themselves scores 0 (to float32 answers' rounding); one
    that gives back their margins, every column independent, 1; the dry run gets the rows'
    answers as counts over n, and the rho it is given."""
    from polars_rap.kernels import cpu
    from polars_rap.workload.builders import build_workload

    table = read_public(open_public(private, declared, COLUMNS), domain)
    n = private.height
    rows = reweighted_candidate(table.codes, table.numerics, np.full(n, 1.0 / n), n, domain,
                                np.random.default_rng(0))  # every row once, one-hot: a public candidate
    queries = build_workload(domain, np.random.default_rng(0), classes=("CM", "LT"), n_linear_thresholds=20)
    seen = []

    def itself(answers, rho, rng):
        seen.append((answers, rho))
        return rows

    assert loop_ratio(rows, queries, cpu, itself, 0.3, n, np.random.default_rng(1)) < 1e-6  # float32 answers
    answers, rho = seen[0]
    np.testing.assert_array_equal(answers, np.rint(answers * n) / n)
    assert rho == 0.3 and len(answers) == queries.n_queries
    independent = loop_ratio(rows, queries, cpu, lambda *_: own_margins_row(rows), 0.3, n, np.random.default_rng(1))
    assert independent == pytest.approx(1.0, abs=1e-9)


def test_combined_releases_weigh_each_by_its_inverse_variance():
    a, b = np.array([0.2, 0.8]), np.array([0.4, 0.6])
    ((mean, std),) = combined([(a, 0.1)], [(b, 0.2)])
    np.testing.assert_allclose(mean, (a / 0.01 + b / 0.04) / (1 / 0.01 + 1 / 0.04), rtol=1e-15)
    assert math.isclose(std, (1 / 0.01 + 1 / 0.04) ** -0.5, rel_tol=1e-15)


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


def test_margins_leave_the_loop_twice_what_its_plan_needs_or_are_not_measured(private, public, declared):
    """With few rows at a small epsilon the loop's plan needs more than the margins would leave
    it: they take less, or nothing; the run then goes as without them instead of refusing the
    rows (at 1,500 rows and epsilon 0.4 the plan needs about a fifth of the budget, so the
    margins, which would take 80%, stop at what leaves the loop LOOP_RESERVE times that)."""
    from polars_rap.fit.planning import loop_rho_needed
    from polars_rap.public import release as public_release

    seen = {}
    original = public_release.public_first_margins

    def spy(counts, table, domain, queries, true_answers, l1, n_rows, check_rho, rho, ledger, *rest):
        seen.update(rho=rho, remaining=ledger.rho_remaining, check=check_rho)
        return original(counts, table, domain, queries, true_answers, l1, n_rows, check_rho, rho, ledger, *rest)

    floors = {}
    original_needed = loop_rho_needed

    def needed(*args):
        floors["floor"] = original_needed(*args)
        return floors["floor"]

    with mock.patch.object(public_release, "public_first_margins", spy), \
            mock.patch("polars_rap.pipeline.fitting.loop_rho_needed", needed):
        result = run(private, declared, public=private, public_use=["margins"], epsilon=0.4)
    budget = result.report.rho_budget
    tie_share = result.report.parameters["strategy"].get("tie_share", 0.0)
    floor = floors["floor"] / (1.0 - tie_share)
    assert 0.1 * budget < floor < 0.4 * budget
    left = (seen["remaining"] - seen["check"]) * (1 - CHECK_SHARE) - LOOP_RESERVE * floor
    assert seen["rho"] == left < MAX_SHARE * (seen["remaining"] - seen["check"])
    with mock.patch("polars_rap.pipeline.fitting.loop_rho_needed", lambda *args: budget):  # the loop needs it all
        skipped = run(private, declared, public=private, public_use=["margins"], epsilon=0.4)
    assert skipped.report.public_data["margins_rho"] == 0.0
    assert not any(e.description.startswith("public margins") for e in skipped.report.events)


@pytest.mark.parametrize("epsilon", [1.0, 10.0])
def test_the_first_check_scores_the_quarter_of_tables_its_candidates_dispute_and_the_rival_the_same(private, public,
                                                                                                   declared, epsilon):
    """The first check's exponential mechanism scores the FIRST_CHECK_TABLES of the CM tables
    where the public rows and the independent rows differ most (its sensitivity: 2 counts each of
    those), the dry run's ratio is taken on the same tables, and the report says how many; where
    the margins' share is under MAX_SHARE (epsilon 10 here) it scores every CM table."""
    from polars_rap.workload.queries import CLASS_CODES

    seen = {}
    originals = public_margins.choose_release, public_margins.loop_ratio, public_margins.disputed_groups

    def disputed(answers, sizes, share):
        seen.update(all_answers=answers, sizes=sizes, share=share)
        return originals[2](answers, sizes, share)

    def choose(answers, true_answers, queries, groups, *rest, **kwargs):
        seen.update(answers=answers, groups=groups, queries=queries)
        return originals[0](answers, true_answers, queries, groups, *rest, **kwargs)

    def ratio(*args):
        seen["ratio_groups"] = args[-1]
        return originals[1](*args)

    with mock.patch.object(public_margins, "choose_release", choose), \
            mock.patch.object(public_margins, "loop_ratio", ratio), \
            mock.patch.object(public_margins, "disputed_groups", disputed):
        result = run(private, declared, public=public, public_use=["margins"], epsilon=epsilon)
    queries = seen["queries"]
    every = np.flatnonzero(queries.group_class == CLASS_CODES["CM"])
    share = margins_share(result.domain, private.height, result.report.rho_budget)
    assert (share == MAX_SHARE) == (epsilon == 1.0)
    if share < MAX_SHARE:
        assert seen["share"] == 1.0 and list(seen["groups"]) == list(every) == list(seen["ratio_groups"])
        assert result.report.public_data["margins_check_tables"] == len(every)
        return
    assert seen["share"] == FIRST_CHECK_TABLES and len(seen["sizes"]) == len(every)
    assert len(seen["groups"]) == math.ceil(FIRST_CHECK_TABLES * len(every)) < len(every)
    assert list(seen["ratio_groups"]) == list(seen["groups"])
    assert result.report.public_data["margins_check_tables"] == len(seen["groups"])
    # the kept tables are the most disputed: L1 distance between the two candidates' answers per table
    starts = np.concatenate([[0], np.cumsum(seen["sizes"])])[:-1]
    distance = np.add.reduceat(np.abs(np.asarray(seen["all_answers"][0]) - np.asarray(seen["all_answers"][1])), starts)
    kept = np.isin(every, seen["groups"])
    assert distance[kept].min() >= distance[~kept].max()
    offsets = np.concatenate([[0], np.cumsum(seen["sizes"])])
    for a, whole in zip(seen["answers"], seen["all_answers"], strict=True):  # the kept tables' answers, in order
        expected = np.concatenate([np.asarray(whole)[offsets[i]:offsets[i + 1]] for i in np.flatnonzero(kept)])
        np.testing.assert_array_equal(a, expected)


def test_margins_and_reweight_offer_three_candidates_to_one_check(private, declared):
    result = run(private, declared, public=private, public_use=["reweight", "margins"])
    assert result.report.public_data["margins_check_passed"]
    record = result.report.public_data
    assert set(record["reweight_effective_rows"]) == {"one-way", "x-label", "measured"}
    assert sum(e.mechanism == "exponential" for e in result.report.events) == 2  # the margins' check, the final


def test_matching_margins_release_the_public_rows_and_wrong_ones_do_not(private, public, declared):
    """The sensitive rows as their own public table pass both checks at a large epsilon and are
    released; rows whose categories are all wrong (a category they lack cannot be raked into
    them) lose the margins' check to independence, and the loop's rows are released."""
    import polars as pl

    matched = run(private, declared, public=private, public_use=["margins"], epsilon=8.0)
    assert matched.report.public_data["reweight_released"] == "reweighted public rows"
    assert set(map(tuple, matched.data.rows())) <= set(map(tuple, private.rows()))
    wrong = public.with_columns(pl.lit(2, dtype=pl.Int32).alias("SEX"), pl.lit(1, dtype=pl.Int32).alias("MAR"))
    lost = run(private, declared, public=wrong, public_use=["margins"], epsilon=8.0)
    assert not lost.report.public_data["margins_check_passed"]  # stopped before the rest of the margins
    assert lost.report.public_data["reweight_released"] == "synthetic rows"  # the final check keeps the loop's
    assert (lost.data["SEX"] == 1).mean() > 0.2


def test_a_table_that_fails_the_first_check_still_offers_its_first_part_rows_to_the_final_check(private, declared):
    """The sensitive rows as their own public table, the first check forced to fail: the rest of
    the margins is not measured, the final check is charged, and it releases the public rows
    fitted to the first part (rows of the table itself), which beat the loop's."""
    with mock.patch.object(public_margins, "choose_release", lambda *args, **kwargs: 1):  # the first check only
        result = run(private, declared, public=private, public_use=["margins"])
    record = result.report.public_data
    assert not record["margins_check_passed"]
    assert not any(e.description.endswith(" (second part)") for e in result.report.events)
    assert record["reweight_check_rho"] > 0 and set(record["reweight_effective_rows"]) == {"measured"}
    assert record["reweight_released"] == "reweighted public rows" and record["reweight_margins"] == "measured"
    assert set(map(tuple, result.data.rows())) <= set(map(tuple, private.rows()))


def test_a_public_table_lacking_a_column_is_refused_for_margins_naming_it(private, public, declared):
    with pytest.raises(DataError, match=r"lacks columns \['JWMNP'\].*drop 'margins'"):
        run(private, declared, public=public.drop("JWMNP"), public_use=["margins"])
