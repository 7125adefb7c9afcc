"""Rows and fixtures shared by the public-table tests (tests/test_public_prior.py, test_public_shrinkage.py,
test_public_reweight.py, test_public_margins.py): a test module sets ``COLUMNS`` (the CA task's
columns it keeps) and imports the fixtures, which read it (``request.module.COLUMNS``)."""

from __future__ import annotations

import polars as pl
import pytest

import polars_rap
from polars_rap import ProjectionConfig
from polars_rap.schema.domain import Domain

LABELS = ["PINCP_gt_50000"]
FAST = dict(relaxed_rows=60, rounds_lt=2, n_linear_thresholds=100, n_mixed_marginals=20,
            projection=ProjectionConfig(max_steps=8), progress=False)


@pytest.fixture(scope="module")
def declared(task, request) -> dict:
    return {name: task.domain[name] for name in request.module.COLUMNS}


@pytest.fixture(scope="module")
def private(task, request) -> pl.DataFrame:
    return task.frame.select(request.module.COLUMNS).sample(1500, seed=3)


@pytest.fixture(scope="module")
def public(task, request) -> pl.DataFrame:
    """Other rows of the same table (a matched public table; some may be ``private``'s too)."""
    return task.frame.select(request.module.COLUMNS).sample(1200, seed=11)


@pytest.fixture(scope="module")
def domain(private, declared) -> Domain:
    return Domain.from_mapping(private.schema, declared, LABELS)


def run(private: pl.DataFrame, declared: dict, **options):
    """``synthesize`` on ``private`` with the fast settings, at epsilon 1, delta 1e-7 and seed 0
    unless ``options`` say otherwise."""
    return polars_rap.synthesize(private, delta=1e-7, domain=declared, labels=LABELS,
                                 **{"epsilon": 1.0, "seed": 0, **FAST, **options})
