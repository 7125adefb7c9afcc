"""The fit of the numeric ties to their release: a Bayesian ridge on the relaxed rows' features.

:func:`fit_ties` reads, from the relaxed rows alone, how the tie features (the categorical blocks;
the numeric pairs' tables are not fitted here but tested, :mod:`polars_rap.decode.numeric_pairs`) go
together within each label (their expected co-occurrence ``C``), fits the released cell deviations ``S - cnt * m`` (``m`` the label's mean of
``x_j``) by ``r = C g + noise`` with ``g ~ N(0, f^2 var(x_j) I)``, ``f`` chosen by evidence among
:data:`PRIOR_FRACTIONS` (a tie the noise hides is shrunk to none), and keeps each cell's fitted
deviation of its mean from the label's, ``(C g) / cnt`` (:mod:`polars_rap.decode.numeric_ties` for the
tables, their release and the decoding). Post-processing of the release: no privacy cost.
"""

from __future__ import annotations

import numpy as np

from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import block_slices
from polars_rap.decode.numeric_ties import NumericTies, TieLayout

__all__ = ["PRIOR_FRACTIONS", "fit_ties"]

PRIOR_FRACTIONS = (0.0, 0.01, 0.03, 0.1, 0.3, 1.0)
"""Prior stds of the ridge's per-cell effects, as fractions of the label's std of ``x_j`` (0: no
ties)."""


def fit_ties(relaxed: np.ndarray, domain: Domain, layout: TieLayout, noisy: np.ndarray, std: float) -> NumericTies:
    """The :class:`NumericTies` of released tie tables ``noisy`` (float64[layout.n_cells],
    noise std ``std``) on the features' joint distribution the relaxed rows (float32[n_rel,
    n_coords]) hold: per numeric column and label block, the Bayesian ridge of the module
    docstring for each label value, one prior fraction for all of them (:func:`_fraction`)."""
    slices = block_slices(domain)
    relaxed = np.asarray(relaxed, dtype=np.float64)
    deviations = np.zeros(layout.n_cells)
    for j, l in sorted({(j, l) for j, _, l in layout.tables}):
        tables = [t for t, (jj, _, ll) in enumerate(layout.tables) if (jj, ll) == (j, l)]
        widths = [layout.width(domain, layout.tables[t][1]) for t in tables]
        starts = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
        k_l = domain.blocks[l].n_codes
        systems = {c: _label_system(relaxed, domain, slices, layout, j, l, c, [layout.tables[t][1] for t in tables],
                                    np.concatenate([noisy[layout.offsets[t]:layout.offsets[t + 1]][c::k_l]
                                                    for t in tables]))
                   for c in range(k_l)}
        systems = {c: system for c, system in systems.items() if system is not None}
        spectra = {c: _spectrum(system[0]) for c, system in systems.items()}
        fraction = _fraction([(*spectra[c], system[1], system[2]) for c, system in systems.items()], std)
        for c, (co, residual, variance, count, mass) in systems.items():
            gain = _posterior(co, *spectra[c], residual, std, fraction**2 * variance)
            fitted = np.divide(co @ gain, count, out=np.zeros(len(count)), where=count > 1e-12)
            for i, t in enumerate(tables):  # deviations from the label's mean average to 0 over each table
                block = slice(starts[i], starts[i + 1])
                fitted[block] -= count[block] @ fitted[block] / mass
                deviations[layout.offsets[t]:layout.offsets[t + 1]][c::k_l] = fitted[block]
    return NumericTies(layout, deviations)


def _label_system(relaxed, domain, slices, layout, j, l, c, features, target):
    """``(co, residual, variance, count, mass)`` of numeric ``j`` within label block ``l``'s
    code ``c``, or None where the relaxed rows give it no mass: the features' expected
    co-occurrence ``co`` (float64[K, K], proportions of all rows; a block's own codes exclusive),
    the released sums less the label mean times each cell's count, the label's variance of
    ``x_j``, the cells' counts and the label's mass (non-null rows)."""
    spec = domain.numeric_columns[j]
    x = relaxed[:, domain.n_categorical_coords + j]
    live = np.ones(len(relaxed))
    if spec.nullable:
        live = 1.0 - relaxed[:, slices[domain.block_index(spec.name, indicator=True)].start + 1]
    weight = live * relaxed[:, slices[l]][:, c] / len(relaxed)  # each relaxed row's share of the rows
    mass = float(weight.sum())
    if mass <= 0.0:
        return None
    mean = float(weight @ x / mass)
    variance = float(weight @ (x - mean) ** 2 / mass)
    design = np.column_stack([layout.relaxed_codes(relaxed, domain, a) for a in features])  # [n_rel, K]
    co = (design * weight[:, None]).T @ design
    start = 0
    for a in features:  # a row holds one code of each feature
        block = slice(start, start + layout.width(domain, a))
        co[block, block] = np.diag(design[:, block].T @ weight)
        start = block.stop
    count = np.diag(co).copy()
    return co, target - count * mean, variance, count, mass


def _spectrum(co: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(eigenvalues, vectors)`` of ``co co^T`` (singular: each block's codes sum to one
    margin), the eigenvalues clipped at 0: what :func:`_fraction` and :func:`_posterior` solve on."""
    eigenvalues, vectors = np.linalg.eigh(co @ co.T)
    return np.clip(eigenvalues, 0.0, None), vectors


def _fraction(systems, std: float) -> float:
    """The fraction ``f`` of :data:`PRIOR_FRACTIONS` (0: no ties) whose prior ``g ~ N(0, f^2
    variance I)`` gives the label systems' residuals (``residual = co @ g + N(0, std^2 I)``, one
    system ``(eigenvalues, vectors, residual, variance)`` per label value, on :func:`_spectrum`)
    the largest summed marginal likelihood; the smaller ``f`` where two tie."""
    noise = max(float(std), 1e-12) ** 2
    spectra = [(eigenvalues, (vectors.T @ residual) ** 2, variance)
               for eigenvalues, vectors, residual, variance in systems]
    best, best_fraction = -np.inf, 0.0
    for fraction in PRIOR_FRACTIONS:
        evidence = 0.0
        for eigenvalues, projected, variance in spectra:
            spread = fraction**2 * variance * eigenvalues + noise
            evidence -= 0.5 * float(np.sum(np.log(spread)) + np.sum(projected / spread))
        if evidence > best:
            best, best_fraction = evidence, fraction
    return best_fraction


def _posterior(co: np.ndarray, eigenvalues: np.ndarray, vectors: np.ndarray, residual: np.ndarray, std: float,
               tau2: float) -> np.ndarray:
    """float64[K]: the posterior mean of ``g`` in ``residual = co @ g + N(0, std^2 I)``, ``g ~
    N(0, tau2 I)``: ``tau2 co^T (tau2 co co^T + std^2 I)^-1 residual`` (0 at ``tau2 = 0``), on
    ``co``'s :func:`_spectrum`."""
    if tau2 <= 0.0:
        return np.zeros(co.shape[1])
    noise = max(float(std), 1e-12) ** 2
    spread = tau2 * eigenvalues + noise
    return tau2 * co.T @ (vectors @ ((vectors.T @ residual) / spread))
