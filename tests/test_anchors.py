"""Anchored decoding (:mod:`polars_rap.decode.anchors`): rows decoded beside an unconditioned
reference take the values the reference's steps give at their place, whatever the other rows
of their batch are.

Each decoding step is run on a batch of anchors (random rows) and of *others*: copies of the
anchors of one feature value only, the bias a condition brings. The others' values must follow
the anchors' own output law for the same feature value (KS at 1%); run among the others alone
the steps give a law that does not (checked where it differs, so the tests have power).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from polars_rap.decode.anchors import placed, quantiles_among
from polars_rap.decode.histogram_margins import HistogramMargins
from polars_rap.decode.numeric_coupling import decouple_numerics
from polars_rap.decode.numeric_ties import NumericTies, TieScores, tie_layout
from polars_rap.decode.rank_pairs import RankLatent, RankPairs, label_index, N_RANK_CELLS
from polars_rap.schema.domain import Domain
from polars_rap.schema.transforms import to_unit

LEVEL = 0.01


def _domain() -> Domain:
    schema = {"f": pl.String, "x": pl.Float64, "w": pl.Int64, "y": pl.String}
    declared = {"f": ["a", "b", "c"], "x": (0.0, 1.0), "w": (1, 10), "y": ["n", "p"]}
    return Domain.from_mapping(schema, declared, labels=["y"])


def _batch(n_anchors: int = 20_000, n_others: int = 8_000, seed: int = 0):
    """(codes int32[n, 2], numerics float64[n, 2] mapped, anchor bool[n]): anchors with x rising
    with f and y, w on whole values rising with x; the others copies of random anchors of f = c."""
    domain = _domain()
    rng = np.random.default_rng(seed)
    f, y = rng.integers(0, 3, n_anchors), rng.integers(0, 2, n_anchors)
    x = 1 / (1 + np.exp(-(0.8 * f + 0.6 * y - 1 + rng.normal(size=n_anchors))))
    w = to_unit(np.clip(np.rint(1 + 9 * x + rng.normal(0, 1.5, n_anchors)), 1, 10), domain["w"])
    codes = np.column_stack([f, y]).astype(np.int32)
    numerics = np.column_stack([x, w])
    copies = rng.choice(np.flatnonzero(f == 2), n_others)
    anchor = np.arange(n_anchors + n_others) < n_anchors
    return (np.concatenate([codes, codes[copies]]), np.concatenate([numerics, numerics[copies]]), anchor)


def _same_law(out: np.ndarray, codes: np.ndarray, anchor: np.ndarray, j: int) -> list[float]:
    """KS p-values, per label, of the others' column ``j`` against the anchors' of f = c."""
    return [stats.ks_2samp(out[~anchor & (codes[:, 1] == y), j],
                           out[anchor & (codes[:, 0] == 2) & (codes[:, 1] == y), j]).pvalue for y in (0, 1)]


def test_placed_hands_out_the_anchors_values_by_quantile() -> None:
    rng = np.random.default_rng(0)
    keys = np.sort(rng.normal(size=5_000))
    values = np.sort(rng.random(5_000))
    new = rng.normal(size=20_000)
    got = placed(keys, values, new, rng)
    assert set(got) <= set(values)
    assert stats.ks_2samp(got, values).pvalue > LEVEL  # keys from the anchors' law: the anchors' values
    rank = np.searchsorted(values, got)[np.argsort(new)]
    assert np.all(np.diff(rank) >= -2)  # in the keys' order, up to the neighbouring anchors
    q = quantiles_among(np.array([1.0, 2.0, 2.0, 3.0]), np.array([2.0] * 10_000), rng)
    assert np.all((q >= 1 / 5) & (q < 4 / 5))  # a key equal to anchors falls among them


def test_the_label_coupling_gives_others_the_anchors_pool_of_their_label() -> None:
    domain = _domain()
    codes, numerics, anchor = _batch()
    out = decouple_numerics(codes, numerics, domain, np.random.default_rng(1), anchor=anchor)
    for y in (0, 1):  # the pool: every anchor of the label, not the f = c rows the others copy
        assert stats.ks_2samp(out[~anchor & (codes[:, 1] == y), 0], numerics[anchor & (codes[:, 1] == y), 0]).pvalue > LEVEL
        assert np.array_equal(np.sort(out[anchor & (codes[:, 1] == y), 0]), np.sort(numerics[anchor & (codes[:, 1] == y), 0]))
    alone = decouple_numerics(codes[~anchor], numerics[~anchor], domain, np.random.default_rng(1))
    assert stats.ks_2samp(alone[codes[~anchor, 1] == 1, 0], numerics[anchor & (codes[:, 1] == 1), 0]).pvalue < 1e-6


def test_the_ties_place_others_by_their_score_among_the_anchors() -> None:
    domain = _domain()
    codes, numerics, anchor = _batch()
    pooled = decouple_numerics(codes, numerics, domain, np.random.default_rng(2), anchor=anchor)
    layout = tie_layout(domain)
    ties = NumericTies(layout, np.random.default_rng(3).normal(0, 0.15, size=layout.n_cells))
    scores = TieScores()
    out = ties.apply(codes, pooled, domain, np.random.default_rng(4), scores, anchor)
    assert scores.by_column  # fitted on this (first) batch's anchors
    assert min(_same_law(out, codes, anchor, 0)) > LEVEL and min(_same_law(out, codes, anchor, 1)) > LEVEL
    alone = ties.apply(codes[~anchor], pooled[~anchor], domain, np.random.default_rng(4))
    assert min(_same_law(np.concatenate([out[anchor], alone]), codes, anchor, 0)) < 1e-6


def _margins(domain: Domain) -> HistogramMargins:
    """w's released histogram within y: every whole value 1..10 equally likely (std 1e-3)."""
    edges = np.append(to_unit(np.arange(1, 10) + 0.5, domain["w"]), 1.0)
    prefixes = np.outer(np.arange(1, 11) / 10, [0.5, 0.5])
    return HistogramMargins(1.0, (1,), (domain.block_index("y"),), (edges,), (prefixes,), (np.full(10, 1e-3),))


