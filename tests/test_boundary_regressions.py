"""Defects found while fuzzing the input boundary (tests/test_fuzz_boundary.py), each pinned by
an explicit case: before its fix each call below raised something other than a ParameterError
or DataError naming a column or parameter (a Polars, NumPy or Python error), refused a valid
declaration, or ran with a setting it should have refused."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import polars_rap as pr
from polars_rap import DataError, ParameterError, ParameterTypeError, PlannedStrategy, ProjectionConfig
from polars_rap.privacy.accounting import split_budget

FAST_LOOP = dict(relaxed_rows=4, rounds={"LT": 1}, workload={"n_linear_thresholds": 4},
                 projection=ProjectionConfig(max_steps=2))
"""The strategy's loop settings of a tiny run."""
FAST = dict(progress=False, seed=0, backend="cpu")


def synthesize(data, domain, strategy="planned", **overrides):
    """``pr.synthesize`` of a tiny run: ``strategy`` (a name, or a mapping of settings over
    :data:`FAST_LOOP`'s) with :data:`FAST_LOOP`'s loop settings."""
    spec = {"name": strategy} if isinstance(strategy, str) else dict(strategy)
    return pr.synthesize(data, epsilon=1e4, delta=1e-9, domain=domain, strategy={**FAST_LOOP, **spec},
                         **{**FAST, **overrides})


def test_a_table_without_columns_is_a_data_error():
    """Was ``ValueError: concatenate needs at least one query set`` (no column, no query)."""
    with pytest.raises(DataError, match="the data has no columns"):
        synthesize(pl.DataFrame(), {})
    with pytest.raises(DataError, match="the data has no columns"):
        synthesize(pl.DataFrame({"x": [1.0] * 10}).select([]), {})


def test_zero_rounds_of_every_class_name_the_rounds():
    """Was the same internal ``concatenate`` message: no class had a round to build queries for."""
    with pytest.raises(ParameterError, match=r"every query class has 0 rounds: give one class 1 or more with the "
                                              r"strategy's rounds, e.g. PlannedStrategy\(rounds={\"LT\": 1}\)"):
        synthesize(pl.DataFrame({"x": [1.0] * 10}), {"x": (0, 2)}, strategy={"rounds": {"LT": 0}})


@pytest.mark.parametrize("kind", ["pyarrow", "pandas"])
def test_repeated_column_names_are_a_data_error_naming_them(kind):
    """Was Polars' ``DuplicateError`` (pyarrow) or pandas' ``ValueError`` naming no column."""
    table = pa.table([pa.array([1.0, 2.0]), pa.array([3.0, 4.0])], names=["x", "x"])
    data = table if kind == "pyarrow" else table.to_pandas()
    with pytest.raises(DataError, match=r"the data repeats the column names \['x'\]"):
        synthesize(data, {"x": (0, 5)})


def test_an_empty_column_name_survives_the_arrow_conversion():
    """``pl.from_arrow`` renames a column "" to "column_0": its declaration then named a column
    "not in the data", and the release would have had another name than the input."""
    frame = pl.DataFrame({"": [0.5, 1.5] * 20, "s": ["a", "b"] * 20})
    result = synthesize(frame.to_arrow(), {"": (0, 2), "s": ["a", "b"]})
    assert result.data.schema == frame.schema


def test_files_polars_cannot_read_are_data_errors_naming_the_file(tmp_path):
    """Were Polars' ``NoDataError`` / ``ComputeError`` (and CLI exit status 1, internal)."""
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataError, match=r"cannot read '.*empty\.csv': empty CSV"):
        synthesize(empty, {})
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"not a parquet file")
    with pytest.raises(DataError, match=r"cannot read '.*garbage\.parquet'"):
        synthesize(garbage, {})


def test_cli_exits_3_for_an_unreadable_input(tmp_path, capsys):
    from polars_rap.cli import commands as cli

    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"not a parquet file")
    status = cli.main(["synthesize", str(garbage), "-o", str(tmp_path / "out.parquet"), "--epsilon", "1",
                       "--delta", "1e-9"])
    assert status == cli.EXIT_DATA
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("lower, upper, name", [("a", 1, "lower"), (None, 1, "lower"), (0, [1], "upper")])
def test_numeric_bounds_that_are_not_numbers_name_the_parameter(lower, upper, name):
    """Were ``float()``'s own errors ("could not convert string to float: 'a'")."""
    with pytest.raises(ParameterTypeError, match=f"The '{name}' parameter must be a number"):
        pr.Numeric(lower, upper)


