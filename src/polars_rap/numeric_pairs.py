"""Numeric pairs: each decoded numeric column follows the numeric columns before it, within each label.

The label coupling (:mod:`polars_rap.numeric_coupling`) permutes each numeric column on its own
within each label, so the decoded numeric columns come out independent of each other given the
label. The mixed marginals (two numeric prefixes x label) measure exactly that pair, and the
relaxed rows were fitted to their answers. On cps1988, whose education and potential
experience move together (within-label correlation -0.41 / -0.33), the permutation alone costs
the real rows MM 0.0004 -> 0.0055 and 0.008 macro F1 (``bench/results/tie_bins_probe.md``).

With ``PlannedStrategy(tie_numeric_bins=B)`` decoding keeps that pairing as the relaxed rows
hold it: for each numeric column ``j``, each earlier numeric column ``k`` and each label value
``c``, the mean of ``x_j`` over the relaxed rows in each of ``k``'s ``B`` equal bins of its mapped
range (a null its own bin), each relaxed row weighted by its probability of ``c`` and of ``x_j``
not being null, less the label's mean, is a tie target of table ``(j, k's bins, l)``
(:class:`~polars_rap.numeric_ties.TieLayout`). :meth:`NumericTies.apply
<polars_rap.numeric_ties.NumericTies.apply>` then hands the columns out in order, each to
follow the bins of those before it as already handed out (and the released categorical ties,
where those were measured), keeping every column's values within each label.

Why the relaxed rows and not a release: tables of sums by the bins, released with the
categorical ties (same sensitivity argument), came out so noisy at ε = 1 that the ridge shrank
them to almost nothing (cps1988 MM 0.995x the default's: ``bench/results/tie_bins_released.md``),
while the relaxed rows' pairing, read here, is what the loop's measured MM and LT answers
fitted. Unlike ``numeric_coupling="fitted"``, which keeps each relaxed row's numerics together
and so also its ties to the categories, only the numeric pairs come from the relaxed rows.

Post-processing of the released relaxed rows: no privacy cost.
"""

from __future__ import annotations

import numpy as np

from polars_rap.domain import Domain
from polars_rap.encoding import block_slices
from polars_rap.numeric_ties import NumericTies, TieLayout, tie_layout

__all__ = ["pair_deviations", "pair_ties"]


def pair_deviations(relaxed: np.ndarray, domain: Domain, layout: TieLayout) -> np.ndarray:
    """float64[layout.n_cells]: for each table of ``layout`` by an earlier numeric column's bins,
    the relaxed rows' (float[n_rel, n_coords]) mean of ``x_j`` in each (bin, label value) cell
    less the label value's mean (0 in a cell without mass); 0 in the other tables. Each table's
    deviations, weighted by the cells' masses, sum to 0 within each label value."""
    relaxed = np.asarray(relaxed, dtype=np.float64)
    slices = block_slices(domain)
    out = np.zeros(layout.n_cells)
    for t, (j, a, l) in enumerate(layout.tables):
        if a < len(domain.blocks):
            continue
        spec = domain.numeric_columns[j]
        x = relaxed[:, domain.n_categorical_coords + j]
        live = np.ones(len(relaxed))
        if spec.nullable:
            live = 1.0 - relaxed[:, slices[domain.block_index(spec.name, indicator=True)].start + 1]
        bins = layout.relaxed_codes(relaxed, domain, a)  # [n_rel, width]
        k_l = domain.blocks[l].n_codes
        cells = out[layout.offsets[t]:layout.offsets[t + 1]]
        for c in range(k_l):
            weight = live * relaxed[:, slices[l]][:, c]
            mass = float(weight.sum())
            if mass <= 0.0:
                continue
            count = bins.T @ weight
            sums = bins.T @ (weight * x)
            means = np.divide(sums, count, out=np.zeros(len(count)), where=count > 1e-12)
            cells[c::k_l] = np.where(count > 1e-12, means - float(weight @ x) / mass, 0.0)
    return out


def pair_ties(relaxed: np.ndarray, domain: Domain, bins: int, ties: NumericTies | None) -> NumericTies | None:
    """``ties`` (the released categorical ties, or None where they were not measured) with the
    numeric pairs' tables of ``bins`` bins added, their targets read from the relaxed rows
    (:func:`pair_deviations`); ``ties`` as it is without two numeric columns and a label."""
    if len(domain.numeric_columns) < 2:
        return ties
    layout = tie_layout(domain, bins, categorical=ties is not None)
    if layout is None or not any(a >= len(domain.blocks) for _, a, _ in layout.tables):
        return ties
    deviations = pair_deviations(relaxed, domain, layout)
    if ties is not None:
        at = {table: t for t, table in enumerate(layout.tables)}
        for t, table in enumerate(ties.layout.tables):
            target = at[table]
            deviations[layout.offsets[target]:layout.offsets[target + 1]] = (
                ties.deviations[ties.layout.offsets[t]:ties.layout.offsets[t + 1]])
    return NumericTies(layout, deviations)
