"""Numeric pairs' ranks (:mod:`polars_rap.decode.rank_pairs`): the grid and counts, the cell scores,
the statistic's sensitivity, the gate, the decoding's reorder and its save format."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest

from polars_rap.decode.rank_pairs import (FAMILY_ALPHA, MAX_RANK_PAIRS, N_RANK_CELLS, PAIR_Z, RANK_FLOOR_STD, RANK_GRID,
                                          RANK_QUANTUM, RANK_TARGET_STD, RANK_TIE_SHARE, RankLatent, RankPairCounts,
                                          RankPairs, as_decoded, cell_codes, label_index, pair_sums, pair_z,
                                          rank_pair_std, rank_pairs_rho, rank_pairs_rho_beside_ties, rank_scores,
                                          shrunk)
from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import EncodedData


def _domain(labels: bool = True) -> Domain:
    schema = {"a": pl.Float64, "b": pl.Float64, "c": pl.Int64, "y": pl.String}
    declared = {"a": (0.0, 1.0), "b": {"bounds": (0.0, 1.0), "nullable": True}, "c": (0, 20), "y": ["n", "p"]}
    return Domain.from_mapping(schema, declared, labels=["y"] if labels else [])


def _rows(domain: Domain, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random encoded rows with a / c moving together and b against a: codes int32[n, n_blocks],
    numerics float64[n, 3] mapped (a null 0)."""
    codes = np.column_stack([rng.integers(0, block.n_codes, n) for block in domain.blocks]).astype(np.int32)
    z = rng.normal(size=(n, 3))
    a = z[:, 0]
    numerics = np.column_stack([
        1 / (1 + np.exp(-a)), 1 / (1 + np.exp(-(-0.7 * a + 0.7 * z[:, 1]))) * 0.05,  # b crowded near its lower bound
        np.rint(20 / (1 + np.exp(-(0.8 * a + 0.6 * z[:, 2])))) / 20])
    numerics[codes[:, domain.block_index("b", indicator=True)] == 1, 1] = 0.0
    return codes, numerics


def test_the_grid_refines_toward_both_bounds_and_a_null_is_its_own_cell() -> None:
    assert RANK_GRID[0] == 0.0 and RANK_GRID[-1] == 1.0 and np.all(np.diff(RANK_GRID) > 0)
    assert N_RANK_CELLS == len(RANK_GRID) - 1 == 56
    crowded = np.array([0.001, 0.002, 0.004, 0.008, 0.016])  # 0.1% to 1.6% of the range: five cells
    assert len(np.unique(np.searchsorted(RANK_GRID, crowded, side="right"))) == 5
    domain = _domain()
    codes, numerics = _rows(domain, 500, np.random.default_rng(0))
    cells = cell_codes(codes, numerics, domain)
    null = codes[:, domain.block_index("b", indicator=True)] == 1
    assert np.all(cells[null, 1] == N_RANK_CELLS) and np.all(cells[~null] < N_RANK_CELLS)
    assert cell_codes(codes, np.ones_like(numerics), domain)[~null].max() == N_RANK_CELLS - 1


def test_label_groups_are_the_mixed_radix_codes_of_every_label_block() -> None:
    domain = _domain()
    codes, _ = _rows(domain, 50, np.random.default_rng(1))
    group, n_groups = label_index(codes, domain)
    assert n_groups == 2 and np.array_equal(group, codes[:, domain.block_index("y")])
    group, n_groups = label_index(codes[:, :-1], _domain(labels=False))
    assert n_groups == 1 and not group.any()


def test_the_pass_counts_batch_by_batch_as_all_rows_at_once_and_sums_match_a_row_loop() -> None:
    """RankPairCounts over batches of 37 (fresh + merge) equals one pass; pair_sums over the
    counts equals the per-row sum of m_j m_k with each row's own cells and group."""
    domain = _domain()
    codes, numerics = _rows(domain, 400, np.random.default_rng(2))
    whole = RankPairCounts(domain)
    whole.add(EncodedData(codes, numerics))
    parts = RankPairCounts(domain)
    for start in range(0, 400, 37):
        part = parts.fresh()
        part.add(EncodedData(codes[start:start + 37], numerics[start:start + 37]))
        parts.merge(part)
    assert np.array_equal(whole.counts, parts.counts) and whole.counts.sum() == 400 * 3
    scores = np.random.default_rng(3).integers(-RANK_QUANTUM, RANK_QUANTUM + 1, size=(2, 3, N_RANK_CELLS + 1))
    cells = cell_codes(codes, numerics, domain)
    group, _ = label_index(codes, domain)
    m = scores[group[:, None], np.arange(3)[None, :], cells]
    expected = [int(m[:, j] @ m[:, k]) for j, k in itertools.combinations(range(3), 2)]
    assert pair_sums(whole.counts, scores).tolist() == expected


