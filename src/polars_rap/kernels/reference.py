"""Reference kernels: plain NumPy, one query at a time, written to be obviously right.

Used by the tests as the definition the fast backends are checked against; speed is
irrelevant here. The formulas are those of ``polars_rap.workload.queries`` (design.md §3):

    exact:    q(x) = prod_{c in C_q} 1[code_c]  * prod_{h in H_q} 1[theta_h . x <= tau_h]
    relaxed:  q(x) = prod_{c in C_q} x_c        * prod_{h in H_q} s(sigma_q (tau_h - theta_h . x))

A halfspace over nullable numeric columns is relaxed as the expectation over their null
indicators (``polars_rap.workload.queries``): a sum over null patterns ``S`` (bit masks over the
halfspace's nullable entries) of ``pi_S * s(sigma (tau - theta . x|S))``, where ``x|S`` zeroes
the null entries and ``pi_S = prod_{S} q_j prod_{not S} (1 - q_j)``. Patterns run over the
first ``EXACT_NULLABLE_PER_HALFSPACE`` nullable entries; further ones enter every pattern's dot
product as ``(1 - q_j) x_j``, their expected value.

Every halfspace dot product ``theta_h . x`` is accumulated in float64, term by term in the
stored order, from the float32 weights upcast (a pattern's null entries left out); the fast
backends do the same, so hard thresholds agree to the bit.
"""

from __future__ import annotations

import numpy as np

from polars_rap.kernels._checks import (
    check_queries,
    check_real_data,
    check_relaxed_call,
    check_weights,
)
from polars_rap.workload.queries import EXACT_NULLABLE_PER_HALFSPACE, QuerySet

__all__ = ["answers_exact", "answers_relaxed", "loss_and_grad"]


