"""Exact top-k selection (polars_rap.privacy.selection) and the exact selection scores of the loop
(polars_rap.privacy.selection_scores.selection_scores).

The sampler's law is checked against the Plackett-Luce law (k peeling exponential
mechanisms = one-shot Gumbel top-k) on both word sources; the scores' exactness and
sensitivity are checked on neighbouring count vectors.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from polars_rap.privacy.selection_scores import selection_scores
from polars_rap.privacy.samplers import SecureRandom, seeded_words
from polars_rap.privacy.selection import exponential_top_k, selection_epsilon
from laws import plackett_luce  # tests/laws.py

ALPHA = {"seeded": 1e-4, "secure": 1e-6}


def chi_square_pvalue(outputs: list[tuple[int, ...]], law: dict[tuple[int, ...], float]) -> float:
    """Pearson chi-square over the outputs of expected count >= 10, the rest pooled."""
    n = len(outputs)
    counts: dict[tuple[int, ...], int] = {}
    for output in outputs:
        counts[output] = counts.get(output, 0) + 1
    big = [o for o, p in law.items() if p * n >= 10]
    observed = [counts.get(o, 0) for o in big]
    expected = [law[o] * n for o in big]
    rest_expected = n - sum(expected)
    if rest_expected >= 1e-9:
        observed.append(n - sum(observed))
        expected.append(rest_expected)
    statistic = sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))
    return float(stats.chi2.sf(statistic, len(observed) - 1))


# Six candidates: a close race at the top, one far behind (its weight ~ e^-100, in the shared
# tail of the proposal), scale b = 2 * Delta1 / eps = 0.05.
SCORES = np.array([0.3, 0.1, 0.25, 0.0, 0.28, -5.0])
DELTA1, EPSILON = 1.0, 40.0  # b = 2 Delta1 / epsilon = 0.05


@pytest.mark.parametrize("kind", ["seeded", "secure"])
@pytest.mark.parametrize("k", [1, 2])
def test_exponential_top_k_has_the_plackett_luce_law(kind: str, k: int) -> None:
    """6,000 draws of k = 1 and k = 2 ordered candidates fit the exact Plackett-Luce law of
    scale 2 Delta1 / eps (chi-square at the source's false-alarm rate); every draw is k
    distinct int64 indices."""
    words = seeded_words(np.random.default_rng(10 + k)) if kind == "seeded" else SecureRandom()
    outputs = []
    for _ in range(6_000):
        chosen = exponential_top_k(SCORES, k, DELTA1, EPSILON, words)
        assert chosen.dtype == np.int64 and len(set(chosen.tolist())) == k
        outputs.append(tuple(chosen.tolist()))
    law = plackett_luce(SCORES, 2 * DELTA1 / EPSILON, k)
    assert chi_square_pvalue(outputs, law) >= ALPHA[kind]


@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_the_law_test_rejects_a_wrong_scale(factor: float) -> None:
    """Power: the same chi-square (seeded level) rejects draws made with eps' off by 2x either
    way, i.e. a Gumbel scale 2x too small (under-noised) or too large."""
    words = seeded_words(np.random.default_rng(3))
    outputs = [tuple(exponential_top_k(SCORES, 2, DELTA1, EPSILON * factor, words).tolist())
               for _ in range(6_000)]
    assert chi_square_pvalue(outputs, plackett_luce(SCORES, 2 * DELTA1 / EPSILON, 2)) < ALPHA["seeded"]


def test_huge_gaps_and_the_proposal_tail_terminate_in_order() -> None:
    """Gaps of 1e9 scales (weights far below 2**-128, all in the proposal's shared tail once
    the leaders are gone) still come out, in order, and quickly: taking all five of
    [0, -1e9, -2e9, -3e9, -4e9] returns them best first."""
    scores = np.array([-3e9, 0.0, -1e9, -4e9, -2e9])
    for seed in range(5):
        chosen = exponential_top_k(scores, 5, 1.0, 2.0, seeded_words(np.random.default_rng(seed)))
        assert chosen.tolist() == [1, 2, 4, 0, 3]


def test_many_candidates_with_equal_scores_are_uniform() -> None:
    """2,000 tied candidates: the first pick is uniform (chi-square over 20 index blocks)."""
    words = seeded_words(np.random.default_rng(4))
    picks = [int(exponential_top_k(np.zeros(2_000), 1, 1.0, 1.0, words)[0]) for _ in range(4_000)]
    assert stats.chisquare(np.bincount(np.asarray(picks) // 100, minlength=20)).pvalue >= 1e-4


@pytest.mark.parametrize(("rho", "k"), [(0.01, 10), (1e-9, 3), (0.3, 1), (123.0, 7)])
def test_selection_epsilon_is_the_largest_float_within_rho(rho: float, k: int) -> None:
    """k eps'^2 / 8 <= rho exactly (rationals), and the next float up would exceed it."""
    epsilon = selection_epsilon(rho, k)
    assert k * Fraction(epsilon) ** 2 <= 8 * Fraction(rho)
    assert k * Fraction(math.nextafter(epsilon, math.inf)) ** 2 > 8 * Fraction(rho)
    assert epsilon == pytest.approx(math.sqrt(8 * rho / k), rel=1e-15)


# ---------------------------------------------------------------- the loop's exact scores


def test_selection_scores_are_exact_and_move_by_at_most_the_sensitivity() -> None:
    """Scores are the groups' L1 errors in count units with the synthetic answers on a grid of
    2**-bits counts: exact multiples of 2**-bits. Moving one row between two cells of a
    marginal group changes its score by at most 2, exactly (1 for a single query), over
    random neighbours; the scores agree with the float L1 error to the grid's resolution."""
    rng = np.random.default_rng(0)
    n_rows = 34_425
    sizes = np.array([1, 6, 40, 1, 12], dtype=np.int64)
    synthetic = rng.dirichlet(np.ones(sizes.sum())) * 3.0
    synthetic = np.clip(synthetic, 0.0, 1.0)
    counts = rng.multinomial(n_rows, np.ones(sizes.sum()) / sizes.sum()).astype(np.float64)
    scores = selection_scores(counts, synthetic, sizes, n_rows)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    direct = [np.abs(counts[a:b] - synthetic[a:b] * n_rows).sum() for a, b in itertools.pairwise(offsets)]
    np.testing.assert_allclose(scores, direct, rtol=0, atol=1e-3)
    largest = int(sizes.max())
    bits = 52 - (n_rows * (largest + 1) + largest).bit_length()
    assert np.all(scores * 2.0**bits == np.rint(scores * 2.0**bits))
    for _ in range(200):
        group = int(rng.integers(len(sizes)))
        a, b = offsets[group], offsets[group + 1]
        neighbour = counts.copy()
        if sizes[group] == 1:
            neighbour[a] += rng.choice([-1.0, 1.0]) if neighbour[a] > 0 else 1.0
            bound = 1.0
        else:
            source_cell, target_cell = rng.choice(np.arange(a, b), 2, replace=False)
            if neighbour[source_cell] == 0:
                continue
            neighbour[source_cell] -= 1.0
            neighbour[target_cell] += 1.0
            bound = 2.0
        moved = selection_scores(neighbour, synthetic, sizes, n_rows)
        assert abs(Fraction(moved[group]) - Fraction(scores[group])) <= bound
        others = np.arange(len(sizes)) != group
        np.testing.assert_array_equal(moved[others], scores[others])
