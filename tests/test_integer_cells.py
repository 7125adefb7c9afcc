"""Integer columns spread over their rounding cells (``strategy={"integer_cells": True}``):
the map is per row and invertible by rounding, independent of batching, roughly uniform
within a cell, leaves the sensitivity of every query as it was, and the mixed marginals'
thresholds on integer columns sit at half-integers."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import encode, row_offsets, spread_integer_cells
from polars_rap.kernels import get_backend
from polars_rap.io.source import DataSource, exact_answers
from polars_rap.schema.transforms import from_unit
from polars_rap.workload.builders import build_workload, half_integer_threshold, mixed_marginals

DECLARED = {"age": {"bounds": (17, 96), "nullable": True}, "hours": {"bounds": (0, 99), "atoms": [40]},
            "income": (0.0, 1e5), "job": ["a", "b", "c"], "y": ["no", "yes"]}


def table(n_rows: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 97, n_rows).astype(float)
    age[rng.random(n_rows) < 0.05] = np.nan
    hours = np.where(rng.random(n_rows) < 0.4, 40, rng.integers(0, 100, n_rows))
    return pl.DataFrame({
        "age": pl.Series(age).fill_nan(None).cast(pl.Int64),
        "hours": hours.astype(np.int32),
        "income": rng.uniform(0, 1e5, n_rows),
        "job": rng.choice(["a", "b", "c"], n_rows),
        "y": rng.choice(["no", "yes"], n_rows),
    })


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return table(4_000, seed=3)


@pytest.fixture(scope="module")
def domain(frame) -> Domain:
    return Domain.from_mapping(frame.schema, DECLARED, ["y"])


def units(encoded, domain: Domain, name: str) -> np.ndarray:
    j = [spec.name for spec in domain.numeric_columns].index(name)
    return from_unit(encoded.numerics[:, j], domain[name])


def test_each_whole_value_moves_inside_its_cell_and_rounds_back(frame, domain) -> None:
    """Spread values lie in [x - 1/2, x + 1/2] cut at the bounds and round back to x; nulls,
    the declared atom 40 and non-integer columns are untouched; the codes are unchanged."""
    plain, spread = encode(frame, domain), encode(frame, domain, integer_cells=True)
    np.testing.assert_array_equal(plain.codes, spread.codes)
    for name in ("age", "hours"):
        x = frame[name].cast(pl.Float64).to_numpy()
        moved = units(spread, domain, name)
        present = frame[name].is_not_null().to_numpy()
        assert np.all(np.abs(moved - x)[present] <= 0.5 + 1e-9)
        np.testing.assert_array_equal(np.rint(moved[present]), x[present])
        spec = domain[name]
        assert np.all((moved >= spec.lower) & (moved <= spec.upper))
        assert np.count_nonzero(np.abs(moved - x)[present] > 1e-6) > 0.5 * present.sum()
    atom = (frame["hours"] == 40).to_numpy()
    np.testing.assert_array_equal(spread.numerics[atom, 1], plain.numerics[atom, 1])
    age_null = frame["age"].is_null().to_numpy()
    np.testing.assert_array_equal(spread.numerics[age_null, 0], plain.numerics[age_null, 0])
    np.testing.assert_array_equal(units(spread, domain, "income"), units(plain, domain, "income"))


def test_the_offset_is_a_function_of_the_row_alone(frame, domain) -> None:
    """The same rows give the same encoding in any batch cut and in any order, so the
    counts do not depend on batch_rows; equal rows get equal offsets."""
    whole = encode(frame, domain, integer_cells=True)
    parts = [encode(frame.slice(start, 333), domain, integer_cells=True) for start in range(0, frame.height, 333)]
    np.testing.assert_array_equal(np.concatenate([p.numerics for p in parts]), whole.numerics)
    order = np.random.default_rng(0).permutation(frame.height)
    shuffled = encode(frame[order], domain, integer_cells=True)
    np.testing.assert_array_equal(shuffled.numerics, whole.numerics[order])
    doubled = encode(pl.concat([frame.head(5), frame.head(5)]), domain, integer_cells=True)
    np.testing.assert_array_equal(doubled.numerics[:5], doubled.numerics[5:])
    queries = build_workload(domain, np.random.default_rng(1), classes=("MM", "LT"),
                             n_mixed_marginals=200, n_linear_thresholds=500, integer_cells=True)
    answers = [exact_answers(DataSource.from_input(frame), domain, queries, get_backend("cpu"),
                             batch_rows=rows, integer_cells=True)[0] for rows in (97, 4_000)]
    np.testing.assert_array_equal(answers[0], answers[1])


def test_offsets_within_a_cell_are_uniform(frame, domain) -> None:
    """The offsets of rows sharing one integer value (but not the rest of the row) pass a
    Kolmogorov-Smirnov test of Uniform[0, 1) at the 1e-3 level, for each column, and the
    two columns' offsets are uncorrelated (|r| under 4 / sqrt(n))."""
    big = table(20_000, seed=5).with_columns(pl.lit(50, dtype=pl.Int64).alias("age"),
                                               pl.lit(20, dtype=pl.Int32).alias("hours"))
    spread = encode(big, domain, integer_cells=True)
    offsets = [units(spread, domain, name) - value + 0.5 for name, value in (("age", 50), ("hours", 20))]
    for offset in offsets:
        assert stats.kstest(offset, "uniform").pvalue > 1e-3
    assert abs(np.corrcoef(*offsets)[0, 1]) < 4 / math.sqrt(big.height)