def test_categories_must_be_an_iterable_of_single_values():
    """Were ``'int' object is not iterable`` and ``unhashable type: 'list'`` naming nothing."""
    with pytest.raises(ParameterTypeError, match="The 'categories' parameter must be a list of values. Got 5"):
        pr.Categorical(5)
    with pytest.raises(ParameterTypeError, match=r"column 's': The 'categories' parameter must hold single values"):
        synthesize(pl.DataFrame({"s": ["a"] * 10}), {"s": ["a", ["b"]]})


@pytest.mark.parametrize("bounds", [5, (0, 1, 2), [0]])
def test_bounds_in_a_dict_declaration_must_be_a_pair(bounds):
    """Were ``cannot unpack non-iterable int`` / ``too many (not enough) values to unpack``."""
    with pytest.raises(ParameterTypeError, match="column 'x': 'bounds' must be a pair"):
        synthesize(pl.DataFrame({"x": [1.0] * 10}), {"x": {"bounds": bounds}})


def test_numeric_declaration_errors_name_the_column():
    with pytest.raises(ParameterTypeError, match="column 'x': The 'lower' parameter must be a number"):
        synthesize(pl.DataFrame({"x": [1.0] * 10}), {"x": {"bounds": ("low", 2)}})


def test_a_huge_epsilon_with_inferred_categories_is_a_parameter_error():
    """Was ``OverflowError: math range error`` (e^epsilon in the delta split)."""
    split = split_budget(1e6, 1e-9, approximate_share=0.5)  # the share would be 0: all of delta to rho
    assert (split.approximate_delta, split.conversion_delta) == (0.0, 1e-9)
    with pytest.raises(ParameterError, match=r"the 'epsilon' parameter is too large .* inference of \['s'\]"):
        pr.synthesize(pl.DataFrame({"s": ["a", "b"] * 20}), epsilon=1e6, delta=1e-9, infer_domain=True,
                      strategy=PlannedStrategy(**FAST_LOOP), **FAST)


@pytest.mark.parametrize("epsilon", [1.7976931348623153e+308, 1.797658846586885e+308, 1e6 * (1 + 1e-12)])
def test_an_epsilon_beyond_the_largest_taken_is_a_parameter_error(epsilon):
    """Was ``OverflowError: intermediate overflow in fsum`` (the ledger's closing charge), a
    conversion ``OverflowError`` and infinite inverse-variance weights, at epsilons near the
    largest float (found by test_fuzz_boundary)."""
    frame = pl.DataFrame({"x": [0.5, 1.5] * 40, "s": ["a", "b", "b", "a"] * 20, "y": [0, 1] * 40})
    with pytest.raises(ParameterError, match=r"The 'epsilon' parameter must be at most 1e\+06"):
        pr.synthesize(frame, epsilon=epsilon, delta=1e-9, domain={"x": (0, 2), "s": ["a", "b"], "y": [0, 1]},
                      labels=["y"], strategy=PlannedStrategy(**FAST_LOOP), **FAST)


def test_a_null_dtype_column_cannot_be_declared_numeric():
    """Was Polars' ``InvalidOperationError`` while decoding: a Null column holds no number."""
    with pytest.raises(DataError, match="column 'x' is declared numeric .* but holds Null, not numbers"):
        synthesize(pl.DataFrame({"x": [None] * 10}), {"x": {"bounds": (0, 1), "nullable": True}})
    with pytest.raises(DataError, match="column 'x' is to be inferred as numeric but holds Null"):
        synthesize(pl.DataFrame({"x": [None] * 10, "y": [1.0] * 10}), {"x": "numeric", "y": (0, 2)})


