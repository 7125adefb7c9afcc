"""Numeric pairs: each decoded numeric column follows the numeric columns before it, within each label.

The label coupling (:mod:`polars_rap.decode.numeric_coupling`) permutes each numeric column on its own
within each label, so the decoded numeric columns come out independent of each other given the
label. The mixed marginals (two numeric prefixes x label) measure exactly that pair, and the
relaxed rows were fitted to their answers. On cps1988, whose education and potential
experience move together (within-label correlation -0.41 / -0.33), the permutation alone costs
the real rows an MM error of 0.0054 and 0.008 macro F1 (``bench/results/tie_bins_probe.md``).

With ``B`` = :data:`~polars_rap.decode.numeric_ties.TIE_NUMERIC_BINS` the numeric ties' release
(:mod:`polars_rap.decode.numeric_ties`) also holds, for each numeric column ``j``, each earlier numeric
column ``k`` and each label block, the sums of ``x_j`` by ``k``'s ``B`` equal bins of its mapped
range (a null its own bin) and label value: the *pair tables*, in the same Gaussian release
(a row lies in one cell of each, so they count in its ``T`` like any other table).

Released alone, they are too noisy to fit: at ε = 1 a cell's signal (its mass times the
deviation of its mean) is about the noise std, and the ridge shrank them to almost nothing
(cps1988 MM 0.995x the default's: ``bench/results/tie_bins_released.md``). The relaxed rows hold
the pairs the loop's measured MM and LT answers fitted, but on some tables (acs-income-CA's age
and commute time) that pairing is the relaxed rows' artifact, not the data's: kept everywhere
it raised CA's LT error 14-27% (``bench/results/tie_pairs_everywhere.md``). So each pair
table is a test. Its released sums are compared with two predictions, each a cell's count times
a mean: the relaxed rows' own mean of ``x_j`` in the cell (their pairing) or the label's mean
(no pairing, the label coupling's), by the likelihood ratio under the release's Gaussian noise
(:func:`pair_evidence`). The counts are the released ones where the loop released the earlier
column's histogram within that label block (:meth:`HistogramMargins.binned
<polars_rap.decode.histogram_margins.HistogramMargins.binned>`, times the relaxed rows' share of the
cell whose ``x_j`` is not null; their noise adds to each prediction's variance), else the
relaxed rows' own: on cps1988 the relaxed rows' bin counts of education are off by 0.08-0.15
(summed over the cells) against the histograms' 0.006-0.035, and with them the test had
dropped a pairing the released sums support (ε = 5 seed 0: evidence -69; 341 with the released
counts, 392 with the real rows' own; ``bench/results/pair_counts_probe.md``). Where the pairing
is more than ``e`` times as likely (:data:`PAIR_EVIDENCE`), the table's
targets are the relaxed rows' mean of ``x_j`` in each (bin, label value) cell less the label's
mean (:func:`pair_deviations`); the other pair tables are dropped.
:meth:`NumericTies.apply <polars_rap.decode.numeric_ties.NumericTies.apply>` then hands the columns out
in order, each following the kept bins of those before it as already handed out, and the
categorical ties, keeping every column's values within each label.

Unlike ``numeric_coupling="fitted"``, which keeps each relaxed row's numerics together and so
also their ties to the categories, only the numeric pairs the release supports come from the
relaxed rows. Where the ties are not measured
(:data:`~polars_rap.decode.numeric_ties.TIE_NOISE_CAP`) nothing is tested and no pair
is kept. Post-processing of the release and the relaxed rows: the release's cost is the ties'.
The numeric pairs' rank statistic (:mod:`polars_rap.decode.rank_pairs`), released beside the ties
out of their share, then reorders the columns where the pairs these tables kept are still off.
"""

from __future__ import annotations

import logging

import numpy as np

from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import block_slices
from polars_rap.decode.histogram_margins import HistogramMargins
from polars_rap.decode.numeric_ties import NumericTies, TieLayout, layout_of, tables_values
from polars_rap.decode.tie_ridge import fit_ties

__all__ = ["PAIR_EVIDENCE", "fitted_ties", "pair_deviations", "pair_evidence", "pair_ties"]

logger = logging.getLogger(__name__)

PAIR_EVIDENCE = 2.0
"""A numeric pair is kept where the released sums are more than ``e`` times (twice the log: 2)
as likely under the relaxed rows' pairing as under none."""


def pair_deviations(relaxed: np.ndarray, domain: Domain, layout: TieLayout) -> np.ndarray:
    """float64[layout.n_cells]: for each table of ``layout`` by an earlier numeric column's bins,
    the relaxed rows' (float[n_rel, n_coords]) mean of ``x_j`` in each (bin, label value) cell
    less the label value's mean (0 in a cell without mass); 0 in the other tables. Each table's
    deviations, weighted by the cells' masses, sum to 0 within each label value."""
    return _deviations(layout, _pair_cells(relaxed, domain, layout))


