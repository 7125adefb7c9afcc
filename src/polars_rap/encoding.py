"""Encode frames into the numeric layout the kernels read, and decode relaxed data back.

Real data becomes ``codes`` (``int32[n_rows, n_blocks]``: one category code per categorical
block of the domain, the null being the last code of a nullable column, and 0/1 for the null
indicator of a nullable numeric column) and ``numerics`` (``float64[n_rows, n_numeric]``,
clipped to the public bounds and mapped to ``[0, 1]`` by the column's public map: linear by
default, or its declared scale and atoms, :mod:`polars_rap.transforms`; a null counts as 0).
Dates, datetimes and durations are read in whole days or microseconds first
(:mod:`polars_rap.temporal`).
These are per-row maps that keep every row, so ``n`` is unchanged (design.md §5).

Relaxed synthetic data is ``float32[n_relaxed, n_coords]``: probabilities per categorical
block, then the mapped numerics. Decoding samples categories from those probabilities and maps
numerics back to their units and dtypes by the inverse map (atoms exactly, integers and
temporal values rounded to whole units, values inside the bounds).

Decoding gives each relaxed row ``k ≈ n_rows / n_relaxed`` output rows, in one of two ways:

- ``"independent"`` (the paper's): each copy draws its categories independently from the
  row's probabilities, and integer columns are rounded to the nearest integer;
- ``"controlled"``: the copies of a row (within each chunk of output rows) draw their
  categories by systematic sampling, one stratified uniform ``(rank + U) / k`` per copy in a
  random order per block, so that each category appears ``k p`` times up to one; integer
  columns are rounded to the nearest integer as above (real integer data sits on the
  integers, so the fit's values near one belong to it). Each copy's marginal law is the
  same as independent draws give, so expected answers of single-block queries are unchanged
  and their sampling noise shrinks from ``sqrt(k p (1 - p))`` to under one row per relaxed
  row; queries over several blocks keep independent pairing (the orders are independent).
  Decoding is post-processing of released values either way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from polars_rap import temporal
from polars_rap.domain import ColumnSpec, Domain, decimal_steps
from polars_rap.errors import DataError, ParameterError
from polars_rap.numeric_coupling import check_numeric_coupling, decouple_numerics
from polars_rap.temporal import format_internal
from polars_rap.transforms import from_unit, to_unit

if TYPE_CHECKING:
    from polars_rap.histogram_margins import HistogramMargins
    from polars_rap.numeric_ties import NumericTies, TieScores
    from polars_rap.public_labels import LabelModel

__all__ = ["DECODINGS", "EncodedData", "encode", "decode", "decode_codes", "decoded_values", "block_slices",
           "numeric_values"]

logger = logging.getLogger(__name__)

_MAX_OFFENDING_SHOWN = 5
_DECODE_CHUNK_ROWS = 100_000
DECODINGS = ("independent", "controlled")


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
def encode(
    frame: pl.DataFrame, domain: Domain, *, clip_counts: dict[str, int] | None = None,
    integer_cells: bool = False,
) -> EncodedData:
    """Encode ``frame`` (columns as in ``domain``) for the kernels.

    Raises a ``DataError`` naming the column for values outside the declared categories,
    nulls in a column declared without them, or text in a numeric column. Such messages go
    to the curator running the job, before anything is released; counts of clipped values
    are logged (warning) for the curator and never enter a release. With ``clip_counts``
    given, those counts are added into it by column name instead of logged, so that a caller
    encoding batch by batch can log one total per column. With ``integer_cells``, the values
    of integer columns are spread over their rounding cells (:func:`spread_integer_cells`).
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
    if integer_cells and any(spec.is_integer for spec in domain.numeric_columns):
        categorical = [b for b, block in enumerate(domain.blocks) if not block.indicator]  # nulls: NaN values
        offsets = row_offsets(codes[:, categorical], values)
        values = [spread_integer_cells(v, spec, offsets, j) if spec.is_integer else v
                  for j, (v, spec) in enumerate(zip(values, domain.numeric_columns, strict=True))]
    for j, spec in enumerate(domain.numeric_columns):
        scaled, is_null = _scaled_numeric(values[j], spec, clip_counts)
        numerics[:, j] = scaled
        if spec.nullable:
            codes[:, domain.block_index(spec.name, indicator=True)] = is_null
    return EncodedData(codes, numerics)


# Constants of splitmix64 (Steele, Lea and Flood 2014), a fixed public hash.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64[n] (wrapping arithmetic)."""
    h = (h ^ (h >> np.uint64(30))) * _MIX_1
    h = (h ^ (h >> np.uint64(27))) * _MIX_2
    return h ^ (h >> np.uint64(31))


