"""Short reprs and notebook views of what a synthesis returns (issue 16: repr was ~80 KB)."""

import dataclasses
from html.parser import HTMLParser

import polars as pl
import pytest

import polars_rap

from plans import OUTRIGHT  # tests/plans.py


@pytest.fixture(scope="module")
def result():
    frame = pl.DataFrame({"age": [23, 35, 47, 59] * 50, "sex": ["F", "M"] * 100})
    small = polars_rap.PlannedStrategy(relaxed_rows=20, rounds={"LT": 2}, workload={"n_linear_thresholds": 20})
    return polars_rap.synthesize(frame, epsilon=1.0, delta=1e-6, domain={"age": (18, 90), "sex": ["F", "M"]},
                                 strategy=small, seed=0, progress=False)


def parses(text: str) -> bool:
    parser = HTMLParser()
    parser.feed(text)
    parser.close()
    return True


def test_report_repr_is_one_line_with_the_guarantee(result):
    text = repr(result.report)
    assert "\n" not in text and len(text) < 300
    assert text.startswith("PrivacyReport((1, 1e-06)-DP over 200 rows") and f"{len(result.report.events)} charges" in text


def test_model_repr_is_one_line_naming_size_columns_and_guarantee(result):
    text = repr(result.model)
    assert "\n" not in text and len(text) < 300
    assert text.startswith("SyntheticModel(20 relaxed rows, 2 columns (age, sex), (1, 1e-06)-DP")


def test_notebook_views_hold_the_guarantee_and_summary(result):
    for view in (result.report._repr_html_(), result.model._repr_html_()):
        assert parses(view) and "<table>" in view and "<th>epsilon</th><th>delta</th>" in view
        assert "zCDP budget rho" in view  # the summary's text
        assert len(view) < 5_000


def test_result_repr_is_one_line_naming_shape_guarantee_and_attributes(result):
    text = repr(result)
    assert "\n" not in text and len(text) < 300
    assert text == ("SynthesisResult(200 rows x 2 columns, (1, 1e-06)-DP over 200 input rows, "
                    "20 relaxed rows; .data, .report, .model)")


def test_result_notebook_view_holds_shape_columns_and_the_privacy_summary(result):
    view = result._repr_html_()
    assert parses(view) and "200 synthetic rows x 2 columns" in view and "age (Int64), sex (String)" in view
    assert "<th>epsilon</th><th>delta</th>" in view and "zCDP budget rho" in view


@pytest.fixture(scope="module")
def wide_result(task):
    """A CA run (20 columns, hundreds of ledger events and unmeasured groups) at toy settings."""
    frame = task.frame.sample(2_000, seed=0)
    return polars_rap.synthesize(frame, epsilon=1.0, delta=1e-7, domain=task.domain, labels=task.labels,
                                 seed=0, progress=False,
                                 strategy=dataclasses.replace(  # every CM table an event of its own
                                     OUTRIGHT, relaxed_rows=50, rounds={"LT": 3},
                                     workload=polars_rap.WorkloadSize(n_linear_thresholds=500, n_mixed_marginals=50),
                                     projection=polars_rap.ProjectionConfig(max_steps=5)))


def test_reprs_and_views_stay_short_on_a_wide_table(wide_result):
    """Size does not grow with the ledger: the whole report would be far larger than these."""
    assert len(wide_result.report.events) > 100 and wide_result.report.unmeasured.height > 100
    for obj in (wide_result, wide_result.report, wide_result.model):
        assert "\n" not in repr(obj) and len(repr(obj)) < 2_000, type(obj).__name__
        assert parses(obj._repr_html_()) and len(obj._repr_html_()) < 5_000, type(obj).__name__
    assert "... (8 more)" in wide_result._repr_html_()
