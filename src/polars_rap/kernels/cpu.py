"""CPU kernels: Numba ``@njit(parallel=True, cache=True)`` over the CSR query layout.

Same three functions and signatures as ``reference`` (design.md §6). Each public function
checks its inputs once on the host, transposes the data so that rows are the contiguous
(vectorised) axis, allocates the outputs and calls pure kernels:

- ``answers_exact`` counts a whole *marginal group* in one pass over the rows (a histogram of
  the cell index, weighted by the group's shared halfspace indicator), parallel over groups;
  other queries take the general CSR loop, parallel over chunks of queries, tiled over blocks
  of rows so that a block stays in cache for the whole chunk. Queries that read the same
  few columns (the linear thresholds and mixed marginals of a table with few numeric columns)
  are counted over those columns' distinct values, each weighted by the rows that hold it
  (:mod:`polars_rap.kernels.distinct_rows`): the same integer counts, far fewer evaluations.
- ``answers_relaxed`` walks each marginal group's cells in row-major order, multiplying one
  column's probabilities into a running prefix product per level (the "structured" path: no
  per-query index loads, one multiply-add per cell and row); other queries take the CSR loop.
  Parallel over groups and over chunks of queries.
- ``loss_and_grad`` runs ``answers_relaxed``, then the gradient parallel over blocks of rows
  (one thread owns a block's rows, so no two threads write one row). For a marginal group the
  gradient is reverse-mode through the same prefix products; for a CSR query it is the
  product of the other factors from prefix and suffix products (never a division).

A halfspace over nullable numeric columns is the expectation over their null indicators
(``polars_rap.workload.queries``): ``_halfspace_value`` sums the null patterns of its first
``EXACT_NULLABLE_PER_HALFSPACE`` nullable columns (further ones at their expected value
``(1 - q) x``), leaving each pattern's s and probability in a scratch that the backward
pass's ``_null_halfspace_grad`` reads (derivatives with respect to the numerics and to the
null-code probabilities) instead of evaluating the patterns again. The patterns share one dot
product: each is the pattern without nulls minus its left-out terms (hard thresholds fall back
to the term-by-term sum where the threshold is within rounding of it, so they still agree to
the bit). A halfspace without nullable columns takes the plain path, unchanged.

Halfspace dot products are accumulated in float64, term by term, without fast-math, exactly as
in ``reference``: hard thresholds agree to the bit. Only the row sums of the relaxed answers
use the ``reassoc`` flag, so that they vectorise.
"""
from __future__ import annotations

import numpy as np

from polars_rap.kernels._checks import check_queries, check_real_data, check_relaxed_call, check_weights
from polars_rap.kernels.cpu_exact import _exact_counts
from polars_rap.kernels.cpu_halfspaces import _plan  # noqa: F401  (tests read the plan here)
from polars_rap.kernels.cpu_relaxed import _relaxed
from polars_rap.workload.queries import QuerySet

__all__ = ["answers_exact", "answers_relaxed", "loss_and_grad"]


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
    return _exact_counts(codes, numerics, queries) / codes.shape[0]


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
    if queries.n_queries == 0:
        return np.zeros(0, dtype=np.float32)
    answers, _, _ = _relaxed(X, queries, sigma, None)
    return answers.astype(np.float32)


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
    query_weights = None if weights is None else check_weights(weights, queries.n_queries)
    if queries.n_queries == 0:
        return 0.0, np.zeros_like(X)
    _, loss, grad = _relaxed(X, queries, sigma, targets, query_weights=query_weights)
    return loss, grad
