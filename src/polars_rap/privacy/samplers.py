"""Exact noise samplers: random words, Bernoulli(exp(-gamma)), discrete Laplace and Gaussian.

The algorithms are those of Canonne, Kamath & Steinke (2020, "The discrete Gaussian for
differential privacy", §5, Algorithms 1-3). Every step is integer arithmetic on Python ints
(exact at any size) driven by uniform 64-bit words, so each output has *exactly* the stated
law, with no floating-point rounding anywhere (Mironov 2012's attack on floating-point noise
has nothing to read).

The words come from a :class:`RandomWords` source:

* :class:`SecureRandom` — the operating system's cryptographic generator
  (:func:`os.urandom`), read in batches. This is the source of every real release
  (``seed=None``).
* :func:`seeded_words` — words drawn from a seeded :class:`numpy.random.Generator` (PCG64):
  the *same* exact algorithms, reproducible for research and tests, and **not secure**
  (PCG64 is predictable from its outputs; a fixed seed is known). Never for real releases.

Two facts about X ~ N_Z(0, sigma^2) that the rest of the code uses (Y ~ N(0, sigma^2)):

* **Tail**: P[X >= m] <= P[Y >= m - 1] for every integer m >= 1, because
  sum_{x >= m} exp(-x^2 / (2 sigma^2)) <= integral_{m-1}^inf exp(-y^2 / (2 sigma^2)) dy (the
  integrand decreases there, and each term is at most its integral over [x - 1, x]) while
  sum_{x in Z} exp(-x^2 / (2 sigma^2)) >= sqrt(2 pi) sigma (by Poisson summation it equals
  sqrt(2 pi) sigma sum_k exp(-2 pi^2 sigma^2 k^2)). So P[X >= a + 1] <= P[Y >= a] for real
  a >= 0, and |X| is stochastically below |Y| + 1: a Gaussian threshold or interval holds
  for the discrete noise once widened by one count.
* **Variance**: Var[X] < sigma^2 (CKS 2020), by about 8 pi^2 sigma^2 exp(-2 pi^2 sigma^2)
  relative (2e-7 at sigma = 1 count, 1e-74 at 3); :func:`discrete_gaussian_variance` sums it.

Examples
--------
>>> from fractions import Fraction
>>> import numpy as np
>>> words = seeded_words(np.random.default_rng(0))
>>> noise = discrete_gaussian(Fraction(9), 5, words)  # sigma^2 = 9, five int64 draws
>>> noise.dtype, noise.shape
(dtype('int64'), (5,))
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from polars_rap.errors import ParameterTypeError

__all__ = [
    "RandomWords", "SecureRandom", "bernoulli_exp", "discrete_gaussian",
    "discrete_gaussian_variance", "discrete_laplace", "seeded_words", "words_from",
]  # fmt: skip

_WORD_BITS = 64
_FIRST_BATCH = 64  # words read at the first refill of a source; doubles at each refill
_MAX_BATCH = 1 << 14


class RandomWords:
    """Uniform 64-bit words read in batches from a byte source, and exact draws built on them.

    Parameters
    ----------
    read_bytes : callable
        ``read_bytes(count) -> bytes`` of ``count`` independent uniform bytes.
    secure : bool
        Whether ``read_bytes`` is a cryptographic source (reported, never assumed).
    """

    __slots__ = ("_read_bytes", "_words", "_position", "_batch", "secure")

    def __init__(self, read_bytes: Callable[[int], bytes], secure: bool) -> None:
        self._read_bytes = read_bytes
        self._words: list[int] = []
        self._position = 0
        self._batch = _FIRST_BATCH
        self.secure = bool(secure)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(secure={self.secure})"

    def word(self) -> int:
        """One uniform integer in [0, 2**64)."""
        if self._position == len(self._words):
            raw = self._read_bytes(8 * self._batch)
            self._words = np.frombuffer(raw, dtype="<u8").tolist()
            self._position = 0
            self._batch = min(2 * self._batch, _MAX_BATCH)
        value = self._words[self._position]
        self._position += 1
        return value

    def below(self, bound: int) -> int:
        """A uniform integer in [0, bound), bound >= 1, by rejection (exact)."""
        if bound == 1:
            return 0
        bits = (bound - 1).bit_length()
        n_words = -(-bits // _WORD_BITS)
        excess = n_words * _WORD_BITS - bits
        while True:
            value = self.word()
            for _ in range(n_words - 1):
                value = (value << _WORD_BITS) | self.word()
            value >>= excess
            if value < bound:
                return value

    def bernoulli(self, numerator: int, denominator: int) -> bool:
        """True with probability ``numerator / denominator`` (exact; any size of integers).

        Compares a uniform U in [0, 1) with p = numerator / denominator one base-2**64 digit
        at a time: the first digit where they differ decides U < p. One word suffices except
        with probability 2**-64 per digit.
        """
        if numerator >= denominator:
            return True
        if numerator <= 0:
            return False
        while True:
            digit, numerator = divmod(numerator << _WORD_BITS, denominator)
            word = self.word()
            if word != digit:
                return word < digit
            if numerator == 0:  # p's expansion ended and U's matched it so far: U >= p
                return False


class SecureRandom(RandomWords):
    """Words from the operating system's cryptographic generator (:func:`os.urandom`).

    The source of every real release (``seed=None``). It holds no seed and cannot be
    replayed.
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(os.urandom, secure=True)


