"""The gradient's gather index (``kernels.gradient_index``), on the CPU: every factor of every
plain query is one entry of the coordinate it reads, and a NumPy gather over the index gives
the reference gradient; queries over nullable columns are left to the scatter kernel."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from kernel_problems import relaxed_data, tiny_queries  # tests/kernel_problems.py
from polars_rap.kernels import reference
from polars_rap.kernels.gradient_index import MAX_FAST_FACTORS, gradient_index
from polars_rap.queries import QuerySet


def _module(name):
    path = Path(__file__).with_name(f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"{name}_for_index", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _halfspace(X, queries, h, sigma):
    """(value, slope) float64[n_rows] of a plain halfspace, as the kernels compute them."""
    dot = np.zeros(X.shape[0])
    for t in range(queries.theta_offsets[h], queries.theta_offsets[h + 1]):
        dot += np.float64(queries.theta_weight[t]) * X[:, queries.numeric_offset + queries.theta_index[t]]
    margin = np.float64(queries.tau[h]) - dot
    if np.isinf(sigma):
        return (margin >= 0).astype(np.float64), np.zeros_like(margin)
    s = 1.0 / (1.0 + np.exp(-sigma * margin))
    return s, -sigma * s * (1.0 - s)


def gathered_gradient(X, queries, weights, sigma):
    """float64[n_rows, n_coords]: for each coordinate, the sum over its index entries of
    weights[q] * d value_q / d X[:, c], each entry's term built as the gather kernel builds it."""
    index = gradient_index(queries)
    grad = np.zeros(X.shape)
    for c in range(queries.n_coords):
        for e in range(index.offsets[c], index.offsets[c + 1]):
            q, slot, own = index.query[e], index.slot[e], index.halfspace[e]
            value = np.full(X.shape[0], weights[q])
            if index.others[e, 0] != -2:
                for other in index.others[e]:
                    if other >= 0:
                        value = value * X[:, other]
            else:
                for p in range(queries.cat_offsets[q], queries.cat_offsets[q + 1]):
                    if own >= 0 or p != slot:
                        value = value * X[:, queries.cat_coords[p]]
                for h in range(queries.halfspace_offsets[q], queries.halfspace_offsets[q + 1]):
                    factor, slope = _halfspace(X, queries, h, np.float64(sigma[q]))
                    value = value * (slope * np.float64(queries.theta_weight[slot]) if h == own else factor)
            grad[:, c] += value
    return grad


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("sigma_kind", [3.0, np.inf, "mixed"])
def test_gather_over_the_index_gives_the_reference_gradient(seed, sigma_kind):
    """Marginal cells, a one-category column, mixed marginals, linear thresholds, two
    halfspaces in one query, a repeated coordinate (x_c^2) and the empty product."""
    rng = np.random.default_rng(seed)
    queries = tiny_queries(rng)
    X = relaxed_data(rng, np.float64)
    sigma = (rng.choice([np.inf, 0.5, 20.0], size=queries.n_queries) if sigma_kind == "mixed"
             else np.full(queries.n_queries, sigma_kind))
    targets = rng.random(queries.n_queries)
    answers = reference._relaxed64(X, queries, sigma)
    weights = 2.0 * (answers - targets) / X.shape[0]
    _, expected = reference.loss_and_grad(X, queries, targets, sigma)
    actual = gathered_gradient(X, queries, weights, sigma)
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-14)


def test_every_factor_is_one_entry_and_entries_follow_their_queries():
    queries = tiny_queries(np.random.default_rng(0))
    index = gradient_index(queries)
    n_factors = len(queries.cat_coords) + len(queries.theta_index)
    assert index.offsets[-1] == len(index.query) == n_factors
    assert len(index.scatter_queries) == 0
    for c in range(queries.n_coords):
        entries = slice(index.offsets[c], index.offsets[c + 1])
        assert np.all(np.diff(index.query[entries]) >= 0)
        for slot, own in zip(index.slot[entries], index.halfspace[entries], strict=True):
            if own < 0:
                assert queries.cat_coords[slot] == c
            else:
                assert queries.numeric_offset + queries.theta_index[slot] == c
                assert queries.theta_offsets[own] <= slot < queries.theta_offsets[own + 1]
    # the repeated coordinate (x_c * x_c): two entries, each listing the other
    repeated = [q for q in range(queries.n_queries)
                if len(set(queries.cat_coords[queries.cat_offsets[q]:queries.cat_offsets[q + 1]])) == 1
                and queries.cat_offsets[q + 1] - queries.cat_offsets[q] == 2]
    assert len(repeated) == 1
    rows = np.flatnonzero(index.query == repeated[0])
    assert len(rows) == 2
    c = queries.cat_coords[queries.cat_offsets[repeated[0]]]
    assert np.all(index.others[rows] == [c, -1, -1])


def test_only_short_marginal_cells_carry_their_other_coordinates():
    """Cells of at most MAX_FAST_FACTORS categorical factors and no halfspace list the other
    coordinates; a longer cell and any query with a halfspace are walked (-2)."""
    n = MAX_FAST_FACTORS + 1
    queries = QuerySet.from_lists(
        [(list(range(0, 2 * n, 2)), []), ([0, 2], []), ([1], [([0], [1.0], 0.5)])],
        [1, 1, 1], [[], [], []], [2] * n, 1)
    index = gradient_index(queries)
    by_query = {q: index.others[index.query == q] for q in range(3)}
    assert np.all(by_query[0][:, 0] == -2)
    assert sorted(map(tuple, by_query[1])) == [(0, -1, -1), (2, -1, -1)]
    assert np.all(by_query[2][:, 0] == -2)


def test_queries_over_nullable_columns_are_left_to_the_scatter_kernel():
    problem = _module("test_null_halfspaces")
    queries = problem.null_queries()
    index = gradient_index(queries)
    null_coord = np.asarray(queries.null_coord)
    expected = []
    for q in range(queries.n_queries):
        thetas = [queries.theta_index[t]
                  for h in range(queries.halfspace_offsets[q], queries.halfspace_offsets[q + 1])
                  for t in range(queries.theta_offsets[h], queries.theta_offsets[h + 1])]
        if any(null_coord[j] >= 0 for j in thetas):
            expected.append(q)
    assert 0 < len(expected) < queries.n_queries
    np.testing.assert_array_equal(index.scatter_queries, expected)
    assert not np.isin(index.query, expected).any()
