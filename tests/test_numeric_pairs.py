"""Numeric pairs (``TIE_NUMERIC_BINS``, :mod:`polars_rap.decode.numeric_pairs`): the tie tables by the
bins of earlier numeric columns, their sums and sensitivity in the ties' release, the test of
the relaxed rows' pairing against them, the decoding that follows the kept pairs, saved models
and synthesize's wiring."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.schema.domain import Domain
from polars_rap.decode.numeric_coupling import decouple_numerics
from polars_rap.decode.numeric_pairs import PAIR_EVIDENCE, fitted_ties, pair_deviations, pair_evidence, pair_ties
from polars_rap.decode.numeric_ties import TIE_QUANTUM, NumericTies, layout_of, tie_layout, tie_sums
from polars_rap.fit.planned_strategy import PlannedStrategy
from tie_rows import one_hot_relaxed, pair_domain, pair_rows, paired_frame_and_domain, worst_replacement


def _names(domain: Domain, layout) -> list[tuple[str, str]]:
    n_blocks = len(domain.blocks)
    return [(domain.numeric_columns[j].name,
             domain.numeric_columns[a - n_blocks].name + ".bins" if a >= n_blocks else domain.blocks[a].source)
            for j, a, _ in layout.tables]


def test_each_numeric_is_tied_to_the_bins_of_the_numerics_before_it() -> None:
    domain = pair_domain()
    layout = tie_layout(domain, 4)
    assert _names(domain, layout) == [("age", "sex"), ("age", "hours"), ("hours", "sex"), ("hours", "age.bins")]
    assert layout.n_cells == 2 * (2 + 2) + 2 * 2 + 4 * 2  # age's bins: no null code
    assert layout.l2_sensitivity_squared == 2 * 4 * TIE_QUANTUM**2
    assert tie_layout(domain).tables == layout.tables[:3] and tie_layout(domain).bins == 0
    assert _names(domain, tie_layout(domain, 4, categorical=False)) == [("hours", "age.bins")]
    assert tie_layout(domain, 0, categorical=False) is None
    flipped = pair_domain("hours")
    binned = tie_layout(flipped, 4)
    assert _names(flipped, binned)[-1] == ("age", "hours.bins")
    assert binned.width(flipped, binned.tables[-1][1]) == 5  # hours' four bins and its nulls


@pytest.mark.parametrize("first", ["age", "hours"])
def test_bin_sums_are_each_cells_quantized_values_row_by_row(first) -> None:
    domain = pair_domain(first)
    layout = tie_layout(domain, 4)
    codes, numerics = pair_rows(domain, 300, np.random.default_rng(0))
    sums = tie_sums(codes, numerics, domain, layout)
    t = len(layout.tables) - 1
    j, k = 1, 0  # the second column by the first's bins
    null = codes[:, domain.block_index("hours", indicator=True)] == 1
    expected = np.zeros(layout.offsets[t + 1] - layout.offsets[t], dtype=np.int64)
    for row in range(len(codes)):
        x = numerics[row, k]
        code = 4 if first == "hours" and null[row] else min(int(math.floor(x * 4)), 3)
        expected[code * 2 + codes[row, domain.block_index("y")]] += int(math.floor(numerics[row, j] * TIE_QUANTUM
                                                                                    + 0.5))
    assert np.array_equal(sums[layout.offsets[t]:], expected)


def test_replacing_one_row_moves_the_binned_sums_within_the_stated_sensitivity() -> None:
    """Squared L2 change over 2,000 random replacements <= 2 T Q^2. A bin table cannot reach
    its share with the others: the binned column's value sets its own cells' sums too, so a row
    moved to another bin of age (below 0.75) also carries less age. The worst such move, age 1
    to 0.7499 (grid step 768), with sex and every other value at their extremes, comes within
    Q^2 - 768^2 of the bound."""
    domain = pair_domain(nullable=False)
    layout = tie_layout(domain, 4)
    rng = np.random.default_rng(1)
    codes, numerics = pair_rows(domain, 50, rng)
    worst = worst_replacement(codes, numerics, domain, layout, lambda n, g: pair_rows(domain, n, g), rng)
    assert worst <= layout.l2_sensitivity_squared
    sex = domain.block_index("sex")
    codes[0, sex], numerics[0] = 0, [1.0, 1.0]
    moved_codes, moved_numerics = codes.copy(), numerics.copy()
    moved_codes[0, sex], moved_numerics[0] = 1, [0.7499, 1.0]
    change = tie_sums(moved_codes, moved_numerics, domain, layout) - tie_sums(codes, numerics, domain, layout)
    assert int(change @ change) == layout.l2_sensitivity_squared - TIE_QUANTUM**2 + 768**2


def _bin_means(codes, age, hours, domain) -> np.ndarray:
    """float64[8]: the mean of live hours in each (age bin of 4, label) cell."""
    live = codes[:, domain.block_index("hours", indicator=True)] == 0
    cells = (np.minimum(np.floor(age * 4), 3).astype(np.int64) * 2 + codes[:, domain.block_index("y")])[live]
    return np.bincount(cells, weights=hours[live], minlength=8) / np.bincount(cells, minlength=8)


def test_pair_deviations_are_the_relaxed_rows_weighted_bin_means_less_the_label_mean() -> None:
    """Soft relaxed rows (label and null probabilities between 0 and 1): each cell's target,
    computed row by row, and the count-weighted deviations summing to 0 in each label value."""
    domain = pair_domain("hours")  # age by the bins of hours, whose nulls have a bin of their own
    layout = tie_layout(domain, 4, categorical=False)
    rng = np.random.default_rng(2)
    n = 50
    sex, null, label = rng.dirichlet([1, 1], n), rng.dirichlet([1, 1], n), rng.dirichlet([1, 1], n)
    hours, age = rng.random(n), rng.random(n)
    coordinates = {"sex": sex, "hours": null, "y": label}
    relaxed = np.column_stack([*(coordinates[block.source] for block in domain.blocks), hours, age])
    deviations = pair_deviations(relaxed, domain, layout)
    assert layout.tables == ((1, len(domain.blocks), domain.block_index("y")),)
    for c in range(2):
        weight = label[:, c]
        mean = weight @ age / weight.sum()
        expected, counts = [], []
        for code in range(5):
            share = null[:, 1] if code == 4 else null[:, 0] * (np.minimum(np.floor(hours * 4), 3) == code)
            counts.append(float(weight @ share))
            expected.append(weight * share @ age / counts[-1] - mean if counts[-1] > 0 else 0.0)
        assert np.allclose(deviations[c::2], expected, rtol=0, atol=1e-12)
        assert abs(np.dot(counts, deviations[c::2])) < 1e-12


def _release(domain, codes, numerics, bins: int = 8):
    """(layout with pairs, exact sums of the rows in answer units) as a noiseless release."""
    layout = tie_layout(domain, bins)
    return layout, tie_sums(codes, numerics, domain, layout) / (len(codes) * TIE_QUANTUM)


def test_decoding_hands_hours_out_by_the_bins_of_age_as_the_relaxed_rows_pair_them() -> None:
    """Relaxed rows that are the rows themselves and a release that agrees: after the label
    coupling broke the pairs, the kept pair gives each (age bin, label) cell its mean of hours
    back; each label keeps its values. The categorical ties alone leave the cells off."""
    domain = pair_domain()
    rng = np.random.default_rng(3)
    codes, numerics = pair_rows(domain, 6_000, rng)
    shuffled = decouple_numerics(codes, numerics, domain, rng)  # the label coupling: hours independent of age
    truth = _bin_means(codes, numerics[:, 0], numerics[:, 1], domain)
    relaxed = one_hot_relaxed(domain, codes, numerics)
    layout, exact = _release(domain, codes, numerics)
    paired = fitted_ties(relaxed, domain, layout, exact, 1e-4)
    released = fitted_ties(relaxed, domain, tie_layout(domain), _release(domain, codes, numerics, 0)[1], 1e-4)
    assert paired.layout.tables == layout.tables  # the pair passed
    outs = {name: ties.apply(codes, shuffled, domain, np.random.default_rng(4))
            for name, ties in (("released", released), ("paired", paired))}
    label, null = codes[:, domain.block_index("y")], codes[:, domain.block_index("hours", indicator=True)] == 1
    for c in range(2):
        for j in range(2):
            keep = (label == c) & ~(null if j == 1 else np.zeros_like(null))
            assert np.array_equal(np.sort(outs["paired"][keep, j]), np.sort(shuffled[keep, j]))
    assert np.array_equal(outs["paired"][null, 1], shuffled[null, 1])
    without = np.abs(_bin_means(codes, outs["released"][:, 0], outs["released"][:, 1], domain) - truth)
    within = np.abs(_bin_means(codes, outs["paired"][:, 0], outs["paired"][:, 1], domain) - truth)
    assert without.max() > 0.15 and within.max() < 0.03
    assert np.corrcoef(outs["paired"][~null, 0], outs["paired"][~null, 1])[0, 1] > 0.9  # the rows': about 0.96


def test_the_evidence_is_the_log_likelihood_ratio_of_the_released_sums() -> None:
    domain = pair_domain()
    codes, numerics = pair_rows(domain, 300, np.random.default_rng(0))
    relaxed = one_hot_relaxed(domain, codes, numerics).astype(np.float64)
    layout, exact = _release(domain, codes, numerics, 4)
    noisy = exact + np.random.default_rng(1).normal(0, 0.01, exact.shape)
    evidence = pair_evidence(relaxed, domain, layout, noisy, 0.01)
    t = len(layout.tables) - 1
    assert np.isnan(evidence[:t]).all()  # categorical tables: no test
    label, null = codes[:, domain.block_index("y")], codes[:, domain.block_index("hours", indicator=True)] == 1
    age_bin = np.minimum(np.floor(numerics[:, 0] * 4), 3).astype(np.int64)
    independent, paired = np.zeros(8), np.zeros(8)
    for c in range(2):
        live = (label == c) & ~null
        mean = numerics[live, 1].mean()
        for b in range(4):
            cell = live & (age_bin == b)
            independent[b * 2 + c] = cell.sum() / 300 * mean
            paired[b * 2 + c] = numerics[cell, 1].sum() / 300
    released = noisy[layout.offsets[t]:]
    expected = (np.sum((released - independent) ** 2) - np.sum((released - paired) ** 2)) / 0.01**2
    assert evidence[t] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 3, 6])
def test_a_pair_is_kept_only_where_the_release_supports_the_relaxed_rows_pairing(seed) -> None:
    domain = pair_domain()
    rng = np.random.default_rng(seed)
    codes, numerics = pair_rows(domain, 4_000, rng)
    shuffled = decouple_numerics(codes, numerics, domain, rng)
    paired_rows, unpaired_rows = (one_hot_relaxed(domain, codes, values) for values in (numerics, shuffled))
    layout, paired_sums = _release(domain, codes, numerics)
    _, unpaired_sums = _release(domain, codes, shuffled)
    std = 0.01  # the default noise cap: far smaller, a shuffle's chance structure could pass
    sums = {"paired": (paired_sums, numerics), "unpaired": (unpaired_sums, shuffled)}
    for relaxed, released, kept in ((paired_rows, "paired", True), (unpaired_rows, "paired", False),
                                    (paired_rows, "unpaired", False)):
        released_sums, rows = sums[released]
        evidence = pair_evidence(relaxed, domain, layout, released_sums, std)[-1]
        assert (evidence > PAIR_EVIDENCE) == kept
        ties = fitted_ties(relaxed, domain, layout, released_sums, std)
        assert (ties.layout.tables == layout.tables) == kept
        if not kept:  # the categorical ties as fitted without the pairs, to the last float
            alone = fitted_ties(relaxed, domain, tie_layout(domain), _release(domain, codes, rows, 0)[1], std)
            assert ties.layout.tables == alone.layout.tables and np.array_equal(ties.deviations, alone.deviations)


def test_each_tested_pair_is_logged_with_its_evidence_and_the_decision(caplog) -> None:
    domain = pair_domain()
    rng = np.random.default_rng(6)
    codes, numerics = pair_rows(domain, 4_000, rng)  # the rows of the keep / drop test above
    shuffled = decouple_numerics(codes, numerics, domain, rng)
    layout, exact = _release(domain, codes, numerics)
    with caplog.at_level("INFO", logger="polars_rap.decode.numeric_pairs"):
        fitted_ties(one_hot_relaxed(domain, codes, numerics), domain, layout, exact, 0.01)
        fitted_ties(one_hot_relaxed(domain, codes, shuffled), domain, layout, exact, 0.01)
    kept, dropped = (record.getMessage() for record in caplog.records)
    assert kept.startswith("numeric pairs (kept where the evidence exceeds 2): hours | age ") and kept.endswith("kept")
    assert dropped.endswith("dropped")


def test_pair_ties_keep_the_fitted_ties_and_stand_alone_without_them() -> None:
    domain = pair_domain()
    codes, numerics = pair_rows(domain, 2_000, np.random.default_rng(6))
    relaxed = one_hot_relaxed(domain, codes, numerics)
    layout, exact = _release(domain, codes, numerics, 4)
    categorical = tie_layout(domain)
    fitted = NumericTies(categorical, np.random.default_rng(5).normal(size=categorical.n_cells))
    paired = pair_ties(relaxed, domain, layout, exact, 1e-4, fitted)
    assert paired.layout.tables == layout.tables
    for t, table in enumerate(categorical.tables):
        at = paired.layout.tables.index(table)
        assert np.array_equal(paired.deviations[paired.layout.offsets[at]:paired.layout.offsets[at + 1]],
                              fitted.deviations[categorical.offsets[t]:categorical.offsets[t + 1]])
    assert np.array_equal(paired.deviations[paired.layout.offsets[-2]:],
                          pair_deviations(relaxed, domain, layout)[layout.offsets[-2]:])
    alone = pair_ties(relaxed, domain, layout, exact, 1e-4, None)
    assert alone.layout.tables == tie_layout(domain, 4, categorical=False).tables
    assert fitted_ties(relaxed, domain, categorical, _release(domain, codes, numerics, 0)[1], 1e-4).layout.bins == 0


@pytest.mark.parametrize("first", ["age", "hours"])
def test_paired_ties_round_trip_through_a_frame_and_unpaired_ones_still_load(first) -> None:
    domain = pair_domain(first)
    full = tie_layout(domain, 4)
    subsets = [tie_layout(domain), full, tie_layout(domain, 4, categorical=False),
               layout_of(domain, full.tables[1:], 4)]
    for layout in subsets:
        bins = layout.bins
        ties = NumericTies(layout, np.random.default_rng(bins).normal(size=layout.n_cells))
        frame = ties.to_frame(domain)
        assert frame["feature"].str.ends_with(".bins").any() == (bins > 0)
        back = NumericTies.from_frame(frame, domain)
        assert back.layout.tables == layout.tables and back.layout.bins == bins
        assert np.array_equal(back.deviations, ties.deviations)
    with pytest.raises(ValueError, match="do not match"):
        NumericTies.from_frame(frame.head(frame.height - 1), domain)


@pytest.fixture(scope="module")
def paired_frame() -> tuple[pl.DataFrame, dict]:
    return paired_frame_and_domain()


def _fit(paired_frame, epsilon: float = 2.0, **strategy):
    data, domain = paired_frame
    small = PlannedStrategy(relaxed_rows=40, workload={"n_linear_thresholds": 100}, **strategy)
    return polars_rap.synthesize(data, epsilon=epsilon, delta=1e-7, domain=domain, labels=["y"], seed=0, progress=False,
                                 strategy=small)


def test_synthesize_releases_the_pair_tables_with_the_ties_and_saves_the_kept_pairs(paired_frame, tmp_path,
                                                                                   monkeypatch) -> None:
    """TIE_NUMERIC_BINS (8) bins: the pair tables released with the ties (no noise cap here), at
    their share less the rank pairs' part (rank_pairs_rho_beside_ties)."""
    from polars_rap.decode.numeric_ties import TIE_NUMERIC_BINS
    from polars_rap.decode.rank_pairs import rank_pairs_rho_beside_ties
    from polars_rap.pipeline import fitting

    monkeypatch.setattr(fitting, "TIE_NOISE_CAP", math.inf)
    result = _fit(paired_frame, 8.0, tie_share=0.2)
    events = [e for e in result.report.events if e.description.startswith("numeric ties")]
    assert len(events) == 1 and "3 tables" in events[0].description  # age x sex, hours x sex, hours x age's bins
    before = result.report.events[:result.report.events.index(events[0])]
    share = 0.2 * (result.report.rho_budget - math.fsum(e.rho for e in before))
    pairs = rank_pairs_rho_beside_ties(result.domain, result.report.n_rows, share)  # the rank pairs' part
    assert pairs > 0.0 and events[0].rho == share - pairs and result.rank_pairs is not None
    # hours follows age, and at eps 8 the released sums say so of the relaxed rows' pairing too: kept
    assert result.numeric_ties.layout.tables == tie_layout(result.domain, 8).tables and TIE_NUMERIC_BINS == 8
    result.model.save(tmp_path / "model")
    loaded = polars_rap.load(tmp_path / "model")
    assert loaded.numeric_ties.layout.tables == result.numeric_ties.layout.tables
    assert np.array_equal(loaded.numeric_ties.deviations, result.numeric_ties.deviations)
    assert loaded.sample(300, seed=1).equals(result.model.sample(300, seed=1))


def test_without_measured_ties_or_with_the_fitted_coupling_no_pair_is_kept(paired_frame, monkeypatch) -> None:
    from polars_rap.pipeline import fitting

    off = _fit(paired_frame, tie_share=0.0)
    fitted = _fit(paired_frame, numeric_coupling="fitted")
    monkeypatch.setattr(fitting, "TIE_NOISE_CAP", 1e-9)
    capped = _fit(paired_frame, tie_share=0.2)
    for result in (capped, off, fitted):
        assert result.numeric_ties is None
        assert not any(e.description.startswith("numeric ties") for e in result.report.events)
