"""Exact top-k selection: k peeling exponential mechanisms, sampled without floating point.

One-shot Gumbel top-k with scale b has the same law as k exponential mechanisms applied in
turn to the candidates not yet taken (the Plackett-Luce law with weights exp(s_i / b)). This
module samples that law *exactly*, so no floating-point Gumbel variate is ever drawn:

* the utilities are the float64 scores taken as the exact rationals they are, and the
  parameter is ``epsilon`` (a float, an exact rational): candidate i has weight
  exp(-gamma_i), gamma_i = epsilon (s_max - s_i) / (2 Delta1), an exact rational >= 0;
* **proposal**: candidate i is proposed with probability proportional to 2**-h_i, an exact
  rational (integer weights, a uniform integer picks one), where h_i is an integer with
  h_i ln 2 <= gamma_i, taken from a float estimate of gamma_i / ln 2 minus one (float64's
  relative error, below 2**-50, cannot push it past the true floor), gamma_i measured from
  the best candidate left. Candidates with h_i above 128 share the weight 2**-128 each (a
  rational upper bound of their weights), so the integers stay short whatever the spread;
* **acceptance**: with probability 2**h_i exp(-gamma_i) = exp(-(gamma_i - h_i ln 2)), by
  Canonne-Kamath-Steinke's Bernoulli(exp(-x)) (:func:`polars_rap.privacy.samplers.bernoulli_exp`'s
  method) whose coins Bernoulli(x / k) compare a uniform with exact integer bounds of x
  (ln 2 from a series with a rigorous remainder; more bits are read until the comparison
  is decided). A proposal outside the shared tail is accepted with probability at least
  1/8, and the tail is proposed with probability under n 2**-128, so a draw costs a few
  proposals whatever the number of candidates (about 3 ms for k = 10 of 20,000).

A proposed and accepted candidate therefore comes out with probability exactly proportional
to exp(-gamma_i); it is removed and the next draw runs on the rest.

Examples
--------
>>> import numpy as np
>>> from polars_rap.privacy.samplers import seeded_words
>>> scores = np.array([0.0, 50.0, 1.0, 40.0])
>>> exponential_top_k(scores, 2, 1.0, 10.0, seeded_words(np.random.default_rng(0))).tolist()
[1, 3]
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from polars_rap.privacy.samplers import RandomWords, bernoulli_constant, log2_bounds

__all__ = ["exponential_top_k", "selection_epsilon"]

_TAIL_SPAN = 128  # proposal buckets kept apart above the smallest h; the rest share one


def selection_epsilon(rho: float, k: int) -> float:
    """epsilon' of each of ``k`` peeling exponential mechanisms spending ``rho`` zCDP in all.

    Each is epsilon'-DP and, having bounded range, epsilon'^2 / 8-zCDP (Cesar & Rogers 2021),
    so k epsilon'^2 / 8 <= rho. Returned: the largest float with k epsilon'^2 / 8 <= rho in
    exact rational arithmetic (``sqrt(8 rho / k)`` or the float just below it).

    Examples
    --------
    >>> selection_epsilon(0.01, 10) == 0.08944271909999159
    True
    """
    epsilon = math.sqrt(8.0 * rho / k)
    while epsilon > 0.0 and k * Fraction(epsilon) ** 2 > 8 * Fraction(rho):
        epsilon = math.nextafter(epsilon, 0.0)
    return epsilon


def exponential_top_k(scores: np.ndarray, k: int, l1_sensitivity: float, epsilon: float,
                      words: RandomWords) -> np.ndarray:
    """Indices of ``k`` candidates drawn one after another without replacement, each with
    probability proportional to exp(epsilon s_i / (2 l1_sensitivity)) among those left.

    Parameters
    ----------
    scores : float64[n_candidates]
        Finite utilities, taken exactly as the rationals they are.
    k : int
        Draws, 1 <= k <= n_candidates.
    l1_sensitivity : float
        Delta1 of every score (> 0).
    epsilon : float
        epsilon' of each draw (> 0).
    words : RandomWords

    Returns
    -------
    int64[k]
        In draw order.
    """
    scores = np.asarray(scores, dtype=np.float64)
    rate = Fraction(epsilon) / (2 * Fraction(l1_sensitivity))  # gamma_i = rate (top - s_i)
    left = np.arange(len(scores), dtype=np.int64)
    chosen: list[int] = []
    while len(chosen) < k:
        # The law is the same for any shift of the scores: measure gamma from the best left,
        # whose height is then 0; heights above _TAIL_SPAN share one proposal weight.
        left_scores = scores[left]
        top = float(left_scores.max())
        levels_of_left = _heights(left_scores, top, epsilon, l1_sensitivity)
        levels, counts = np.unique(levels_of_left, return_counts=True)
        weights = [int(count) << (_TAIL_SPAN - int(level))
                   for level, count in zip(levels, counts, strict=True)]
        top_fraction = Fraction(top)
        while True:
            position = words.below(sum(weights))
            for level, weight in zip(levels.tolist(), weights, strict=True):
                if position < weight:
                    break
                position -= weight
            members = np.flatnonzero(levels_of_left == level)
            slot = int(members[words.below(len(members))])
            gamma = rate * (top_fraction - Fraction(float(left_scores[slot])))
            if _bernoulli_exp_minus_log2(gamma, level, words):
                break
        chosen.append(int(left[slot]))
        left = np.delete(left, slot)
    return np.asarray(chosen, dtype=np.int64)


def _heights(scores: np.ndarray, top: float, epsilon: float, l1_sensitivity: float) -> np.ndarray:
    """int64[n]: h_i = floor(gamma_i / ln 2) - 1 from float64 (at least 0, at most _TAIL_SPAN).

    The float quotient carries five roundings (relative error below 2**-50), so while it is
    under 2**50 its floor is at most one above the true floor; minus one, h_i ln 2 <= gamma_i
    holds exactly. Larger values (and overflow) only reach the cap, far below the truth.
    """
    with np.errstate(over="ignore"):
        estimate = (epsilon * (top - scores)) / (2.0 * l1_sensitivity) / math.log(2.0)
    estimate = np.minimum(estimate, float(_TAIL_SPAN) + 1.0)  # inf, too
    return np.clip(np.floor(estimate) - 1.0, 0.0, float(_TAIL_SPAN)).astype(np.int64)


def _bernoulli_exp_minus_log2(gamma: Fraction, height: int, words: RandomWords) -> bool:
    """True with probability exp(-(gamma - height ln 2)), which must be <= 1 (checked).

    x = gamma - height ln 2 is split into m equal parts of at most 1 and each part runs CKS
    Algorithm 1: coins Bernoulli(x / (m j)) for j = 1, 2, ... until the first False; the part
    passes when that j is odd. The coins compare a uniform with integer bounds of x.
    """
    p, q = gamma.numerator, gamma.denominator

    def x_bounds(bits: int, divisor: int) -> tuple[int, int]:
        """(lo, hi) with lo <= x * 2**bits / divisor <= hi."""
        if height == 0:
            return (p << bits) // (q * divisor), -((-(p << bits)) // (q * divisor))
        extra = height.bit_length() + 2
        log_lo, log_hi = log2_bounds(bits + extra)  # ln 2 * 2**(bits + extra)
        scaled = (p << (bits + extra))
        lo = (scaled - q * height * log_hi) // (q * divisor << extra)
        hi = -((-(scaled - q * height * log_lo)) // (q * divisor << extra))
        return lo, hi

    high = x_bounds(0, 1)[1]
    bits = 0
    while True:  # x >= 0 must hold (h ln 2 <= gamma); x is irrational when h > 0, so this ends
        lo, hi = x_bounds(bits, 1)
        if lo >= 0:
            break
        if hi < 0:
            msg = "internal error: a candidate's proposal weight is below its own weight"
            raise RuntimeError(msg)
        bits += 64
    parts = max(1, high)  # x <= high, so x / parts <= 1
    for _ in range(parts):
        j = 1
        while bernoulli_constant(lambda bits, d=parts * j: _clip(x_bounds(bits, d), bits), words):
            j += 1
        if j % 2 == 0:
            return False
    return True


def _clip(bounds: tuple[int, int], bits: int) -> tuple[int, int]:
    """Bounds of a probability, clipped to [0, 2**bits]."""
    lo, hi = bounds
    return max(lo, 0), min(hi, 1 << bits)