def seeded_words(rng: np.random.Generator) -> RandomWords:
    """Words drawn from ``rng`` (reproducible, **not secure**: for research and tests only).

    Each refill takes ``rng.bytes``; nothing is drawn until a word is needed.
    """
    if not isinstance(rng, np.random.Generator):
        msg = f"The 'rng' parameter must be a numpy.random.Generator. Got {type(rng).__name__}."
        raise TypeError(msg)
    return RandomWords(rng.bytes, secure=False)


def words_from(rng: object) -> RandomWords:
    """The word source of a mechanism's ``rng`` argument.

    A :class:`RandomWords` (e.g. :class:`SecureRandom`) is used as it is; a
    :class:`numpy.random.Generator` becomes :func:`seeded_words` (the research path).
    """
    if isinstance(rng, RandomWords):
        return rng
    if isinstance(rng, np.random.Generator):
        return seeded_words(rng)
    msg = ("The 'rng' parameter must be a polars_rap.privacy.samplers.SecureRandom (real releases) or "
           f"a numpy.random.Generator (seeded research runs). Got {type(rng).__name__}.")
    raise ParameterTypeError(msg)


# ---------------------------------------------------------------- irrational constants


def bernoulli_constant(bounds: Callable[[int], tuple[int, int]], words: RandomWords) -> bool:
    """True with probability c, a number in [0, 1] known through ``bounds`` (exact).

    ``bounds(bits)`` returns integers (lo, hi) with lo <= c * 2**bits <= hi, hi - lo small
    (exact, or floor and ceiling, for a rational c). A uniform U is read 64 bits at a time:
    once U's known interval lies wholly below lo or at or above hi, U < c is decided;
    otherwise (probability about 2**-63 per step) more bits of U and of c are taken. U
    differs from c with probability 1, so the loop ends with probability 1.
    """
    bits, value = _WORD_BITS, words.word()
    while True:
        lo, hi = bounds(bits)
        if value + 1 <= lo:
            return True
        if value >= hi:
            return False
        value = (value << _WORD_BITS) | words.word()
        bits += _WORD_BITS


def _fixed_point_series(bits: int, terms: Callable[[int, int], int], n_terms: int) -> tuple[int, int]:
    """(lo, hi) bounds of a series' sum times 2**bits from integer terms at ``guard`` more bits
    of precision: each term is floored (low by less than one unit), and the caller cuts the
    series where its tail is below one unit (``guard`` <= 24 for any bits < 2**21)."""
    guard = max(8, n_terms.bit_length() + 2)
    scale = bits + guard
    total = sum(terms(k, scale) for k in range(n_terms))
    return (total - n_terms - 2) >> guard, ((total + n_terms + 2) >> guard) + 1


_CONSTANT_CACHE: dict[tuple[str, int], tuple[int, int]] = {}


def inverse_e_bounds(bits: int) -> tuple[int, int]:
    """(lo, hi) with lo <= exp(-1) * 2**bits <= hi: the alternating series sum (-1)^k / k!,
    cut where 1/k! < 2**-(bits + 24) (its tail is smaller than the first term left out)."""
    key = ("inverse_e", bits)
    if key not in _CONSTANT_CACHE:
        n_terms = 2
        while math.factorial(n_terms) <= 1 << (bits + 24):
            n_terms += 1

        def term(k: int, scale: int) -> int:
            magnitude = (1 << scale) // math.factorial(k)
            return -magnitude - 1 if k % 2 else magnitude  # floor of a negative term, too

        _CONSTANT_CACHE[key] = _fixed_point_series(bits, term, n_terms + 1)
    return _CONSTANT_CACHE[key]


def log2_bounds(bits: int) -> tuple[int, int]:
    """(lo, hi) with lo <= ln(2) * 2**bits <= hi: ln 2 = sum_{k>=1} 1 / (k 2^k), cut where the
    tail (below 2**-K) is under one unit of the guard precision."""
    key = ("log2", bits)
    if key not in _CONSTANT_CACHE:
        n_terms = bits + 24

        def term(k: int, scale: int) -> int:
            return 0 if k == 0 else (1 << scale) // (k << k)

        _CONSTANT_CACHE[key] = _fixed_point_series(bits, term, n_terms + 1)
    return _CONSTANT_CACHE[key]


