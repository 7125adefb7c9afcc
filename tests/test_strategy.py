"""Strategies and their plans (polars_rap.fit.strategy), and what a planned run charges."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.fit import rounds
from polars_rap.privacy import selection_scores
from polars_rap.privacy.ledger import split_budget
from polars_rap.workload.queries import CLASS_CODES
from polars_rap.fit.loop_settings import LoopSettings, WorkloadSize
from polars_rap.fit.strategy import PaperStrategy, PlannedStrategy, Step, interleave, resolve_strategy

from plans import OUTRIGHT  # tests/plans.py

FAST = dict(relaxed_rows=80, rounds={"LT": 3}, workload={"n_linear_thresholds": 200},
            projection=polars_rap.ProjectionConfig(max_steps=5))
"""The loop settings of a short run (a strategy's: ``OUTRIGHT.but(**FAST)``, ``PaperStrategy(**FAST)``)."""


def test_paper_plan_is_the_interleaved_even_split() -> None:
    plan = PaperStrategy().plan({"CM": 25, "LT": 100}, {"CM": 3, "LT": 5, "MM": 0}, 10)
    assert [s.query_class for s in plan] == interleave({"CM": 3, "LT": 5, "MM": 0})
    assert all(s.weight == 1.0 and s.k == 10 for s in plan)


def test_paper_plan_caps_rounds_at_the_groups_left() -> None:
    """25 CM groups and K = 10: at most 3 rounds, whatever was asked."""
    plan = PaperStrategy().plan({"CM": 25, "LT": 0}, {"CM": 8, "LT": 4}, 10)
    assert [s.query_class for s in plan] == ["CM"] * 3


def test_planned_measures_a_class_outright_when_its_rounds_would_cover_it() -> None:
    """CM: 4 rounds x K=10 >= 25 groups, so one outright step first; LT keeps its 5 rounds,
    and CM gets twice LT's share by default (DEFAULT_CLASS_SHARES; MM has no rounds)."""
    plan = OUTRIGHT.plan({"CM": 25, "LT": 100}, {"CM": 4, "LT": 5, "MM": 0}, 10)
    assert plan[0] == Step("CM", 2.0 / 3.0, None) and plan[0].outright
    assert [s.query_class for s in plan[1:]] == ["LT"] * 5
    assert all(s.k == 10 and s.weight == (1.0 / 3.0) / 5 for s in plan[1:])
    assert math.fsum(s.weight for s in plan) == pytest.approx(1.0, rel=1e-15)


def test_planned_selects_when_rounds_cannot_cover_the_class() -> None:
    plan = OUTRIGHT.plan({"CM": 25, "LT": 100}, {"CM": 2, "LT": 2, "MM": 0}, 10)
    assert sorted(s.query_class for s in plan) == ["CM", "CM", "LT", "LT"]
    assert all(not s.outright for s in plan)


@pytest.mark.parametrize(("shares", "expected"), [
    ("rounds", {"CM": 3 / 8, "LT": 5 / 8}),
    ({"CM": 3.0, "LT": 1.0}, {"CM": 0.75, "LT": 0.25}),
    (None, {"CM": 0.5, "LT": 0.5}),
    ("default", {"CM": 2 / 3, "LT": 1 / 3}),
])
def test_planned_class_shares(shares, expected) -> None:
    strategy = PlannedStrategy() if shares == "default" else PlannedStrategy(class_shares=shares)
    plan = strategy.plan({"CM": 30, "LT": 100}, {"CM": 3, "LT": 5}, 10)
    totals = {c: math.fsum(s.weight for s in plan if s.query_class == c) for c in expected}
    assert totals == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("spec", "message"), [
    ("greedy", "unknown strategy 'greedy'"),
    ({"name": "planned", "class_shares": {"XX": 1}}, "unknown query class 'XX'"),
    ({"name": "planned", "class_shares": {"CM": -1}}, "class_shares\\['CM'\\] must be a finite number > 0"),
    ({"name": "planned", "decoding": "round"}, "decoding must be 'controlled' or 'independent'"),
    ({"name": "planned", "selection_share": 1.0}, "selection_share must be a number in \\(0, 1\\)"),
    ({"name": "paper", "outright": True}, "strategy 'paper' has no settings \\['outright'\\]"),
    (3, "The 'strategy' parameter must be"),
])
def test_bad_strategy_names_the_setting(spec, message) -> None:
    with pytest.raises(ValueError, match=message):
        resolve_strategy(spec)


