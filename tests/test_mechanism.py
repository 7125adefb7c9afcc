"""RAP++ end to end on a small real table: schema, ledger, report, reproducibility, inputs."""

import gc
import hashlib
import json
import math
import os

import numpy as np
import polars as pl
import pytest

import polars_rap
import polars_rap.fit.planning as planning
import polars_rap.pipeline.decoding as decoding_stage
import polars_rap.pipeline.fitting as fitting_stage
import polars_rap.pipeline.inputs as inputs_stage
import polars_rap.pipeline.streams as streams
from polars_rap import PaperStrategy, PlannedStrategy, WorkloadSize
from polars_rap.fit.projection import ProjectionConfig
from polars_rap.privacy.samplers import SecureRandom

from plans import OUTRIGHT  # tests/plans.py

FAST = dict(relaxed_rows=100, rounds={"CM": 3, "LT": 3, "MM": 2},
            workload=WorkloadSize(n_linear_thresholds=300, n_mixed_marginals=50),
            projection=ProjectionConfig(max_steps=5, max_doublings=2))  # the strategy's loop settings
# 5 Adam steps a stage (was 30; the suite must fit in 10 minutes): no test here reads the
# fit's quality, only what goes in and out of synthesize (schema, domain, ledger, rounds,
# references, reproducibility); same plans, rounds, stages and code paths, each default-plan
# run about 8x quicker (the no-reference run: 24 s -> 3 s).


@pytest.fixture(scope="module")
def small(task):
    return task.frame.sample(2000, seed=1)


@pytest.fixture(scope="module")
def result(small, task):
    return small.dp.synthesize(epsilon=1.0, delta=1e-7, domain=task.domain, labels=task.labels,
                               seed=0, strategy=OUTRIGHT.but(**FAST), progress=False)  # rounds of K groups (the outright plan)


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
    assert report.rho_budget == polars_rap.privacy.ledger.rho_from_epsilon_delta(1.0, 1e-7)
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
    # NR: 3 CM selection rounds may miss JWMNP's null indicator and FER/ESP, so their null
    # rates are measured outright (polars_rap.fit.null_rates)
    assert set(report.measurements["query_class"]) == {"CM", "LT", "MM", "NR"}


def test_report_noise_scales_follow_the_charges(result):
    """Each measured group's noise std is its L2 sensitivity over sqrt(2 rho_g)."""
    report = result.report
    n = report.n_rows
    gaussian = [e for e in report.events if e.mechanism == "gaussian"]
    stds = report.measurements.group_by("group", maintain_order=True).agg(
        pl.col("noise_std").first(), pl.col("query_class").first(), pl.len())
    for event, row in zip(gaussian, stds.iter_rows(named=True), strict=True):
        l2 = (math.sqrt(2) if row["query_class"] in ("CM", "MM", "NR") else 1.0) / n
        assert row["noise_std"] == pytest.approx(l2 / math.sqrt(2 * event.rho), rel=1e-12)
    m = report.measurements
    assert (m["ci_low"] < m["noisy_answer"]).all() and (m["noisy_answer"] < m["ci_high"]).all()


def test_same_seed_gives_identical_output(small, task, result):
    again = polars_rap.synthesize(small, epsilon=1.0, delta=1e-7, domain=task.domain,
                                  labels=task.labels, seed=0, strategy=OUTRIGHT.but(**FAST), progress=False)
    assert again.data.equals(result.data)
    assert again.report.measurements.equals(result.report.measurements)


def test_lazyframe_path_and_rows_are_accepted(small, task, tmp_path):
    path = tmp_path / "small.parquet"
    small.write_parquet(path)
    for source in (small.lazy(), str(path)):
        out = polars_rap.synthesize(source, epsilon=0.5, delta=1e-7, domain=task.domain,
                                    labels=task.labels, rows=123, seed=1, strategy=PlannedStrategy(**FAST),
                                    progress=False)
        assert out.data.height == 123 and out.data.schema == small.schema


def test_result_keeps_no_reference_to_the_input(task):
    frame = task.frame.sample(1000, seed=3)  # the default plan needs 628 rows at eps = 1 here
    result = frame.dp.synthesize(epsilon=1.0, delta=1e-6, domain=task.domain, labels=task.labels,
                                 seed=0, strategy=PlannedStrategy(**FAST), progress=False)
    gc.collect()
    referrers = gc.get_referrers(frame)
    assert not any(r is result or r is result.report or r is result.data for r in referrers)
    assert all(getattr(result, name) is not frame for name in ("data", "report", "domain", "relaxed"))


