"""The report's coverage claims on a tiny categorical domain (4 features and a label: 6 CM
groups of 12, 16, 8, 24, 12 and 16 cells): which groups carry unmeasured bounds, and how many
answers the simultaneous intervals are corrected for."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

import polars_rap as pr
from polars_rap.fit.projection import ProjectionConfig
from polars_rap.workload.queries import QueryClass
from polars_rap.pipeline.release import bonferroni_answers, most_answers_by_class
from polars_rap.privacy.report import simultaneous_halfwidth
from polars_rap.fit.strategy import Step
from polars_rap.fit.planned_strategy import PlannedStrategy
from plans import OUTRIGHT, ANNEALED_ONLY, TestPlanned

DOMAIN = {"a": ["x", "y"], "b": ["p", "q", "r"], "c": ["u", "v", "w", "z"], "d": ["m", "f"],
          "y": ["0", "1"]}
CM_SIZES = [12, 16, 8, 24, 12, 16]  # ab, ac, ad, bc, bd, cd, each times the 2 labels


def tiny_frame(seed: int, n: int = 4000, constant: tuple[str, ...] = ()) -> pl.DataFrame:
    """n rows, each column uniform on its categories, or fixed at its first in ``constant``."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        name: [values[0]] * n if name in constant else rng.choice(values, n).tolist()
        for name, values in DOMAIN.items()
    })


def run_paper(frame: pl.DataFrame, rounds_cm: int):
    strategy = pr.PaperStrategy(queries_per_round=4, rounds={"CM": rounds_cm, "LT": 0}, relaxed_rows=50,
                                projection=ProjectionConfig(max_steps=5))
    return pr.synthesize(
        frame, epsilon=1.0, delta=1e-9, domain=DOMAIN, labels=["y"], strategy=strategy, seed=0,
        backend="cpu", progress=False,
    ).report


@pytest.mark.parametrize("rounds_cm", [1, 2])
def test_unmeasured_bounds_cover_exactly_the_groups_never_measured(rounds_cm):
    """Round 0 selects 4 of the 6 groups by Gumbel; with a second round, it measures the 2 left
    without selection, and round 0's record must no longer call them unmeasured."""
    report = run_paper(tiny_frame(0), rounds_cm)
    assert report.parameters["rounds"]["CM"] == rounds_cm
    measured = set(report.measurements["group"].to_list())
    unmeasured = report.unmeasured["group"].to_list()
    assert len(measured) == min(4 * rounds_cm, 6)
    assert measured.isdisjoint(unmeasured) and len(set(unmeasured)) == len(unmeasured)
    assert measured | set(unmeasured) == set(range(len(CM_SIZES)))


def test_bonferroni_count_is_fixed_by_the_plan_not_by_the_data():
    """One round of K = 4 among marginals of unequal sizes: the answers measured depend on which
    groups the (noisy, data-dependent) selection picks, the Bonferroni count may not. It is the
    4 largest groups' answers, 24 + 16 + 16 + 12 = 68, whatever was picked."""
    uniform = run_paper(tiny_frame(0), rounds_cm=1)
    skewed = run_paper(tiny_frame(1, constant=("a", "d")), rounds_cm=1)
    measured = [r.measurements.height for r in (uniform, skewed)]
    assert measured[0] != measured[1]  # the data changed what was measured...
    for report in (uniform, skewed):
        assert report.parameters["bonferroni_answers"] == 68 >= report.measurements.height
    m = [r.measurements for r in (uniform, skewed)]
    std = m[0]["noise_std"][0]
    assert set(m[0]["noise_std"]) == set(m[1]["noise_std"]) == {std}  # same n, rho per group
    for report, frame in zip((uniform, skewed), m, strict=True):  # ...not the simultaneous intervals
        halfwidth = (frame["ci_high_simultaneous"] - frame["noisy_answer"]).to_numpy()
        expected = simultaneous_halfwidth(std, 0.95, 68, lattice_step=1.0 / report.n_rows)  # +1 count
        np.testing.assert_allclose(halfwidth, expected, rtol=1e-12)


def test_bonferroni_count_is_capped_by_the_class_answers():
    """Two rounds of K = 4 could measure 2 x 68 answers, but the class holds only 88."""
    report = run_paper(tiny_frame(0), rounds_cm=2)
    assert report.parameters["bonferroni_answers"] == sum(CM_SIZES) == report.measurements.height


