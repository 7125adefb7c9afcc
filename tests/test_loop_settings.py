"""The loop's settings on the strategy (issue #72, item 3): ``relaxed_rows``,
``queries_per_round``, ``rounds``, ``workload`` and ``projection`` are fields of every strategy
(:class:`~polars_rap.fit.loop_settings.LoopSettings`), checked when it is made; ``synthesize``
no longer takes them and says where each went; a strategy object and its mapping form run alike;
the paper's strategy takes the loop settings and keeps its own fixed."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap import (PaperStrategy, ParameterError, ParameterTypeError, PlannedStrategy, ProjectionConfig,
                        WorkloadSize)
from polars_rap.fit.loop_settings import LoopSettings
from polars_rap.fit.strategy import resolve_strategy

MAPPING = {"a": ["x", "y"], "b": ["p", "q", "r"], "c": ["u", "v"], "t": (0.0, 10.0), "y": ["0", "1"]}


def _frame(n: int = 600, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.choice(["x", "y"], n)
    return pl.DataFrame({"a": a, "b": rng.choice(["p", "q", "r"], n), "c": rng.choice(["u", "v"], n),
                         "t": rng.uniform(0.0, 10.0, n), "y": np.where(a == "x", "1", rng.choice(["0", "1"], n))})


RUN = dict(epsilon=2.0, delta=1e-7, domain=MAPPING, labels=["y"], seed=4, backend="cpu", progress=False)
"""``synthesize``'s own keywords of a short run on :func:`_frame`."""


# ------------------------------------------------------------------ synthesize refuses the moved keywords
@pytest.mark.parametrize(("keyword", "value", "spelling"), [
    ("relaxed_rows", 30, "strategy=polars_rap.PlannedStrategy(relaxed_rows=...)"),
    ("queries_per_round", 3, "strategy=polars_rap.PlannedStrategy(queries_per_round=...)"),
    ("rounds_cm", 2, 'strategy=polars_rap.PlannedStrategy(rounds={"CM": ...})'),
    ("rounds_lt", 2, 'strategy=polars_rap.PlannedStrategy(rounds={"LT": ...})'),
    ("rounds_mm", 1, 'strategy=polars_rap.PlannedStrategy(rounds={"MM": ...})'),
    ("n_linear_thresholds", 30, "strategy=polars_rap.PlannedStrategy(workload=WorkloadSize(n_linear_thresholds=...))"),
    ("n_mixed_marginals", 10, "strategy=polars_rap.PlannedStrategy(workload=WorkloadSize(n_mixed_marginals=...))"),
    ("max_marginal_cells", None, "strategy=polars_rap.PlannedStrategy(workload=WorkloadSize(max_marginal_cells=...))"),
    ("selection_share", 0.2, "strategy=polars_rap.PlannedStrategy(selection_share=...)"),
    ("projection", ProjectionConfig(max_steps=5), "strategy=polars_rap.PlannedStrategy(projection=ProjectionConfig(...))"),
])
def test_a_moved_keyword_is_a_type_error_saying_where_it_went(keyword, value, spelling) -> None:
    """Each tuning keyword synthesize took: a ParameterTypeError (a TypeError, as Python's own
    for an unknown keyword) naming it and its spelling on the strategy, through the function
    and the frame namespace alike (any value, even the old default, is refused)."""
    for call in (lambda: polars_rap.synthesize(_frame(), **RUN, **{keyword: value}),
                 lambda: _frame().dp.synthesize(**RUN, **{keyword: value})):
        with pytest.raises(ParameterTypeError) as raised:
            call()
        message = str(raised.value)
        assert isinstance(raised.value, TypeError)
        assert message.startswith(f"synthesize() no longer takes [{keyword!r}]: tuning settings live on the strategy")
        assert f"{keyword}: {spelling}" in message and '"paper" takes them on PaperStrategy' in message


