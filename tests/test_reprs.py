"""Short reprs and notebook views of what a synthesis returns (issue 16: repr was ~80 KB)."""

from html.parser import HTMLParser

import polars as pl
import pytest

import polars_rap


@pytest.fixture(scope="module")
def result():
    frame = pl.DataFrame({"age": [23, 35, 47, 59] * 50, "sex": ["F", "M"] * 100})
    return polars_rap.synthesize(frame, epsilon=1.0, delta=1e-6, domain={"age": (18, 90), "sex": ["F", "M"]},
                                 relaxed_rows=20, rounds_lt=2, n_linear_thresholds=20, seed=0, progress=False)


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