def test_bonferroni_count_adds_up_each_step_of_the_plan():
    """An outright step counts its whole class; each selection step its K largest groups."""
    cm, lt = QueryClass.CATEGORICAL_MARGINAL, QueryClass.LINEAR_THRESHOLD
    queries = SimpleNamespace(group_sizes=np.array([12, 16, 8, 1, 1, 1, 1, 1, 1, 1]),
                              group_class=np.array([cm] * 3 + [lt] * 7))
    plan = [Step("CM", 1.0, None), Step("LT", 0.5, 3), Step("LT", 0.5, 3)]
    assert bonferroni_answers(plan, queries) == 36 + 6
    assert bonferroni_answers(plan[1:], queries) == 6
    assert bonferroni_answers([Step("CM", 1.0, 2)] * 2 + [Step("LT", 1.0, 5)] * 2, queries) == 36 + 7
    assert bonferroni_answers([], queries) == 0


def test_bonferroni_count_adds_the_margin_refresh_to_the_base_marginals():
    """An annealed step with a margin reserve measures base marginals a second time at its end
    (the margin refresh): at most all of them, beyond the base step's outright measurement."""
    bm, cm = QueryClass.BASE_MARGINAL, QueryClass.CATEGORICAL_MARGINAL
    queries = SimpleNamespace(group_sizes=np.array([10, 10, 4]), group_class=np.array([bm, bm, cm]))
    refreshing = [Step("BM", 0.1, None), Step("CM", 0.9, 1, 1, margin_reserve=0.1)]
    assert most_answers_by_class(refreshing, queries)["BM"] == 40
    assert bonferroni_answers(refreshing, queries) == 40 + 4
    assert bonferroni_answers([refreshing[0], Step("CM", 0.9, 1, 1)], queries) == 20 + 4


MIXED_DOMAIN = {**DOMAIN, "n": {"bounds": (0, 100), "nullable": True}}


def _mixed_frame(n: int = 3000) -> pl.DataFrame:
    rng = np.random.default_rng(3)
    numbers = rng.integers(0, 101, n).astype(float)
    return tiny_frame(2, n).with_columns(n=pl.Series(np.where(rng.random(n) < 0.2, np.nan, numbers)).fill_nan(None))


@pytest.mark.parametrize("strategy", [
    "planned", "paper", OUTRIGHT, ANNEALED_ONLY, TestPlanned().but(cm_step={"outright_l1": None}),
    TestPlanned(cm_margin_reserve=0.0).but(cm_step={"outright_l1": None}), PlannedStrategy(base_share=0.0),
    PlannedStrategy(histogram_share=0.0, tie_share=0.0), PlannedStrategy(class_shares="rounds"),
], ids=["planned", "paper", "outright", "annealed-only", "refresh", "no-refresh", "no-base", "no-histograms",
        "shares-by-rounds"])
def test_no_class_measures_more_answers_than_its_bonferroni_count(strategy):
    """Whatever the strategy, every class's measured answers stay within what the plan may
    measure (so the simultaneous intervals' union bound holds); the refresh run re-measures
    base marginals, the count before the margin refresh was added could not cover it."""
    loop = dict(rounds={"MM": 1, "LT": 2}, workload=pr.WorkloadSize(n_linear_thresholds=40, n_mixed_marginals=20),
                relaxed_rows=40, projection=ProjectionConfig(max_steps=5))
    with_loop = {"name": strategy, **loop} if isinstance(strategy, str) else dataclasses.replace(strategy, **loop)
    report = pr.synthesize(
        _mixed_frame(), epsilon=0.5, delta=1e-9, domain=MIXED_DOMAIN, labels=["y"], strategy=with_loop, seed=0,
        backend="cpu", progress=False).report
    measured = dict(report.measurements.group_by("query_class").len().iter_rows())
    most = {name: count for name, count in report.parameters["bonferroni_by_class"].items() if count}
    assert {c: n for c, n in measured.items() if n > most.get(c, 0)} == {}
    assert report.parameters["bonferroni_answers"] == sum(most.values()) >= report.measurements.height
    base = report.measurements.filter(pl.col("query_class") == "BM")
    if strategy == TestPlanned().but(cm_step={"outright_l1": None}):  # the refresh ran: BM groups twice
        assert base["group"].n_unique() < base.height
