"""Evaluation: how useful a synthetic table is, measured against real data.

These functions read real data (the caller's held-out evaluation rows), so their results are
not private releases: they belong in benchmark reports, never in ``SynthesisResult.report``
(design.md §5).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from polars_rap import kernels
from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import encode
from polars_rap.errors import DataError, ParameterError
from polars_rap.quality.stats import EmpiricalCdf, ks_statistic, numeric_values
from polars_rap.workload.queries import QueryClass, QuerySet
from polars_rap.schema.temporal import is_temporal, to_internal
from polars_rap.workload.builders import build_workload
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score

__all__ = ["DECILES", "ml_utility", "ml_utility_for_domain", "numeric_errors", "numeric_summary",
           "query_errors", "relaxed_workload_errors", "workload_errors"]

ML_ROWS = 200_000
"""Default training rows of each reference classifier (a uniform sample of larger tables)."""

# ============================================================================================
# ML utility: train a classifier on one table (e.g. synthetic), score it on another (real)
# ============================================================================================

_MAX_ITER = 10_000


def ml_utility(
    train: pl.DataFrame,
    test: pl.DataFrame,
    label: str,
    categorical: Sequence[str],
    numeric: Mapping[str, tuple[float, float]],
    categories: Mapping[str, Sequence[Any]] | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Train logistic regression on ``train``, score it on ``test`` (paper App. B, Def. 14).

    Features are fixed before fitting, so that a model trained on synthetic rows and one
    trained on real rows see the same columns:

    - each categorical column is one-hot encoded over ``categories[column]`` when given (a
      ``None`` entry makes null its own indicator; values outside the list encode as all
      zeros), else over the union of the values in ``train`` and ``test``. The union reads
      the test rows, which are the caller's evaluation data, not a private input, so that is
      fine here;
    - each numeric column is scaled by its public bounds ``(lo, hi)`` to ``[0, 1]`` (clipped),
      nulls and NaN imputed as 0, plus a 0/1 null-indicator column (dates and times in days or
      microseconds, the units of their bounds in a :class:`~polars_rap.schema.domain.Domain`).

    The model is scikit-learn's ``LogisticRegression`` (lbfgs, L2, C=1) with enough
    iterations to converge on these scaled features.

    Parameters
    ----------
    train, test : pl.DataFrame
        Rows to fit on and rows to score on; both need ``label`` and every feature column.
    label : str
        The target column; it must not be listed in ``categorical`` or ``numeric``. Null
        labels are an error.
    categorical : sequence of str
        Categorical feature columns.
    numeric : mapping of str to (float, float)
        Numeric feature columns and their public bounds.
    categories : mapping of str to sequence, optional
        Public category lists for (some of) the categorical columns.
    seed : int, default 0
        ``random_state`` of the model (lbfgs itself is deterministic).

    Returns
    -------
    dict
        ``macro_f1`` (float, sklearn ``f1_score(average="macro")``), ``accuracy`` (float),
        ``n_train`` and ``n_test`` (int). When ``train`` holds a single class, the scores are
        those of predicting that class everywhere, and a ``note`` says so.

    Examples
    --------
    >>> frame = pl.DataFrame({"x": [0.0, 0.1, 0.9, 1.0] * 5, "y": [0, 0, 1, 1] * 5})
    >>> scores = ml_utility(frame, frame, "y", categorical=[], numeric={"x": (0.0, 1.0)})
    >>> scores["macro_f1"], scores["n_train"]
    (1.0, 20)
    """
    categorical = list(categorical)
    numeric = dict(numeric)
    _check_ml_inputs(train, test, label, categorical, numeric)
    categories = dict(categories or {})
    one_hot_levels = {
        column: list(categories[column]) if column in categories else _union_levels(train, test, column)
        for column in categorical
    }
    x_train = _feature_matrix(train, one_hot_levels, numeric)
    x_test = _feature_matrix(test, one_hot_levels, numeric)
    y_train = _label_array(train, label)
    y_test = _label_array(test, label)

    result: dict[str, Any] = {"n_train": train.height, "n_test": test.height}
    classes = np.unique(y_train)
    if classes.size == 1:
        y_pred = np.full(y_test.shape, classes[0], dtype=y_train.dtype)
        result["note"] = (
            f"train holds a single class ({classes[0]!r}); scores are those of predicting it "
            f"for every test row"
        )
    else:
        model = LogisticRegression(solver="lbfgs", max_iter=_MAX_ITER, random_state=seed)
        with warnings.catch_warnings(record=True) as caught:
            # Report non-convergence in the result, where a benchmark table keeps it.
            warnings.simplefilter("always", ConvergenceWarning)
            model.fit(x_train, y_train)
        if any(issubclass(w.category, ConvergenceWarning) for w in caught):
            result["note"] = f"logistic regression did not converge in {_MAX_ITER} iterations"
        y_pred = model.predict(x_test)
    result["macro_f1"] = float(f1_score(y_test, y_pred, average="macro", zero_division=0.0))
    result["accuracy"] = float(accuracy_score(y_test, y_pred))
    return {key: result[key] for key in ("macro_f1", "accuracy", "n_train", "n_test", "note") if key in result}


