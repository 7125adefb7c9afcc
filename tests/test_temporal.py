"""Dates, datetimes and durations: declared with date bounds, synthesized as numbers, returned
with their dtype (time unit and time zone), in the Python domain, TOML configs and inference."""

from __future__ import annotations

import datetime as dt
import logging

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.schema import temporal
from polars_rap.cli.config import read_config
from polars_rap.schema.domain import Domain, Numeric
from polars_rap.schema.encoding import encode
from polars_rap.io.source import csv_dtype

DATE_BOUNDS = (dt.date(1990, 1, 1), dt.date(2025, 12, 31))
TIME_BOUNDS = (dt.datetime(1990, 1, 1), dt.datetime(2025, 12, 31, 23, 59))
DURATION_BOUNDS = (dt.timedelta(0), dt.timedelta(hours=2))


def _frame(n_rows: int = 1500, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    days = rng.integers(7305, 20000, n_rows)  # 1990-01-01 .. 2024-10-04
    instants = days.astype(np.int64) * 86_400_000_000 + rng.integers(0, 86_400_000_000, n_rows)
    return pl.DataFrame({
        "day": pl.Series(days, dtype=pl.Int32).cast(pl.Date),
        "stamp": pl.Series(instants).cast(pl.Datetime("us", "Europe/Paris")).cast(pl.Datetime("ms", "Europe/Paris")),
        "wait": pl.Series(rng.integers(0, 7_200_000_000, n_rows)).cast(pl.Duration("us")).cast(pl.Duration("ns")),
        "group": rng.choice(["a", "b"], n_rows),
    })


DOMAIN = {"day": DATE_BOUNDS, "stamp": TIME_BOUNDS, "wait": {"bounds": DURATION_BOUNDS}, "group": ["a", "b"]}


def small_loop(relaxed_rows: int) -> polars_rap.PlannedStrategy:
    """The planned strategy in a short loop: ``relaxed_rows`` rows, 2 threshold rounds, 50 threshold queries."""
    return polars_rap.PlannedStrategy(relaxed_rows=relaxed_rows, rounds={"LT": 2}, workload={"n_linear_thresholds": 50})


@pytest.fixture(scope="module")
def synthesis():
    frame = _frame()
    result = polars_rap.synthesize(
        frame, epsilon=5.0, delta=1e-7, domain=DOMAIN, labels=["group"], seed=0, progress=False,
        strategy=polars_rap.PlannedStrategy(relaxed_rows=60, rounds={"LT": 5}, workload={"n_linear_thresholds": 300}))
    return frame, result


def test_synthetic_temporal_columns_keep_dtype_time_unit_and_time_zone(synthesis):
    frame, result = synthesis
    assert result.data.schema == frame.schema
    assert result.data.schema["stamp"] == pl.Datetime("ms", "Europe/Paris")
    assert result.data.schema["wait"] == pl.Duration("ns")
    assert result.model.sample(200, seed=1).schema == frame.schema


def test_synthetic_temporal_values_respect_the_declared_bounds(synthesis):
    _, result = synthesis
    data = result.data
    assert DATE_BOUNDS[0] <= data["day"].min() and data["day"].max() <= DATE_BOUNDS[1]
    zone = dt.timezone.utc  # compare instants: naive bounds are read in the column's time zone
    lower, upper = (pl.Series([b]).dt.replace_time_zone("Europe/Paris").dt.convert_time_zone("UTC")[0] for b in TIME_BOUNDS)
    stamps = data["stamp"].dt.convert_time_zone("UTC")
    assert lower <= stamps.min().astimezone(zone) and stamps.max().astimezone(zone) <= upper
    assert DURATION_BOUNDS[0] <= data["wait"].min() and data["wait"].max() <= DURATION_BOUNDS[1]
    # whole days and whole microseconds: the internal units of the decoded values
    assert (temporal.to_internal(data["wait"]) % 1 == 0).all()


def test_saved_model_round_trips_a_temporal_domain(synthesis, tmp_path):
    frame, result = synthesis
    model = polars_rap.load(result.save(tmp_path / "model"))
    assert model.domain == result.domain
    assert model.domain["day"].declaration().lower == DATE_BOUNDS[0]
    assert model.sample(50, seed=0).schema == frame.schema


def test_internal_units_are_days_and_microseconds_utc():
    domain = Domain.from_mapping(
        {"day": pl.Date, "stamp": pl.Datetime("ns", "UTC"), "local": pl.Datetime("us", "Asia/Tokyo")},
        {"day": (dt.date(1970, 1, 1), dt.date(1970, 1, 11)),
         "stamp": (dt.date(1970, 1, 1), dt.datetime(1970, 1, 2, tzinfo=dt.timezone.utc)),
         "local": (dt.datetime(1970, 1, 1, 9, 0), dt.datetime(1970, 1, 2, 9, 0))})
    assert (domain["day"].lower, domain["day"].upper) == (0.0, 10.0)
    assert (domain["stamp"].lower, domain["stamp"].upper) == (0.0, 86_400_000_000.0)
    assert (domain["local"].lower, domain["local"].upper) == (0.0, 86_400_000_000.0)  # 09:00 in Tokyo = 00:00 UTC
    assert domain["day"].is_integer and domain["stamp"].is_integer


def test_encoding_maps_temporal_values_linearly_over_their_bounds():
    frame = pl.DataFrame({"day": [dt.date(1970, 1, 1), dt.date(1970, 1, 6), dt.date(1970, 1, 11), None]})
    domain = Domain.from_mapping(frame.schema, {"day": {"bounds": (dt.date(1970, 1, 1), dt.date(1970, 1, 11)),
                                                         "nullable": True}})
    encoded = encode(frame, domain)
    assert encoded.numerics[:, 0].tolist() == [0.0, 0.5, 1.0, 0.0]
    assert encoded.codes[:, 0].tolist() == [0, 0, 0, 1]


def test_from_internal_rounds_and_keeps_nulls():
    out = temporal.from_internal("d", np.array([0.4, 1.6, np.nan]), pl.Date)
    assert out.to_list() == [dt.date(1970, 1, 1), dt.date(1970, 1, 3), None]


# ------------------------------------------------------------------ declarations and messages


def test_an_undeclared_date_column_names_dates_and_shows_date_bounds():
    with pytest.raises(ValueError, match=r"'day' \(Date\) has no public domain.*date\(1990, 1, 1\)"):
        Domain.from_mapping({"day": pl.Date}, {})


def test_numbers_as_bounds_of_a_date_column_are_refused_naming_the_type():
    with pytest.raises(TypeError, match=r"column 'day' holds Date, so its bound must be a Python date"):
        Domain.from_mapping({"day": pl.Date}, {"day": (0, 100)})
    with pytest.raises(TypeError, match=r"column 'n' holds Int64, so its bound must be a number.*Date"):
        Domain.from_mapping({"n": pl.Int64}, {"n": DATE_BOUNDS})
    with pytest.raises(TypeError, match=r"column 'wait' holds Duration.*timedelta"):
        Domain.from_mapping({"wait": pl.Duration("us")}, {"wait": DATE_BOUNDS})


def test_time_of_day_columns_say_they_are_not_supported():
    with pytest.raises(ValueError, match=r"'t' holds Time, which polars-rap does not support"):
        Domain.from_mapping({"t": pl.Time}, {})


def test_date_atoms_and_scale_are_declarable():
    domain = Domain.from_mapping({"day": pl.Date}, {"day": Numeric(*DATE_BOUNDS, scale="sqrt",
                                                                    atoms=[dt.date(2000, 1, 1)])})
    assert domain["day"].atoms == (10957.0,) and domain["day"].scale == "sqrt"
    with pytest.raises(ValueError, match=r"atoms \[datetime.date\(1980, 1, 1\)\] lie outside its bounds"):
        Domain.from_mapping({"day": pl.Date}, {"day": {"bounds": DATE_BOUNDS, "atoms": [dt.date(1980, 1, 1)]}})


def test_out_of_bounds_dates_are_clipped_and_logged_as_dates(caplog):
    frame = pl.DataFrame({"day": [dt.date(1980, 1, 1), dt.date(2000, 1, 1)]})
    domain = Domain.from_mapping(frame.schema, {"day": DATE_BOUNDS})
    with caplog.at_level(logging.WARNING):
        encoded = encode(frame, domain)
    assert encoded.numerics[0, 0] == 0.0
    assert "1 values outside the domain's bounds [1990-01-01, 2025-12-31]" in caplog.text


# ------------------------------------------------------------------ config files and CSV


def test_a_config_file_declares_date_bounds_as_toml_dates(tmp_path):
    config = tmp_path / "dates.toml"
    config.write_text(
        'labels = ["group"]\n'
        "[domain.day]\nkind = \"numeric\"\nbounds = [1990-01-01, 2025-12-31]\natoms = [2000-01-01]\n"
        "[domain.stamp]\nkind = \"numeric\"\nbounds = [1990-01-01T00:00:00, 2025-12-31T23:59:00]\n"
        "[domain.group]\nkind = \"categorical\"\ncategories = [\"a\", \"b\"]\n")
    parsed = read_config(config)
    assert parsed.domain["day"] == {"bounds": DATE_BOUNDS, "atoms": [dt.date(2000, 1, 1)]}
    assert parsed.domain["stamp"] == TIME_BOUNDS
    frame = _frame(800).select("day", "stamp", "group")
    result = polars_rap.synthesize(frame, epsilon=5.0, delta=1e-7, domain=parsed.domain, labels=parsed.labels,
                                   strategy=small_loop(30), seed=0, progress=False)
    assert result.data.schema == frame.schema


def test_a_config_refuses_mixed_number_and_date_bounds(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("[domain.day]\nkind = \"numeric\"\nbounds = [0, 2025-12-31]\n")
    with pytest.raises(ValueError, match="both numbers or both TOML dates"):
        read_config(config)


def test_csv_columns_with_date_bounds_are_read_as_dates(tmp_path):
    assert csv_dtype(DATE_BOUNDS) == pl.Date
    assert csv_dtype({"bounds": TIME_BOUNDS}) == pl.Datetime("us")
    frame = _frame(600).select("day", "group")
    path = tmp_path / "days.csv"
    frame.write_csv(path)
    result = polars_rap.synthesize(path, epsilon=5.0, delta=1e-7, domain={"day": DATE_BOUNDS, "group": ["a", "b"]},
                                   labels=["group"], strategy=small_loop(20), seed=0, progress=False)
    assert result.data.schema == frame.schema


# ------------------------------------------------------------------ private inference


def test_infer_domain_learns_date_bounds_privately_and_charges_them():
    """Rows and epsilon enough for the noisy binary search to refine the log-scale bins."""
    rng = np.random.default_rng(3)
    days = rng.integers(7305, 17532, 20_000)  # 1990-01-01 .. 2017-12-31
    frame = pl.DataFrame({"day": pl.Series(days, dtype=pl.Int32).cast(pl.Date), "group": rng.choice(["a", "b"], 20_000)})
    result = polars_rap.synthesize(frame, epsilon=4.0, delta=1e-9, domain={"group": ["a", "b"]}, labels=["group"],
                                   infer_domain=["day"], strategy=small_loop(30), seed=0, progress=False)
    spec = result.domain["day"]
    lower, upper = spec.declaration().lower, spec.declaration().upper
    assert isinstance(lower, dt.date) and not isinstance(lower, dt.datetime)
    width = 17532 - 7305
    assert abs(spec.lower - 7305) <= 0.05 * width and abs(spec.upper - 17531) <= 0.05 * width
    assert any("bounds of 'day'" in event.description for event in result.report.events)
    assert result.data.schema == frame.schema
    assert lower <= result.data["day"].drop_nulls().min() and result.data["day"].max() <= upper
