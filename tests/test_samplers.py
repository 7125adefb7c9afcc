"""The exact samplers (polars_rap.privacy.samplers): the discrete Gaussian's law, on both word sources,
against its exact pmf; the Bernoulli primitives; the constants' rigorous bounds; the tail
and variance facts the rest of the code relies on.

Seeded tests are deterministic. Tests on :class:`SecureRandom` read the OS's generator, so
they cannot be seeded: their statistics use a false-alarm rate of 1e-6 each (the seeded ones
1e-4), and each is shown to have power against a plausible wrong law.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from polars_rap.privacy.samplers import RandomWords, SecureRandom, bernoulli_exp, discrete_gaussian, discrete_gaussian_variance, inverse_e_bounds, log2_bounds, seeded_words, words_from

SIGMAS = (0.5, 3.0, 50.0, 1e4)
DRAWS = 20_000
ALPHA = {"seeded": 1e-4, "secure": 1e-6}


def source(kind: str, seed: int) -> RandomWords:
    return seeded_words(np.random.default_rng(seed)) if kind == "seeded" else SecureRandom()


def sigma2_of(sigma: float) -> Fraction:
    """sigma^2 as the exact rational the mechanisms use: Delta^2 / (2 rho), here with
    Delta^2 = 1 and rho = 1 / (2 sigma^2) rounded to a float (so the denominator is not small)."""
    return Fraction(1) / (2 * Fraction(1.0 / (2.0 * sigma * sigma)))


def exact_pmf(sigma2: float) -> tuple[np.ndarray, np.ndarray]:
    """(support, pmf) of N_Z(0, sigma2) on |x| <= 12 sigma + 10, normalised by its own sum
    (the mass left out is below exp(-72))."""
    width = int(12 * math.sqrt(sigma2)) + 10
    support = np.arange(-width, width + 1)
    weights = np.exp(-np.square(support.astype(np.float64)) / (2.0 * sigma2))
    return support, weights / weights.sum()


def chi_square_pvalue(draws: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> float:
    """Pearson chi-square of ``draws`` against ``pmf``, on consecutive support points merged
    into bins of expected count >= 20 (the last bin takes the remainder)."""
    expected_per_point = pmf * len(draws)
    edges, running = [0], 0.0
    for index, value in enumerate(expected_per_point):
        running += value
        if running >= 20.0:
            edges.append(index + 1)
            running = 0.0
    edges[-1] = len(support)
    observed_per_point = np.bincount(np.clip(draws - support[0], 0, len(support) - 1), minlength=len(support))
    assert draws.min() >= support[0] and draws.max() <= support[-1]
    observed = np.add.reduceat(observed_per_point, edges[:-1])
    expected = np.add.reduceat(expected_per_point, edges[:-1])
    statistic = float(np.sum((observed - expected) ** 2 / expected))
    return float(stats.chi2.sf(statistic, len(observed) - 1))


def ks_pvalue(draws: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> float:
    """Kolmogorov-Smirnov for a discrete law: D = max over the support of |F_n(x) - F(x)|
    (both right-continuous, the supremum of a difference of step functions on Z), with the
    continuous-law p-value, which is conservative for a discrete law (Conover 1972)."""
    cdf = np.cumsum(pmf)
    empirical = np.searchsorted(np.sort(draws), support, side="right") / len(draws)
    return float(stats.kstwo.sf(np.max(np.abs(empirical - cdf)), len(draws)))


# ---------------------------------------------------------------- the discrete Gaussian's law


@pytest.mark.parametrize("kind", ["seeded", "secure"])
@pytest.mark.parametrize("sigma", SIGMAS)
def test_discrete_gaussian_has_the_exact_law(kind: str, sigma: float) -> None:
    """20,000 draws at sigma in {0.5, 3, 50, 1e4}, from a seeded generator and from the OS's:
    chi-square (bins of >= 20 expected) and KS against the exact pmf of N_Z(0, sigma^2),
    normalised over |x| <= 12 sigma + 10, each at the source's false-alarm rate."""
    sigma2 = sigma2_of(sigma)
    draws = discrete_gaussian(sigma2, DRAWS, source(kind, seed=int(sigma * 10) + 1))
    assert draws.dtype == np.int64 and draws.shape == (DRAWS,)
    support, pmf = exact_pmf(float(sigma2))
    assert chi_square_pvalue(draws, support, pmf) >= ALPHA[kind]
    assert ks_pvalue(draws, support, pmf) >= ALPHA[kind]


