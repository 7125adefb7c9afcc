"""Reference kernels: plain NumPy, one query at a time, written to be obviously right.

Used by the tests as the definition the fast backends are checked against; speed is
irrelevant here. The formulas are those of ``polars_rap.queries`` (design.md §3):

    exact:    q(x) = prod_{c in C_q} 1[code_c]  * prod_{h in H_q} 1[theta_h . x <= tau_h]
    relaxed:  q(x) = prod_{c in C_q} x_c        * prod_{h in H_q} s(sigma_q (tau_h - theta_h . x))

Every halfspace dot product ``theta_h . x`` is accumulated in float64, term by term in the
stored order, from the float32 weights upcast; the fast backends do the same, so hard
thresholds agree to the bit.
"""

from __future__ import annotations

import numpy as np

from polars_rap.kernels._checks import (
    check_queries,
    check_real_data,
    check_relaxed_call,
    check_weights,
)
from polars_rap.queries import QuerySet

__all__ = ["answers_exact", "answers_relaxed", "loss_and_grad"]


def _dot(values: np.ndarray, queries: QuerySet, h: int, numeric_start: int) -> np.ndarray:
    """float64[n_rows]: ``theta_h . x`` for every row, accumulated term by term."""
    dot = np.zeros(values.shape[0], dtype=np.float64)
    for t in range(queries.theta_offsets[h], queries.theta_offsets[h + 1]):
        column = numeric_start + int(queries.theta_index[t])
        dot += np.float64(queries.theta_weight[t]) * values[:, column].astype(np.float64)
    return dot


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """Logistic function, without overflow for large ``|z|``."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0, e) / (1.0 + e)


def _halfspace_factor(
    X: np.ndarray, queries: QuerySet, h: int, sigma: np.float64
) -> tuple[np.ndarray, np.ndarray]:
    """(factor, d factor / d (theta . x)), each float64[n_rows], of halfspace ``h``."""
    margin = np.float64(queries.tau[h]) - _dot(X, queries, h, queries.numeric_offset)
    if np.isinf(sigma):
        return (margin >= 0).astype(np.float64), np.zeros_like(margin)
    s = _sigmoid(sigma * margin)
    return s, -sigma * s * (1.0 - s)


def answers_exact(codes: np.ndarray, numerics: np.ndarray, queries: QuerySet) -> np.ndarray:
    """Exact answers (hard thresholds) of every query on real data.

    Parameters
    ----------
    codes : int32[n_rows, n_categorical_columns]
        Category code of each row in each categorical column.
    numerics : float64[n_rows, n_numeric]
        Numeric values scaled to ``[0, 1]``.
    queries : QuerySet

    Returns
    -------
    float64[n_queries]
        Fraction of rows satisfying each query.
    """
    check_queries(queries)
    codes, numerics = check_real_data(codes, numerics, queries)
    out = np.zeros(queries.n_queries, dtype=np.float64)
    for q in range(queries.n_queries):
        holds = np.ones(codes.shape[0], dtype=bool)
        for c in queries.cat_coords[queries.cat_offsets[q] : queries.cat_offsets[q + 1]]:
            holds &= codes[:, queries.coord_column[c]] == queries.coord_code[c]
        for h in range(queries.halfspace_offsets[q], queries.halfspace_offsets[q + 1]):
            holds &= _dot(numerics, queries, h, 0) <= np.float64(queries.tau[h])
        out[q] = holds.mean()
    return out


def _factors(X: np.ndarray, queries: QuerySet, q: int, sigma: np.float64):
    """The factors of query ``q`` as a list of (kind, index, value[n_rows], slope[n_rows])."""
    factors = []
    for c in queries.cat_coords[queries.cat_offsets[q] : queries.cat_offsets[q + 1]]:
        factors.append(("coord", int(c), X[:, c].astype(np.float64), None))
    for h in range(queries.halfspace_offsets[q], queries.halfspace_offsets[q + 1]):
        value, slope = _halfspace_factor(X, queries, h, sigma)
        factors.append(("halfspace", h, value, slope))
    return factors


def _relaxed64(X: np.ndarray, queries: QuerySet, sigma: np.ndarray) -> np.ndarray:
    out = np.zeros(queries.n_queries, dtype=np.float64)
    for q in range(queries.n_queries):
        value = np.ones(X.shape[0], dtype=np.float64)
        for _, _, factor, _ in _factors(X, queries, q, np.float64(sigma[q])):
            value *= factor
        out[q] = value.mean()
    return out


def answers_relaxed(X: np.ndarray, queries: QuerySet, sigma: np.ndarray | float) -> np.ndarray:
    """Relaxed answers (sigmoid thresholds) of every query on a relaxed matrix.

    Parameters
    ----------
    X : float32[n_rows, n_coords] (or float64)
        Category probabilities, then numerics at ``numeric_offset + j``.
    queries : QuerySet
    sigma : float32[n_queries] or scalar
        Inverse temperature of each query; ``inf`` means hard thresholds.

    Returns
    -------
    float32[n_queries]
        Mean over rows of each relaxed query (accumulated in float64).
    """
    X, sigma, _ = check_relaxed_call(X, queries, sigma)
    return _relaxed64(X, queries, sigma).astype(np.float32)


def loss_and_grad(
    X: np.ndarray, queries: QuerySet, targets: np.ndarray, sigma: np.ndarray | float,
    weights: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """Weighted squared-error loss of the relaxed answers and its gradient with respect to ``X``.

    ``L = sum_q w_q (answers_relaxed_q - targets_q) ** 2`` (``w_q = 1`` when ``weights`` is None).

    Parameters
    ----------
    X : float32[n_rows, n_coords] (or float64)
    queries : QuerySet
    targets : float64[n_queries]
    sigma : float32[n_queries] or scalar
    weights : float64[n_queries], optional
        Non-negative weight of each query's squared residual.

    Returns
    -------
    (float, ndarray)
        The loss, and ``dL/dX`` with the dtype and shape of ``X``.
    """
    X, sigma, targets = check_relaxed_call(X, queries, sigma, targets)
    weights = check_weights(weights, queries.n_queries)
    answers = _relaxed64(X, queries, sigma)
    residual = answers - targets
    grad = np.zeros(X.shape, dtype=np.float64)
    n_rows = X.shape[0]
    for q in range(queries.n_queries):
        weight = 2.0 * weights[q] * residual[q] / n_rows  # dL / d(query value on one row)
        factors = _factors(X, queries, q, np.float64(sigma[q]))
        for i, (kind, index, _, slope) in enumerate(factors):
            others = np.ones(n_rows, dtype=np.float64)
            for j, (_, _, value, _) in enumerate(factors):
                if j != i:
                    others *= value
            if kind == "coord":
                grad[:, index] += weight * others
                continue
            for t in range(queries.theta_offsets[index], queries.theta_offsets[index + 1]):
                column = queries.numeric_offset + int(queries.theta_index[t])
                grad[:, column] += weight * others * slope * np.float64(queries.theta_weight[t])
    return float(np.sum(weights * residual**2)), grad.astype(X.dtype)
