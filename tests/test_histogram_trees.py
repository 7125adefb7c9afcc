"""Numeric histograms released on trees (issues 14/20): the nodes of a b-ary tree over a
histogram's cells, one Gaussian release of L2 sensitivity sqrt(2h)/n, the prefixes read back by
least squares. The design is checked against a direct least-squares solve, the sensitivity by
brute force over neighbours, the expected noise against a simulation, and a run's report
against the recorded release to the bit."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.schema.domain import Domain
from polars_rap.kernels import get_backend
from polars_rap.fit.numeric_histograms import MAX_TREE_CELLS, TREE_BRANCHINGS, HistogramTree, histogram_groups, histogram_prefixes, histogram_runs, histogram_tree
from polars_rap.privacy.report import subgaussian_halfwidth
from polars_rap.io.source import DataSource, exact_answers

from histogram_runs import recorded_histogram_run  # tests/histogram_runs.py
from plans import OUTRIGHT  # tests/plans.py

DECLARED = {
    "age": {"bounds": (17, 99), "integer": True, "nullable": True},
    "hours": {"bounds": (1, 99), "integer": True},
    "y": ["no", "yes"],
}


def _frame(n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 100, n).astype(float)
    age[rng.random(n) < 0.3] = 40.0
    hours = np.where(rng.random(n) < 0.4, 40, rng.integers(1, 100, n))
    return pl.DataFrame({
        "age": pl.Series([None if r < 0.1 else v for v, r in zip(age.tolist(), rng.random(n), strict=True)],
                         dtype=pl.Float64),
        "hours": hours, "y": rng.choice(["no", "yes"], n).tolist(),
    })


@pytest.mark.parametrize("n_cells", [2, 7, 16, 50, 83])
@pytest.mark.parametrize("branching", [2, 3, 4, 16])
def test_a_tree_is_nested_partitions_and_its_prefixes_are_the_least_squares_fit(n_cells, branching) -> None:
    """Level l of the tree covers the cells by consecutive runs of ``b**l`` (the last one
    shorter), each level a partition (every cell in exactly one node), the top one node; the
    prefix weights equal the cumulative sums of ``numpy.linalg.lstsq``'s fit to any node
    values, and read true node sums back as the true prefixes."""
    tree = HistogramTree.build(n_cells, branching)
    levels = math.ceil(math.log(n_cells) / math.log(branching) - 1e-12) + 1
    assert tree.levels == levels and tree.branching == branching
    start = 0
    for level in range(levels):
        width = branching**level
        count = -(-n_cells // width)
        block = tree.nodes[start:start + count]
        np.testing.assert_array_equal(block.sum(axis=0), np.ones(n_cells))  # a partition
        for i, row in enumerate(block):
            expected = np.zeros(n_cells)
            expected[i * width:(i + 1) * width] = 1.0
            np.testing.assert_array_equal(row, expected)
        start += count
    assert start == len(tree.nodes) and tree.nodes[-1].sum() == n_cells
    rng = np.random.default_rng(n_cells * branching)
    noisy = rng.normal(size=(len(tree.nodes), 3))
    direct = np.cumsum(np.linalg.lstsq(tree.nodes, noisy, rcond=None)[0], axis=0)
    np.testing.assert_allclose(tree.prefix_weights @ noisy, direct, rtol=1e-9, atol=1e-9)
    cells = rng.integers(0, 50, (n_cells, 2)).astype(np.float64)
    np.testing.assert_allclose(tree.prefix_weights @ (tree.nodes @ cells), np.cumsum(cells, axis=0), atol=1e-9)


def test_the_flat_release_is_its_cells_and_their_cumulative_sums() -> None:
    """``branching`` None: the identity, one level, the k-th prefix k cells with std sqrt(k)
    sigma, k draws (the release before trees, unchanged)."""
    tree = histogram_tree(6, None)
    np.testing.assert_array_equal(tree.nodes, np.eye(6))
    assert tree.levels == 1 and tree.branching is None
    noisy = np.arange(12.0).reshape(6, 2)
    prefixes, norms, draws = histogram_prefixes(tree, noisy)
    np.testing.assert_array_equal(prefixes, np.cumsum(noisy, axis=0))
    np.testing.assert_array_equal(norms, np.sqrt(np.arange(1, 7)))
    np.testing.assert_array_equal(draws, np.arange(1, 7))
    assert tree.mean_prefix_variance() == 3.5


def test_expected_prefix_noise_matches_a_simulation_at_the_same_budget() -> None:
    """At one rho, a tree of h levels has sensitivity sqrt(h) times the flat one, so each node
    has h times a flat cell's noise variance; :meth:`mean_prefix_variance` (in flat cells'
    variance) is what simulated releases give, and at 200 cells the binary tree's is 9, a
    flat release's 100.5."""
    rng = np.random.default_rng(0)
    for n_cells, branching in ((200, 2), (83, 3), (40, 4)):
        tree = HistogramTree.build(n_cells, branching)
        noise = rng.normal(scale=math.sqrt(tree.levels), size=(len(tree.nodes), 20_000))
        simulated = float(np.mean(np.var(tree.prefix_weights @ noise, axis=1)))
        assert abs(simulated / tree.mean_prefix_variance() - 1.0) < 0.02
    assert round(HistogramTree.build(200, 2).mean_prefix_variance(), 2) == 9.03
    assert HistogramTree.build(200, None).mean_prefix_variance() == 100.5


