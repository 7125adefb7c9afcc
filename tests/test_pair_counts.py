"""The numeric pairs' test with each cell's count read from the released histograms
(the default, once ``tie_pair_counts="histograms"``): the histograms regrouped into the pairs' bins
(:meth:`HistogramMargins.binned`), the evidence against its formula, a pairing that only the
released counts reveal, and synthesize's wiring."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.schema.domain import Domain
from polars_rap.decode.histogram_margins import HistogramMargins
from polars_rap.fit.numeric_histograms import histogram_edges
from polars_rap.decode.numeric_pairs import PAIR_EVIDENCE, fitted_ties, pair_evidence
from polars_rap.decode.numeric_ties import TIE_QUANTUM, TieLayout, tie_layout, tie_sums
from polars_rap.fit.planned_strategy import PlannedStrategy
from polars_rap.schema.transforms import to_unit
from tie_rows import one_hot_relaxed, pair_domain, pair_rows, paired_frame_and_domain  # tests/tie_rows.py


def _histograms(domain: Domain, codes: np.ndarray, numerics: np.ndarray, k: int, std: float = 0.0) -> HistogramMargins:
    """Numeric ``k``'s histogram within the label as the loop releases it, but exact: the rows'
    shares with the label's code and ``x <= edge`` (a null reads as 0), with noise std ``std``."""
    edges = histogram_edges(domain.numeric_columns[k]).astype(np.float64)
    label_block = domain.block_index("y")
    label = codes[:, label_block]
    prefixes = np.stack([[np.mean((label == c) & (numerics[:, k] <= edge)) for c in range(2)] for edge in edges])
    return HistogramMargins(0.0, (k,), (label_block,), (edges,), (prefixes,), (np.full(len(edges), std),))


def test_an_integer_histogram_regroups_into_the_bins_exactly() -> None:
    """Every whole age (18-90, one histogram cell each) lands in the bin its mapped value falls
    in, so the regrouped counts are the rows' own; a bin's variance is its cells' number times
    one cell's. A column without a histogram (or of another label block) gives None."""
    rng = np.random.default_rng(0)
    n = 3_000
    frame = pl.DataFrame({"age": rng.integers(18, 91, n), "y": rng.choice(["n", "p"], n)})
    domain = Domain.from_mapping(frame.schema, {"age": (18, 90), "y": ["n", "p"]}, labels=["y"])
    spec = domain.numeric_columns[0]
    x = to_unit(frame["age"].to_numpy().astype(np.float64), spec)
    label = (frame["y"] == "p").to_numpy().astype(np.int64)
    edges = histogram_edges(spec).astype(np.float64)
    assert len(edges) == 73  # one per whole age
    prefixes = np.stack([[np.mean((label == c) & (x <= edge)) for c in range(2)] for edge in edges])
    histograms = HistogramMargins(0.0, (0,), (domain.block_index("y"),), (edges,), (prefixes,), (np.full(73, 0.01),))
    counts, variance = histograms.binned(domain, 0, domain.block_index("y"), 8)
    bins = TieLayout((), np.zeros(1, dtype=np.int64), 8).bin_of(x)
    expected = np.stack([np.bincount(bins[label == c], minlength=8) / n for c in range(2)], axis=1)
    assert np.allclose(counts, expected, rtol=0, atol=1e-12)
    whole_ages = np.bincount(TieLayout((), np.zeros(1, dtype=np.int64), 8).bin_of(to_unit(np.arange(18.0, 91.0), spec)),
                             minlength=8)
    assert np.allclose(variance, whole_ages[:, None] * 0.01**2 * np.ones((1, 2)))
    assert histograms.binned(domain, 0, domain.block_index("y") + 1, 8) is None
    assert histograms.binned(domain, 1, domain.block_index("y"), 8) is None


def test_a_continuous_cell_is_split_over_the_bins_by_its_width() -> None:
    """Cells (0, 0.3] and (0.3, 1] into two bins: the first all in bin 0, the second 2/7 in bin
    0 and 5/7 in bin 1 (uniform within it)."""
    domain = pair_domain()
    prefixes = np.array([[0.1, 0.2], [0.4, 0.6]])  # cells: (0.1, 0.2) and (0.3, 0.4)
    histograms = HistogramMargins(0.0, (0,), (domain.block_index("y"),), (np.array([0.3, 1.0]),), (prefixes,),
                                  (np.array([0.02, 0.03]),))
    counts, variance = histograms.binned(domain, 0, domain.block_index("y"), 2)
    assert np.allclose(counts, [[0.1 + 0.3 * 2 / 7, 0.2 + 0.4 * 2 / 7], [0.3 * 5 / 7, 0.4 * 5 / 7]])
    assert np.allclose(variance[:, 0], [(1 + (2 / 7) ** 2) * 0.02**2, (5 / 7) ** 2 * 0.02**2])


