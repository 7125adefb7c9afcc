"""Public per-column maps between a numeric column's units and its coordinate in ``[0, 1]``.

Every numeric column reaches the kernels as one coordinate ``u`` in ``[0, 1]``: queries,
projection and decoding all happen there, and the threshold workload draws its thresholds
uniformly in ``u`` (:mod:`polars_rap.workload.builders`). The map from values to ``u`` is declared with
the domain (``scale=`` and ``atoms=``), never read off the data, so it is public and free.

With ``t = (x - lower) / (upper - lower)`` in ``[0, 1]`` (``x`` clipped to the bounds), the
*scale* ``g`` is

- ``"linear"`` (the default): ``g(t) = t``;
- ``"log"``: ``g(t) = log1p(K t) / log1p(K)`` with ``K = LOG_RANGE = 1000``: the log of
  ``x - lower`` measured in thousandths of the range, plus one, so that ``x = lower`` maps to
  0 and ``x = upper`` to 1. The first thousandth of the range takes 10% of ``u``, each decade
  above it a quarter to a third; for skewed columns (money, counts, weights) thresholds then
  land where the rows are;
- ``"sqrt"``: ``g(t) = sqrt(t)``, a milder stretch of the low end.

*Atoms* ``a_1 < ... < a_m`` (declared values that many rows hold exactly, e.g. 0 for
capital gains) each get a slab of width ``w = min(ATOM_WIDTH, 0.5 / m)`` of ``u`` to
themselves: the map is

    u = F(x) = (1 - m w) g(t(x)) + w #{i : a_i < x} + c(x) 1[x is an atom],

so a value equal to ``a_k`` sits in slab ``k`` = ``[(1 - m w) g(t(a_k)) + (k - 1) w,
(1 - m w) g(t(a_k)) + k w]``: at its centre (``c = w / 2``), or at the bound itself for an
atom at a bound (``c = 0`` at ``lower``, where ``u = 0``; ``c = w`` at ``upper``, where
``u = 1``), where the projection's clipping to ``[0, 1]`` holds mass exactly. Every other
value maps strictly increasingly around the slabs. Decoding inverts it: a ``u`` inside slab ``k`` gives exactly ``a_k`` (so an
atom survives even when the projection puts its mass anywhere in the slab), any other ``u``
gives ``g^-1((u - w #{slabs below u}) / (1 - m w))`` in units. ``F`` is nondecreasing, so a
threshold ``u <= tau`` is a threshold ``x <= F^-1(tau)`` in units: the kernels need no
change, and a fraction ``m w`` of the thresholds falls in slabs, where it separates ``x <
a_k`` from ``x <= a_k`` (in the first half of an interior slab).
"""

from __future__ import annotations

import numpy as np

__all__ = ["SCALES", "LOG_RANGE", "ATOM_WIDTH", "MAX_ATOMS", "atom_width", "equal_bin", "to_unit", "from_unit", "whole_units"]

SCALES = ("linear", "log", "sqrt")
"""The declarable scales."""
LOG_RANGE = 1000.0
"""``K`` of the log scale: how many of its smallest steps the range spans (3 decades)."""
ATOM_WIDTH = 0.05
"""Width of one atom's slab of ``u`` (less when more than 10 atoms share the column)."""
MAX_ATOMS = 20
"""Most atoms one column may declare."""


def atom_width(n_atoms: int) -> float:
    """``w``: the slab width of each of ``n_atoms`` atoms (0 without atoms).

    >>> atom_width(1), atom_width(20)
    (0.05, 0.025)
    """
    return 0.0 if n_atoms == 0 else min(ATOM_WIDTH, 0.5 / n_atoms)


def _scale(t: np.ndarray, scale: str) -> np.ndarray:
    if scale == "log":
        return np.log1p(LOG_RANGE * t) / np.log1p(LOG_RANGE)
    if scale == "sqrt":
        return np.sqrt(t)
    return t


def _unscale(v: np.ndarray, scale: str) -> np.ndarray:
    if scale == "log":
        return np.expm1(v * np.log1p(LOG_RANGE)) / LOG_RANGE
    if scale == "sqrt":
        return v * v
    return v


