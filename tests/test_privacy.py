"""Tests for polars_rap.privacy.ledger: epsilon/delta <-> rho, the ledger, Gaussian and Gumbel top-k."""

from __future__ import annotations

import dataclasses
import doctest
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpmath import mp, mpf
from scipy import stats

from polars_rap.privacy import accounting
from polars_rap.privacy import ledger as privacy
from polars_rap.errors import ParameterError
from polars_rap.privacy.ledger import BudgetExceededError, PrivacyEvent, PrivacyLedger, delta_from_rho_epsilon, epsilon_from_rho_delta, gaussian_mechanism, gaussian_noise_std, gumbel_scale, gumbel_top_k, rho_from_epsilon_delta, rho_from_epsilon_delta_loose

EPSILONS = [0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0]
DELTAS = [1e-12, 1e-9, 1e-6, 1e-3]
GRID = list(itertools.product(EPSILONS, DELTAS))


# ---------------------------------------------------------------- independent reference


def grid_log_delta(rho: float, epsilon: float) -> float:
    """Brute force: the CKS20 objective, as printed, minimised over a dense grid of log(alpha-1).

    Independent of the module: a plain grid (no root finding) of 400,001 points over
    alpha - 1 in [e^-20, e^25]. A grid minimum is >= the true infimum, by a relative amount
    that is negligible here (spacing 1.1e-4 in log alpha).
    """
    alpha = 1.0 + np.exp(np.linspace(-20.0, 25.0, 400_001))
    log_objective = (
        (alpha - 1.0) * (alpha * rho - epsilon) - np.log(alpha - 1.0) + alpha * np.log1p(-1.0 / alpha)
    )
    return float(log_objective.min())


def grid_rho(epsilon: float, delta: float) -> float:
    """Largest rho with grid delta <= delta, by plain bisection in log rho."""
    low, high = math.log(1e-10), math.log(epsilon * 10.0)
    for _ in range(80):
        middle = 0.5 * (low + high)
        if grid_log_delta(math.exp(middle), epsilon) <= math.log(delta):
            low = middle
        else:
            high = middle
    return math.exp(low)


def mpmath_delta(rho: float, epsilon: float) -> mpf:
    """The tight delta to ~60 digits: the CKS20 objective as printed, in mpmath, minimised by
    bisection (300 halvings of log(alpha-1)) on the sign of its derivative in alpha,
    (2 alpha - 1) rho - eps + log(1 - 1/alpha). Independent of the module's rewriting."""
    with mp.workdps(60):
        rho, epsilon = mpf(rho), mpf(epsilon)

        def slope(u):
            alpha = 1 + mp.exp(u)
            return (2 * alpha - 1) * rho - epsilon + mp.log(1 - 1 / alpha)

        low, high = mpf(-60), mpf(60)
        while slope(low) > 0:
            low *= 2
        while slope(high) < 0:
            high *= 2
        for _ in range(300):
            middle = (low + high) / 2
            low, high = (middle, high) if slope(middle) < 0 else (low, middle)
        alpha = 1 + mp.exp(low)
        log_delta = (alpha - 1) * (alpha * rho - epsilon) - mp.log(alpha - 1) + alpha * mp.log(1 - 1 / alpha)
        return mp.exp(min(log_delta, mpf(0)))


# ---------------------------------------------------------------- conversions


def test_tight_rho_hand_value_eps1_delta1e9() -> None:
    """eps=1, delta=1e-9 gives tight rho 0.014973 (design.md), the loose formula 0.011781."""
    assert rho_from_epsilon_delta(1.0, 1e-9) == pytest.approx(0.014973, abs=5e-7)
    assert rho_from_epsilon_delta_loose(1.0, 1e-9) == pytest.approx(0.011781, abs=5e-7)


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-9), (0.1, 1e-6), (5.0, 1e-6)])
def test_tight_rho_matches_brute_force_grid(epsilon: float, delta: float) -> None:
    """The tight rho agrees with a brute-force grid over alpha plus bisection to 1e-6 relative."""
    assert rho_from_epsilon_delta(epsilon, delta) == pytest.approx(grid_rho(epsilon, delta), rel=1e-6)


