"""The numeric metric (issue #14): per numeric column, the Kolmogorov–Smirnov distance and the
decile error between real and synthetic, in ``polars_rap.quality.evaluation`` and in the benchmark's
rows (one KS implementation, shared with the quality report)."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from polars_rap.schema.domain import Domain
from polars_rap.quality.evaluation import numeric_errors, numeric_summary
from polars_rap.quality.report import quality_report

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # bench/ is a folder of the repository, not of the package
    sys.path.insert(0, str(REPO_ROOT))

from bench import run  # noqa: E402


def _domain(schema, declared):
    return Domain.from_mapping(schema, declared)


def test_ks_and_decile_error_match_hand_computed_values():
    real = pl.DataFrame({"x": [float(v) for v in range(10)]})
    synthetic = pl.DataFrame({"x": [0.0] * 5 + [5.0] * 5})
    domain = _domain(real.schema, {"x": (0, 10)})
    row = numeric_errors(real, synthetic, domain).row(0, named=True)
    # F_real - F_synthetic at 0: 0.1 - 0.5; at 5: 0.6 - 1.0: both 0.4, the largest gap
    assert row["ks_distance"] == pytest.approx(0.4)
    # deciles (smallest x with F(x) >= p): real 0, 1, ..., 8; synthetic 0 (p <= 0.5) then 5
    real_deciles = np.arange(9.0)
    synthetic_deciles = np.array([0.0] * 5 + [5.0] * 4)
    assert row["decile_error"] == pytest.approx(np.abs(real_deciles - synthetic_deciles).mean() / 10.0)
    assert row["decile_error"] == pytest.approx(16 / 9 / 10)


def test_identical_tables_score_zero():
    rng = np.random.default_rng(0)
    frame = pl.DataFrame({"a": rng.normal(50, 10, 500), "b": rng.integers(0, 5, 500), "c": rng.choice(["u", "v"], 500)})
    domain = _domain(frame.schema, {"a": (0, 100), "b": (0, 4), "c": ["u", "v"]})
    errors = numeric_errors(frame, frame.sample(fraction=1.0, shuffle=True, seed=1), domain)
    assert errors["column"].to_list() == ["a", "b"]  # numeric columns only, in domain order
    assert errors["ks_distance"].to_list() == [0.0, 0.0] and errors["decile_error"].to_list() == [0.0, 0.0]
    assert numeric_summary(frame, frame, domain) == {"numeric_ks_mean": 0.0, "numeric_decile_error": 0.0}


def test_values_are_clipped_to_the_bounds_and_nulls_left_out():
    real = pl.DataFrame({"x": [1.0, 2.0, None, 3.0]})
    synthetic = pl.DataFrame({"x": [1.0, None, 2.0, 99.0]})  # 99 clips to the upper bound 3
    domain = _domain(real.schema, {"x": {"bounds": (1, 3), "nullable": True}})
    row = numeric_errors(real, synthetic, domain).row(0, named=True)
    assert row["ks_distance"] == 0.0 and row["decile_error"] == 0.0


def test_a_column_with_values_in_one_table_only_scores_one():
    real = pl.DataFrame({"x": [1.0, 2.0]})
    synthetic = pl.DataFrame({"x": [None, None]}, schema={"x": pl.Float64})
    domain = _domain(real.schema, {"x": {"bounds": (0, 3), "nullable": True}})
    assert numeric_errors(real, synthetic, domain).row(0)[1:] == (1.0, 1.0)
    assert numeric_errors(synthetic, synthetic, domain).row(0)[1:] == (0.0, 0.0)


def test_date_columns_are_measured_in_days_over_the_declared_range():
    start = dt.date(2000, 1, 1)
    real = pl.DataFrame({"day": [start + dt.timedelta(days=k) for k in range(10)]})
    synthetic = pl.DataFrame({"day": [start + dt.timedelta(days=k + 1) for k in range(10)]})
    domain = _domain(real.schema, {"day": (start, start + dt.timedelta(days=100))})
    row = numeric_errors(real, synthetic, domain).row(0, named=True)
    assert row["ks_distance"] == pytest.approx(0.1) and row["decile_error"] == pytest.approx(1 / 100)


def test_the_quality_report_gives_the_same_ks_distance():
    rng = np.random.default_rng(2)
    real = pl.DataFrame({"x": rng.normal(5, 2, 300)})
    synthetic = pl.DataFrame({"x": rng.normal(5.5, 2, 200)})
    declared = {"x": (0, 10)}
    report = quality_report(real, synthetic, domain=declared)
    ks = numeric_errors(real, synthetic, _domain(real.schema, declared))["ks_distance"][0]
    assert report.columns.filter(pl.col("column") == "x")["distance"][0] == ks


# ------------------------------------------------------------------ the benchmark's rows


def test_result_rows_carry_the_numeric_metric_and_old_files_gain_its_columns(tmp_path):
    assert {"numeric_ks_mean", "numeric_decile_error"} <= set(run.COLUMNS) & set(run.FLOAT_COLUMNS)
    out = tmp_path / "old.csv"
    old_columns = [c for c in run.COLUMNS if c not in run.NUMERIC_METRICS]
    out.write_text(",".join(old_columns) + "\n" + ",".join(
        {"dataset": "adult", "mechanism": "aim", "status": "ok", "seed": "0", "epsilon": "1.0",
         "parameters": "{}", "macro_f1": "0.7"}.get(c, "") for c in old_columns) + "\n")
    run.append_row(out, {"dataset": "adult", "mechanism": "rap++", "parameters": "{}", "epsilon": 1.0, "seed": 0,
                         "status": "ok", "numeric_ks_mean": 0.05, "numeric_decile_error": 0.01, "macro_f1": 0.8})
    results = run.read_results(out)
    assert results["mechanism"].to_list() == ["aim", "rap++"]
    assert results["macro_f1"].to_list() == [0.7, 0.8]
    assert results["numeric_ks_mean"].to_list() == [None, 0.05]
    table = run.headline_table(results)
    assert "numeric_ks_mean" in table.columns and "numeric_decile_error" in table.columns


def test_ks_target_compares_with_aims_best_rows():
    rows = []  # AIM at polars-rap's guarantee; the shipped add/remove AIM ("aim", 0.01) is not compared
    for mechanism, ks in (("rap++", 0.02), ("aim-replace-one", 0.08), ("aim-replace-one-fixed-sampler", 0.05),
                          ("aim", 0.01)):
        rows.append({"dataset": "adult", "mechanism": mechanism, "parameters": '{"bins": 20}' if "aim" in mechanism else "{}",
                     "epsilon": 1.0, "seed": 0, "status": "ok", "numeric_ks_mean": ks})
    frame = pl.DataFrame(rows)
    frame = frame.with_columns(*(pl.lit(None).alias(c) for c in run.COLUMNS if c not in frame.columns))
    frame = frame.select(run.COLUMNS).cast({c: pl.Float64 for c in run.FLOAT_COLUMNS} | {"seed": pl.Int64})
    row = run.targets_table(frame).row(0, named=True)
    assert row["KS_vs_AIM"] == pytest.approx(0.02 / 0.05)


def test_domain_updates_change_only_polars_raps_synthesis_domain():
    task_domain = {"gain": (0, 99999), "hours": {"bounds": (1, 99), "nullable": True}, "sex": ["F", "M"]}
    updated = run.updated_domain(task_domain, {"gain": {"scale": "log", "atoms": [0]}, "hours": {"scale": "sqrt"}})
    assert updated == {"gain": {"bounds": (0, 99999), "scale": "log", "atoms": [0]},
                       "hours": {"bounds": (1, 99), "nullable": True, "scale": "sqrt"}, "sex": ["F", "M"]}
    with pytest.raises(ValueError, match="'sex', which is not a numeric column"):
        run.updated_domain(task_domain, {"sex": {"scale": "log"}})
    suite = {**run.SUITES["quick"], "domain_updates": {"adult": {"gain": {"scale": "log"}}}}
    assert run.mechanism_parameters(suite, "rap++", None, 60.0)["domain_updates"] == suite["domain_updates"]
    assert "domain_updates" not in run.mechanism_parameters(suite, "aim", 20, 60.0)
    assert "domain_updates" not in run.mechanism_parameters(run.SUITES["quick"], "rap++", None, 60.0)

