"""Numeric pairs (``tie_numeric_bins``, :mod:`polars_rap.numeric_pairs`): the tie tables by the
bins of earlier numeric columns, their targets read from the relaxed rows, the decoding that
follows them, saved models and synthesize's wiring (no release of their own)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.domain import Domain
from polars_rap.errors import ParameterError
from polars_rap.numeric_coupling import decouple_numerics
from polars_rap.numeric_pairs import pair_deviations, pair_ties
from polars_rap.numeric_ties import TIE_QUANTUM, NumericTies, tie_layout, tie_sums
from polars_rap.planned_strategy import PlannedStrategy
from polars_rap.tie_ridge import fit_ties


def _domain(first: str = "age", nullable: bool = True) -> Domain:
    """sex, y and two numeric columns in [0, 1], ``first`` before the other; hours nullable."""
    columns = {"sex": pl.String, first: pl.Float64, ("hours" if first == "age" else "age"): pl.Float64, "y": pl.String}
    declared = {"sex": ["F", "M"], "age": (0.0, 1.0), "y": ["n", "p"],
                "hours": {"bounds": (0.0, 1.0), "nullable": True} if nullable else (0.0, 1.0)}
    return Domain.from_mapping(columns, declared, labels=["y"])


def _rows(domain: Domain, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random encoded rows, hours rising with age (slope 0.6) within each label and null for a
    fifth of them (mapped value 0): codes int32[n, n_blocks], numerics float64[n, 2]."""
    codes = np.column_stack([rng.integers(0, block.n_codes, n) for block in domain.blocks]).astype(np.int32)
    names = [spec.name for spec in domain.numeric_columns]
    age = rng.random(n)
    hours = np.clip(0.2 + 0.6 * age + 0.05 * rng.standard_normal(n), 0.0, 1.0)
    null = rng.random(n) < 0.2
    if domain.numeric_columns[1].nullable or domain.numeric_columns[0].nullable:
        codes[:, domain.block_index("hours", indicator=True)] = null
        hours[null] = 0.0
    numerics = np.column_stack([age, hours] if names[0] == "age" else [hours, age])
    return codes, numerics


def _names(domain: Domain, layout) -> list[tuple[str, str]]:
    n_blocks = len(domain.blocks)
    return [(domain.numeric_columns[j].name,
             domain.numeric_columns[a - n_blocks].name + ".bins" if a >= n_blocks else domain.blocks[a].source)
            for j, a, _ in layout.tables]


def test_each_numeric_is_tied_to_the_bins_of_the_numerics_before_it() -> None:
    domain = _domain()
    layout = tie_layout(domain, 4)
    assert _names(domain, layout) == [("age", "sex"), ("age", "hours"), ("hours", "sex"), ("hours", "age.bins")]
    assert layout.n_cells == 2 * (2 + 2) + 2 * 2 + 4 * 2  # age's bins: no null code
    assert layout.l2_sensitivity_squared == 2 * 4 * TIE_QUANTUM**2
    assert tie_layout(domain).tables == layout.tables[:3] and tie_layout(domain).bins == 0
    assert _names(domain, tie_layout(domain, 4, categorical=False)) == [("hours", "age.bins")]
    assert tie_layout(domain, 0, categorical=False) is None
    flipped = _domain("hours")
    binned = tie_layout(flipped, 4)
    assert _names(flipped, binned)[-1] == ("age", "hours.bins")
    assert binned.width(flipped, binned.tables[-1][1]) == 5  # hours' four bins and its nulls


@pytest.mark.parametrize("first", ["age", "hours"])
def test_bin_sums_are_each_cells_quantized_values_row_by_row(first) -> None:
    domain = _domain(first)
    layout = tie_layout(domain, 4)
    codes, numerics = _rows(domain, 300, np.random.default_rng(0))
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


def _one_hot_relaxed(domain: Domain, codes: np.ndarray, numerics: np.ndarray) -> np.ndarray:
    parts = [np.eye(block.n_codes)[codes[:, i]] for i, block in enumerate(domain.blocks)]
    return np.column_stack([*parts, numerics]).astype(np.float32)


def _bin_means(codes, age, hours, domain) -> np.ndarray:
    """float64[8]: the mean of live hours in each (age bin of 4, label) cell."""
    live = codes[:, domain.block_index("hours", indicator=True)] == 0
    cells = (np.minimum(np.floor(age * 4), 3).astype(np.int64) * 2 + codes[:, domain.block_index("y")])[live]
    return np.bincount(cells, weights=hours[live], minlength=8) / np.bincount(cells, minlength=8)


def test_pair_deviations_are_the_relaxed_rows_weighted_bin_means_less_the_label_mean() -> None:
    """Soft relaxed rows (label and null probabilities between 0 and 1): each cell's target,
    computed row by row, and the count-weighted deviations summing to 0 in each label value."""
    domain = _domain("hours")  # age by the bins of hours, whose nulls have a bin of their own
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


def test_decoding_hands_hours_out_by_the_bins_of_age_as_the_relaxed_rows_pair_them() -> None:
    """Relaxed rows that are the rows themselves: after the label coupling broke the pairs, the
    pairs' ties give each (age bin, label) cell its mean of hours back; each label keeps its
    values. Without them (the released categorical ties alone) the cells stay off."""
    domain = _domain()
    rng = np.random.default_rng(3)
    codes, numerics = _rows(domain, 6_000, rng)
    shuffled = decouple_numerics(codes, numerics, domain, rng)  # the label coupling: hours independent of age
    truth = _bin_means(codes, numerics[:, 0], numerics[:, 1], domain)
    relaxed = _one_hot_relaxed(domain, codes, numerics)
    layout = tie_layout(domain)
    released = fit_ties(relaxed, domain, layout, tie_sums(codes, numerics, domain, layout) / (6_000 * TIE_QUANTUM),
                        1e-6)
    paired = pair_ties(relaxed, domain, 8, released)
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