@pytest.fixture(scope="module")
def planned_run(task):
    rows = task.frame.sample(3_000, seed=4)
    return polars_rap.synthesize(rows, epsilon=1.0, delta=1e-8, domain=task.domain, labels=task.labels,
                                 seed=2, strategy=OUTRIGHT.but(**FAST), progress=False)


def test_planned_run_charges_every_cm_group_once_without_selection(planned_run) -> None:
    """The outright CM step: one Gaussian event per CM group, each two thirds of the budget
    split evenly (CM gets twice LT's share), no CM selection event, and the whole budget spent
    to the last float; LT rounds each pay for one Gumbel selection."""
    report = planned_run.report
    events = report.events
    cm = [e for e in events if e.description.startswith("CM group")]
    cm_groups = report.measurements.filter(pl.col("query_class") == "CM")["group"].n_unique()
    assert len(cm) == cm_groups > 0 and report.unmeasured.filter(pl.col("query_class") == "CM").height == 0
    assert not any(e.description == "CM selection" for e in events)
    rho = split_budget(1.0, 1e-8).rho
    assert len({e.rho for e in cm}) == 1 and cm[0].rho == pytest.approx(2 / 3 * rho / len(cm), rel=1e-14)
    assert sum(1 for e in events if e.description == "LT selection") == 3
    assert report.rho_spent == math.fsum(e.rho for e in events) == report.rho_budget
    assert report.parameters["strategy"]["name"] == "planned"
    assert report.parameters["rounds"] == {"CM": 1, "LT": 3, "MM": 0}


@pytest.mark.parametrize("strategy", ["planned", "paper"])
def test_projection_weighs_answers_by_inverse_variance_only_when_planned(task, monkeypatch, strategy) -> None:
    """The planned loop hands the projection each measured answer's 1 / std^2 (scaled to mean
    1), from the released stds; CM and LT answers carry different noise, so their weights
    differ by the square of the std ratio. The paper loop weighs all answers alike (None)."""
    calls = []
    real_project = rounds.project

    def spy(*args, weights=None, **kwargs):
        calls.append(None if weights is None else np.array(weights, copy=True))
        return real_project(*args, weights=weights, **kwargs)

    monkeypatch.setattr(rounds, "project", spy)
    result = polars_rap.synthesize(task.frame.sample(2_000, seed=6), epsilon=1.0, delta=1e-8,
                                   domain=task.domain, labels=task.labels, seed=3,
                                   strategy=OUTRIGHT.but(**FAST) if strategy == "planned" else PaperStrategy(**FAST),
                                   progress=False)
    measurements = result.report.measurements
    if strategy == "paper":
        assert calls and all(w is None for w in calls)
        return
    precision = 1.0 / measurements["noise_std"].to_numpy() ** 2
    np.testing.assert_allclose(calls[-1], precision / precision.mean(), rtol=1e-12)
    by_class = measurements.group_by("query_class").agg(pl.col("noise_std").median())
    std = dict(zip(by_class["query_class"], by_class["noise_std"], strict=True))
    weights = pl.Series(calls[-1])
    ratio = weights.filter(measurements["query_class"] == "CM").median() / weights.filter(
        measurements["query_class"] == "LT").median()
    assert ratio == pytest.approx((std["LT"] / std["CM"]) ** 2, rel=1e-9) and ratio != 1.0