def test_replacing_one_row_moves_the_sums_by_at_most_the_stated_sensitivity() -> None:
    """For any scores in [-Q, Q] and any replacement of one row (its group and every cell may
    change), each pair's integer sum moves by at most 2 Q^2 and the vector's squared L2 norm by
    at most 4 Q^4 P; the extreme scores attain it. rank_pair_std is sqrt(P) / (2n) / sqrt(2 rho)."""
    domain = _domain()
    rng = np.random.default_rng(4)
    codes, numerics = _rows(domain, 60, rng)
    worst = 0
    for trial in range(200):
        scores = rng.integers(-RANK_QUANTUM, RANK_QUANTUM + 1, size=(2, 3, N_RANK_CELLS + 1))
        if trial % 2:
            scores = np.where(rng.random(scores.shape) < 0.5, -RANK_QUANTUM, RANK_QUANTUM)
        other_codes, other_numerics = _rows(domain, 1, rng)
        neighbour_codes, neighbour_numerics = codes.copy(), numerics.copy()
        neighbour_codes[trial % 60], neighbour_numerics[trial % 60] = other_codes[0], other_numerics[0]
        sums = []
        for c, x in ((codes, numerics), (neighbour_codes, neighbour_numerics)):
            counts = RankPairCounts(domain)
            counts.add(EncodedData(c, x))
            sums.append(pair_sums(counts.counts, scores))
        moved = sums[1] - sums[0]
        assert np.abs(moved).max() <= 2 * RANK_QUANTUM**2
        worst = max(worst, int(moved @ moved))
    assert worst <= 4 * RANK_QUANTUM**4 * 3
    assert rank_pair_std(3, 1000, 0.5) == math.sqrt(4 * RANK_QUANTUM**4 * 3) / (4 * RANK_QUANTUM**2 * 1000) / 1.0


def test_cell_scores_are_the_relaxed_rows_mid_cdf_within_each_label() -> None:
    """Relaxed rows all of label n hold a at 0.1, 0.3, 0.6, 0.9 (one each): a's four cells score
    the mid-CDF less one half (-3/8, -1/8, 1/8, 3/8) in 1/(2Q) steps; label p, with no mass,
    scores 0; the null cell scores 0."""
    domain = _domain()
    relaxed = np.zeros((4, domain.n_coords), dtype=np.float32)
    label = domain.block_index("y")
    start = sum(domain.block_sizes[:label])
    relaxed[:, start] = 1.0  # label n
    indicator = domain.block_index("b", indicator=True)
    relaxed[:, sum(domain.block_sizes[:indicator])] = 1.0  # b present
    relaxed[:, domain.n_categorical_coords] = [0.1, 0.3, 0.6, 0.9]
    scores = rank_scores(relaxed, domain)
    cells = np.searchsorted(RANK_GRID, [0.1, 0.3, 0.6, 0.9], side="right") - 1
    assert scores[0, 0, cells].tolist() == [round(v * 2 * RANK_QUANTUM) for v in (-3 / 8, -1 / 8, 1 / 8, 3 / 8)]
    assert not scores[1].any() and not scores[:, :, N_RANK_CELLS].any()
    assert np.abs(scores).max() <= RANK_QUANTUM


def test_an_integer_column_s_cells_are_those_of_its_rounded_values() -> None:
    """c is an integer column on [0, 20]: a relaxed 0.02 (0.4 children) is decoded as 0, so its
    cell is that of 0, not the one of 0.02."""
    domain = _domain()
    x = np.array([[0.5, 0.5, 0.02], [0.5, 0.5, 0.51]])
    out = as_decoded(x, domain)
    assert out[0, 2] == 0.0 and out[1, 2] == 0.5 and np.array_equal(out[:, :2], x[:, :2])