@pytest.mark.parametrize(("rho", "epsilon"), [(0.014973, 1.0), (3e-4, 0.1), (0.46, 5.0), (1e-6, 0.01)])
def test_delta_is_the_infimum_over_alpha(rho: float, epsilon: float) -> None:
    """delta_from_rho_epsilon is at most the grid minimum (it is the infimum) and close to it."""
    grid_delta = math.exp(grid_log_delta(rho, epsilon))
    delta = delta_from_rho_epsilon(rho, epsilon)
    assert delta <= grid_delta * (1.0 + 1e-12)
    assert delta >= grid_delta * (1.0 - 1e-6)


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_tight_rho_never_looser_than_loose(epsilon: float, delta: float) -> None:
    """The tight rho is never smaller than the closed-form loose rho."""
    assert rho_from_epsilon_delta(epsilon, delta) >= rho_from_epsilon_delta_loose(epsilon, delta)


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_round_trip_stays_at_or_below_targets(epsilon: float, delta: float) -> None:
    """Converting the tight rho back gives delta <= target and epsilon <= target (and close)."""
    rho = rho_from_epsilon_delta(epsilon, delta)
    assert delta_from_rho_epsilon(rho, epsilon) <= delta  # the search's own guarantee
    assert delta_from_rho_epsilon(rho, epsilon) >= delta * (1.0 - 1e-6)  # and it is tight
    epsilon_back = epsilon_from_rho_delta(rho, delta)
    assert epsilon * (1.0 - 1e-9) <= epsilon_back <= epsilon * (1.0 + 1e-9)


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_loose_rho_solves_its_equation(epsilon: float, delta: float) -> None:
    """The loose rho satisfies eps = rho + 2 sqrt(rho log(1/delta))."""
    rho = rho_from_epsilon_delta_loose(epsilon, delta)
    assert rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta)) == pytest.approx(epsilon, rel=1e-12)


def test_tight_epsilon_never_above_loose_epsilon() -> None:
    """For fixed rho, delta, the tight epsilon is at most rho + 2 sqrt(rho log(1/delta))."""
    for rho, delta in itertools.product([1e-5, 1e-3, 0.1, 1.0], DELTAS):
        loose = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
        assert epsilon_from_rho_delta(rho, delta) <= loose


EXTREME_PAIRS = list(itertools.product([1e-4, 1e-3, 1e-2, 1.0, 50.0], [1e-15, 1e-12, 1e-6, 0.5]))


@pytest.mark.parametrize(("epsilon", "delta"), EXTREME_PAIRS)
def test_exact_delta_of_the_returned_rho_never_exceeds_the_target(epsilon: float, delta: float) -> None:
    """Against a 60-digit mpmath reference: the delta that the returned rho really gives is
    at most the target (before the cancellation-free objective, eps = 1e-3, delta = 1e-12
    overshot by 5.9e-11 relative), and short of it by under 1e-13 relative."""
    rho = rho_from_epsilon_delta(epsilon, delta)
    exact = mpmath_delta(rho, epsilon)
    assert exact <= mpf(delta)
    assert exact >= mpf(delta) * (1 - mpf("1e-13"))


@pytest.mark.parametrize("factor", [0.5, 2.0])
@pytest.mark.parametrize(("epsilon", "delta"), EXTREME_PAIRS)
def test_computed_delta_is_an_upper_bound_within_1e13_of_the_exact_one(
    epsilon: float, delta: float, factor: float
) -> None:
    """At rho half and twice the returned one, delta_from_rho_epsilon rounds every step
    upwards: never below the mpmath delta, and above it by less than 1e-13 relative (a few
    ulps of log(delta))."""
    rho = factor * rho_from_epsilon_delta(epsilon, delta)
    computed, exact = delta_from_rho_epsilon(rho, epsilon), mpmath_delta(rho, epsilon)
    assert mpf(computed) >= exact
    assert mpf(computed) <= exact * (1 + mpf("1e-13"))


@settings(max_examples=60, deadline=None)
@given(
    log10_epsilon=st.floats(-4.0, 2.0),
    log10_delta=st.floats(-18.0, -0.5),
)
def test_exact_delta_never_exceeds_the_target_anywhere(log10_epsilon: float, log10_delta: float) -> None:
    """The same guarantee at random (epsilon, delta), log-uniform over eps in [1e-4, 100] and
    delta in [1e-18, 0.3]: the mpmath delta of the returned rho is at most the target, and
    so is the mpmath delta at the returned epsilon of epsilon_from_rho_delta."""
    epsilon, delta = 10.0**log10_epsilon, 10.0**log10_delta
    rho = rho_from_epsilon_delta(epsilon, delta)
    assert mpmath_delta(rho, epsilon) <= mpf(delta)
    assert mpmath_delta(rho, epsilon_from_rho_delta(rho, delta)) <= mpf(delta)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("epsilon", [1e-150, 1e-300, 5e-324])
