"""Encode frames into the numeric layout the kernels read.

Real data becomes ``codes`` (``int32[n_rows, n_blocks]``: one category code per categorical
block of the domain, the null being the last code of a nullable column, and 0/1 for the null
indicator of a nullable numeric column) and ``numerics`` (``float64[n_rows, n_numeric]``,
clipped to the public bounds and mapped to ``[0, 1]`` by the column's public map: linear by
default, or its declared scale and atoms, :mod:`polars_rap.schema.transforms`; a null counts as 0).
Dates, datetimes and durations are read in whole days or microseconds first
(:mod:`polars_rap.schema.temporal`).
These are per-row maps that keep every row, so ``n`` is unchanged (the privacy model's
replace-one neighbours). The way back, relaxed rows to typed rows, is
:mod:`polars_rap.decode.decoding`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import polars as pl

from polars_rap.schema import temporal
from polars_rap.schema.domain import ColumnSpec, Domain
from polars_rap.errors import DataError
from polars_rap.schema.temporal import format_internal
from polars_rap.schema.transforms import to_unit

__all__ = ["EncodedData", "encode", "block_slices", "numeric_values", "bounds_text"]

logger = logging.getLogger(__name__)

_MAX_OFFENDING_SHOWN = 5


@dataclass(frozen=True, slots=True, eq=False)
class EncodedData:
    """``codes`` int32[n_rows, n_blocks] and ``numerics`` float64[n_rows, n_numeric]."""

    codes: np.ndarray
    numerics: np.ndarray

    @property
    def n_rows(self) -> int:
        return self.codes.shape[0]


def block_slices(domain: Domain) -> list[slice]:
    """The column range of each categorical block in the relaxed matrix."""
    starts = np.concatenate([[0], np.cumsum(domain.block_sizes)]).astype(int)
    return [slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:], strict=True)]


# ---------------------------------------------------------------------- encode
def encode(frame: pl.DataFrame, domain: Domain, *, clip_counts: dict[str, int] | None = None) -> EncodedData:
    """Encode ``frame`` (columns as in ``domain``) for the kernels.

    Raises a ``DataError`` naming the column for values outside the declared categories,
    nulls in a column declared without them, or text in a numeric column. Such messages go
    to the curator running the job, before anything is released; counts of clipped values
    are logged (warning) for the curator and never enter a release. With ``clip_counts``
    given, those counts are added into it by column name instead of logged, so that a caller
    encoding batch by batch can log one total per column.
    """
    missing = [name for name in domain.names if name not in frame.columns]
    if missing:
        msg = f"the data lacks columns the domain declares: {missing}"
        raise DataError(msg)
    n_rows = frame.height
    codes = np.empty((n_rows, len(domain.blocks)), dtype=np.int32)
    numerics = np.empty((n_rows, len(domain.numeric_columns)), dtype=np.float64)
    for b, block in enumerate(domain.blocks):
        spec = domain[block.source]
        if block.indicator:
            continue
        codes[:, b] = _category_codes(frame.get_column(spec.name), spec)
    values = [numeric_values(frame.get_column(spec.name), spec) for spec in domain.numeric_columns]
    for j, spec in enumerate(domain.numeric_columns):
        scaled, is_null = _scaled_numeric(values[j], spec, clip_counts)
        numerics[:, j] = scaled
        if spec.nullable:
            codes[:, domain.block_index(spec.name, indicator=True)] = is_null
    return EncodedData(codes, numerics)


def _category_codes(column: pl.Series, spec: ColumnSpec) -> np.ndarray:
    values = column
    if isinstance(values.dtype, (pl.Enum, pl.Categorical)):
        values = values.cast(pl.String)
    try:
        listed = pl.Series(list(spec.categories))
        declared = listed.cast(values.dtype, strict=True)
    except Exception as error:  # polars raises several error types for failed casts
        msg = (
            f"column {spec.name!r} holds {values.dtype} but its declared categories "
            f"{list(spec.categories)[:8]} cannot be read as {values.dtype}; declare them with "
            "the column's type or cast the column first"
        )
        raise DataError(msg) from error
    _check_categories_survive_the_cast(spec.name, listed, declared)
    codes = values.replace_strict(
        declared, np.arange(len(declared), dtype=np.int32), default=-1, return_dtype=pl.Int32
    )
    is_null = values.is_null()
    if values.dtype.is_float():
        is_null = is_null | values.is_nan().fill_null(False)
    codes = pl.select(
        pl.when(is_null).then(len(declared)).otherwise(codes).alias("codes")
    ).to_series()
    if not spec.nullable and is_null.any():
        msg = (
            f"column {spec.name!r} holds {int(is_null.sum())} nulls but its domain declares no "
            f"null category. Add None to its categories (domain={{{spec.name!r}: [..., None]}})"
            " so that a null is a category of its own, or fill the nulls first"
        )
        raise DataError(msg)
    undeclared = values.filter((codes == -1) & ~is_null)
    if undeclared.len() > 0 and spec.unlisted == "null":
        # Curator-only diagnostic, never released: values below the inference threshold.
        logger.debug("column %r: %d values outside the released categories are encoded as null",
                    spec.name, undeclared.len())
        codes = codes.set(codes == -1, len(declared))
    elif undeclared.len() > 0:
        shown = undeclared.unique(maintain_order=True).head(_MAX_OFFENDING_SHOWN).to_list()
        msg = (
            f"column {spec.name!r} holds {undeclared.len()} values outside its declared "
            f"categories, e.g. {shown}. Add them to the column's category list in domain= "
            "(the list is public: take it from the data's documentation), or recode them"
        )
        raise DataError(msg)
    return codes.to_numpy().astype(np.int32, copy=False)


def _check_categories_survive_the_cast(name: str, listed: pl.Series, declared: pl.Series) -> None:
    """Refuse categories (``listed``, as declared) that the cast to the column's dtype
    (``declared``) merged or changed: ``[1, -1]`` both read as ``true`` in a Boolean column,
    ``2.5`` as ``2`` in an integer one. Either would put rows under a category the domain did
    not declare, a silently wrong answer. (A cast that cannot be undone, e.g. text back to a
    datetime, is judged on merging alone.)"""
    dtype = declared.dtype
    try:
        back = declared.cast(listed.dtype, strict=False)
    except Exception:  # noqa: BLE001 - polars raises several error types for unsupported casts
        back = listed
    changed = [(a, b) for a, b, same in zip(listed.to_list(), declared.to_list(), back.eq_missing(listed).to_list(),
                                            strict=True) if not same]
    merged = declared.drop_nulls().is_duplicated().any()
    if changed or merged:
        shown = ", ".join(f"{a!r} reads as {b!r}" for a, b in changed[:_MAX_OFFENDING_SHOWN])
        msg = (f"column {name!r} holds {dtype} but its declared categories {listed.to_list()[:8]} do not "
               f"stay distinct as {dtype} ({shown or 'two of them become the same value'}); declare them with the "
               "column's type or cast the column first")
        raise DataError(msg)


def numeric_values(column: pl.Series, spec: ColumnSpec) -> np.ndarray:
    """float64[n_rows]: a numeric ``column`` in its internal units (temporal dtypes in days or
    microseconds), NaN for a null; not clipped. Text raises a :class:`DataError` naming the column."""
    if spec.is_temporal and temporal.is_temporal(column.dtype):
        return temporal.to_internal(column).to_numpy().astype(np.float64, copy=True)
    if not (column.dtype.is_numeric() or column.dtype == pl.Null):
        msg = (
            f"column {spec.name!r} is declared numeric but holds {column.dtype}; cast it to a "
            f"number first (pl.col({spec.name!r}).cast(pl.Float64, strict=False) turns text "
            "into nulls: declare it nullable then) or declare it categorical"
        )
        raise DataError(msg)
    return column.cast(pl.Float64).to_numpy().astype(np.float64, copy=True)


def bounds_text(spec: ColumnSpec) -> str:
    """The bounds for the curator's log: ``[17, 99]``, or ``[1990-01-01, 2025-12-31]``."""
    if spec.is_temporal:
        return f"[{format_internal(spec.lower, spec.dtype)}, {format_internal(spec.upper, spec.dtype)}]"
    return f"[{spec.lower:g}, {spec.upper:g}]"


