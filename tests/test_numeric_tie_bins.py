"""Numeric ties by the bins of earlier numeric columns (``tie_numeric_bins``,
:mod:`polars_rap.numeric_ties`): the tables, their sensitivity, the fit and the decoding that
follows them, saved models and synthesize's wiring."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.domain import Domain
from polars_rap.errors import ParameterError
from polars_rap.numeric_coupling import decouple_numerics
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


def test_replacing_one_row_moves_the_binned_sums_within_the_stated_sensitivity() -> None:
    """Squared L2 change over 2,000 random replacements <= 2 T Q^2. A bin table cannot reach
    its share with the others: the binned column's value sets its own cells' sums too, so a row
    moved to another bin of age (below 0.75) also carries less age. The worst such move, age 1
    to 0.7499 (grid step 768), with sex and every other value at their extremes, comes within
    Q^2 - 768^2 of the bound."""
    domain = _domain(nullable=False)
    layout = tie_layout(domain, 4)
    rng = np.random.default_rng(1)
    codes, numerics = _rows(domain, 50, rng)
    base = tie_sums(codes, numerics, domain, layout)
    worst = 0
    for _ in range(2_000):
        new_codes, new_numerics = codes.copy(), numerics.copy()
        other_codes, other_numerics = _rows(domain, 1, rng)
        row = rng.integers(len(codes))
        new_codes[row], new_numerics[row] = other_codes[0], other_numerics[0]
        change = tie_sums(new_codes, new_numerics, domain, layout) - base
        worst = max(worst, int(change @ change))
    assert worst <= layout.l2_sensitivity_squared
    sex = domain.block_index("sex")
    codes[0, sex], numerics[0] = 0, [1.0, 1.0]
    moved_codes, moved_numerics = codes.copy(), numerics.copy()
    moved_codes[0, sex], moved_numerics[0] = 1, [0.7499, 1.0]
    change = tie_sums(moved_codes, moved_numerics, domain, layout) - tie_sums(codes, numerics, domain, layout)
    assert int(change @ change) == layout.l2_sensitivity_squared - TIE_QUANTUM**2 + 768**2


def _one_hot_relaxed(domain: Domain, codes: np.ndarray, numerics: np.ndarray) -> np.ndarray:
    parts = [np.eye(block.n_codes)[codes[:, i]] for i, block in enumerate(domain.blocks)]
    return np.column_stack([*parts, numerics]).astype(np.float32)


def _bin_means(codes, age, hours, domain) -> np.ndarray:
    """float64[8]: the mean of live hours in each (age bin of 4, label) cell."""
    live = codes[:, domain.block_index("hours", indicator=True)] == 0
    cells = (np.minimum(np.floor(age * 4), 3).astype(np.int64) * 2 + codes[:, domain.block_index("y")])[live]
    return np.bincount(cells, weights=hours[live], minlength=8) / np.bincount(cells, minlength=8)


def test_decoding_hands_hours_out_by_the_bins_of_age_as_the_released_sums_say() -> None:
    domain = _domain()
    rng = np.random.default_rng(3)
    codes, numerics = _rows(domain, 6_000, rng)
    shuffled = decouple_numerics(codes, numerics, domain, rng)  # the label coupling: hours independent of age
    truth = _bin_means(codes, numerics[:, 0], numerics[:, 1], domain)
    outs = {}
    for bins in (0, 8):
        layout = tie_layout(domain, bins)
        exact = tie_sums(codes, numerics, domain, layout) / (len(codes) * TIE_QUANTUM)
        ties = fit_ties(_one_hot_relaxed(domain, codes, numerics), domain, layout, exact, 1e-6)
        outs[bins] = ties.apply(codes, shuffled, domain, np.random.default_rng(4))
    label, null = codes[:, domain.block_index("y")], codes[:, domain.block_index("hours", indicator=True)] == 1
    for c in range(2):
        for j in range(2):
            keep = (label == c) & ~(null if j == 1 else np.zeros_like(null))
            assert np.array_equal(np.sort(outs[8][keep, j]), np.sort(shuffled[keep, j]))
    assert np.array_equal(outs[8][null, 1], shuffled[null, 1])
    without = np.abs(_bin_means(codes, outs[0][:, 0], outs[0][:, 1], domain) - truth)
    within = np.abs(_bin_means(codes, outs[8][:, 0], outs[8][:, 1], domain) - truth)
    assert without.max() > 0.15 and within.max() < 0.03
    correlation = np.corrcoef(outs[8][~null, 0], outs[8][~null, 1])[0, 1]
    assert correlation > 0.9  # the real rows': about 0.96


@pytest.mark.parametrize("first", ["age", "hours"])
def test_binned_ties_round_trip_through_a_frame_and_unbinned_ones_still_load(first) -> None:
    domain = _domain(first)
    for bins in (0, 4):
        layout = tie_layout(domain, bins)
        ties = NumericTies(layout, np.random.default_rng(bins).normal(size=layout.n_cells))
        frame = ties.to_frame(domain)
        assert frame["feature"].str.ends_with(".bins").any() == (bins > 0)
        back = NumericTies.from_frame(frame, domain)
        assert back.layout.bins == bins and np.array_equal(back.deviations, ties.deviations)
    with pytest.raises(ValueError, match="do not match"):
        NumericTies.from_frame(frame.head(frame.height - 1), domain)


@pytest.mark.parametrize("bins", [-1, 65, 2.5, True, "8"])
def test_bad_numeric_bins_are_parameter_errors(bins) -> None:
    with pytest.raises(ParameterError, match="tie_numeric_bins must be an int from 0 to 64"):
        PlannedStrategy(tie_numeric_bins=bins)


def test_synthesize_releases_the_binned_tables_in_the_one_tie_release_and_saves_them(tmp_path) -> None:
    rng = np.random.default_rng(8)
    n = 2_000
    age = rng.integers(18, 90, n)
    hours = np.clip(10 + 0.6 * age + rng.normal(0, 4, n), 1, 99).round().astype(np.int64)
    data = pl.DataFrame({"sex": rng.choice(["F", "M"], n), "age": age, "hours": hours,
                         "y": np.where(hours + rng.normal(0, 6, n) > 40, "p", "n")})
    domain = {"sex": ["F", "M"], "age": (18, 90), "hours": (1, 99), "y": ["n", "p"]}
    strategy = PlannedStrategy(tie_share=0.2, tie_noise_cap=None, tie_numeric_bins=8)
    result = polars_rap.synthesize(data, epsilon=2.0, delta=1e-7, domain=domain, labels=["y"], seed=0,
                                   progress=False, relaxed_rows=40, n_linear_thresholds=100, strategy=strategy)
    events = [e for e in result.report.events if e.description.startswith("numeric ties")]
    assert len(events) == 1 and "3 tables" in events[0].description  # age x sex, hours x sex, hours x age bins
    assert result.numeric_ties.layout.bins == 8
    assert result.report.parameters["strategy"]["tie_numeric_bins"] == 8
    result.model.save(tmp_path / "model")
    loaded = polars_rap.load(tmp_path / "model")
    saved, fitted = loaded.numeric_ties, result.numeric_ties
    assert saved.layout.tables == fitted.layout.tables and saved.layout.bins == 8
    assert np.array_equal(saved.deviations, fitted.deviations)
    assert loaded.sample(300, seed=1).equals(result.model.sample(300, seed=1))
