"""Confidence intervals and error bounds in the report (design.md §5b): their formulas, and
their coverage on a real run against the true answers (which only the test reads)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import polars_rap as pr
import polars_rap.pipeline.synthesis as mechanism
from polars_rap import ProjectionConfig, kernels
from polars_rap.io import datasets
from polars_rap.schema.encoding import encode
from polars_rap.privacy.report import PrivacyReport, SelectionRecord, interval_halfwidth, simultaneous_halfwidth, unmeasured_error_bounds


@pytest.mark.parametrize(("confidence", "m"), [(0.95, 1), (0.95, 500), (0.9, 20_000)])
def test_simultaneous_halfwidth_is_bonferroni(confidence, m):
    z = stats.norm.ppf(1 - (1 - confidence) / (2 * m))
    assert simultaneous_halfwidth(2.0, confidence, m) == pytest.approx(2.0 * z, rel=1e-12)
    assert simultaneous_halfwidth(2.0, confidence, m) >= interval_halfwidth(2.0, confidence)


def test_unmeasured_bound_follows_its_formula():
    # candidates 0..3 of sizes 2, 1, 2, 1 (queries concatenated in that order); 1 and 2 selected
    record = SelectionRecord(
        round=4, query_class="CM", candidates=np.array([0, 1, 2, 3]),
        candidate_answers=np.array([0.5, 0.5, 0.2, 0.1, 0.9, 0.3]), gumbel_scale=0.01,
        selected=np.array([2, 1]), selected_gap=np.array([0.05, 0.02]),
        selected_std=np.array([0.001, 0.002]), selected_size=np.array([2, 1]),
    )
    final = np.array([0.6, 0.4, 0.2, 0.1, 0.9, 0.35])
    alpha = 0.05
    lambda1 = math.sqrt(2 * math.log(3 * 2 / alpha))
    selected = [0.05 + 0.001 * (2 * math.sqrt(2 / math.pi) + lambda1 * math.sqrt(2)),
                0.02 + 0.002 * (1 * math.sqrt(2 / math.pi) + lambda1)]
    gumbel = 0.01 * (math.log(4) + math.log(3 / alpha) + math.log(math.log(3 / alpha)))
    drift = np.array([0.1 + 0.1, 0.05])  # groups 0 and 3
    expected = drift + min(selected) + gumbel
    bounds = unmeasured_error_bounds(record, np.array([2, 1, 2, 1]), final, 0.95)
    np.testing.assert_allclose(bounds, expected, rtol=1e-14)


def test_discrete_noise_widens_intervals_and_bounds_by_one_count():
    """With ``lattice_step`` = 1/n (discrete Gaussian noise on counts, whose magnitude is at
    most a continuous one's plus one count in law), every interval is exactly one count wider
    and an unmeasured group's bound grows by n_j / n for the selected group j it rests on."""
    step = 1.0 / 1000
    assert interval_halfwidth(2.0, 0.95, lattice_step=step) == interval_halfwidth(2.0, 0.95) + step
    assert simultaneous_halfwidth(2.0, 0.9, 50, lattice_step=step) == simultaneous_halfwidth(2.0, 0.9, 50) + step
    fields = dict(
        round=4, query_class="CM", candidates=np.array([0, 1, 2, 3]),
        candidate_answers=np.array([0.5, 0.5, 0.2, 0.1, 0.9, 0.3]), gumbel_scale=0.01,
        selected=np.array([2, 1]), selected_gap=np.array([0.05, 0.02]),
        selected_std=np.array([0.001, 0.002]), selected_size=np.array([2, 1]),
    )
    final = np.array([0.6, 0.4, 0.2, 0.1, 0.9, 0.35])
    continuous = unmeasured_error_bounds(SelectionRecord(**fields), np.array([2, 1, 2, 1]), final, 0.95)
    discrete = unmeasured_error_bounds(SelectionRecord(**fields, lattice_step=step),
                                       np.array([2, 1, 2, 1]), final, 0.95)
    alpha = 0.05
    lambda1 = math.sqrt(2 * math.log(3 * 2 / alpha))
    selected = [0.05 + 0.001 * (2 * math.sqrt(2 / math.pi) + lambda1 * math.sqrt(2)) + 2 * step,
                0.02 + 0.002 * (1 * math.sqrt(2 / math.pi) + lambda1) + 1 * step]
    np.testing.assert_allclose(discrete - continuous,
                               min(selected) - min(selected[0] - 2 * step, selected[1] - step), rtol=1e-9)


def test_unmeasured_bound_is_capped_at_the_largest_possible_error():
    record = SelectionRecord(
        round=0, query_class="LT", candidates=np.array([0, 1, 2]), candidate_answers=np.zeros(3),
        gumbel_scale=10.0, selected=np.array([0]), selected_gap=np.array([0.0]),
        selected_std=np.array([1.0]), selected_size=np.array([1]),
    )
    assert unmeasured_error_bounds(record, np.array([1, 1, 1]), np.zeros(3), 0.95).tolist() == [1.0, 1.0]


@pytest.fixture(scope="module")
def run():
    """A small real run, with the workload captured so the test can compute true answers."""
    task = datasets.load_task("acs-income-CA")
    frame = task.frame.sample(n=8000, seed=0)
    captured = {}
    original = mechanism.workload_and_plan

    def capture(*args, **kwargs):
        queries, plan, counts = original(*args, **kwargs)
        captured["queries"] = queries  # null-rate groups included
        return queries, plan, counts

    mechanism.workload_and_plan = capture
    try:
        result = pr.synthesize(
            frame, epsilon=2.0, delta=1e-9, domain=task.domain, labels=task.labels, seed=1, progress=False,
            strategy=pr.PlannedStrategy(relaxed_rows=300, rounds={"CM": 4, "LT": 6},
                                        workload={"n_linear_thresholds": 1000},
                                        projection=ProjectionConfig(max_steps=20)),
        )
    finally:
        mechanism.workload_and_plan = original
    queries = captured["queries"]
    backend = kernels.get_backend("cpu")
    real = encode(frame, result.domain)
    synthetic = encode(result.data, result.domain)
    true = backend.answers_exact(real.codes, real.numerics, queries)
    returned = backend.answers_exact(synthetic.codes, synthetic.numerics, queries)
    return result, queries, np.asarray(true), np.asarray(returned)


def test_measured_intervals_cover_the_true_answers(run):
    result, _, true, returned = run
    m = result.report.measurements
    truth = true[m["query"].to_numpy()]
    per_query = (m["ci_low"].to_numpy() <= truth) & (truth <= m["ci_high"].to_numpy())
    assert per_query.mean() >= 0.93  # 95% each; thousands of answers
    assert np.all((m["ci_low_simultaneous"].to_numpy() <= truth) & (truth <= m["ci_high_simultaneous"].to_numpy()))
    np.testing.assert_allclose(m["synthetic_answer"].to_numpy(), returned[m["query"].to_numpy()], atol=1e-12)
    within = np.abs(m["synthetic_answer"].to_numpy() - truth) <= m["error_bound"].to_numpy()
    assert within.mean() >= 0.95


def test_unmeasured_bounds_cover_the_true_errors(run):
    result, queries, true, returned = run
    unmeasured = result.report.unmeasured
    assert unmeasured.height > 0 and set(unmeasured["query_class"]) == {"CM", "LT"}
    measured_groups = set(result.report.measurements["group"].to_list())
    assert measured_groups.isdisjoint(unmeasured["group"].to_list())
    assert measured_groups | set(unmeasured["group"].to_list()) == set(range(queries.n_groups))
    errors = []
    for group in unmeasured["group"].to_numpy():
        start, stop = queries.group_offsets[group], queries.group_offsets[group + 1]
        errors.append(np.abs(true[start:stop] - returned[start:stop]).sum())
    covered = np.asarray(errors) <= unmeasured["error_bound"].to_numpy()
    assert covered.mean() >= 0.95


def test_report_round_trips_with_the_new_fields(run):
    report = run[0].report
    again = PrivacyReport.from_dict(report.to_dict())
    assert again.unmeasured.equals(report.unmeasured) and again.measurements.equals(report.measurements)
    assert (again.conversion_delta, again.approximate_delta) == (report.conversion_delta, report.approximate_delta)
    assert "unmeasured" in report.summary()