def _dot(values: np.ndarray, queries: QuerySet, h: int, numeric_start: int,
         skip: frozenset = frozenset(), present: dict | None = None) -> np.ndarray:
    """float64[n_rows]: ``theta_h . x`` for every row, accumulated term by term, leaving out
    the theta entries (indices into ``theta_index``) in ``skip`` and scaling the value of an
    entry ``t`` in ``present`` by ``present[t]`` (float64[n_rows])."""
    dot = np.zeros(values.shape[0], dtype=np.float64)
    for t in range(queries.theta_offsets[h], queries.theta_offsets[h + 1]):
        if t in skip:
            continue
        column = numeric_start + int(queries.theta_index[t])
        x = values[:, column].astype(np.float64)
        if present is not None and t in present:
            x = present[t] * x
        dot += np.float64(queries.theta_weight[t]) * x
    return dot


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """Logistic function, without overflow for large ``|z|``."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0, e) / (1.0 + e)


def _threshold(margin: np.ndarray, sigma: np.float64) -> tuple[np.ndarray, np.ndarray]:
    """(s(sigma margin), its derivative with respect to theta . x), float64[n_rows] each."""
    if np.isinf(sigma):
        return (margin >= 0).astype(np.float64), np.zeros_like(margin)
    s = _sigmoid(sigma * margin)
    return s, -sigma * s * (1.0 - s)


def _halfspace_factor(X: np.ndarray, queries: QuerySet, h: int, sigma: np.float64):
    """(value, derivatives) of halfspace ``h`` on every row: ``value`` float64[n_rows];
    ``derivatives`` a list of ``(column of X, coefficient float64[n_rows], weight)`` with
    ``d value / d X[:, column] = coefficient * weight`` (several entries may share a column).

    Without nullable columns: ``s(sigma (tau - theta . x))``, each theta entry's derivative
    its slope times its weight. With nullable ones: the sum over null patterns of the first
    ``EXACT_NULLABLE_PER_HALFSPACE``, the others at their expected value."""
    entries = range(queries.theta_offsets[h], queries.theta_offsets[h + 1])
    nullable = [t for t in entries if queries.null_coord[queries.theta_index[t]] >= 0]
    tau = np.float64(queries.tau[h])
    if not nullable:
        value, slope = _threshold(tau - _dot(X, queries, h, queries.numeric_offset), sigma)
        return value, [(queries.numeric_offset + int(queries.theta_index[t]), slope,
                        np.float64(queries.theta_weight[t])) for t in entries]
    null_column = {t: int(queries.null_coord[queries.theta_index[t]]) for t in nullable}
    q = {t: X[:, null_column[t]].astype(np.float64) for t in nullable}
    exact, expected = nullable[:EXACT_NULLABLE_PER_HALFSPACE], nullable[EXACT_NULLABLE_PER_HALFSPACE:]
    present = {t: 1.0 - q[t] for t in expected}  # P(not null) scales x_j
    n_rows = X.shape[0]
    value = np.zeros(n_rows)
    x_coefficient = {t: np.zeros(n_rows) for t in entries}
    q_coefficient = {t: np.zeros(n_rows) for t in nullable}
    for mask in range(1 << len(exact)):
        is_null = [bool(mask >> k & 1) for k in range(len(exact))]
        chance = [q[t] if null else 1.0 - q[t] for t, null in zip(exact, is_null, strict=True)]
        weight = np.prod(chance, axis=0)  # pi_S
        null_entries = frozenset(t for t, null in zip(exact, is_null, strict=True) if null)
        dot = _dot(X, queries, h, queries.numeric_offset, null_entries, present)
        s, slope = _threshold(tau - dot, sigma)
        value += weight * s
        for t in entries:
            if t in null_entries:
                continue
            x_coefficient[t] += weight * slope * (present[t] if t in present else 1.0)
        for t in expected:  # d (1 - q) x / d q = -x
            x = X[:, queries.numeric_offset + int(queries.theta_index[t])].astype(np.float64)
            q_coefficient[t] += weight * slope * -x
        for k, t in enumerate(exact):  # d pi_S / d q_k: the other chances, signed
            others = np.prod([chance[l] for l in range(len(exact)) if l != k] or [1.0], axis=0)
            q_coefficient[t] += (s * others) if is_null[k] else -(s * others)
    derivatives = [(queries.numeric_offset + int(queries.theta_index[t]), x_coefficient[t],
                    np.float64(queries.theta_weight[t])) for t in entries]
    derivatives += [(null_column[t], q_coefficient[t],
                     np.float64(queries.theta_weight[t]) if t in present else np.float64(1.0))
                    for t in nullable]
    return value, derivatives


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
    """The factors of query ``q`` as a list of (value[n_rows], derivatives), derivatives as
    in ``_halfspace_factor`` (a coordinate's: itself, coefficient 1, weight 1)."""
    factors = []
    for c in queries.cat_coords[queries.cat_offsets[q] : queries.cat_offsets[q + 1]]:
        factors.append((X[:, c].astype(np.float64), [(int(c), None, None)]))
    for h in range(queries.halfspace_offsets[q], queries.halfspace_offsets[q + 1]):
        factors.append(_halfspace_factor(X, queries, h, sigma))
    return factors


def _relaxed64(X: np.ndarray, queries: QuerySet, sigma: np.ndarray) -> np.ndarray:
    out = np.zeros(queries.n_queries, dtype=np.float64)
    for q in range(queries.n_queries):
        value = np.ones(X.shape[0], dtype=np.float64)
        for factor, _ in _factors(X, queries, q, np.float64(sigma[q])):
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
        for i, (_, derivatives) in enumerate(factors):
            others = np.ones(n_rows, dtype=np.float64)
            for j, (value, _) in enumerate(factors):
                if j != i:
                    others *= value
            for column, coefficient, theta in derivatives:
                if coefficient is None:  # a coordinate: d x_c / d x_c = 1
                    grad[:, column] += weight * others
                else:
                    grad[:, column] += weight * others * coefficient * theta
    return float(np.sum(weights * residual**2)), grad.astype(X.dtype)
