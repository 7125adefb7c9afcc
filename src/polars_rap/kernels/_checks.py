"""Host-side checks shared by every kernel backend.

Kernels never validate: a bad index read inside a Numba or CUDA kernel is silent memory
corruption, not an exception. Each public backend function calls these checks once, on the
host, before it allocates and dispatches. They return the arrays in the canonical dtype and
C order the kernels expect (copying only when needed).
"""

from __future__ import annotations

import weakref

import numpy as np

from polars_rap.errors import ParameterError, ParameterTypeError
from polars_rap.workload.queries import QuerySet

_QUERY_DTYPES = {
    "cat_offsets": np.int64,
    "cat_coords": np.int32,
    "halfspace_offsets": np.int64,
    "theta_offsets": np.int64,
    "theta_index": np.int32,
    "theta_weight": np.float32,
    "tau": np.float32,
    "query_class": np.int8,
    "group_offsets": np.int64,
    "group_column_offsets": np.int64,
    "group_columns": np.int32,
    "coord_column": np.int32,
    "coord_code": np.int32,
    "column_sizes": np.int32,
    "null_coord": np.int32,
}


_CHECKED: weakref.WeakKeyDictionary[QuerySet, set[str]] = weakref.WeakKeyDictionary()
"""What has been checked of each live query set (by identity): the projection calls the
kernels thousands of times on one set, and checking it each time cost a fifth of a fit."""


def checked(queries: QuerySet, what: str) -> bool:
    """Whether ``what`` (``"queries"``, or a backend's own structural check) passed on this
    very query set before (query sets are immutable: :class:`~polars_rap.workload.queries.QuerySet`)."""
    return what in _CHECKED.get(queries, ())


def mark_checked(queries: QuerySet, what: str) -> None:
    """Record that ``what`` passed on ``queries`` (forgotten when the set is freed)."""
    _CHECKED.setdefault(queries, set()).add(what)


def _check_offsets(name: str, offsets: np.ndarray, n_items: int) -> None:
    if offsets.ndim != 1 or len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != n_items:
        msg = (
            f"queries.{name} must be a 1-d offsets array starting at 0 and ending at {n_items}; "
            f"got shape {offsets.shape}"
        )
        raise ParameterError(msg)
    if len(offsets) > 1 and np.any(np.diff(offsets) < 0):
        msg = f"queries.{name} must be non-decreasing"
        raise ParameterError(msg)


def _check_range(name: str, values: np.ndarray, stop: int) -> None:
    if len(values) and (values.min() < 0 or values.max() >= stop):
        msg = (
            f"queries.{name} must lie in [0, {stop}); found values in "
            f"[{values.min()}, {values.max()}]"
        )
        raise ParameterError(msg)


def check_queries(queries: QuerySet) -> None:
    """Raise ``ParameterError`` unless ``queries`` is a well-formed ``QuerySet``.

    Checks dtypes, offsets, index ranges and the coordinate layout (one contiguous block of
    coordinates per categorical column, codes ``0 .. size - 1`` in order). It does not check
    the marginal-group structure; backends that rely on it check it themselves. A set that
    passed is not checked again (:func:`checked`).
    """
    if not isinstance(queries, QuerySet):
        msg = f"queries must be a QuerySet; got {type(queries).__name__}"
        raise ParameterTypeError(msg)
    if checked(queries, "queries"):
        return
    for name, dtype in _QUERY_DTYPES.items():
        array = getattr(queries, name)
        if not isinstance(array, np.ndarray) or array.dtype != dtype or array.ndim != 1:
            got = getattr(array, "dtype", type(array).__name__)
            msg = f"queries.{name} must be a 1-d {np.dtype(dtype).name} array; got {got}"
            raise ParameterError(msg)
    n_queries = queries.n_queries
    n_halfspaces = len(queries.tau)
    n_columns = len(queries.column_sizes)
    _check_offsets("cat_offsets", queries.cat_offsets, len(queries.cat_coords))
    _check_offsets("halfspace_offsets", queries.halfspace_offsets, n_halfspaces)
    _check_offsets("theta_offsets", queries.theta_offsets, len(queries.theta_index))
    _check_offsets("group_offsets", queries.group_offsets, n_queries)
    _check_offsets("group_column_offsets", queries.group_column_offsets, len(queries.group_columns))
    if len(queries.halfspace_offsets) != n_queries + 1 or len(queries.query_class) != n_queries:
        msg = "queries.halfspace_offsets and queries.query_class must have one entry per query"
        raise ParameterError(msg)
    if len(queries.group_column_offsets) != len(queries.group_offsets):
        msg = "queries.group_column_offsets must have one entry per group (plus one)"
        raise ParameterError(msg)
    if len(queries.theta_weight) != len(queries.theta_index):
        msg = "queries.theta_weight and queries.theta_index must have the same length"
        raise ParameterError(msg)
    if not (np.all(np.isfinite(queries.theta_weight)) and np.all(np.isfinite(queries.tau))):
        msg = "queries.theta_weight and queries.tau must be finite"
        raise ParameterError(msg)
    if np.any(queries.column_sizes < 1):
        msg = "queries.column_sizes must be >= 1 for every categorical column"
        raise ParameterError(msg)
    numeric_offset = int(queries.numeric_offset)
    if numeric_offset != int(queries.column_sizes.sum()) or queries.n_numeric < 0:
        msg = (
            f"queries.numeric_offset must equal sum(column_sizes) = "
            f"{int(queries.column_sizes.sum())}; got {numeric_offset}"
        )
        raise ParameterError(msg)
    expected_column = np.repeat(np.arange(n_columns, dtype=np.int32), queries.column_sizes)
    block_starts = np.repeat(
        np.cumsum(queries.column_sizes, dtype=np.int64) - queries.column_sizes,
        queries.column_sizes,
    )
    expected_code = np.arange(numeric_offset, dtype=np.int64) - block_starts
    if not (
        np.array_equal(queries.coord_column, expected_column)
        and np.array_equal(queries.coord_code, expected_code)
    ):
        msg = (
            "queries.coord_column/coord_code must describe one contiguous block per categorical "
            "column with codes 0 .. size - 1 in order (the relaxed-matrix layout)"
        )
        raise ParameterError(msg)
    _check_range("cat_coords", queries.cat_coords, numeric_offset)
    _check_range("theta_index", queries.theta_index, queries.n_numeric)
    _check_range("group_columns", queries.group_columns, n_columns)
    _check_nullable_numerics(queries)
    mark_checked(queries, "queries")


