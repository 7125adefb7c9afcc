"""The public rows' weights fitted to every measured margin at once (``public_use="margins"``, issue 19).

Model. The private rows are the public ones reweighted by an exponential tilt, one log-factor per
cell of each measured margin: ``w_r ∝ exp(sum_i theta_i[cell_i(r)])`` (``theta = 0``: the public
rows as they are). Each released margin is ``y_i = m_i(theta) + N(0, std_i^2)`` per cell, where
``m_i(theta)`` is the tilted rows' margin. The prior is the one
:func:`~polars_rap.public.shrinkage.shrunk_margin` puts on a margin's deviation from the public
table's, ``d_ic ~ N(0, tau_i^2 p_ic)``, carried onto the log-factors (``d_ic ≈ p_ic theta_ic``):
``theta_ic ~ N(0, tau_i^2 / p_ic)``, ``tau_i^2`` estimated by moments margin by margin
(:func:`prior_variance`). The weights are the posterior mode, found by L-BFGS on ``theta`` scaled by
the objective's diagonal curvature (``p_ic / std_i^2 + p_ic / tau_i^2``).

Why at once. Shrinking each margin alone and raking the rows to the estimates
(:func:`~polars_rap.public.shrinkage.measured_margins`, then
:func:`~polars_rap.public.reweight.rake`) estimates each margin from its own release only. Here the
public rows' associations carry every release to the other margins: a deviation seen in both
birthplace and citizenship (which go together in the public rows) is one tilt that both releases
support, which the noise of either alone would shrink away; and a tilt that one margin asks for
moves the associated margins only as far as their own releases allow.

Measured on acs-income-CA, offline at ε = 0.25 (``bench/results/public_margins_joint.md``, 8
noise draws, the library's margins and their budget): CM 0.570x -> 0.540x of the run without a
public table (lower on 7 of 8 draws, the eighth alike), MM 0.42x -> 0.39x, LT 0.45x -> 0.47x.

A margin released exactly (``std`` 0) is a constraint, not a measurement: the mode is raked to it
at the end (from the mode's weights). A cell no public row falls in cannot be given weight: its
log-factor moves nothing, and its release counts toward the others only through the margin's sum.
Everything here reads released values and the public rows: post-processing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from numba import njit, prange
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from polars_rap.public.reweight import rake

__all__ = ["TAU2_FLOOR", "mode_weights", "moment_variance", "prior_variance", "tilt_arrays", "tilt_objective",
           "tilted_weights"]

logger = logging.getLogger(__name__)

TAU2_FLOOR = 1e-6
"""The least prior variance ``tau_i^2`` a margin's log-factors get (a share deviation of std
``0.001 sqrt(p)``): a margin within its noise of the public one is held there but not infinitely
stiffly. In an offline trial on acs-income-CA at ε = 0.25 (one-way margins, 8 draws; not kept as a
probe) a floor of 1e-5 scored as 1e-6 did, CM 0.541x against 0.540x."""
MAX_ITERATIONS = 3000
"""L-BFGS iterations at most; on acs-income-CA's 260,000 public rows and 20 margins the mode is
reached in 300-550 (``bench/results/tilt_timing.csv``: 4.2 s a fit on 2 cores, 7.1 s with the
kernel serial)."""


def moment_variance(noisy: np.ndarray, std: float, public: np.ndarray) -> float:
    """``tau^2`` of one margin by moments: ``max(0, |noisy - public|^2 - k std^2) / sum(public)``
    over its ``k`` cells (the deviation's energy beyond the noise's, per unit of public share).
    ``noisy``, ``public``: float64[k] shares; ``std``: the noise std per cell. The prior of
    :func:`~polars_rap.public.shrinkage.shrunk_margin` and, floored, of the joint fit."""
    gap = np.asarray(noisy, dtype=np.float64) - np.asarray(public, dtype=np.float64)
    return max(0.0, float(np.square(gap).sum()) - len(gap) * std**2) / max(float(np.sum(public)), 1e-300)


def prior_variance(noisy: np.ndarray, std: float, public: np.ndarray) -> float:
    """``tau^2`` of one margin's log-factors: :func:`moment_variance`, at least :data:`TAU2_FLOOR`."""
    return max(moment_variance(noisy, std, public), TAU2_FLOOR)


