"""Each measured margin estimated alone (``public_use="margins"``'s reference, issue 19).

Before the joint fit (:func:`~polars_rap.public.tilt.tilted_weights`), each margin released by
:func:`~polars_rap.public.margins.release_margins` was pulled toward the public table's by an
empirical-Bayes factor per cell (:func:`shrunk_margin`; a feature x label table toward the
public table's association, :func:`association_prior`) and the public rows were raked to the
estimates; until 2026-11-30 the margins' check built its independent rows from them too. The
library no longer releases anything from these: they are the joint fit's per-margin reference
(its mode for a single margin is :func:`shrunk_margin`'s shrinkage, ``tests/test_public_tilt.py``)
and the baseline of the offline probes (``bench/public_margins_*.py``). Released values and
public rows only: post-processing.
"""

from __future__ import annotations

import numpy as np

from polars_rap.schema.domain import Domain
from polars_rap.public.margins import _cells, _kept, _split_by_label
from polars_rap.public.tilt import moment_variance

__all__ = ["association_prior", "label_consistent", "measured_margins", "shrunk_margin"]


def shrunk_margin(noisy: np.ndarray, std: float, public: np.ndarray) -> np.ndarray:
    """float64[cells] summing to 1: the empirical-Bayes estimate of a margin from its release
    ``noisy`` (noise std ``std`` per cell) toward the public table's shares ``public``.

    Prior: the private share of cell ``i`` is ``public_i + d_i`` with ``d_i ~ N(0, tau^2
    public_i)``, a deviation that scales with the cell's public share (a cell the public table
    barely holds differs from it by little in absolute terms). ``tau^2`` is estimated by moments
    (:func:`~polars_rap.public.tilt.moment_variance`: ``max(0, |noisy - public|^2 - k std^2) /
    sum(public)`` over ``k`` cells), and each cell keeps
    the posterior mean ``public_i + f_i (noisy_i - public_i)``, ``f_i = tau^2 public_i / (tau^2
    public_i + std^2)``: large cells keep their measurement, small ones are pulled to the public
    share, and a margin within the noise of the public one is the public one. A cell the public
    table lacks keeps its measurement (``f_i = 1``): the public rows say nothing of it, cannot be
    raked into it, and the check against independence must see what they miss; so does every cell
    of an exact release (``std`` 0). Negative shares are set to 0 and the rest rescaled (the
    public margin if nothing is left).

    On acs-income-CA with the other states' rows (``bench/results/public_margins_eb.md``, 3 seeds)
    the released rows score CM 0.38x / 0.58x the run without a public table at ε = 0.1 / 0.25, MM
    0.46x / 0.58x, LT 0.57x / 0.71x, where one James-Stein factor a margin (``max(0, 1 - k std^2 /
    |noisy - public|^2)`` for every cell) scored CM 0.42x / 0.59x, MM 0.48x / 0.61x, LT 0.63x / 0.74x."""
    noisy, public = np.asarray(noisy, dtype=np.float64), np.asarray(public, dtype=np.float64)
    gap = noisy - public
    prior = moment_variance(noisy, std, public) * public
    factor = np.divide(prior, prior + std**2, out=np.ones_like(prior), where=(public > 0) & (prior + std**2 > 0))
    estimate = np.clip(public + factor * gap, 0.0, None)
    total = estimate.sum()
    return estimate / total if total > 0 else public / public.sum()


def measured_margins(public_table, released: list[tuple[np.ndarray, float]],
                     domain: Domain) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(the public rows' cells per measured margin, each margin's :func:`shrunk_margin` toward
    the public rows' shares, a table split by the label made to agree with the label's margin
    (:func:`label_consistent`)): each margin estimated alone (the library's candidate fits the
    releases at once, :func:`~polars_rap.public.margins.candidate_weights`). A table split by the
    label is shrunk toward the public table's association instead (:func:`association_prior`):
    what it adds to the one-way margins is how the feature goes with the label, and a feature that
    goes with it as in the public table keeps little of the table's noise."""
    cells = _cells(public_table.codes, public_table.numerics, domain)
    kept, split = _kept(domain), _split_by_label(domain)
    publics = [np.bincount(cell, minlength=len(noisy)) / len(cell) for cell, (noisy, _) in zip(cells, released,
                                                                                                strict=True)]
    targets = [shrunk_margin(noisy, std, public) for (noisy, std), public in zip(released, publics, strict=True)]
    for b, label in split.items():
        m = kept.index(b)
        noisy, std = released[m]
        features = _feature_shares(noisy, std, publics[m], domain.block_sizes[label])
        targets[m] = shrunk_margin(noisy, std, association_prior(publics[m], features, targets[kept.index(label)]))
    return cells, label_consistent(targets, domain)