@pytest.mark.parametrize(("sigma", "wrong"), [
    (0.5, "rounded continuous Gaussian"),
    (3.0, "sigma 10% too large"),
    (50.0, "sigma 10% too small"),
    (1e4, "sigma 10% too large"),
])
def test_law_tests_reject_a_wrong_law(sigma: float, wrong: str) -> None:
    """Power: the same statistics at the seeded level reject draws of a plausible wrong law
    (fixed seed): rounding N(0, sigma^2) at sigma = 0.5 (P[0] = 0.683, not 0.787), or a
    sigma off by 10%. Both statistics reject in each case (KS, the weaker at scale errors,
    gives p ~ 1e-3 for a 5% error at this size; chi-square rejects that too)."""
    rng = np.random.default_rng(99)
    if wrong.startswith("rounded"):
        draws = np.rint(rng.normal(0.0, sigma, DRAWS)).astype(np.int64)
    else:
        factor = 1.1 if "large" in wrong else 0.9
        draws = discrete_gaussian(sigma2_of(sigma * factor), DRAWS, seeded_words(rng))
    support, pmf = exact_pmf(float(sigma2_of(sigma)))
    draws = np.clip(draws, support[0], support[-1])
    assert chi_square_pvalue(draws, support, pmf) < ALPHA["seeded"], wrong
    assert ks_pvalue(draws, support, pmf) < ALPHA["seeded"], wrong


def test_seeded_draws_repeat_and_secure_draws_do_not() -> None:
    """The research path is reproducible (same seed, same draws; the words come only from the
    generator), the secure one is not (two sources, independent draws)."""
    sigma2 = Fraction(50)
    first = discrete_gaussian(sigma2, 200, seeded_words(np.random.default_rng(5)))
    again = discrete_gaussian(sigma2, 200, seeded_words(np.random.default_rng(5)))
    other = discrete_gaussian(sigma2, 200, seeded_words(np.random.default_rng(6)))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    assert not np.array_equal(discrete_gaussian(sigma2, 200, SecureRandom()),
                              discrete_gaussian(sigma2, 200, SecureRandom()))
    assert SecureRandom().secure and not seeded_words(np.random.default_rng(0)).secure


def test_words_from_accepts_the_two_sources_only() -> None:
    """A SecureRandom is used as it is, a Generator becomes seeded words; anything else (the
    legacy RandomState, an int seed) is a TypeError naming the parameter."""
    secure = SecureRandom()
    assert words_from(secure) is secure
    assert not words_from(np.random.default_rng(0)).secure
    for bad in (np.random.RandomState(0), 7, None):
        with pytest.raises(TypeError, match="'rng' parameter"):
            words_from(bad)


