"""Categorical draws with fixed counts: each row's code drawn from its own distribution, the
number of rows drawing each code fixed in advance.

A public label model (:mod:`polars_rap.public.labels`) redraws the labels of a share of the
decoded rows. Drawn independently, each label value's count carries binomial noise (a standard
deviation of ``sqrt(sum_i p_i (1 - p_i))`` rows, of the order of 100 for the 52,000 rows a third
of acs-income-CA's output makes), and every class-conditional query of the workload moves with
it. Drawn here, with counts the caller fixes (:meth:`~polars_rap.public.labels.LabelModel.redraw`'s),
they do not:

1. Calibration: for the codes in turn, a common shift ``t`` of the log-odds of code ``c``
   against the codes after it, ``logit q_ic = log p_ic - log sum_{c' > c} p_ic'``, is found
   by bisection so that the rows still undrawn expect exactly ``counts[c]`` of it (the
   maximum-entropy adjustment of their odds; the rows' order of preference is kept).
2. Systematic sampling: the undrawn rows in a random order, row ``i`` takes code ``c`` where
   ``floor(S_i + U)`` steps up, ``S_i`` the running sum of the calibrated ``q`` and ``U ~
   Uniform[0, 1)``: each row takes it with probability ``q_ic`` and ``counts[c]`` rows do.

The last code takes the rows left. Post-processing: the inputs are released values.
"""

from __future__ import annotations

import numpy as np

__all__ = ["draw_with_counts", "rounded_counts"]

_BISECTION_STEPS = 80
"""Halvings of the shift's bracket ``[-1e3, 1e3]``: 80 leave it ``2e3 / 2**80``, below float64's resolution."""


def draw_with_counts(log_probabilities: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """int64[n]: a code per row, row ``i`` drawing from ``softmax(log_probabilities[i])``
    (float64[n, k], finite or ``-inf``) recalibrated so that code ``c`` is drawn by ``counts[c]``
    rows (int64[k], summing to ``n``). Where a code cannot reach its count (its rows' probability
    is 0 or 1 for too many rows) it gets as close as those allow and the last code absorbs the
    difference.

    >>> rng = np.random.default_rng(0)
    >>> logp = np.log(rng.dirichlet(np.ones(3), size=1_000))
    >>> np.bincount(draw_with_counts(logp, np.array([500, 300, 200]), rng), minlength=3)
    array([500, 300, 200])
    """
    n, k = log_probabilities.shape
    counts = np.asarray(counts, dtype=np.int64)
    if counts.shape != (k,) or counts.sum() != n or (counts < 0).any():
        msg = f"counts must be {k} non-negative integers summing to the {n} rows. Got {counts.tolist()}"
        raise ValueError(msg)
    codes = np.full(n, k - 1, dtype=np.int64)
    undrawn = np.arange(n)
    for code in range(k - 1):
        if len(undrawn) == 0:
            break
        own = log_probabilities[undrawn, code]
        rest = np.logaddexp.reduce(log_probabilities[undrawn, code + 1:], axis=1)
        chosen = _systematic(_calibrated(own - rest, int(counts[code])), rng)
        codes[undrawn[chosen]] = code
        undrawn = undrawn[~chosen]
    return codes


def rounded_counts(expected: np.ndarray) -> np.ndarray:
    """int64[k]: ``expected`` (float64[k], non-negative, summing to an integer ``n`` up to
    rounding) rounded to integers summing to ``n``, the largest remainders rounded up.

    >>> rounded_counts(np.array([2.6, 1.3, 1.1]))
    array([3, 1, 1])
    """
    expected = np.clip(np.asarray(expected, dtype=np.float64), 0.0, None)
    counts = np.floor(expected).astype(np.int64)
    missing = int(np.rint(expected.sum())) - int(counts.sum())
    if missing > 0:
        counts[np.argsort(counts - expected, kind="stable")[:missing]] += 1
    return counts


def _calibrated(log_odds: np.ndarray, target: int) -> np.ndarray:
    """float64[m]: ``sigmoid(log_odds + t)`` with ``t`` such that the sum is ``target`` (rows of
    odds ``+-inf`` stay 1 or 0, NaN counts as even; the nearest reachable sum where ``target``
    is not)."""
    certain = np.isposinf(log_odds)
    possible = ~np.isinf(log_odds)  # NaN: no probability left on any code from here on; even odds
    odds = np.where(np.isfinite(log_odds), log_odds, 0.0)
    low, high = -1e3, 1e3
    free = target - int(certain.sum())
    if free <= 0:
        return certain.astype(np.float64)
    if free >= int(possible.sum()):
        return (certain | possible).astype(np.float64)
    for _ in range(_BISECTION_STEPS):
        middle = 0.5 * (low + high)
        if _expit(odds[possible] + middle).sum() < free:
            low = middle
        else:
            high = middle
    q = certain.astype(np.float64)
    q[possible] = _expit(odds[possible] + 0.5 * (low + high))
    return q


def _expit(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _systematic(q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """bool[m]: row ``i`` chosen with probability ``q[i]``, ``round(q.sum())`` rows in all
    (systematic sampling over the rows in a random order)."""
    order = rng.permutation(len(q))
    running = np.cumsum(q[order])
    running *= np.rint(running[-1]) / running[-1] if len(q) and running[-1] > 0 else 1.0
    offset = rng.random()
    steps = np.floor(running + offset)
    chosen = np.empty(len(q), dtype=bool)
    chosen[order] = np.diff(steps, prepend=np.floor(offset)) > 0
    return chosen