CHUNKS = 64
"""The rows' fixed parts the kernel sums separately (in parallel) and then adds in order: the same
sums whatever the number of threads, so that a fit is reproducible from one machine to another."""


@njit(parallel=True, cache=True)
def _objective(theta, index, target, precision, penalty, weights, gradient):  # pragma: no cover - numba
    """Negative log posterior at ``theta`` (float64[cells], every margin's cells end to end);
    fills ``weights`` (float64[rows], the tilted rows' weights summing to 1) and ``gradient``
    (float64[cells]). ``index``: int32[rows, margins], each row's cell per margin in ``theta``'s
    numbering; ``target``, ``precision`` (``1 / std^2``, 0 for an exact margin) and ``penalty``
    (``p / tau^2``): float64[cells]. Rows are summed in :data:`CHUNKS` parts, one thread each."""
    n_rows, n_margins = index.shape
    n_cells = len(theta)
    parts = min(CHUNKS, max(n_rows, 1))
    bounds = np.linspace(0, n_rows, parts + 1).astype(np.int64)
    tops = np.full(parts, -np.inf)
    for k in prange(parts):
        for r in range(bounds[k], bounds[k + 1]):
            total = 0.0
            for j in range(n_margins):
                total += theta[index[r, j]]
            weights[r] = total
            tops[k] = max(tops[k], total)
    top = -np.inf
    for k in range(parts):
        top = max(top, tops[k])
    masses = np.zeros(parts)
    cell_parts = np.zeros((parts, n_cells))
    for k in prange(parts):
        for r in range(bounds[k], bounds[k + 1]):
            weights[r] = np.exp(weights[r] - top)
            masses[k] += weights[r]
            for j in range(n_margins):
                cell_parts[k, index[r, j]] += weights[r]
    mass = 0.0
    for k in range(parts):
        mass += masses[k]
    shares = np.zeros(n_cells)
    for k in range(parts):
        for c in range(n_cells):
            shares[c] += cell_parts[k, c]
    value = 0.0
    residual = np.empty(n_cells)
    for c in range(n_cells):
        shares[c] /= mass
        gap = shares[c] - target[c]
        residual[c] = gap * precision[c]
        value += 0.5 * (gap * residual[c] + penalty[c] * theta[c] * theta[c])
        gradient[c] = penalty[c] * theta[c]
    row_residual = np.empty(n_rows)
    means = np.zeros(parts)
    for k in prange(parts):
        for r in range(bounds[k], bounds[k + 1]):
            weights[r] /= mass
            total = 0.0
            for j in range(n_margins):
                total += residual[index[r, j]]
            row_residual[r] = total
            means[k] += weights[r] * total
    mean = 0.0
    for k in range(parts):
        mean += means[k]
    for k in prange(parts):
        cell_parts[k, :] = 0.0
        for r in range(bounds[k], bounds[k + 1]):
            step = weights[r] * (row_residual[r] - mean)
            for j in range(n_margins):
                cell_parts[k, index[r, j]] += step
    for k in range(parts):
        for c in range(n_cells):
            gradient[c] += cell_parts[k, c]
    return value