def test_the_secure_source_reads_the_os_in_batches(monkeypatch) -> None:
    """SecureRandom's words are os.urandom's bytes, little-endian, read in growing batches
    (not one system call per word)."""
    calls = []

    def fake_urandom(count: int) -> bytes:
        calls.append(count)
        return bytes(range(8)) * (count // 8)

    monkeypatch.setattr("os.urandom", fake_urandom)
    words = SecureRandom()
    values = [words.word() for _ in range(150)]
    assert set(values) == {int.from_bytes(bytes(range(8)), "little")}
    assert calls == [512, 1024]  # 64 words, then 128


def test_discrete_gaussian_rejects_a_nonpositive_sigma2() -> None:
    with pytest.raises(ValueError, match="'sigma2' parameter must be > 0"):
        discrete_gaussian(Fraction(0), 3, SecureRandom())


# ---------------------------------------------------------------- facts the mechanisms use


@pytest.mark.parametrize("sigma", SIGMAS)
def test_variance_is_below_sigma_squared(sigma: float) -> None:
    """Var[N_Z(0, sigma^2)] <= sigma^2 (so reporting sigma is conservative), by summing the
    exact pmf; within 1e-12 relative of sigma^2 from sigma = 3 on (8 pi^2 sigma^2
    exp(-2 pi^2 sigma^2) is ~1e-74 there), and 0.14 sigma^2 below it at sigma = 0.5 (0.2150 for 0.25)."""
    sigma2 = float(sigma2_of(sigma))
    variance = discrete_gaussian_variance(sigma2)
    support, pmf = exact_pmf(sigma2)
    assert variance == pytest.approx(float(np.sum(pmf * support.astype(np.float64) ** 2)), rel=1e-9)
    if sigma >= 3:  # below by ~1e-74: equal in float64
        assert variance == pytest.approx(sigma2, rel=1e-12)
    else:
        assert variance == pytest.approx(0.2150, abs=1e-4) and variance < sigma2


@pytest.mark.parametrize("sigma", (0.5, 1.0, 3.0, 50.0))
def test_tail_is_the_continuous_one_shifted_by_one_count(sigma: float) -> None:
    """P[X >= a + 1] <= P[N(0, sigma^2) >= a] for every a >= 0 checked (integers and
    quarter points up to 10 sigma), X ~ N_Z(0, sigma^2), computed exactly with mpmath: the
    fact behind the +1 count in thresholds and intervals. Without the +1 it fails (at
    sigma = 3, P[X >= 3] > P[N >= 3])."""
    mpmath.mp.dps = 40
    s2 = mpmath.mpf(sigma) ** 2
    width = int(30 * sigma) + 30
    weights = [mpmath.exp(-mpmath.mpf(x) ** 2 / (2 * s2)) for x in range(0, width + 1)]
    total = weights[0] + 2 * mpmath.fsum(weights[1:])

    def tail(m: int) -> mpmath.mpf:  # P[X >= m], m >= 0
        return mpmath.fsum(weights[m:]) / total

    def normal_tail(a) -> mpmath.mpf:
        return mpmath.ncdf(-mpmath.mpf(a) / mpmath.sqrt(s2))

    for quarter in range(0, int(40 * sigma) + 1):
        a = quarter / 4
        assert tail(math.ceil(a + 1)) <= normal_tail(a)
    if sigma == 3.0:
        assert tail(3) > normal_tail(3)


def test_bernoulli_exp_has_probability_exp_minus_gamma() -> None:
    """Bernoulli(exp(-gamma)) at gamma = 0, 3/10, 1, 5/2, 7 and a big-integer ratio near 0.7:
    exact binomial test of 20,000 draws each (seeded, level 1e-4), and gamma = 0 is always
    True."""
    words = seeded_words(np.random.default_rng(11))
    big = 3**90
    for numerator, denominator in ((0, 1), (3, 10), (1, 1), (5, 2), (7, 1), (big * 7 // 10 + 1, big)):
        hits = sum(bernoulli_exp(numerator, denominator, words) for _ in range(DRAWS))
        p = math.exp(-numerator / denominator)
        if numerator == 0:
            assert hits == DRAWS
        else:
            assert stats.binomtest(hits, DRAWS, p).pvalue >= 1e-4, (numerator, denominator)


def test_rational_bernoulli_and_uniform_integers() -> None:
    """``bernoulli(n, d)`` and ``below(m)`` for small and multi-word sizes: binomial and
    chi-square tests (seeded, level 1e-4); edge cases exact."""
    words = seeded_words(np.random.default_rng(12))
    assert words.bernoulli(0, 5) is False and words.bernoulli(5, 5) is True and words.below(1) == 0
    for numerator, denominator in ((1, 3), (2**70 + 1, 2**71 + 3)):
        hits = sum(words.bernoulli(numerator, denominator) for _ in range(DRAWS))
        assert stats.binomtest(hits, DRAWS, numerator / denominator).pvalue >= 1e-4
    for bound in (7, 3 * 2**64 + 1):
        draws = [words.below(bound) for _ in range(DRAWS)]
        assert 0 <= min(draws) and max(draws) < bound
        cells = np.bincount([7 * value // bound for value in draws], minlength=7)
        assert stats.chisquare(cells).pvalue >= 1e-4


@pytest.mark.parametrize("bits", [64, 128, 1024])
def test_constant_bounds_contain_the_constants(bits: int) -> None:
    """inverse_e_bounds and log2_bounds bracket exp(-1) * 2**bits and ln 2 * 2**bits (mpmath at
    bits + 64 bits of precision), at most 2 apart."""
    mpmath.mp.prec = bits + 64
    for bounds, value in ((inverse_e_bounds, mpmath.exp(-1)), (log2_bounds, mpmath.log(2))):
        lo, hi = bounds(bits)
        assert lo <= value * mpmath.mpf(2) ** bits <= hi and hi - lo <= 2
