"""Audits of the noisy binary search that refines inferred bounds (polars_rap.privacy.bounds).

1. Its outputs follow their exact law: the law is computed in closed form (each comparison
   adds discrete Gaussian noise X ~ N_Z(0, s^2) to an integer count and keeps the upper half
   with probability P[X <= threshold - prefix[mid]], from the exact pmf), and 40,000 real
   calls pass a chi-square test against it (false-alarm rate 1e-4); the same test rejects a
   search whose noise std is off by sqrt 2 either way.
2. That exact law meets the guarantee charged for it: on neighbouring prefix arrays (every
   count moved by 1, the most one replaced row can do), the hockey-stick divergence at every
   epsilon on a grid is at most the delta of the tight (CKS20) conversion of the rho charged;
   a std sqrt 2 too small breaks it.
3. The ledger: one event of exactly rho per call, charged before any draw; a refused charge
   leaves no event and draws nothing.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from polars_rap.privacy.bounds import comparison_noise_std, noisy_prefix_search
from polars_rap.privacy.ledger import BudgetExceededError, PrivacyEvent, PrivacyLedger, delta_from_rho_epsilon

DEPTH, RHO, THRESHOLD = 3, 0.5, 0.0
STD = comparison_noise_std(RHO, 1, DEPTH)  # 1 / sqrt(2 rho / depth) = sqrt(3), in counts
LAW_RHO = 0.005  # the law audit's: std sqrt(300) counts, so that the design's counts are fine
LAW_STD = comparison_noise_std(LAW_RHO, 1, DEPTH)
CALLS = 40_000
ALPHA = 1e-4
# integer prefix counts around the threshold, about these many comparison stds: every output
# is likely
DESIGN = np.rint(THRESHOLD + LAW_STD * np.array([-3.0, -0.8, -0.4, -0.2, 0.0, 0.2, 0.4, 0.8, 3.0]))


def discrete_gaussian_cdf(x: float, std: float) -> float:
    """P[N_Z(0, std^2) <= x], from the exact pmf normalised over |k| <= 12 std + 10."""
    width = int(12 * std) + 10
    support = np.arange(-width, width + 1, dtype=np.float64)
    weights = np.exp(-np.square(support) / (2.0 * std * std))
    return float(weights[support <= math.floor(x)].sum() / weights.sum())


def exact_law(prefix: np.ndarray, threshold: float, std: float) -> np.ndarray:
    """float64[2**depth]: the probability of each output index of one search."""
    depth = round(math.log2(len(prefix) - 1))
    law = np.zeros(2**depth)

    def walk(low: int, high: int, probability: float) -> None:
        if high - low == 1:
            law[low] += probability
            return
        middle = (low + high) // 2
        up = discrete_gaussian_cdf(threshold - prefix[middle], std)
        walk(middle, high, probability * up)
        walk(low, middle, probability * (1.0 - up))

    walk(0, 2**depth, 1.0)
    return law


def chi_square_rejects(outputs: np.ndarray, law: np.ndarray) -> bool:
    observed = np.bincount(outputs, minlength=len(law))
    expected = law * len(outputs)
    statistic = float(np.sum((observed - expected) ** 2 / expected))
    return statistic > stats.chi2.isf(ALPHA, len(law) - 1)


def real_outputs(rho: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    outputs = np.empty(CALLS, dtype=np.int64)
    for call in range(CALLS):
        ledger = PrivacyLedger(rho)
        outputs[call] = noisy_prefix_search([DESIGN], THRESHOLD, rho, ledger, rng)[0]
        assert ledger.events == (PrivacyEvent("gaussian_binary_search", rho, ""),)
    return outputs


def test_search_outputs_follow_their_exact_law() -> None:
    """40,000 searches (depth 3, rho = 0.005, std sqrt 300 counts) over a design whose counts
    straddle the threshold: the output frequencies pass a chi-square test (7 degrees of
    freedom) against :func:`exact_law`; each call charged rho once. False-alarm rate 1e-4."""
    law = exact_law(DESIGN, THRESHOLD, LAW_STD)
    assert law.min() > 0.03 and math.isclose(law.sum(), 1.0, rel_tol=1e-12)
    assert not chi_square_rejects(real_outputs(LAW_RHO, 11), law)


@pytest.mark.parametrize(("bug", "rho"), [
    ("std sqrt 2 too small (rho spent twice over, e.g. the 2 searches not counted)", 2.0 * LAW_RHO),
    ("std sqrt 2 too large", 0.5 * LAW_RHO),
])
def test_search_law_audit_rejects_wrong_noise(bug: str, rho: float) -> None:
    """Power: searches whose std is off by sqrt 2 either way fail the same test against the
    law of the right std (over ten other seeds, every time)."""
    assert chi_square_rejects(real_outputs(rho, 12), exact_law(DESIGN, THRESHOLD, LAW_STD)), bug


def worst_ratio_to_delta(std: float, rho: float, depth: int = DEPTH) -> float:
    """max over designs and epsilon of hockey-stick(P, Q) / delta_CKS(rho, epsilon), both
    directions: P on constant prefix counts c, Q on c + 1 (one row moved from above every edge
    to below every edge: each count moves by 1), c over the integers nearest [-6, 6] stds
    around the threshold, epsilon over (0.05, 4)."""
    worst = 0.0
    epsilons = np.linspace(0.05, 4.0, 40)
    deltas = [delta_from_rho_epsilon(rho, float(eps)) for eps in epsilons]
    for c in np.linspace(-6.0, 6.0, 49):
        base = np.full(2**depth + 1, np.rint(THRESHOLD + c * std))
        p, q = exact_law(base, THRESHOLD, std), exact_law(base + 1.0, THRESHOLD, std)
        for eps, delta in zip(epsilons, deltas, strict=True):
            factor = math.exp(float(eps))
            divergence = max(np.maximum(0.0, p - factor * q).sum(), np.maximum(0.0, q - factor * p).sum())
            worst = max(worst, divergence / delta)
    return worst


def test_search_law_meets_the_charged_guarantee() -> None:
    """The exact law of a depth-3 search charged rho = 0.5 is (eps, delta(eps))-DP at every
    epsilon of the grid, delta(eps) from the tight conversion of rho: the worst hockey-stick
    divergence on neighbouring counts is well below it (the comparisons release one bit each,
    less than the discrete Gaussian counts whose composition the charge accounts for)."""
    assert worst_ratio_to_delta(STD, RHO) <= 1.0


def test_search_guarantee_audit_rejects_an_under_noised_search() -> None:
    """Power: with the std sqrt 2 too small the same divergence exceeds delta(eps) by a factor
    of about 9 (at eps near 4, counts about 1.25 std below the threshold)."""
    assert worst_ratio_to_delta(STD / math.sqrt(2.0), RHO) > 2.0


def test_a_refused_search_leaves_no_event_and_draws_nothing() -> None:
    ledger = PrivacyLedger(0.1)
    ledger.charge(PrivacyEvent("gaussian", 0.08, "earlier"))
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(BudgetExceededError):
        noisy_prefix_search([DESIGN, DESIGN], THRESHOLD, 0.05, ledger, rng)
    assert len(ledger.events) == 1 and rng.bit_generator.state == state
    assert noisy_prefix_search([DESIGN, DESIGN], THRESHOLD, 0.02, ledger, rng) is not None
    assert [e.rho for e in ledger.events] == [0.08, 0.02] and ledger.rho_spent <= ledger.rho_budget


def test_two_searches_share_rho() -> None:
    """n searches of depth d share rho: each comparison is rho / (n d)-zCDP."""
    assert comparison_noise_std(0.6, 2, 3) == pytest.approx(1.0 / math.sqrt(2.0 * 0.6 / 6), rel=1e-15)