def tilt_objective(theta: np.ndarray, index: np.ndarray, target: np.ndarray, precision: np.ndarray,
                   penalty: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(negative log posterior, its gradient float64[cells], the tilted weights float64[rows]) at
    ``theta``: the compiled kernel, arguments as :func:`_objective`'s.

    ``0.5 sum_c precision_c (m_c - target_c)^2 + 0.5 sum_c penalty_c theta_c^2`` with ``m`` the
    weighted rows' cell shares; ``d m_c / d theta_e = sum_r w_r [c in r] ([e in r] - m_e)``, so
    the data term's gradient is ``sum_r w_r (g_r - sum_s w_s g_s) [e in r]`` with ``g_r`` the
    row's summed ``precision (m - target)``."""
    weights, gradient = np.empty(index.shape[0]), np.empty(len(theta))
    value = _objective(np.asarray(theta, dtype=np.float64), index, target, precision, penalty, weights, gradient)
    return float(value), gradient, weights


def tilt_arrays(cells: Sequence[np.ndarray], released: Sequence[tuple[np.ndarray, float]],
                publics: Sequence[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """(``index`` int32[rows, margins], ``target`` float64[cells], ``precision`` float64[cells],
    ``publics``): the kernel's arguments (:func:`_objective`) for ``released`` margins over the
    public rows' ``cells`` (:func:`tilted_weights`' arguments), every margin's cells numbered end
    to end, ``precision`` 0 for a margin released exactly; ``publics`` as given, else the public
    rows' shares per margin (float64[cells] each)."""
    sizes = [len(noisy) for noisy, _ in released]
    if publics is None:
        publics = [np.bincount(cell, minlength=k) / len(cell) for cell, k in zip(cells, sizes, strict=True)]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    index = np.stack([np.asarray(cell, dtype=np.int64) + offset for cell, offset in
                      zip(cells, offsets[:-1], strict=True)], axis=1).astype(np.int32)
    target = np.concatenate([np.asarray(noisy, dtype=np.float64) for noisy, _ in released])
    precision = np.concatenate([np.full(k, 0.0 if std == 0 else 1.0 / std**2) for k, (_, std) in
                                zip(sizes, released, strict=True)])
    return index, target, precision, list(publics)


def mode_weights(index: np.ndarray, target: np.ndarray, precision: np.ndarray, penalty: np.ndarray,
                 publics: Sequence[np.ndarray]) -> np.ndarray:
    """float64[n_rows] summing to 1: the tilted rows' weights at the mode of
    :func:`tilt_objective` (the kernel's arrays, :func:`tilt_arrays`; ``penalty`` float64[cells], the
    prior's precision on each log-factor), found by L-BFGS on ``theta`` scaled by the objective's
    diagonal curvature at 0 (``p / std^2 + penalty``; 1 where that is 0)."""
    curvature = np.concatenate(publics) * precision + penalty
    scale = 1.0 / np.sqrt(np.where(curvature > 0, curvature, 1.0))

    def scaled(phi: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient, _ = tilt_objective(phi * scale, index, target, precision, penalty)
        return value, gradient * scale

    # L-BFGS-B's own linear algebra is small; BLAS threads spinning beside the kernel's took it from
    # 7.2 s to 13 s a fit on CA's public rows (bench/results/tilt_timing.csv)
    with threadpool_limits(limits=1, user_api="blas"):
        found = minimize(scaled, np.zeros(len(target)), jac=True, method="L-BFGS-B",
                         options={"maxiter": MAX_ITERATIONS, "gtol": 1e-8, "ftol": 1e-12})
    if not found.success:
        logger.info("public margins: the public rows' weights stopped after %d iterations short of the mode (%s); "
                    "they are released as they are", found.nit, found.message)
    return tilt_objective(found.x * scale, index, target, precision, penalty)[2]


def tilted_weights(cells: Sequence[np.ndarray], released: Sequence[tuple[np.ndarray, float]],
                   publics: Sequence[np.ndarray] | None = None) -> np.ndarray:
    """float64[n_rows] summing to 1: the public rows' weights at the posterior mode (module
    docstring; :func:`mode_weights`). ``cells``: int per public row, one array per margin;
    ``released``: ``(noisy shares float64[cells], std)`` per margin; ``publics``: the public rows'
    shares per margin (computed from ``cells`` when not given)."""
    index, target, precision, publics = tilt_arrays(cells, released, publics)
    exact = [std == 0 for _, std in released]
    penalty = np.concatenate([np.zeros(len(noisy)) if std == 0 else public / prior_variance(noisy, std, public)
                              for (noisy, std), public in zip(released, publics, strict=True)])
    weights = mode_weights(index, target, precision, penalty, publics)
    if any(exact):
        kept = [m for m, is_exact in enumerate(exact) if is_exact]
        weights = rake([cells[m] for m in kept], [released[m][0] for m in kept], start=weights)
    return weights