def test_auto_takes_the_design_of_least_expected_prefix_noise() -> None:
    """``"auto"`` compares the flat release with every branching of TREE_BRANCHINGS on the
    cells' count alone; beyond MAX_TREE_CELLS cells, and for one cell, the release is flat. The
    design is cached and read-only."""
    for n_cells in (2, 5, 30, 83, 200):
        chosen = histogram_tree(n_cells, "auto")
        candidates = [HistogramTree.build(n_cells, b).mean_prefix_variance() for b in (None, *TREE_BRANCHINGS)]
        assert chosen.mean_prefix_variance() == min(candidates)
    assert histogram_tree(200, "auto").branching == 2
    assert histogram_tree(MAX_TREE_CELLS + 1, "auto").branching is None
    assert histogram_tree(1, 2).branching is None
    assert histogram_tree(50, 4) is histogram_tree(50, 4)
    with pytest.raises(ValueError, match="read-only"):
        histogram_tree(50, 4).prefix_weights[0, 0] = 1.0


def test_each_level_partitions_the_rows_so_a_neighbour_moves_2h_in_squared_norm() -> None:
    """Brute force over neighbours: with the kernels' own comparisons, the true node sums of
    every (column, label block) tree change by 2 in squared L2 norm (in counts) on each level
    whose node the replaced row changes, so by at most 2h, and by 2h when the label changes:
    the release's sensitivity sqrt(2h)/n is attained, never exceeded."""
    frame = _frame(2_000, 1)
    domain = Domain.from_mapping(frame.schema, DECLARED, ["y"])
    queries = histogram_groups(domain, 200)
    backend = get_backend("cpu")

    def nodes_of(rows: pl.DataFrame) -> list[tuple[np.ndarray, int]]:
        answers, n = exact_answers(DataSource.from_input(rows), domain, queries, backend)
        out = []
        for run in histogram_runs(queries, np.arange(queries.n_groups)):
            prefix = np.rint(answers[queries.group_query_indices(run)] * n).reshape(len(run), -1)
            tree = histogram_tree(len(run), "auto")
            out.append((tree.nodes @ np.diff(prefix, axis=0, prepend=0.0), tree.levels))
        return out

    base = nodes_of(frame.head(150))
    assert all(levels > 1 for _, levels in base)
    rng = np.random.default_rng(1)
    moved = set()
    for _ in range(15):
        i, j = rng.integers(0, 150), rng.integers(150, 2_000)
        neighbour = pl.concat([frame.slice(0, i), frame.slice(j, 1), frame.slice(i + 1, 150 - i - 1)])
        for (before, levels), (after, _) in zip(base, nodes_of(neighbour), strict=True):
            change = float(np.sum(np.square(after - before)))
            assert change % 2.0 == 0.0 and change <= 2.0 * levels  # 2 per level whose node changed
            moved.add(change == 2.0 * levels)
    assert True in moved  # the bound is reached (a row moved to another label value)