def _check_ml_inputs(
    train: pl.DataFrame,
    test: pl.DataFrame,
    label: str,
    categorical: list[str],
    numeric: dict[str, tuple[float, float]],
) -> None:
    if label in categorical or label in numeric:
        msg = f"label {label!r} is listed as a feature; remove it from 'categorical'/'numeric'"
        raise ParameterError(msg)
    if not categorical and not numeric:
        msg = "ml_utility needs at least one feature column in 'categorical' or 'numeric'"
        raise ParameterError(msg)
    overlap = sorted(set(categorical) & set(numeric))
    if overlap:
        msg = f"columns {overlap} are listed as both categorical and numeric; list each once"
        raise ParameterError(msg)
    for name, frame in (("train", train), ("test", test)):
        if frame.height == 0:
            msg = f"the '{name}' frame has no rows; ml_utility needs at least one"
            raise DataError(msg)
        missing = [c for c in [label, *categorical, *numeric] if c not in frame.columns]
        if missing:
            msg = f"the '{name}' frame lacks columns {missing}"
            raise DataError(msg)
    for column, bounds in numeric.items():
        lower, upper = bounds
        if not float(lower) < float(upper):
            msg = f"numeric column {column!r} needs bounds (lo, hi) with lo < hi. Got {bounds!r}"
            raise ParameterError(msg)


def _as_plain(series: pl.Series) -> pl.Series:
    """Enum/Categorical compare by their string values."""
    if isinstance(series.dtype, pl.Enum | pl.Categorical):
        return series.cast(pl.String)
    return series


def _union_levels(train: pl.DataFrame, test: pl.DataFrame, column: str) -> list[Any]:
    values = pl.concat([_as_plain(train.get_column(column)), _as_plain(test.get_column(column))])
    levels = values.drop_nulls().unique().sort().to_list()
    return [*levels, None] if values.null_count() else levels


def _feature_matrix(
    frame: pl.DataFrame,
    one_hot_levels: Mapping[str, list[Any]],
    numeric: Mapping[str, tuple[float, float]],
) -> np.ndarray:
    """float64[n_rows, n_features]: one-hot blocks, then (scaled value, null flag) pairs."""
    blocks: list[np.ndarray] = []
    for column, levels in one_hot_levels.items():
        values = _as_plain(frame.get_column(column))
        for level in levels:
            indicator = values.is_null() if level is None else values.eq(level).fill_null(False)
            blocks.append(indicator.to_numpy().astype(np.float64))
    for column, (lower, upper) in numeric.items():
        series = frame.get_column(column)
        values = (to_internal(series) if is_temporal(series.dtype) else series.cast(pl.Float64)).fill_nan(None)
        is_missing = values.is_null().to_numpy()
        scaled = ((values - float(lower)) / (float(upper) - float(lower))).clip(0.0, 1.0)
        blocks.append(scaled.fill_null(0.0).to_numpy().astype(np.float64))
        blocks.append(is_missing.astype(np.float64))
    if not blocks:
        return np.zeros((frame.height, 0), dtype=np.float64)
    return np.column_stack(blocks)


def _label_array(frame: pl.DataFrame, label: str) -> np.ndarray:
    values = _as_plain(frame.get_column(label))
    if values.null_count():
        msg = f"label column {label!r} holds {values.null_count()} null(s); ml_utility needs a label on every row"
        raise DataError(msg)
    return values.to_numpy()


def ml_utility_for_domain(
    train: pl.DataFrame, test: pl.DataFrame, label: str, domain: Domain, seed: int = 0
) -> dict:
    """:func:`ml_utility` with features, categories and bounds taken from ``domain``: every
    column except the labels is a feature."""
    features = [c for c in domain.columns if c.name not in domain.labels]
    return ml_utility(
        train, test, label,
        categorical=[c.name for c in features if c.is_categorical],
        numeric={c.name: (c.lower, c.upper) for c in features if not c.is_categorical},
        categories={c.name: list(c.categories) for c in features if c.is_categorical},
        seed=seed,
    )


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