def test_several_moved_keywords_are_all_named_before_any_row_is_read(tmp_path) -> None:
    """Two moved keywords: both named with their spellings, in one error; it comes before the
    data is opened (a file that does not exist is never looked for)."""
    with pytest.raises(ParameterTypeError) as raised:
        polars_rap.synthesize(tmp_path / "missing.parquet", epsilon=1.0, delta=1e-6, rounds_lt=2, relaxed_rows=30)
    message = str(raised.value)
    assert "no longer takes ['relaxed_rows', 'rounds_lt']" in message
    assert "relaxed_rows: strategy=polars_rap.PlannedStrategy(relaxed_rows=...)" in message
    assert 'rounds_lt: strategy=polars_rap.PlannedStrategy(rounds={"LT": ...})' in message


def test_an_unknown_keyword_is_a_type_error_with_the_closest_one() -> None:
    with pytest.raises(ParameterTypeError, match=r"synthesize\(\) got unexpected keyword arguments \['sed'\]; "
                                                 r"did you mean 'seed'\?"):
        polars_rap.synthesize(_frame(), epsilon=1.0, delta=1e-6, sed=0)
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['strategie'\]; did you mean 'strategy'\?"):
        polars_rap.synthesize(_frame(), epsilon=1.0, delta=1e-6, strategie="paper")
    with pytest.raises(ParameterTypeError) as raised:
        polars_rap.synthesize(_frame(), epsilon=1.0, delta=1e-6, zzz=1)
    assert str(raised.value) == "synthesize() got unexpected keyword arguments ['zzz']"  # nothing close
    with pytest.raises(ParameterTypeError) as raised:  # a misspelt keyword and a moved one: both named
        polars_rap.synthesize(_frame(), epsilon=1.0, delta=1e-6, sed=0, relaxed_rows=30)
    assert str(raised.value).startswith("synthesize() got unexpected keyword arguments ['sed']; did you mean 'seed'?"
                                        "; and synthesize() no longer takes ['relaxed_rows']")


# ------------------------------------------------------------------ the settings' checks
def test_the_loop_settings_default_to_synthesize_s_old_defaults() -> None:
    for strategy in (PlannedStrategy(), PaperStrategy()):
        assert (strategy.relaxed_rows, strategy.queries_per_round, strategy.rounds) == (1000, 10, {})
        assert strategy.workload == WorkloadSize(n_linear_thresholds=20_000, n_mixed_marginals=2_000,
                                                 max_marginal_cells=20_000)
        assert strategy.projection == ProjectionConfig()
        assert isinstance(strategy, LoopSettings)


@pytest.mark.parametrize(("settings", "error", "message"), [
    ({"relaxed_rows": 0}, ParameterError, r"The 'relaxed_rows' parameter must be an int in \[1, inf\)\. Got 0"),
    ({"relaxed_rows": 2**70}, ParameterError, r"The 'relaxed_rows' parameter must be at most 2\*\*62"),
    ({"queries_per_round": 0}, ParameterError,
     r"The 'queries_per_round' parameter must be an int in \[1, inf\)\. Got 0"),
    ({"queries_per_round": "3"}, ParameterTypeError, r"The 'queries_per_round' parameter must be an int"),
    ({"rounds": {"LTT": 2}}, ParameterError,
     r"rounds has unknown query classes \['LTT'\]; choose from \('CM', 'LT', 'MM'\); did you mean 'LT'\?"),
    ({"rounds": {"lt": 2}}, ParameterError, r"unknown query classes \['lt'\]; .*did you mean 'LT'\?"),
    ({"rounds": {"MM": -1}}, ParameterError, r"The \"rounds\['MM'\]\" parameter must be an int in \[0, inf\)\. Got -1"),
    ({"rounds": {"CM": None}}, ParameterTypeError, r"The \"rounds\['CM'\]\" parameter must be an int"),
    ({"rounds": 5}, ParameterTypeError, r"rounds must be a mapping of query class to rounds"),
    ({"rounds": [("LT", 2)]}, ParameterTypeError, r"rounds must be a mapping of query class to rounds"),
    ({"workload": 5}, ParameterTypeError, r"workload must be a polars_rap\.WorkloadSize or a mapping of its fields\. "
                                          r"Got 5"),
    ({"workload": {"n_linear_threshold": 30}}, ParameterError,
     r"workload has unknown settings \['n_linear_threshold'\]; valid ones are \['n_linear_thresholds', "
     r"'n_mixed_marginals', 'max_marginal_cells'\]; did you mean 'n_linear_thresholds'\?"),
    ({"workload": {"n_mixed_marginals": -1}}, ParameterError, r"The 'n_mixed_marginals' parameter must be an int"),
    ({"projection": "fast"}, ParameterTypeError,
     r"projection must be a polars_rap\.ProjectionConfig or a mapping of its fields\. Got 'fast'"),
    ({"projection": WorkloadSize()}, ParameterTypeError, r"projection must be a polars_rap\.ProjectionConfig"),
    ({"projection": {"max_step": 5}}, ParameterError,
     r"projection has unknown settings \['max_step'\]; valid ones are \[.*'max_steps'.*\]; did you mean 'max_steps'\?"),
    ({"projection": {"max_steps": 0}}, ParameterError, r"The 'max_steps' parameter must be an int in \[1, inf\)"),
])
@pytest.mark.parametrize("make", [PlannedStrategy, PaperStrategy, lambda **s: resolve_strategy({"name": "paper", **s})],
                         ids=["planned", "paper", "paper-mapping"])