def test_the_pairs_take_the_budget_that_reaches_the_target_std_within_the_share() -> None:
    """rank_pairs_rho: 18 P / (n^2 target^2), at which the noise std is the target in Spearman
    units; 0.0 where that exceeds the share, with one numeric column, beyond MAX_RANK_PAIRS
    pairs or without a share. Public values only."""
    one_numeric = Domain.from_mapping({"a": pl.Float64, "y": pl.String}, {"a": (0.0, 1.0), "y": ["n", "p"]},
                                      labels=["y"])
    assert rank_pairs_rho(one_numeric, 10**6, 1.0) == 0.0
    domain = _domain()
    rho = rank_pairs_rho(domain, 100_000, 1e-3)
    assert rho == 18 * 3 / (100_000**2 * RANK_TARGET_STD**2)
    assert 12 * rank_pair_std(3, 100_000, rho) == pytest.approx(RANK_TARGET_STD, rel=1e-12)
    assert rank_pairs_rho(domain, 100_000, 0.0) == 0.0
    assert rank_pairs_rho(domain, 100_000, rho) == rho and rank_pairs_rho(domain, 100_000, rho * 0.999) == 0.0
    wide = Domain.from_mapping({f"x{i}": pl.Float64 for i in range(17)}, {f"x{i}": (0.0, 1.0) for i in range(17)})
    assert 17 * 16 // 2 > MAX_RANK_PAIRS and rank_pairs_rho(wide, 10**9, 10.0) == 0.0


def test_beside_the_ties_the_pairs_take_a_quarter_of_their_share_down_to_the_floor_std() -> None:
    """rank_pairs_rho_beside_ties: RANK_TIE_SHARE of the ties' budget, or the budget of the
    floor std 18 P / (n^2 floor^2) if less; 0.0 where the quarter leaves the std above
    RANK_TARGET_STD, without the ties' budget, with one numeric column or too many pairs."""
    domain, n = _domain(), 40_000
    floor, target = 18 * 3 / (n**2 * RANK_FLOOR_STD**2), 18 * 3 / (n**2 * RANK_TARGET_STD**2)
    assert rank_pairs_rho_beside_ties(domain, n, 8 * floor) == floor  # a quarter is more than the floor needs
    assert rank_pairs_rho_beside_ties(domain, n, 2 * floor) == RANK_TIE_SHARE * 2 * floor
    assert 12 * rank_pair_std(3, n, rank_pairs_rho_beside_ties(domain, n, 2 * floor)) == pytest.approx(
        RANK_FLOOR_STD * math.sqrt(2), rel=1e-12)
    assert rank_pairs_rho_beside_ties(domain, n, 4 * target) == target  # the quarter reaches the target std exactly
    assert rank_pairs_rho_beside_ties(domain, n, 4 * target * 0.999) == 0.0
    assert rank_pairs_rho_beside_ties(domain, n, 0.0) == 0.0
    one_numeric = Domain.from_mapping({"a": pl.Float64, "y": pl.String}, {"a": (0.0, 1.0), "y": ["n", "p"]},
                                      labels=["y"])
    assert rank_pairs_rho_beside_ties(one_numeric, n, 1.0) == 0.0
    wide = Domain.from_mapping({f"x{i}": pl.Float64 for i in range(17)}, {f"x{i}": (0.0, 1.0) for i in range(17)})
    assert rank_pairs_rho_beside_ties(wide, 10**9, 10.0) == 0.0


def test_beside_the_ties_a_pair_moves_past_a_familywise_bonferroni_z() -> None:
    """pair_z(P, beside_ties=True): the two-sided normal quantile at FAMILY_ALPHA / P, 1.96 for
    one pair, 2.94 for Adult's 15; so that, with no pair off, none moves with probability
    1 - FAMILY_ALPHA or more. Without the ties: PAIR_Z for any P."""
    from scipy.stats import norm

    assert pair_z(1, True) == pytest.approx(1.959963984540054, rel=1e-12)
    assert pair_z(15, True) == pytest.approx(norm.isf(FAMILY_ALPHA / 30), rel=1e-12)
    assert 2.93 < pair_z(15, True) < 2.94 and pair_z(0, True) == pair_z(1, True)
    z = [pair_z(p, True) for p in (1, 3, 15, 120)]
    assert z == sorted(z)
    for p in (1, 3, 15):  # the chance that any of p independent null releases moves: at most alpha
        assert 1 - (1 - 2 * norm.sf(pair_z(p, True))) ** p <= FAMILY_ALPHA + 1e-12
    assert [pair_z(p, False) for p in (1, 15, 120)] == [PAIR_Z] * 3


