"""SDMetrics' QualityReport as an optional evaluator of the suite (issue #74).

SDMetrics (the SDV project's metrics library; ``pip install -e ".[sdmetrics]"``) scores synthetic
data the way many data teams already read it. Its single-table QualityReport averages two
properties, each a mean over columns or column pairs of scores in [0, 1] (1: equal):

- *Column Shapes*: per column, 1 - the Kolmogorov-Smirnov statistic (numerical) or 1 - the total
  variation distance of the category shares (categorical, boolean);
- *Column Pair Trends*: per pair, 1 - |Pearson r (real) - r (synthetic)| / 2 for two numerical
  columns, else 1 - the total variation distance of their contingency tables (a numerical column
  cut into SDMetrics' 10 equal-width bins of the real column's range).

The overall score is the mean of the two. Every suite row gets ``sdm_overall``,
``sdm_column_shapes`` and ``sdm_column_pair_trends`` (:data:`SDMETRICS_METRICS`) where SDMetrics is
installed, for every mechanism; null where it is not, and in rows from before this evaluator.
Real rows are the training split the mechanism saw, as for the workload errors.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import polars as pl

__all__ = ["SDMETRICS_METRICS", "SDMETRICS_ROWS", "sdmetrics_metadata", "sdmetrics_scores"]

SDMETRICS_METRICS = ("sdm_overall", "sdm_column_shapes", "sdm_column_pair_trends")
"""The suite's columns: the report's overall score and its two properties."""

SDMETRICS_ROWS = 100_000
"""Rows of each table scored at most (a uniform sample with seed 0 beyond): the report's pair
trends cost grows with rows times pairs (acs-income-CA's 27,540 rows, 190 pairs: about 2 s)."""


def sdmetrics_metadata(frame: pl.DataFrame, domain) -> dict[str, Any]:
    """SDMetrics' single-table metadata of ``frame``'s columns: ``"numerical"`` for the
    domain's numeric columns (``"datetime"`` where the column holds dates or times),
    ``"boolean"`` for Boolean columns, ``"categorical"`` for the rest.

    >>> from polars_rap.schema.domain import Domain
    >>> frame = pl.DataFrame({"age": [30, 41], "sex": ["F", "M"], "y": [True, False]})
    >>> sdmetrics_metadata(frame, Domain.from_mapping(frame.schema, {"age": (17, 99), "sex": ["F", "M"]}, ["y"]))
    {'columns': {'age': {'sdtype': 'numerical'}, 'sex': {'sdtype': 'categorical'}, 'y': {'sdtype': 'boolean'}}}
    """
    numeric = {spec.name for spec in domain.numeric_columns}
    columns = {}
    for name, dtype in frame.schema.items():
        if name in numeric:
            sdtype = "datetime" if dtype.is_temporal() else "numerical"
        else:
            sdtype = "boolean" if dtype == pl.Boolean else "categorical"
        columns[name] = {"sdtype": sdtype}
    return {"columns": columns}


def sdmetrics_scores(real: pl.DataFrame, synthetic: pl.DataFrame, domain, rows: int = SDMETRICS_ROWS,
                     seed: int = 0) -> dict[str, float | None]:
    """``SDMETRICS_METRICS`` of ``synthetic`` against ``real`` (their shared columns; at most
    ``rows`` of each, a uniform sample by ``seed``); each None where SDMetrics is not installed
    or a property could not be computed (a NaN)."""
    try:
        with warnings.catch_warnings():  # the single-table report is the one the issue measured
            warnings.simplefilter("ignore", FutureWarning)
            from sdmetrics.reports.single_table import QualityReport
    except ImportError:
        return dict.fromkeys(SDMETRICS_METRICS)
    columns = [name for name in real.columns if name in synthetic.columns]
    real, synthetic = (frame.select(columns) for frame in (real, synthetic))
    real, synthetic = (frame.sample(rows, seed=seed) if frame.height > rows else frame for frame in (real, synthetic))
    report = QualityReport()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SDMetrics' own pandas and deprecation warnings
        report.generate(real.to_pandas(), synthetic.to_pandas(), sdmetrics_metadata(real, domain), verbose=False)
    properties = dict(report.get_properties().itertuples(index=False, name=None))

    def number(value: Any) -> float | None:
        value = float(value)
        return None if math.isnan(value) else value  # NaN: not computed

    return {"sdm_overall": number(report.get_score()),
            "sdm_column_shapes": number(properties.get("Column Shapes", float("nan"))),
            "sdm_column_pair_trends": number(properties.get("Column Pair Trends", float("nan")))}