def test_paper_strategy_is_reachable_and_records_itself(task) -> None:
    rows = task.frame.sample(2_000, seed=5)
    result = polars_rap.synthesize(rows, epsilon=1.0, delta=1e-8, domain=task.domain, labels=task.labels,
                                   seed=1, strategy=PaperStrategy(**{**FAST, "rounds": {"CM": 2, "LT": 3}}),
                                   progress=False)
    events = result.report.events
    assert result.report.parameters["strategy"] == {"name": "paper"}
    assert result.report.parameters["decoding"] == "independent"
    assert sum(1 for e in events if e.description == "CM selection") == 2
    assert result.report.rho_spent == result.report.rho_budget


def test_saved_model_samples_with_the_run_s_decoding(planned_run, tmp_path) -> None:
    """A loaded model decodes as its run did (the report records the decoding)."""
    planned_run.save(tmp_path / "m")
    loaded = polars_rap.load(tmp_path / "m")
    assert loaded.report.parameters["decoding"] == "controlled"
    assert loaded.sample(500, seed=3).equals(planned_run.model.sample(500, seed=3))
    assert np.array_equal(loaded.relaxed, planned_run.relaxed)


def test_the_noise_check_sees_the_thinnest_group(task) -> None:
    """The row-count check takes the least share any group gets: 1/G for an even outright
    step; 1/K for LT rounds."""
    from polars_rap.fit import planning
    from polars_rap.schema.domain import Domain

    domain = Domain.from_mapping(task.frame.schema, task.domain, task.labels)
    queries, plan, counts = planning.workload_and_plan(
        domain, OUTRIGHT, np.random.default_rng(0), rounds_cm=None, rounds_lt=3, rounds_mm=0,
        queries_per_round=10, n_mixed_marginals=0, n_linear_thresholds=200, max_marginal_cells=20_000)
    share = planning.smallest_share(plan, queries)
    sizes = queries.group_sizes[queries.group_class == CLASS_CODES["CM"]].astype(float)
    assert share["CM", True] == pytest.approx(1.0 / len(sizes), rel=1e-12)
    assert share["LT", False] == pytest.approx(0.1, rel=1e-12)


def test_planned_selection_rounds_pay_their_selection_share(planned_run) -> None:
    """Each LT round of the planned default: its Gumbel top-K charges 0.5 of the round's ρ and
    each of its K = 10 measurements 0.5 / 10 of it (the last round's last charge takes the
    remainder, so only the first round is compared exactly); the report records 0.5."""
    events = planned_run.report.events
    first_round = [e for e in events if e.round == events[-1].round - 2]
    selection = [e for e in first_round if e.description == "LT selection"]
    groups = [e for e in first_round if e.description.startswith("LT group")]
    assert len(selection) == 1 and len(groups) == 10
    step_rho = selection[0].rho / 0.5
    assert all(e.rho == pytest.approx(0.5 * step_rho / 10, rel=1e-12) for e in groups)
    assert planned_run.report.parameters["selection_share"] == 0.5


def test_the_selection_share_is_the_strategy_s(task) -> None:
    """The recorded selection share is the planned strategy's setting (set on the strategy object or
    its mapping), else the paper's fixed 0.5 (synthesize takes no selection_share: it moved onto the
    strategy, tests/test_loop_settings.py); the fits are not read: one Adam step a stage (FAST's 5
    took this test 21 s, 3 runs)."""
    rows = task.frame.sample(2_000, seed=5)
    one_step = {**FAST, "projection": polars_rap.ProjectionConfig(max_steps=1)}
    result = polars_rap.synthesize(rows, epsilon=1.0, delta=1e-8, domain=task.domain, labels=task.labels,
                                   seed=1, strategy=PlannedStrategy(selection_share=0.3, **one_step), progress=False)
    assert result.report.parameters["selection_share"] == 0.3
    chosen = polars_rap.synthesize(rows, epsilon=1.0, delta=1e-8, domain=task.domain, labels=task.labels,
                                   seed=1, strategy={"name": "planned", "selection_share": 0.2, **one_step},
                                   progress=False)
    assert chosen.report.parameters["selection_share"] == 0.2
    paper = polars_rap.synthesize(rows, epsilon=1.0, delta=1e-8, domain=task.domain, labels=task.labels,
                                  seed=1, strategy=PaperStrategy(**one_step), progress=False)
    assert paper.report.parameters["selection_share"] == 0.5