def test_the_histogram_margins_move_others_by_their_quantile_among_the_anchors() -> None:
    domain = _domain()
    codes, numerics, anchor = _batch()
    margins = _margins(domain)
    out = margins.apply(codes, numerics, domain, np.random.default_rng(5), anchor)
    assert min(_same_law(out, codes, anchor, 1)) > LEVEL
    for y in (0, 1):  # the anchors meet the histogram: each whole value about 10%
        shares = np.bincount(np.rint(1 + 9 * out[anchor & (codes[:, 1] == y), 1]).astype(int), minlength=11)[1:]
        assert np.abs(shares / shares.sum() - 0.1).max() < 0.01
    alone = margins.apply(codes[~anchor], numerics[~anchor], domain, np.random.default_rng(5))
    assert min(_same_law(np.concatenate([out[anchor], alone]), codes, anchor, 1)) < 1e-6


def test_the_rank_pairs_place_others_among_the_anchors() -> None:
    domain = _domain()
    codes, numerics, anchor = _batch()
    rng = np.random.default_rng(6)
    group, n_groups = label_index(codes, domain)
    decoupled = decouple_numerics(codes, numerics, domain, rng, anchor=anchor)
    scores = np.rint(np.tile(np.linspace(-0.5, 0.5, N_RANK_CELLS + 1), (n_groups, 2, 1)) * 32).astype(np.int8)
    pairs = RankPairs(scores, np.array([0.06]), 1e-4)
    out = pairs.apply(codes, decoupled, domain, np.random.default_rng(7), RankLatent(), anchor)
    for y in (0, 1):
        here = codes[:, 1] == y
        rho_anchors = stats.spearmanr(out[anchor & here, 0], out[anchor & here, 1]).statistic
        rho_others = stats.spearmanr(out[~anchor & here, 0], out[~anchor & here, 1]).statistic
        assert rho_anchors > 0.3 and abs(rho_others - rho_anchors) < 0.05
        for j in (0, 1):
            assert stats.ks_2samp(out[~anchor & here, j], out[anchor & here, j]).pvalue > LEVEL


@pytest.mark.parametrize("method", ["independent", "controlled"])
def test_decode_rows_outputs_only_the_conditioned_rows(method) -> None:
    from polars_rap.decode.decoding import decode_rows, spread_rows

    domain = _domain()
    rng = np.random.default_rng(8)
    relaxed = rng.random((30, domain.n_coords)).astype(np.float32)
    rows = rng.integers(0, 30, 1_000)
    reference = spread_rows(30, 2_000, rng)
    frame = decode_rows(relaxed, domain, rows, rng, method, numeric_coupling="label", reference=reference,
                        allowed={domain.block_index("f"): np.array([[0.0, 0.0, 1.0]])})
    assert frame.height == 1_000 and (frame["f"] == "c").all()
    assert frame.schema == decode_rows(relaxed, domain, rows, rng, method).schema