def _feature_shares(noisy: np.ndarray, std: float, public: np.ndarray, n_labels: int) -> np.ndarray:
    """float64[feature codes] summing to 1: a feature x label table's feature margin, its released
    cells (``noisy``, std ``std`` each; flattened, label fastest) summed over the label (std
    ``std * sqrt(n_labels)``) and shrunk toward the public table's (:func:`shrunk_margin`).

    Not the raw sums: a rare code's sum falls below 0 as often as its share is within the noise
    (a disability flag's 1-2% on acs-income-CA, against a sum's noise near 0.012 at ε = 0.25),
    and the prior raked to a 0 share held that code at 0: the code left the released rows in
    12-22% of simulated releases (``bench/results/public_margins_vanishing.md``)."""
    def summed(table: np.ndarray) -> np.ndarray:
        return np.asarray(table, dtype=np.float64).reshape(-1, n_labels).sum(axis=1)

    return shrunk_margin(summed(noisy), std * float(np.sqrt(n_labels)), summed(public))


def association_prior(public: np.ndarray, features: np.ndarray, label: np.ndarray, sweeps: int = 50) -> np.ndarray:
    """float64[feature codes x label codes] summing to 1: the public feature x label table
    ``public`` (flattened, label fastest) raked to the feature's estimated margin ``features``
    (:func:`_feature_shares`) and to the label's estimate ``label``: the public table's
    association with the private margins. ``sweeps`` of two-way iterative proportional fitting;
    the public table where it has no share at all (its own feature shares where ``features``
    sums to 0)."""
    table = public.reshape(-1, len(label)).copy()
    if table.sum() <= 0:
        return public
    rows = np.asarray(features, dtype=np.float64)
    rows = rows / rows.sum() if rows.sum() > 0 else table.sum(axis=1) / table.sum()
    for _ in range(sweeps):
        current = table.sum(axis=1)
        table *= np.divide(rows, current, out=np.zeros_like(rows), where=current > 0)[:, None]
        current = table.sum(axis=0)
        table *= np.divide(label, current, out=np.zeros_like(label), where=current > 0)[None, :]
    total = table.sum()
    return (table / total).ravel() if total > 0 else public


def label_consistent(targets: list[np.ndarray], domain: Domain) -> list[np.ndarray]:
    """``targets`` (float64[cells] per measured margin, :func:`margin_names`' order) with each
    table split by the label (:func:`_split_by_label`) rescaled, label by label, to sum over the
    feature to the label's own margin (the better measured: :data:`LABEL_WEIGHT`); a label the
    table holds no share of gets the table's feature shares. Raking to margins that disagree on
    the label would end wherever its last sweep left it."""
    kept, out = _kept(domain), list(targets)
    for b, label in _split_by_label(domain).items():
        table = targets[kept.index(b)].reshape(-1, domain.block_sizes[label])
        out[kept.index(b)] = _label_scaled(table, targets[kept.index(label)]).ravel()
    return out


def _label_scaled(table: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """float64[feature codes, label codes]: ``table`` with each label's column scaled to sum to
    ``wanted`` (float64[label codes]); a column of no share gets the table's feature shares
    (uniform if the table holds none)."""
    totals = table.sum(axis=0)
    feature = table.sum(axis=1) / table.sum() if table.sum() > 0 else np.full(table.shape[0], 1 / table.shape[0])
    return np.where(totals > 0, table * np.divide(wanted, totals, out=np.zeros_like(wanted), where=totals > 0),
                    np.outer(feature, wanted))
