"""Rows and fixtures shared by the public-table tests (tests/test_public_prior.py, test_public_shrinkage.py,
test_public_reweight.py, test_public_margins.py): a test module sets ``COLUMNS`` (the CA task's
columns it keeps) and imports the fixtures, which read it (``request.module.COLUMNS``)."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

import polars_rap
from polars_rap import PlannedStrategy, ProjectionConfig, WorkloadSize
from polars_rap.schema.domain import Domain

LABELS = ["PINCP_gt_50000"]
FAST = dict(relaxed_rows=60, rounds={"LT": 2}, workload=WorkloadSize(n_linear_thresholds=100, n_mixed_marginals=20),
            projection=ProjectionConfig(max_steps=8))
"""The fast runs' loop settings (fields every strategy takes: :func:`fast`)."""


def fast(strategy=None, **settings):
    """``strategy`` (default: the planned strategy) with the :data:`FAST` loop settings, and
    ``settings`` over them."""
    return dataclasses.replace(PlannedStrategy() if strategy is None else strategy, **{**FAST, **settings})


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


def run(private: pl.DataFrame, declared: dict, *, strategy=None, **options):
    """``synthesize`` on ``private`` with ``strategy`` (default: the planned strategy) at the fast
    loop settings, at epsilon 1, delta 1e-7 and seed 0 unless ``options`` say otherwise."""
    return polars_rap.synthesize(private, delta=1e-7, domain=declared, labels=LABELS, strategy=fast(strategy),
                                 **{"epsilon": 1.0, "seed": 0, "progress": False, **options})
