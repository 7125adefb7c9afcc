"""Tiny kernel problems shared by the CUDA tests (``test_kernels_cuda.py``) and the CPU test of
the gradient's gather index (``test_gradient_index.py``): a query set with every shape the
kernels meet, and real and relaxed data on its domain."""

from __future__ import annotations

import math

import numpy as np

from polars_rap.queries import QueryClass, QuerySet

N_ROWS = 23  # > 16-row chunks, > 4 threads x 3 blocks, not a multiple of any of them

COLUMN_SIZES = [2, 3, 1, 2]  # a one-category column; the label (2 values) last
N_NUMERIC = 3


def _halfspace(rng, width):
    index = rng.choice(N_NUMERIC, size=width, replace=False)
    weight = rng.standard_normal(width) / math.sqrt(width)
    return index.tolist(), weight.tolist(), float(weight @ rng.random(width))


def tiny_queries(rng) -> QuerySet:
    """Every query shape the kernels meet: categorical marginals (one over the one-category
    column), a mixed marginal sharing a prefix threshold, linear thresholds, a pure-halfspace
    query with two halfspaces, a repeated coordinate (x_c^2), and the empty product."""
    starts = np.cumsum(COLUMN_SIZES) - COLUMN_SIZES
    label = len(COLUMN_SIZES) - 1
    queries, group_sizes, group_columns, classes = [], [], [], []

    def add_group(columns, halfspaces, query_class):
        cells = np.indices([COLUMN_SIZES[c] for c in columns]).reshape(len(columns), -1).T
        for cell in cells:
            queries.append(([int(starts[c] + k) for c, k in zip(columns, cell)], halfspaces))
        group_sizes.append(len(cells))
        group_columns.append(list(columns))
        classes.extend([query_class] * len(cells))

    def add_single(coords, halfspaces, query_class):
        queries.append((coords, halfspaces))
        group_sizes.append(1)
        group_columns.append([])
        classes.append(query_class)

    add_group([0, 1], [], QueryClass.CATEGORICAL_MARGINAL)
    add_group([2, label], [], QueryClass.CATEGORICAL_MARGINAL)
    add_group([label], [([int(rng.integers(N_NUMERIC))], [1.0], float(rng.random()))],
              QueryClass.MIXED_MARGINAL)
    for width in (2, 3):
        add_single([int(starts[label] + rng.integers(2))], [_halfspace(rng, width)],
                   QueryClass.LINEAR_THRESHOLD)
    add_single([], [_halfspace(rng, 3), ([1], [1.0], 0.6)], QueryClass.LINEAR_THRESHOLD)
    add_single([int(starts[1] + 2), int(starts[1] + 2)], [], QueryClass.CATEGORICAL_MARGINAL)
    add_single([], [], QueryClass.CATEGORICAL_MARGINAL)
    return QuerySet.from_lists(queries, group_sizes, group_columns, COLUMN_SIZES, N_NUMERIC, classes)


def real_data(rng, column_sizes=COLUMN_SIZES, n_numeric=N_NUMERIC, n_rows=N_ROWS):
    codes = np.stack([rng.integers(0, k, size=n_rows) for k in column_sizes] or
                     [np.zeros(n_rows, dtype=np.int64)], axis=1)[:, : len(column_sizes)]
    return codes.astype(np.int32), rng.random((n_rows, n_numeric))


def relaxed_data(rng, dtype, column_sizes=COLUMN_SIZES, n_numeric=N_NUMERIC, n_rows=N_ROWS):
    blocks = [rng.dirichlet(np.ones(k), size=n_rows) for k in column_sizes]
    X = np.hstack([*blocks, rng.random((n_rows, n_numeric))])
    X[0, : sum(column_sizes)] = 0.0  # zero factors: the gradient must not divide by them
    return X.astype(dtype)
