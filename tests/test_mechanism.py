"""RAP++ end to end on a small real table: schema, ledger, report, reproducibility, inputs."""

import gc
import math

import polars as pl
import pytest

import polars_rap
from polars_rap.projection import ProjectionConfig

FAST = dict(relaxed_rows=100, rounds_cm=3, rounds_lt=3, rounds_mm=2, n_linear_thresholds=300,
            n_mixed_marginals=50, projection=ProjectionConfig(max_steps=30, max_doublings=2),
            progress=False)


@pytest.fixture(scope="module")
def small(task):
    return task.frame.sample(2000, seed=1)


@pytest.fixture(scope="module")
def result(small, task):
    return small.dp.synthesize(epsilon=1.0, delta=1e-7, domain=task.domain, labels=task.labels,
                               seed=0, **FAST)


def test_output_has_input_schema_and_row_count(result, small):
    assert result.data.schema == small.schema
    assert result.data.height == small.height


def test_output_values_stay_inside_the_public_domain(result, task):
    for spec in result.domain.columns:
        column = result.data[spec.name]
        if spec.is_categorical:
            assert set(column.drop_nulls().to_list()) <= set(spec.categories), spec.name
            if not spec.nullable:
                assert column.null_count() == 0, spec.name
        else:
            values = column.drop_nulls()
            assert values.min() >= spec.lower and values.max() <= spec.upper, spec.name


def test_ledger_spends_exactly_the_budget_from_epsilon_delta(result):
    report = result.report
    assert report.rho_budget == polars_rap.privacy.rho_from_epsilon_delta(1.0, 1e-7)
    assert math.fsum(e.rho for e in report.events) == report.rho_spent
    assert report.rho_spent <= report.rho_budget
    assert report.rho_spent == pytest.approx(report.rho_budget, rel=1e-12)
    mechanisms = {e.mechanism for e in report.events}
    assert mechanisms == {"gaussian", "gumbel_top_k"}


def test_each_round_selects_k_groups_and_measures_them(result):
    report = result.report
    rounds = report.measurements.group_by("round").agg(pl.col("group").n_unique())
    assert rounds["group"].max() <= 10
    assert report.measurements["group"].n_unique() == sum(1 for e in report.events if e.mechanism == "gaussian")
    assert set(report.measurements["query_class"]) == {"CM", "LT", "MM"}


def test_report_noise_scales_follow_the_charges(result):
    """Each measured group's noise std is its L2 sensitivity over sqrt(2 rho_g)."""
    report = result.report
    n = report.n_rows
    gaussian = [e for e in report.events if e.mechanism == "gaussian"]
    stds = report.measurements.group_by("group", maintain_order=True).agg(
        pl.col("noise_std").first(), pl.col("query_class").first(), pl.len())
    for event, row in zip(gaussian, stds.iter_rows(named=True), strict=True):
        l2 = (math.sqrt(2) if row["query_class"] in ("CM", "MM") else 1.0) / n
        assert row["noise_std"] == pytest.approx(l2 / math.sqrt(2 * event.rho), rel=1e-12)
    m = report.measurements
    assert (m["ci_low"] < m["noisy_answer"]).all() and (m["noisy_answer"] < m["ci_high"]).all()


def test_same_seed_gives_identical_output(small, task, result):
    again = polars_rap.synthesize(small, epsilon=1.0, delta=1e-7, domain=task.domain,
                                  labels=task.labels, seed=0, **FAST)
    assert again.data.equals(result.data)
    assert again.report.measurements.equals(result.report.measurements)


def test_lazyframe_path_and_rows_are_accepted(small, task, tmp_path):
    path = tmp_path / "small.parquet"
    small.write_parquet(path)
    for source in (small.lazy(), str(path)):
        out = polars_rap.synthesize(source, epsilon=0.5, delta=1e-7, domain=task.domain,
                                    labels=task.labels, rows=123, seed=1, **FAST)
        assert out.data.height == 123 and out.data.schema == small.schema


def test_result_keeps_no_reference_to_the_input(task):
    frame = task.frame.sample(500, seed=3)
    result = frame.dp.synthesize(epsilon=1.0, delta=1e-6, domain=task.domain, labels=task.labels,
                                 seed=0, **FAST)
    gc.collect()
    referrers = gc.get_referrers(frame)
    assert not any(r is result or r is result.report or r is result.data for r in referrers)
    assert all(getattr(result, name) is not frame for name in ("data", "report", "domain", "relaxed"))


@pytest.mark.parametrize("kwargs, message", [
    (dict(epsilon=0.0), "'epsilon' parameter must be a finite float > 0"),
    (dict(epsilon=float("inf")), "'epsilon' parameter must be a finite float > 0"),
    (dict(delta=1.0), "'delta' parameter must be a float in \\(0, 1\\)"),
    (dict(rows=0), "'rows' parameter must be an int in \\[1, inf\\)"),
    (dict(relaxed_rows=0), "'relaxed_rows'"),
    (dict(selection_share=1.0), "'selection_share'"),
    (dict(backend="tpu"), "unknown kernel backend 'tpu'"),
])
def test_bad_parameters_are_refused_before_any_work(small, task, kwargs, message):
    arguments = dict(epsilon=1.0, delta=1e-7, domain=task.domain, labels=task.labels, seed=0)
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        polars_rap.synthesize(small, **arguments)


def test_empty_frame_and_unknown_input_type_are_refused(small, task):
    with pytest.raises(ValueError, match="no rows"):
        polars_rap.synthesize(small.head(0), epsilon=1.0, delta=1e-7, domain=task.domain, labels=task.labels)
    with pytest.raises(TypeError, match="polars DataFrame"):
        polars_rap.synthesize([1, 2, 3], epsilon=1.0, delta=1e-7)


def test_backend_auto_falls_back_to_cpu_and_cuda_without_gpu_is_a_clear_error(caplog, monkeypatch):
    """Without a usable GPU, auto means cpu (said in the log) and explicit cuda refuses."""
    import logging

    from polars_rap import kernels

    monkeypatch.setattr(kernels.get_backend("cuda"), "is_available", lambda: False)
    with caplog.at_level(logging.INFO):
        assert kernels.resolve_backend("auto").__name__ == "polars_rap.kernels.cpu"
    assert "runs on the CPU" in caplog.text
    with pytest.raises(RuntimeError, match="backend='cuda' needs an NVIDIA GPU.*backend='cpu'"):
        kernels.resolve_backend("cuda")


@pytest.mark.parametrize("strategy", ["paper", "planned"])
def test_more_rounds_than_groups_strand_no_budget(task, strategy):
    """A class gets at most ceil(groups / K) rounds: every scheduled round measures something,
    so the whole budget is spent even when the caller asks for more rounds than groups (the
    planned strategy measures such a class outright, in one step)."""
    result = task.frame.sample(3000, seed=0).dp.synthesize(
        epsilon=1.0, delta=1e-9, domain=task.domain, labels=task.labels, seed=0,
        relaxed_rows=50, rounds_cm=40, rounds_lt=1, n_linear_thresholds=50,
        projection=ProjectionConfig(max_steps=3), progress=False, strategy=strategy,
    )
    report = result.report
    n_cm_groups = report.measurements.filter(pl.col("query_class") == "CM")["group"].n_unique()
    n_cm_groups += report.unmeasured.filter(pl.col("query_class") == "CM").height
    expected = -(-n_cm_groups // 10) if strategy == "paper" else 1
    assert report.parameters["rounds"]["CM"] == expected < 40
    assert report.rho_spent == report.rho_budget
