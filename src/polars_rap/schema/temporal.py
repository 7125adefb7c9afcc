"""Dates, datetimes and durations as numbers: the internal units of temporal numeric columns.

A ``pl.Date``, ``pl.Datetime`` or ``pl.Duration`` column is a numeric column inside polars-rap
(design.md §2: one coordinate, public bounds, thresholds), held in whole *internal units*:

- ``pl.Date``: days since 1970-01-01 (Polars' physical value);
- ``pl.Datetime(time_unit, time_zone)``: microseconds since 1970-01-01 00:00 UTC, whatever the
  column's time unit (a time zone changes how instants are shown, not the instant);
- ``pl.Duration(time_unit)``: microseconds.

Bounds and atoms of such a column are declared as Python ``date``, ``datetime`` and
``timedelta`` objects (TOML dates and datetimes give the first two). A ``date`` bound of a
``Datetime`` column means midnight; a naive ``datetime`` bound of a column with a time zone is
read in that zone, an aware one is an instant. Synthetic values are whole internal units, cast
back to the column's dtype (time unit and time zone kept; a coarser time unit truncates).
``pl.Time`` columns are not supported.
"""

from __future__ import annotations

import datetime as dt
import math
from zoneinfo import ZoneInfo

import numpy as np
import polars as pl

from polars_rap.errors import ParameterTypeError

__all__ = [
    "is_temporal", "internal_unit", "to_internal", "from_internal", "bound_to_internal",
    "internal_to_bound", "format_internal", "is_temporal_value",
]  # fmt: skip

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICROSECOND = dt.timedelta(microseconds=1)
_DATE_RANGE = ((dt.date.min - _EPOCH_DATE).days, (dt.date.max - _EPOCH_DATE).days)
_DATETIME_RANGE = tuple(
    (moment.replace(tzinfo=dt.timezone.utc) - _EPOCH) // _MICROSECOND
    for moment in (dt.datetime.min + dt.timedelta(days=1), dt.datetime.max - dt.timedelta(days=1))
)  # a day inside Python's range, so that showing it in any time zone stays inside too


def is_temporal(dtype: pl.DataType) -> bool:
    """Whether ``dtype`` is a supported temporal dtype: Date, Datetime or Duration.

    >>> is_temporal(pl.Date), is_temporal(pl.Datetime("ns", "UTC")), is_temporal(pl.Time)
    (True, True, False)
    """
    return dtype == pl.Date or isinstance(dtype, (pl.Datetime, pl.Duration))


def is_temporal_value(value: object) -> bool:
    """Whether ``value`` is a ``date``, ``datetime`` or ``timedelta`` (a temporal bound or atom)."""
    return isinstance(value, (dt.date, dt.timedelta))


def internal_unit(dtype: pl.DataType) -> str:
    """``"days"`` for Date, ``"microseconds"`` for Datetime and Duration."""
    return "days" if dtype == pl.Date else "microseconds"


def to_internal(column: pl.Series) -> pl.Series:
    """Float64 values of a temporal ``column`` in internal units (nulls kept)."""
    if isinstance(column.dtype, (pl.Datetime, pl.Duration)):
        column = column.dt.cast_time_unit("us")
    return column.to_physical().cast(pl.Float64)


def from_internal(name: str, values: np.ndarray, dtype: pl.DataType) -> pl.Series:
    """A ``dtype`` Series of float64 ``values`` in internal units (rounded to whole units,
    NaN becomes null)."""
    values = np.asarray(values, dtype=np.float64)
    is_null = np.isnan(values)
    whole = pl.Series(name, np.where(is_null, 0.0, np.rint(values)).astype(np.int64))
    if is_null.any():
        whole = whole.scatter(np.flatnonzero(is_null), None)
    if dtype == pl.Date:
        return whole.cast(pl.Int32).cast(pl.Date)
    if isinstance(dtype, pl.Datetime):
        return whole.cast(pl.Datetime("us", dtype.time_zone)).cast(dtype)
    return whole.cast(pl.Duration("us")).cast(dtype)


def bound_to_internal(value: object, dtype: pl.DataType, column: str, what: str = "bound") -> float:
    """A declared bound or atom of a temporal column in internal units.

    Raises ``TypeError`` naming the column when ``value`` does not fit ``dtype`` (a number, a
    timedelta for a Date, a date for a Duration).
    """
    if dtype == pl.Date and type(value) is dt.date:
        return float((value - _EPOCH_DATE).days)
    if isinstance(dtype, pl.Datetime) and isinstance(value, dt.date):
        if not isinstance(value, dt.datetime):
            value = dt.datetime(value.year, value.month, value.day)
        if value.tzinfo is None:
            zone = ZoneInfo(dtype.time_zone) if dtype.time_zone else dt.timezone.utc
            value = value.replace(tzinfo=zone)
        return float((value - _EPOCH) // _MICROSECOND)
    if isinstance(dtype, pl.Duration) and isinstance(value, dt.timedelta):
        return float(value // _MICROSECOND)
    example = {"Date": "date(1990, 1, 1)", "Datetime": "datetime(1990, 1, 1, 0, 0)",
               "Duration": "timedelta(days=1)"}[_family(dtype)]
    msg = (
        f"column {column!r} holds {dtype}, so its {what} must be a Python "
        f"{example.split('(')[0]} (e.g. {example}; a TOML date such as 1990-01-01 for dates). "
        f"Got {value!r}"
    )
    raise ParameterTypeError(msg)


def internal_to_bound(value: float, dtype: pl.DataType) -> dt.date | dt.datetime | dt.timedelta:
    """Inverse of :func:`bound_to_internal`: a ``date`` (Date), a ``datetime`` (Datetime; in
    the column's time zone when it has one, else naive) or a ``timedelta`` (Duration); a value
    past what Python's ``date``/``datetime`` hold (years 1 to 9999) is clamped to it.

    >>> internal_to_bound(18262.0, pl.Date)
    datetime.date(2020, 1, 1)
    """
    whole = int(round(value))
    if dtype == pl.Date:  # clamped to what Python's date holds (years 1 to 9999)
        whole = min(max(whole, _DATE_RANGE[0]), _DATE_RANGE[1])
        return _EPOCH_DATE + dt.timedelta(days=whole)
    if isinstance(dtype, pl.Datetime):
        whole = min(max(whole, _DATETIME_RANGE[0]), _DATETIME_RANGE[1])
        instant = _EPOCH + whole * _MICROSECOND
        if dtype.time_zone:
            return instant.astimezone(ZoneInfo(dtype.time_zone))
        return instant.replace(tzinfo=None)
    return whole * _MICROSECOND


def format_internal(value: float, dtype: pl.DataType) -> str:
    """A value in internal units as text for a query's description (ISO dates and times)."""
    if not math.isfinite(value):
        return str(value)
    bound = internal_to_bound(value, dtype)
    return bound.isoformat() if isinstance(bound, dt.date) else str(bound)


def _family(dtype: pl.DataType) -> str:
    if dtype == pl.Date:
        return "Date"
    return "Datetime" if isinstance(dtype, pl.Datetime) else "Duration"
