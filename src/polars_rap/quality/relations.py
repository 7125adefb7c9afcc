"""Relations between columns, real against synthetic (issues #77 and #78).

- :func:`numeric_pairs`: every pair of numeric columns, Pearson's r and Spearman's rank
  correlation in each table, over the rows where both are present;
- :func:`category_relations`: every numeric × categorical pair, the correlation ratio η in each
  table and how far the synthetic per-category medians are from the real ones;
- :func:`relation_summary`: the suite's figures from both (means and worst cases per table).

Numeric values are in their internal units (days or microseconds for temporal columns),
clipped to their declared bounds, as synthesis sees them; NaN is a null. Both measures of a
numeric pair are invariant to the column's declared scale (Pearson's r to a linear map only,
Spearman's to any increasing one). A constant column, or fewer than two rows, correlates
with nothing: 0, as :func:`polars_rap.quality.stats.association` says.

These functions read the real rows: their results are not private (design.md §5).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from scipy.stats import rankdata

from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import numeric_values as _internal_values

__all__ = ["MIN_CATEGORY_SHARE", "MIN_REAL_RATIO", "category_relations", "numeric_pairs", "relation_summary"]

MIN_CATEGORY_SHARE = 0.05
"""Categories holding fewer than this share of the real rows are left out of the median
comparison: their medians rest on few rows in either table."""
MIN_REAL_RATIO = 0.05
"""Numeric × categorical pairs whose real correlation ratio is below this are left out of the
kept-ratio figures (``eta_kept_*``): a ratio of two near-zero values says nothing."""
_CONSTANT = 1e-12


def _values(frame: pl.DataFrame, spec) -> np.ndarray:
    """float64[n_rows]: the column in internal units, clipped to its bounds, NaN for a null."""
    return np.clip(_internal_values(frame.get_column(spec.name), spec), spec.lower, spec.upper)


def _correlations(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(Pearson's r, Spearman's rho) of two float64[n] arrays without NaN; 0 for a constant one."""
    if x.size < 2:
        return 0.0, 0.0
    return _pearson(x, y), _pearson(rankdata(x), rankdata(y))  # average ranks for ties


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    x, y = x - x.mean(), y - y.mean()
    var_x, var_y = float(x @ x), float(y @ y)
    if var_x <= _CONSTANT * x.size or var_y <= _CONSTANT * y.size:
        return 0.0
    return max(-1.0, min(1.0, float(x @ y) / math.sqrt(var_x * var_y)))


