"""The privacy ledger and the two noise mechanisms of RAP++, under zero-concentrated DP.

Defines the :class:`PrivacyLedger` every mechanism charges *before* it releases anything, the
Gaussian mechanism used to measure query groups and the one-shot Gumbel top-K used to select
them. Neighbouring datasets differ by replacing one row; n is public. The (epsilon, delta)
<-> rho conversions and the budget split live in :mod:`polars_rap.accounting` and are
re-exported here, so ``from polars_rap.privacy import split_budget`` keeps working.

The samplers are floating-point (NumPy's Gaussian and Gumbel); such samplers are attackable in
principle (Mironov 2012) until a discrete sampler replaces them. A fixed seed is for
reproducible research and tests, never for real releases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from polars_rap.accounting import (
    BudgetSplit,
    _float,
    _int_at_least,
    delta_from_rho_epsilon,
    epsilon_from_rho_delta,
    rho_from_epsilon_delta,
    rho_from_epsilon_delta_loose,
    split_budget,
)

__all__ = [
    "BudgetExceededError", "BudgetSplit", "PrivacyEvent", "PrivacyLedger",
    "delta_from_rho_epsilon", "epsilon_from_rho_delta", "gaussian_mechanism",
    "gaussian_noise_std", "gumbel_scale", "gumbel_top_k", "rho_from_epsilon_delta",
    "rho_from_epsilon_delta_loose", "split_budget",
]  # fmt: skip

# The correctly rounded remainder lies within half its ulp of the exact one, so the float that
# closes the budget, when one exists, is at most a step or two away.
_NUDGES = 4


def _finite_vector(name: str, values: object) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        msg = f"The '{name}' parameter must be a 1-D float64 array. Got {array.ndim} dimensions."
        raise ValueError(msg)
    if not np.all(np.isfinite(array)):
        # Never echo the offending entries: they are computed from the private data.
        msg = f"The '{name}' parameter must hold only finite values; map NaN/inf before this call."
        raise ValueError(msg)
    return array


def _generator(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        msg = f"The 'rng' parameter must be a numpy.random.Generator. Got {type(rng).__name__}."
        raise TypeError(msg)
    return rng


# ---------------------------------------------------------------- ledger


@dataclass(frozen=True, slots=True)
class PrivacyEvent:
    """One charge to the ledger: a mechanism that spent ``rho`` of zCDP budget.

    Parameters
    ----------
    mechanism : str
        E.g. ``"gaussian"``, ``"gumbel_top_k"``.
    rho : float
        zCDP cost, finite and > 0.
    description : str
        Free text shown in the report; must hold only public or charged values.
    round : int or None
        RAP++ round, or None outside the loop.
    delta : float
        For a delta-approximately rho-zCDP mechanism (e.g. thresholded counts over the data's
        own values): a bound on the total variation distance between it and a rho-zCDP one
        on every input. 0.0 for pure zCDP mechanisms.
    """

    mechanism: str
    rho: float
    description: str
    round: int | None = None
    delta: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.mechanism, str) or not self.mechanism:
            msg = f"The 'mechanism' parameter must be a non-empty str. Got {self.mechanism!r}."
            raise ValueError(msg)
        if not isinstance(self.description, str):
            kind = type(self.description).__name__
            msg = f"The 'description' parameter must be a str. Got {kind}."
            raise ValueError(msg)
        object.__setattr__(self, "rho", _float("rho", self.rho))
        if self.round is not None:
            object.__setattr__(self, "round", _int_at_least("round", self.round, 0))
        if self.delta != 0.0:
            object.__setattr__(self, "delta", _float("delta", self.delta, below_one=True))


class BudgetExceededError(ValueError):
    """A charge would bring the total zCDP spent above the ledger's budget; nothing recorded."""


