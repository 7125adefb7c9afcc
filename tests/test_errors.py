"""The ParameterError / DataError split: callers tell bad settings from bad data by class,
and every class stays a ValueError (old ``except ValueError`` code keeps working)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import polars_rap as pr
from polars_rap import DataError, ParameterError, ParameterTypeError, ProjectionConfig
from polars_rap.cli.config import ConfigError

FAST_LOOP = dict(relaxed_rows=8, rounds={"LT": 1}, workload={"n_linear_thresholds": 8},
                 projection=ProjectionConfig(max_steps=2))
"""The strategy's loop settings of a tiny run."""
FAST = dict(progress=False, seed=0, backend="cpu")
DOMAIN = {"age": (18, 90), "sex": ["F", "M"]}


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return pl.DataFrame({"age": np.arange(400) % 70 + 18, "sex": ["F", "M"] * 200})


def synthesize(data, strategy="planned", **overrides):
    """A tiny run: ``strategy`` (a name, or a mapping of settings over :data:`FAST_LOOP`'s) with
    :data:`FAST_LOOP`'s loop settings."""
    spec = {"name": strategy} if isinstance(strategy, str) else dict(strategy)
    arguments = dict(epsilon=5.0, delta=1e-9, domain=DOMAIN, strategy={**FAST_LOOP, **spec}, **FAST)
    arguments.update(overrides)
    return pr.synthesize(data, **arguments)


def test_every_class_is_a_value_error_and_only_the_type_one_a_type_error():
    assert issubclass(ParameterError, ValueError) and issubclass(DataError, ValueError)
    assert issubclass(ParameterTypeError, ParameterError) and issubclass(ParameterTypeError, TypeError)
    assert not issubclass(DataError, ParameterError) and not issubclass(ParameterError, DataError)
    assert issubclass(ConfigError, ParameterError)
    assert not issubclass(pr.BudgetExceededError, (ParameterError, DataError))


@pytest.mark.parametrize("overrides, message", [
    (dict(epsilon=0.0), "'epsilon' parameter"),
    (dict(strategy={"rounds": {"LT": "2"}}), "\"rounds\\['LT'\\]\" parameter"),
    (dict(strategy="greedy"), "unknown strategy 'greedy'"),
    (dict(backend="tpu"), "unknown kernel backend 'tpu'"),
    (dict(backend=np.array([1, 2])), r"unknown kernel backend array\(\[1, 2\]\)"),
    (dict(labels=["zzz"]), r"labels name columns that are not in the data: \['zzz'\]"),
    (dict(labels=["age"]), "label column 'age' must be categorical"),
    (dict(domain={"age": (90, 18), "sex": ["F", "M"]}), "column 'age' bounds must be finite with lower < upper"),
    (dict(domain={"age": (18, 90), "sex": ["F", "F", "M"]}), "column 'sex' declares repeated categories"),
    (dict(domain={"sex": ["F", "M"]}), "column 'age' .* has no public domain"),
    (dict(domain={**DOMAIN, "zzz": [1]}), r"not in the data: \['zzz'\]"),
    (dict(domain={**DOMAIN, "sex": "categorial"}), "must be one of"),
    (dict(infer_domain=["zzz"]), r"infer_domain names columns that are not in the data: \['zzz'\]"),
])
def test_bad_settings_are_parameter_errors(frame, overrides, message):
    with pytest.raises(ParameterError, match=message) as info:
        synthesize(frame, **overrides)
    assert not isinstance(info.value, DataError)


@pytest.mark.parametrize("data, domain, message", [
    ([1, 2, 3], DOMAIN, "data must be a polars DataFrame"),
    (None, {"age": (18, 90, 3), "sex": ["F", "M"]}, "a tuple means numeric"),
])
def test_a_setting_of_the_wrong_type_is_both_a_parameter_error_and_a_type_error(frame, data, domain, message):
    with pytest.raises(ParameterTypeError, match=message) as info:
        synthesize(frame if data is None else data, domain=domain)
    assert isinstance(info.value, TypeError)


def make_bad(frame: pl.DataFrame, case: str) -> pl.DataFrame:
    if case == "undeclared category":
        return frame.with_columns(pl.lit("X").alias("sex"))
    if case == "undeclared null":
        return frame.with_columns(pl.lit(None, dtype=pl.String).alias("sex"))
    if case == "infinity":
        return frame.with_columns(pl.lit(float("inf")).alias("age"))
    if case == "text in a numeric column":
        return frame.with_columns(pl.col("age").cast(pl.String))
    if case == "no rows":
        return frame.head(0)
    if case == "too few rows":
        return frame.head(3)
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["undeclared category", "undeclared null", "infinity",
                                  "text in a numeric column", "no rows", "too few rows"])
def test_bad_data_are_data_errors(frame, case):
    with pytest.raises(DataError) as info:
        synthesize(make_bad(frame, case))
    assert not isinstance(info.value, ParameterError)


def test_a_corrupt_saved_model_is_a_data_error(tmp_path, frame):
    directory = synthesize(frame).save(tmp_path / "model")
    (directory / "manifest.json").write_text("{not json")
    with pytest.raises(DataError, match="manifest.json"):
        pr.load(directory)


def test_domain_constructors_raise_parameter_errors():
    with pytest.raises(ParameterError, match="'unlisted' parameter"):
        pr.Categorical(["a"], unlisted="drop")
    with pytest.raises(ParameterError, match="lower < upper"):
        pr.Domain.from_mapping({"x": pl.Float64}, {"x": pr.Numeric(1, 1)})


def test_settings_beyond_the_machine_s_memory_are_refused_by_name_before_any_work() -> None:
    """A count check_int accepts (up to 2**62) can still need more memory than any machine
    has; the OS would kill the process rather than raise. check_memory refuses it first."""
    from polars_rap.pipeline.arguments import check_memory

    fits = dict(relaxed_rows=1000, n_coords=50, n_numeric=2, n_columns=10, rows=10_000,
                n_linear_thresholds=20_000, n_mixed_marginals=2_000)
    check_memory(**fits, available=2**30)
    for name, value in (("relaxed_rows", 10**7), ("n_linear_thresholds", 10**8), ("n_mixed_marginals", 10**6),
                        ("rows", 10**8)):
        with pytest.raises(ParameterError, match=f"The '{name}' parameter would need about"):
            check_memory(**{**fits, name: value}, available=2**30)
    frame = pl.DataFrame({"x": [0.5, 1.5, 2.5] * 100, "c": ["a", "b", "a"] * 100})
    with pytest.raises(ParameterError, match="'relaxed_rows' parameter would need about"):
        pr.synthesize(frame, epsilon=1.0, delta=1e-6, domain={"x": (0, 3), "c": ["a", "b"]},
                      strategy=pr.PlannedStrategy(relaxed_rows=2**40), progress=False)