def test_a_bad_loop_setting_is_refused_by_name_when_the_strategy_is_made(make, settings, error, message) -> None:
    with pytest.raises(error, match=message):
        make(**settings)


def test_a_bad_loop_setting_in_a_strategy_mapping_is_refused_by_synthesize_before_any_row_is_read(tmp_path) -> None:
    with pytest.raises(ParameterError, match=r"The 'relaxed_rows' parameter must be an int in \[1, inf\)"):
        polars_rap.synthesize(tmp_path / "missing.parquet", epsilon=1.0, delta=1e-6,
                              strategy={"name": "planned", "relaxed_rows": 0})


def test_a_replaced_setting_is_checked_again() -> None:
    with pytest.raises(ParameterError, match=r"The 'relaxed_rows' parameter must be an int"):
        dataclasses.replace(PlannedStrategy(), relaxed_rows=0)
    with pytest.raises(ParameterError, match=r"rounds has unknown query classes \['NR'\]"):
        dataclasses.replace(PaperStrategy(), rounds={"NR": 1})


def test_mappings_become_the_settings_dataclasses_and_rounds_a_dict_of_its_own() -> None:
    rounds = {"LT": 2, "CM": 1}
    strategy = PlannedStrategy(rounds=rounds, workload={"n_linear_thresholds": 30, "max_marginal_cells": None},
                               projection={"max_steps": 5, "warm_doublings": 1})
    assert strategy.workload == WorkloadSize(n_linear_thresholds=30, max_marginal_cells=None)
    assert isinstance(strategy.workload, WorkloadSize) and strategy.workload.n_mixed_marginals == 2_000
    assert strategy.projection == ProjectionConfig(max_steps=5, warm_doublings=1)
    assert isinstance(strategy.projection, ProjectionConfig)
    rounds["LT"] = 9  # the caller's mapping is not the strategy's
    assert strategy.rounds == {"LT": 2, "CM": 1} and type(strategy.rounds) is dict
    assert strategy == PlannedStrategy(rounds={"CM": 1, "LT": 2}, workload=WorkloadSize(30, 2_000, None),
                                       projection=ProjectionConfig(max_steps=5, warm_doublings=1))
    mapped = resolve_strategy({"name": "paper", "workload": {"n_mixed_marginals": 7}, "projection": {"max_steps": 3}})
    assert mapped == PaperStrategy(workload=WorkloadSize(n_mixed_marginals=7), projection=ProjectionConfig(max_steps=3))