class PrivacyLedger:
    """The one mutable privacy object: a zCDP budget and the events charged against it.

    Charges compose additively (zCDP). The total is ``math.fsum`` of the charges, which never
    exceeds ``rho_budget``: :meth:`charge` checks the whole event and refuses before recording.
    Events of delta-approximate mechanisms also draw on ``delta_budget`` (their ``delta``
    fields add up, by a union bound over the events where they may differ from a zCDP
    mechanism); see :func:`split_budget` for the (epsilon, delta) statement this composes to.

    Parameters
    ----------
    rho_budget : float
        Total zCDP budget, finite and > 0 (e.g. from :func:`rho_from_epsilon_delta`).
    delta_budget : float
        Total delta of approximate events, in [0, 1); 0.0 (the default) admits none.
    """

    __slots__ = ("_rho_budget", "_delta_budget", "_events")

    def __init__(self, rho_budget: float, delta_budget: float = 0.0) -> None:
        self._rho_budget = _float("rho_budget", rho_budget)
        self._delta_budget = 0.0 if delta_budget == 0.0 else _float(
            "delta_budget", delta_budget, below_one=True
        )
        self._events: list[PrivacyEvent] = []

    def __repr__(self) -> str:
        return (
            f"PrivacyLedger(rho_budget={self._rho_budget!r}, rho_spent={self.rho_spent!r}, "
            f"delta_budget={self._delta_budget!r}, delta_spent={self.delta_spent!r}, "
            f"n_events={len(self._events)})"
        )

    @property
    def rho_budget(self) -> float:
        """Total zCDP budget."""
        return self._rho_budget

    @property
    def rho_spent(self) -> float:
        """``math.fsum`` of all recorded charges."""
        return math.fsum(event.rho for event in self._events)

    @property
    def delta_budget(self) -> float:
        """Total delta the approximate events may use."""
        return self._delta_budget

    @property
    def delta_spent(self) -> float:
        """``math.fsum`` of the recorded events' ``delta``."""
        return math.fsum(event.delta for event in self._events)

    @property
    def rho_remaining(self) -> float:
        """What is left, ``rho_budget - rho_spent`` (never negative), as the float that closes it.

        Charging exactly this amount is accepted and brings ``rho_spent`` to ``rho_budget`` to
        the last float, so the last step of a run can take it directly (see
        :meth:`charge_remaining`). 0.0 once ``rho_spent == rho_budget``.
        """
        return self._closing_rho()

    @property
    def events(self) -> tuple[PrivacyEvent, ...]:
        """The recorded events, oldest first (a copy)."""
        return tuple(self._events)

    def _total_with(self, rho: float) -> float:
        return math.fsum([*(event.rho for event in self._events), rho])

    def charge(self, event: PrivacyEvent) -> None:
        """Record ``event`` if the budget allows it; otherwise raise and record nothing.

        Raises
        ------
        BudgetExceededError
            If ``fsum(charges + [event.rho]) > rho_budget`` or the events' deltas would sum
            above ``delta_budget``.
        """
        if not isinstance(event, PrivacyEvent):
            msg = f"The 'event' parameter must be a PrivacyEvent. Got {type(event).__name__}."
            raise TypeError(msg)
        total = self._total_with(event.rho)
        if total > self._rho_budget:
            msg = (
                f"charging rho={event.rho!r} for {event.mechanism} ({event.description!r}) would "
                f"bring the total to {total!r}, above rho_budget={self._rho_budget!r} "
                f"(spent {self.rho_spent!r}, remaining {self.rho_remaining!r}); "
                "nothing was charged."
            )
            raise BudgetExceededError(msg)
        delta_total = math.fsum([*(e.delta for e in self._events), event.delta])
        if delta_total > self._delta_budget:
            msg = (
                f"charging delta={event.delta!r} for {event.mechanism} ({event.description!r}) "
                f"would bring the approximate delta to {delta_total!r}, above "
                f"delta_budget={self._delta_budget!r}; nothing was charged."
            )
            raise BudgetExceededError(msg)
        self._events.append(event)

    def remaining_share(self, n_parts: int) -> float:
        """``rho_remaining / n_parts``: an even split of what is left over ``n_parts`` steps."""
        return self.rho_remaining / _int_at_least("n_parts", n_parts, 1)

    def charge_remaining(
        self, mechanism: str, description: str, round: int | None = None
    ) -> float:
        """Charge exactly :attr:`rho_remaining`, so that the fsum of all charges equals the budget.

        Returns
        -------
        float
            The rho charged.

        Raises
        ------
        BudgetExceededError
            If nothing positive remains.
        """
        rho = self._closing_rho()
        if rho <= 0.0:
            msg = (
                f"no budget remains to charge for {mechanism} ({description!r}): "
                f"rho_spent={self.rho_spent!r} of rho_budget={self._rho_budget!r}."
            )
            raise BudgetExceededError(msg)
        self.charge(PrivacyEvent(mechanism, rho, description, round))
        return rho

    def _closing_rho(self) -> float:
        """The last charge that spends the budget to the last float (0.0 if none fits).

        The candidates are the correctly rounded ``budget - sum(charges)`` and its neighbours a
        few floats away. Among those whose fsum with the earlier charges is at most the budget,
        the preference is: an fsum equal to the budget; then an exact (real-number) total at or
        below the budget; then the total closest to the budget. An fsum equal to the budget is
        out of reach only in a rounding tie (the remainder in the budget's binade, the earlier
        charges ending on half an ulp of it, the budget's last bit odd): it then ends one ulp
        below the budget.
        """
        charges = [event.rho for event in self._events]
        if math.fsum(charges) >= self._rho_budget:
            return 0.0
        remainder = math.fsum([self._rho_budget, *(-rho for rho in charges)])
        candidates = [remainder]
        for direction in (0.0, math.inf):
            rho = remainder
            for _ in range(_NUDGES):
                rho = math.nextafter(rho, direction)
                candidates.append(rho)

        def preference(rho: float) -> tuple[bool, bool, float]:
            exact_total_fits = math.fsum([*charges, rho, -self._rho_budget]) <= 0.0  # exact sign
            closeness = rho if exact_total_fits else -rho
            return self._total_with(rho) == self._rho_budget, exact_total_fits, closeness

        budget = self._rho_budget
        fitting = [rho for rho in candidates if rho > 0.0 and self._total_with(rho) <= budget]
        return max(fitting, key=preference, default=0.0)