def pair_evidence(relaxed: np.ndarray, domain: Domain, layout: TieLayout, noisy: np.ndarray,
                  std: float, histograms: HistogramMargins | None = None) -> np.ndarray:
    """float64[n_tables]: per table of ``layout`` by an earlier numeric column's bins (NaN for
    the others), twice the log likelihood ratio of the released sums ``noisy``
    (float[layout.n_cells], noise std ``std``, answer units) under the relaxed rows' pairing
    against none: ``sum(r0^2 / v0 + log v0) - sum(r1^2 / v1 + log v1)``. Hypothesis ``i``
    predicts each cell's sum as its count ``n`` times a mean ``m_i`` (``m_1`` the relaxed rows'
    mean of ``x_j`` in the cell, ``m_0`` the label value's: ``x_j`` independent of the bins, the
    label coupling's), residual ``r_i = s - n m_i``, variance ``v_i = std^2 + m_i^2 var(n)``.
    ``n`` is read from ``histograms``' release where it holds the earlier column within the
    table's label block (:func:`_cell_counts`), else the relaxed rows' cell mass (``var(n) = 0``:
    then ``(|s - h0|^2 - |s - h1|^2) / std^2``); all as shares of the rows."""
    cells = _pair_cells(relaxed, domain, layout)
    return _evidence(layout, cells, _cell_counts(domain, layout, cells, len(relaxed), histograms), noisy, std)


def _pair_cells(relaxed, domain: Domain, layout: TieLayout) -> dict[int, tuple[np.ndarray, ...]]:
    """Per pair table ``t`` of ``layout``: ``(mass, sums, means, total)``, float64[cells] each,
    summed over the relaxed rows, each weighted by its probability of the cell's label value and
    of ``x_j`` not being null: the cell's weight, its weighted sum of ``x_j`` and its label
    value's mean of ``x_j`` (0 where the label value has no mass); ``total`` the cell's weight
    without the factor for ``x_j``."""
    relaxed = np.asarray(relaxed, dtype=np.float64)
    slices = block_slices(domain)
    cells = {}
    for t, (j, a, l) in enumerate(layout.tables):
        if a < len(domain.blocks):
            continue
        x, live = _live_values(relaxed, domain, slices, j)
        bins = layout.relaxed_codes(relaxed, domain, a)  # [n_rel, width]
        k_l = domain.blocks[l].n_codes
        size = int(layout.offsets[t + 1] - layout.offsets[t])
        mass, sums, means, total = np.zeros(size), np.zeros(size), np.zeros(size), np.zeros(size)
        for c in range(k_l):
            total[c::k_l] = bins.T @ relaxed[:, slices[l]][:, c]
            weight = live * relaxed[:, slices[l]][:, c]
            label_mass = float(weight.sum())
            if label_mass <= 0.0:
                continue
            mass[c::k_l] = bins.T @ weight
            sums[c::k_l] = bins.T @ (weight * x)
            means[c::k_l] = float(weight @ x) / label_mass
        cells[t] = mass, sums, means, total
    return cells


def _cell_counts(domain: Domain, layout: TieLayout, cells, n_relaxed: int,
                 histograms: HistogramMargins | None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per pair table of :func:`_pair_cells`' ``cells``: (float64[cells] the shares of the rows in
    each cell whose ``x_j`` is not null, float64[cells] their noise variances). Where
    ``histograms`` released the earlier column ``k`` within the table's label block: its counts by
    bin (:meth:`HistogramMargins.binned <polars_rap.decode.histogram_margins.HistogramMargins.binned>`;
    a null ``k``, which the histogram counts in bin 0, moved to the null code by the relaxed rows'
    share of nulls), times the relaxed rows' share of the cell with ``x_j`` not null. Else the
    relaxed rows' cell masses, variance 0."""
    out, binned = {}, {}  # each (column, label block)'s regrouped histogram read once
    for t, (mass, _, _, total) in cells.items():
        j, a, l = layout.tables[t]
        k = a - len(domain.blocks)
        if histograms is not None and (k, l) not in binned:
            binned[k, l] = histograms.binned(domain, k, l, layout.bins)
        released = None if histograms is None else binned[k, l]
        if released is None:
            out[t] = mass / n_relaxed, np.zeros(len(mass))
            continue
        counts, variance = released
        k_l = counts.shape[1]
        if domain.numeric_columns[k].nullable:  # the null code's row: the relaxed rows' nulls, out of bin 0
            nulls = total[layout.bins * k_l:] / n_relaxed
            counts = np.vstack([counts, nulls])
            counts[0] = counts[0] - nulls
            variance = np.vstack([variance, np.zeros(k_l)])
        live = np.divide(mass, total, out=np.ones(len(mass)), where=total > 1e-12)
        out[t] = np.clip(counts.ravel(), 0.0, None) * live, variance.ravel() * live**2
    return out


def _deviations(layout: TieLayout, cells) -> np.ndarray:
    """:func:`pair_deviations` from :func:`_pair_cells`' ``cells``."""
    out = np.zeros(layout.n_cells)
    for t, (mass, sums, means, _) in cells.items():
        out[layout.offsets[t]:layout.offsets[t + 1]] = _cell_means(mass, sums, means) - means
    return out