# ------------------------------------------------------------------ a run reads its loop off the strategy
def test_a_run_records_the_strategy_s_loop_and_the_mapping_form_is_the_same_run() -> None:
    """The settings as a PlannedStrategy and as ``{"name": "planned", ...}`` (nested mappings):
    the report records them (relaxed_rows, n_linear_thresholds, the LT rounds run, the stage
    length) and the two runs release the same rows, relaxed data and measurements."""
    frame = _frame()
    settings = dict(relaxed_rows=40, rounds={"LT": 2}, workload={"n_linear_thresholds": 30},
                    projection={"max_steps": 5})
    as_object = polars_rap.synthesize(frame, strategy=PlannedStrategy(**settings), **RUN)
    as_mapping = polars_rap.synthesize(frame, strategy={"name": "planned", **settings}, **RUN)
    parameters = as_object.report.parameters
    assert parameters["relaxed_rows"] == 40 and as_object.relaxed.shape[0] == 40
    assert parameters["n_linear_thresholds"] == 30
    assert (parameters["n_mixed_marginals"], parameters["max_marginal_cells"]) == (2_000, 20_000)  # the defaults
    assert parameters["rounds"]["LT"] == 2 and parameters["rounds"]["MM"] == 0
    assert parameters["queries_per_round"] == 10 and parameters["max_steps"] == 5
    assert parameters["selection_share"] == 0.5
    assert as_mapping.report.parameters == parameters
    assert as_mapping.data.equals(as_object.data)
    np.testing.assert_array_equal(as_mapping.relaxed, as_object.relaxed)
    assert as_mapping.report.measurements.equals(as_object.report.measurements)
    assert [(e.description, e.rho.hex()) for e in as_mapping.report.events] == [
        (e.description, e.rho.hex()) for e in as_object.report.events]


def test_the_planned_selection_share_is_a_setting_recorded_by_the_run() -> None:
    result = polars_rap.synthesize(_frame(), strategy=PlannedStrategy(
        selection_share=0.2, relaxed_rows=20, rounds={"LT": 2}, workload={"n_linear_thresholds": 20},
        projection={"max_steps": 2}), **RUN)
    assert result.report.parameters["selection_share"] == 0.2
    assert result.report.parameters["strategy"]["selection_share"] == 0.2


# ------------------------------------------------------------------ the paper's strategy
def test_the_paper_strategy_takes_the_loop_settings_and_keeps_its_own_fixed() -> None:
    strategy = PaperStrategy(relaxed_rows=30, queries_per_round=4, rounds={"CM": 2, "LT": 3},
                             workload={"n_linear_thresholds": 40}, projection={"max_steps": 3})
    assert (strategy.relaxed_rows, strategy.queries_per_round, strategy.rounds) == (30, 4, {"CM": 2, "LT": 3})
    assert strategy.workload.n_linear_thresholds == 40 and strategy.projection.max_steps == 3
    fixed = dict(rounds_lt=50, selection_share=0.5, inverse_variance=False, decoding="independent", base_share=0.0,
                 histogram_share=0.0, tie_share=0.0, numeric_coupling="fitted", independence_prior=False)
    assert {name: getattr(strategy, name) for name in fixed} == fixed
    for name, value in (("selection_share", 0.2), ("rounds_lt", 3), ("decoding", "controlled"), ("base_share", 0.1)):
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'"):
            PaperStrategy(**{name: value})
        with pytest.raises(ParameterError, match=rf"strategy 'paper' has no settings \['{name}'\]"):
            resolve_strategy({"name": "paper", name: value})
    with pytest.raises(ValueError, match="field selection_share is declared with init=False"):
        dataclasses.replace(strategy, selection_share=0.2)  # not a field it can be given


def test_a_paper_run_reads_its_loop_off_the_strategy() -> None:
    """The paper's rounds as asked (2 CM selection rounds of K = 2 over the 3 feature pairs, LT's
    asked 2, not its 50), the relaxed rows and the paper's selection share of 0.5 in the report."""
    result = polars_rap.synthesize(_frame(), strategy=PaperStrategy(
        relaxed_rows=20, queries_per_round=2, rounds={"CM": 2, "LT": 2}, workload={"n_linear_thresholds": 20},
        projection={"max_steps": 2}), **RUN)
    parameters = result.report.parameters
    assert parameters["strategy"] == {"name": "paper"} and parameters["selection_share"] == 0.5
    assert parameters["relaxed_rows"] == 20 == result.relaxed.shape[0] and parameters["queries_per_round"] == 2
    assert parameters["rounds"]["CM"] == 2 and parameters["rounds"]["LT"] == 2
    cm = [e for e in result.report.events if e.description.startswith("CM")]
    assert len({e.round for e in cm}) == 2  # the first selects 2 of the 3 pairs, the second measures the one left
    assert sum(e.description == "CM selection" for e in cm) == 1
    assert sum(e.description == "LT selection" for e in result.report.events) == 2