# ---------------------------------------------------------------- mechanisms


def gaussian_noise_std(l2_sensitivity: float, rho: float) -> float:
    """Noise std of the rho-zCDP Gaussian mechanism: ``l2_sensitivity / sqrt(2 rho)``.

    Examples
    --------
    >>> gaussian_noise_std(1.0, 0.5)
    1.0
    """
    l2_sensitivity = _float("l2_sensitivity", l2_sensitivity)
    return l2_sensitivity / math.sqrt(2.0 * _float("rho", rho))


def gaussian_mechanism(
    values: np.ndarray,
    l2_sensitivity: float,
    rho: float,
    ledger: PrivacyLedger,
    rng: np.random.Generator,
    description: str = "",
    round: int | None = None,
) -> tuple[np.ndarray, float]:
    """Release one group of query answers with Gaussian noise, charging ``rho`` first.

    Parameters
    ----------
    values : float64[m]
        True answers of one query group (read the real data).
    l2_sensitivity : float
        L2 sensitivity of the whole vector (replace-one: 1/n for one query, sqrt(2)/n for all
        cells of a marginal).
    rho : float
        zCDP cost, charged to ``ledger`` as a ``"gaussian"`` event before any noise is drawn.
    ledger : PrivacyLedger
    rng : numpy.random.Generator
    description : str, optional
    round : int or None, optional

    Returns
    -------
    noisy : float64[m]
        ``values + N(0, std^2)``, independent per entry.
    std : float
        The noise std, ``l2_sensitivity / sqrt(2 rho)`` (public).
    """
    array = _finite_vector("values", values)
    std = gaussian_noise_std(l2_sensitivity, rho)
    rng = _generator(rng)
    ledger.charge(PrivacyEvent("gaussian", rho, description, round))
    return array + rng.normal(0.0, std, size=array.shape), std