def test_a_tiny_epsilon_still_gets_its_tight_rho(epsilon: float) -> None:
    """The loose rho (eps^2 / (4 log(1/delta)) there) underflows to 0 below eps ~ 1e-160, and
    the search once doubled 0 forever (a fuzz test's epsilon = 1e-300 hung CI); near eps = 0
    delta still covers a rho of about 1e-18, which the mpmath reference confirms."""
    rho = rho_from_epsilon_delta(epsilon, 1e-9)
    exact = mpmath_delta(rho, epsilon)
    assert rho > 1e-20 and exact <= mpf(1e-9)
    assert exact >= mpf(1e-9) * (1 - mpf("1e-13"))


@pytest.mark.timeout(60)
def test_no_float_rho_is_a_parameter_error_naming_epsilon() -> None:
    """At eps = delta = 1e-300 no positive float rho is admissible: a ParameterError, not a hang."""
    with pytest.raises(ParameterError, match="'epsilon' parameter is too small for its delta"):
        rho_from_epsilon_delta(1e-300, 1e-300)



def test_delta_decreases_with_epsilon_and_increases_with_rho() -> None:
    """delta(rho, eps) is monotone: down in epsilon, up in rho."""
    deltas_by_epsilon = [delta_from_rho_epsilon(0.01, e) for e in EPSILONS]
    assert all(a > b for a, b in itertools.pairwise(deltas_by_epsilon))
    deltas_by_rho = [delta_from_rho_epsilon(r, 1.0) for r in [1e-3, 1e-2, 0.1, 1.0]]
    assert all(a < b for a, b in itertools.pairwise(deltas_by_rho))


# ---------------------------------------------------------------- ledger


def test_ledger_refuses_before_recording() -> None:
    """A charge that would exceed the budget raises and leaves spent and events unchanged."""
    ledger = PrivacyLedger(1.0)
    ledger.charge(PrivacyEvent("gaussian", 0.75, "first"))
    with pytest.raises(BudgetExceededError, match=r"rho=0\.5.*1\.25.*rho_budget=1\.0"):
        ledger.charge(PrivacyEvent("gaussian", 0.5, "too much"))
    assert ledger.rho_spent == 0.75
    assert len(ledger.events) == 1
    assert issubclass(BudgetExceededError, ValueError)


def test_ledger_accepts_a_charge_that_lands_exactly_on_the_budget() -> None:
    """Charges whose fsum equals the budget are accepted; remaining is then 0.0."""
    ledger = PrivacyLedger(1.0)
    for _ in range(10):
        ledger.charge(PrivacyEvent("gaussian", 0.1, ""))
    assert ledger.rho_spent == 1.0  # fsum, unlike sum() which gives 0.9999999999999999
    assert ledger.rho_remaining == 0.0
    with pytest.raises(BudgetExceededError):
        ledger.charge_remaining("gaussian", "nothing left")


def test_ledger_properties_and_events_copy() -> None:
    """rho_budget, rho_spent, rho_remaining, remaining_share; events is a tuple copy."""
    ledger = PrivacyLedger(2.0)
    event = PrivacyEvent("gumbel_top_k", 0.5, "select", round=3)
    ledger.charge(event)
    assert (ledger.rho_budget, ledger.rho_spent, ledger.rho_remaining) == (2.0, 0.5, 1.5)
    assert ledger.remaining_share(3) == 0.5
    assert ledger.events == (event,)
    assert isinstance(ledger.events, tuple)


def test_charge_remaining_after_awkward_charges_hits_budget_exactly() -> None:
    """After 0.1, 0.2, 0.3 of the budget, the last step makes fsum equal the budget.

    It also keeps the exact (real-number) total at or below the budget: fsum of the charges
    minus the budget is correctly rounded, so its sign is the exact sign.
    """
    budget = rho_from_epsilon_delta(1.0, 1e-9)
    ledger = PrivacyLedger(budget)
    for fraction in (0.1, 0.2, 0.3):
        ledger.charge(PrivacyEvent("gaussian", budget * fraction, ""))
    charged = ledger.charge_remaining("gaussian", "last", round=7)
    assert charged == ledger.events[-1].rho
    assert math.fsum(event.rho for event in ledger.events) == budget
    assert math.fsum([*(event.rho for event in ledger.events), -budget]) <= 0.0
    assert ledger.rho_remaining == 0.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.001, 0.3), min_size=0, max_size=6), st.floats(0.001, 0.3),
       st.floats(1e-6, 10.0))
