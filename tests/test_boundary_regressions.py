"""Defects found while fuzzing the input boundary (tests/test_fuzz_boundary.py), each pinned by
an explicit case: before its fix each call below raised something other than a ParameterError
or DataError naming a column or parameter (a Polars or Python error), or released an invalid
table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import polars_rap as pr
from polars_rap import DataError, ParameterError, ParameterTypeError, ProjectionConfig
from polars_rap.accounting import split_budget

FAST = dict(relaxed_rows=4, rounds_lt=1, n_linear_thresholds=4, projection=ProjectionConfig(max_steps=2),
            progress=False, seed=0, backend="cpu")


def synthesize(data, domain, **overrides):
    return pr.synthesize(data, epsilon=1e4, delta=1e-9, domain=domain, **{**FAST, **overrides})


def test_a_table_without_columns_is_a_data_error():
    """Was ``ValueError: concatenate needs at least one query set`` (no column, no query)."""
    with pytest.raises(DataError, match="the data has no columns"):
        synthesize(pl.DataFrame(), {})
    with pytest.raises(DataError, match="the data has no columns"):
        synthesize(pl.DataFrame({"x": [1.0] * 10}).select([]), {})


def test_zero_rounds_of_every_class_name_the_rounds():
    """Was the same internal ``concatenate`` message: no class had a round to build queries for."""
    with pytest.raises(ParameterError, match="every query class has 0 rounds: set rounds_cm, rounds_lt or rounds_mm"):
        synthesize(pl.DataFrame({"x": [1.0] * 10}), {"x": (0, 2)}, rounds_lt=0)