@pytest.mark.parametrize(("keywords", "expected"), [
    ({}, 10),  # the planned default (bench/results/ablation_lt_rounds_off.md, lt_rounds_10_pairs.md)
    ({"strategy": "paper"}, 50),  # the paper's, so that rap++paper still reproduces
    ({"strategy": PaperStrategy(rounds={"LT": 3})}, 3),  # an explicit setting wins
    ({"strategy": {"name": "paper", "rounds": {"LT": 3}}}, 3),
    ({"strategy": PlannedStrategy(rounds={"LT": 0})}, 0),
])
def test_threshold_rounds_default_to_the_strategy_s(task, monkeypatch, keywords, expected) -> None:
    """A strategy whose ``rounds`` leaves "LT" out plans its own threshold rounds (its
    ``rounds_lt``); the run is stopped once planned, before any row is read (the plan's LT
    steps are the point)."""
    asked = []
    plan_for_real = polars_rap.pipeline.synthesis.workload_and_plan

    def stop(*args, **kwargs):
        _, plan, _ = plan_for_real(*args, **kwargs)
        asked.append(sum(step.query_class == "LT" for step in plan))
        raise KeyboardInterrupt

    monkeypatch.setattr(polars_rap.pipeline.synthesis, "workload_and_plan", stop)
    with pytest.raises(KeyboardInterrupt):
        polars_rap.synthesize(task.frame.head(500), epsilon=1.0, delta=1e-8, domain=task.domain,
                              labels=task.labels, seed=1, progress=False, **keywords)
    assert asked == [expected]
    assert PlannedStrategy().rounds_lt == 10 and PaperStrategy().rounds_lt == 50


def test_rounds_lt_is_checked() -> None:
    with pytest.raises(ValueError, match="The \"rounds\\['LT'\\]\" parameter must be an int"):
        PlannedStrategy(rounds={"LT": -1})
    with pytest.raises(ValueError, match="The \"rounds\\['LT'\\]\" parameter must be an int"):
        polars_rap.synthesize(pl.DataFrame({"a": ["x"]}), epsilon=1.0, delta=1e-8,
                              strategy={"name": "paper", "rounds": {"LT": -1}})


def test_a_strategy_object_missing_a_setting_is_named() -> None:
    class Partial:
        name, inverse_variance, decoding = "mine", False, "independent"

        def plan(self, group_counts, rounds, k):
            return []

    with pytest.raises(ValueError, match="lacks relaxed_rows, queries_per_round, rounds, workload, projection, rounds_lt, selection_share, base_share, histogram_share, tie_share, rank_share, numeric_coupling, warm_doublings, max_steps, independence_prior, describe"):
        resolve_strategy(Partial())
    assert resolve_strategy(PaperStrategy()) == PaperStrategy()

    class Complete(LoopSettings):  # the loop's settings from LoopSettings, the rest its own
        name, rounds_lt, inverse_variance, decoding, selection_share = "mine", 4, False, "independent", 0.5
        base_share = histogram_share = tie_share = rank_share = 0.0
        numeric_coupling, warm_doublings, max_steps, independence_prior = "fitted", None, None, False

        def plan(self, group_counts, rounds, k):
            return []

        def describe(self):
            return {"name": self.name}

    mine = Complete(relaxed_rows=30, rounds={"LT": 2})
    assert resolve_strategy(mine) is mine and mine.workload == WorkloadSize()
    with pytest.raises(ValueError, match="The 'relaxed_rows' parameter must be an int"):
        Complete(relaxed_rows=0)


