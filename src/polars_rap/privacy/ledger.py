"""The privacy ledger and the two noise mechanisms of RAP++, under zero-concentrated DP.

Defines the :class:`PrivacyLedger` every mechanism charges *before* it releases anything, the
Gaussian mechanism used to measure query groups and the one-shot Gumbel top-K used to select
them. Neighbouring datasets differ by replacing one row; n is public. The (epsilon, delta)
<-> rho conversions and the budget split live in :mod:`polars_rap.privacy.accounting` and are
re-exported here, so ``from polars_rap.privacy.ledger import split_budget`` keeps working.

Both mechanisms are sampled *exactly*, with no floating-point noise (:mod:`polars_rap.privacy.samplers`,
:mod:`polars_rap.privacy.selection`): the Gaussian mechanism adds discrete Gaussian noise to the
integer counts behind the answers (Canonne, Kamath & Steinke 2020), and the top-K draws the
Gumbel top-K law as K exact peeling exponential mechanisms. ``rng`` is a
:class:`~polars_rap.privacy.samplers.SecureRandom` (the OS's cryptographic source: real releases) or a
seeded :class:`numpy.random.Generator` (reproducible research and tests, **not secure**).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from polars_rap.privacy.accounting import BudgetSplit, _float, _int_at_least, delta_from_rho_epsilon, epsilon_from_rho_delta, rho_from_epsilon_delta, rho_from_epsilon_delta_loose, split_budget
from polars_rap.privacy.samplers import discrete_gaussian, words_from
from polars_rap.privacy.selection import exponential_top_k, selection_epsilon

__all__ = [
    "BudgetExceededError", "BudgetSplit", "PrivacyEvent", "PrivacyLedger", "closing_charge",
    "delta_from_rho_epsilon", "discrete_gaussian_noise", "discrete_gaussian_sigma2",
    "epsilon_from_rho_delta", "gaussian_mechanism", "gaussian_noise_std", "gumbel_scale",
    "gumbel_top_k", "rho_from_epsilon_delta", "rho_from_epsilon_delta_loose", "split_budget",
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

    __slots__ = ("_rho_budget", "_delta_budget", "_events", "_rho_partials", "_delta_partials", "_reserved")

    def __init__(self, rho_budget: float, delta_budget: float = 0.0) -> None:
        self._rho_budget = _float("rho_budget", rho_budget)
        self._delta_budget = 0.0 if delta_budget == 0.0 else _float(
            "delta_budget", delta_budget, below_one=True
        )
        self._events: list[PrivacyEvent] = []
        # The charges' exact sums, kept as a few non-overlapping floats (see _add_exactly): any
        # fsum over them and other floats equals the fsum over every charge and those floats, so
        # a charge costs O(1) however many events came before it (a list of them cost O(events)).
        self._rho_partials: list[float] = []
        self._delta_partials: list[float] = []
        self._reserved = 0.0  # held back for a later release (reserve): charges and rho_remaining leave it

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
        return math.fsum(self._rho_partials)

    @property
    def delta_budget(self) -> float:
        """Total delta the approximate events may use."""
        return self._delta_budget

    @property
    def delta_spent(self) -> float:
        """``math.fsum`` of the recorded events' ``delta``."""
        return math.fsum(self._delta_partials)

    @property
    def rho_remaining(self) -> float:
        """What is left, ``rho_budget - rho_spent`` (never negative), as the float that closes it.

        Charging exactly this amount is accepted and brings ``rho_spent`` to ``rho_budget`` to
        the last float without the exact sum of the charges passing it (:func:`closing_charge`),
        so the last step of a run can take it directly (see :meth:`charge_remaining`). 0.0 once
        ``rho_spent == rho_budget``.
        """
        return self._closing_rho()

    @property
    def events(self) -> tuple[PrivacyEvent, ...]:
        """The recorded events, oldest first (a copy)."""
        return tuple(self._events)

    def _total_with(self, rho: float) -> float:
        return math.fsum([*self._rho_partials, rho])

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
        if total > self._rho_budget or (self._reserved and math.fsum(
                [*self._rho_partials, self._reserved, event.rho]) > self._rho_budget):
            msg = (
                f"charging rho={event.rho!r} for {event.mechanism} ({event.description!r}) would "
                f"bring the total to {total!r}, above rho_budget={self._rho_budget!r} "
                f"(spent {self.rho_spent!r}, remaining {self.rho_remaining!r}, reserved "
                f"{self._reserved!r}); nothing was charged."
            )
            raise BudgetExceededError(msg)
        delta_total = math.fsum([*self._delta_partials, event.delta])
        if delta_total > self._delta_budget:
            msg = (
                f"charging delta={event.delta!r} for {event.mechanism} ({event.description!r}) "
                f"would bring the approximate delta to {delta_total!r}, above "
                f"delta_budget={self._delta_budget!r}; nothing was charged."
            )
            raise BudgetExceededError(msg)
        self._events.append(event)
        _add_exactly(self._rho_partials, event.rho)
        _add_exactly(self._delta_partials, event.delta)

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

    def reserve(self, rho: float) -> None:
        """Hold ``rho`` back for a release that comes later (the numeric pairs', drawn after the
        loop that spends the rest): until :meth:`release_reserve`, :attr:`rho_remaining` and
        :meth:`charge` leave it, so a step that closes the ledger closes it at the budget less
        the reserve (exactly: the reserve counts as a charge in :func:`closing_charge`). One
        reserve at a time; nothing is recorded, the release charges its own event."""
        rho = _float("rho", rho)
        if self._reserved:
            msg = f"a reserve of {self._reserved!r} is already held"
            raise BudgetExceededError(msg)
        if math.fsum([*self._rho_partials, rho]) > self._rho_budget:
            msg = f"cannot reserve rho={rho!r}: only {self.rho_remaining!r} remains"
            raise BudgetExceededError(msg)
        self._reserved = rho

    def release_reserve(self) -> float:
        """Return the reserve to :attr:`rho_remaining` (which then closes the budget as before);
        returns the rho that was held."""
        held, self._reserved = self._reserved, 0.0
        return held

    def _closing_rho(self) -> float:
        """The last charge that spends the budget (less any reserve) to the last float (0.0 if
        none fits): see :func:`closing_charge`."""
        if self._reserved:
            return closing_charge([*self._rho_partials, self._reserved], self._rho_budget)
        return closing_charge(self._rho_partials, self._rho_budget)


