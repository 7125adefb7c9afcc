"""The quality report's column figures (issue #78): a numeric column's x axis has few, compact
tick labels, so a wide range's labels do not run together, and a column declared on a log scale
is binned and plotted on that scale."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

pytest.importorskip("matplotlib")

from polars_rap.quality import quality_report  # noqa: E402
from polars_rap.quality.render import column_figure  # noqa: E402

N = 2_000


@pytest.fixture(scope="module")
def report():
    rng = np.random.default_rng(0)
    income = lambda shift: np.round(np.exp(rng.normal(10 + shift, 1.0, N))).clip(0, 480_000)  # noqa: E731
    frame = lambda shift: pl.DataFrame({"income": income(shift), "wide": rng.uniform(0, 480_000, N),  # noqa: E731
                                        "g": rng.choice(["a", "b"], N)})
    domain = {"income": {"bounds": (0, 480_000), "scale": "log"}, "wide": (0, 480_000), "g": ["a", "b"]}
    return quality_report(frame(0.0), frame(0.2), domain=domain)


def _distribution(report, name):
    return next(d for d in report.distributions if d.name == name)


def _labels(figure) -> list[str]:
    figure.canvas.draw()
    low, high = figure.axes[0].get_xlim()
    slack = 1e-9 * (high - low)
    return [t.get_text() for t in figure.axes[0].get_xticklabels() if low - slack <= t.get_position()[0] <= high + slack]


def test_a_wide_linear_range_gets_at_most_five_short_tick_labels(report):
    d = _distribution(report, "wide")
    assert d.scale == "linear" and np.allclose(np.diff(d.labels), d.labels[1] - d.labels[0])
    labels = _labels(column_figure(d))
    assert 2 <= len(labels) <= 5 and all(len(text) <= 5 for text in labels), labels  # "150k", not "150000"


def test_a_log_column_is_binned_and_drawn_on_its_scale(report):
    d = _distribution(report, "income")
    widths = np.diff(d.labels)
    assert d.scale == "log" and widths[-1] > 100 * widths[0]  # equal steps on the log scale
    real_bins = np.count_nonzero(d.real)
    assert real_bins > 20  # on a linear grid the skewed column filled the first two or three bins
    figure = column_figure(d)
    assert figure.axes[0].get_xscale() == "function"
    assert _labels(figure) == ["0", "2.2k", "15k", "85k", "480k"]