def test_pair_ties_keep_the_released_ties_and_stand_alone_without_them() -> None:
    domain = _domain()
    layout = tie_layout(domain)
    released = NumericTies(layout, np.random.default_rng(5).normal(size=layout.n_cells))
    codes, numerics = _rows(domain, 200, np.random.default_rng(6))
    relaxed = _one_hot_relaxed(domain, codes, numerics)
    paired = pair_ties(relaxed, domain, 4, released)
    assert paired.layout.tables == tie_layout(domain, 4).tables
    for t, table in enumerate(layout.tables):
        at = paired.layout.tables.index(table)
        assert np.array_equal(paired.deviations[paired.layout.offsets[at]:paired.layout.offsets[at + 1]],
                              released.deviations[layout.offsets[t]:layout.offsets[t + 1]])
    alone = pair_ties(relaxed, domain, 4, None)
    assert alone.layout.tables == tie_layout(domain, 4, categorical=False).tables
    assert np.array_equal(alone.deviations, paired.deviations[paired.layout.offsets[-2]:])
    single = Domain.from_mapping({"sex": pl.String, "age": pl.Float64, "y": pl.String},
                                 {"sex": ["F", "M"], "age": (0.0, 1.0), "y": ["n", "p"]}, labels=["y"])
    assert pair_ties(np.zeros((3, 5)), single, 4, None) is None  # one numeric column: no pairs


@pytest.mark.parametrize("first", ["age", "hours"])
def test_paired_ties_round_trip_through_a_frame_and_unpaired_ones_still_load(first) -> None:
    domain = _domain(first)
    for bins, categorical in ((0, True), (4, True), (4, False)):
        layout = tie_layout(domain, bins, categorical)
        ties = NumericTies(layout, np.random.default_rng(bins).normal(size=layout.n_cells))
        frame = ties.to_frame(domain)
        assert frame["feature"].str.ends_with(".bins").any() == (bins > 0)
        back = NumericTies.from_frame(frame, domain)
        assert back.layout.tables == layout.tables and back.layout.bins == bins
        assert np.array_equal(back.deviations, ties.deviations)
    with pytest.raises(ValueError, match="do not match"):
        NumericTies.from_frame(frame.head(frame.height - 1), domain)


@pytest.mark.parametrize("bins", [-1, 65, 2.5, True, "8"])
def test_bad_numeric_bins_are_parameter_errors(bins) -> None:
    with pytest.raises(ParameterError, match="tie_numeric_bins must be an int from 0 to 64"):
        PlannedStrategy(tie_numeric_bins=bins)


@pytest.fixture(scope="module")
def paired_frame() -> tuple[pl.DataFrame, dict]:
    rng = np.random.default_rng(8)
    n = 2_000
    age = rng.integers(18, 90, n)
    hours = np.clip(10 + 0.6 * age + rng.normal(0, 4, n), 1, 99).round().astype(np.int64)
    data = pl.DataFrame({"sex": rng.choice(["F", "M"], n), "age": age, "hours": hours,
                         "y": np.where(hours + rng.normal(0, 6, n) > 40, "p", "n")})
    return data, {"sex": ["F", "M"], "age": (18, 90), "hours": (1, 99), "y": ["n", "p"]}


def _fit(paired_frame, **strategy):
    data, domain = paired_frame
    return polars_rap.synthesize(data, epsilon=2.0, delta=1e-7, domain=domain, labels=["y"], seed=0, progress=False,
                                 relaxed_rows=40, n_linear_thresholds=100, strategy=PlannedStrategy(**strategy))


def test_synthesize_adds_the_pairs_to_the_released_ties_at_no_cost_and_saves_them(paired_frame, tmp_path) -> None:
    result = _fit(paired_frame, tie_share=0.2, tie_noise_cap=None, tie_numeric_bins=8)
    unpaired = _fit(paired_frame, tie_share=0.2, tie_noise_cap=None)
    assert result.report.events == unpaired.report.events  # the same release: 2 tables, age x sex and hours x sex
    events = [e for e in result.report.events if e.description.startswith("numeric ties")]
    assert len(events) == 1 and "2 tables" in events[0].description
    assert np.array_equal(result.relaxed, unpaired.relaxed)
    assert result.numeric_ties.layout.tables == tie_layout(result.domain, 8).tables
    assert result.report.parameters["strategy"]["tie_numeric_bins"] == 8
    result.model.save(tmp_path / "model")
    loaded = polars_rap.load(tmp_path / "model")
    assert loaded.numeric_ties.layout.tables == result.numeric_ties.layout.tables
    assert np.array_equal(loaded.numeric_ties.deviations, result.numeric_ties.deviations)
    assert loaded.sample(300, seed=1).equals(result.model.sample(300, seed=1))


def test_the_pairs_need_no_measured_ties_and_leave_them_off_with_the_fitted_coupling(paired_frame) -> None:
    capped = _fit(paired_frame, tie_share=0.2, tie_noise_cap=1e-9, tie_numeric_bins=8)
    off = _fit(paired_frame, tie_share=0.0, tie_numeric_bins=8)
    for result in (capped, off):
        assert not any(e.description.startswith("numeric ties") for e in result.report.events)
        assert result.numeric_ties.layout.tables == tie_layout(result.domain, 8, categorical=False).tables
    fitted = _fit(paired_frame, tie_numeric_bins=8, numeric_coupling="fitted")
    assert fitted.numeric_ties is None