def _check_nullable_numerics(queries: QuerySet) -> None:
    """``null_coord`` points at code 1 of a distinct two-code block per nullable column, and
    the halfspaces over nullable columns keep the independence the relaxation's product form
    assumes (see ``polars_rap.workload.queries``): each nullable column in at most one halfspace of a
    query, and never beside a coordinate of its own null-indicator block. Costs nothing when
    no numeric column is nullable."""
    null_coord = queries.null_coord
    if null_coord.shape != (queries.n_numeric,):
        msg = (
            f"queries.null_coord must have one entry per numeric column ({queries.n_numeric}); "
            f"got shape {null_coord.shape}"
        )
        raise ParameterError(msg)
    nullable = np.flatnonzero(null_coord >= 0)
    if len(nullable) == 0:
        if np.any(null_coord != -1):
            msg = f"queries.null_coord must hold -1 or a coordinate; found {int(null_coord.min())}"
            raise ParameterError(msg)
        return
    coords = null_coord[nullable]
    if np.any((null_coord < -1) | (null_coord >= queries.numeric_offset)):
        msg = (
            f"queries.null_coord must hold -1 or a categorical coordinate in "
            f"[0, {queries.numeric_offset}); found values in [{int(null_coord.min())}, "
            f"{int(null_coord.max())}]"
        )
        raise ParameterError(msg)
    blocks = queries.coord_column[coords]
    if (np.any(queries.coord_code[coords] != 1) or np.any(queries.column_sizes[blocks] != 2)
            or len(np.unique(blocks)) != len(blocks)):
        msg = (
            "queries.null_coord must point at code 1 (null) of a two-code null-indicator block, "
            "a different block for each nullable numeric column (build the queries with "
            "polars_rap.workload.builders, which reads the layout off the domain)"
        )
        raise ParameterError(msg)
    # (query, nullable column) of every theta entry over a nullable column
    n_halfspaces = len(queries.tau)
    query_of_halfspace = np.repeat(np.arange(queries.n_queries, dtype=np.int64),
                                   np.diff(queries.halfspace_offsets))
    halfspace_of_entry = np.repeat(np.arange(n_halfspaces, dtype=np.int64),
                                   np.diff(queries.theta_offsets))
    reads_null = null_coord[queries.theta_index] >= 0
    entry_query = query_of_halfspace[halfspace_of_entry[reads_null]]
    entry_column = queries.theta_index[reads_null].astype(np.int64)
    pairs = entry_query * queries.n_numeric + entry_column
    if len(np.unique(pairs)) != len(pairs):
        msg = (
            "a nullable numeric column appears twice in the halfspaces of one query; its null "
            "indicator would be counted as independent of itself. Use it in one halfspace per "
            "query (and once in that halfspace's theta)"
        )
        raise ParameterError(msg)
    n_columns = len(queries.column_sizes)
    indicator_pairs = entry_query * n_columns + queries.coord_column[null_coord[entry_column]]
    query_of_coord = np.repeat(np.arange(queries.n_queries, dtype=np.int64),
                               np.diff(queries.cat_offsets))
    coord_pairs = query_of_coord * n_columns + queries.coord_column[queries.cat_coords]
    if np.intersect1d(indicator_pairs, coord_pairs).size:
        msg = (
            "a query holds a coordinate of a nullable numeric column's null-indicator block and "
            "a halfspace over that column; the relaxation multiplies factors as independent, "
            "which these are not. Split the query, or leave the indicator out"
        )
        raise ParameterError(msg)


