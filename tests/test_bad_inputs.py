"""Bad input to ``synthesize``: each case is a clear error (naming the column and the fix) or a
documented, counted repair — never a silent leak, a crash or a wrong output (issue #6)."""

from __future__ import annotations

import logging
import re
import warnings

import numpy as np
import polars as pl
import pytest

import polars_rap as pr
from polars_rap import ProjectionConfig

N_ROWS = 2_000
DOMAIN = {"age": (18, 100), "sex": ["F", "M"], "y": [0, 1]}
FAST_LOOP = dict(
    relaxed_rows=50, rounds={"CM": 1, "LT": 1}, workload={"n_linear_thresholds": 50},
    projection=ProjectionConfig(max_steps=3),
)
"""The strategy's loop settings of a short run."""
FAST = dict(strategy=pr.PlannedStrategy(**FAST_LOOP), progress=False, seed=0)


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return pl.DataFrame({
        "age": np.arange(N_ROWS) % 80 + 18,
        "sex": ["F", "M"] * (N_ROWS // 2),
        "y": [0, 1, 1, 0] * (N_ROWS // 4),
    })


def synthesize(data, **overrides):
    arguments = dict(epsilon=1.0, delta=1e-9, domain=DOMAIN, labels=["y"], **FAST)
    arguments.update(overrides)
    return pr.synthesize(data, **arguments)


def with_age(frame: pl.DataFrame, value) -> pl.DataFrame:
    """``frame`` with ``age`` as Float64 and ``value`` wherever age == 20 (25 rows)."""
    age = pl.col("age").cast(pl.Float64)
    return frame.with_columns(pl.when(pl.col("age") == 20).then(value).otherwise(age).alias("age"))


# ------------------------------------------------------------------ shape of the input
def test_empty_frame_is_refused(frame):
    with pytest.raises(ValueError, match="no rows"):
        synthesize(frame.head(0))


def test_too_few_rows_names_the_minimum(frame):
    with pytest.raises(ValueError, match=r"needs at least (\d+) rows") as info:
        synthesize(frame.head(50))
    minimum = int(re.search(r"needs at least (\d+) rows", str(info.value)).group(1))
    assert minimum > 50
    assert "raise epsilon" in str(info.value)
    synthesize(frame.head(minimum))  # the stated minimum is enough


def test_domain_naming_an_absent_column(frame):
    with pytest.raises(ValueError, match=r"not in the data: \['zzz'\]"):
        synthesize(frame, domain={**DOMAIN, "zzz": [1, 2]})


def test_label_naming_an_absent_column(frame):
    with pytest.raises(ValueError, match=r"labels name columns that are not in the data: \['zzz'\]"):
        synthesize(frame, labels=["zzz"])


def test_numeric_label_is_refused_with_the_fix(frame):
    with pytest.raises(ValueError, match="label column 'age' must be categorical") as info:
        synthesize(frame, labels=["age"])
    assert "domain={'age': [" in str(info.value)


def test_column_without_a_domain_points_to_the_options(frame):
    with pytest.raises(ValueError, match="column 'age'.*has no public domain") as info:
        synthesize(frame, domain={"sex": ["F", "M"], "y": [0, 1]})
    assert "infer_domain=True" in str(info.value) and "(lower, upper)" in str(info.value)


def test_every_undeclared_column_is_named_at_once(frame):
    """Not the first only: a user fixing them one run at a time would need three runs."""
    wide = frame.with_columns(income=pl.col("age") * 1000.0)
    with pytest.raises(ValueError, match="3 columns have no public domain: 'age' \\(Int64\\), 'y' "
                                         "\\(Int64\\), 'income' \\(Float64\\)") as info:
        synthesize(wide, domain={"sex": ["F", "M"]})
    # a label's example is a list of classes, a numeric feature's a pair of bounds
    assert "domain={'age': (lower, upper), 'y': [class, ...], 'income': (lower, upper)}" in str(info.value)


def test_the_undeclared_columns_error_offers_to_drop_them(frame):
    with pytest.raises(ValueError, match=r"or leave them out with drop=\['age', 'y'\]"):
        synthesize(frame, domain={"sex": ["F", "M"]}, labels=[])


def test_drop_leaves_columns_out_as_if_the_table_never_had_them(frame, tmp_path):
    """A wide table's extra columns are never read: the same rows, report and output as the
    narrow table's, from a frame or a file, and the report lists what was dropped."""
    wide = frame.with_columns(person_id=pl.int_range(pl.len()), weight=pl.lit(1.5), note=pl.lit("x"))
    wide.write_parquet(tmp_path / "wide.parquet")
    narrow = synthesize(frame)
    for data in (wide, tmp_path / "wide.parquet"):
        dropped = synthesize(data, drop=["person_id", "weight", "note"])
        assert dropped.data.equals(narrow.data) and dropped.data.columns == frame.columns
        assert dropped.report.rho_spent == narrow.report.rho_spent
        assert dropped.report.parameters["dropped_columns"] == ["person_id", "weight", "note"]
    assert narrow.report.parameters["dropped_columns"] == []
    assert synthesize(wide.drop("weight", "note"), drop="person_id").data.equals(narrow.data)  # one name alone


@pytest.mark.parametrize(("overrides", "error", "pattern"), [
    (dict(drop=["person_idd"]), ValueError,
     r"'drop' parameter names columns the data does not have: \['person_idd'\]; did you mean 'person_id'\?"),
    (dict(drop=["person_id", "age"]), ValueError,
     r"names columns that domain=, labels or infer_domain also name: \['age'\]"),
    (dict(drop=["person_id"], infer_domain=["person_id"]), ValueError, r"also name: \['person_id'\]"),
    (dict(drop=[3]), TypeError, r"The 'drop' parameter must be a column name or a list of them"),
])
def test_drop_names_are_checked(frame, overrides, error, pattern):
    with pytest.raises(error, match=pattern):
        synthesize(frame.with_columns(person_id=pl.int_range(pl.len())), **overrides)


def test_undeclared_columns_are_refused_before_private_inference_reads_rows(frame, monkeypatch):
    from polars_rap.privacy import inference
    from polars_rap.pipeline import inputs as inputs_stage

    def no_reading(*args, **kwargs):
        raise AssertionError("the inference pass ran before the domain check")

    monkeypatch.setattr(inputs_stage, "infer_declarations", no_reading)
    assert inference.infer_declarations is not no_reading
    with pytest.raises(ValueError, match="column 'age' \\(Int64\\) has no public domain"):
        synthesize(frame, domain={"sex": "categorical", "y": [0, 1]})


def test_float_label_gets_classes_or_a_derived_label_not_made_up_categories(frame):
    with pytest.raises(ValueError, match="label column 'score' must be categorical") as info:
        synthesize(frame.with_columns(score=pl.col("age") / 100.0),
                   domain={**DOMAIN, "score": (0.0, 1.0)}, labels=["score"])
    text = str(info.value)
    assert "declared numeric with bounds (0, 1)" in text and "[0, 1]" not in text
    assert "[class, ...]" in text and "pl.col('score') > threshold" in text and "remove 'score' from labels" in text


# ------------------------------------------------------------------ content of the input
def test_numeric_column_holding_strings(frame):
    with pytest.raises(ValueError, match="column 'age' is declared numeric.*holds String") as info:
        synthesize(frame.with_columns(pl.col("age").cast(pl.String)))
    assert "cast(pl.Float64" in str(info.value)


def test_text_declared_numeric_says_when_the_suggested_cast_fails_and_what_lenient_casting_costs(frame):
    text_ages = frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("n/a")).otherwise(pl.col("age").cast(pl.String)).alias("age"))
    with pytest.raises(ValueError, match="holds String, not numbers") as info:
        synthesize(text_ages)
    message = str(info.value)
    assert "fails on any value that is not a number" in message and "declared nullable" in message
    with pytest.raises(pl.exceptions.InvalidOperationError):  # the strict cast does fail, as said
        text_ages.select(pl.col("age").cast(pl.Float64))
    assert text_ages.select(pl.col("age").cast(pl.Float64, strict=False)).null_count().item() == 1


