"""Rows for the numeric ties' and pairs' tests (tests/test_numeric_ties.py, test_numeric_pairs.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from polars_rap.domain import Domain
from polars_rap.numeric_ties import TieLayout, tie_sums


def one_hot_relaxed(domain: Domain, codes: np.ndarray, numerics: np.ndarray) -> np.ndarray:
    """Relaxed rows that are the encoded rows themselves (one-hot categories, exact numerics):
    float32[n, n_coords]."""
    parts = [np.eye(block.n_codes)[codes[:, i]] for i, block in enumerate(domain.blocks)]
    return np.column_stack([*parts, numerics]).astype(np.float32)


def worst_replacement(codes: np.ndarray, numerics: np.ndarray, domain: Domain, layout: TieLayout,
                      draw: Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]],
                      rng: np.random.Generator, trials: int = 2_000) -> int:
    """The largest squared L2 change of the integer tie sums of ``layout`` over ``trials``
    replacements of one random row of (``codes``, ``numerics``) by a row ``draw(1, rng)`` makes."""
    base = tie_sums(codes, numerics, domain, layout)
    worst = 0
    for _ in range(trials):
        new_codes, new_numerics = codes.copy(), numerics.copy()
        other_codes, other_numerics = draw(1, rng)
        row = rng.integers(len(codes))
        new_codes[row], new_numerics[row] = other_codes[0], other_numerics[0]
        change = tie_sums(new_codes, new_numerics, domain, layout) - base
        worst = max(worst, int(change @ change))
    return worst
