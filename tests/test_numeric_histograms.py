"""Numeric histograms (issue 14/20): each numeric column's one-way distribution x label, one
Gaussian release of its cells, the projection fitting their cumulative sums. The edges come
from the public spec, the cells partition the rows (so a release's L2 sensitivity is
sqrt(2)/n), every release is charged, and the report's prefixes are the cumulative sums of
what was released, to the bit."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.schema.domain import Domain
from polars_rap.kernels import get_backend
from polars_rap.fit.numeric_histograms import histogram_edges, histogram_groups, histogram_runs
from polars_rap.privacy.ledger import split_budget
from polars_rap.workload.queries import QueryClass
from polars_rap.privacy.report import interval_halfwidth, simultaneous_halfwidth, subgaussian_halfwidth
from polars_rap.io.source import DataSource, exact_answers
from polars_rap.fit.strategy import PlannedStrategy, resolve_strategy
from polars_rap.schema.transforms import to_unit

from histogram_runs import recorded_histogram_run  # tests/histogram_runs.py
from plans import OUTRIGHT  # tests/plans.py

DECLARED = {
    "age": {"bounds": (17, 99), "integer": True, "nullable": True},
    "income": (0.0, 250_000.0),
    "gain": {"bounds": (0, 99_999), "integer": True, "scale": "log", "atoms": [0]},
    "y": ["<=50K", ">50K"],
}


def _frame(n: int, seed: int) -> pl.DataFrame:
    """Heaped ages (a third on 30 or 40) with nulls, values on the bounds, beyond them and on
    histogram edges; incomes with a third exactly on an edge; gains mostly 0."""
    rng = np.random.default_rng(seed)
    age = rng.integers(10, 110, n).astype(float)  # some beyond the bounds: clipped
    age[rng.random(n) < 0.33] = rng.choice([30.0, 40.0, 17.0, 99.0])
    age_list = [None if r < 0.1 else v for v, r in zip(age.tolist(), rng.random(n), strict=True)]
    income = rng.gamma(2.0, 2e4, n)
    income[rng.random(n) < 0.33] = 1250.0 * rng.integers(0, 201, 1)  # an edge: k/200 of the range
    gain = np.where(rng.random(n) < 0.9, 0, rng.integers(1, 99_999, n))
    return pl.DataFrame({
        "age": pl.Series(age_list, dtype=pl.Float64), "income": income, "gain": gain,
        "y": rng.choice(["<=50K", ">50K"], n).tolist(),
    })


@pytest.fixture(scope="module")
def domain() -> Domain:
    return Domain.from_mapping(_frame(10, 0).schema, DECLARED, ["y"])


def test_edges_come_from_the_spec_one_per_whole_value_or_even_on_the_mapped_coordinate(domain) -> None:
    """A small integer column gets an edge halfway between every two whole values (83 cells
    for 17..99); a wide one at most ``max_bins`` cells, even on the mapped coordinate (the
    scale and atom slab included), its edges moved to half-integers, and a cell for each bound's
    whole value; a float column ``max_bins`` even cells. Every grid is strictly increasing and
    ends at 1."""
    age, income, gain = domain.numeric_columns
    edges = histogram_edges(age, 200)
    np.testing.assert_array_equal(edges, np.append(to_unit(np.arange(17, 99) + 0.5, age), 1.0).astype(np.float32))
    assert len(edges) == 83
    np.testing.assert_array_equal(histogram_edges(income, 200), (np.arange(1, 201) / 200).astype(np.float32))
    wide = histogram_edges(gain, 50)
    assert 2 <= len(wide) <= 52 and wide[-1] == 1.0 and np.all(np.diff(wide) > 0)
    whole = to_unit(np.arange(0, 100_000, dtype=np.float64), gain).astype(np.float32)
    assert whole[0] < wide[0] < whole[1]  # the atom 0 is the first cell, alone
    assert whole[-2] < wide[-2] < whole[-1]  # so is the upper bound, 99,999 (a top code)
    assert not np.isin(wide[:-1], whole).any()  # no whole value sits on an edge
    for spec in domain.numeric_columns:
        for bins in (2, 7, 200):
            grid = histogram_edges(spec, bins)
            assert grid.dtype == np.float32 and grid[-1] == 1.0 and np.all(np.diff(grid) > 0)
            assert len(grid) <= max(bins + 2, spec.upper - spec.lower + 1)


def test_groups_are_label_times_prefix_runs(domain) -> None:
    """One group per (column, label block, edge): the label's cells times ``x_j <= t``, edges
    ascending within a run; :func:`histogram_runs` cuts them back into histograms."""
    queries = histogram_groups(domain, 50)
    assert set(queries.group_class.tolist()) == {QueryClass.NUMERIC_HISTOGRAM}
    runs = histogram_runs(queries, np.arange(queries.n_groups))
    assert [len(r) for r in runs] == [len(histogram_edges(s, 50)) for s in domain.numeric_columns]
    for j, run in enumerate(runs):
        first = queries.group_offsets[run]
        assert np.all(queries.group_sizes[run] == 2)  # the label's two values
        taus = queries.tau[queries.halfspace_offsets[first]]
        np.testing.assert_array_equal(taus, histogram_edges(domain.numeric_columns[j], 50))
        assert np.all(queries.theta_index[queries.theta_offsets[queries.halfspace_offsets[first]]] == j)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cells_partition_the_rows_so_one_row_moves_at_most_two_counts(domain, seed) -> None:
    """The sensitivity claim, on rows built to stress it (nulls, values on bounds, beyond
    them and exactly on edges): with the kernels' own comparisons, every row is in exactly one
    cell of each (column, label) histogram, so cells are non-negative counts summing to n; and
    replacing any one row changes each histogram's count vector by exactly 0 or 2 in squared
    L2 norm (one count out of a cell, one into a cell), never more."""
    frame = _frame(3_000, seed)
    queries = histogram_groups(domain, 200)
    backend = get_backend("cpu")

    def cells_of(rows: pl.DataFrame) -> list[np.ndarray]:
        answers, n = exact_answers(DataSource.from_input(rows), domain, queries, backend)
        out = []
        for run in histogram_runs(queries, np.arange(queries.n_groups)):
            prefix = np.rint(answers[queries.group_query_indices(run)] * n).reshape(len(run), -1)
            out.append(np.diff(prefix, axis=0, prepend=0.0))
        return out

    for cells in cells_of(frame):
        assert np.all(cells >= 0) and cells.sum() == frame.height
    base = cells_of(frame.head(200))
    rng = np.random.default_rng(seed)
    for _ in range(20):
        i, j = rng.integers(0, 200), rng.integers(200, 3_000)
        neighbour = pl.concat([frame.slice(0, i), frame.slice(j, 1), frame.slice(i + 1, 200 - i - 1)])
        for before, after in zip(base, cells_of(neighbour), strict=True):
            assert float(np.sum(np.square(after - before))) in (0.0, 2.0)


def _recorded_run(frame: pl.DataFrame, share: float, monkeypatch):
    """A run whose histograms have at most 40 cells and are released flat (the constants
    DEFAULT_MAX_BINS and HISTOGRAM_BRANCHING set so for the test)."""
    from polars_rap.fit import numeric_histograms

    monkeypatch.setattr(numeric_histograms, "DEFAULT_MAX_BINS", 40)
    monkeypatch.setattr(numeric_histograms, "HISTOGRAM_BRANCHING", None)
    return recorded_histogram_run(frame, DECLARED, OUTRIGHT.but(histogram_share=share))


def test_each_histogram_is_one_charged_release_of_its_true_cells_and_prefixes_are_their_sums(monkeypatch) -> None:
    """Audit of a run: one Gaussian call per (numeric column, label block), given the true
    cells (recomputed here from the rows with NumPy, independently of the kernels), L2
    sensitivity sqrt(2)/n, each charging its rho; the calls together take ``share`` of the
    loop's budget to float rounding; the report's NH answers are the cumulative sums of each
    call's noisy cells, bit for bit, with std sqrt(k) sigma and the sub-Gaussian interval;
    the ledger closes at the budget exactly (the last histogram, the plan's last step, closes
    it)."""
    frame = _frame(4_000, 7)
    result, calls = _recorded_run(frame, 0.2, monkeypatch)
    report = result.report
    n = report.n_rows
    assert n == frame.height and len(calls) == 3  # three numeric columns, one label
    domain = result.domain
    labels = frame["y"].to_numpy()
    for call, spec in zip(calls, domain.numeric_columns, strict=True):
        assert call["l2"] == math.sqrt(2.0) / n and call["n_rows"] == n
        assert call["charged"] == [call["rho"]]  # one event, charged before the noise
        edges = histogram_edges(spec, 40).astype(np.float64)
        values = frame[spec.name].to_numpy().astype(np.float64)
        unit = np.where(np.isnan(values), 0.0, to_unit(np.nan_to_num(values), spec)).astype(np.float32)
        cell = np.searchsorted(edges.astype(np.float32), unit, side="left")  # first edge >= x
        expected = np.zeros((len(edges), 2))
        np.add.at(expected, (cell, (labels == ">50K").astype(int)), 1.0)
        np.testing.assert_array_equal(call["values"] * n, expected.ravel())
    # the label is the only categorical column, so the null-rate step (measured first, its
    # own share) comes beside the plan the histograms took their share of
    null_rate = math.fsum(e.rho for e in report.events if e.description.startswith("NR"))
    assert null_rate > 0
    assert math.isclose(math.fsum(c["rho"] for c in calls), 0.2 * (report.rho_budget - null_rate), rel_tol=1e-9)
    assert report.rho_spent == math.fsum(e.rho for e in report.events) == report.rho_budget
    assert report.rho_budget == split_budget(1.0, 1e-6).rho
    nh = report.measurements.filter(pl.col("query_class") == "NH")
    noisy = nh["noisy_answer"].to_numpy()
    expected_prefix = np.concatenate([np.cumsum(c["noisy"].reshape(-1, 2), axis=0).ravel() for c in calls])
    assert noisy.view(np.uint64).tolist() == expected_prefix.view(np.uint64).tolist()
    stds = np.concatenate([c["std"] * np.sqrt(np.repeat(np.arange(1, len(c["noisy"]) // 2 + 1), 2))
                           for c in calls])
    np.testing.assert_array_equal(nh["noise_std"].to_numpy(), stds)
    draws = np.concatenate([np.repeat(np.arange(1, len(c["noisy"]) // 2 + 1), 2) for c in calls])
    single = interval_halfwidth(stds, report.confidence, lattice_step=1.0 / n)  # the first cell: one draw
    np.testing.assert_allclose((nh["ci_high"] - nh["noisy_answer"]).to_numpy(),
                               np.where(draws == 1, single, subgaussian_halfwidth(stds, report.confidence)),
                               rtol=1e-9)
    events = [e for e in report.events if e.description.startswith("NH histogram")]
    assert [e.rho for e in events] == [c["rho"] for c in calls]


def test_a_histogram_prefix_interval_is_chernoffs_bound() -> None:
    """The half-width is std sqrt(2 ln(2M/alpha)): at it Chernoff's bound for a sigma-sub-
    Gaussian sum, 2 exp(-a^2 / (2 std^2)), equals alpha / M; it is wider than the Gaussian's
    z std (the single draw's interval without its one-count widening)."""
    for confidence, m in ((0.95, 1), (0.9, 1), (0.95, 1000)):
        alpha = 1.0 - confidence
        width = subgaussian_halfwidth(2.0, confidence, m)
        assert math.isclose(2.0 * math.exp(-width**2 / (2.0 * 4.0)), alpha / m, rel_tol=1e-12)
        assert width > simultaneous_halfwidth(2.0, confidence, m)
    assert subgaussian_halfwidth(1.0, 0.95) > NormalDist().inv_cdf(0.975) == interval_halfwidth(1.0, 0.95)


def test_sums_of_discrete_gaussians_stay_inside_the_prefix_intervals() -> None:
    """Empirical coverage: prefix sums of k = 1..50 discrete Gaussian draws (sigma = 0.7,
    where a draw is far from Gaussian) fall outside the 95% sub-Gaussian interval less often
    than 5% (binomial bound at 1e-6 false alarms on 20,000 sums per k)."""
    from fractions import Fraction

    from polars_rap.privacy.samplers import discrete_gaussian, seeded_words

    words = seeded_words(np.random.default_rng(0))
    draws = discrete_gaussian(Fraction(49, 100), 20_000 * 50, words).reshape(20_000, 50)
    prefix = np.cumsum(draws, axis=1)
    width = subgaussian_halfwidth(0.7 * np.sqrt(np.arange(1, 51)), 0.95)
    misses = np.mean(np.abs(prefix) > width, axis=0)
    assert np.all(misses <= 0.05 + 5.0 * math.sqrt(0.05 * 0.95 / 20_000))


def test_strategy_validates_and_describes_the_histogram_settings() -> None:
    """``histogram_share`` in [0, 1), in ``describe``; the paper's strategy measures none."""
    strategy = resolve_strategy({"name": "planned", "histogram_share": 0.1})
    assert strategy.describe()["histogram_share"] == 0.1
    assert resolve_strategy("paper").histogram_share == 0.0
    for bad in (-0.1, 1.0, True, "0.1"):
        with pytest.raises(polars_rap.ParameterError, match="histogram_share"):
            PlannedStrategy(histogram_share=bad)


def test_zero_share_leaves_the_plan_unchanged_and_the_default_measures_them_last(domain) -> None:
    """``histogram_share = 0`` adds no NH group and no step; the default (0.2 out of the
    thresholds' share, last, a tenth of the weight: bench/results/ablation_tree_share_seeds.md)
    closes the plan with one outright NH step of 20% of the loop's budget, the other classes
    keeping theirs."""
    from polars_rap.fit.planning import workload_and_plan

    settings = dict(rounds_cm=None, rounds_lt=3, rounds_mm=0, queries_per_round=10, n_mixed_marginals=0,
                    n_linear_thresholds=50, max_marginal_cells=None)
    plain = workload_and_plan(domain, resolve_strategy({"name": "planned", "histogram_share": 0.0}),
                              np.random.default_rng(0), **settings)
    default = workload_and_plan(domain, resolve_strategy("planned"), np.random.default_rng(0), **settings)
    assert "NH" not in plain[2] and all(step.query_class != "NH" for step in plain[1])
    assert default[1][-1].query_class == "NH" and default[1][-1].outright and default[1][-1].loss_scale == 0.1
    for plan in (default[1],):
        others = math.fsum(step.weight for step in plan if step.query_class != "NR")
        nh = next(step for step in plan if step.query_class == "NH")
        assert math.isclose(nh.weight / others, 0.2, rel_tol=1e-12)
        for query_class in ("BM", "CM"):  # paid by the thresholds alone
            assert math.isclose(math.fsum(s.weight for s in plan if s.query_class == query_class),
                                math.fsum(s.weight for s in plain[1] if s.query_class == query_class), rel_tol=1e-12)
    assert default[2]["NH"] == histogram_groups(domain).n_groups


def test_the_last_position_appends_the_step_with_its_loss_scale(domain) -> None:
    """The NH step closes the plan with its share of the loop's budget, carrying
    ``HISTOGRAM_WEIGHT`` as its loss scale; the other steps keep 1."""
    from polars_rap.fit.numeric_histograms import HISTOGRAM_WEIGHT

    from polars_rap.fit.planning import workload_and_plan

    settings = dict(rounds_cm=None, rounds_lt=3, rounds_mm=0, queries_per_round=10, n_mixed_marginals=0,
                    n_linear_thresholds=50, max_marginal_cells=None)
    strategy = resolve_strategy({"name": "planned", "histogram_share": 0.1})
    _, plan, _ = workload_and_plan(domain, strategy, np.random.default_rng(0), **settings)
    assert plan[-1].query_class == "NH" and plan[-1].outright and plan[-1].loss_scale == HISTOGRAM_WEIGHT == 0.1
    assert all(step.loss_scale == 1.0 for step in plan[:-1])
    others = math.fsum(step.weight for step in plan if step.query_class != "NR")  # NH included
    assert math.isclose(plan[-1].weight / others, 0.1, rel_tol=1e-12)


def test_loss_scales_multiply_the_inverse_variance_weights() -> None:
    """A group's loss scale multiplies its answers' 1/std^2 (or 1 without inverse variance)
    before the weights are scaled to mean 1; with every scale 1 and no inverse variance the
    loss is unweighted (None)."""
    from polars_rap.fit.loop_record import LoopRecord

    record = LoopRecord(params=None)
    record.add(0, 0, np.zeros(2), 0.5)
    record.add(1, 1, np.zeros(3), 2.0, draws=3, loss_scale=0.1)
    sizes = np.array([2, 3])
    raw = np.array([4.0, 4.0, 0.025, 0.025, 0.025])
    np.testing.assert_array_equal(record.answer_weights(sizes, True), raw / raw.mean())
    flat = np.array([1.0, 1.0, 0.1, 0.1, 0.1])
    np.testing.assert_array_equal(record.answer_weights(sizes, False), flat / flat.mean())
    plain = LoopRecord(params=None)
    plain.add(0, 0, np.zeros(2), 0.5)
    assert plain.answer_weights(np.array([2]), False) is None


def test_a_top_code_comes_out_on_the_bound_itself() -> None:
    """Half the rows hold a wide integer column's upper bound (the ACS's poverty ratio, 501 for
    "500% or more"): the synthetic rows hold exactly 501 about as often, not values spread over
    the last cell's 499-501, and the lower bound's share of 0 likewise."""
    rng = np.random.default_rng(5)
    n = 4_000
    ratio = np.where(rng.random(n) < 0.5, 501, rng.integers(1, 501, n))
    ratio[rng.random(n) < 0.1] = 0
    frame = pl.DataFrame({"ratio": ratio, "y": rng.choice(["a", "b"], n).tolist()})
    result = polars_rap.synthesize(
        frame, epsilon=4.0, delta=1e-7, domain={"ratio": (0, 501), "y": ["a", "b"]}, labels=["y"],
        strategy=polars_rap.PlannedStrategy(relaxed_rows=300, workload={"n_linear_thresholds": 200}), seed=0,
        progress=False)
    synthetic = result.data["ratio"]
    assert abs((synthetic == 501).mean() - (frame["ratio"] == 501).mean()) < 0.05
    assert abs((synthetic == 0).mean() - (frame["ratio"] == 0).mean()) < 0.03
