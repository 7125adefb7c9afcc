"""A parameter of the wrong Python type is a :class:`~polars_rap.ParameterTypeError` (also a
``TypeError``), as the README promises; a value of the right type out of range stays a plain
:class:`~polars_rap.ParameterError` (a ``ValueError``). Issue #78: ``epsilon="1"`` was a
``ValueError``."""

from __future__ import annotations

import polars as pl
import pytest

import polars_rap
from polars_rap import ParameterError, ParameterTypeError, PlannedStrategy, WorkloadSize

FRAME = pl.DataFrame({"a": ["x", "y"] * 50})
RUN = dict(epsilon=1.0, delta=1e-6, domain={"a": ["x", "y"]}, seed=0, progress=False)


@pytest.mark.parametrize(("name", "value"), [
    ("epsilon", "1"), ("delta", "1e-6"), ("seed", "3"), ("rows", "10"), ("rows", 10.0), ("seed", True),
    ("inference_share", "0.1"), ("confidence", "0.9"),
])
def test_a_synthesize_keyword_of_the_wrong_type_is_a_type_error_naming_it(name, value):
    with pytest.raises(ParameterTypeError, match=f"The '{name}' parameter must be .* of type") as raised:
        polars_rap.synthesize(FRAME, **{**RUN, name: value})
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, ParameterError)


@pytest.mark.parametrize(("name", "value"), [
    ("epsilon", -1.0), ("epsilon", float("nan")), ("delta", 1.0), ("seed", -1), ("rows", 0), ("confidence", 1.5),
])
def test_a_value_of_the_right_type_out_of_range_stays_a_value_error(name, value):
    with pytest.raises(ParameterError, match=f"The '{name}' parameter must be") as raised:
        polars_rap.synthesize(FRAME, **{**RUN, name: value})
    assert not isinstance(raised.value, TypeError)


@pytest.mark.parametrize(("make", "name"), [
    (lambda: PlannedStrategy(relaxed_rows="1000"), "relaxed_rows"),
    (lambda: PlannedStrategy(queries_per_round=2.5), "queries_per_round"),
    (lambda: WorkloadSize(n_linear_thresholds="20000"), "n_linear_thresholds"),
    (lambda: PlannedStrategy(rounds={"LT": "5"}), r"rounds\['LT'\]"),
])
def test_a_strategy_setting_of_the_wrong_type_is_a_type_error_naming_it(make, name):
    with pytest.raises(ParameterTypeError, match=f"{name}'?\"? parameter must be an int"):
        make()
