"""Benchmark of the Numba CPU query kernels (``polars_rap.kernels.cpu``) on realistic sizes.

Workloads (synthetic, seeded; the kernels' cost does not depend on the values):

- relaxed: ``n_rel = 1000`` relaxed rows; ~50,000 categorical-marginal cells in 150 groups
  (two feature columns of 2..25 categories x a 2-category label, all cells in row-major
  order) plus 500 linear thresholds (one label coordinate x one halfspace over 2..6 numeric
  columns);
- exact: ``n = 35,000`` rows; ~400,000 marginal cells plus 20,000 linear thresholds;
- nullable: 20,000 linear thresholds over 25 numeric columns, 6 of them nullable (as the
  default workload draws them on the 100-column network of ``bench/wide.py``), on 1,000
  relaxed rows: relaxed (sigma = 8) and hard (sigma = inf, how selection scores them) answers,
  and the loss and gradient. Each halfspace sums 16 null patterns.

Each figure is the median of several runs after a warm-up call (which also compiles or loads
the Numba cache). Throughput is query x row evaluations per second (``n_queries * n_rows /
seconds``); for the structured marginal paths this counts every cell as evaluated on every
row, although the kernel does less work. Both the structured marginal path and the plain CSR
path are timed, on the same inputs, through the private ``_relaxed`` / ``_exact_counts``
entry points of ``cpu`` (the public functions always take the structured path).

Run from the repository root::

    PYTHONPATH=src python bench/kernels_cpu.py            # writes bench/results/kernels_cpu.json
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

import numba
import numpy as np

from polars_rap.kernels import cpu, reference
from polars_rap.kernels._checks import check_queries, check_real_data, check_relaxed, check_sigma
from polars_rap.schema.domain import Domain
from polars_rap.workload.builders import linear_thresholds
from polars_rap.workload.queries import QuerySet, _offsets

if __package__ in (None, ""):  # run as ``python bench/<script>.py``: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

N_FEATURES = 50
N_NUMERIC = 6
LABEL_SIZE = 2
NULLABLE_NUMERIC = (25, 6)
"""Numeric columns of the nullable section, and how many of them are nullable."""


def make_domain(rng: np.random.Generator) -> np.ndarray:
    """column_sizes: ``N_FEATURES`` feature columns of 2..25 categories, then the label."""
    return np.append(rng.integers(2, 26, size=N_FEATURES), LABEL_SIZE).astype(np.int32)


def make_queries(
    column_sizes: np.ndarray, n_cells_target: int, n_linear: int, rng: np.random.Generator
) -> QuerySet:
    """Marginal groups (feature pair x label) until ``n_cells_target`` cells, then ``n_linear``
    single linear-threshold queries; built directly as CSR arrays (from_lists is too slow
    for 400,000 queries)."""
    starts = np.cumsum(column_sizes) - column_sizes
    label = len(column_sizes) - 1
    pairs = [(a, b) for a in range(N_FEATURES) for b in range(a + 1, N_FEATURES)]
    order = rng.permutation(len(pairs))
    cat_coords, group_sizes, group_columns = [], [], []
    n_cells = 0
    for p in order:
        if n_cells >= n_cells_target:
            break
        columns = (*pairs[p], label)
        shape = [int(column_sizes[c]) for c in columns]
        cells = np.indices(shape).reshape(len(shape), -1).T + starts[list(columns)]
        cat_coords.append(cells.ravel())
        group_sizes.append(len(cells))
        group_columns.append(columns)
        n_cells += len(cells)
    label_coords = starts[label] + rng.integers(0, LABEL_SIZE, size=n_linear)
    widths = rng.integers(2, N_NUMERIC + 1, size=n_linear)
    theta_index = [np.sort(rng.choice(N_NUMERIC, size=w, replace=False)) for w in widths]
    theta_weight = [rng.standard_normal(w) / np.sqrt(w) for w in widths]
    tau = [float(w @ rng.random(len(w))) for w in theta_weight]
    cat_lengths = np.concatenate([np.full(n_cells, 3), np.ones(n_linear)]).astype(np.int64)
    halfspace_lengths = np.concatenate([np.zeros(n_cells), np.ones(n_linear)]).astype(np.int64)
    n_coords = int(column_sizes.sum())
    return QuerySet(
        cat_offsets=_offsets(cat_lengths),
        cat_coords=np.concatenate([*cat_coords, label_coords]).astype(np.int32),
        halfspace_offsets=_offsets(halfspace_lengths),
        theta_offsets=_offsets(widths.astype(np.int64)),
        theta_index=np.concatenate(theta_index).astype(np.int32),
        theta_weight=np.concatenate(theta_weight).astype(np.float32),
        tau=np.asarray(tau, dtype=np.float32),
        query_class=np.concatenate([np.zeros(n_cells), np.full(n_linear, 2)]).astype(np.int8),
        group_offsets=_offsets(np.array(group_sizes + [1] * n_linear, dtype=np.int64)),
        group_column_offsets=_offsets(
            np.array([3] * len(group_sizes) + [0] * n_linear, dtype=np.int64)
        ),
        group_columns=np.array([c for cs in group_columns for c in cs], dtype=np.int32),
        coord_column=np.repeat(np.arange(len(column_sizes), dtype=np.int32), column_sizes),
        coord_code=np.concatenate([np.arange(k, dtype=np.int32) for k in column_sizes]),
        column_sizes=column_sizes,
        numeric_offset=n_coords,
        n_numeric=N_NUMERIC,
    )


def relaxed_matrix(column_sizes: np.ndarray, n_rows: int, rng: np.random.Generator) -> np.ndarray:
    blocks = [rng.dirichlet(np.ones(k), size=n_rows) for k in column_sizes]
    return np.hstack([*blocks, rng.random((n_rows, N_NUMERIC))]).astype(np.float32)


def nullable_thresholds(n_queries: int, rng: np.random.Generator) -> tuple[QuerySet, np.ndarray]:
    """``n_queries`` default linear thresholds over :data:`NULLABLE_NUMERIC` numeric columns
    (the first ones nullable) beside a 2-category label, and 1,000 relaxed rows for them."""
    import polars as pl

    n_numeric, n_nullable = NULLABLE_NUMERIC
    mapping = {"y": [0, 1]}
    mapping.update({f"x{j}": {"bounds": (0.0, 1.0), "nullable": j < n_nullable} for j in range(n_numeric)})
    schema = {"y": pl.Int64, **{f"x{j}": pl.Float64 for j in range(n_numeric)}}
    queries = linear_thresholds(Domain.from_mapping(schema, mapping, ["y"]), n_queries, rng)
    blocks = [rng.dirichlet(np.ones(k), size=1000) for k in queries.column_sizes]
    X = np.hstack([*blocks, rng.random((1000, queries.n_numeric))]).astype(np.float32)
    return queries, X


def median_seconds(function, repeats: int) -> float:
    function()  # warm-up: compile or load the cache, fault in memory
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def figure(seconds: float, n_queries: int, n_rows: int, **extra) -> dict:
    return {
        "seconds": seconds,
        "n_queries": n_queries,
        "n_rows": n_rows,
        "evaluations_per_second": n_queries * n_rows / seconds,
        **extra,
    }


def _require(condition: bool, message: str) -> None:
    """Refuse to time kernels whose results disagree."""
    if not condition:
        raise RuntimeError(message)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    default_output = Path(__file__).parent / "results" / "kernels_cpu.json"
    parser.add_argument("--output", type=Path, default=default_output)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rng = np.random.default_rng(20240601)
    column_sizes = make_domain(rng)

    # ---------------------------------------------------------------- relaxed
    relaxed_queries = make_queries(column_sizes, 50_000, 500, rng)
    m_rel = relaxed_queries.n_queries
    X = relaxed_matrix(column_sizes, 1000, rng)
    sigma = np.full(m_rel, 8.0, dtype=np.float32)
    targets = rng.random(m_rel) * 0.01
    check_queries(relaxed_queries)
    X = check_relaxed(X, relaxed_queries)
    sigma = check_sigma(sigma, m_rel)
    n_rel = X.shape[0]
    # correctness guard: structured and CSR paths agree (and match the reference on a slice)
    a_struct, _, g_struct = cpu._relaxed(X, relaxed_queries, sigma, targets, structured=True)
    a_csr, _, g_csr = cpu._relaxed(X, relaxed_queries, sigma, targets, structured=False)
    _require(np.allclose(a_struct, a_csr, rtol=1e-9, atol=1e-12), "relaxed paths differ")
    _require(np.allclose(g_struct, g_csr, rtol=1e-4, atol=1e-9), "gradient paths differ")
    few = relaxed_queries.take_groups(np.arange(0, relaxed_queries.n_groups, 37))
    _require(
        np.allclose(cpu.answers_relaxed(X, few, 8.0), reference.answers_relaxed(X, few, 8.0), atol=1e-6),
        "cpu relaxed answers differ from the reference",
    )

    def timed(function, n_queries, n_rows, repeats=args.repeats, **extra):
        return figure(median_seconds(function, repeats), n_queries, n_rows, repeats=repeats, **extra)

    relaxed = {}
    for path, structured in (("structured", True), ("csr", False)):
        relaxed[path] = {
            "answers_relaxed": timed(
                lambda s=structured: cpu._relaxed(X, relaxed_queries, sigma, None, structured=s),
                m_rel, n_rel,
            ),
            "loss_and_grad": timed(
                lambda s=structured: cpu._relaxed(X, relaxed_queries, sigma, targets, structured=s),
                m_rel, n_rel,
            ),
        }
    relaxed["public"] = {
        "answers_relaxed": timed(lambda: cpu.answers_relaxed(X, relaxed_queries, sigma), m_rel, n_rel),
        "loss_and_grad": timed(
            lambda: cpu.loss_and_grad(X, relaxed_queries, targets, sigma), m_rel, n_rel
        ),
    }
    for name in ("answers_relaxed", "loss_and_grad"):
        relaxed[f"speedup_structured_over_csr_{name}"] = (
            relaxed["csr"][name]["seconds"] / relaxed["structured"][name]["seconds"]
        )

    # --------------------------------------------------------------- nullable
    null_rng = np.random.default_rng(7)  # its own stream: the sections before and after keep theirs
    null_queries, X_null = nullable_thresholds(20_000, null_rng)
    m_null = null_queries.n_queries
    null_targets = null_rng.random(m_null) * 0.01
    plain_queries = dataclasses.replace(null_queries, null_coord=np.full(null_queries.n_numeric, -1, np.int32))
    few = null_queries.take_groups(np.arange(0, null_queries.n_groups, 97))
    for level in (8.0, np.inf):
        _require(
            np.allclose(cpu.answers_relaxed(X_null, few, level), reference.answers_relaxed(X_null, few, level),
                        atol=1e-6),
            f"cpu answers over nullable columns differ from the reference at sigma={level}",
        )
    nullable = {
        "n_numeric": NULLABLE_NUMERIC[0],
        "n_nullable": NULLABLE_NUMERIC[1],
        "answers_relaxed": timed(lambda: cpu.answers_relaxed(X_null, null_queries, 8.0), m_null, 1000),
        "answers_hard": timed(lambda: cpu.answers_relaxed(X_null, null_queries, np.inf), m_null, 1000),
        "loss_and_grad": timed(lambda: cpu.loss_and_grad(X_null, null_queries, null_targets, 8.0), m_null, 1000),
        # the same halfspaces with no column nullable: what the 16 patterns cost on top
        "plain_answers_relaxed": timed(lambda: cpu.answers_relaxed(X_null, plain_queries, 8.0), m_null, 1000),
        "plain_loss_and_grad": timed(lambda: cpu.loss_and_grad(X_null, plain_queries, null_targets, 8.0),
                                     m_null, 1000),
    }

    # ------------------------------------------------------------------ exact
    exact_queries = make_queries(column_sizes, 400_000, 20_000, rng)
    n = 35_000
    codes = np.stack([rng.integers(0, k, size=n) for k in column_sizes], axis=1).astype(np.int32)
    numerics = rng.random((n, N_NUMERIC))
    check_queries(exact_queries)
    codes, numerics = check_real_data(codes, numerics, exact_queries)
    m_exact = exact_queries.n_queries
    is_marginal = np.diff(exact_queries.group_column_offsets) > 0
    marginal_part = exact_queries.take_groups(np.flatnonzero(is_marginal))
    linear_part = exact_queries.take_groups(np.flatnonzero(~is_marginal))
    n_groups = int(is_marginal.sum())
    _require(
        np.array_equal(
            cpu._exact_counts(codes, numerics, marginal_part, structured=True, distinct=False),
            cpu._exact_counts(codes, numerics, marginal_part, structured=False, distinct=False),
        ),
        "exact histogram and CSR counts differ",
    )
    few = exact_queries.take_groups(np.arange(0, exact_queries.n_groups, 211))
    _require(
        np.array_equal(
            cpu.answers_exact(codes[:3000], numerics[:3000], few),
            reference.answers_exact(codes[:3000], numerics[:3000], few),
        ),
        "cpu exact answers differ from the reference",
    )
    slow_repeats = max(1, min(args.repeats, 3))
    exact = {
        "public_all": timed(lambda: cpu.answers_exact(codes, numerics, exact_queries), m_exact, n),
        "marginal_cells_histogram": timed(
            lambda: cpu._exact_counts(codes, numerics, marginal_part, structured=True, distinct=False),
            marginal_part.n_queries, n, n_groups=n_groups,
        ),
        "marginal_cells_csr": timed(
            lambda: cpu._exact_counts(codes, numerics, marginal_part, structured=False, distinct=False),
            marginal_part.n_queries, n, repeats=slow_repeats, n_groups=n_groups,
        ),
        "linear_thresholds_csr": timed(
            lambda: cpu._exact_counts(codes, numerics, linear_part, distinct=False), linear_part.n_queries, n
        ),
    }
    exact["speedup_histogram_over_csr"] = (
        exact["marginal_cells_csr"]["seconds"] / exact["marginal_cells_histogram"]["seconds"]
    )

    result = {
        "threads": {
            "numba_threads": numba.get_num_threads(),
            "numba_threading_layer": numba.threading_layer(),
            "load_average_1min_before": load_before,
            "load_average_1min_after": os.getloadavg()[0],
        },
        "kept_marginal_path": {
            "relaxed": "structured" if min(
                relaxed["speedup_structured_over_csr_answers_relaxed"],
                relaxed["speedup_structured_over_csr_loss_and_grad"],
            ) > 1.5 else "csr",
            "exact": "histogram (one pass per marginal group)",
            "rule": "keep the structured relaxed path only if it is > 1.5x faster than CSR",
        },
        "notes": [
            "structured relaxed path: per marginal group and block of rows, walk the cells in "
            "row-major order keeping one prefix product vector (over the block's rows) per "
            "group column; each cell costs one multiply-add per row (a dot product with the "
            "last column's probabilities); the gradient is reverse mode through the same walk",
            "csr path: per query and block of rows, multiply its coordinates' rows of X^T "
            "(vectorised over rows); gradient from prefix/suffix products of the factors",
            "evaluations_per_second = n_queries * n_rows / seconds for every path, so the "
            "marginal histogram figure is an effective rate",
            "synthetic seeded codes/numerics stand in for real rows: the kernels' cost does not "
            "depend on the values",
        ],
        "repeats": args.repeats,
        "statistic": "median seconds after one warm-up call",
        "relaxed": {
            "n_rows": n_rel,
            "n_coords": relaxed_queries.n_coords,
            "n_queries": m_rel,
            "n_marginal_groups": int(np.sum(np.diff(relaxed_queries.group_column_offsets) > 0)),
            "n_linear_thresholds": 500,
            "sigma": 8.0,
            "X_dtype": "float32",
            **relaxed,
        },
        "exact": {
            "n_rows": n,
            "n_queries": m_exact,
            "n_marginal_groups": n_groups,
            "n_marginal_cells": marginal_part.n_queries,
            "n_linear_thresholds": linear_part.n_queries,
            **exact,
        },
        "nullable": nullable,
    }
    from bench.harness import write_record

    print(write_record(args.output, "kernels_cpu", **result).read_text())


if __name__ == "__main__":
    main()
