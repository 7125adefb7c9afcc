"""Rows for the numeric ties' and pairs' tests (tests/test_numeric_ties.py, test_numeric_pairs.py,
test_pair_counts.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from polars_rap.schema.domain import Domain
from polars_rap.decode.numeric_ties import TieLayout, tie_sums


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


def pair_domain(first: str = "age", nullable: bool = True) -> Domain:
    """sex, y and two numeric columns in [0, 1], ``first`` before the other; hours nullable."""
    columns = {"sex": pl.String, first: pl.Float64, ("hours" if first == "age" else "age"): pl.Float64, "y": pl.String}
    declared = {"sex": ["F", "M"], "age": (0.0, 1.0), "y": ["n", "p"],
                "hours": {"bounds": (0.0, 1.0), "nullable": True} if nullable else (0.0, 1.0)}
    return Domain.from_mapping(columns, declared, labels=["y"])


def pair_rows(domain: Domain, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random encoded rows of :func:`pair_domain`, hours rising with age (slope 0.6) within each
    label and, where hours is nullable, null for a fifth of them (mapped value 0): codes
    int32[n, n_blocks], numerics float64[n, 2]."""
    codes = np.column_stack([rng.integers(0, block.n_codes, n) for block in domain.blocks]).astype(np.int32)
    names = [spec.name for spec in domain.numeric_columns]
    age = rng.random(n)
    hours = np.clip(0.2 + 0.6 * age + 0.05 * rng.standard_normal(n), 0.0, 1.0)
    null = rng.random(n) < 0.2
    if domain.numeric_columns[1].nullable or domain.numeric_columns[0].nullable:
        codes[:, domain.block_index("hours", indicator=True)] = null
        hours[null] = 0.0
    numerics = np.column_stack([age, hours] if names[0] == "age" else [hours, age])
    return codes, numerics


def paired_frame_and_domain() -> tuple[pl.DataFrame, dict]:
    """2,000 rows (sex, age 18-89, hours following age, y by hours) and their ``domain=``."""
    rng = np.random.default_rng(8)
    n = 2_000
    age = rng.integers(18, 90, n)
    hours = np.clip(10 + 0.6 * age + rng.normal(0, 4, n), 1, 99).round().astype(np.int64)
    data = pl.DataFrame({"sex": rng.choice(["F", "M"], n), "age": age, "hours": hours,
                         "y": np.where(hours + rng.normal(0, 6, n) > 40, "p", "n")})
    return data, {"sex": ["F", "M"], "age": (18, 90), "hours": (1, 99), "y": ["n", "p"]}