def test_a_reserve_is_left_by_the_loop_and_closes_the_budget_last(fractions: list[float], share: float,
                                                                  budget: float) -> None:
    """``reserve(r)``: charges before it, a loop that closes with ``rho_remaining``, then
    ``release_reserve`` and a last charge of ``rho_remaining``: the loop's close leaves the
    reserve (to the float: the fsum with the reserve is the budget), the last charge is the
    reserve within an ulp or two, the fsum of every charge is the budget to the last float and
    the exact total never above it; no charge may eat into a held reserve, and nothing is
    recorded by reserving."""
    ledger = PrivacyLedger(budget)
    for fraction in fractions:
        if math.fsum([ledger.rho_spent, fraction * budget]) < 0.9 * budget:
            ledger.charge(PrivacyEvent("gaussian", fraction * budget, "before"))
    reserve = share * ledger.rho_remaining
    events = len(ledger.events)
    ledger.reserve(reserve)
    assert len(ledger.events) == events
    closing = ledger.rho_remaining
    with pytest.raises(BudgetExceededError, match="reserved"):
        ledger.charge(PrivacyEvent("gaussian", math.nextafter(closing, math.inf) * 1.000001, "into the reserve"))
    ledger.charge(PrivacyEvent("gaussian", closing, "the loop's close"))
    assert math.fsum([*(e.rho for e in ledger.events), reserve, -budget]) <= 0.0  # the exact total, reserve held
    assert ledger.rho_remaining <= 4 * math.ulp(budget)  # closed, or one rounding step short of it
    assert ledger.release_reserve() == reserve
    last = ledger.rho_remaining
    assert last == pytest.approx(reserve, rel=1e-9, abs=4 * math.ulp(budget))
    ledger.charge(PrivacyEvent("gaussian", last, "the reserved release"))
    assert math.fsum(e.rho for e in ledger.events) <= budget
    assert math.fsum([*(e.rho for e in ledger.events), -budget]) <= 0.0
    assert ledger.rho_remaining == 0.0 or math.fsum(e.rho for e in ledger.events) == budget


def test_a_reserve_is_one_at_a_time_and_within_what_remains() -> None:
    ledger = PrivacyLedger(1.0)
    ledger.charge(PrivacyEvent("gaussian", 0.75, ""))
    with pytest.raises(BudgetExceededError, match="only 0.25 remains"):
        ledger.reserve(0.5)
    ledger.reserve(0.125)
    with pytest.raises(BudgetExceededError, match="already held"):
        ledger.reserve(0.0625)
    assert ledger.rho_remaining == 0.125
    assert ledger.release_reserve() == 0.125 and ledger.release_reserve() == 0.0
    assert ledger.rho_remaining == 0.25


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_rounds_that_take_rho_remaining_last_spend_the_budget_exactly(epsilon: float, delta: float) -> None:
    """The RAP++ pattern: T rounds of rho_remaining / rounds_left, the last group charged with
    ledger.rho_remaining through gaussian_mechanism, spends the budget to the last float."""
    budget = rho_from_epsilon_delta(epsilon, delta)
    ledger, rng = PrivacyLedger(budget), np.random.default_rng(0)
    n_rounds, groups_per_round = 7, 3
    for round_index in range(n_rounds):
        round_rho = ledger.remaining_share(n_rounds - round_index)
        gumbel_top_k(np.arange(10.0), groups_per_round, 1.0, round_rho / 3, ledger, rng, round=round_index)
        for position in range(groups_per_round):
            last = round_index == n_rounds - 1 and position == groups_per_round - 1
            group_rho = ledger.rho_remaining if last else (2 * round_rho / 3) / groups_per_round
            gaussian_mechanism(np.zeros(4), 1.0, group_rho, ledger, rng, round=round_index)
    assert ledger.rho_spent == budget
    assert ledger.rho_remaining == 0.0
    assert len(ledger.events) == n_rounds * (1 + groups_per_round)


def closes_budget_with_one_float(charges: list[float], budget: float) -> bool:
    """Brute force: does some float r within 64 ulps of budget - sum(charges) give fsum == budget
    with an exact (rational) total at most the budget? (One whose exact total passes the budget
    is not a closing charge: issue 73, item 3.)"""
    remainder = math.fsum([budget, *(-c for c in charges)])
    step = math.ulp(remainder)
    exact = sum(map(Fraction, charges), Fraction(0))
    return any(math.fsum([*charges, r]) == budget and exact + Fraction(r) <= Fraction(budget)
               for r in (remainder + i * step for i in range(-64, 65)))