def check_real_data(
    codes: np.ndarray, numerics: np.ndarray, queries: QuerySet
) -> tuple[np.ndarray, np.ndarray]:
    """``(int32[n, n_categorical_columns], float64[n, n_numeric])`` C-ordered copies-if-needed
    of ``codes`` and ``numerics``; raise ``ValueError`` on a shape, dtype or code-range error."""
    codes = np.asarray(codes)
    numerics = np.asarray(numerics)
    n_columns = len(queries.column_sizes)
    if codes.ndim != 2 or codes.shape[1] != n_columns:
        msg = f"codes must have shape (n_rows, {n_columns}); got {codes.shape}"
        raise ParameterError(msg)
    if numerics.ndim != 2 or numerics.shape != (codes.shape[0], queries.n_numeric):
        expected = (codes.shape[0], queries.n_numeric)
        msg = f"numerics must have shape {expected}; got {numerics.shape}"
        raise ParameterError(msg)
    if codes.shape[0] == 0:
        msg = "answers_exact needs at least one row (the mean over zero rows is undefined); got 0"
        raise ParameterError(msg)
    if codes.dtype.kind not in "iu":
        msg = f"codes must be an integer array (category codes); got dtype {codes.dtype}"
        raise ParameterError(msg)
    if numerics.dtype.kind != "f":
        msg = f"numerics must be a float array (scaled to [0, 1]); got dtype {numerics.dtype}"
        raise ParameterError(msg)
    if n_columns:
        low = codes.min(axis=0)
        high = codes.max(axis=0)
        bad = np.flatnonzero((low < 0) | (high >= queries.column_sizes))
        if len(bad):
            column = int(bad[0])
            msg = (
                f"codes of categorical column {column} must lie in "
                f"[0, {int(queries.column_sizes[column])}); found [{int(low[column])}, "
                f"{int(high[column])}]; encode the data with the same domain as the queries"
            )
            raise ParameterError(msg)
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    numerics = np.ascontiguousarray(numerics, dtype=np.float64)
    return codes, numerics


def check_relaxed(X: np.ndarray, queries: QuerySet) -> np.ndarray:
    """``X`` as a C-ordered ``float32`` or ``float64[n_rows, n_coords]`` array (dtype kept)."""
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        msg = f"X must be float32 or float64; got dtype {X.dtype}"
        raise ParameterError(msg)
    if X.ndim != 2 or X.shape[1] != queries.n_coords:
        msg = f"X must have shape (n_rows, {queries.n_coords}); got {X.shape}"
        raise ParameterError(msg)
    if X.shape[0] == 0:
        msg = "X needs at least one row (the mean over zero rows is undefined); got 0"
        raise ParameterError(msg)
    return np.ascontiguousarray(X)


def check_sigma(sigma: np.ndarray | float, n_queries: int) -> np.ndarray:
    """``float32[n_queries]`` inverse temperatures; a scalar is broadcast.

    Every value must be positive (``inf`` means hard thresholds).
    """
    sigma = np.asarray(sigma, dtype=np.float32)
    if sigma.ndim == 0:
        sigma = np.full(n_queries, sigma, dtype=np.float32)
    if sigma.shape != (n_queries,):
        msg = f"sigma must be a scalar or have shape ({n_queries},); got {sigma.shape}"
        raise ParameterError(msg)
    if n_queries and not np.all(sigma > 0):  # also rejects NaN
        msg = f"sigma must be > 0 (inf for hard thresholds); found minimum {np.min(sigma)}"
        raise ParameterError(msg)
    return np.ascontiguousarray(sigma)


def check_targets(targets: np.ndarray, n_queries: int) -> np.ndarray:
    """``float64[n_queries]`` finite targets."""
    targets = np.ascontiguousarray(targets, dtype=np.float64)
    if targets.shape != (n_queries,):
        msg = f"targets must have shape ({n_queries},); got {targets.shape}"
        raise ParameterError(msg)
    if not np.all(np.isfinite(targets)):
        msg = "targets must be finite"
        raise ParameterError(msg)
    return targets


def check_weights(weights: np.ndarray | None, n_queries: int) -> np.ndarray:
    """``float64[n_queries]`` finite, non-negative loss weights (all ones when None)."""
    if weights is None:
        return np.ones(n_queries, dtype=np.float64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if weights.shape != (n_queries,):
        msg = f"weights must have shape ({n_queries},); got {weights.shape}"
        raise ParameterError(msg)
    if not (np.all(np.isfinite(weights)) and np.all(weights >= 0.0)):
        msg = "weights must be finite and >= 0"
        raise ParameterError(msg)
    return weights


def check_relaxed_call(
    X: np.ndarray, queries: QuerySet, sigma: np.ndarray | float, targets: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The checks every backend's ``answers_relaxed`` / ``loss_and_grad`` start with:
    ``(X, sigma, targets)`` in canonical form (``targets`` stays ``None`` when not given)."""
    check_queries(queries)
    X = check_relaxed(X, queries)
    sigma = check_sigma(sigma, queries.n_queries)
    if targets is not None:
        targets = check_targets(targets, queries.n_queries)
    return X, sigma, targets