def test_expected_noise_l1_is_the_mean_absolute_gaussian_times_cells() -> None:
    """sqrt(2/pi) sigma per answer, sigma = l2 / sqrt(2 rho), times the group's answers; and
    it is what Gaussian noise of that sigma averages to (Monte Carlo, 4e5 draws)."""
    l2, sizes, rho = np.array([math.sqrt(2.0) / 1000, 1.0 / 1000]), np.array([12, 1]), 2.5e-4
    sigma = l2 / math.sqrt(2.0 * rho)
    np.testing.assert_array_equal(selection_scores.expected_noise_l1(l2, sizes, rho),
                                  math.sqrt(2.0 / math.pi) * sigma * sizes)
    draws = np.random.default_rng(0).normal(0.0, sigma[0], size=(400_000 // 12, 12))
    assert np.abs(draws).sum(axis=1).mean() == pytest.approx(selection_scores.expected_noise_l1(l2, sizes, rho)[0], rel=0.01)


def test_base_marginals_go_first_with_their_share_and_cover_every_feature_block(task) -> None:
    """base_share = 0.1 (no margin refresh: tests/test_margin_refresh.py): one outright BM step
    first, one Gaussian event per feature block x label, each exactly 0.1 rho / groups; the rest of the plan shares the other 0.9 as before;
    no null-rate step (every block is measured); the ledger closes to the last float."""
    from polars_rap.fit.base_marginals import feature_blocks
    from polars_rap.schema.domain import Domain

    rows = task.frame.sample(3_000, seed=4)
    result = polars_rap.synthesize(rows, epsilon=1.0, delta=1e-8, domain=task.domain, labels=task.labels,
                                   seed=2, progress=False,
                                   strategy={"name": "planned", "base_share": 0.1, "histogram_share": 0.0,
                                             "rank_share": 0.0, "cm_margin_reserve": 0.0, **FAST,
                                             "rounds": {"CM": 2, "LT": 3},
                                             "queries_per_round": 5})
    report = result.report
    rho = split_budget(1.0, 1e-8).rho
    domain = Domain.from_mapping(rows.schema, task.domain, task.labels)
    base = [e for e in report.events if e.description.startswith("BM group")]
    assert len(base) == len(feature_blocks(domain)) * len(task.labels) > 0
    assert all(e.round == 0 for e in base)
    assert all(e.rho == pytest.approx(0.1 * rho / len(base), rel=1e-12) for e in base)
    assert not any(e.description.startswith("NR") for e in report.events)
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget
    assert report.parameters["strategy"]["base_share"] == 0.1
    assert report.measurements.filter(pl.col("query_class") == "BM").height > 0


def test_base_share_is_checked() -> None:
    with pytest.raises(ValueError, match="base_share must be a number in"):
        PlannedStrategy(base_share=1.0)


def _class_weights(task, **settings) -> tuple[list, dict[str, float]]:
    """The plan of acs-income-CA's domain under ``PlannedStrategy(**settings)`` (4 LT rounds,
    no MM) and each class's share of its weight (BM, CM, LT, NH)."""
    from polars_rap.fit import planning
    from polars_rap.schema.domain import Domain

    domain = Domain.from_mapping(task.frame.schema, task.domain, task.labels)
    _, plan, _ = planning.workload_and_plan(
        domain, PlannedStrategy(**settings), np.random.default_rng(0), rounds_cm=None, rounds_lt=4, rounds_mm=0,
        queries_per_round=10, n_mixed_marginals=0, n_linear_thresholds=200, max_marginal_cells=None)
    total = math.fsum(step.weight for step in plan)
    return plan, {c: math.fsum(s.weight for s in plan if s.query_class == c) / total for c in ("BM", "CM", "LT", "NH")}


def test_base_marginals_are_paid_by_every_class(task) -> None:
    """The BM step takes base_share of the loop's budget out of every step's."""
    _, every = _class_weights(task, base_share=0.1, histogram_share=0.0)
    assert every["BM"] == pytest.approx(0.1, rel=1e-12) and every["LT"] == pytest.approx(0.9 / 3, rel=1e-12)
    # the default's histograms then take 20% of the whole out of the thresholds' share alone
    _, default = _class_weights(task)
    assert default["BM"] == pytest.approx(0.1, rel=1e-12) and default["CM"] == pytest.approx(0.9 * 2 / 3, rel=1e-12)
    assert default["LT"] == pytest.approx(0.9 / 3 - 0.2, rel=1e-12) and default["NH"] == pytest.approx(0.2, rel=1e-12)


def test_a_wide_table_s_base_marginals_take_more_of_the_loop() -> None:
    """Past COLUMNS_PER_PICK feature blocks the base share grows with them, up to
    WIDE_BASE_SHARE (wide_base_share); at most 20 blocks (every suite table) it is the
    strategy's own, and a run on a wide table still closes its ledger to the last float."""
    from polars_rap.fit import planning
    from polars_rap.fit.base_marginals import WIDE_BASE_SHARE, feature_blocks, wide_base_share
    from polars_rap.schema.domain import Domain

    assert wide_base_share(0.1, 20) == 0.1 and wide_base_share(0.1, 30) == pytest.approx(0.15, rel=1e-15)
    assert wide_base_share(0.1, 1_000) == WIDE_BASE_SHARE and wide_base_share(0.4, 1_000) == 0.4
    rng = np.random.default_rng(3)
    for features, expected in ((19, 0.1), (40, 0.2), (90, WIDE_BASE_SHARE)):
        frame = pl.DataFrame({f"c{i}": rng.choice(["a", "b", "c"], 2_000) for i in range(features)}
                             | {"y": rng.choice(["0", "1"], 2_000)})
        spec = {f"c{i}": ["a", "b", "c"] for i in range(features)} | {"y": ["0", "1"]}
        domain = Domain.from_mapping(frame.schema, spec, ["y"])
        assert len(feature_blocks(domain)) == features
        _, plan, _ = planning.workload_and_plan(
            domain, PlannedStrategy(), np.random.default_rng(0), rounds_cm=None, rounds_lt=0, rounds_mm=0,
            queries_per_round=10, n_mixed_marginals=0, n_linear_thresholds=0, max_marginal_cells=None)
        total = math.fsum(step.weight for step in plan)
        assert math.fsum(s.weight for s in plan if s.query_class == "BM") / total == pytest.approx(expected, rel=1e-12)
    result = polars_rap.synthesize(frame, epsilon=2.0, delta=1e-6, domain=spec, labels=["y"], seed=0, progress=False,
                                   strategy={"name": "planned", **FAST})
    base = [e for e in result.report.events if e.description.startswith("BM group") and e.round == 0]
    assert len(base) == 90  # the refresh measures some again, in a later round
    assert math.fsum(e.rho for e in base) == pytest.approx(WIDE_BASE_SHARE * result.report.rho_budget, rel=1e-12)
    assert result.report.rho_spent == math.fsum(e.rho for e in result.report.events) == result.report.rho_budget


def test_numeric_histograms_are_paid_by_the_thresholds_alone(task) -> None:
    """HISTOGRAM_FROM = "LT": the NH step (last, weighed HISTOGRAM_WEIGHT = 0.1) takes
    histogram_share of the loop's budget out of the LT steps alone, the base marginals and CM
    steps keep their weights."""
    plan_lt, from_lt = _class_weights(task, histogram_share=0.1)
    last = plan_lt[-1]
    assert last.query_class == "NH" and last.outright and last.loss_scale == 0.1
    assert from_lt["NH"] == pytest.approx(0.1, rel=1e-12) and from_lt["BM"] == pytest.approx(0.1, rel=1e-12)
    assert from_lt["CM"] == pytest.approx(0.9 * 2 / 3, rel=1e-12)
    assert from_lt["LT"] == pytest.approx(0.9 / 3 - 0.1, rel=1e-12)