def numeric_pairs(real: pl.DataFrame, synthetic: pl.DataFrame, domain: Domain) -> pl.DataFrame:
    """Pearson's r and Spearman's rho of every numeric pair, in each table.

    Returns one row per pair (domain order): ``column_a``, ``column_b``, ``pearson_real``,
    ``pearson_synthetic``, ``spearman_real``, ``spearman_synthetic`` (Float64, in [-1, 1]).

    Examples
    --------
    >>> domain = Domain.from_mapping({"x": pl.Float64, "y": pl.Float64}, {"x": (0, 10), "y": (0, 10)})
    >>> real = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [1.0, 2.0, 3.0, 9.0]})
    >>> numeric_pairs(real, real.with_columns(y=10 - pl.col("y")), domain).row(0)  # doctest: +ELLIPSIS
    ('x', 'y', 0.898..., -0.898..., 1.0, -1.0)
    """
    specs = domain.numeric_columns
    values = [{spec.name: _values(frame, spec) for spec in specs} for frame in (real, synthetic)]
    rows = []
    for i, spec_a in enumerate(specs):
        for spec_b in specs[i + 1:]:
            measured = []
            for table in values:
                x, y = table[spec_a.name], table[spec_b.name]
                both = ~(np.isnan(x) | np.isnan(y))
                measured.append(_correlations(x[both], y[both]))
            (pearson_real, spearman_real), (pearson_synthetic, spearman_synthetic) = measured
            rows.append((spec_a.name, spec_b.name, pearson_real, pearson_synthetic, spearman_real, spearman_synthetic))
    schema = {"column_a": pl.String, "column_b": pl.String, "pearson_real": pl.Float64,
              "pearson_synthetic": pl.Float64, "spearman_real": pl.Float64, "spearman_synthetic": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _by_category(frame: pl.DataFrame, spec, category: str) -> pl.DataFrame:
    """Per category of ``category`` (null its own): rows, and over the present values of the
    numeric ``spec``: their count, sum, sum of squares and median."""
    values = _values(frame, spec)
    return (pl.DataFrame({"key": frame.get_column(category).cast(pl.String), "x": values}, nan_to_null=True)
            .group_by("key").agg(pl.len().alias("rows"), pl.col("x").count().alias("n"),
                                 pl.col("x").sum().alias("sum"), (pl.col("x") ** 2).sum().alias("squares"),
                                 pl.col("x").median().alias("median"))
            .sort("key", nulls_last=True))  # a fixed order: the same sums to the last bit, call after call


def _ratio(groups: pl.DataFrame) -> float:
    """The correlation ratio η = sqrt(between-category / total sum of squares); 0 when constant."""
    groups = groups.filter(pl.col("n") > 0)
    n, total = float(groups["n"].sum()), float(groups["sum"].sum())
    if n == 0:
        return 0.0
    ss_total = float(groups["squares"].sum()) - total * total / n
    if ss_total <= _CONSTANT * n:
        return 0.0
    ss_between = float((groups["sum"] ** 2 / groups["n"]).sum()) - total * total / n
    return math.sqrt(min(1.0, max(0.0, ss_between / ss_total)))


def category_relations(real: pl.DataFrame, synthetic: pl.DataFrame, domain: Domain) -> pl.DataFrame:
    """The correlation ratio of every numeric × categorical pair, and its per-category medians.

    ``median_error`` is the largest, over the categories holding at least
    :data:`MIN_CATEGORY_SHARE` of the real rows and a present value there, of ``|median_synthetic
    - median_real| / max(|median_real|, 1% of the declared range)``: the relative error of the
    category's median (the range's share guards a median of 0); 1.0 where the synthetic rows of
    such a category hold no present value; None when no category qualifies.

    Returns one row per pair (numeric columns, then categorical ones, in domain order):
    ``numeric``, ``categorical``, ``ratio_real``, ``ratio_synthetic`` (η in [0, 1]),
    ``median_error`` (Float64).

    Examples
    --------
    >>> domain = Domain.from_mapping({"a": pl.String, "u": pl.Float64}, {"a": ["x", "y"], "u": (0, 10)})
    >>> real = pl.DataFrame({"a": ["x", "x", "y", "y"], "u": [1.0, 2.0, 3.0, 4.0]})
    >>> swapped = real.with_columns(u=pl.col("u").reverse())  # x holds 4, 3 and y 2, 1
    >>> category_relations(real, swapped, domain).row(0)  # doctest: +ELLIPSIS
    ('u', 'a', 0.894..., 0.894..., 1.333...)
    """
    rows = []
    for spec in domain.numeric_columns:
        for category in (c for c in domain.columns if c.is_categorical):
            groups_real = _by_category(real, spec, category.name)
            groups_synthetic = _by_category(synthetic, spec, category.name)
            rows.append((spec.name, category.name, _ratio(groups_real), _ratio(groups_synthetic),
                         _median_error(groups_real, groups_synthetic, real.height, spec)))
    schema = {"numeric": pl.String, "categorical": pl.String, "ratio_real": pl.Float64,
              "ratio_synthetic": pl.Float64, "median_error": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _median_error(groups_real: pl.DataFrame, groups_synthetic: pl.DataFrame, n_real: int, spec) -> float | None:
    large = groups_real.filter((pl.col("rows") >= MIN_CATEGORY_SHARE * n_real) & (pl.col("n") > 0))
    if large.height == 0:
        return None
    joined = large.join(groups_synthetic.select("key", "median"), on="key", how="left", nulls_equal=True,
                        suffix="_synthetic")
    floor = 0.01 * (spec.upper - spec.lower)
    errors = [1.0 if m_synthetic is None else abs(m_synthetic - m_real) / max(abs(m_real), floor)
              for m_real, m_synthetic in joined.select("median", "median_synthetic").iter_rows()]
    return float(max(errors))


def relation_summary(real: pl.DataFrame, synthetic: pl.DataFrame, domain: Domain) -> dict[str, float | None]:
    """The suite's relation figures (None where the domain has no such pair):

    - ``pearson_mean_delta``, ``pearson_max_delta``, ``spearman_mean_delta``,
      ``spearman_max_delta``: mean and largest |r_synthetic - r_real| over numeric pairs;
    - ``eta_kept_mean``, ``eta_kept_min``: mean and smallest ``ratio_synthetic / ratio_real``
      over numeric × categorical pairs whose real ratio is at least :data:`MIN_REAL_RATIO`;
    - ``median_error_max``: the largest ``median_error`` of :func:`category_relations`.
    """
    summary: dict[str, float | None] = dict.fromkeys(
        ("pearson_mean_delta", "pearson_max_delta", "spearman_mean_delta", "spearman_max_delta",
         "eta_kept_mean", "eta_kept_min", "median_error_max"))
    pairs = numeric_pairs(real, synthetic, domain)
    if pairs.height:
        for measure in ("pearson", "spearman"):
            delta = (pairs[f"{measure}_synthetic"] - pairs[f"{measure}_real"]).abs()
            summary[f"{measure}_mean_delta"], summary[f"{measure}_max_delta"] = float(delta.mean()), float(delta.max())
    relations = category_relations(real, synthetic, domain)
    related = relations.filter(pl.col("ratio_real") >= MIN_REAL_RATIO)
    if related.height:
        kept = related["ratio_synthetic"] / related["ratio_real"]
        summary["eta_kept_mean"], summary["eta_kept_min"] = float(kept.mean()), float(kept.min())
    if relations["median_error"].drop_nulls().len():
        summary["median_error_max"] = float(relations["median_error"].max())
    return summary