def _add_exactly(partials: list[float], x: float) -> None:
    """Add the finite float ``x`` to ``partials`` in place, keeping ``sum(partials)`` exact.

    ``partials`` holds non-overlapping floats, smallest magnitude first, whose real-number sum
    is exactly the sum of everything added (Shewchuk's expansion growth, the idea behind
    ``math.fsum``). Each step splits ``x + y`` into its rounded float and the exact error
    of that rounding, keeping the nonzero errors; the list stays a few floats long for
    doubles (at most about 40, one per binade band the sum spans).
    """
    kept = 0
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        high = x + y
        low = y - (high - x)  # exact: |x| >= |y| (Dekker's fast two-sum)
        if low:
            partials[kept] = low
            kept += 1
        x = high
    partials[kept:] = [x]


def closing_charge(charges, budget: float) -> float:
    """The charge that brings ``math.fsum(charges)`` to ``budget`` to the last float (0.0 if
    none fits): the last charge of a ledger, or of one step's part of it.

    It is the largest float whose *exact* (real-number) sum with the earlier charges is at most
    ``budget``, so neither that sum nor its fsum (rounding is monotone) exceeds the budget. The
    candidates are the correctly rounded ``budget - sum(charges)`` and its neighbours a few floats
    away; the exact sign of each total is that of ``fsum([*charges, rho, -budget])`` (fsum is
    correctly rounded). The fsum then equals the budget whenever any charge with an exact sum
    within the budget reaches it; otherwise (the remainder's float steps as coarse as the
    budget's, the exact totals straddling it) it ends one ulp below. An earlier rule preferred
    an fsum equal to the budget, which in such cases took a charge whose exact sum lay above the
    budget by under half an ulp (issue 73).

    Parameters
    ----------
    charges : sequence of float
        The rho charged so far (against ``budget``).
    budget : float
        What they and the closing charge are to add up to.

    Examples
    --------
    >>> charges = [0.1, 0.2]
    >>> last = closing_charge(charges, 0.7)
    >>> math.fsum([*charges, last]) == 0.7
    True
    """
    charges = [float(rho) for rho in charges]
    if math.fsum(charges) >= budget:
        return 0.0
    remainder = math.fsum([budget, *(-rho for rho in charges)])
    candidates = [remainder]
    for direction in (0.0, math.inf):
        rho = remainder
        for _ in range(_NUDGES):
            rho = math.nextafter(rho, direction)
            candidates.append(rho)

    def exact_total_fits(rho: float) -> bool:
        return math.fsum([*charges, rho, -budget]) <= 0.0  # the exact sign: fsum rounds correctly

    return max((rho for rho in candidates if rho > 0.0 and exact_total_fits(rho)), default=0.0)


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