def gumbel_scale(l1_sensitivity: float, rho: float, k: int) -> float:
    """Gumbel noise scale b for one-shot top-k selection that is rho-zCDP in total.

    One-shot top-k with Gumbel(b) noise equals k peeling exponential mechanisms; each is
    eps'-DP with b = 2 Delta1 / eps' and, having bounded range, eps'^2/8-zCDP (Cesar & Rogers
    2021). Spending rho over k of them, k eps'^2 / 8 = rho, so eps' = sqrt(8 rho / k) and::

        b = 2 Delta1 / eps' = Delta1 sqrt(k / (2 rho))

    The factor 2 stays because the L1-error scores do not all move in one direction. The
    paper's Def. 9 as printed, Gumbel(K / sqrt(2 rho n)), is off: with Delta1 = 1/n it should
    read sqrt(K / (2 rho)) / n (K under the root, n outside it). The public reference code's
    sqrt(2)/n is an L2 figure for this L1 score and under-noises; this derivation is not copied.

    Parameters
    ----------
    l1_sensitivity : float
        Delta1 of each score (the largest one when groups differ): 1/n for a single query's L1
        error, 2/n for a whole marginal's, under replace-one.
    rho : float
        zCDP budget of the whole selection.
    k : int
        Number of candidates selected, >= 1.

    Examples
    --------
    n = 1000, a marginal (Delta1 = 2/n), rho = 0.01, k = 10: eps' = sqrt(0.008) = 0.0894427,
    b = 0.004 / 0.0894427 = 0.0447214.

    >>> round(gumbel_scale(2 / 1000, 0.01, 10), 7)
    0.0447214
    """
    l1_sensitivity = _float("l1_sensitivity", l1_sensitivity)
    rho = _float("rho", rho)
    return l1_sensitivity * math.sqrt(_int_at_least("k", k, 1) / (2.0 * rho))


def gumbel_top_k(
    scores: np.ndarray,
    k: int,
    l1_sensitivity: float,
    rho: float,
    ledger: PrivacyLedger,
    rng: np.random.Generator,
    description: str = "",
    round: int | None = None,
) -> np.ndarray:
    """Select k candidates by one-shot report-noisy-top-k with Gumbel noise (rho-zCDP).

    Charges ``rho`` (a ``"gumbel_top_k"`` event) first, adds Gumbel noise of scale
    :func:`gumbel_scale` to each score, and releases only the indices of the k largest noisy
    scores; the noisy scores are neither returned nor kept. If ``k >= n_candidates`` every index
    is returned and nothing is charged: selecting everything does not depend on the data, so it
    reveals nothing.

    Parameters
    ----------
    scores : float64[n_candidates]
        L1 error of each candidate group (reads the real data).
    k : int
        Number to select, >= 1.
    l1_sensitivity : float
        Delta1 of every score (the largest when they differ).
    rho : float
        zCDP cost of the selection.
    ledger : PrivacyLedger
    rng : numpy.random.Generator
    description : str, optional
    round : int or None, optional

    Returns
    -------
    int64[min(k, n_candidates)]
        Selected indices, in decreasing noisy-score order (sorted ascending when all are taken).
    """
    array = _finite_vector("scores", scores)
    scale = gumbel_scale(l1_sensitivity, rho, k)
    rng = _generator(rng)
    event = PrivacyEvent("gumbel_top_k", rho, description, round)  # validates before any work
    n_candidates = array.shape[0]
    if k >= n_candidates:
        return np.arange(n_candidates, dtype=np.int64)
    ledger.charge(event)
    noisy = array + rng.gumbel(0.0, scale, size=n_candidates)
    top = np.argpartition(-noisy, k - 1)[:k]
    return top[np.argsort(-noisy[top], kind="stable")].astype(np.int64)
