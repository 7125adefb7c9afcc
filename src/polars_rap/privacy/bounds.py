"""Private bounds of a numeric column: a noisy log-scale histogram, then a noisy binary search.

Used by :mod:`polars_rap.privacy.inference` for a column asked as ``"numeric"``; replace-one
neighbours, n public. Two charged steps over counts of one pass of the data:

1. **Noisy log-scale histogram** (coarse). The bins are fixed in advance (data-free): ``{0}``
   (|x| < 2**-20), and on each side of zero the magnitude bins ``(2**((k-1)/2), 2**(k/2)]``
   for k = -39 .. 128 (factors of sqrt 2). Every bin's count gets discrete Gaussian noise
   (exact, :mod:`polars_rap.privacy.samplers`): replace-one moves one row between two bins, L2
   sensitivity sqrt 2, so ``rho_h``-zCDP with ``sigma = 1/sqrt(rho_h)``. The coarse bounds
   are the outer edges of the lowest and highest bins whose noisy count clears ``tau = sigma
   * z + 1`` (:func:`threshold_for_rate`), z such that an empty bin clears it with
   probability ``1e-3 / n_bins`` (post-processing). If none does, no bound made of pure noise
   would be plausible: the column's inference fails (:class:`UnclearedBounds`), and once the
   other columns are done one error names every such column with the declaration to add. When the search
   below does not run, the coarse bounds then extend outward one bin at a time while the next
   bin's noisy count clears ``tau_tail = sigma * z_tail + 1`` (z_tail at rate 5%; integer
   columns step over bins that hold no integer), so that a tail spread thinly over several
   bins is kept instead of clipped (post-processing; an empty neighbour extends a bound by one
   bin with probability at most 5%).
2. **Noisy binary search** (refinement). Away from zero the bins are wide (a year column
   1974-2018 lies in (1448, 2048]), so each outer bin is cut into 1,024 equal cells, fixed by
   its public edges, and a binary search over the cell edges finds the first edge past which
   at most about ``tau_s`` rows lie: from the bottom of the low bin for the lower bound, from
   the top of the high bin for the upper one. A search reads *prefix counts*: ``prefix[j]``
   is the number of rows in a set ``S_j`` (rows below cell edge ``j``, or above it, rows of
   farther bins included), fixed before the search from public values and earlier releases.
   Replacing one row removes at most one row from ``S_j`` and adds at most one, so
   ``prefix[j]`` moves by at most 1: each comparison's count has L2 sensitivity 1. Each gets
   fresh discrete Gaussian noise of scale ``s = 1 / sqrt(2 rho_q)``, ``rho_q``-zCDP
   (Canonne, Kamath & Steinke 2020); a search makes 10 comparisons, each chosen from the results of those
   before, so by adaptive composition the two searches cost ``2 * 10 * rho_q = rho_s``. Only
   the final cell edges are released (not the noisy counts): post-processing. ``tau_s = s *
   z_s + 1``, z_s such that an edge with no rows past it passes for rows with probability at most
   ``1e-3`` over a search's 10 steps. A search whose every comparison saw at most ``tau_s``
   rows (the bin holds too few) keeps the bin's edge.

A refined bound may clip about ``tau_s`` rows (more with probability ~1e-3). The search runs,
with half of the column's ``rho`` (the histogram taking the other half), only when ``tau_s``
is at most 1% of the rows (``n`` is public); otherwise the histogram takes all of ``rho`` and
the coarse bounds stand, as they did before the search existed. Integer columns round
refined bounds inwards (no integer value lies between them and the cell edge) and coarse ones
outwards; so do date, datetime and duration columns, counted in whole days or microseconds
(:mod:`polars_rap.schema.temporal`) and returned as ``date``/``datetime``/``timedelta`` bounds. Values beyond the bounds are clipped, as with declared bounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import polars as pl

from polars_rap.schema.domain import Numeric
from polars_rap.errors import DataError, ParameterError
from polars_rap.privacy.ledger import PrivacyEvent, PrivacyLedger, gaussian_mechanism, gaussian_noise_std
from polars_rap.privacy.samplers import discrete_gaussian, words_from
from polars_rap.schema.temporal import internal_to_bound, is_temporal

__all__ = [
    "BoundCounts", "UnclearedBounds", "comparison_noise_std", "infer_bounds", "magnitude_bin_edges",
    "noisy_prefix_search", "search_threshold", "threshold_for_rate",
]  # fmt: skip

_ZERO_MAGNITUDE = 2.0**-20
_K_MIN, _K_MAX = -39, 128  # magnitude bins (2**((k-1)/2), 2**(k/2)]: 2**-20 .. 2**64
_EMPTY_BIN_RATE = 1e-3  # chance that any empty bin clears the threshold / any search errs
_SEARCH_SHARE = 0.5  # part of a column's rho spent on the two searches, when they run
_SEARCH_DEPTH = 10  # comparisons per search: an outer bin cut into 2**10 cells
_CELLS = 2**_SEARCH_DEPTH
_MAX_CLIPPED_SHARE = 0.01  # search only when its threshold is at most this share of the rows
_TAIL_RATE = 0.05  # chance that an empty bin next to the kept ones extends them (no search)


def magnitude_bin_edges() -> np.ndarray:
    """float64[n_bins, 2]: the (low, high) edges of the fixed bound-inference bins, ascending.

    Negative magnitude bins, the zero bin ``[0, 0]`` (|x| < 2**-20 counts as zero), then the
    positive ones; bin ``(2**((k-1)/2), 2**(k/2)]`` for k = -39 .. 128 on each side.
    """
    k = np.arange(_K_MIN, _K_MAX + 1, dtype=np.float64)
    upper, lower = 2.0 ** (k / 2.0), 2.0 ** ((k - 1.0) / 2.0)
    lower[0] = _ZERO_MAGNITUDE
    positive = np.stack([lower, upper], axis=1)
    negative = -positive[::-1, ::-1]
    return np.concatenate([negative, [[0.0, 0.0]], positive])


_EDGES = magnitude_bin_edges()
_MAGNITUDES = np.sort(np.abs(_EDGES), axis=1)
#: bool[n_bins]: whether a bin can hold an integer (the zero bin, or an m with low < |m| <= high)
_HOLDS_INTEGER = (np.floor(_MAGNITUDES[:, 0]) + 1.0 <= _MAGNITUDES[:, 1]) | (_MAGNITUDES[:, 1] == 0.0)


def _magnitude_bins(values: np.ndarray) -> np.ndarray:
    """int64[len(values)]: the bin of each finite value in :func:`magnitude_bin_edges`."""
    n_side = _K_MAX - _K_MIN + 1
    magnitude = np.abs(values)
    with np.errstate(divide="ignore"):
        k = np.ceil(2.0 * np.log2(np.maximum(magnitude, _ZERO_MAGNITUDE)))
    offset = np.clip(k, _K_MIN, _K_MAX).astype(np.int64) - _K_MIN  # 0 .. n_side - 1
    bins = np.where(values > 0, n_side + 1 + offset, n_side - 1 - offset)
    return np.where(magnitude < _ZERO_MAGNITUDE, n_side, bins)


class BoundCounts:
    """One column's counts over batches (reads the sensitive data): ``bins`` (int64[n_bins])
    and, for each bin that holds rows, its 1,024 equal cells (``cells[bin]``, int64[1024])."""

    def __init__(self) -> None:
        self.bins = np.zeros(len(_EDGES), dtype=np.int64)
        self.cells: dict[int, np.ndarray] = {}

    def merge(self, other: BoundCounts) -> None:
        """Add the counts of ``other`` (other rows of the same column) into these, exactly."""
        self.bins += other.bins
        for bin_index, cells in other.cells.items():
            self.cells.setdefault(bin_index, np.zeros(_CELLS, dtype=np.int64))
            self.cells[bin_index] += cells

    def add(self, values: np.ndarray) -> None:
        """Count finite float64 ``values`` (nulls and NaN removed by the caller)."""
        bins = _magnitude_bins(values)
        self.bins += np.bincount(bins, minlength=len(self.bins))
        edges = _EDGES[bins]
        width = edges[:, 1] - edges[:, 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            position = np.where(width > 0, (values - edges[:, 0]) / width, 0.0)
        cell = np.clip(np.floor(position * _CELLS), 0, _CELLS - 1).astype(np.int64)
        keys, counts = np.unique(bins * _CELLS + cell, return_counts=True)
        for key, count in zip(keys.tolist(), counts.tolist(), strict=True):
            bin_index, cell_index = divmod(key, _CELLS)
            self.cells.setdefault(bin_index, np.zeros(_CELLS, dtype=np.int64))[cell_index] += count


class UnclearedBounds(DataError):
    """Numeric columns whose noisy histogram had no bin clearing its threshold, so their bounds
    cannot be inferred (a :class:`~polars_rap.errors.DataError`, for the curator). ``names``,
    ``thresholds`` (public: the budget and n alone) and ``dtypes`` per column; the message names
    every one with the declaration to add. :func:`polars_rap.privacy.inference.infer_declarations`
    gathers one per column of a run into one error."""

    def __init__(self, names: Sequence[str], thresholds: Sequence[float], dtypes: Sequence[pl.DataType]) -> None:
        self.names, self.thresholds, self.dtypes = list(names), list(thresholds), list(dtypes)
        super().__init__(self._message())

    def __reduce__(self):
        return type(self), (self.names, self.thresholds, self.dtypes)

    def _message(self) -> str:
        lowest, highest = f"{min(self.thresholds):.0f}", f"{max(self.thresholds):.0f}"
        about = lowest if lowest == highest else f"{lowest} to {highest}"
        quoted = [repr(name) for name in self.names]
        declarations = ", ".join(f"{name!r}: {_declaration_hint(dtype)}"
                                 for name, dtype in zip(self.names, self.dtypes, strict=True))
        if len(self.names) == 1:
            which, its, they = f"column {quoted[0]}", "its", "it holds"
        else:
            which, its, they = f"columns {', '.join(quoted[:-1])} and {quoted[-1]}", "their", "they hold"
        return (
            f"{which}: no value range cleared the privacy threshold (about {about} rows in one bin of "
            f"the noisy histogram), so {its} bounds cannot be inferred: too few rows hold values, or "
            f"they are spread thin. Declare {its} bounds in domain=, e.g. domain={{{declarations}}} "
            "from public documentation, or raise inference_share or epsilon so that the threshold "
            f"falls below the rows {they}"
        )


def _declaration_hint(dtype: pl.DataType) -> str:
    """How a column of ``dtype`` declares its bounds in ``domain=`` (a placeholder pair)."""
    kind = {pl.Date: "datetime.date", pl.Datetime: "datetime.datetime", pl.Duration: "datetime.timedelta"}
    for temporal, name in kind.items():
        if isinstance(dtype, temporal) or dtype == temporal:
            return f"({name}(...), {name}(...))"
    return "(lower, upper)"


def threshold_for_rate(sigma: float, rate: float) -> float:
    """``sigma * z + 1`` with ``P[N(0, 1) >= z] = rate`` (rounded up: conservative).

    The noise on counts is discrete Gaussian, X ~ N_Z(0, sigma^2), whose tail is that of
    N(0, sigma^2) shifted by one count: P[X >= a + 1] <= P[N(0, sigma^2) >= a] for a >= 0
    (:mod:`polars_rap.privacy.samplers`). So a count of 0 gets a noisy value at or above the
    threshold with probability at most ``rate``.
    """
    return math.nextafter(-sigma * NormalDist().inv_cdf(rate) + 1.0, math.inf)


def comparison_noise_std(rho: float, n_searches: int, depth: int) -> float:
    """Noise std of each comparison when ``n_searches`` searches of ``depth`` comparisons
    share ``rho``: ``1 / sqrt(2 rho / (n_searches depth))`` (counts of sensitivity 1).

    >>> comparison_noise_std(0.5, 1, 1)
    1.0
    """
    return gaussian_noise_std(1.0, rho / (n_searches * depth))


def _comparison_sigma2(rho: float, n_searches: int, depth: int) -> Fraction:
    """The exact sigma^2 = n_searches depth / (2 rho) of each comparison's discrete Gaussian:
    its n_searches * depth comparisons (sensitivity 1) then cost exactly ``rho`` together."""
    return Fraction(n_searches * depth) / (2 * Fraction(rho))


def noisy_prefix_search(
    prefixes: Sequence[np.ndarray],
    threshold: float,
    rho: float,
    ledger: PrivacyLedger,
    rng,
    description: str = "",
) -> list[int]:
    """For each prefix-count array, the last cell edge whose noisy count is at most ``threshold``.

    Charges ``rho`` first, as one ``"gaussian_binary_search"`` event; each comparison adds
    exact discrete Gaussian noise to its integer count, of scale :func:`comparison_noise_std`
    (sensitivity 1: see the module docstring).

    Parameters
    ----------
    prefixes : sequence of int64[2**depth + 1]
        ``prefix[j]``: rows in the set of edge ``j``, nondecreasing in ``j`` (reads the real
        data). All of one ``depth`` >= 1.
    threshold : float
        Public: a noisy count at or below it is taken for "no rows yet".
    rho : float
        zCDP cost of all the searches together.
    ledger : PrivacyLedger
    rng : SecureRandom or numpy.random.Generator
    description : str, optional

    Returns
    -------
    list of int
        One index in ``[0, 2**depth - 1]`` per array: the search starts from ``[0,
        2**depth)`` and at each of its ``depth`` steps keeps the upper half when the noisy
        count at the middle edge is at most ``threshold``, else the lower half. ``2**depth -
        1`` means every comparison saw at most ``threshold`` rows.
    """
    arrays = [np.asarray(prefix, dtype=np.float64) for prefix in prefixes]
    shapes = sorted({array.shape for array in arrays})
    depth = round(math.log2(shapes[0][0] - 1)) if len(shapes) == 1 and len(shapes[0]) == 1 and shapes[0][0] > 2 else 0
    if depth < 1 or shapes != [(2**depth + 1,)]:
        msg = ("The 'prefixes' parameter must hold 1-D arrays of one length 2**depth + 1 with "
               f"depth >= 1. Got shapes {shapes}.")
        raise ParameterError(msg)
    if not (all(np.all(np.isfinite(array)) for array in arrays) and math.isfinite(threshold)):
        msg = "The 'prefixes' and 'threshold' parameters must be finite."  # never echo the counts
        raise ParameterError(msg)
    words = words_from(rng)
    sigma2 = _comparison_sigma2(rho, len(arrays), depth)
    ledger.charge(PrivacyEvent("gaussian_binary_search", rho, description))
    found = []
    for array in arrays:
        low, high = 0, 2**depth
        while high - low > 1:
            middle = (low + high) // 2
            if array[middle] + int(discrete_gaussian(sigma2, 1, words)[0]) <= threshold:
                low = middle
            else:
                high = middle
        found.append(low)
    return found


def search_threshold(rho: float) -> float:
    """``tau_s`` of the two searches sharing ``rho`` (public)."""
    return threshold_for_rate(comparison_noise_std(rho, 2, _SEARCH_DEPTH), _EMPTY_BIN_RATE / _SEARCH_DEPTH)


def infer_bounds(name: str, counts: BoundCounts, n_rows: int, dtype: pl.DataType, rho: float,
                 ledger: PrivacyLedger, rng) -> Numeric:
    """Bounds of column ``name`` from its ``counts`` over ``n_rows`` rows (public), charging
    ``rho`` in all (see the module docstring); nullable, integer rounded by ``dtype``."""
    search = search_threshold(rho * _SEARCH_SHARE) <= _MAX_CLIPPED_SHARE * n_rows
    histogram_rho = rho * (1.0 - _SEARCH_SHARE) if search else rho  # halves are exact in floats
    noisy, sigma = gaussian_mechanism(
        counts.bins.astype(np.float64), math.sqrt(2.0), histogram_rho, ledger, rng,
        description=f"bounds of {name!r} (noisy log-scale histogram)",
    )
    tau = threshold_for_rate(sigma, _EMPTY_BIN_RATE / len(counts.bins))
    passing = np.flatnonzero(noisy >= tau)
    if len(passing) == 0:
        # The noisiest bin is a draw among ~340 bins of noise: it gave [8.4e6, 1.2e7] for a
        # column of codes 1..6. No fallback made of noisy counts is plausible, so stop here
        # (the charge stays: nothing is released but this fact, post-processing of it).
        raise UnclearedBounds([name], [tau], [dtype])
    low_bin, high_bin = int(passing[0]), int(passing[-1])
    integer = dtype.is_integer() or is_temporal(dtype)  # temporal: whole days or microseconds
    if not search:
        low_bin, high_bin = _extend_through_thin_tails(noisy, low_bin, high_bin, sigma, integer)
    coarse = (float(_EDGES[low_bin, 0]), float(_EDGES[high_bin, 1]))
    refined = (None, None)
    if search:
        refined = _search_bounds(name, counts, low_bin, high_bin, rho - histogram_rho, ledger, rng)
    outer = (math.floor(coarse[0]), math.ceil(coarse[1])) if integer else coarse
    lower = outer[0] if refined[0] is None else (math.ceil(refined[0]) if integer else refined[0])
    upper = outer[1] if refined[1] is None else (math.floor(refined[1]) if integer else refined[1])
    if lower >= upper:  # the searches crossed (an atom, or a narrow bin): keep the coarse edges
        lower, upper = outer
    if lower >= upper:
        upper = lower + 1.0
    if is_temporal(dtype):  # counted in internal units; declared as dates, datetimes, durations
        return Numeric(internal_to_bound(lower, dtype), internal_to_bound(upper, dtype), nullable=True)
    return Numeric(float(lower), float(upper), nullable=True)


def _extend_through_thin_tails(noisy: np.ndarray, low_bin: int, high_bin: int, sigma: float,
                               integer: bool) -> tuple[int, int]:
    """Widen ``[low_bin, high_bin]`` outward, one bin at a time on each side, while the next
    bin's noisy count clears ``tau_tail`` (:data:`_TAIL_RATE`); post-processing of the
    released histogram. For an integer column, bins that hold no integer (``(2, 2.83]``,
    every bin between 0 and 0.71) are stepped over: they are empty by construction.

    ``tau`` must be high enough that no empty bin among ~340 clears it, so a tail spread
    thinly over several bins (children's ages 0-10 over six bins, each under ``tau``) was
    clipped whole: 14% of the ages of a 7,244-row table. A bin next to the kept range needs
    less evidence: if it is empty, clearing ``tau_tail`` has probability at most
    ``_TAIL_RATE``, and the bound then moves one bin too far (a factor sqrt 2 in magnitude);
    two in a row, ``_TAIL_RATE**2``.
    """
    tau_tail = threshold_for_rate(sigma, _TAIL_RATE)
    can_hold = _HOLDS_INTEGER if integer else np.ones(len(noisy), dtype=bool)
    candidates = np.flatnonzero(can_hold)
    below, above = candidates[candidates < low_bin][::-1], candidates[candidates > high_bin]
    for step in below:
        if noisy[step] < tau_tail:
            break
        low_bin = int(step)
    for step in above:
        if noisy[step] < tau_tail:
            break
        high_bin = int(step)
    return low_bin, high_bin


def _search_bounds(name: str, counts: BoundCounts, low_bin: int, high_bin: int, rho: float,
                   ledger: PrivacyLedger, rng) -> tuple[float | None, float | None]:
    """The lower bound inside ``low_bin`` and the upper one inside ``high_bin`` (None: the
    search saw no cell holding rows, keep the bin's edge).

    Lower: ``prefix[j]`` = rows below cell edge ``j`` of the low bin (lower bins' rows
    included). Upper: ``prefix[r]`` = rows above edge ``1024 - r`` of the high bin (higher
    bins' rows included).
    """
    empty = np.zeros(_CELLS, dtype=np.int64)
    low_cells, high_cells = counts.cells.get(low_bin, empty), counts.cells.get(high_bin, empty)
    below = np.concatenate([[0], np.cumsum(low_cells)]) + int(counts.bins[:low_bin].sum())
    above = np.concatenate([[0], np.cumsum(high_cells[::-1])]) + int(counts.bins[high_bin + 1:].sum())
    lower_edge, upper_from_top = noisy_prefix_search(
        [below, above], search_threshold(rho), rho, ledger, rng,
        description=(f"bounds of {name!r} refined inside the outer log-scale bins (noisy binary "
                     f"search: 2 x {_SEARCH_DEPTH} Gaussian counts of sensitivity 1)"),
    )
    (low, high), (low_top, high_top) = _EDGES[low_bin], _EDGES[high_bin]
    last = _CELLS - 1  # every comparison saw at most the threshold: no cell holds rows
    lower = None if lower_edge == last else float(low + (high - low) * lower_edge / _CELLS)
    upper = None if upper_from_top == last else float(low_top + (high_top - low_top) * (_CELLS - upper_from_top) / _CELLS)
    return lower, upper
