"""Base marginals as candidates of the annealed CM rounds (``PlannedStrategy(cm_anneal_margins=True)``):
the plan they join, the Bonferroni count over a step's joined classes, and runs that select and
measure a margin again as a charged marginal."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.workload.queries import CLASS_CODES
from polars_rap.pipeline.release import bonferroni_answers
from polars_rap.fit.strategy import PlannedStrategy, Step

import small_annealed as small  # tests/small_annealed.py


def test_the_margins_join_the_annealed_cm_step_only() -> None:
    """The option adds "BM" to the annealed CM step's joined classes and changes nothing else
    of the plan or the workload; without base marginals or without annealing there is
    nothing to join."""
    queries, plan, counts = small.plan()
    joined_queries, joined_plan, joined_counts = small.plan(cm_anneal_margins=True)
    assert [s.joined for s in joined_plan] == [("BM",) if s.query_class == "CM" else () for s in plan]
    assert [s.query_class for s in plan][:2] == ["BM", "CM"] and plan[1].annealed
    assert [(s.query_class, s.weight, s.k, s.annealed_rounds) for s in joined_plan] == [
        (s.query_class, s.weight, s.k, s.annealed_rounds) for s in plan]
    assert joined_counts == counts and joined_queries.n_groups == queries.n_groups
    assert small.plan(cm_anneal_margins=True, base_share=0.0)[1] == small.plan(base_share=0.0)[1]
    outright = small.plan(cm_anneal_margins=True, cm_anneal=False)[1]
    assert all(s.joined == () for s in outright)


def test_the_option_is_checked_and_described() -> None:
    assert PlannedStrategy().describe()["cm_anneal_margins"] is False
    assert PlannedStrategy(cm_anneal_margins=True).describe()["cm_anneal_margins"] is True
    with pytest.raises(ValueError, match="cm_anneal_margins must be True or False. Got 1"):
        PlannedStrategy(cm_anneal_margins=1)


def test_bonferroni_counts_an_annealed_step_s_joined_groups() -> None:
    """An annealed step may measure a joined class's group in any round, so its T0 rounds count
    the K largest groups among its own class's and the joined ones'."""
    queries, _, _ = small.plan()
    sizes = {name: np.sort(queries.group_sizes[queries.group_class == CLASS_CODES[name]])[::-1]
             for name in ("BM", "CM")}
    assert sizes["CM"][0] > sizes["BM"][0]
    alone = [Step("BM", 1.0, 2, 5)]
    joined = [Step("BM", 1.0, 2, 5, joined=("CM",))]
    lt = int(queries.group_sizes[queries.group_class == CLASS_CODES["LT"]].sum())
    assert bonferroni_answers(alone, queries) == 5 * int(sizes["BM"][:2].sum())
    assert bonferroni_answers(joined, queries) == 5 * int(sizes["CM"][:2].sum())
    assert lt > 0 and bonferroni_answers([*joined, Step("LT", 1.0, None)], queries) == 5 * int(
        sizes["CM"][:2].sum()) + lt


def test_a_selected_margin_is_measured_again_as_a_charged_marginal(last_candidate_picks) -> None:
    """Every annealed round forced to pick the last candidate (a BM group: they follow the CM
    tables), the selection still charged: each pick is one more ledger event named for the BM
    group, with noise std sqrt(2)/n / sqrt(2 rho) for its charge, the group measured twice
    (the base step's and the round's) and both reported with synthetic answers; the ledger
    closes to the budget."""
    picked = last_candidate_picks
    frame = small.frame()
    result = polars_rap.synthesize(frame, epsilon=0.5, strategy={"name": "planned", "cm_anneal_margins": True,
                                                                 "cm_outright_l1": None, "cm_margin_reserve": 0.0},
                                   **small.RUN)
    report = result.report
    n = frame.height
    last_group = int(report.measurements.filter(pl.col("query_class") == "BM")["group"].max())
    events = [e for e in report.events if e.description == f"BM group {last_group}"]
    assert picked and len(events) == 1 + len(picked) == 1 + report.parameters["rounds"]["CM"]
    measured = report.measurements.filter(pl.col("group") == last_group)
    assert measured["round"].n_unique() == len(events)
    for event in events:
        rows = measured.filter(pl.col("round") == event.round)
        assert rows.height == 4 * 2  # the last feature block, c, x the label
        sigma = (math.sqrt(2.0) / n) / math.sqrt(2.0 * event.rho)
        np.testing.assert_allclose(rows["noise_std"].to_numpy(), sigma, rtol=1e-12)
        assert rows["synthetic_answer"].is_not_null().all()
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget
    assert report.parameters["strategy"]["cm_anneal_margins"] is True
    assert report.measurements.filter(pl.col("query_class") == "CM").height == 0  # only margins were picked


def test_a_precise_enough_cm_step_measures_no_margin_again_and_runs_as_without_the_option() -> None:
    """Where the CM share measures every table outright in one round, no margin is measured
    again and the run is the one without the option, bit for bit."""
    small.assert_precise_run_unchanged({"cm_anneal_margins": True})