@pytest.mark.parametrize("dtype, bounds", [
    (pl.Int8, (0, 1000)), (pl.UInt8, (-1, 10)), (pl.UInt64, (0, 2**64 - 1)), (pl.Int64, (0, 1e300)),
    (pl.Float32, (0, 1e300)),
])
def test_bounds_beyond_what_the_dtype_holds_are_a_data_error(dtype, bounds):
    """Were Polars' ``InvalidOperationError`` casting decoded values to the integer dtype
    (whenever a value outside it was drawn), and for Float32 a misleading "column 'x' holds
    10 infinite values": decoded values overflowed Float32 and the next round's scores read
    them back."""
    frame = pl.DataFrame({"x": pl.Series([1, 2] * 10, dtype=dtype)})
    with pytest.raises(DataError, match=f"column 'x' is declared with bounds .* but holds {dtype}"):
        synthesize(frame, {"x": bounds})


def test_bounds_at_the_edges_of_the_dtype_still_work():
    frame = pl.DataFrame({"x": pl.Series([0, 255] * 10, dtype=pl.UInt8)})
    result = synthesize(frame, {"x": (0, 255)})
    assert result.data.schema == frame.schema
    values = result.data.get_column("x").to_numpy()
    assert values.min() >= 0 and values.max() <= 255 and np.issubdtype(values.dtype, np.integer)


def test_pandas_column_names_that_are_not_strings_still_work():
    frame = pd.DataFrame({0: [0.5, 1.5] * 20, 1: ["a", "b"] * 20})
    result = synthesize(frame, {"0": (0, 2), "1": ["a", "b"]})
    assert result.data.columns == ["0", "1"]


@pytest.mark.parametrize("name, value, message", [
    ("labels", 5, "The 'labels' parameter must be a column name or a list of them. Got 5"),
    ("labels", None, "The 'labels' parameter must be a column name or a list of them"),
    ("infer_domain", 2.5, "The 'infer_domain' parameter must be True, False, a column name or a list of them"),
    ("domain", [1], "The 'domain' parameter must be a mapping"),
    ("domain", 2.5, "The 'domain' parameter must be a mapping"),
    ("strategy", {"projection": "fast"}, "projection must be a polars_rap.ProjectionConfig or a mapping of its fields"),
    ("seed", "3", "The 'seed' parameter must be None or an int >= 0"),
    ("seed", -1, "The 'seed' parameter must be None or an int >= 0"),
    ("strategy", {"workload": {"max_marginal_cells": "3"}},
     r"The 'max_marginal_cells' parameter must be an int in \[0, inf\)"),
    ("rows", 10**30, r"The 'rows' parameter must be at most 2\*\*62"),
    ("strategy", {"relaxed_rows": 10**30}, r"The 'relaxed_rows' parameter must be at most 2\*\*62"),
])
def test_synthesize_parameters_of_the_wrong_type_or_size_name_the_parameter(name, value, message):
    """Were bare Python/NumPy errors ("'int' object is not iterable", "SeedSequence expects
    int", "'<=' not supported", an AttributeError on the projection, OverflowError, "Maximum
    allowed dimension exceeded"), raised before or deep inside the run. The loop's settings
    (projection, relaxed_rows, max_marginal_cells) were synthesize's keywords; they are the
    strategy's now, checked when it is made."""
    frame = pl.DataFrame({"x": [0.5, 1.5] * 20, "y": [0, 1] * 20})
    arguments = dict(domain={"x": (0, 2), "y": [0, 1]}, labels=["y"])
    arguments[name] = value
    with pytest.raises(ParameterError, match=message):
        synthesize(frame, **arguments)


@pytest.mark.parametrize("field, value, message", [
    ("learning_rate", "a", "The 'learning_rate' parameter must be a finite float > 0"),
    ("max_steps", "2", r"The 'max_steps' parameter must be an int in \[1, inf\)"),
    ("max_steps", 2.5, r"The 'max_steps' parameter must be an int in \[1, inf\)"),
    ("patience", None, r"The 'patience' parameter must be an int in \[1, inf\)"),
    ("max_doublings", "x", r"The 'max_doublings' parameter must be an int in \[0, inf\)"),
    ("beta1", 2.0, r"The 'beta1' parameter must be a float in \[0, 1\)"),
    ("beta2", "a", r"The 'beta2' parameter must be a float in \[0, 1\)"),
    ("adam_epsilon", -1.0, "The 'adam_epsilon' parameter must be a finite float > 0"),
])
def test_projection_settings_are_checked_when_constructed(field, value, message):
    """Were TypeError/ValueError from int() or np.isfinite, a Numba TypingError mid-run
    (beta1='a'), or accepted and run with (beta1=2.0, adam_epsilon=-1)."""
    with pytest.raises(ParameterError, match=message):
        ProjectionConfig(**{field: value})


