"""Wide tables: the annealed CM rounds and the independence prior look at one slice of the
tables at a time past ``TABLES_PER_COLUMN`` per column (polars_rap.fit.table_turns)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.fit import independence_prior, table_turns
from polars_rap.fit.loop_record import LoopRecord
from polars_rap.fit.table_turns import table_stride, table_turn
from polars_rap.workload.queries import CLASS_CODES

from test_annealing import TINY_LOOP, _run_stub, _tiny_frame, categorical_setup  # noqa: F401  (a fixture)


@pytest.mark.parametrize(("n_tables", "n_columns"), [(1, 1), (153, 19), (231, 23), (1000, 7), (25_000, 225)])
def test_the_slices_of_a_stride_cover_every_table_once_and_stay_under_the_cap(n_tables, n_columns) -> None:
    groups = np.arange(100, 100 + n_tables, dtype=np.int64)
    stride = table_stride(n_tables, n_columns)
    slices = [table_turn(groups, stride, turn) for turn in range(stride)]
    assert np.array_equal(np.sort(np.concatenate(slices)), groups)
    assert max(map(len, slices)) <= table_turns.TABLES_PER_COLUMN * n_columns
    assert (stride == 1) == (n_tables <= table_turns.TABLES_PER_COLUMN * n_columns)
    assert np.array_equal(table_turn(groups, stride, stride + 1), slices[1 % stride])  # turns wrap


def test_an_annealed_round_scores_one_slice_with_the_same_charges(monkeypatch, categorical_setup) -> None:
    """With the cap at 1 table per column (5 columns, 6 tables: stride 2), each round's Gumbel
    scores are those of its slice alone, the slices alternate, the charges are those of the
    unsliced step to the last float, and the record keeps one selection per slice, their
    candidates the two slices."""
    whole = _run_stub(monkeypatch, categorical_setup, [True, True, True, True], total_units=40)
    monkeypatch.undo()
    monkeypatch.setattr(table_turns, "TABLES_PER_COLUMN", 1)
    sliced = _run_stub(monkeypatch, categorical_setup, [True, True, True, True], total_units=40)
    queries = categorical_setup[0]
    candidates = np.flatnonzero(queries.group_class == CLASS_CODES["CM"])
    assert len(candidates) == 6 and len(queries.column_sizes) == 5
    halves = [candidates[0::2], candidates[1::2]]
    assert [len(scores) for scores, *_ in sliced["selections"]] == [3, 3, 3, 3]
    assert [len(scores) for scores, *_ in whole["selections"]] == [6, 6, 6, 6]
    assert [(e.mechanism, e.rho, e.round) for e in sliced["ledger"].events] == \
        [(e.mechanism, e.rho, e.round) for e in whole["ledger"].events]
    measured = np.asarray(sliced["record"].groups)
    assert all(np.isin(g, halves[t % 2]) for t, g in enumerate(measured))
    records = sliced["record"].selections
    assert sorted(records) == ["CM slice 0", "CM slice 1"]
    assert [records[f"CM slice {t}"].candidates.tolist() for t in (0, 1)] == [h.tolist() for h in halves]
    assert [records[f"CM slice {t}"].round for t in (0, 1)] == [5, 6]  # the last round of each slice
    assert list(whole["record"].selections) == ["CM"]


def test_the_prior_fits_one_slice_per_projection_in_turn(monkeypatch, categorical_setup) -> None:
    """Past the cap the pseudo-targets are those of a slice of the unmeasured tables, the slice
    set by the measurements so far; each target is the one the whole prior gives that table."""
    from polars_rap import kernels
    from polars_rap.fit.projection import RelaxedParams

    queries = categorical_setup[0]
    domain_sizes = queries.column_sizes
    params = RelaxedParams.random(30, [int(k) for k in domain_sizes], int(queries.n_numeric), np.random.default_rng(0))
    record = LoopRecord(params)
    base = np.flatnonzero(queries.group_class == CLASS_CODES["BM"])  # a categorical measurement, no table
    record.add(int(base[0]), 0, np.full(int(queries.group_sizes[base[0]]), 0.1), 0.01)
    backend = kernels.resolve_backend("cpu")
    whole, whole_targets, _ = independence_prior.independence_pseudo_targets(record, queries, backend)
    assert len(whole) == 6 and len(domain_sizes) == 5
    monkeypatch.setattr(table_turns, "TABLES_PER_COLUMN", 1)  # cap 5 < 6 unmeasured: stride 2
    sliced, sliced_targets, _ = independence_prior.independence_pseudo_targets(record, queries, backend)
    turn = len(record.groups) % 2
    assert sliced.tolist() == whole[turn::2].tolist()
    starts = np.concatenate([[0], np.cumsum(queries.group_sizes[whole])])
    expected = np.concatenate([whole_targets[starts[i]:starts[i + 1]] for i in range(turn, len(whole), 2)])
    np.testing.assert_allclose(sliced_targets, expected, rtol=1e-12)


def test_a_sliced_run_reports_a_bound_for_every_table_it_never_measured(monkeypatch) -> None:
    """End to end with the cap at 1 per column: the report's unmeasured bounds hold each CM
    table never measured exactly once (from the last round its slice competed in)."""
    monkeypatch.setattr(table_turns, "TABLES_PER_COLUMN", 1)
    frame = _tiny_frame(3, 2000)
    domain = {"a": ["x", "y"], "b": ["p", "q", "r"], "c": ["u", "v", "w", "z"], "d": ["m", "f"],
              "t": (0.0, 10.0), "y": ["0", "1"]}
    result = polars_rap.synthesize(frame, epsilon=0.3, delta=1e-7, domain=domain, labels=["y"], seed=2,
                                   progress=False, strategy=polars_rap.PlannedStrategy(**TINY_LOOP))
    unmeasured = result.report.unmeasured.filter(pl.col("query_class") == "CM")
    measured = set(result.report.measurements.filter(pl.col("query_class") == "CM")["group"].to_list())
    assert unmeasured.height > 0 and unmeasured["group"].is_unique().all()
    cm_groups = set(range(6))  # the CM groups come first in the workload: C(4, 2) tables x label
    assert set(unmeasured["group"].to_list()) == cm_groups - measured


def test_a_wide_annealed_step_picks_more_tables_a_round_with_each_table_s_share_kept() -> None:
    """T0 is capped, K grows with the categorical columns past COLUMNS_PER_PICK and T0 shrinks
    by K, so that one table's share of the step, 1 / (T0 K), stays that of K = 1 over the capped
    T0; steps under both caps and fixed steps come back as they were."""
    from polars_rap.fit.plan_steps import Step
    from polars_rap.fit.planning import with_round_cap

    cap = table_turns.MAX_ANNEALED_ROUNDS
    wide = with_round_cap(Step("CM", 2.0, 1, 2850), 75)
    assert (wide.k, wide.annealed_rounds) == (4, cap // 4)
    assert with_round_cap(Step("CM", 2.0, 1, 2850), 20) == Step("CM", 2.0, 1, cap)
    assert with_round_cap(Step("CM", 2.0, 1, 153), 19) == Step("CM", 2.0, 1, 153)  # acs-income-CA
    assert with_round_cap(Step("CM", 2.0, 1, 136), 18) == Step("CM", 2.0, 1, 136)  # NIST national
    fixed = Step("LT", 1.0, 10)
    assert with_round_cap(fixed, 300) is fixed


def test_a_step_precise_enough_to_measure_every_table_at_once_anneals_past_the_cap(
        monkeypatch, categorical_setup) -> None:
    """Under the cap, an annealed step whose noise is small enough measures every table in one
    round; past it (1 table per column: 6 tables over 5 columns, stride 2) the same step
    anneals over the slices: it selects, one slice a round, and takes more than one round."""
    import functools

    import test_annealing
    from polars_rap.fit import annealing
    from polars_rap.fit.plan_steps import Step

    monkeypatch.setattr(annealing, "outright_noise_l1", lambda *a: 0.0)
    monkeypatch.setattr(test_annealing, "Step", functools.partial(Step, outright_l1=1.0))  # the stub's step
    queries = categorical_setup[0]
    cm = np.flatnonzero(queries.group_class == CLASS_CODES["CM"])
    at_once = _run_stub(monkeypatch, categorical_setup, [True], total_units=40)
    assert at_once["rounds"] == 1 and sorted(at_once["record"].groups) == cm.tolist() and not at_once["selections"]
    monkeypatch.setattr(table_turns, "TABLES_PER_COLUMN", 1)
    wide = _run_stub(monkeypatch, categorical_setup, [True, True, True, True], total_units=40)
    assert wide["rounds"] > 1 and [len(scores) for scores, *_ in wide["selections"]] == [3] * len(wide["selections"])
    assert sorted(wide["record"].selections) == ["CM slice 0", "CM slice 1"]