# ---------------------------------------------------------------- CKS 2020, Algorithms 1-3


def bernoulli_exp(numerator: int, denominator: int, words: RandomWords) -> bool:
    """True with probability exp(-gamma), gamma = numerator / denominator >= 0 (CKS Alg. 1).

    For gamma in [0, 1]: draw A_k ~ Bernoulli(gamma / k) for k = 1, 2, ... until the first
    A_k = 0; return whether that k is odd (it stops at k with probability
    gamma^(k-1)/(k-1)! - gamma^k/k!, and the odd k sum to exp(-gamma)).
    For gamma > 1: floor(gamma) draws of Bernoulli(exp(-1)), stopping at the first False, then
    Bernoulli(exp(-(gamma - floor(gamma)))). Expected draws are O(1) for every gamma.
    """
    while numerator > denominator:
        if not bernoulli_constant(inverse_e_bounds, words):  # Bernoulli(exp(-1))
            return False
        numerator -= denominator
    return _bernoulli_exp_unit(numerator, denominator, words)


def _bernoulli_exp_unit(numerator: int, denominator: int, words: RandomWords) -> bool:
    """Bernoulli(exp(-numerator / denominator)) for a ratio in [0, 1]."""
    if numerator == denominator:  # exp(-1), the common case: one word against its digits
        return bernoulli_constant(inverse_e_bounds, words)
    k = 1
    while words.bernoulli(numerator, denominator * k):
        k += 1
    return k % 2 == 1


def discrete_laplace(scale: int, words: RandomWords) -> int:
    """One draw with P[x] proportional to exp(-|x| / scale), x in Z (CKS Alg. 2, s = 1).

    ``scale`` is a positive int. U uniform in [0, scale) is kept with probability
    exp(-U / scale); V counts Bernoulli(exp(-1)) successes; X = U + scale * V is a geometric
    magnitude, signed by a fair bit, with (negative, 0) rejected so that 0 is not counted twice.
    """
    while True:
        remainder = words.below(scale)
        if not bernoulli_exp(remainder, scale, words):
            continue
        quotient = 0
        while bernoulli_constant(inverse_e_bounds, words):  # Bernoulli(exp(-1))
            quotient += 1
        magnitude = remainder + scale * quotient
        negative = words.word() >> (_WORD_BITS - 1)
        if negative and magnitude == 0:
            continue
        return -magnitude if negative else magnitude


def discrete_gaussian(sigma2: Fraction, size: int, words: RandomWords) -> np.ndarray:
    """``size`` independent draws of the discrete Gaussian N_Z(0, sigma2) (CKS Alg. 3).

    P[x] = exp(-x^2 / (2 sigma2)) / sum_{y in Z} exp(-y^2 / (2 sigma2)) for x in Z, exactly.
    With t = floor(sigma) + 1, a discrete Laplace Y of scale t is kept with probability
    exp(-(|Y| - sigma2 / t)^2 / (2 sigma2)), computed as an exact ratio of integers.

    Parameters
    ----------
    sigma2 : fractions.Fraction
        The variance parameter sigma^2 > 0, exact (e.g. ``Fraction(2) / (2 * Fraction(rho))``).
    size : int
        Number of draws.
    words : RandomWords

    Returns
    -------
    int64[size]
    """
    sigma2 = Fraction(sigma2)
    if sigma2 <= 0:
        msg = f"The 'sigma2' parameter must be > 0. Got {sigma2}."
        raise ValueError(msg)
    p, q = sigma2.numerator, sigma2.denominator
    scale = math.isqrt(p // q) + 1  # floor(sqrt(p / q)) + 1 = floor(sigma) + 1
    # gamma = (|y| - sigma2 / t)^2 / (2 sigma2) = (|y| t q - p)^2 / (2 p q t^2)
    denominator = 2 * p * q * scale * scale
    scaled = scale * q
    out = np.empty(int(size), dtype=np.int64)
    for index in range(out.shape[0]):
        while True:
            y = discrete_laplace(scale, words)
            gap = abs(y) * scaled - p
            if bernoulli_exp(gap * gap, denominator, words):
                out[index] = y
                break
    return out


def discrete_gaussian_variance(sigma2: float, width: float = 40.0) -> float:
    """Variance of N_Z(0, sigma2), by summing its pmf over |x| <= width * sigma + 1 (float64).

    Strictly below ``sigma2`` (CKS 2020 show Var < sigma^2; the tests check it here at
    sigma = 0.5 ... 1e4); the mass beyond ``width`` sigmas is below exp(-width^2 / 2).
    """
    sigma = math.sqrt(float(sigma2))
    support = np.arange(0, int(width * sigma) + 2, dtype=np.float64)
    weights = np.exp(-np.square(support) / (2.0 * float(sigma2)))
    weights[1:] *= 2.0  # +x and -x
    return float(np.sum(weights * np.square(support)) / np.sum(weights))