@pytest.mark.parametrize("bounds", [(np.int64(0), np.int64(2)), (np.float32(0.0), 2), (Decimal("0"), Decimal("2"))])
def test_numpy_and_decimal_bounds_are_bounds(bounds):
    """Were refused as "a tuple means numeric (lower, upper) bounds", which they were."""
    result = synthesize(pl.DataFrame({"x": [0.5, 1.5] * 20}), {"x": bounds})
    assert result.domain["x"].lower == 0.0 and result.domain["x"].upper == 2.0


def test_a_decimal_column_stays_inside_bounds_that_are_off_its_grid():
    """Was 2.47 out of the declared upper bound 2.4699999999999998 (Hypothesis, 2026-11-24):
    decoding clipped to the bounds, then the cast to Decimal(10, 2) rounded back up. Decoded
    values now sit on the decimal grid inside the bounds (2.46 at most here, 0.47 at least)."""
    from polars_rap.schema.domain import ColumnSpec
    from polars_rap.decode.decoding import decoded_values

    frame = pl.DataFrame({"b": [Decimal("1.47"), Decimal("2.47"), None]}, schema={"b": pl.Decimal(10, 2)})
    result = synthesize(frame, {"b": {"bounds": (0.47, 2.4699999999999998), "nullable": True}})
    values = result.data["b"].drop_nulls().cast(pl.Float64).to_numpy()
    assert result.data.schema["b"] == pl.Decimal(10, 2)
    assert ((values >= 0.47) & (values <= 2.4699999999999998)).all()
    spec = next(c for c in result.domain.columns if c.name == "b")
    assert isinstance(spec, ColumnSpec)
    decoded = decoded_values(np.array([0.0, 0.5, 1.0]), spec)
    np.testing.assert_array_equal(decoded, [0.47, 1.47, 2.46])


def test_a_float32_column_stays_inside_bounds_its_cast_would_round_past():
    """Was 3.0000000054977558e38 out of the declared upper bound 3e38 (Hypothesis, 2026-11-29):
    decoding clipped to the bounds in float64, then the cast to Float32 rounded 3e38 up to the
    nearest float32. Decoded values now sit on float32 numbers inside the bounds."""
    from polars_rap.decode.decoding import decoded_values

    frame = pl.DataFrame({"b": [9.0072e15, 9.0072e15, None]}, schema={"b": pl.Float32})
    result = synthesize(frame, {"b": {"bounds": (-3e38, 3e38), "nullable": True}}, strategy="paper")
    values = result.data["b"].drop_nulls().cast(pl.Float64).to_numpy()
    assert result.data.schema["b"] == pl.Float32
    assert ((values >= -3e38) & (values <= 3e38)).all()
    spec = result.domain["b"]
    decoded = pl.Series(decoded_values(np.array([0.0, 1.0]), spec)).cast(pl.Float32).cast(pl.Float64).to_numpy()
    assert decoded[0] >= -3e38 and decoded[1] <= 3e38
    assert decoded[1] == float(np.nextafter(np.float32(3e38), np.float32(0)))  # the largest float32 inside


def test_decimal_bounds_that_hold_no_value_of_the_column_are_a_data_error():
    """Bounds between two multiples of a Decimal column's step leave decoding nothing to give:
    refused, naming the column and the fix."""
    frame = pl.DataFrame({"b": [Decimal("0.47")] * 4}, schema={"b": pl.Decimal(10, 2)})
    with pytest.raises(DataError, match="column 'b' is declared with bounds .* none lies between those bounds"):
        synthesize(frame, {"b": (0.471, 0.479)})