def row_offsets(codes: np.ndarray, values: list[np.ndarray]) -> np.ndarray:
    """uint64[n_rows]: a hash of each whole row (its category codes, int32[n_rows, n_columns],
    and numeric values, float64[n_rows] each, NaN for a null), the same for the same row in
    any batch, any process and any engine (splitmix64 steps, fixed constants). Rows equal in
    every column hash alike."""
    n_rows = codes.shape[0]
    h = np.full(n_rows, _GOLDEN, dtype=np.uint64)
    columns = [codes[:, b].astype(np.int64).view(np.uint64) for b in range(codes.shape[1])]
    columns += [np.where(np.isnan(v), np.inf, v).view(np.uint64) for v in values]  # NaN bits vary
    with np.errstate(over="ignore"):
        for column in columns:
            h = _mix(h ^ (column + _GOLDEN))
    return h


def spread_integer_cells(values: np.ndarray, spec: ColumnSpec, offsets: np.ndarray, column: int) -> np.ndarray:
    """float64[n]: each whole value ``x`` of an integer column moved to ``x + U - 1/2``, inside
    its rounding cell ``[x - 1/2, x + 1/2]``, with ``U`` in ``[0, 1)`` taken from the row's
    hash ``offsets`` (uint64[n], :func:`row_offsets`) and ``column`` (so columns differ).

    Decoding rounds integer columns to the nearest integer, so a fit to the spread values
    gives each integer the mass of its cell: the projection fits thresholds that fall between
    two integers to the cell's share of rows, not to a step that rounding would then move.
    A cell at a bound is cut there (the spread value is clipped to the bounds, where decoding
    rounds it back). Nulls (NaN), declared atoms, values outside the bounds (clipped and
    counted as before) and values that are not whole are left as they are. It is a fixed
    per-row map, like the scale: the rows' count and every query's sensitivity are unchanged
    (design.md §5), and equal input rows give equal answers however the input is cut into
    batches.
    """
    with np.errstate(over="ignore"):
        bits = _mix(offsets ^ (np.uint64(column + 1) * _GOLDEN))
    uniform = (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53  # 53 random bits
    inside = np.isfinite(values) & (values >= spec.lower) & (values <= spec.upper)
    whole = inside & (values == np.rint(values))
    if spec.atoms:
        whole &= ~np.isin(values, np.asarray(spec.atoms, dtype=np.float64))
    spread = np.clip(values + uniform - 0.5, spec.lower, spec.upper)
    return np.where(whole, spread, values)


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
            "column %r: %d values outside the declared bounds %s were clipped",
            spec.name, n_clipped, bounds_text(spec),
        )
    scaled = to_unit(values, spec)
    scaled[is_null] = 0.0
    return scaled, is_null.astype(np.int32)


# ---------------------------------------------------------------------- decode
def decode_codes(
    relaxed: np.ndarray, domain: Domain, rows: np.ndarray, rng: np.random.Generator,
    uniforms: np.ndarray | None = None,
) -> EncodedData:
    """Sample one discrete row per entry of ``rows`` (indices into ``relaxed``).

    Categorical blocks are sampled from the relaxed row's probabilities (renormalised) by
    inverting their CDF at ``uniforms[:, block]`` (float64[len(rows), >= n_blocks] in
    ``[0, 1)``; drawn iid from ``rng`` when None); numerics keep the relaxed coordinate.
    """
    relaxed = np.asarray(relaxed, dtype=np.float64)
    picked = relaxed[rows]
    n_out = len(rows)
    codes = np.empty((n_out, len(domain.blocks)), dtype=np.int32)
    uniform = rng.random((n_out, len(domain.blocks))) if uniforms is None else uniforms
    for b, block_slice in enumerate(block_slices(domain)):
        probs = np.clip(picked[:, block_slice], 0.0, None)
        cumulative = np.cumsum(probs, axis=1)
        total = cumulative[:, -1:]
        cumulative /= np.where(total > 0, total, 1.0)
        chosen = (cumulative < uniform[:, b : b + 1]).sum(axis=1)
        codes[:, b] = np.minimum(chosen, block_slice.stop - block_slice.start - 1)
    numerics = np.clip(picked[:, domain.n_categorical_coords :], 0.0, 1.0)
    return EncodedData(codes, numerics)