@pytest.mark.parametrize("first", ["age", "hours"])
def test_exact_histograms_give_the_rows_own_counts(first) -> None:
    """The rows as relaxed rows and their exact histogram: the released counts (bin 0 less the
    nulls of a nullable earlier column, times the share of the cell whose later column is not
    null) are the rows' own, so the evidence is the relaxed masses' to 1e-9."""
    domain = pair_domain(first)
    codes, numerics = pair_rows(domain, 2_000, np.random.default_rng(1))
    relaxed = one_hot_relaxed(domain, codes, numerics)
    layout = tie_layout(domain, 8)
    exact = tie_sums(codes, numerics, domain, layout) / (len(codes) * TIE_QUANTUM)
    noisy = exact + np.random.default_rng(2).normal(0, 0.01, exact.shape)
    plain = pair_evidence(relaxed, domain, layout, noisy, 0.01)
    released = pair_evidence(relaxed, domain, layout, noisy, 0.01, _histograms(domain, codes, numerics, 0))
    assert np.isnan(released[:-1]).all() and np.isfinite(released[-1])
    assert released[-1] == pytest.approx(plain[-1], rel=1e-9, abs=1e-9)


def test_the_evidence_with_count_noise_is_the_gaussian_likelihood_ratio() -> None:
    """Counts with noise variance ``u`` (times the live share ``a``, squared): each hypothesis'
    residual ``s - n m`` has variance ``std^2 + m^2 a^2 u`` in the likelihood, its log in the
    normaliser; computed cell by cell."""
    domain = pair_domain()
    codes, numerics = pair_rows(domain, 1_000, np.random.default_rng(3))
    relaxed = one_hot_relaxed(domain, codes, numerics)
    layout = tie_layout(domain, 4)
    noisy = tie_sums(codes, numerics, domain, layout) / (len(codes) * TIE_QUANTUM)
    histograms = _histograms(domain, codes, numerics, 0, std=0.004)
    evidence = pair_evidence(relaxed, domain, layout, noisy, 0.01, histograms)[-1]
    label, null = codes[:, domain.block_index("y")], codes[:, domain.block_index("hours", indicator=True)] == 1
    age_bin = np.minimum(np.floor(numerics[:, 0] * 4), 3).astype(np.int64)
    count_variance = 50 * 0.004**2  # 50 of the 200 cells in each bin
    released = noisy[layout.offsets[-2]:]
    expected = 0.0
    for c in range(2):
        label_mean = numerics[(label == c) & ~null, 1].mean()
        for b in range(4):
            cell = (label == c) & (age_bin == b)
            live = np.mean(~null[cell])
            count = np.mean(cell) * live  # the histogram's count, times the share whose hours are not null
            for sign, mean in ((-1.0, label_mean), (1.0, numerics[cell & ~null, 1].mean())):
                variance = 0.01**2 + mean**2 * count_variance * live**2
                expected -= sign * ((released[b * 2 + c] - count * mean) ** 2 / variance + np.log(variance))
    assert evidence == pytest.approx(expected, rel=1e-9)


def test_released_counts_find_a_pairing_that_the_relaxed_masses_hide() -> None:
    """Relaxed rows that pair hours with age as the rows do, but drawn in proportion to hours,
    so that each age bin's mass is off by its mean of hours: mass times the label's mean then
    predicts the released sums, and with the relaxed rows' own masses the pair fails; with the
    histogram's counts it passes."""
    domain = pair_domain()
    rng = np.random.default_rng(4)
    codes, numerics = pair_rows(domain, 20_000, rng)
    live = codes[:, domain.block_index("hours", indicator=True)] == 0
    weight = np.where(live, numerics[:, 1], numerics[live, 1].mean())
    drawn = np.flatnonzero(rng.random(len(codes)) < weight)
    relaxed = one_hot_relaxed(domain, codes[drawn], numerics[drawn])
    layout = tie_layout(domain, 8)
    exact = tie_sums(codes, numerics, domain, layout) / (len(codes) * TIE_QUANTUM)
    histograms = _histograms(domain, codes, numerics, 0, std=0.001)
    assert pair_evidence(relaxed, domain, layout, exact, 0.01)[-1] < -PAIR_EVIDENCE
    assert pair_evidence(relaxed, domain, layout, exact, 0.01, histograms)[-1] > PAIR_EVIDENCE
    assert fitted_ties(relaxed, domain, layout, exact, 0.01).layout.tables != layout.tables
    assert fitted_ties(relaxed, domain, layout, exact, 0.01, histograms=histograms).layout.tables == layout.tables


def test_synthesize_hands_the_released_histograms_to_the_pairs_test(monkeypatch) -> None:
    """The decoding's histogram margins (the released histograms, band HISTOGRAM_MATCH) go to
    the pairs' test."""
    import polars_rap.pipeline.decoding as decoding_stage
    from polars_rap.pipeline import fitting

    seen = []
    original = decoding_stage.fitted_ties

    def spy(*args, histograms=None, **keywords):
        seen.append(histograms)
        return original(*args, histograms=histograms, **keywords)

    monkeypatch.setattr(decoding_stage, "fitted_ties", spy)
    monkeypatch.setattr(fitting, "TIE_NOISE_CAP", math.inf)  # measured whatever their noise
    data, domain = paired_frame_and_domain()
    polars_rap.synthesize(
        data, epsilon=8.0, delta=1e-7, domain=domain, labels=["y"], seed=0, progress=False,
        strategy=PlannedStrategy(tie_share=0.2, relaxed_rows=40, workload={"n_linear_thresholds": 100}))
    assert len(seen) == 1
    assert isinstance(seen[0], HistogramMargins) and seen[0].columns == (0, 1) and seen[0].band == 1.0