def test_nan_in_a_column_declared_without_nulls(frame):
    with pytest.raises(ValueError, match="column 'age' holds 25 nulls/NaN") as info:
        synthesize(with_age(frame, float("nan")))
    assert "'nullable': True" in str(info.value)


def test_nan_is_a_null_when_the_column_is_nullable(frame):
    domain = {**DOMAIN, "age": {"bounds": (18, 100), "nullable": True}}
    result = synthesize(with_age(frame, float("nan")), domain=domain)
    age = result.data.get_column("age")
    assert age.dtype == pl.Float64 and not age.is_nan().any()  # NaN came back as null


@pytest.mark.parametrize("value", [float("inf"), float("-inf")])
def test_infinities_are_refused(frame, value):
    with pytest.raises(ValueError, match="column 'age' holds 25 infinite values") as info:
        synthesize(with_age(frame, value))
    assert "is_infinite()" in str(info.value)


def test_values_outside_bounds_are_clipped_and_counted_for_the_curator_only(frame, caplog):
    with caplog.at_level(logging.WARNING):
        result = synthesize(frame, domain={**DOMAIN, "age": (20, 50)})
    n_outside = int(((frame["age"] < 20) | (frame["age"] > 50)).sum())
    assert any(f"{n_outside} values outside the domain's bounds" in r.getMessage() for r in caplog.records)
    age = result.data.get_column("age")
    assert age.min() >= 20 and age.max() <= 50
    released = result.report.to_json()
    # the count is curator-only, never released: not as a number of its own (a released
    # fraction such as 0.1225 may hold its digits)
    assert not re.search(rf"(?<![\d.]){n_outside}(?![\d.])", released)
    assert "clip" not in released.lower()


