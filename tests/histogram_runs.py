"""A small run whose numeric histograms' Gaussian releases are recorded, shared by the tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from unittest import mock

import numpy as np
import polars as pl

import polars_rap
from polars_rap.fit import numeric_histograms
from polars_rap.privacy import ledger as privacy


LOOP = dict(relaxed_rows=100, rounds={"LT": 2}, workload={"n_linear_thresholds": 200},
            projection=polars_rap.ProjectionConfig(max_steps=10))
"""The loop settings of :func:`recorded_histogram_run` (a few rows and steps)."""


def with_loop(strategy):
    """``strategy`` (a strategy object or a mapping) with :data:`LOOP`'s settings."""
    if isinstance(strategy, Mapping):
        return {**strategy, **LOOP}
    return dataclasses.replace(strategy, **LOOP)


def recorded_histogram_run(frame: pl.DataFrame, declared: Mapping, strategy):
    """``synthesize`` on ``frame`` (label ``y``, epsilon 1, a few rows and steps: :data:`LOOP`) with
    ``strategy`` (a strategy object, or a mapping as ``synthesize`` takes one), and every ``numeric_histograms.gaussian_mechanism`` call it made: dicts of
    the values, L2 sensitivity, rho, noisy output, std, description, n_rows and the rho of the
    ledger events the call charged."""
    calls = []
    real = privacy.gaussian_mechanism

    def recording(values, l2_sensitivity, rho, ledger, rng, description="", round=None, *, n_rows=1):
        before = len(ledger.events)
        noisy, std = real(values, l2_sensitivity, rho, ledger, rng, description, round, n_rows=n_rows)
        calls.append(dict(values=np.array(values, copy=True), l2=l2_sensitivity, rho=rho, noisy=noisy.copy(),
                          std=std, charged=[e.rho for e in ledger.events[before:]], n_rows=n_rows,
                          description=description))
        return noisy, std

    with mock.patch.object(numeric_histograms, "gaussian_mechanism", recording):
        result = polars_rap.synthesize(
            frame, epsilon=1.0, delta=1e-6, domain=dict(declared), labels=["y"], seed=3, progress=False,
            backend="cpu", strategy=with_loop(strategy),
        )
    return result, calls