def test_spreading_keeps_each_row_s_contribution_to_one_count(frame, domain) -> None:
    """Replace-one neighbours: the spread is a map of each row alone, so replacing one row
    changes every query's count by at most one and a marginal group's counts by at most two
    in L1: the sensitivities of workload.group_sensitivities hold as for whole values."""
    queries = build_workload(domain, np.random.default_rng(2), classes=("CM", "MM", "LT"),
                             n_mixed_marginals=300, n_linear_thresholds=1_000, integer_cells=True)
    neighbour = pl.concat([frame.head(frame.height - 1), table(1, seed=99)])
    counts = [np.rint(exact_answers(DataSource.from_input(f), domain, queries, get_backend("cpu"),
                                    integer_cells=True)[0] * f.height) for f in (frame, neighbour)]
    change = np.abs(counts[0] - counts[1])
    assert change.max() <= 1.0
    per_group = np.add.reduceat(change, queries.group_offsets[:-1])
    assert per_group.max() <= 2.0


def test_half_integer_thresholds_keep_the_answers_on_whole_values(frame, domain) -> None:
    """With integer_cells, every mixed-marginal threshold on an integer column is a
    half-integer in units (not for the float column), drawn from the same rng stream, and
    the answers on whole values equal those of the unmoved thresholds; on the spread rows
    too, since no value crosses a half-integer."""
    plain = mixed_marginals(domain, 400, np.random.default_rng(4))
    snapped = mixed_marginals(domain, 400, np.random.default_rng(4), integer_cells=True)
    numeric = domain.numeric_columns
    moved = 0
    for h in range(len(snapped.tau)):
        spec = numeric[snapped.theta_index[snapped.theta_offsets[h]]]
        value = float(from_unit(np.array([snapped.tau[h]], dtype=np.float64), spec)[0])
        if spec.is_integer and value not in spec.atoms:  # an atom's slab keeps its threshold
            assert value == pytest.approx(math.floor(value) + 0.5, abs=1e-4) or value == spec.upper
            moved += 1
        else:
            assert snapped.tau[h] == plain.tau[h]
    assert moved > 200
    backend = get_backend("cpu")
    whole = encode(frame, domain)
    spread = encode(frame, domain, integer_cells=True)
    np.testing.assert_array_equal(backend.answers_exact(whole.codes, whole.numerics, plain),
                                  backend.answers_exact(whole.codes, whole.numerics, snapped))
    np.testing.assert_array_equal(backend.answers_exact(spread.codes, spread.numerics, snapped),
                                  backend.answers_exact(whole.codes, whole.numerics, snapped))
    assert half_integer_threshold(0.25, domain["income"]) == 0.25


def test_row_offsets_hash_every_column() -> None:
    """Changing any one column of a row changes its hash."""
    codes = np.array([[0, 1], [0, 1], [1, 1], [0, 0]], dtype=np.int32)
    values = [np.array([1.0, 2.0, 1.0, 1.0]), np.array([np.nan, np.nan, np.nan, np.nan])]
    h = row_offsets(codes, values)
    assert len(set(h.tolist())) == 4
    spec = Domain.from_mapping({"x": pl.Int64}, {"x": (0, 10)}, []).columns[0]
    out = spread_integer_cells(np.array([0.0, 10.0, 3.5, np.nan, 11.0]), spec, h[:1].repeat(5), 0)
    assert 0.0 <= out[0] <= 0.5 and 9.5 <= out[1] <= 10.0
    np.testing.assert_array_equal(out[2:], [3.5, np.nan, 11.0])  # not whole, null, outside: as they were
