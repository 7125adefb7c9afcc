"""The annealed CM step's margin refresh (``PlannedStrategy(cm_margin_reserve=r)``): which base
marginals no measured table holds, the reserve's budget to the last float, and the plans and
runs it leaves alone."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.fit import planning
from polars_rap.fit.base_marginals import unheld_margins
from polars_rap.errors import DataError
from polars_rap.workload.queries import CLASS_CODES
from polars_rap.fit.strategy import PlannedStrategy

import small_annealed as small  # tests/small_annealed.py
from plans import TestPlanned  # tests/plans.py


def _columns(queries, group: int) -> set[int]:
    return set(queries.columns_of(group).tolist())


def test_unheld_margins_are_those_no_measured_table_holds() -> None:
    """One table (a, b, y) measured: only c's margin is unheld; every table (or none) measured:
    every margin is returned; other classes' groups hold nothing; no base groups, none."""
    queries, _, _ = small.plan()
    base = np.flatnonzero(queries.group_class == CLASS_CODES["BM"])
    tables = np.flatnonzero(queries.group_class == CLASS_CODES["CM"])
    assert len(base) == 3 and len(tables) == 3
    lt = np.flatnonzero(queries.group_class == CLASS_CODES["LT"])
    for table in tables:
        unheld = unheld_margins(queries, np.array([table, *lt[:5]]))
        assert len(unheld) == 1 and not _columns(queries, int(unheld[0])) <= _columns(queries, int(table))
        assert all(_columns(queries, int(g)) <= _columns(queries, int(table)) for g in base if g != unheld[0])
    np.testing.assert_array_equal(unheld_margins(queries, tables), base)
    np.testing.assert_array_equal(unheld_margins(queries, np.zeros(0, dtype=np.int64)), base)
    np.testing.assert_array_equal(unheld_margins(queries, lt), base)
    no_base, _, _ = small.plan(base_share=0.0)
    assert len(unheld_margins(no_base, np.flatnonzero(no_base.group_class == CLASS_CODES["CM"]))) == 0


def test_the_refresh_measures_the_unheld_margins_with_the_reserve() -> None:
    """Annealed rounds (never measured outright in one round) then one refresh round: it measures exactly the
    base groups no table the rounds measured holds, each with an even part of the reserve
    (the last closing it), with the Gaussian noise of its charge; the refresh takes r of the
    CM step's charges (rounds' selections and measurements) to 1e-12; the ledger closes to
    the budget to the last float."""
    frame = small.frame()
    reserve = 0.25
    strategy = TestPlanned(cm_margin_reserve=reserve, cm_step=(("outright_l1", None),), **small.LOOP)  # always annealed
    result = polars_rap.synthesize(frame, epsilon=0.5, strategy=strategy, **small.RUN)
    report, n = result.report, frame.height
    queries, _, _ = small.plan()
    base_events = [e for e in report.events if e.description.startswith("BM group")]
    first = sorted(int(e.description.split()[-1]) for e in base_events if e.round == 0)
    assert first == np.flatnonzero(queries.group_class == CLASS_CODES["BM"]).tolist()  # the same group ids
    refresh_round = max(e.round for e in base_events)
    refresh = [e for e in base_events if e.round == refresh_round]
    assert refresh_round > 0 and refresh
    cm = [e for e in report.events if e.description == "CM selection" or e.description.startswith("CM group")]
    assert cm and max(e.round for e in cm) < refresh_round
    measured_cm = report.measurements.filter(pl.col("query_class") == "CM")["group"].unique().to_numpy()
    expected = unheld_margins(queries, measured_cm)
    assert 0 < len(expected) < 3  # this run leaves a feature unheld (the fallback: the unit test above)
    assert [int(e.description.split()[-1]) for e in refresh] == expected.tolist()
    refresh_rho = math.fsum(e.rho for e in refresh)
    assert refresh_rho / (refresh_rho + math.fsum(e.rho for e in cm)) == pytest.approx(reserve, rel=1e-12)
    np.testing.assert_allclose([e.rho for e in refresh], refresh_rho / len(refresh), rtol=1e-9)
    measured = report.measurements.filter(pl.col("round") == refresh_round)
    for event in refresh:
        rows = measured.filter(pl.col("group") == int(event.description.split()[-1]))
        sigma = (math.sqrt(2.0) / n) / math.sqrt(2.0 * event.rho)
        np.testing.assert_allclose(rows["noise_std"].to_numpy(), sigma, rtol=1e-12)
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget
    assert report.parameters["strategy"]["cm_margin_reserve"] == reserve


def test_a_step_measured_outright_keeps_no_reserve_and_runs_as_without_it() -> None:
    """Where the CM share measures every table outright in one round, no margin is measured
    again and the run is the one without the option, bit for bit."""
    small.assert_precise_run_unchanged({"cm_margin_reserve": 0.3}, base={"cm_margin_reserve": 0.0})



def test_the_plan_carries_the_reserve_and_the_noise_check_covers_it() -> None:
    """The annealed CM step carries the reserve and nothing else of the plan changes; the
    noise check counts the refresh's thinnest group, so a tiny reserve refuses a run the plan
    without it accepts."""
    queries, plan, _ = small.plan(cm_margin_reserve=0.0)
    _, kept, _ = small.plan(cm_margin_reserve=0.1)
    assert [s.margin_reserve for s in kept] == [0.1 if s.annealed else 0.0 for s in plan]
    assert [(s.query_class, s.weight, s.k, s.annealed_rounds) for s in kept] == [
        (s.query_class, s.weight, s.k, s.annealed_rounds) for s in plan]
    thinnest = planning.smallest_share(plan, queries)
    planning.check_rows_against_noise(800, 0.01, plan, thinnest, 3, 0.5, 1.0)
    _, tiny, _ = small.plan(cm_margin_reserve=1e-9)
    with pytest.raises(DataError, match="too few"):
        planning.check_rows_against_noise(800, 0.01, tiny, thinnest, 3, 0.5, 1.0)


def test_the_reserve_is_checked_and_described() -> None:
    assert PlannedStrategy().describe()["cm_margin_reserve"] == 0.1
    assert PlannedStrategy(cm_margin_reserve=0).describe()["cm_margin_reserve"] == 0
    for bad in (1.0, -0.1, True, "0.1"):
        with pytest.raises(ValueError, match="cm_margin_reserve must be a number in"):
            PlannedStrategy(cm_margin_reserve=bad)
