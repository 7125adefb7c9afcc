"""Feature pairs as candidates of the annealed CM rounds (``PlannedStrategy(cm_anneal_pairs=True)``):
the groups and the plan they join, a selected pair measured as a charged marginal, the prior
leaving a table whose pair was measured, and a precise step unchanged."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.schema.domain import Domain
from polars_rap.fit.feature_pairs import feature_pairs
from polars_rap.fit.independence_prior import unmeasured_marginals
from polars_rap.workload.queries import CLASS_CODES
from polars_rap.fit.strategy import PlannedStrategy

import small_annealed as small  # tests/small_annealed.py


def test_one_pair_per_two_feature_blocks_without_the_label() -> None:
    """a, b, c (2, 3, 4 values) and the label y: the pairs (a, b), (a, c), (b, c), with 6, 8
    and 12 cells; none without a label (the workload's tables are those pairs then)."""
    domain = Domain.from_mapping(small.frame().schema, small.MAPPING, ["y"])
    pairs = feature_pairs(domain)
    assert pairs.n_groups == 3 and pairs.group_sizes.tolist() == [6, 8, 12]
    assert (pairs.group_class == CLASS_CODES["FP"]).all()
    names = [b.source for b in domain.blocks]
    assert [[names[i] for i in pairs.columns_of(g)] for g in range(3)] == [["a", "b"], ["a", "c"], ["b", "c"]]
    unlabelled = Domain.from_mapping(small.frame().schema, small.MAPPING, [])
    assert feature_pairs(unlabelled).n_groups == 0
    assert feature_pairs(domain, max_cells=8).n_groups == 2


def test_the_pairs_join_the_annealed_cm_step_only() -> None:
    """The option appends the pairs to the workload (earlier groups keep their ids) and adds
    "FP" to the annealed CM step's joined classes, the plan's weights and rounds unchanged;
    without annealing there is nothing to join."""
    queries, plan, counts = small.plan()
    joined_queries, joined_plan, joined_counts = small.plan(cm_anneal_pairs=True)
    assert [s.joined for s in joined_plan] == [("FP",) if s.query_class == "CM" else () for s in plan]
    assert [(s.query_class, s.weight, s.k, s.annealed_rounds) for s in joined_plan] == [
        (s.query_class, s.weight, s.k, s.annealed_rounds) for s in plan]
    assert joined_counts == {**counts, "FP": 3}
    others = joined_queries.group_class != CLASS_CODES["FP"]
    assert np.count_nonzero(~others) == 3
    np.testing.assert_array_equal(joined_queries.group_class[others], queries.group_class)
    np.testing.assert_array_equal(joined_queries.group_sizes[others], queries.group_sizes)
    _, outright, outright_counts = small.plan(cm_anneal_pairs=True, cm_anneal=False)
    assert all(s.joined == () for s in outright) and "FP" not in outright_counts


def test_the_option_is_checked_and_described() -> None:
    assert PlannedStrategy().describe()["cm_anneal_pairs"] is False
    assert PlannedStrategy(cm_anneal_pairs=True).describe()["cm_anneal_pairs"] is True
    with pytest.raises(ValueError, match="cm_anneal_pairs must be True or False. Got 1"):
        PlannedStrategy(cm_anneal_pairs=1)


def test_a_table_whose_pair_was_measured_leaves_the_prior() -> None:
    """The prior infers the CM tables not measured; measuring the pair (b, c) removes the table
    b x c x y from them as measuring the table itself does, and nothing else."""
    queries, _, _ = small.plan(cm_anneal_pairs=True)
    cm = np.flatnonzero(queries.group_class == CLASS_CODES["CM"])
    fp = np.flatnonzero(queries.group_class == CLASS_CODES["FP"])
    bc_table = [g for g in cm if set(queries.columns_of(fp[2]).tolist()) < set(queries.columns_of(g).tolist())]
    assert len(bc_table) == 1
    assert unmeasured_marginals(queries, []).tolist() == cm.tolist()
    assert unmeasured_marginals(queries, [fp[2]]).tolist() == [g for g in cm if g != bc_table[0]]
    assert unmeasured_marginals(queries, [bc_table[0]]).tolist() == unmeasured_marginals(queries, [fp[2]]).tolist()


def test_a_selected_pair_is_measured_as_a_charged_marginal(last_candidate_picks) -> None:
    """Every annealed round forced to pick the last candidate (the pair b x c: the pairs follow
    the CM tables), the selection still charged: each pick is one ledger event named for the
    FP group, its 12 cells measured with noise std sqrt(2)/n / sqrt(2 rho) for its charge and
    reported with synthetic answers; the ledger closes to the budget."""
    picked = last_candidate_picks
    frame = small.frame()
    result = polars_rap.synthesize(frame, epsilon=0.5, strategy={"name": "planned", "cm_anneal_pairs": True,
                                                                 "cm_outright_l1": None, "cm_margin_reserve": 0.0},
                                   **small.RUN)
    report = result.report
    n = frame.height
    events = [e for e in report.events if e.description.startswith("FP group")]
    assert picked and len(events) == len(picked) == report.parameters["rounds"]["CM"]
    assert len({e.description for e in events}) == 1
    measured = report.measurements.filter(pl.col("query_class") == "FP")
    for event in events:
        rows = measured.filter(pl.col("round") == event.round)
        assert rows.height == 3 * 4
        sigma = (math.sqrt(2.0) / n) / math.sqrt(2.0 * event.rho)
        np.testing.assert_allclose(rows["noise_std"].to_numpy(), sigma, rtol=1e-12)
        assert rows["synthetic_answer"].is_not_null().all()
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget
    assert report.parameters["strategy"]["cm_anneal_pairs"] is True
    assert report.measurements.filter(pl.col("query_class") == "CM").height == 0  # only the pair was picked


def test_a_precise_enough_cm_step_runs_as_without_the_option() -> None:
    """Where the CM share measures every table outright in one round, no pair competes and the
    run is the one without the option, bit for bit."""
    small.assert_precise_run_unchanged({"cm_anneal_pairs": True})
