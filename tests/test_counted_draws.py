"""Categorical draws with fixed counts (polars_rap.public.counted_draws): the counts exactly, each row's
probability the calibrated one, the edges where a count cannot be reached."""

import numpy as np
import pytest
from scipy.optimize import brentq

from polars_rap.public.counted_draws import draw_with_counts, rounded_counts


@pytest.mark.parametrize("k", [2, 3, 5])
def test_every_code_is_drawn_by_exactly_its_count(k):
    rng = np.random.default_rng(k)
    for _ in range(20):
        n = int(rng.integers(1, 400))
        log_p = np.log(rng.dirichlet(np.full(k, 0.5), size=n))
        counts = np.bincount(rng.integers(0, k, n), minlength=k)
        np.testing.assert_array_equal(np.bincount(draw_with_counts(log_p, counts, rng), minlength=k), counts)


def test_with_the_expected_counts_each_row_draws_with_its_own_probability():
    """Binary, probabilities summing to an integer: no shift, so row i draws code 0 with
    probability p_i, over 1,500 repetitions."""
    rng = np.random.default_rng(1)
    p = rng.uniform(0.05, 0.95, 40)
    p[-1] = 0.0
    p[-1] = np.ceil(p.sum()) - p.sum()  # the sum an integer
    log_p = np.log(np.column_stack([p, 1 - p]))
    count = int(round(p.sum()))
    hits = np.zeros(len(p))
    repetitions = 1_500
    for _ in range(repetitions):
        hits += draw_with_counts(log_p, np.array([count, len(p) - count]), rng) == 0
    sd = np.sqrt(p * (1 - p) / repetitions)
    assert np.all(np.abs(hits / repetitions - p) < 4.5 * sd + 1e-12)


def test_other_counts_shift_every_rows_log_odds_by_one_amount():
    rng = np.random.default_rng(2)
    logits = rng.normal(0, 1.5, 30)
    p = 1 / (1 + np.exp(-logits))
    count = 22  # far above the expected ~15
    shift = brentq(lambda t: (1 / (1 + np.exp(-(logits + t)))).sum() - count, -30, 30)
    q = 1 / (1 + np.exp(-(logits + shift)))
    log_p = np.log(np.column_stack([p, 1 - p]))
    repetitions = 1_500
    hits = sum(draw_with_counts(log_p, np.array([count, 30 - count]), rng) == 0 for _ in range(repetitions))
    assert np.all(np.abs(hits / repetitions - q) < 4.5 * np.sqrt(q * (1 - q) / repetitions) + 1e-12)


def test_certain_and_impossible_rows_are_kept_and_an_unreachable_count_gets_as_close_as_it_can():
    rng = np.random.default_rng(3)
    with np.errstate(divide="ignore"):
        log_p = np.log(np.array([[1.0, 0.0, 0.0]] * 3 + [[0.0, 0.5, 0.5]] * 4 + [[0.2, 0.3, 0.5]] * 3))
    codes = draw_with_counts(log_p, np.array([4, 3, 3]), rng)
    assert np.all(codes[:3] == 0) and np.all(codes[3:7] != 0)
    assert np.bincount(codes, minlength=3).tolist() == [4, 3, 3]
    # code 0 asked of one row only, but three rows can be nothing else: three, the last code pays
    codes = draw_with_counts(log_p, np.array([1, 4, 5]), rng)
    assert np.all(codes[:3] == 0) and (codes == 0).sum() == 3 and len(codes) == 10


def test_bad_counts_say_what_they_must_be():
    with pytest.raises(ValueError, match="counts must be 2 non-negative integers summing to the 3 rows"):
        draw_with_counts(np.zeros((3, 2)), np.array([1, 1]), np.random.default_rng(0))


def test_rounded_counts_keep_the_total_and_round_the_largest_remainders_up():
    assert rounded_counts(np.array([2.6, 1.3, 1.1])).tolist() == [3, 1, 1]
    assert rounded_counts(np.array([0.5, 0.5, 1.0])).sum() == 2
    expected = np.random.default_rng(4).dirichlet(np.ones(7)) * 1_000
    counts = rounded_counts(expected)
    assert counts.sum() == 1_000 and np.all(np.abs(counts - expected) < 1)