def scale_points(t: np.ndarray, lower: float, upper: float, scale: str) -> np.ndarray:
    """float64[n]: the values at fractions ``t`` (float[n] in ``[0, 1]``) of ``[lower, upper]``
    measured on ``scale`` (no atoms): equal steps of ``t`` are equal steps on the column's own
    scale. Its inverse is :func:`scale_fractions`."""
    return lower + (upper - lower) * _unscale(np.asarray(t, dtype=np.float64), scale)


def scale_fractions(x: np.ndarray, lower: float, upper: float, scale: str) -> np.ndarray:
    """float64[n]: where each value of ``x`` lies between ``lower`` and ``upper`` on ``scale``
    (0 at ``lower``, 1 at ``upper``; values outside are clipped): the inverse of
    :func:`scale_points`."""
    t = np.clip((np.asarray(x, dtype=np.float64) - lower) / (upper - lower), 0.0, 1.0)
    return _scale(t, scale)


def equal_bin(u: np.ndarray, bins: int) -> np.ndarray:
    """int64[n]: the bin of each mapped value ``u`` (float[n], clipped to ``[0, 1]``) among
    ``bins`` equal bins of ``[0, 1]``: ``b / bins <= u < (b + 1) / bins``, the last closed."""
    return np.minimum(np.floor(np.clip(u, 0.0, 1.0) * bins), bins - 1).astype(np.int64)


def to_unit(values: np.ndarray, spec) -> np.ndarray:
    """float64[n]: ``F(x)`` of float64[n] ``values`` in the column's (internal) units, clipped
    to ``[spec.lower, spec.upper]`` first; NaN stays NaN."""
    x = np.clip(np.asarray(values, dtype=np.float64), spec.lower, spec.upper)
    t = (x - spec.lower) / (spec.upper - spec.lower)
    u = _scale(t, spec.scale)
    atoms = np.asarray(spec.atoms, dtype=np.float64)
    if atoms.size == 0:
        return u
    width = atom_width(atoms.size)
    below = np.searchsorted(atoms, x, side="left")  # atoms strictly below x
    offset = np.where(x == spec.lower, 0.0, np.where(x == spec.upper, width, 0.5 * width))
    return (1.0 - atoms.size * width) * u + width * below + offset * np.isin(x, atoms)


def from_unit(u: np.ndarray, spec) -> np.ndarray:
    """float64[n]: ``F^-1(u)`` in the column's (internal) units for float64[n] ``u`` (clipped to
    ``[0, 1]``): exactly an atom inside its slab, inside ``[spec.lower, spec.upper]`` always."""
    u = np.clip(np.asarray(u, dtype=np.float64), 0.0, 1.0)
    atoms = np.asarray(spec.atoms, dtype=np.float64)
    if atoms.size:
        width = atom_width(atoms.size)
        squeeze = 1.0 - atoms.size * width
        starts = squeeze * _scale((atoms - spec.lower) / (spec.upper - spec.lower), spec.scale) \
            + width * np.arange(atoms.size)
        slab = np.searchsorted(starts, u, side="right") - 1  # last slab starting at or below u
        inside = (slab >= 0) & (u <= starts[np.maximum(slab, 0)] + width)
        passed = np.where(inside, slab, slab + 1)  # whole slabs below u
        v = np.clip((u - width * passed) / squeeze, 0.0, 1.0)
    else:
        inside = np.zeros(u.shape, dtype=bool)
        v = u
    x = spec.lower + _unscale(v, spec.scale) * (spec.upper - spec.lower)
    if atoms.size:
        x = np.where(inside, atoms[np.maximum(slab, 0)], x)
    return np.clip(x, spec.lower, spec.upper)


def whole_units(values: np.ndarray, spec) -> np.ndarray:
    """float64[n]: ``values`` (a column's units) rounded to whole units inside the column's
    bounds, as decoding outputs an integer or temporal column's values."""
    return np.clip(np.rint(values), np.ceil(spec.lower), np.floor(spec.upper))