def stratified_uniforms(rows: np.ndarray, n_columns: int, rng: np.random.Generator) -> np.ndarray:
    """float64[len(rows), n_columns] in ``[0, 1)``: for each column, the ``c`` entries that
    share a relaxed row get ``(rank + U) / c``, ranks ``0..c-1`` in a random order and one
    ``U ~ Uniform[0, 1)`` per (relaxed row, column). Each entry is marginally uniform; the
    ``c`` entries of a row cover ``[0, 1)`` in ``c`` equal strata (systematic sampling)."""
    rows = np.asarray(rows, dtype=np.int64)
    out = np.empty((len(rows), n_columns), dtype=np.float64)
    if len(rows) == 0:
        return out
    counts = np.bincount(rows)
    starts = np.cumsum(counts) - counts
    position = np.arange(len(rows))
    for column in range(n_columns):
        # By relaxed row, in a random order within: the integer part of the key orders the
        # rows, the uniform the entries of one row (one sort of float64 keys, 2.6x faster than
        # lexsort on two; the same order unless two uniforms of one row agree to 2**-38).
        order = np.argsort(rows + rng.random(len(rows)))
        sorted_rows = rows[order]
        rank = position - starts[sorted_rows]
        offset = rng.random(len(counts))
        out[order, column] = (rank + offset[sorted_rows]) / counts[sorted_rows]
    return out


