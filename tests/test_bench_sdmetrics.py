"""bench.sdmetrics_eval: SDMetrics' QualityReport columns of the suite (issue #74), checked
against what the report's properties mean, computed by hand on small tables."""

from __future__ import annotations

import builtins
import datetime

import numpy as np
import polars as pl
import pytest

from bench.sdmetrics_eval import SDMETRICS_METRICS, sdmetrics_metadata, sdmetrics_scores
from polars_rap.schema.domain import Domain

pytest.importorskip("sdmetrics", reason="the sdmetrics extra (in the test extra)")


def _table(n: int = 2_000, seed: int = 0) -> tuple[pl.DataFrame, Domain]:
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 90, n)
    frame = pl.DataFrame({"age": age, "hours": (age * 0.5 + rng.normal(0, 5, n)).round(), "sex": rng.choice(["F", "M"], n),
                          "y": rng.random(n) < 0.3})
    mapping = {"age": (17, 99), "hours": (0.0, 99.0), "sex": ["F", "M"]}
    return frame, Domain.from_mapping(frame.schema, mapping, ["y"])


def test_identical_tables_score_one() -> None:
    real, domain = _table()
    assert sdmetrics_scores(real, real.clone(), domain) == dict.fromkeys(SDMETRICS_METRICS, 1.0)


def test_column_shapes_are_one_minus_tvd_or_ks_and_the_overall_the_mean() -> None:
    """Synthetic rows with the sexes' shares moved and one numeric column shuffled: Column Shapes is
    the mean over columns of 1 - TVD (categorical, boolean) and 1 - KS (numerical, here 0); the
    pairs lose the shuffled column's correlation; the overall score is the two properties' mean."""
    real, domain = _table()
    rng = np.random.default_rng(1)
    sex = np.where(rng.random(real.height) < 0.7, "F", "M")
    synthetic = real.with_columns(pl.Series("sex", sex), pl.Series("hours", rng.permutation(real["hours"].to_numpy())))
    scores = sdmetrics_scores(real, synthetic, domain)
    tvd = abs((real["sex"] == "F").mean() - (sex == "F").mean())
    assert scores["sdm_column_shapes"] == pytest.approx((3 + (1 - tvd)) / 4, abs=1e-12)
    assert scores["sdm_column_pair_trends"] < 0.95
    assert scores["sdm_overall"] == pytest.approx((scores["sdm_column_shapes"] + scores["sdm_column_pair_trends"]) / 2)


def test_numeric_pair_trend_is_one_minus_half_the_correlation_gap() -> None:
    real, domain = _table()
    rng = np.random.default_rng(2)
    synthetic = real.with_columns(pl.Series("hours", rng.permutation(real["hours"].to_numpy())))
    only = ["age", "hours"]
    scores = sdmetrics_scores(real.select(only), synthetic.select(only), domain)
    gap = abs(np.corrcoef(real["age"], real["hours"])[0, 1] - np.corrcoef(synthetic["age"], synthetic["hours"])[0, 1])
    assert scores["sdm_column_pair_trends"] == pytest.approx(1 - gap / 2, abs=1e-9)


def test_large_tables_are_sampled_and_other_columns_ignored() -> None:
    real, domain = _table(3_000)
    synthetic = real.reverse().with_columns(pl.lit(1).alias("extra"))  # the same rows, in another order
    scores = sdmetrics_scores(real, synthetic, domain, rows=500)
    assert scores["sdm_column_shapes"] < 1.0  # two different samples of 500 rows differ
    assert scores["sdm_column_shapes"] > 0.9


def test_metadata_types_follow_the_domain() -> None:
    frame = pl.DataFrame({"when": [datetime.date(2020, 1, 1)], "n": [1.0], "code": [3], "y": [True]})
    domain = Domain.from_mapping(frame.schema, {"when": (datetime.date(2019, 1, 1), datetime.date(2021, 1, 1)),
                                                "n": (0.0, 5.0), "code": [1, 2, 3]}, ["y"])
    assert sdmetrics_metadata(frame, domain) == {"columns": {
        "when": {"sdtype": "datetime"}, "n": {"sdtype": "numerical"}, "code": {"sdtype": "categorical"},
        "y": {"sdtype": "boolean"}}}


def test_without_sdmetrics_the_columns_are_null(monkeypatch) -> None:
    real, domain = _table(200)
    original = builtins.__import__

    def no_sdmetrics(name, *args, **kwargs):
        if name.startswith("sdmetrics"):
            raise ImportError(name)
        return original(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sdmetrics)
    assert sdmetrics_scores(real, real, domain) == dict.fromkeys(SDMETRICS_METRICS)