def test_shrinkage_is_positive_part_james_stein_toward_the_rows_own_statistic() -> None:
    np.testing.assert_allclose(shrunk(np.array([0.0, 0.5, -0.5, 2.0, -3.0]), 1.0), [0, 0, 0, 1.5, -3.0 + 1 / 3])
    toward = np.array([0.2, 0.2, 0.2, 0.2, 0.2])
    np.testing.assert_allclose(shrunk(np.array([0.0, 0.5, -0.5, 2.2, -2.8]), 1.0, toward),
                               [0.2, 0.2, 0.2, 1.7, -2.8 + 1 / 3])
    np.testing.assert_allclose(shrunk(np.array([1.9, 2.3, -2.3]), 1.0, 0.2, z=2.0), [0.2, 2.3 - 1 / 2.1, -2.3 + 1 / 2.5])


def _pairs_for(domain: Domain, codes, numerics, targets) -> RankPairs:
    """Pairs whose cell scores are the rows' own mid-CDF within each label (as the relaxed rows'
    would be), with ``targets``."""
    group, n_groups = label_index(codes, domain)
    cells = cell_codes(codes, as_decoded(numerics, domain), domain)
    scores = np.zeros((n_groups, numerics.shape[1], N_RANK_CELLS + 1), dtype=np.int8)
    for g, j in itertools.product(range(n_groups), range(numerics.shape[1])):
        mass = np.bincount(cells[(group == g) & (cells[:, j] < N_RANK_CELLS), j], minlength=N_RANK_CELLS + 1)[:-1]
        mid = (np.cumsum(mass) - mass / 2) / max(mass.sum(), 1) - 0.5
        scores[g, j, :N_RANK_CELLS] = np.rint(mid * 2 * RANK_QUANTUM)
    return RankPairs(scores, np.asarray(targets, dtype=np.float64), 0.001)


def test_the_reorder_keeps_every_label_s_values_and_meets_the_targets() -> None:
    """Rows whose columns are independent within each label, targets those of the dependent
    rows: after apply every column's values within each (label, null state) are the same
    multiset, the null rows are untouched, and the statistic is within 0.01 of the targets
    (12x: about Spearman's rho) where it started 0.4 away (a release std of 0.001: the target is
    the release). A release within its noise of the rows' own statistic leaves them as they are."""
    domain = _domain()
    rng = np.random.default_rng(5)
    codes, numerics = _rows(domain, 6_000, rng)
    probe = _pairs_for(domain, codes, numerics, np.zeros(3))
    targets = probe.statistic(codes, numerics, domain)
    independent = numerics.copy()
    for j in range(3):  # shuffled within label and null state: no pairing left
        state = codes[:, domain.block_index("y")] * 2 + (codes[:, domain.block_index("b", indicator=True)] == 1)
        for g in np.unique(state):
            rows = np.flatnonzero(state == g)
            independent[rows, j] = independent[rng.permutation(rows), j]
    pairs = RankPairs(probe.scores, targets, 0.001)
    assert np.abs(12 * (pairs.statistic(codes, independent, domain) - targets)).max() > 0.4
    latent = RankLatent()
    out = pairs.apply(codes, independent, domain, np.random.default_rng(6), latent)
    assert np.abs(12 * (pairs.statistic(codes, out, domain) - targets)).max() < 0.01
    label = codes[:, domain.block_index("y")]
    null_b = codes[:, domain.block_index("b", indicator=True)] == 1
    for j in range(3):  # each column within its label and its own null state
        state = label * 2 + (null_b if j == 1 else 0)
        for g in np.unique(state):
            assert np.array_equal(np.sort(out[state == g, j]), np.sort(independent[state == g, j]))
    assert np.array_equal(out[null_b, 1], independent[null_b, 1])
    assert latent.correlation is not None and latent.correlation.shape == (3, 3)
    again = pairs.apply(codes, independent, domain, np.random.default_rng(6), RankLatent(latent.correlation.copy()))
    assert np.array_equal(again, out)  # a later chunk reuses the first one's correlations
    near = RankPairs(probe.scores, pairs.statistic(codes, independent, domain) + 0.0015, 0.001)  # 1.5 stds
    assert near.apply(codes, independent, domain, np.random.default_rng(7)) is independent