def test_undeclared_category_lists_examples_and_the_fix(frame):
    with pytest.raises(ValueError, match=r"column 'sex' holds 1000 values outside its declared categories, e.g. \['M'\]") as info:
        synthesize(frame, domain={**DOMAIN, "sex": ["F"]})
    assert "category list in domain=" in str(info.value)


def test_undeclared_category_in_a_file_read_in_one_batch_does_not_say_reading_stopped(frame, tmp_path):
    path = tmp_path / "people.parquet"
    frame.with_columns(pl.when(pl.col("age") == 50).then(pl.lit("X")).otherwise(pl.col("sex")).alias("sex")
                       ).write_parquet(path)
    with pytest.raises(ValueError, match="outside its declared categories") as info:
        synthesize(path)
    assert "reading stopped" not in str(info.value)
    assert str(info.value).endswith(f"(found in the batch of input rows 0 to {N_ROWS - 1:,}; nothing was released)")


def test_every_column_whose_bounds_cannot_be_inferred_is_named_in_one_error(frame):
    """Issue 73, item 5: two sparse numeric columns asked as "numeric" are both named in one
    DataError, each with its declaration, so that the curator fixes them in one go."""
    sparse = pl.when(pl.int_range(pl.len()) % 400 == 0).then(pl.int_range(pl.len()) % 7).otherwise(None)
    data = frame.with_columns(visits=sparse, stays=sparse * 3)
    with pytest.raises(pr.DataError) as info:
        synthesize(data, domain={**DOMAIN, "visits": "numeric", "stays": "numeric"})
    message = str(info.value)
    assert message.startswith("columns 'visits' and 'stays': no value range cleared the privacy threshold")
    assert "domain={'visits': (lower, upper), 'stays': (lower, upper)}" in message


def test_a_column_inferred_to_no_category_warns_naming_it_and_why(frame):
    unique = frame.with_columns(code=pl.format("c{}", pl.int_range(pl.len())))
    with pytest.warns(UserWarning, match="column 'code': no category cleared the privacy threshold "
                                         "\\(about [0-9,]+ rows per value at this budget\\), so every "
                                         "synthetic value of it will be null") as record:
        result = synthesize(unique, domain={**DOMAIN, "code": "categorical"})
    assert record[0].filename == __file__  # it points at the caller's line
    assert result.data.get_column("code").null_count() == N_ROWS


def test_null_in_a_categorical_column_declared_without_nulls(frame):
    data = frame.with_columns(pl.when(pl.col("age") == 30).then(None).otherwise(pl.col("sex")).alias("sex"))
    with pytest.raises(ValueError, match="column 'sex' holds 25 nulls") as info:
        synthesize(data)
    assert "[..., None]" in str(info.value)


def test_huge_cardinality_is_refused_before_any_work(frame):
    categories = [f"c{i}" for i in range(20_000)] + ["F", "M"]
    with pytest.raises(ValueError, match="column 'sex' declares 20,002 categories, more than 10,000") as info:
        synthesize(frame, domain={**DOMAIN, "sex": categories})
    assert "Recode it to fewer categories" in str(info.value)


# ------------------------------------------------------------------ parameters
@pytest.mark.parametrize("epsilon", [0, -1.0, float("inf"), float("nan"), "1", True])
def test_epsilon_must_be_positive_and_finite(frame, epsilon):
    with pytest.raises(ValueError, match="'epsilon' parameter must be a finite float > 0"):
        synthesize(frame, epsilon=epsilon)


@pytest.mark.parametrize("delta", [0, 1, 1.5, -1e-9, float("nan")])
def test_delta_must_lie_in_the_open_unit_interval(frame, delta):
    with pytest.raises(ValueError, match=r"'delta' parameter must be a float in \(0, 1\)"):
        synthesize(frame, delta=delta)


def test_delta_of_at_least_one_over_n_warns(frame):
    with pytest.warns(UserWarning, match=r"delta=0.001 is at least 1/n = 0.0005") as record:
        synthesize(frame, delta=1e-3)
    assert "1/n^2" in str(record[0].message)


def test_small_delta_does_not_warn(frame):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        synthesize(frame)


@pytest.mark.parametrize("rows", [0, -5, 2.5, True])
def test_rows_must_be_a_positive_int(frame, rows):
    with pytest.raises(ValueError, match=r"'rows' parameter must be an int in \[1, inf\)"):
        synthesize(frame, rows=rows)


