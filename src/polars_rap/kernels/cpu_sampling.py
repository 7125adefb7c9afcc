"""Drawing categorical codes from relaxed rows on the CPU: inverse-CDF sampling, one row and
block at a time, the same float64 operations in the same order as the NumPy reference
(:func:`codes_reference`), so both give the same codes bit for bit.

For output row ``r`` of relaxed row ``i = rows[r]`` and a block of coordinates ``start:stop``:
the probabilities ``p_k = max(relaxed[i, start + k], 0) * mask_k`` (``mask`` one row for all,
or one per relaxed row; none: 1), their running sums ``c_k`` (left to right), and the code is
the number of ``k`` with ``c_k / c_last < u_r`` (``c_k / 1`` where ``c_last`` is 0), at most
``stop - start - 1``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["codes_reference", "inverse_cdf_codes"]


def inverse_cdf_codes(relaxed: np.ndarray, rows: np.ndarray, start: int, stop: int, uniform: np.ndarray,
                      mask: np.ndarray | None = None) -> np.ndarray:
    """int32[len(rows)]: each output row's code in block ``start:stop`` (module docstring);
    ``relaxed`` float64[n_relaxed, n_coords] C-contiguous, ``rows`` int64[n], ``uniform``
    float64[n] in ``[0, 1)``, ``mask`` float64[1 or n_relaxed, stop - start] or None."""
    if mask is None:
        mask = np.ones((1, stop - start))
    return _codes(relaxed, np.ascontiguousarray(rows, dtype=np.int64), start, stop,
                  np.ascontiguousarray(uniform, dtype=np.float64), np.ascontiguousarray(mask, dtype=np.float64))


def codes_reference(relaxed: np.ndarray, rows: np.ndarray, start: int, stop: int, uniform: np.ndarray,
                    mask: np.ndarray | None = None) -> np.ndarray:
    """:func:`inverse_cdf_codes` in NumPy (the reference the kernel is tested against)."""
    probs = np.clip(relaxed[rows, start:stop], 0.0, None)
    if mask is not None:
        probs = probs * (mask if mask.shape[0] == 1 else mask[rows])
    cumulative = np.cumsum(probs, axis=1)
    total = cumulative[:, -1:]
    cumulative /= np.where(total > 0, total, 1.0)
    chosen = (cumulative < uniform[:, None]).sum(axis=1)
    return np.minimum(chosen, stop - start - 1).astype(np.int32)


@njit(parallel=True, cache=True)
def _codes(relaxed, rows, start, stop, uniform, mask):
    """Two passes per row, the running sum recomputed in the same order (so the same floats):
    its total, then the count of running sums below ``u`` times it."""
    n = len(rows)
    width = stop - start
    per_row = mask.shape[0] > 1
    out = np.empty(n, dtype=np.int32)
    for r in prange(n):
        i = rows[r]
        m = i if per_row else 0
        total = 0.0
        for k in range(width):
            total += max(relaxed[i, start + k], 0.0) * mask[m, k]
        divisor = total if total > 0.0 else 1.0
        running = 0.0
        chosen = 0
        for k in range(width):
            running += max(relaxed[i, start + k], 0.0) * mask[m, k]
            if running / divisor < uniform[r]:
                chosen += 1
        out[r] = min(chosen, width - 1)
    return out