def discrete_gaussian_sigma2(sensitivity_squared: int, rho: float) -> Fraction:
    """sigma^2 = Delta^2 / (2 rho) as an exact rational, Delta^2 in count units (an int).

    Adding independent discrete Gaussian noise N_Z(0, sigma^2) to each coordinate of an
    integer-valued query whose neighbouring values differ by an integer vector of squared L2
    norm at most Delta^2 is (Delta^2 / (2 sigma^2))-zCDP (Canonne, Kamath & Steinke 2020,
    §2: the same rho as the continuous Gaussian of the same sigma). With sigma^2 this exact
    rational, that rho is exactly the float ``rho`` charged: nothing is lost to rounding.

    Examples
    --------
    >>> discrete_gaussian_sigma2(2, 0.25)
    Fraction(4, 1)

    A marginal (Delta^2 = 2 counts^2) of n = 1000 rows at rho = 0.0045: the count-unit sigma
    is the answer-unit std times n, and Delta^2 / (2 sigma^2) gives back rho exactly.

    >>> sigma2 = discrete_gaussian_sigma2(2, 0.0045)
    >>> Fraction(2) / (2 * sigma2) == Fraction(0.0045)
    True
    >>> sigma_count = gaussian_noise_std(math.sqrt(2.0) / 1000, 0.0045) * 1000
    >>> abs(sigma_count**2 / float(sigma2) - 1.0) < 1e-14
    True
    """
    if isinstance(sensitivity_squared, bool) or not isinstance(sensitivity_squared, (int, np.integer)) \
            or sensitivity_squared < 1:
        msg = ("The 'sensitivity_squared' parameter must be an int >= 1 (the squared L2 "
               f"sensitivity of integer counts). Got {sensitivity_squared!r}.")
        raise ValueError(msg)
    return Fraction(int(sensitivity_squared)) / (2 * Fraction(_float("rho", rho)))


def discrete_gaussian_noise(sensitivity_squared: int, rho: float, size: int, rng) -> np.ndarray:
    """int64[size]: independent N_Z(0, sigma^2) draws, sigma^2 = :func:`discrete_gaussian_sigma2`.

    Draws only: the caller charges its own event first (e.g. a thresholded or adaptive count
    release). ``rng``: a :class:`~polars_rap.privacy.samplers.SecureRandom` or a seeded
    :class:`numpy.random.Generator` (research only).
    """
    return discrete_gaussian(discrete_gaussian_sigma2(sensitivity_squared, rho), size, words_from(rng))


def gaussian_mechanism(
    values: np.ndarray,
    l2_sensitivity: float,
    rho: float,
    ledger: PrivacyLedger,
    rng,
    description: str = "",
    round: int | None = None,
    *,
    n_rows: int = 1,
) -> tuple[np.ndarray, float]:
    """Release one group of counts (or answers = counts / n_rows) with discrete Gaussian noise.

    The noise is exact: ``values * n_rows`` are integer counts, each gets an independent
    draw of the discrete Gaussian N_Z(0, sigma^2) with sigma = ``l2_sensitivity * n_rows /
    sqrt(2 rho)`` in count units, and the released answer is ``noisy_count / n_rows`` (n is
    public, so the division is post-processing). Replace-one neighbours change the counts by
    an integer vector of squared L2 norm Delta^2 = (``l2_sensitivity * n_rows``)^2 (1 for one
    query, 2 for the cells of a marginal), so the release is Delta^2 / (2 sigma^2) = ``rho``
    zCDP exactly (:func:`discrete_gaussian_sigma2`), the rho of the continuous Gaussian
    mechanism; ``rho`` is charged to ``ledger`` before any noise is drawn.

    The noise's variance is below sigma^2 (CKS 2020); ``std`` reports sigma, the
    conservative figure, and its tails are those of N(0, sigma^2) widened by one count:
    P[|X| >= a + 1] <= P[|N(0, sigma^2)| >= a] for a >= 0 (:mod:`polars_rap.privacy.samplers`).

    Parameters
    ----------
    values : float64[m]
        True answers of one query group (read the real data): integer counts divided by
        ``n_rows``.
    l2_sensitivity : float
        L2 sensitivity of the whole vector in the units of ``values`` (replace-one: 1/n for
        one query, sqrt(2)/n for all cells of a marginal). Times ``n_rows``, its square must
        be an integer (the counts' own squared sensitivity).
    rho : float
        zCDP cost, charged to ``ledger`` as a ``"gaussian"`` event before any noise is drawn.
    ledger : PrivacyLedger
    rng : SecureRandom or numpy.random.Generator
        The OS's cryptographic source (real releases) or a seeded generator (research).
    description : str, optional
    round : int or None, optional
    n_rows : int, optional
        The public count the answers are fractions of (1: ``values`` are counts).

    Returns
    -------
    noisy : float64[m]
        ``(values * n_rows + X) / n_rows``, X ~ N_Z(0, sigma^2) independent per entry.
    std : float
        The noise scale sigma in the units of ``values``, ``l2_sensitivity / sqrt(2 rho)``
        (public).
    """
    array = _finite_vector("values", values)
    n_rows = _int_at_least("n_rows", n_rows, 1)
    counts = _counts(array, n_rows)
    sensitivity_squared = _count_sensitivity_squared(l2_sensitivity, n_rows)
    std = gaussian_noise_std(l2_sensitivity, rho)
    words = words_from(rng)
    ledger.charge(PrivacyEvent("gaussian", rho, description, round))
    noise = discrete_gaussian(discrete_gaussian_sigma2(sensitivity_squared, rho), len(counts), words)
    return (counts + noise) / n_rows, std