def test_a_run_releases_each_tree_once_charged_and_reports_its_least_squares_prefixes() -> None:
    """Audit of a run (histograms released as ``HISTOGRAM_BRANCHING="auto"`` picks): one Gaussian call per (numeric
    column, label block), given the tree's true node sums (recomputed here from the rows with
    NumPy, independently of the kernels), L2 sensitivity sqrt(2h)/n, one event charged before
    the noise; the report's NH answers are the tree's prefix weights times the noisy nodes, bit
    for bit, with std sigma ||w_k|| and the sub-Gaussian interval; the ledger closes at the
    budget exactly."""
    frame = _frame(3_000, 7)
    result, calls = recorded_histogram_run(frame, DECLARED, OUTRIGHT.but(histogram_share=0.2))
    report = result.report
    n = report.n_rows
    assert len(calls) == 2
    labels = (frame["y"] == "yes").cast(pl.Int64).to_numpy()
    expected_prefix, expected_std, expected_draws = [], [], []
    for call, spec in zip(calls, result.domain.numeric_columns, strict=True):
        values = frame[spec.name].to_numpy().astype(np.float64)
        whole = np.where(np.isnan(values), spec.lower, np.clip(values, spec.lower, spec.upper))
        n_cells = int(spec.upper - spec.lower + 1)
        cells = np.zeros((n_cells, 2))
        np.add.at(cells, ((whole - spec.lower).astype(int), labels), 1.0)  # nulls in the first cell
        tree = histogram_tree(n_cells, "auto")
        assert tree.branching == 2
        assert f"tree of branching 2: {len(tree.nodes)} nodes, {tree.levels} levels" in call["description"]
        np.testing.assert_allclose(call["values"] * n, (tree.nodes @ cells).ravel(), rtol=1e-12)  # counts / n
        assert call["l2"] == math.sqrt(2.0 * tree.levels) / n and call["charged"] == [call["rho"]]
        expected_prefix.append((tree.prefix_weights @ call["noisy"].reshape(-1, 2)).ravel())
        expected_std.append(np.repeat(call["std"] * tree.prefix_norms, 2))
        expected_draws.append(np.repeat(tree.prefix_draws, 2))
    nh = report.measurements.filter(pl.col("query_class") == "NH")
    noisy = nh["noisy_answer"].to_numpy()
    assert noisy.view(np.uint64).tolist() == np.concatenate(expected_prefix).view(np.uint64).tolist()
    stds = np.concatenate(expected_std)
    np.testing.assert_array_equal(nh["noise_std"].to_numpy(), stds)
    assert np.all(np.concatenate(expected_draws) > 1)  # every prefix mixes several nodes
    np.testing.assert_allclose((nh["ci_high"] - nh["noisy_answer"]).to_numpy(),
                               subgaussian_halfwidth(stds, report.confidence), rtol=1e-9)
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget


def test_every_run_releases_its_histograms_as_auto_picks_and_bad_branchings_are_refused() -> None:
    """``HISTOGRAM_BRANCHING`` is "auto" (the default since bench/results/ablation_histogram_trees.md);
    :func:`histogram_tree` takes None (flat), "auto" or an int >= 2, anything else is a
    ParameterError."""
    from polars_rap.fit.numeric_histograms import HISTOGRAM_BRANCHING

    assert HISTOGRAM_BRANCHING == "auto"
    for bad in (1, 0, 2.0, True, "binary", "flat"):
        with pytest.raises(polars_rap.ParameterError, match="branching"):
            histogram_tree(30, bad)
