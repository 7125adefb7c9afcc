"""The report's coverage claims on a tiny categorical domain (4 features and a label: 6 CM
groups of 12, 16, 8, 24, 12 and 16 cells): which groups carry unmeasured bounds."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import polars_rap as pr
from polars_rap.projection import ProjectionConfig

DOMAIN = {"a": ["x", "y"], "b": ["p", "q", "r"], "c": ["u", "v", "w", "z"], "d": ["m", "f"],
          "y": ["0", "1"]}
CM_SIZES = [12, 16, 8, 24, 12, 16]  # ab, ac, ad, bc, bd, cd, each times the 2 labels


def tiny_frame(seed: int, n: int = 4000, constant: tuple[str, ...] = ()) -> pl.DataFrame:
    """n rows, each column uniform on its categories, or fixed at its first in ``constant``."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        name: [values[0]] * n if name in constant else rng.choice(values, n).tolist()
        for name, values in DOMAIN.items()
    })


def run_paper(frame: pl.DataFrame, rounds_cm: int):
    return pr.synthesize(
        frame, epsilon=1.0, delta=1e-9, domain=DOMAIN, labels=["y"], strategy="paper",
        queries_per_round=4, rounds_cm=rounds_cm, rounds_lt=0, relaxed_rows=50, seed=0,
        backend="cpu", projection=ProjectionConfig(max_steps=5), progress=False,
    ).report


@pytest.mark.parametrize("rounds_cm", [1, 2])
def test_unmeasured_bounds_cover_exactly_the_groups_never_measured(rounds_cm):
    """Round 0 selects 4 of the 6 groups by Gumbel; with a second round, it measures the 2 left
    without selection, and round 0's record must no longer call them unmeasured."""
    report = run_paper(tiny_frame(0), rounds_cm)
    assert report.parameters["rounds"]["CM"] == rounds_cm
    measured = set(report.measurements["group"].to_list())
    unmeasured = report.unmeasured["group"].to_list()
    assert len(measured) == min(4 * rounds_cm, 6)
    assert measured.isdisjoint(unmeasured) and len(set(unmeasured)) == len(unmeasured)
    assert measured | set(unmeasured) == set(range(len(CM_SIZES)))

