"""Relations between columns (polars_rap.quality.relations): against SciPy and NumPy, the quality
report's streaming correlation ratio, and hand-computed medians."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from polars_rap.quality.relations import category_relations, numeric_pairs, relation_summary
from polars_rap.quality.report import quality_report
from polars_rap.quality.stats import association, pair_sums
from polars_rap.schema.domain import Domain

MAPPING = {"x": (0.0, 100.0), "y": (0.0, 50.0), "k": (0, 20), "g": ["a", "b", "c"]}


def _table(seed: int, n: int = 2_000) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], n, p=[0.6, 0.37, 0.03])
    x = rng.gamma(2.0, 10.0, n) + np.where(g == "b", 15.0, 0.0)
    y = 0.3 * x + rng.normal(0, 5, n)
    k = rng.integers(0, 12, n).astype(np.float64)  # many ties
    frame = pl.DataFrame({"x": x, "y": y, "k": k, "g": g})
    return frame.with_columns(pl.when(pl.Series(rng.random(n) < 0.1)).then(None).otherwise(pl.col("y")).alias("y"))


def _domain(frame: pl.DataFrame) -> Domain:
    return Domain.from_mapping(frame.schema, {**MAPPING, "y": {"bounds": (0.0, 50.0), "nullable": True}})


def test_pearson_and_spearman_equal_numpy_and_scipy_on_pairwise_present_clipped_values():
    real, synthetic = _table(0), _table(1)
    domain = _domain(real)
    pairs = numeric_pairs(real, synthetic, domain)
    assert pairs.select("column_a", "column_b").rows() == [("x", "y"), ("x", "k"), ("y", "k")]
    for table, suffix in ((real, "real"), (synthetic, "synthetic")):
        clipped = table.with_columns(pl.col("x").clip(0, 100), pl.col("y").clip(0, 50), pl.col("k").clip(0, 20))
        for a, b, pearson, spearman in pairs.select("column_a", "column_b", f"pearson_{suffix}",
                                                    f"spearman_{suffix}").rows():
            both = clipped.select(a, b).drop_nulls()
            assert pearson == pytest.approx(np.corrcoef(both[a], both[b])[0, 1], abs=1e-12)
            assert spearman == pytest.approx(stats.spearmanr(both[a], both[b]).statistic, abs=1e-12)


def test_spearman_ignores_an_increasing_map_and_pearson_does_not():
    real = _table(2)
    domain = _domain(real)
    bent = real.with_columns((pl.col("x") ** 3 / 10_000).alias("x"))  # increasing on [0, 100]
    pairs = numeric_pairs(real, bent, domain).filter(pl.col("column_a") == "x")
    assert pairs["spearman_synthetic"].to_list() == pytest.approx(pairs["spearman_real"].to_list(), abs=1e-12)
    assert (pairs["pearson_synthetic"] - pairs["pearson_real"]).abs().max() > 0.01


def test_a_constant_column_or_a_single_row_correlates_with_nothing():
    domain = Domain.from_mapping({"u": pl.Float64, "v": pl.Float64}, {"u": (0, 1), "v": (0, 1)})
    constant = pl.DataFrame({"u": [0.5, 0.5, 0.5], "v": [0.1, 0.2, 0.3]})
    assert numeric_pairs(constant, constant.head(1), domain).row(0)[2:] == (0.0, 0.0, 0.0, 0.0)


def test_correlation_ratio_equals_the_reports_streaming_association():
    real, synthetic = _table(3), _table(4)
    domain = _domain(real)
    relations = category_relations(real, synthetic, domain)
    assert relations.select("numeric", "categorical").rows() == [("x", "g"), ("y", "g"), ("k", "g")]
    for name, ratio_real in relations.select("numeric", "ratio_real").rows():
        spec, group = domain[name], domain["g"]
        values = np.nan_to_num((np.clip(real[name].to_numpy().astype(float), spec.lower, spec.upper) - spec.lower)
                               / (spec.upper - spec.lower))
        codes = real["g"].replace_strict({"a": 0, "b": 1, "c": 2}).to_numpy()
        present = real[name].is_not_null().to_numpy()
        measure, streamed = association(group, spec, pair_sums(group, codes, None, spec, values, present))
        assert measure == "correlation ratio"
        assert ratio_real == pytest.approx(streamed, abs=1e-12)


def test_median_error_is_relative_over_large_categories_only():
    domain = Domain.from_mapping({"g": pl.String, "u": pl.Float64}, {"g": ["a", "b", "c"], "u": (0.0, 1000.0)})
    real = pl.DataFrame({"g": ["a"] * 50 + ["b"] * 49 + ["c"], "u": [100.0] * 50 + [200.0] * 49 + [999.0]})
    synthetic = pl.DataFrame({"g": ["a"] * 50 + ["b"] * 49 + ["c"], "u": [110.0] * 50 + [150.0] * 49 + [0.0]})
    # a: |110 - 100| / 100 = 0.1; b: |150 - 200| / 200 = 0.25; c holds 1% of the rows: left out
    assert category_relations(real, synthetic, domain)["median_error"].item() == pytest.approx(0.25)
    # a median of 0 is measured against 1% of the range (10), not divided by 0
    zeros = real.with_columns(pl.when(pl.col("g") == "a").then(0.0).otherwise(pl.col("u")).alias("u"))
    shifted = zeros.with_columns(pl.when(pl.col("g") == "a").then(5.0).otherwise(pl.col("u")).alias("u"))
    assert category_relations(zeros, shifted, domain)["median_error"].item() == pytest.approx(0.5)
    # a large category with no synthetic value at all counts as 1
    missing = synthetic.with_columns(pl.when(pl.col("g") == "b").then(None).otherwise(pl.col("u")).alias("u"))
    assert category_relations(real, missing, domain)["median_error"].item() == 1.0


def test_summary_of_a_table_against_itself_and_against_its_shuffle():
    real = _table(5, 5_000)
    domain = _domain(real)
    same = relation_summary(real, real, domain)
    assert same == {"pearson_mean_delta": 0.0, "pearson_max_delta": 0.0, "spearman_mean_delta": 0.0,
                    "spearman_max_delta": 0.0, "eta_kept_mean": 1.0, "eta_kept_min": 1.0, "median_error_max": 0.0}
    rng = np.random.default_rng(0)
    shuffled = real.with_columns(pl.col(c).gather(rng.permutation(real.height)) for c in real.columns)
    broken = relation_summary(real, shuffled, domain)
    r_xy = numeric_pairs(real, real, domain).filter(column_b="y")["pearson_real"].item()
    assert broken["pearson_max_delta"] == pytest.approx(abs(r_xy), abs=0.05)  # the shuffle's r is about 0
    assert broken["eta_kept_min"] < 0.5  # x by g (real ratio about 0.3) is gone


def test_summary_without_pairs_is_none():
    domain = Domain.from_mapping({"g": pl.String, "u": pl.Float64}, {"g": ["a", "b"], "u": (0.0, 1.0)})
    frame = pl.DataFrame({"g": ["a", "b"] * 10, "u": [0.5] * 20})
    summary = relation_summary(frame, frame, domain)
    assert summary["pearson_max_delta"] is None and summary["eta_kept_min"] is None  # constant: ratio 0 < 5%
    assert summary["median_error_max"] == 0.0


def test_the_quality_report_carries_and_renders_the_relations():
    real, synthetic = _table(6), _table(7)
    report = quality_report(real, synthetic, domain={**MAPPING, "y": {"bounds": (0.0, 50.0), "nullable": True}})
    expected = numeric_pairs(real, synthetic, _domain(real))
    assert report.numeric_pairs.sort("column_a", "column_b").equals(expected.sort("column_a", "column_b"))
    assert report.category_relations.height == 3
    pytest.importorskip("matplotlib")
    page = report._repr_html_()
    assert "Numeric pairs" in page and "Numeric columns within categories" in page
