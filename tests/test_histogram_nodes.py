"""A histogram's release fitted as its tree's nodes (``histogram_fit="nodes"``, issue 20): the
node queries count what the release's nodes count, on the real rows and on relaxed rows, and a
run records the very noisy nodes the Gaussian call returned (same release, same charge) as its
measurements, each one draw of the release's sigma. A nullable column (``age`` here) keeps the
prefix fit: the kernels refuse two halfspaces over one nullable column in a query."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.schema.domain import Domain
from polars_rap.fit.histogram_nodes import histogram_node_groups, node_groups_of
from polars_rap.kernels import get_backend
from polars_rap.fit.numeric_histograms import histogram_groups, histogram_runs, histogram_tree
from polars_rap.workload.queries import CLASS_CODES, QuerySet
from polars_rap.privacy.report import interval_halfwidth
from polars_rap.io.source import DataSource, exact_answers
from polars_rap.fit.strategy import PlannedStrategy, resolve_strategy

from histogram_runs import recorded_histogram_run  # tests/histogram_runs.py
from plans import OUTRIGHT  # tests/plans.py

DECLARED = {
    "age": {"bounds": (17, 99), "integer": True, "nullable": True},
    "hours": {"bounds": (1, 99), "integer": True},
    "load": (0.0, 10.0),  # continuous: 200 even cells
    "y": ["no", "yes"],
}


def _frame(n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 100, n).astype(float)
    age[rng.random(n) < 0.3] = 40.0
    return pl.DataFrame({
        "age": pl.Series([None if r < 0.1 else v for v, r in zip(age.tolist(), rng.random(n), strict=True)],
                         dtype=pl.Float64),
        "hours": np.where(rng.random(n) < 0.4, 40, rng.integers(1, 100, n)),
        "load": rng.gamma(2.0, 1.5, n).clip(0.0, 10.0),
        "y": rng.choice(["no", "yes"], n).tolist(),
    })


@pytest.mark.parametrize("branching", ["auto", None, 3])
def test_node_queries_count_the_tree_nodes_of_the_prefix_cells(branching) -> None:
    """On the real rows (the kernels' exact answers), every node group answers the sum of its
    cells, the cells read as differences of the prefix groups' answers: the fit's queries are
    the release's nodes, per label value, in tree order."""
    frame = _frame(1_500, 2)
    domain = Domain.from_mapping(frame.schema, DECLARED, ["y"])
    prefixes, nodes = histogram_groups(domain, 200), histogram_node_groups(domain, 200, branching)
    backend = get_backend("cpu")
    both = QuerySet.concatenate([prefixes, nodes])
    answers, n = exact_answers(DataSource.from_input(frame), domain, both, backend)
    node_answers = answers[both.group_query_indices(np.arange(prefixes.n_groups, both.n_groups))]
    expected = []
    runs = histogram_runs(prefixes, np.arange(prefixes.n_groups))
    assert len(runs) == 3  # one per column (one label block), age first
    for run in runs[1:]:  # age is nullable: no node groups
        prefix = np.rint(answers[prefixes.group_query_indices(run)] * n).reshape(len(run), -1)
        tree = histogram_tree(len(run), branching)
        expected.append((tree.nodes @ np.diff(prefix, axis=0, prepend=0.0)).ravel())
    np.testing.assert_array_equal(np.rint(node_answers * n), np.concatenate(expected))


def test_relaxed_node_answers_are_differences_of_relaxed_prefixes_at_hard_thresholds() -> None:
    """On relaxed rows (numerics off the edges, hard thresholds), a node ``a..b`` answers
    prefix ``b`` minus prefix ``a - 1``: what the projection fits is the node's count."""
    frame = _frame(10, 0)
    domain = Domain.from_mapping(frame.schema, DECLARED, ["y"])
    prefixes, nodes = histogram_groups(domain, 200), histogram_node_groups(domain, 200, "auto")
    backend = get_backend("cpu")
    rng = np.random.default_rng(4)
    n_coords = domain.n_categorical_coords + len(domain.numeric_columns)
    relaxed = rng.random((300, n_coords)).astype(np.float32)
    prefix_answers = backend.answers_relaxed(relaxed, prefixes, np.inf).astype(np.float64)
    node_answers = backend.answers_relaxed(relaxed, nodes, np.inf).astype(np.float64)
    expected = []
    for run in histogram_runs(prefixes, np.arange(prefixes.n_groups))[1:]:  # age is nullable
        prefix = prefix_answers[prefixes.group_query_indices(run)].reshape(len(run), -1)
        expected.append((histogram_tree(len(run), "auto").nodes @ np.diff(prefix, axis=0, prepend=0.0)).ravel())
    np.testing.assert_allclose(node_answers, np.concatenate(expected), atol=1e-5)


def test_a_run_fitting_nodes_records_the_release_it_drew_one_draw_each() -> None:
    """Audit: with ``histogram_fit="nodes"`` the Gaussian calls are those of the prefix fit with
    the same seed (values, sensitivity sqrt(2h)/n, one event charged, noisy output: bit for
    bit), and the report's measurements of the non-nullable columns' histograms are the noisy
    nodes themselves (class ``"HN"``) with the call's sigma and a one-draw interval, the nullable
    column's its prefixes (``"NH"``); the ledger closes at the budget."""
    frame = _frame(3_000, 7)
    strategy = {**OUTRIGHT, "histogram_share": 0.2, "histogram_branching": "auto"}
    result, calls = recorded_histogram_run(frame, DECLARED, {**strategy, "histogram_fit": "nodes"})
    _, prefix_calls = recorded_histogram_run(frame, DECLARED, strategy)
    report = result.report
    n = report.n_rows
    assert len(calls) == 3 == len(prefix_calls)
    for call, twin in zip(calls, prefix_calls, strict=True):
        assert call["description"] == twin["description"] and call["l2"] == twin["l2"]
        assert call["charged"] == [call["rho"]] and call["rho"] == twin["rho"]
        np.testing.assert_array_equal(call["values"], twin["values"])
        assert call["noisy"].view(np.uint64).tolist() == twin["noisy"].view(np.uint64).tolist()
        levels = int(call["description"].split(" levels")[0].rsplit(" ", 1)[1])
        assert call["l2"] == math.sqrt(2.0 * levels) / n
    measured = report.measurements
    age_tree = histogram_tree(99 - 17 + 1, "auto")
    nh = measured.filter(pl.col("query_class") == "NH")
    np.testing.assert_array_equal(nh["noisy_answer"].to_numpy(),
                                  (age_tree.prefix_weights @ calls[0]["noisy"].reshape(-1, 2)).ravel())
    hn = measured.filter(pl.col("query_class") == "HN")
    assert hn["noisy_answer"].to_numpy().view(np.uint64).tolist() == np.concatenate(
        [c["noisy"] for c in calls[1:]]).view(np.uint64).tolist()
    stds = np.concatenate([np.full(len(c["noisy"]), c["std"]) for c in calls[1:]])
    np.testing.assert_array_equal(hn["noise_std"].to_numpy(), stds)
    np.testing.assert_allclose((hn["ci_high"] - hn["noisy_answer"]).to_numpy(),
                               interval_halfwidth(stds, report.confidence, lattice_step=1.0 / n), rtol=1e-9)
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget
    assert report.parameters["strategy"]["histogram_fit"] == "nodes"


def test_the_node_groups_join_the_workload_only_when_asked() -> None:
    """The prefix fit (the default) adds no node group; ``"nodes"`` adds one per node and label
    block, never a step of their own (they are fitted, not measured); a bad value is a
    ParameterError naming the setting."""
    from polars_rap.fit.planning import workload_and_plan

    domain = Domain.from_mapping(_frame(10, 0).schema, DECLARED, ["y"])
    settings = dict(rounds_cm=None, rounds_lt=3, rounds_mm=0, queries_per_round=10, n_mixed_marginals=0,
                    n_linear_thresholds=50, max_marginal_cells=None)
    assert PlannedStrategy().histogram_fit == "prefixes"
    queries, _, _ = workload_and_plan(domain, resolve_strategy("planned"), np.random.default_rng(0), **settings)
    assert len(node_groups_of(queries)) == 0
    strategy = resolve_strategy({"name": "planned", "histogram_fit": "nodes"})
    queries, plan, counts = workload_and_plan(domain, strategy, np.random.default_rng(0), **settings)
    runs = histogram_runs(queries, np.flatnonzero(queries.group_class == CLASS_CODES["NH"]))
    n_nodes = sum(len(histogram_tree(len(run), "auto").nodes) for run in runs[1:])  # not age's
    assert len(node_groups_of(queries)) == n_nodes and "HN" not in counts
    assert all(step.query_class != "HN" for step in plan)
    assert strategy.describe()["histogram_fit"] == "nodes"
    for bad in ("cells", None, 1):
        with pytest.raises(polars_rap.ParameterError, match="histogram_fit"):
            PlannedStrategy(histogram_fit=bad)