def test_unknown_option_is_refused_by_name(frame):
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['n_rounds'\]"):
        synthesize(frame, n_rounds=3)


@pytest.mark.parametrize(("value", "include_low", "include_high", "ok"), [
    (0.0, False, False, False), (0.0, True, False, True), (1.0, True, False, False), (1.0, False, True, True),
    (0.5, False, False, True), (float("nan"), True, True, False), (True, True, True, False), ("0.5", True, True, False),
    (np.float32(0.25), False, False, True), (np.int64(1), False, True, True),
])
def test_check_range_takes_real_numbers_inside_the_interval_its_ends_open_unless_included(
        value, include_low, include_high, ok):
    """The shared range check: a bool, a string and NaN never pass; the message names the
    parameter and the interval with its brackets."""
    from polars_rap.checks import check_range

    if ok:
        check_range("x", value, 0.0, 1.0, include_low=include_low, include_high=include_high)
        return
    interval = ("[" if include_low else "(") + "0, 1" + ("]" if include_high else ")")
    with pytest.raises(pr.ParameterError, match=re.escape(f"The 'x' parameter must be a float in {interval} (note)")):
        check_range("x", value, 0.0, 1.0, include_low=include_low, include_high=include_high, note=" (note)")


@pytest.mark.parametrize("share", [0, 1, -0.1, True])
def test_inference_share_must_lie_in_the_open_unit_interval(frame, share):
    with pytest.raises(ValueError, match=r"'inference_share' parameter must be a float in \(0, 1\)"):
        synthesize(frame, inference_share=share)


def test_misspelt_inference_kind(frame):
    with pytest.raises(ValueError, match="'categorial'.*must be one of \\['categorical', 'numeric'\\]"):
        synthesize(frame, domain={**DOMAIN, "sex": "categorial"})


def test_numeric_inference_on_text(frame):
    with pytest.raises(ValueError, match="column 'age' is to be inferred as numeric but holds String"):
        synthesize(frame.with_columns(pl.col("age").cast(pl.String)), domain={**DOMAIN, "age": "numeric"})


# ------------------------------------------------------------------ kinds of input
def test_arrow_table_is_converted(frame):
    result = synthesize(frame.to_arrow())
    assert result.data.columns == frame.columns


def test_pandas_frame_is_converted(frame):
    pytest.importorskip("pandas")
    result = synthesize(frame.to_pandas())
    assert result.data.columns == frame.columns


def test_a_pandas_object_column_whose_values_do_not_read_as_its_declaration_names_the_fix(frame):
    """Issue 73, item 1: a pandas ``object`` column is typed from its declaration (int bounds:
    Int64), so one 4.5 in it is an error naming the column, the type and how to declare or cast
    it, instead of a Float64 column (the neighbouring table's would be Int64)."""
    pd = pytest.importorskip("pandas")
    data = frame.to_pandas()
    data["age"] = pd.Series([*data["age"].tolist()[:-1], 45.5], dtype=object)
    with pytest.raises(pr.DataError) as info:
        synthesize(data)
    message = str(info.value)
    assert message.startswith("column 'age' is a pandas object column, whose values have no type of their own, "
                              "so its type comes from its declaration in domain= (Int64;")
    assert "Declare the column to match its values (e.g. float bounds (0.0, 10.0)" in message
    assert ".astype('float64')" in message
    data["age"] = data["age"].map(float)  # still object; now declared with float bounds: Float64
    result = synthesize(data, domain={**DOMAIN, "age": (18.0, 100.0)})
    assert result.data.schema["age"] == pl.Float64


def test_a_lazyframe_with_an_object_column_is_refused_naming_it():
    lazy = pl.DataFrame({"x": pl.Series([1, 2] * 500, dtype=pl.Object), "y": [0, 1] * 500}).lazy()
    with pytest.raises(pr.DataError, match=r"the LazyFrame's columns \['x'\] hold Python objects \(Polars Object\), "
                                           "which have no type of their own: collect it into a DataFrame"):
        synthesize(lazy, domain={"x": (0, 5), "y": [0, 1]})


@pytest.mark.parametrize("data", [[1, 2, 3], {"age": [1]}, np.zeros((3, 3)), 42])
def test_other_inputs_are_refused_naming_what_works(data):
    with pytest.raises(TypeError, match="data must be a polars DataFrame/LazyFrame, a pyarrow Table, a pandas DataFrame or a path"):
        synthesize(data)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no file at"):
        synthesize(tmp_path / "absent.parquet")


def test_unreadable_file_type(tmp_path):
    path = tmp_path / "table.xlsx"
    path.write_bytes(b"not a table")
    with pytest.raises(ValueError, match=r"use a \.parquet, \.csv or \.arrow/\.ipc file"):
        synthesize(path)