def _bounds_literal(spec: ColumnSpec) -> str:
    """The bounds as Python source, for a suggested ``domain=`` entry."""
    declared = spec.declaration()
    return f"({declared.lower!r}, {declared.upper!r})" if spec.is_temporal else f"({spec.lower:g}, {spec.upper:g})"


def _scaled_numeric(
    values: np.ndarray, spec: ColumnSpec, clip_counts: dict[str, int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(float64[n] mapped values, a null counting as 0; int32[n] null flags) of ``values``
    (float64[n] in internal units, from :func:`numeric_values`)."""
    n_infinite = int(np.count_nonzero(np.isinf(values)))
    if n_infinite:
        msg = (
            f"column {spec.name!r} holds {n_infinite} infinite values; an infinity is usually a "
            "bug upstream (a division by zero). Replace them first, e.g. with "
            f"pl.when(pl.col({spec.name!r}).is_infinite()).then(None).otherwise(pl.col("
            f"{spec.name!r})) and a nullable domain, or clip them to the bounds yourself"
        )
        raise DataError(msg)
    is_null = np.isnan(values)  # null and NaN alike: a missing value
    if is_null.any() and not spec.nullable:
        msg = (
            f"column {spec.name!r} holds {int(is_null.sum())} nulls/NaN but is declared "
            f"without them. Declare it nullable (domain={{{spec.name!r}: {{'bounds': "
            f"{_bounds_literal(spec)}, 'nullable': True}}}}) so the null rate is "
            "kept, or fill the nulls first"
        )
        raise DataError(msg)
    present = values[~is_null]
    n_clipped = int(np.count_nonzero((present < spec.lower) | (present > spec.upper)))
    if n_clipped and clip_counts is not None:  # the caller logs the total (batched encoding)
        clip_counts[spec.name] = clip_counts.get(spec.name, 0) + n_clipped
    elif n_clipped:
        # Curator-only diagnostic: this count reads the data and is never released.
        logger.warning(
            "column %r: %d values outside the domain's bounds %s (declared or privately inferred) were clipped",
            spec.name, n_clipped, bounds_text(spec),
        )
    scaled = to_unit(values, spec)
    scaled[is_null] = 0.0
    return scaled, is_null.astype(np.int32)
