"""Evaluation: how useful a synthetic table is, measured against real data.

Query errors on the benchmark workload and numeric fidelity live here; the ML utility
(:func:`ml_utility`, :func:`ml_utility_for_domain`, :data:`ML_MODELS`, :data:`ML_ROWS`) lives
in :mod:`polars_rap.quality.ml_utility` and is re-exported under its old names.

These functions read real data (the caller's held-out evaluation rows), so their results are
not private releases: they belong in benchmark reports, never in ``SynthesisResult.report``
(design.md §5).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from polars_rap import kernels
from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import encode
from polars_rap.quality.ml_utility import ML_MODELS, ML_ROWS, ml_utility, ml_utility_for_domain
from polars_rap.quality.stats import EmpiricalCdf, ks_statistic, numeric_values
from polars_rap.workload.queries import QueryClass, QuerySet
from polars_rap.workload.builders import build_workload

__all__ = ["DECILES", "ML_MODELS", "ML_ROWS", "ml_utility", "ml_utility_for_domain", "numeric_errors",
           "numeric_summary", "query_errors", "relaxed_workload_errors", "workload_errors"]

# ============================================================================================
# Query error: |q(D) - q(D_hat)| on a workload, per query class (paper Def. 5)
# ============================================================================================


def query_errors(
    real: pl.DataFrame, synthetic: pl.DataFrame, domain: Domain, queries: QuerySet,
    backend: str = "cpu",
) -> pl.DataFrame:
    """Mean and max absolute error of ``synthetic`` against ``real`` on ``queries``, per class.

    Returns a frame with ``query_class`` (CM/MM/LT), ``queries``, ``mean_error``,
    ``max_error``; both tables are encoded with the same public ``domain``.
    """
    module = kernels.get_backend(backend)
    answers = []
    for frame in (real, synthetic):
        encoded = encode(frame.select(domain.names), domain)
        answers.append(module.answers_exact(encoded.codes, encoded.numerics, queries))
    return _errors_by_class(queries, np.abs(answers[0] - answers[1]))


def _errors_by_class(queries: QuerySet, errors: np.ndarray) -> pl.DataFrame:
    return (
        pl.DataFrame({"query_class": [QueryClass.SHORT[c] for c in queries.query_class], "error": errors},
                     schema_overrides={"query_class": pl.String})
        .group_by("query_class", maintain_order=True)
        .agg(pl.len().alias("queries"), pl.col("error").mean().alias("mean_error"),
             pl.col("error").max().alias("max_error"))
    )


def benchmark_workload(domain: Domain, seed: int, classes: Sequence[str], n_mixed_marginals: int,
                        n_linear_thresholds: int) -> QuerySet:
    return build_workload(domain, np.random.default_rng(seed), classes=tuple(classes),
                          n_mixed_marginals=n_mixed_marginals,
                          n_linear_thresholds=n_linear_thresholds, max_marginal_cells=None)


def workload_errors(
    real: pl.DataFrame, synthetic: pl.DataFrame, domain: Domain, *, seed: int = 0,
    classes: Sequence[str] = ("CM", "MM", "LT"), n_mixed_marginals: int = 20_000,
    n_linear_thresholds: int = 200_000, backend: str = "cpu",
) -> pl.DataFrame:
    """:func:`query_errors` on the benchmark workload (benchmarks.md): all class-conditional
    3-way categorical marginals, random mixed marginals and linear thresholds, drawn with
    ``seed`` from the public domain."""
    queries = benchmark_workload(domain, seed, classes, n_mixed_marginals, n_linear_thresholds)
    return query_errors(real, synthetic, domain, queries, backend)


def relaxed_workload_errors(
    real: pl.DataFrame, relaxed: np.ndarray, domain: Domain, *, seed: int = 0,
    classes: Sequence[str] = ("CM", "MM", "LT"), n_mixed_marginals: int = 20_000,
    n_linear_thresholds: int = 200_000, backend: str = "cpu",
) -> pl.DataFrame:
    """:func:`workload_errors` of the *relaxed* data (float32[n_relaxed, n_coords]) itself:
    its expected answers (hard thresholds on the relaxed rows, the mean over all decodings)
    against ``real``'s. Beside the decoded rows' errors it tells what decoding cost."""
    module = kernels.get_backend(backend)
    queries = benchmark_workload(domain, seed, classes, n_mixed_marginals, n_linear_thresholds)
    encoded = encode(real.select(domain.names), domain)
    true = module.answers_exact(encoded.codes, encoded.numerics, queries)
    expected = module.answers_relaxed(relaxed, queries, np.inf).astype(np.float64)
    return _errors_by_class(queries, np.abs(true - expected))


# ============================================================================================
# Numeric fidelity: Kolmogorov-Smirnov distance and decile error per numeric column
# ============================================================================================

DECILES = tuple(round(0.1 * k, 1) for k in range(1, 10))
"""The probabilities of the deciles compared by :func:`numeric_errors`: 0.1, 0.2, ..., 0.9."""


def numeric_errors(real: pl.DataFrame, synthetic: pl.DataFrame, domain: Domain) -> pl.DataFrame:
    """How far each numeric column's distribution in ``synthetic`` is from ``real``'s.

    Over the non-null values of each numeric column of ``domain``, clipped to its bounds (as
    synthesis sees them; dates and times in days or microseconds):

    - ``ks_distance``: the Kolmogorov–Smirnov distance ``sup_x |F_real(x) - F_synthetic(x)|``
      of the empirical CDFs (exact; the quality report's implementation,
      :func:`polars_rap.quality.stats.ks_statistic`);
    - ``decile_error``: the mean over ``p`` in :data:`DECILES` of ``|Q_real(p) -
      Q_synthetic(p)|`` divided by the declared range ``upper - lower``, where ``Q(p)`` is
      the smallest value ``x`` with ``F(x) >= p`` (the inverted empirical CDF).

    Both are in ``[0, 1]``: 0 for identical tables; when only one table has values, 1 (and
    0 when neither has). Nulls are left out (their rate is a separate figure). Reads the real
    rows: not private.

    Returns a frame with ``column``, ``ks_distance`` and ``decile_error`` (Float64), one row per
    numeric column in domain order.

    Examples
    --------
    >>> domain = Domain.from_mapping({"x": pl.Float64}, {"x": (0, 10)})
    >>> real = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]})
    >>> numeric_errors(real, real.with_columns(pl.col("x") + 1), domain).rows()
    [('x', 0.25, 0.1)]
    """
    rows = []
    for spec in domain.numeric_columns:
        values_real = numeric_values(real.get_column(spec.name), spec)
        values_synthetic = numeric_values(synthetic.get_column(spec.name), spec)
        points = np.unique(values_synthetic)
        cdfs = [EmpiricalCdf(points), EmpiricalCdf(points)]
        cdfs[0].add(values_real)
        cdfs[1].add(values_synthetic)
        if values_real.size and values_synthetic.size:
            deciles = [np.quantile(v, DECILES, method="inverted_cdf") for v in (values_real, values_synthetic)]
            decile_error = float(np.mean(np.abs(deciles[0] - deciles[1])) / (spec.upper - spec.lower))
        else:
            decile_error = float(bool(values_real.size) != bool(values_synthetic.size))
        rows.append((spec.name, ks_statistic(*cdfs), decile_error))
    return pl.DataFrame(rows, schema={"column": pl.String, "ks_distance": pl.Float64,
                                      "decile_error": pl.Float64}, orient="row")


def numeric_summary(real: pl.DataFrame, synthetic: pl.DataFrame, domain: Domain) -> dict[str, float | None]:
    """The means over numeric columns of :func:`numeric_errors`: ``numeric_ks_mean`` and
    ``numeric_decile_error`` (None when the domain has no numeric column); the benchmark's
    numeric metric."""
    errors = numeric_errors(real, synthetic, domain)
    if errors.height == 0:
        return {"numeric_ks_mean": None, "numeric_decile_error": None}
    return {"numeric_ks_mean": float(errors["ks_distance"].mean()),
            "numeric_decile_error": float(errors["decile_error"].mean())}