@pytest.mark.parametrize("kwargs, message", [
    (dict(epsilon=0.0), "'epsilon' parameter must be a finite float > 0"),
    (dict(epsilon=float("inf")), "'epsilon' parameter must be a finite float > 0"),
    (dict(delta=1.0), "'delta' parameter must be a float in \\(0, 1\\)"),
    (dict(rows=0), "'rows' parameter must be an int in \\[1, inf\\)"),
    (dict(strategy={"name": "planned", "relaxed_rows": 0}), "'relaxed_rows'"),
    (dict(strategy={"name": "planned", "selection_share": 1.0}), "selection_share must be a number in \\(0, 1\\)"),
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
    loop = dict(relaxed_rows=50, rounds={"CM": 40, "LT": 1}, workload={"n_linear_thresholds": 50},
                projection=ProjectionConfig(max_steps=3))
    result = task.frame.sample(3000, seed=0).dp.synthesize(
        epsilon=1.0, delta=1e-9, domain=task.domain, labels=task.labels, seed=0, progress=False,
        strategy=OUTRIGHT.but(**loop) if strategy == "planned" else PaperStrategy(**loop),
    )
    report = result.report
    n_cm_groups = report.measurements.filter(pl.col("query_class") == "CM")["group"].n_unique()
    n_cm_groups += report.unmeasured.filter(pl.col("query_class") == "CM").height
    expected = -(-n_cm_groups // 10) if strategy == "paper" else 1
    assert report.parameters["rounds"]["CM"] == expected < 40
    assert report.rho_spent == report.rho_budget


# ---------------------------------------------------------------- randomness: where each stream comes from
TINY_DOMAIN = {"a": ["x", "y"], "b": ["p", "q", "r"], "c": ["u", "v", "w", "z"], "d": ["m", "f"],
               "t": (0.0, 10.0), "s": "numeric", "y": ["0", "1"]}
STREAM_CONSUMERS = {"build_workload": (planning, 1), "infer_declarations": (inputs_stage, 5),
                    "run_plan": (fitting_stage, 9), "decode": (decoding_stage, 3)}
"""The functions of a run that receive a generator: the module that calls each, and the
generator's position among its arguments."""
STATES_BEFORE_EXACT_SAMPLERS = "dc5c73356b3337bd850573e0047f44e07aa197c5b49d8e5dde47a70a843a5013"
ANSWERS_WITH_EXACT_SAMPLERS = "a8a9551be6592e9280c1c436fcf3e561db466f19b89b0699b3486bdb8f857f3d"


def _tiny_frame(seed: int, n: int = 4000) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        "a": rng.choice(["x", "y"], n), "b": rng.choice(["p", "q", "r"], n),
        "c": rng.choice(["u", "v", "w", "z"], n), "d": rng.choice(["m", "f"], n),
        "t": rng.uniform(0.0, 10.0, n), "s": rng.normal(50.0, 5.0, n),
        "y": rng.choice(["0", "1"], n)})


def _state(rng) -> str:
    """A generator's state as JSON text; a SecureRandom holds no state to show."""
    if isinstance(rng, np.random.Generator):
        return json.dumps(rng.bit_generator.state, sort_keys=True)
    return repr(rng)


def _run_capturing_streams(monkeypatch, seed):
    """A tiny run (CM measured outright, ``s`` inferred); returns it and, per consumer, the
    generator it received with its state at that moment (JSON text)."""
    seen = {}
    for name, (module, position) in STREAM_CONSUMERS.items():
        def wrapper(*args, _original=getattr(module, name), _name=name, _position=position, **kwargs):
            rng = args[_position]
            seen[_name] = (rng, _state(rng))
            return _original(*args, **kwargs)
        monkeypatch.setattr(module, name, wrapper)
    result = polars_rap.synthesize(
        _tiny_frame(0), epsilon=1.0, delta=1e-9, domain=TINY_DOMAIN, labels=["y"], seed=seed, backend="cpu",
        infer_domain=["s"], progress=False,
        strategy=OUTRIGHT.but(queries_per_round=4, rounds={"CM": 4, "LT": 0}, relaxed_rows=50,
                              projection=ProjectionConfig(max_steps=5)),  # the plan the hashes were taken on
    )
    assert set(seen) == set(STREAM_CONSUMERS)
    return result, seen


def test_fixed_seed_keeps_every_stream_and_pins_the_noisy_answers(monkeypatch):
    """seed=3 gives every consumer the generator state it had before the exact samplers (the
    hash of the states was taken on the code before them), and pins the noisy answers bit for
    bit (hash taken with the exact samplers, which read the noise generator's bits in their
    own way: the answers changed once, with them, and are reproducible since)."""
    result, seen = _run_capturing_streams(monkeypatch, seed=3)
    states = hashlib.sha256()
    for name in sorted(seen):
        states.update(seen[name][1].encode())
    assert states.hexdigest() == STATES_BEFORE_EXACT_SAMPLERS
    answers = hashlib.sha256()
    m = result.report.measurements
    for column in ("group", "noisy_answer", "noise_std"):
        answers.update(m[column].to_numpy().tobytes())
    assert answers.hexdigest() == ANSWERS_WITH_EXACT_SAMPLERS


def test_release_noise_reads_the_os_cryptographic_source(monkeypatch):
    """With seed=None the selection, measurement and inference noise come from two
    SecureRandom sources (os.urandom, read in batches of 512 bytes and more), not from numpy
    generators: nothing of them is a child of the seed sequence behind the workload and
    decoding streams, whose outputs are released, nor of any seed. With a seed, they get
    seeded generators (children of the run's seed: the research path) and no SecureRandom is
    made."""
    reads = []
    real_urandom = os.urandom

    def urandom(count):
        reads.append(count)
        return real_urandom(count)

    monkeypatch.setattr(os, "urandom", urandom)
    _, seen = _run_capturing_streams(monkeypatch, seed=None)
    noise = [seen[name][0] for name in ("run_plan", "infer_declarations")]
    assert all(isinstance(stream, SecureRandom) and stream.secure for stream in noise)
    assert noise[0] is not noise[1]
    assert 512 in reads  # a first batch of 64 words for the noise
    for name in ("build_workload", "decode"):
        assert isinstance(seen[name][0], np.random.Generator)

    made = []
    monkeypatch.setattr(streams, "SecureRandom", lambda: made.append(1))
    _, seen = _run_capturing_streams(monkeypatch, seed=3)
    assert made == []
    assert seen["run_plan"][0].bit_generator.seed_seq.spawn_key == (2,)
    assert seen["run_plan"][0].bit_generator.seed_seq.entropy == seen["decode"][0].bit_generator.seed_seq.entropy == 3