def _counts(values: np.ndarray, n_rows: int) -> np.ndarray:
    """int64: ``values * n_rows`` as the integer counts they must be (within float rounding)."""
    scaled = values * n_rows
    counts = np.rint(scaled)
    if not np.all(np.abs(scaled - counts) <= 1e-9 * np.maximum(1.0, np.abs(counts))):
        # Never echo the values: they are computed from the private data.
        msg = (f"The 'values' parameter must hold integer counts divided by n_rows={n_rows}: the "
               "discrete Gaussian mechanism adds integer noise to integer counts.")
        raise ValueError(msg)
    return counts.astype(np.int64)


def _count_sensitivity_squared(l2_sensitivity: float, n_rows: int) -> int:
    """The integer (l2_sensitivity * n_rows)^2: sqrt(2)/n * n squares to 2 only up to rounding."""
    squared = (_float("l2_sensitivity", l2_sensitivity) * n_rows) ** 2
    rounded = round(squared)
    if rounded < 1 or abs(squared - rounded) > 1e-9 * rounded:
        msg = ("The 'l2_sensitivity' parameter times n_rows must be the L2 sensitivity of integer "
               f"counts, whose square is an integer (e.g. 1 or sqrt(2)). Got {l2_sensitivity!r} "
               f"with n_rows={n_rows}.")
        raise ValueError(msg)
    return int(rounded)


def gumbel_scale(l1_sensitivity: float, rho: float, k: int) -> float:
    """Gumbel noise scale b for one-shot top-k selection that is rho-zCDP in total.

    One-shot top-k with Gumbel(b) noise equals k peeling exponential mechanisms; each is
    eps'-DP with b = 2 Delta1 / eps' and, having bounded range, eps'^2/8-zCDP (Cesar & Rogers
    2021). Spending rho over k of them, k eps'^2 / 8 = rho, so eps' = sqrt(8 rho / k) and::

        b = 2 Delta1 / eps' = Delta1 sqrt(k / (2 rho))

    eps' is :func:`polars_rap.privacy.selection.selection_epsilon` (the largest float with
    k eps'^2 / 8 <= rho exactly), the one :func:`gumbel_top_k` samples with.

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
    return 2.0 * l1_sensitivity / selection_epsilon(_float("rho", rho), _int_at_least("k", k, 1))


def gumbel_top_k(
    scores: np.ndarray,
    k: int,
    l1_sensitivity: float,
    rho: float,
    ledger: PrivacyLedger,
    rng,
    description: str = "",
    round: int | None = None,
) -> np.ndarray:
    """Select k candidates with the law of one-shot Gumbel top-k, sampled exactly (rho-zCDP).

    Charges ``rho`` (a ``"gumbel_top_k"`` event) first, then draws the k indices that adding
    Gumbel noise of scale b = :func:`gumbel_scale` to each score and keeping the k largest
    would give, in law: k peeling exponential mechanisms of eps' = 2 Delta1 / b, sampled
    with exact rational arithmetic (:func:`polars_rap.privacy.selection.exponential_top_k`; no noisy
    score is ever formed). The scores are used as the exact rationals their floats are, so
    ``l1_sensitivity`` must bound how far those floats move between neighbours (exact
    integer-grid scores make that so; see :mod:`polars_rap.fit.rounds`). Only the indices are
    released. If ``k >= n_candidates`` every index is returned and nothing is charged:
    selecting everything does not depend on the data, so it reveals nothing.

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
    rng : SecureRandom or numpy.random.Generator
        The OS's cryptographic source (real releases) or a seeded generator (research).
    description : str, optional
    round : int or None, optional

    Returns
    -------
    int64[min(k, n_candidates)]
        Selected indices, in draw order (the order of decreasing noisy score in the Gumbel
        view; sorted ascending when all are taken).
    """
    array = _finite_vector("scores", scores)
    gumbel_scale(l1_sensitivity, rho, k)  # validates the three
    words = words_from(rng)
    event = PrivacyEvent("gumbel_top_k", rho, description, round)  # validates before any work
    n_candidates = array.shape[0]
    if k >= n_candidates:
        return np.arange(n_candidates, dtype=np.int64)
    ledger.charge(event)
    return exponential_top_k(array, k, float(l1_sensitivity), selection_epsilon(rho, k), words)