def spread_rows(n_relaxed: int, n_out: int, rng: np.random.Generator) -> np.ndarray:
    """int64[n_out]: relaxed-row index of each output row, each relaxed row used
    ``n_out // n_relaxed`` or one more times (systematic, so weights stay equal), shuffled."""
    repeats = np.repeat(np.arange(n_relaxed), n_out // n_relaxed)
    extra = rng.choice(n_relaxed, size=n_out % n_relaxed, replace=False)
    rows = np.concatenate([repeats, extra]).astype(np.int64)
    rng.shuffle(rows)
    return rows


def decode(
    relaxed: np.ndarray, domain: Domain, n_rows: int, rng: np.random.Generator,
    method: str = "independent", labels: LabelModel | None = None, numeric_coupling: str = "fitted",
    margins: HistogramMargins | None = None, ties: NumericTies | None = None,
) -> pl.DataFrame:
    """Turn relaxed data into a frame of ``n_rows`` rows with the domain's names and dtypes.

    Each relaxed row yields ``n_rows / n_relaxed`` discrete rows (rounded systematically),
    drawn by ``method`` (``"independent"`` or ``"controlled"``, see the module docstring).
    Categories come only from the domain, numerics lie inside the bounds, integer columns are
    rounded, and nullable columns get nulls at the sampled rate. With ``labels`` (a public
    table's :class:`~polars_rap.public_labels.LabelModel`), each row's labels are then redrawn
    from it given the row's other columns. ``numeric_coupling`` ``"label"`` then permutes each
    numeric column's values among the rows of the same labels
    (:func:`polars_rap.numeric_coupling.decouple_numerics`; after a redraw of a share of the rows,
    each label's values are drawn from the rows that held it as decoded: :mod:`polars_rap.public_labels`
    says why only then); ``"fitted"`` keeps each row's.
    With ``ties`` (after the ``"label"`` coupling) each numeric column's values are handed out
    again within each label so that they follow the released numeric ties
    (:mod:`polars_rap.numeric_ties`). With ``margins`` the numeric values are last moved toward
    the released histograms (:mod:`polars_rap.histogram_margins`), chunk by chunk.
    """
    check_numeric_coupling(numeric_coupling)
    if method not in DECODINGS:
        msg = f"unknown decoding {method!r}; choose one of {', '.join(repr(d) for d in DECODINGS)}"
        raise ParameterError(msg)
    rows = spread_rows(relaxed.shape[0], n_rows, rng)
    # In chunks, so memory stays bounded for any n_rows. Independent draws come in the same
    # order as one call would make them, so that output does not depend on the chunk size;
    # controlled decoding stratifies within each chunk (of a fixed size, so still reproducible).
    # The ties' latent scores are fitted on the first chunk and reused by the others.
    starts = range(0, max(n_rows, 1), _DECODE_CHUNK_ROWS)
    scores = None
    if ties is not None:
        from polars_rap.numeric_ties import TieScores  # (it imports this module)

        scores = TieScores()
    frames = [_decode_rows(relaxed, domain, rows[a:a + _DECODE_CHUNK_ROWS], rng, method, labels, numeric_coupling,
                           margins, ties, scores)
              for a in starts]
    return frames[0] if len(frames) == 1 else pl.concat(frames, rechunk=False)


def _decode_rows(relaxed: np.ndarray, domain: Domain, rows: np.ndarray,
                 rng: np.random.Generator, method: str, labels: LabelModel | None = None,
                 numeric_coupling: str = "fitted", margins: HistogramMargins | None = None,
                 ties: NumericTies | None = None, scores: TieScores | None = None) -> pl.DataFrame:
    uniforms = None
    if method == "controlled":
        uniforms = stratified_uniforms(rows, len(domain.blocks), rng)
    sample = decode_codes(relaxed, domain, rows, rng, uniforms)
    pool_codes = None  # the labels as decoded, where the measurements win: each label keeps its fitted numerics
    if labels is not None:
        if numeric_coupling == "label" and labels.share < 1.0:
            pool_codes = sample.codes.copy()
        labels.redraw(sample, domain, rng)
    if numeric_coupling == "label":
        sample = EncodedData(sample.codes, decouple_numerics(sample.codes, sample.numerics, domain, rng, pool_codes))
        if ties is not None:
            sample = EncodedData(sample.codes, ties.apply(sample.codes, sample.numerics, domain, rng, scores))
    if margins is not None:
        sample = EncodedData(sample.codes, margins.apply(sample.codes, sample.numerics, domain, rng))
    columns: dict[str, pl.Series] = {}
    numeric_index = {spec.name: j for j, spec in enumerate(domain.numeric_columns)}
    for spec in domain.columns:
        if spec.is_categorical:
            block = domain.block_index(spec.name)
            columns[spec.name] = _categories_from_codes(sample.codes[:, block], spec)
        else:
            values = decoded_values(sample.numerics[:, numeric_index[spec.name]], spec)
            if spec.is_temporal:
                series = temporal.from_internal(spec.name, values, spec.dtype)
            else:
                series = pl.Series(spec.name, values)
            if spec.nullable:
                is_null = sample.codes[:, domain.block_index(spec.name, indicator=True)] == 1
                series = pl.select(
                    pl.when(pl.lit(pl.Series(is_null))).then(None).otherwise(series).alias(spec.name)
                ).to_series()
            columns[spec.name] = series.cast(spec.dtype)
    return pl.DataFrame(columns)


def decoded_values(u: np.ndarray, spec: ColumnSpec) -> np.ndarray:
    """float64[n]: a numeric column's values in its (internal) units from its coordinates ``u``
    (float64[n] in ``[0, 1]``), as decoding returns them: through the inverse map, rounded to
    whole units for an integer or temporal column, inside the bounds; a ``Decimal`` column's on
    its grid of ``10**-scale``, inside the bounds too once cast (a bound off the grid, such as
    2.4699999999999998 at scale 2, would otherwise let 2.47 out); a ``Float32`` column's on the
    float32 numbers inside the bounds."""
    values = from_unit(u, spec)
    if spec.is_integer:
        values = np.clip(np.rint(values), np.ceil(spec.lower), np.floor(spec.upper))
    values = np.clip(values, spec.lower, spec.upper)
    if isinstance(spec.dtype, pl.Decimal) and spec.dtype.scale is not None:
        values = _on_decimal_grid(values, spec.lower, spec.upper, int(spec.dtype.scale))
    if spec.dtype == pl.Float32:
        values = _inside_as_float32(values, spec.lower, spec.upper)
    return values


def _inside_as_float32(values: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """float64[n]: ``values`` clipped to the float32 numbers inside ``[lower, upper]``, so that the
    cast to Float32 (round to nearest) stays inside: 3e38 is 3.0000000054977558e38 as a float32,
    above an upper bound of 3e38 (Hypothesis, 2026-11-29). Unchanged where no float32 lies
    inside."""
    low, high = np.float32(lower), np.float32(upper)
    if float(low) < lower:
        low = np.nextafter(low, np.float32(np.inf))
    if float(high) > upper:
        high = np.nextafter(high, np.float32(-np.inf))
    if low > high:
        return values
    return np.clip(values, float(low), float(high))


def _on_decimal_grid(values: np.ndarray, lower: float, upper: float, scale: int) -> np.ndarray:
    """float64[n]: ``values`` rounded to multiples of ``10**-scale``, kept to the multiples
    inside ``[lower, upper]`` (:func:`polars_rap.domain.decimal_steps`); unchanged where no
    multiple lies inside."""
    lowest, highest = decimal_steps(lower, upper, scale)
    if lowest > highest:
        return values
    steps = np.clip(np.rint(values * 10.0**scale), lowest, highest)
    return steps / 10.0**scale


def _categories_from_codes(codes: np.ndarray, spec: ColumnSpec) -> pl.Series:
    categories = list(spec.categories) + ([None] if spec.nullable else [])
    lookup_dtype = spec.dtype
    if isinstance(spec.dtype, (pl.Enum, pl.Categorical)):
        lookup_dtype = pl.String
    lookup = pl.Series(spec.name, categories).cast(lookup_dtype)
    return lookup.gather(pl.Series(codes.astype(np.int64))).cast(spec.dtype).rename(spec.name)