def test_the_frame_round_trips_and_refuses_another_domain() -> None:
    domain = _domain()
    rng = np.random.default_rng(8)
    pairs = RankPairs(rng.integers(-16, 17, size=(2, 3, N_RANK_CELLS + 1)).astype(np.int8),
                      rng.normal(size=3) / 10, 0.0123)
    frame = pairs.to_frame(domain)
    back = RankPairs.from_frame(frame, domain)
    assert np.array_equal(back.scores, pairs.scores) and np.array_equal(back.released, pairs.released)
    assert back.std == pairs.std
    other = Domain.from_mapping({"a": pl.Float64, "c": pl.Int64, "y": pl.String},
                                {"a": (0.0, 1.0), "c": (0, 20), "y": ["n", "p"]}, labels=["y"])
    with pytest.raises(ValueError, match="do not match"):
        RankPairs.from_frame(frame, other)


def test_where_the_ties_are_measured_the_pairs_are_paid_out_of_their_share_and_the_loop_is_unchanged() -> None:
    """The whole CA table at ε = 1 (its ties measured): the pairs' statistic is released last,
    paid out of the ties' share (what :func:`rank_pairs_rho_beside_ties` gives, here a quarter of
    it for CA's one pair), so every loop event and measurement is the one of the run
    with ``rank_share=0`` to the last float, the ties' event less exactly the pairs' budget. With
    the ties off the pairs are measured, last, on what the loop left."""
    import polars_rap
    from polars_rap.io import datasets

    task = datasets.load_task("acs-income-CA")
    fast = dict(relaxed_rows=200, rounds={"LT": 2}, workload={"n_linear_thresholds": 500, "n_mixed_marginals": 50},
                projection={"max_steps": 5})

    def run(**settings):
        return polars_rap.synthesize(task.frame, epsilon=1.0, delta=1e-10, domain=task.domain, labels=task.labels,
                                     seed=1, progress=False, strategy={**fast, **settings})

    without, default = run(rank_share=0.0), run()
    assert without.numeric_ties is not None and default.numeric_ties is not None and default.rank_pairs is not None
    ties, pairs = default.report.events[0], default.report.events[-1]
    assert ties.description == without.report.events[0].description and pairs.description.startswith("numeric pairs")
    whole = without.report.events[0].rho
    expected = rank_pairs_rho_beside_ties(default.domain, task.frame.height, whole)
    assert expected == RANK_TIE_SHARE * whole  # 34,425 rows: the floor std would need more
    assert RANK_FLOOR_STD < 12 * default.rank_pairs.std < RANK_TARGET_STD
    assert ties.rho == whole - expected and pairs.rho == pytest.approx(expected, rel=1e-12)
    assert ties.rho + (whole - ties.rho) == whole and math.fsum([ties.rho, whole - ties.rho]) == whole  # split exactly
    assert [(e.mechanism, e.rho, e.description) for e in default.report.events[1:-1]] == [
        (e.mechanism, e.rho, e.description) for e in without.report.events[1:]]
    released = ["synthetic_answer", "error_bound"]  # the rows differ: these read them
    assert default.report.measurements.drop(released).equals(without.report.measurements.drop(released))
    assert default.report.rho_spent == math.fsum(e.rho for e in default.report.events) == default.report.rho_budget
    no_ties = run(tie_share=0.0)
    assert no_ties.rank_pairs is not None and no_ties.report.events[-1].description.startswith("numeric pairs")
    assert no_ties.report.rho_spent == math.fsum(e.rho for e in no_ties.report.events) == no_ties.report.rho_budget


def test_tie_broken_ranks_are_the_lexsort_s_order_to_the_element() -> None:
    """_tie_broken_ranks: the ranks of np.lexsort((keys, values)) (value, then key, then
    position), with many equal values, and with equal keys too (the stable fallback)."""
    from polars_rap.decode.rank_pairs import _tie_broken_ranks

    rng = np.random.default_rng(3)
    for n in (1, 2, 17, 5_000):
        values = np.where(rng.random(n) < 0.7, 0.0, rng.integers(0, 5, n).astype(np.float64))
        for keys in (rng.random(n), rng.integers(0, 3, n).astype(np.float64)):  # distinct keys; many equal ones
            expected = np.empty(n)
            expected[np.lexsort((keys, values))] = np.arange(n)
            np.testing.assert_array_equal(_tie_broken_ranks(values, keys), expected)