def _cell_means(mass: np.ndarray, sums: np.ndarray, means: np.ndarray) -> np.ndarray:
    """float64[cells]: the relaxed rows' mean of ``x_j`` in each cell; the label's (``means``)
    in a cell without mass."""
    return np.where(mass > 1e-12, np.divide(sums, mass, out=np.zeros(len(mass)), where=mass > 1e-12), means)


def _evidence(layout: TieLayout, cells, counts, noisy: np.ndarray, std: float) -> np.ndarray:
    """:func:`pair_evidence` (float64[n_tables], NaN but for the pair tables) from
    :func:`_pair_cells`' ``cells`` and :func:`_cell_counts`' ``counts``."""
    noise = max(float(std), 1e-12) ** 2
    evidence = np.full(len(layout.tables), np.nan)
    for t, (mass, sums, means, _) in cells.items():
        count, count_variance = counts[t]
        released = noisy[layout.offsets[t]:layout.offsets[t + 1]]
        paired = _cell_means(mass, sums, means)
        log_likelihood = []
        for mean in (means, paired):  # no pairing, the relaxed rows' pairing
            variance = noise + mean**2 * count_variance
            log_likelihood.append(-float(np.sum((released - count * mean) ** 2 / variance + np.log(variance))))
        evidence[t] = log_likelihood[1] - log_likelihood[0]
    return evidence


def fitted_ties(relaxed: np.ndarray, domain: Domain, layout: TieLayout, noisy: np.ndarray,
                std: float, histograms: HistogramMargins | None = None) -> NumericTies | None:
    """The ties of a release (``noisy``, float[layout.n_cells], std ``std``): the categorical
    tables fitted by the ridge (:func:`~polars_rap.decode.tie_ridge.fit_ties`), then, where ``layout``
    has numeric bins, the pairs that pass (:func:`pair_ties`, its counts from ``histograms``)."""
    if not layout.bins:
        return fit_ties(relaxed, domain, layout, noisy, std)
    categorical = [table for table in layout.tables if table[1] < len(domain.blocks)]
    ties = None
    if categorical:
        ties = fit_ties(relaxed, domain, layout_of(domain, categorical), tables_values(layout, noisy, categorical), std)
    return pair_ties(relaxed, domain, layout, noisy, std, ties, histograms)


def pair_ties(relaxed: np.ndarray, domain: Domain, layout: TieLayout, noisy: np.ndarray, std: float,
              ties: NumericTies | None, histograms: HistogramMargins | None = None) -> NumericTies | None:
    """``ties`` (fitted to the released categorical tables of ``layout``, or None) with the
    numeric pairs' tables of ``layout`` whose :func:`pair_evidence` (counts from
    ``histograms``) exceeds :data:`PAIR_EVIDENCE`, their targets read from the relaxed rows
    (:func:`pair_deviations`); ``ties`` as it is where no pair passes."""
    cells = _pair_cells(relaxed, domain, layout)
    evidence = _evidence(layout, cells, _cell_counts(domain, layout, cells, len(relaxed), histograms), noisy, std)
    kept = {layout.tables[t] for t in np.flatnonzero(evidence > PAIR_EVIDENCE)}
    tested = sorted(cells)
    if tested:
        logger.info("numeric pairs (kept where the evidence exceeds %g): %s", PAIR_EVIDENCE,
                    ", ".join(f"{_pair_name(domain, layout.tables[t])} {evidence[t]:.1f} "
                              f"{'kept' if layout.tables[t] in kept else 'dropped'}" for t in tested))
    if not kept:
        return ties
    fitted = set() if ties is None else set(ties.layout.tables)
    tables = [table for table in layout.tables if table in kept or table in fitted]
    out = layout_of(domain, tables, layout.bins)
    paired = _deviations(layout, cells)
    deviations = np.zeros(out.n_cells)
    for t, table in enumerate(tables):
        source, values = (ties.layout, ties.deviations) if table in fitted else (layout, paired)
        deviations[out.offsets[t]:out.offsets[t + 1]] = tables_values(source, values, [table])
    return NumericTies(out, deviations)


def _pair_name(domain: Domain, table) -> str:
    """``"experience | education"``: a pair table's column and the earlier column it follows."""
    j, a, _ = table
    return f"{domain.numeric_columns[j].name} | {domain.numeric_columns[a - len(domain.blocks)].name}"


def _live_values(relaxed, domain, slices, j) -> tuple[np.ndarray, np.ndarray]:
    """(float64[n_rel] the relaxed rows' values of numeric ``j``, float64[n_rel] their
    probabilities of it not being null)."""
    spec = domain.numeric_columns[j]
    live = np.ones(len(relaxed))
    if spec.nullable:
        live = 1.0 - relaxed[:, slices[domain.block_index(spec.name, indicator=True)].start + 1]
    return relaxed[:, domain.n_categorical_coords + j], live