def test_a_schedule_past_float32_is_refused_by_name():
    """Was an OverflowError inside the projection (Hypothesis, 2026-11-24: max_doublings=1798
    made sigma_initial * 2**max_doublings overflow): the kernels read the inverse temperature as
    float32, so a schedule past its range is refused up front, naming the largest that fits;
    that largest one runs."""
    with pytest.raises(ParameterError, match=r"max_doublings=1798 .* use max_doublings <= 124"):
        ProjectionConfig(max_doublings=1798)
    with pytest.raises(ParameterError, match=r"max_doublings=125 with sigma_initial=8 .* use max_doublings <= 124"):
        ProjectionConfig(max_doublings=125)
    with pytest.raises(ParameterError, match=r"max_doublings=3 with sigma_initial=1e\+38 .* <= 1"):
        ProjectionConfig(sigma_initial=1e38, max_doublings=3)
    frame = pl.DataFrame({"x": [0.5, 1.5] * 200, "y": ["a", "b"] * 200})
    result = pr.synthesize(frame, epsilon=1.0, delta=1e-6, domain={"x": (0.0, 2.0), "y": ["a", "b"]}, labels=["y"],
                           seed=0, progress=False,
                           strategy=PlannedStrategy(relaxed_rows=10, rounds={"LT": 1}, workload={"n_linear_thresholds": 10},
                                                    projection=ProjectionConfig(max_doublings=124, max_steps=2)))
    assert result.data.height == 400


def test_a_first_temperature_that_float32_reads_as_zero_is_refused_by_name():
    """Was "sigma must be > 0 ... found minimum 0.0" from inside the kernels, naming no
    parameter (Hypothesis, 2026-11-24: sigma_initial=1e-300 underflowed to 0 in float32)."""
    with pytest.raises(ParameterError, match=r"The 'sigma_initial' parameter must be at least 1.18e-38"):
        ProjectionConfig(sigma_initial=1e-300)
    assert ProjectionConfig(sigma_initial=float(np.finfo(np.float32).tiny)).sigma_initial > 0


@pytest.mark.parametrize("categories, shown", [([1, -1], "-1 reads as True"), ([2, 0], "2 reads as True")])
def test_categories_the_column_dtype_would_merge_are_a_data_error(categories, shown):
    """Was polars' "`old` input for `replace` must not contain duplicates" ([1, -1] both cast to
    true in a Boolean column; Hypothesis, 2026-11-24), and [2, 0] silently counted every true
    row as the category 2. Categories that do not survive the cast to the column's dtype are
    refused, naming the column, the value and the fix."""
    frame = pl.DataFrame({"a": [False, True] * 20, "b": [0, 1] * 20})
    with pytest.raises(DataError, match=rf"column 'a' holds Boolean .* \({shown}\); declare them with the column's type"):
        synthesize(frame, {"a": categories, "b": (0, 1)})


def test_an_integer_column_s_categories_that_are_not_whole_are_a_data_error():
    """1.5 would have been read as 1 and its rows counted there."""
    frame = pl.DataFrame({"a": [1, 2] * 20, "c": ["x", "y"] * 20})
    with pytest.raises(DataError, match=r"column 'a' holds Int64 .* \(1.5 reads as 1\)"):
        synthesize(frame, {"a": [1.5, 2], "c": ["x", "y"]})
    result = synthesize(frame, {"a": [1.0, 2.0], "c": ["x", "y"]})
    assert set(result.data["a"].to_list()) <= {1, 2}


@pytest.mark.parametrize("domain, labels", [
    ({"a": [1, 2]}, []),  # one categorical column and nothing else
    ({"y": [0, 1]}, ["y"]),  # a label alone
    ({"y": [0, 1], "z": [0, 1]}, ["y", "z"]),  # labels alone
])
def test_a_table_of_one_categorical_column_or_of_labels_alone_is_synthesized(domain, labels):
    """Were "the workload is empty": with no label the categorical marginals were the 2-way
    ones (none for one column), and with labels the feature pairs × label (none without
    features). A lone column now gets its 1-way marginal and labels alone their pairs, and the
    joint distribution comes back."""
    frame = pl.DataFrame({"a": [1, 2, 2, 2] * 50, "y": [0, 1] * 100}).with_columns(z=pl.col("a") - 1)
    frame = frame.select(list(domain))
    result = pr.synthesize(frame, epsilon=1e4, delta=1e-9, domain=domain, labels=labels, seed=0,
                           strategy=PlannedStrategy(relaxed_rows=40), progress=False)
    real = frame.group_by(list(domain)).len().sort(list(domain))
    fake = result.data.group_by(list(domain)).len().sort(list(domain))
    joined = real.join(fake, on=list(domain), how="full", coalesce=True).fill_null(0)
    difference = joined["len"].cast(pl.Int64) - joined["len_right"].cast(pl.Int64)
    assert difference.abs().max() <= 0.05 * frame.height
