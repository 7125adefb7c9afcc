"""Exact answers over distinct rows (polars_rap.kernels.distinct_rows): the same integer
counts as row by row, on random query sets and on a real table's benchmark workload."""

from __future__ import annotations

import numpy as np
import pytest

from polars_rap.io import datasets
from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import encode
from polars_rap.quality.evaluation import benchmark_workload
from polars_rap.kernels import cpu, distinct_rows, reference
from polars_rap.workload.queries import QuerySet
from test_kernels import random_layout, random_queries  # tests/test_kernels.py


def _repeated_real(rng, column_sizes, n_numeric, n_rows):
    """Rows with few distinct values: numerics on a grid of 5 points, so most rows repeat."""
    codes = np.stack([rng.integers(0, min(k, 3), size=n_rows) for k in column_sizes], axis=1)
    return codes.astype(np.int32), rng.integers(0, 5, size=(n_rows, n_numeric)) / 4.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_counts_over_distinct_rows_equal_counts_row_by_row(seed, monkeypatch):
    """Every footprint reduced (MIN_WORK 1): marginal groups and single queries alike count
    the same rows as without the reduction, and as the NumPy reference."""
    monkeypatch.setattr(distinct_rows, "MIN_WORK", 1)
    rng = np.random.default_rng(seed)
    column_sizes, n_numeric = random_layout(rng)
    queries = random_queries(rng, column_sizes, n_numeric)
    codes, numerics = _repeated_real(rng, column_sizes, n_numeric, 3_000)
    groups, csr = cpu._plan(queries, None, True)
    plan = distinct_rows.footprint_plan(queries, groups, csr)
    assert sum(len(f.groups) for f in plan) == len(groups) and sum(len(f.queries) for f in plan) == len(csr)
    assert any(distinct_rows.distinct_rows(codes, numerics, f) is not None for f in plan)
    reduced = cpu._exact_counts(codes, numerics, queries)
    np.testing.assert_array_equal(reduced, cpu._exact_counts(codes, numerics, queries, distinct=False))
    np.testing.assert_array_equal(reduced / len(codes), reference.answers_exact(codes, numerics, queries))


def test_footprints_name_the_columns_their_queries_read():
    """Two numeric columns, one 3-code categorical column: 20 thresholds on x0 alone, 20 on
    (x0, x1) with code 1, and one on x1 (under MIN_WORK: left out of the plan)."""
    spec = ([([], [([0], [1.0], 0.5)])] * 20
            + [([1], [([0, 1], [0.5, 0.5], 0.5)])] * 20
            + [([], [([1], [1.0], 0.5)])])
    queries = QuerySet.from_lists(spec, [1] * len(spec), [[] for _ in spec], column_sizes=[3], n_numeric=2)
    groups, csr = cpu._plan(queries, None, True)
    plan = distinct_rows.footprint_plan(queries, groups, csr)
    described = sorted((f.categorical.tolist(), f.numeric.tolist(), f.queries.tolist()) for f in plan)
    assert described == [([], [0], list(range(20))), ([0], [0, 1], list(range(20, 40)))]


def test_rows_all_distinct_are_not_reduced_and_weights_sum_to_the_rows():
    rng = np.random.default_rng(0)
    footprint = distinct_rows.Footprint(np.array([0]), np.array([0]), np.zeros(0, np.int64), np.zeros(0, np.int64))
    codes = rng.integers(0, 2, size=(1_000, 2)).astype(np.int32)
    assert distinct_rows.distinct_rows(codes, rng.random((1_000, 2)), footprint) is None
    numerics = rng.integers(0, 3, size=(1_000, 2)) / 2.0
    reduced_codes, reduced_numerics, weights = distinct_rows.distinct_rows(codes, numerics, footprint)
    assert weights.dtype == np.int64 and weights.sum() == 1_000 and len(weights) == 6
    assert not reduced_codes[:, 1].any() and not reduced_numerics[:, 1].any()  # outside the footprint
    rows = {(int(c), float(x)): int(w) for c, x, w in zip(reduced_codes[:, 0], reduced_numerics[:, 0], weights, strict=True)}
    for (code, value), count in rows.items():
        assert count == int(np.sum((codes[:, 0] == code) & (numerics[:, 0] == value)))


def test_benchmark_workload_on_a_real_table_counts_the_same_over_distinct_rows():
    """acs-income-CA: the linear thresholds and mixed marginals read (label, AGEP, JWMNP),
    held in far fewer distinct combinations than rows; the answers are equal to the bit."""
    task = datasets.load_task("acs-income-CA")
    frame = task.frame.head(6_000)
    domain = Domain.from_mapping(frame.schema, task.domain, task.labels)
    queries = benchmark_workload(domain, 0, ("CM", "MM", "LT"), 200, 2_000)
    encoded = encode(frame.select(domain.names), domain)
    groups, csr = cpu._plan(queries, None, True)
    plan = distinct_rows.footprint_plan(queries, groups, csr)
    reducible = [f for f in plan if distinct_rows.distinct_rows(encoded.codes, encoded.numerics, f) is not None]
    assert sum(len(f.queries) for f in reducible) >= 2_000
    np.testing.assert_array_equal(cpu.answers_exact(encoded.codes, encoded.numerics, queries),
                                  cpu._exact_counts(encoded.codes, encoded.numerics, queries, distinct=False) / 6_000)