def test_charge_remaining_in_a_rounding_tie_stops_one_ulp_below() -> None:
    """When no float can close the budget (a tie), the last charge leaves fsum one ulp below.

    budget = 410.1531434642092 (odd last bit) after one charge of 0.375 * budget: every
    remainder float puts the exact total on a rounding tie or beyond, so equality is
    impossible (checked by brute force); the total must then stay below, never above.
    """
    budget = 410.1531434642092
    ledger = PrivacyLedger(budget)
    ledger.charge(PrivacyEvent("gaussian", 0.375 * budget, ""))
    assert not closes_budget_with_one_float([0.375 * budget], budget)
    ledger.charge_remaining("gaussian", "last")
    assert ledger.rho_spent == math.nextafter(budget, 0.0)


@settings(max_examples=500, deadline=None)
@given(
    budget=st.floats(min_value=1e-8, max_value=1e3, allow_nan=False, allow_infinity=False),
    fractions=st.lists(st.floats(min_value=1e-9, max_value=1.0), max_size=30),
)
def test_ledger_never_exceeds_budget_and_last_step_lands_exactly(
    budget: float, fractions: list[float]
) -> None:
    """Any sequence of charges keeps fsum <= budget; charge_remaining then makes fsum == budget.

    The one exception is a rounding tie in which no float closes the budget without its exact
    total passing it (verified by brute force); the fsum is then exactly one ulp below the
    budget, never above.
    """
    ledger = PrivacyLedger(budget)
    for fraction in fractions:
        spent_before, events_before = ledger.rho_spent, ledger.events
        try:
            ledger.charge(PrivacyEvent("gaussian", budget * fraction, ""))
        except BudgetExceededError:
            assert (ledger.rho_spent, ledger.events) == (spent_before, events_before)
        assert ledger.rho_spent <= budget
    if ledger.rho_spent == budget:
        return
    charges = [event.rho for event in ledger.events]
    ledger.charge_remaining("gaussian", "last")
    total = math.fsum(event.rho for event in ledger.events)
    if closes_budget_with_one_float(charges, budget):
        assert total == budget
    else:
        assert total == math.nextafter(budget, 0.0)
    assert ledger.rho_spent == total <= budget


@settings(max_examples=200, deadline=None)
@given(
    rhos=st.lists(st.floats(min_value=1e-300, max_value=1e3, allow_nan=False, allow_infinity=False),
                  min_size=1, max_size=40),
    deltas=st.lists(st.sampled_from([0.0, 1e-20, 3e-12, 1e-9, 1e-3 / 3]), min_size=1, max_size=40),
)
def test_ledger_totals_equal_the_fsum_over_every_event_to_the_last_float(rhos, deltas) -> None:
    """The ledger keeps its sums as exact partials (O(1) a charge): after every charge its
    totals, the fsum it checks a new charge against and its closing charge are those computed
    from the whole list of events, bit for bit, over magnitudes 1e-300 to 1e3."""
    ledger = PrivacyLedger(math.fsum(rhos) * 2.0 + 1.0, 0.5)
    for rho, delta in zip(rhos, itertools.cycle(deltas)):
        ledger.charge(PrivacyEvent("gaussian", rho, "", delta=delta))
        charged = [event.rho for event in ledger.events]
        assert ledger.rho_spent == math.fsum(charged)
        assert ledger.delta_spent == math.fsum(event.delta for event in ledger.events)
        assert ledger._total_with(rho) == math.fsum([*charged, rho])
        assert ledger.rho_remaining == privacy.closing_charge(charged, ledger.rho_budget)


def test_the_ledger_s_partials_absorb_cancellation_and_stay_short() -> None:
    """A charge far below the total is not lost (1 + 1e-17 + ... sums exactly), and thousands
    of charges keep the partials a few floats long, the reason a charge is O(1)."""
    ledger = PrivacyLedger(10.0)
    ledger.charge(PrivacyEvent("gaussian", 1.0, ""))
    for _ in range(1000):
        ledger.charge(PrivacyEvent("gaussian", 1e-17, ""))
    assert ledger.rho_spent == math.fsum([1.0, *[1e-17] * 1000]) == 1.0 + 1e-14
    rng = np.random.default_rng(3)
    for rho in rng.uniform(1e-9, 1e-3, 5000):
        ledger.charge(PrivacyEvent("gaussian", float(rho), ""))
    assert ledger.rho_spent == math.fsum(event.rho for event in ledger.events)
    assert len(ledger._rho_partials) <= 40


