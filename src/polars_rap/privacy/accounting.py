"""Privacy accounting: the (epsilon, delta) <-> rho conversions and the budget split.

The tight conversion of Canonne, Kamath & Steinke (2020, Prop. 12 / Cor. 13) between rho-zCDP
and (epsilon, delta)-DP, computed in log space by bisection; the loose closed form of Bun &
Steinke (2016) that seeds it; and :func:`split_budget`, which shares delta between the zCDP
conversion and delta-approximate mechanisms. Pure functions of public numbers: nothing here
reads data or draws noise. :mod:`polars_rap.privacy.ledger` re-exports every public name.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from polars_rap.errors import ParameterError

__all__ = [
    "BudgetSplit", "delta_from_rho_epsilon", "epsilon_from_rho_delta", "rho_from_epsilon_delta",
    "rho_from_epsilon_delta_loose", "split_budget",
]  # fmt: skip

# log(alpha - 1) is searched inside these bounds: exp() stays finite and alpha - 1 > 0.
_LOG_T_MIN, _LOG_T_MAX = -740.0, 700.0
# Ulps within which libm's exp, log and log1p are taken to be (glibc documents at most 1 on
# x86-64 and aarch64); each is nudged this far in the conservative direction.
_LIBM_ULPS = 2
# Past this epsilon math.exp overflows (e^709.78 is the largest finite float).
_MAX_EXP = 709.0


def _shown(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _float(name: str, value: object, *, below_one: bool = False) -> float:
    """Check a finite float > 0 (and < 1 when ``below_one``); ints and NumPy scalars pass."""
    is_number = isinstance(value, (int, float, np.integer, np.floating))
    number = float(value) if is_number and not isinstance(value, bool) else math.nan
    if not (math.isfinite(number) and number > 0.0 and (number < 1.0 or not below_one)):
        rule = "a float in (0, 1)" if below_one else "a finite float > 0"
        msg = f"The '{name}' parameter must be {rule}. Got {_shown(value)!r}."
        raise ParameterError(msg)
    return number


def _int_at_least(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        msg = f"The '{name}' parameter must be an int >= {minimum}. Got {_shown(value)!r}."
        raise ParameterError(msg)
    return int(value)


def _bisect(is_low: Callable[[float], bool], low: float, high: float) -> tuple[float, float]:
    """Shrink [low, high], with is_low(low) and not is_low(high), to adjacent floats."""
    while (middle := low + 0.5 * (high - low)) > low and middle < high:
        if is_low(middle):
            low = middle
        else:
            high = middle
    return low, high


# ---------------------------------------------------------------- epsilon, delta <-> rho


def _down(value: float, n_ulps: int = _LIBM_ULPS) -> float:
    for _ in range(n_ulps):
        value = math.nextafter(value, -math.inf)
    return value


def _up(value: float, n_ulps: int = _LIBM_ULPS) -> float:
    for _ in range(n_ulps):
        value = math.nextafter(value, math.inf)
    return value


def _log_objective_bound(t: float, rho: float, epsilon: float) -> float:
    """A float >= g(t), the log of the CKS20 objective at alpha = 1 + t (t a float > 0).

    g(t) = t((1+t) rho - eps) - t log1p(1/t) - log1p(t): no term cancels another, whatever t.
    The first term is exact in rationals; each logarithm is bounded from below (1/t rounded
    down, then log1p taken ``_LIBM_ULPS`` ulps down), and the sum is rounded up.
    """
    exact_term = Fraction(t) * ((1 + Fraction(t)) * Fraction(rho) - Fraction(epsilon))
    inverse_low = math.nextafter(1.0 / t, 0.0)  # below 1/t; the largest float when 1/t overflows
    logarithms_low = Fraction(t) * Fraction(_down(math.log1p(inverse_low))) + Fraction(_down(math.log1p(t)))
    bound = exact_term - logarithms_low
    rounded = float(bound)  # correctly rounded
    return math.nextafter(rounded, math.inf) if Fraction(rounded) < bound else rounded


def _log_delta(rho: float, epsilon: float) -> float:
    """An upper bound on the log of the tight delta of rho-zCDP at epsilon (inputs validated).

    With t = alpha - 1 the log of the CKS20 objective is g(t) = t((1+t) rho - eps) + t log t
    - (1+t) log1p(t) = t((1+t) rho - eps) - t log1p(1/t) - log1p(t); the second form has no
    cancellation at large t (t log t and (1+t) log1p(t) agree to many digits there, and their
    float difference lost up to ~6e-11 of delta at eps = 1e-3, delta = 1e-12). g is strictly
    convex (g'' = 2 rho + 1/(t(1+t)) > 0) and g'(t) = (2t+1) rho - eps - log1p(1/t), so
    bisection on the sign of g' over u = log t finds the minimiser. Every alpha > 1 gives a
    valid bound: an inexact minimiser can only make delta larger (conservative), never
    smaller; :func:`_log_objective_bound` makes the value at the chosen t an upper bound too.
    """

    def slope_is_negative(u: float) -> bool:
        t = math.exp(u)
        return (2.0 * t + 1.0) * rho - epsilon - math.log1p(1.0 / t) < 0.0

    low, high = -1.0, 1.0
    while not slope_is_negative(low) and low > _LOG_T_MIN:
        low = max(2.0 * low, _LOG_T_MIN)
    while slope_is_negative(high) and high < _LOG_T_MAX:
        high = min(2.0 * high, _LOG_T_MAX)
    low, high = _bisect(slope_is_negative, low, high)
    bounds = (_log_objective_bound(math.exp(u), rho, epsilon) for u in (low, high))
    return min(*bounds, 0.0)  # (eps, 1)-DP always holds


def _delta_bound(rho: float, epsilon: float) -> float:
    """A float >= the tight delta (exp rounded up; 1.0 when the objective says nothing)."""
    log_delta = _log_delta(rho, epsilon)
    return 1.0 if log_delta >= 0.0 else min(_up(math.exp(log_delta)), 1.0)


def delta_from_rho_epsilon(rho: float, epsilon: float) -> float:
    """Tight delta such that rho-zCDP implies (epsilon, delta)-DP.

    Canonne, Kamath & Steinke (2020), Prop. 12 / Cor. 13, computed in log space::

        delta = inf_{alpha > 1} exp((alpha-1)(alpha rho - eps)) / (alpha-1) * (1 - 1/alpha)^alpha

    Parameters
    ----------
    rho, epsilon : float
        Finite, > 0.

    Returns
    -------
    float
        delta in [0, 1]: never below the exact infimum (the rounding of every step is bounded
        and taken upwards), above it by a few ulps of log(delta) at most.

    Examples
    --------
    >>> round(delta_from_rho_epsilon(0.014973, 1.0) / 1e-9, 3)
    1.0
    """
    return _delta_bound(_float("rho", rho), _float("epsilon", epsilon))


def rho_from_epsilon_delta_loose(epsilon: float, delta: float) -> float:
    """The rho solving epsilon = rho + 2 sqrt(rho log(1/delta)) (Bun & Steinke 2016).

    Valid but looser than :func:`rho_from_epsilon_delta`. Solved as sqrt(rho) =
    eps / (sqrt(L) + sqrt(L + eps)), L = log(1/delta), to avoid cancellation.

    Examples
    --------
    >>> round(rho_from_epsilon_delta_loose(1.0, 1e-9), 6)
    0.011781
    """
    epsilon = _float("epsilon", epsilon)
    log_inverse_delta = -math.log(_float("delta", delta, below_one=True))
    root = epsilon / (math.sqrt(log_inverse_delta) + math.sqrt(log_inverse_delta + epsilon))
    return root * root


def rho_from_epsilon_delta(epsilon: float, delta: float) -> float:
    """Largest rho such that rho-zCDP implies (epsilon, delta)-DP (tight conversion).

    Bisection on rho, started from the loose rho (always admissible; the least positive float
    where it underflows, at epsilon below about 1e-160); the returned float satisfies
    ``delta_from_rho_epsilon(rho, epsilon) <= delta`` exactly as computed, and that computed delta
    is an upper bound on the exact one, so the exact delta is at most ``delta``. A ParameterError
    where no positive float rho is admissible (epsilon and delta both tiny).

    Parameters
    ----------
    epsilon : float
        Finite, > 0.
    delta : float
        In (0, 1).

    Returns
    -------
    float
        rho > 0.

    Examples
    --------
    >>> round(rho_from_epsilon_delta(1.0, 1e-9), 6)
    0.014973
    """
    epsilon = _float("epsilon", epsilon)
    delta = _float("delta", delta, below_one=True)

    def admissible(rho: float) -> bool:  # as delta_from_rho_epsilon returns it
        return _delta_bound(rho, epsilon) <= delta

    # the loose rho ~ eps^2 / (4 log(1/delta)) underflows at a tiny epsilon, where the tight one need
    # not (near epsilon = 0 delta covers rho's total variation): start from the least float then
    low = rho_from_epsilon_delta_loose(epsilon, delta) or math.ulp(0.0)
    while low > 0.0 and not admissible(low):  # only if rounding broke the loose bound, or at the least float
        low *= 0.5
    if low == 0.0:
        msg = (f"The 'epsilon' parameter is too small for its delta: at epsilon = {epsilon!r} and delta = {delta!r} "
               "the zCDP budget is below the least positive float, so no mechanism can be charged. Use a larger "
               "epsilon or delta.")
        raise ParameterError(msg)
    high = 2.0 * low
    while admissible(high):
        low, high = high, 2.0 * high
    return _bisect(admissible, low, high)[0]


def epsilon_from_rho_delta(rho: float, delta: float) -> float:
    """Smallest epsilon such that rho-zCDP implies (epsilon, delta)-DP (tight conversion).

    Bisection on epsilon below the loose rho + 2 sqrt(rho log(1/delta)); the returned
    epsilon's computed delta is at or below the target.

    Examples
    --------
    >>> round(epsilon_from_rho_delta(0.014973, 1e-9), 4)
    1.0
    """
    rho = _float("rho", rho)
    delta = _float("delta", delta, below_one=True)

    def inadmissible(epsilon: float) -> bool:
        return _delta_bound(rho, epsilon) > delta

    high = rho + 2.0 * math.sqrt(-rho * math.log(delta))
    while inadmissible(high):
        high *= 2.0
    return 0.0 if not inadmissible(0.0) else _bisect(inadmissible, 0.0, high)[1]


@dataclass(frozen=True, slots=True)
class BudgetSplit:
    """How an (epsilon, delta) guarantee is shared between zCDP and approximate mechanisms.

    ``rho`` is the zCDP budget whose tight conversion at ``epsilon`` gives
    ``conversion_delta``; ``approximate_delta`` is the ledger's ``delta_budget``: the summed
    total-variation slack of delta-approximate events. They compose to ``(epsilon, delta)``
    with ``conversion_delta + (1 + e^epsilon) * approximate_delta <= delta``.
    """

    epsilon: float
    delta: float
    rho: float
    conversion_delta: float
    approximate_delta: float


def split_budget(epsilon: float, delta: float, approximate_share: float = 0.0) -> BudgetSplit:
    """Share ``delta`` between the zCDP conversion and delta-approximate mechanisms.

    Why the factor ``1 + e^epsilon``: let M be the whole run and, for a neighbouring pair
    (x, x'), let M~ be the run whose approximate steps behave as their rho-zCDP counterparts
    (e.g. thresholded counts that never release a key present in only one of x, x'). M~ is
    rho-zCDP, hence (epsilon, conversion_delta)-DP, and M differs from M~ in total variation
    by at most ``a = approximate_delta`` on x and on x' (union bound over the steps). So for
    every event S (the returned split satisfies the last line exactly, in real numbers)::

        P[M(x) in S] <= P[M~(x) in S] + a <= e^eps P[M~(x') in S] + conversion_delta + a
                     <= e^eps P[M(x') in S] + conversion_delta + (1 + e^eps) a

    Parameters
    ----------
    epsilon : float
        Finite, > 0.
    delta : float
        In (0, 1).
    approximate_share : float
        Part of ``delta`` given to approximate mechanisms, in [0, 1); 0 gives all of it to the
        conversion (pure zCDP runs).

    Examples
    --------
    >>> split = split_budget(1.0, 1e-9)
    >>> split.approximate_delta, round(split.rho, 6)
    (0.0, 0.014973)
    >>> split = split_budget(1.0, 1e-9, approximate_share=0.5)
    >>> split.conversion_delta + (1 + math.e) * split.approximate_delta <= 1e-9
    True
    """
    epsilon = _float("epsilon", epsilon)
    delta = _float("delta", delta, below_one=True)
    if isinstance(approximate_share, bool) or not (0.0 <= approximate_share < 1.0):
        msg = f"The 'approximate_share' parameter must be in [0, 1). Got {approximate_share!r}."
        raise ParameterError(msg)
    if approximate_share == 0.0:
        return BudgetSplit(epsilon, delta, rho_from_epsilon_delta(epsilon, delta), delta, 0.0)
    if epsilon > _MAX_EXP:  # e^epsilon overflows: delta / (1 + e^epsilon) is 0 in floats, all goes to rho
        return BudgetSplit(epsilon, delta, rho_from_epsilon_delta(epsilon, delta), delta, 0.0)
    conversion_delta = delta * (1.0 - approximate_share)
    # An upper bound on the real 1 + e^eps (math.exp is within an ulp), so that the check
    # below, done in exact rational arithmetic, proves the real-number inequality.
    factor = math.nextafter(1.0 + math.nextafter(math.exp(epsilon), math.inf), math.inf)
    # Share what conversion_delta's rounding left, not delta * share: an ulp of delta lost in
    # that rounding would take ~1/share one-ulp steps of approximate_delta to win back.
    approximate_delta = math.fsum([delta, -conversion_delta]) / factor
    while Fraction(conversion_delta) + Fraction(factor) * Fraction(approximate_delta) > Fraction(delta):
        approximate_delta = math.nextafter(approximate_delta, 0.0)  # at most a few steps
    rho = rho_from_epsilon_delta(epsilon, conversion_delta)
    return BudgetSplit(epsilon, delta, rho, conversion_delta, approximate_delta)