@pytest.mark.parametrize("bad_rho", [0.0, -1.0, math.nan, math.inf, "0.1", True])
def test_event_rho_must_be_finite_positive(bad_rho: object) -> None:
    """PrivacyEvent rejects a non-finite, non-positive or non-numeric rho, naming 'rho'."""
    with pytest.raises(ValueError, match="'rho' parameter must be a finite float > 0"):
        PrivacyEvent("gaussian", bad_rho, "")  # type: ignore[arg-type]


def test_event_is_frozen_and_slotted() -> None:
    """PrivacyEvent is immutable and has no __dict__."""
    event = PrivacyEvent("gaussian", 0.1, "d", round=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.rho = 1.0  # type: ignore[misc]
    assert not hasattr(event, "__dict__")


# ---------------------------------------------------------------- Gaussian


def test_gaussian_std_formula() -> None:
    """std = l2_sensitivity / sqrt(2 rho), e.g. a marginal of n=1000 rows at rho=0.01."""
    assert gaussian_noise_std(1.0, 0.5) == 1.0
    assert gaussian_noise_std(math.sqrt(2) / 1000, 0.01) == pytest.approx(0.01, rel=1e-15)
    assert gaussian_noise_std(2.0, 2.0) == 1.0


def test_gaussian_mechanism_empirical_std() -> None:
    """Counts / n with discrete Gaussian noise: the released answers stay on the lattice
    (noisy_count / n), and the sample variance of 200,000 noise draws lies in its chi-square
    interval around sigma^2 (the discrete Gaussian's variance equals sigma^2 to ~1e-75 at
    sigma = 15 counts).

    (N-1) s^2 / std^2 ~ chi2(N-1) approximately (N is large); the two-sided interval has
    false-alarm rate 1e-6 (and the seed is fixed, so the test is deterministic). The sample
    mean is checked at z = 4.9 (two-sided 1e-6).
    """
    n_draws, n_rows = 200_000, 1_000
    std_true = gaussian_noise_std(math.sqrt(2.0) / n_rows, 0.0045)
    ledger = PrivacyLedger(1.0)
    counts = np.arange(n_draws) % (n_rows + 1)
    values = counts / n_rows
    noisy, std = gaussian_mechanism(values, math.sqrt(2.0) / n_rows, 0.0045, ledger,
                                    np.random.default_rng(12345), n_rows=n_rows)
    assert std == std_true
    noisy_counts = noisy * n_rows
    assert np.max(np.abs(noisy_counts - np.rint(noisy_counts))) < 1e-9  # on the lattice (1/n) Z
    noise = noisy - values
    statistic = (n_draws - 1) * noise.var(ddof=1) / std**2
    low, high = stats.chi2.ppf([0.5e-6, 1 - 0.5e-6], n_draws - 1)
    assert low <= statistic <= high
    assert abs(noise.mean()) <= 4.9 * std / math.sqrt(n_draws)
    assert noisy.dtype == np.float64 and noisy.shape == (n_draws,)


def test_gaussian_mechanism_uses_exactly_the_charged_rho() -> None:
    """The discrete Gaussian's sigma^2 is the exact rational Delta^2 / (2 rho) in count units,
    so Delta^2 / (2 sigma^2) is the charged float rho to the last bit, for a marginal
    (Delta^2 = 2) and a single query (Delta^2 = 1) at awkward rhos."""
    from fractions import Fraction

    for rho in (0.0045, 1e-7 / 3, 0.1 + 0.2, 2.0**-40 * 3):
        for squared in (1, 2):
            sigma2 = privacy.discrete_gaussian_sigma2(squared, rho)
            assert Fraction(squared) / (2 * sigma2) == Fraction(rho)
            assert float(sigma2) == pytest.approx(gaussian_noise_std(math.sqrt(squared), rho) ** 2, rel=1e-15)
        ledger = PrivacyLedger(1.0)
        gaussian_mechanism(np.array([3.0, 5.0]) / 7, math.sqrt(2.0) / 7, rho, ledger,
                           np.random.default_rng(0), n_rows=7)
        assert ledger.events == (PrivacyEvent("gaussian", rho, ""),)


def test_gaussian_mechanism_needs_counts_and_integer_squared_sensitivity() -> None:
    """Values that are not counts / n_rows, or an L2 sensitivity whose square (in counts) is
    not an integer, raise ValueError naming the parameter, before anything is charged; the
    message never echoes the values."""
    ledger, rng = PrivacyLedger(1.0), np.random.default_rng(0)
    with pytest.raises(ValueError, match="'values' parameter must hold integer counts") as info:
        gaussian_mechanism(np.array([0.123456]), 1.0 / 10, 0.1, ledger, rng, n_rows=10)
    assert "0.123" not in str(info.value)
    with pytest.raises(ValueError, match="'l2_sensitivity' parameter times n_rows"):
        gaussian_mechanism(np.array([0.1]), 0.3 / 10, 0.1, ledger, rng, n_rows=10)
    with pytest.raises(ValueError, match="'n_rows' parameter"):
        gaussian_mechanism(np.array([1.0]), 1.0, 0.1, ledger, rng, n_rows=0)
    assert ledger.events == ()


def test_gaussian_mechanism_charges_before_drawing() -> None:
    """An over-budget call raises, records nothing and draws nothing from rng."""
    ledger = PrivacyLedger(0.1)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(BudgetExceededError):
        gaussian_mechanism(np.zeros(3), 1.0, 0.2, ledger, rng)
    assert ledger.events == () and rng.bit_generator.state == state
    gaussian_mechanism(np.zeros(3), 1.0, 0.05, ledger, rng, description="m", round=1)
    assert ledger.events == (PrivacyEvent("gaussian", 0.05, "m", 1),)


# ---------------------------------------------------------------- Gumbel


def test_gumbel_scale_worked_numbers() -> None:
    """n=1000 marginal (Delta1=2/n), rho=0.01, k=10: eps'=sqrt(0.008)=0.0894427, b=0.0447214."""
    assert gumbel_scale(2 / 1000, 0.01, 10) == pytest.approx(0.0447214, abs=1e-7)
    for l1, rho, k in itertools.product([1e-3, 0.5, 2.0], [1e-4, 0.1, 3.0], [1, 10, 50]):
        epsilon_prime = math.sqrt(8 * rho / k)  # k peeling EMs, each eps'^2/8-zCDP
        assert gumbel_scale(l1, rho, k) == pytest.approx(2 * l1 / epsilon_prime, rel=1e-14)


def test_gumbel_top_k_returns_k_distinct_indices_and_charges_rho() -> None:
    """k distinct int64 indices in range; exactly one 'gumbel_top_k' event of rho."""
    ledger = PrivacyLedger(1.0)
    scores = np.random.default_rng(1).random(100)
    chosen = gumbel_top_k(scores, 7, 0.01, 0.25, ledger, np.random.default_rng(2), "sel", 4)
    assert chosen.dtype == np.int64 and chosen.shape == (7,)
    assert len(set(chosen.tolist())) == 7 and chosen.min() >= 0 and chosen.max() < 100
    assert ledger.events == (PrivacyEvent("gumbel_top_k", 0.25, "sel", 4),)


def test_gumbel_top_k_picks_clear_winners_in_order() -> None:
    """With noise scale ~1e-6 and score gaps of 1, the top k come back in decreasing order."""
    scores = np.array([3.0, 9.0, 1.0, 7.0, 5.0, 0.0])
    chosen = gumbel_top_k(scores, 3, 1e-7, 1.0, PrivacyLedger(1.0), np.random.default_rng(0))
    np.testing.assert_array_equal(chosen, [1, 3, 4])


def test_gumbel_top_k_selecting_everything_is_free() -> None:
    """k >= n_candidates returns all indices sorted, without charging."""
    ledger = PrivacyLedger(1.0)
    for k in (4, 9):
        chosen = gumbel_top_k(np.array([0.2, 0.9, 0.1, 0.5]), k, 1.0, 0.5, ledger, np.random.default_rng(0))
        np.testing.assert_array_equal(chosen, np.arange(4))
        assert chosen.dtype == np.int64
    assert ledger.events == ()


def test_gumbel_top_1_matches_exponential_mechanism_probabilities() -> None:
    """For k=1, P(pick score s) = exp(s/b) / sum exp(s'/b) (the exponential mechanism).

    20,000 selections between two candidates; the count is checked at z = 4.9 (two-sided
    false-alarm rate 1e-6) around its binomial mean.
    """
    n_trials, b = 20_000, gumbel_scale(1.0, 0.5, 1)
    scores = np.array([0.0, 0.7])
    ledger, rng = PrivacyLedger(n_trials * 0.5), np.random.default_rng(7)
    wins = sum(int(gumbel_top_k(scores, 1, 1.0, 0.5, ledger, rng)[0] == 1) for _ in range(n_trials))
    probability = 1.0 / (1.0 + math.exp(-0.7 / b))
    assert abs(wins - n_trials * probability) <= 4.9 * math.sqrt(n_trials * probability * (1 - probability))


def test_same_seed_same_output() -> None:
    """The same seed gives identical Gaussian answers and Gumbel selections."""

    def run(seed: int) -> tuple[np.ndarray, np.ndarray]:
        rng, ledger = np.random.default_rng(seed), PrivacyLedger(1.0)
        noisy, _ = gaussian_mechanism(np.arange(5.0), 1.0, 0.1, ledger, rng)
        chosen = gumbel_top_k(np.linspace(0, 1, 50), 5, 1.0, 0.1, ledger, rng)
        return noisy, chosen

    first, second = run(99), run(99)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert not np.array_equal(first[0], run(100)[0])


# ---------------------------------------------------------------- validation


def _ledger() -> PrivacyLedger:
    return PrivacyLedger(1.0)


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


INVALID_CALLS = {
    "epsilon": lambda: rho_from_epsilon_delta(-1.0, 1e-9),
    "epsilon ": lambda: rho_from_epsilon_delta(math.inf, 1e-9),
    "delta": lambda: rho_from_epsilon_delta(1.0, 0.0),
    "delta ": lambda: rho_from_epsilon_delta_loose(1.0, 1.0),
    "rho": lambda: delta_from_rho_epsilon(0.0, 1.0),
    " delta": lambda: epsilon_from_rho_delta(0.1, 2.0),
    "rho_budget": lambda: PrivacyLedger(math.nan),
    "n_parts": lambda: _ledger().remaining_share(0),
    "round": lambda: PrivacyEvent("gaussian", 0.1, "", round=-1),
    "mechanism": lambda: PrivacyEvent("", 0.1, ""),
    "l2_sensitivity": lambda: gaussian_noise_std(-1.0, 0.1),
    " rho": lambda: gaussian_mechanism(np.zeros(2), 1.0, -0.1, _ledger(), _rng()),
    "values": lambda: gaussian_mechanism(np.zeros((2, 2)), 1.0, 0.1, _ledger(), _rng()),
    " values": lambda: gaussian_mechanism(np.array([0.0, np.nan]), 1.0, 0.1, _ledger(), _rng()),
    "k": lambda: gumbel_top_k(np.zeros(4), 0, 1.0, 0.1, _ledger(), _rng()),
    " k": lambda: gumbel_scale(1.0, 0.1, 2.5),  # type: ignore[arg-type]
    "l1_sensitivity": lambda: gumbel_top_k(np.zeros(4), 1, 0.0, 0.1, _ledger(), _rng()),
    "scores": lambda: gumbel_top_k(np.array([np.inf, 0.0]), 1, 1.0, 0.1, _ledger(), _rng()),
}


@pytest.mark.parametrize("name", list(INVALID_CALLS))
def test_invalid_inputs_raise_value_error_naming_the_parameter(name: str) -> None:
    """Each bad argument raises ValueError whose message names the parameter (and no data)."""
    with pytest.raises(ValueError, match=f"The '{name.strip()}' parameter must"):
        INVALID_CALLS[name]()


def test_invalid_rng_raises_type_error_and_charges_nothing() -> None:
    """An rng that is neither a SecureRandom nor a Generator (e.g. a seed) is refused before
    anything is charged."""
    ledger = _ledger()
    with pytest.raises(TypeError, match="'rng' parameter must be a polars_rap.privacy.samplers.SecureRandom"):
        gaussian_mechanism(np.zeros(2), 1.0, 0.1, ledger, 42)  # type: ignore[arg-type]
    assert ledger.events == ()


def test_error_message_format_matches_style_guide() -> None:
    """Messages read: The 'epsilon' parameter must be a finite float > 0. Got -1."""
    with pytest.raises(ValueError) as info:
        rho_from_epsilon_delta(-1, 1e-9)
    assert str(info.value) == "The 'epsilon' parameter must be a finite float > 0. Got -1."


@pytest.mark.parametrize("module", [privacy, accounting], ids=lambda m: m.__name__)
def test_module_doctests(module) -> None:
    """The docstring examples of polars_rap.privacy.ledger and polars_rap.privacy.accounting run and pass."""
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_privacy_re_exports_the_accounting_names() -> None:
    """Every public name of polars_rap.privacy.accounting is importable from polars_rap.privacy.ledger as the
    same object (existing imports keep working), and listed in its __all__."""
    for name in accounting.__all__:
        assert getattr(privacy, name) is getattr(accounting, name), name
        assert name in privacy.__all__, name
