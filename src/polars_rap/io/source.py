"""The sensitive input, read once in bounded-memory batches (design.md §2, item 4).

:class:`DataSource` wraps whatever the user passed to ``synthesize`` (a Polars DataFrame or
LazyFrame, a Parquet/CSV/IPC path, a pyarrow Table, a pandas DataFrame) and offers two things:
its ``schema``, read without reading rows, and :meth:`DataSource.batches`, which yields the
rows as DataFrames of at most ``batch_rows`` rows. A DataFrame is sliced without copying;
everything else is a lazy query run by Polars' streaming engine, which reads a file batch by
batch, so an input larger than memory works.

A CSV file carries no types, and a reader that infers them from the rows makes the released
dtypes depend on the data (one ``2.5`` among integers turns an Int64 column into Float64).
:func:`scan_csv` reads every column as text and casts it by a public rule on the declared
domain only (:func:`csv_dtype`); column names and these dtypes are public and copied into the
output. A column of Python objects has no type either: a pandas ``object`` column (ints,
floats, ``Decimal``, strings, dates...) or a Polars ``Object`` column, which Polars'
conversion would type from its values (a ``Decimal`` column by their precision). It is typed by
the same rule (:func:`typed_column`); every other column keeps the type its input declares.

:func:`exact_answers` is the one pass over the real rows that RAP++ needs: each batch is
encoded and counted by a kernel backend, and only the per-query counts survive the batch.
"""

from __future__ import annotations

import dataclasses
import datetime
import glob
import logging
import numbers
import os
from decimal import Decimal
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Protocol

import numpy as np
import polars as pl

from polars_rap.schema.domain import Categorical, Domain, Numeric
from polars_rap.schema.encoding import EncodedData, bounds_text, encode
from polars_rap.errors import DataError, ParameterError, ParameterTypeError
from polars_rap.workload.queries import QuerySet

__all__ = [
    "DataSource", "RowStatistics", "without_columns", "exact_answers", "batch_counts", "add_counts",
    "finish_answers",
    "default_batch_rows",
    "csv_dtype", "input_files", "scan_csv", "scan_file", "typed_column", "MAX_BATCH_ROWS", "BATCH_BYTES",
]  # fmt: skip

logger = logging.getLogger(__name__)

MAX_BATCH_ROWS = 250_000
"""Most rows in one batch of the exact-answers pass. On the 10-million-row benchmark
(bench/streaming.py, 20 columns) 250,000-row batches were as fast as 1,000,000-row ones and
halved the peak RSS (about 490 against 890 MiB): the counting kernels sweep a batch in
cache-sized row blocks, so larger batches buy nothing, and a call costs about a millisecond."""

BATCH_BYTES = 32 * 2**20
"""Target size in bytes of one batch's encoded arrays (codes and scaled numerics); wide
domains get fewer rows per batch so that a batch's working memory stays a small multiple of
this figure whatever the number of columns."""


_INT64_MAX = int(np.iinfo(np.int64).max)

_FORMATS = {".parquet": "parquet", ".arrow": "ipc", ".ipc": "ipc", ".feather": "ipc", ".csv": "csv"}
"""The input file formats, by suffix (lower case)."""


@dataclass(frozen=True, slots=True, eq=False)
class DataSource:
    """The sensitive input: an in-memory ``frame`` or a ``lazy`` query (exactly one is set).

    Build it with :meth:`from_input`. Reading it never changes it, so several passes (for
    instance private domain inference, then the exact answers) read the same rows.
    """

    frame: pl.DataFrame | None = field(repr=False)
    lazy: pl.LazyFrame | None = field(repr=False)
    schema: pl.Schema
    """Column names and dtypes, known without reading any row."""

    @classmethod
    def from_input(cls, data, domain: Mapping[str, object] | None = None) -> DataSource:
        """Wrap ``data``: a ``pl.DataFrame`` (kept as is, not copied), a ``pl.LazyFrame``, a
        path to a ``.parquet``, ``.csv`` or ``.arrow``/``.ipc``/``.feather`` file, a glob pattern
        or a directory of such files (scanned lazily, :func:`scan_file`), a pyarrow Table or a
        pandas DataFrame (converted to a Polars DataFrame).

        ``domain`` is the user's ``domain=`` mapping (None: no entries). It types every column
        whose input has no type of its own, never its values: a CSV file's columns
        (:func:`scan_csv`), a pandas ``object`` column and a Polars ``Object`` column
        (:func:`typed_column`; a DataFrame holding one is copied, the rest of its columns
        shared). Raises ``FileNotFoundError`` for a path with no file, ``ParameterError`` for a
        file of another suffix, :class:`~polars_rap.errors.DataError` for a column of objects
        whose values do not read as its declared type and for a LazyFrame with an ``Object``
        column, and ``ParameterTypeError`` (a ``TypeError``) for anything else.
        """
        if isinstance(data, pl.DataFrame):
            objects = [name for name, dtype in data.schema.items() if dtype == pl.Object]
            if objects:  # Python objects: typed from the declaration, never the values
                domain = domain or {}
                data = data.with_columns(typed_column(name, data.get_column(name).to_list(),
                                                      csv_dtype(domain.get(name)), "a Polars Object column")
                                         for name in objects)
            return cls(data, None, data.schema)
        if isinstance(data, pl.LazyFrame):
            try:
                schema = data.collect_schema()
            except pl.exceptions.PolarsError as error:
                msg = f"the LazyFrame's columns cannot be resolved: {_first_line(error)}"
                raise DataError(msg) from None
            objects = [name for name, dtype in schema.items() if dtype == pl.Object]
            if objects:
                msg = (f"the LazyFrame's columns {objects} hold Python objects (Polars Object), which have no "
                       "type of their own: collect it into a DataFrame, whose Object columns are typed from "
                       "domain= (as a CSV file's columns are), or cast them to typed columns first")
                raise DataError(msg)
            return cls(None, data, schema)
        if isinstance(data, (str, os.PathLike)):
            lazy = scan_file(data, domain)
            return cls(None, lazy, lazy.collect_schema())
        module = type(data).__module__.split(".")[0]
        frame = None
        if module in ("pyarrow", "pandas"):
            frame = _converted(data, module, domain)
        if isinstance(frame, pl.DataFrame):
            return cls(frame, None, frame.schema)
        msg = (
            f"data must be a polars DataFrame/LazyFrame, a pyarrow Table, a pandas DataFrame or a "
            f"path to a Parquet/CSV/IPC file. Got {type(data).__name__}"
        )
        raise ParameterTypeError(msg)

    def batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pl.DataFrame]:
        """The rows of ``columns``, in input order, as DataFrames of at most ``batch_rows``
        rows (none empty; no batch at all for an empty input).

        Only ``columns`` are read (projection pushdown into the file scan). A lazy input runs
        on Polars' streaming engine (``LazyFrame.collect_batches``, marked unstable by
        Polars), which holds a few batches at a time; RSS can also count the pages of a
        memory-mapped CSV/IPC file, which the OS reclaims when memory is short.
        """
        if isinstance(batch_rows, bool) or not isinstance(batch_rows, (int, np.integer)) or batch_rows < 1:
            msg = f"The 'batch_rows' parameter must be an int in [1, inf). Got {batch_rows!r}"
            raise ParameterError(msg)
        missing = [name for name in columns if name not in self.schema]
        if missing:
            msg = f"the data lacks columns the domain declares: {missing}"
            raise DataError(msg)
        if self.frame is not None:
            return self.frame.select(columns).iter_slices(int(batch_rows))
        return _streamed(self.lazy.select(columns), int(batch_rows))

    def inference_counts(self, requests):
        """The counts private domain inference reads (an
        :class:`~polars_rap.privacy.inference.InferenceCounts`), in one pass over the requested columns."""
        from polars_rap.privacy.inference import InferenceCounts

        counts = InferenceCounts(requests)
        for batch in self.batches([r.name for r in requests], MAX_BATCH_ROWS):
            counts.add(batch)
        return counts



def without_columns(source, drop: Sequence[str], *, present_only: bool = False):
    """``source`` (a :class:`DataSource` or a Ray source) with the columns ``drop`` left out of
    its ``schema``: synthesis never reads them (a pass reads only the domain's columns, which
    the schema bounds) and the output does not hold them. ``present_only``: names ``source``
    lacks are skipped (a public table may hold a subset of the columns); otherwise each is a
    :class:`~polars_rap.errors.ParameterError` naming it and the data's columns.

    >>> without_columns(DataSource.from_input(pl.DataFrame({"x": [1], "id": [7]})), ["id"]).schema
    Schema([('x', Int64)])
    """
    unknown = [name for name in drop if name not in source.schema]
    if unknown and not present_only:
        from polars_rap.errors import did_you_mean

        msg = (f"The 'drop' parameter names columns the data does not have: {unknown}"
               f"{did_you_mean(unknown, source.schema)}. Its columns are {list(source.schema)}")
        raise ParameterError(msg)
    if not drop:
        return source
    kept = pl.Schema([(name, dtype) for name, dtype in source.schema.items() if name not in drop])
    return dataclasses.replace(source, schema=kept)


def _converted(data, module: str, domain: Mapping[str, object] | None = None) -> pl.DataFrame | pl.Series | None:
    """A pyarrow or pandas table as a Polars frame with the same column names; repeated
    names, which Polars refuses, are a :class:`DataError` naming them. A pandas ``object``
    column is typed from its ``domain`` entry (:func:`typed_column`), not converted by Polars,
    which would type it from its values."""
    names = getattr(data, "column_names", None) if module == "pyarrow" else list(getattr(data, "columns", []))
    repeated = sorted({str(name) for name in names or [] if list(names).count(name) > 1})
    if repeated:
        msg = f"the data repeats the column names {repeated}; Polars needs unique names: rename them first"
        raise DataError(msg)
    objects = []
    if module == "pandas" and hasattr(data, "dtypes") and hasattr(data, "iloc"):
        objects = [i for i, dtype in enumerate(data.dtypes) if getattr(dtype, "kind", None) == "O"]
    try:
        if module == "pyarrow":
            frame = pl.from_arrow(data, rechunk=False)
        elif objects:
            frame = _typed_pandas(data, [str(name) for name in names], objects, domain or {})
        else:
            frame = pl.from_pandas(data)
    except (pl.exceptions.PolarsError, ValueError, TypeError) as error:
        if isinstance(error, DataError):
            raise
        msg = f"the {module} data cannot be read as a Polars frame: {error}"
        raise DataError(msg) from error
    if isinstance(frame, pl.DataFrame) and names is not None and frame.width == len(names):
        frame.columns = [str(name) for name in names]  # from_arrow renames "" to "column_0"
    return frame


def _typed_pandas(data, names: list[str], objects: list[int], domain: Mapping[str, object]) -> pl.DataFrame:
    """The pandas DataFrame ``data`` as a Polars one: its ``object`` columns (positions
    ``objects``) typed from their ``domain`` entries by :func:`typed_column`, the others
    converted by ``pl.from_pandas``; columns in order, named ``names``."""
    kept = [i for i in range(len(names)) if i not in set(objects)]
    converted = pl.from_pandas(data.iloc[:, kept]) if kept else None
    columns = []
    for i, name in enumerate(names):
        if i in objects:
            columns.append(typed_column(name, data.iloc[:, i].tolist(), csv_dtype(domain.get(name)),
                                        "a pandas object column"))
        else:
            columns.append(converted.to_series(kept.index(i)).alias(name))
    return pl.DataFrame(columns)


def _streamed(query: pl.LazyFrame, batch_rows: int) -> Iterator[pl.DataFrame]:
    """Non-empty batches of at most ``batch_rows`` rows of ``query``, from the streaming
    engine (whose chunk size is a target, not a cap)."""
    try:
        for batch in query.collect_batches(chunk_size=batch_rows):
            if batch.height > batch_rows:
                yield from batch.iter_slices(batch_rows)
            elif batch.height:
                yield batch
    except pl.exceptions.InvalidOperationError as error:  # a failed cast, e.g. of scan_csv's
        msg = (
            f"the input holds values that do not read as its columns' types: {_first_line(error)}. A CSV "
            f"file's types come from the declared domain ({_CSV_RULE}): declare the column "
            "to match its values (e.g. float bounds (0.0, 10.0) for a column with fractions) "
            "or fix the file"
        )
        raise DataError(msg) from None


def _first_line(error: Exception) -> str:
    """The first line of a Polars error (the rest is its query plan)."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def scan_file(path: str | os.PathLike, domain: Mapping[str, object] | None = None) -> pl.LazyFrame:
    """A lazy scan of the ``.parquet``, ``.csv`` or ``.arrow``/``.ipc``/``.feather`` rows at
    ``path``, CSV typed by ``domain`` (:func:`scan_csv`): one file, a glob pattern
    (``"parts/*.parquet"``, ``"**"`` for subfolders) or a directory (its files of a known
    suffix, subfolders included), read as one table (:func:`input_files`).

    Several files must share one format and their columns (names, order and types; CSV
    headers by name, their types coming from ``domain``): every file's header or footer is
    read first, so a part that differs is named before any row is read. Values in folder names
    (Hive partitions, ``year=2020/``) are not read: a column the output should hold must be in
    the files, typed by the file (or ``domain``), never from a path's text.

    Raises ``FileNotFoundError`` for a path, pattern or directory with no file, ``ParameterError``
    for another suffix or a mix of formats, and ``DataError`` for a file Polars cannot read
    (empty, corrupt) and for parts whose columns differ.
    """
    files = input_files(path)
    kind = _FORMATS[files[0].suffix.lower()]
    given = files[0] if len(files) == 1 else files
    try:
        if kind == "csv":
            lazy = scan_csv(given, domain)
        else:  # a part's folder names are never read as values (docstring)
            lazy = (pl.scan_parquet if kind == "parquet" else pl.scan_ipc)(given, hive_partitioning=False)
        lazy.collect_schema()  # reads the header or footer only: an unreadable file fails here
        if len(files) > 1:
            _check_same_columns(files, kind)
    except pl.exceptions.PolarsError as error:
        msg = f"cannot read {str(path)!r}: {_first_line(error)}"
        raise DataError(msg) from None
    return lazy


_GLOB_CHARACTERS = frozenset("*?[")


def input_files(path: str | os.PathLike) -> list[Path]:
    """The files ``path`` names, sorted: itself; a glob pattern's matches (``**`` reaching into
    subfolders); a directory's files of a known suffix at any depth, leaving out hidden files
    and those starting with ``_`` (``_SUCCESS``, ``.crc`` markers). All must share one format.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(f for f in path.rglob("*") if f.is_file() and f.suffix.lower() in _FORMATS
                       and not any(part.startswith((".", "_")) for part in f.relative_to(path).parts))
        if not files:
            msg = f"no .parquet, .csv or .arrow/.ipc file in the directory {str(path)!r} or its subfolders"
            raise FileNotFoundError(msg)
    elif not path.exists() and _GLOB_CHARACTERS & set(str(path)):
        files = sorted(Path(f) for f in glob.glob(str(path), recursive=True) if Path(f).is_file())
        if not files:
            msg = f"no file matches the pattern {str(path)!r}"
            raise FileNotFoundError(msg)
    elif not path.exists():
        msg = f"no file at {str(path)!r}"
        raise FileNotFoundError(msg)
    else:
        files = [path]
    unknown = [f for f in files if f.suffix.lower() not in _FORMATS]
    if unknown:
        msg = f"cannot read {str(unknown[0])!r}: use a .parquet, .csv or .arrow/.ipc file"
        raise ParameterError(msg)
    kinds = sorted({_FORMATS[f.suffix.lower()] for f in files})
    if len(kinds) > 1:
        msg = (f"{str(path)!r} holds files of several formats ({', '.join(kinds)}): read one at a time, "
               "e.g. with a pattern such as 'parts/*.parquet'")
        raise ParameterError(msg)
    return files


def _check_same_columns(files: Sequence[Path], kind: str) -> None:
    """Refuse parts whose columns differ from the first file's (names and order; types too,
    except CSV's, which ``domain`` gives), naming the first such part and the difference."""
    def columns(file: Path) -> pl.Schema:
        if kind == "csv":
            return pl.scan_csv(file, infer_schema=False).collect_schema()
        return pl.read_parquet_schema(file) if kind == "parquet" else pl.read_ipc_schema(file)

    first = columns(files[0])
    for file in files[1:]:
        other = columns(file)
        if other == first:
            continue
        missing = [n for n in first if n not in other]
        extra = [n for n in other if n not in first]
        types = [f"{n}: {first[n]} against {other[n]}" for n in first if n in other and first[n] != other[n]]
        parts = [f"it lacks {missing}" if missing else "", f"it adds {extra}" if extra else "",
                 f"types differ ({', '.join(types)})" if types else ""]
        detail = "; ".join(p for p in parts if p) or "its columns are in another order"
        msg = (f"the parts differ: {str(file)!r} does not have the columns of {str(files[0])!r} ({detail}); "
               "every part must hold the same columns with the same types")
        raise DataError(msg)


# ---------------------------------------------------------------- CSV types
_CSV_RULE = (
    "int bounds or int categories: Int64; other numeric bounds or number categories, and "
    "'numeric' inference: Float64; date bounds: Date (YYYY-MM-DD); datetime bounds: "
    "Datetime (ISO 8601, microseconds; UTC when the bounds carry a time zone); True/False "
    "categories: Boolean; anything else: text"
)


def csv_dtype(entry: object) -> pl.DataType:
    """The dtype a CSV column gets from its ``domain=`` entry alone (never from the rows).

    Bounds ``(lo, hi)`` of Python ints (as TOML ``bounds = [17, 99]`` gives) mean Int64, date
    bounds (TOML ``1990-01-01``) Date, datetime bounds Datetime in microseconds (in UTC when
    they are aware), other bounds and a :class:`~polars_rap.schema.domain.Numeric` of numbers
    (which holds floats) Float64; categories
    (a list, ``{"categories": ...}``, ``{"candidates": ...}``, a
    :class:`~polars_rap.schema.domain.Categorical`) take the type they share: Boolean for bools,
    Int64 for ints, Float64 for numbers, text otherwise; ``"numeric"`` inference is Float64.
    No entry (or ``"categorical"``) is text.

    >>> csv_dtype((17, 99)), csv_dtype((0, 1.5)), csv_dtype([1, 2, None]), csv_dtype(["a", 1])
    (Int64, Float64, Int64, String)
    >>> csv_dtype((datetime.date(1990, 1, 1), datetime.date(2025, 12, 31)))
    Date
    """
    if isinstance(entry, Mapping):
        for key in ("bounds", "categories", "candidates"):
            if key in entry:
                return _bounds_dtype(entry[key]) if key == "bounds" else _categories_dtype(entry[key])
        return pl.String
    if isinstance(entry, tuple):
        return _bounds_dtype(entry)
    if isinstance(entry, Numeric):
        return _bounds_dtype((entry.lower, entry.upper)) if isinstance(entry.lower, datetime.date) else pl.Float64
    if isinstance(entry, str) and entry == "numeric":
        return pl.Float64
    if isinstance(entry, Categorical):
        return _categories_dtype(entry.categories)
    if isinstance(entry, (list, pl.Series)):
        return _categories_dtype(entry)
    return pl.String


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _bounds_dtype(bounds: object) -> pl.DataType:
    values = list(bounds) if isinstance(bounds, (tuple, list)) else []
    if values and all(_is_int(v) for v in values):
        return pl.Int64
    if values and all(isinstance(v, datetime.datetime) for v in values):
        return pl.Datetime("us", "UTC" if any(v.tzinfo is not None for v in values) else None)
    if values and all(isinstance(v, datetime.date) for v in values):
        return pl.Date
    return pl.Float64  # a malformed entry is refused by Domain, naming the column


def _categories_dtype(categories: object) -> pl.DataType:
    values = [v for v in categories if v is not None]
    if values and all(isinstance(v, (bool, np.bool_)) for v in values):
        return pl.Boolean
    if values and all(_is_int(v) for v in values):
        return pl.Int64
    if values and all(_is_number(v) for v in values):
        return pl.Float64
    return pl.String


def scan_csv(path: str | os.PathLike, domain: Mapping[str, object] | None = None) -> pl.LazyFrame:
    """A lazy scan of a CSV file whose column types are :func:`csv_dtype` of each column's
    ``domain`` entry: every column is read as text (no type is inferred from the rows), then
    cast. A value that does not read as its column's type raises ``DataError`` when the
    rows are read, naming the column (for the curator); booleans read ``true``/``false`` in
    any case; an empty field is null.
    """
    domain = domain or {}
    text = pl.scan_csv(path, infer_schema=False)
    casts = [_from_text(name, csv_dtype(domain.get(name))) for name in text.collect_schema().names()]
    return text.with_columns(cast for cast in casts if cast is not None)


def _from_text(name: str, dtype: pl.DataType) -> pl.Expr | None:
    """The text column ``name`` cast to ``dtype`` by the CSV rule (None: it stays text); a
    value that does not read as ``dtype`` fails the cast, naming the column."""
    if dtype == pl.Boolean:  # through an Enum: codes 0/1, and a failed cast names the column
        words = pl.col(name).str.to_lowercase().cast(pl.Enum(["false", "true"]), strict=True)
        return words.to_physical().cast(pl.Boolean)
    if dtype == pl.Date:
        return pl.col(name).str.to_date("%Y-%m-%d", strict=True)
    if isinstance(dtype, pl.Datetime):
        return pl.col(name).str.to_datetime(time_unit="us", time_zone=dtype.time_zone, strict=True)
    if dtype != pl.String:
        return pl.col(name).cast(dtype, strict=True)
    return None


def typed_column(name: str, values: Sequence[object], dtype: pl.DataType, origin: str = "Python objects") -> pl.Series:
    """Column ``name``'s Python ``values`` as a Series of ``dtype`` (:func:`csv_dtype` of the
    column's ``domain=`` entry), whatever type the values have: the type of a column of
    objects (a pandas ``object`` column, a Polars ``Object`` one, a Ray column of Python
    objects) comes from its declaration, never from its values.

    Each value is written as text and cast as a CSV field is (:func:`scan_csv`): ``None``,
    NaN, ``pd.NA`` and ``NaT`` are null; a ``Decimal`` is written in plain notation (so
    ``Decimal("2")`` reads as an Int64 and ``Decimal("2.50")`` as a Float64, whatever its
    precision), a date or datetime in ISO 8601, anything else by ``str``. A value that does not
    read as ``dtype`` (``4.5`` in a column of int bounds, text in a numeric one) is a
    :class:`~polars_rap.errors.DataError` naming the column and the fix, for the curator:
    nothing has been read or released yet. ``origin`` says what the column was, in that error.

    >>> from decimal import Decimal
    >>> typed_column("x", [1, Decimal("2"), None, float("nan")], pl.Int64).to_list()
    [1, 2, None, None]
    >>> typed_column("x", [Decimal("1.50"), 2, 2.5], pl.Float64).to_list()
    [1.5, 2.0, 2.5]
    """
    if dtype == pl.String:
        try:  # the common case, strings and nulls only, without a loop in Python
            return pl.Series(name, values, dtype=pl.String, strict=True, nan_to_null=True)
        except (TypeError, ValueError, pl.exceptions.PolarsError):
            pass
    text = pl.Series(name, [_as_text(value) for value in values], dtype=pl.String)
    cast = _from_text(name, dtype)
    if cast is None:
        return text
    try:
        return text.to_frame().select(cast).to_series()
    except pl.exceptions.PolarsError as error:
        msg = (
            f"column {name!r} is {origin}, whose values have no type of their own, so its type comes "
            f"from its declaration in domain= ({dtype}; {_CSV_RULE}), and it holds values that do not "
            f"read as {dtype}: {_first_line(error)}. Declare the column to match its values (e.g. float "
            "bounds (0.0, 10.0) for a column with fractions) or give it a type before passing it "
            "(e.g. pandas .astype('float64'), Polars .cast(pl.Float64))"
        )
        raise DataError(msg) from None


def _as_text(value: object) -> str | None:
    """``value`` as a CSV field would hold it (None for a missing value)."""
    if value is None or isinstance(value, str):
        return value
    if type(value).__name__ in ("NAType", "NaTType"):  # pandas' missing values (NaT is a datetime)
        return None
    if isinstance(value, (float, np.floating)):
        return None if value != value else str(value)  # NaN is null, as pl.from_pandas makes it
    if isinstance(value, Decimal):
        return None if value.is_nan() else format(value, "f")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, np.datetime64):
        return None if np.isnat(value) else str(value)
    return str(value)


def default_batch_rows(domain: Domain) -> int:
    """Rows per batch: ``BATCH_BYTES`` of encoded data (``int32`` per categorical block,
    ``float64`` per numeric column), at most ``MAX_BATCH_ROWS``, at least 1,024.

    >>> from polars_rap.schema.domain import Numeric
    >>> domain = Domain.from_mapping({"x": pl.Float64}, {"x": Numeric(0, 1)})
    >>> default_batch_rows(domain)
    250000
    """
    bytes_per_row = 4 * len(domain.blocks) + 8 * len(domain.numeric_columns)
    return int(min(MAX_BATCH_ROWS, max(1024, BATCH_BYTES // max(bytes_per_row, 1))))


class RowStatistic(Protocol):
    """A statistic of the encoded rows read beside the answers in the one pass (exact, so that
    it does not depend on how the rows are cut into batches or blocks)."""

    def add(self, encoded: EncodedData) -> None: ...
    def fresh(self) -> RowStatistic: ...
    def merge(self, other: RowStatistic) -> None: ...


@dataclass(slots=True)
class RowStatistics:
    """Several :class:`RowStatistic` read in the same pass (each added, copied and merged in
    turn); ``parts``, a tuple of them."""

    parts: tuple

    def add(self, encoded: EncodedData) -> None:
        for part in self.parts:
            part.add(encoded)

    def fresh(self) -> RowStatistics:
        return RowStatistics(tuple(part.fresh() for part in self.parts))

    def merge(self, other: RowStatistics) -> None:
        for part, theirs in zip(self.parts, other.parts, strict=True):
            part.merge(theirs)


def exact_answers(
    source: DataSource,
    domain: Domain,
    queries: QuerySet,
    backend: ModuleType,
    *,
    batch_rows: int | None = None,
    statistic: RowStatistic | None = None,
) -> tuple[np.ndarray, int]:
    """Exact answers of ``queries`` on every row of ``source``, in one pass over batches.

    Parameters
    ----------
    source : DataSource or RaySource
        A :class:`~polars_rap.io.ray_engine.RaySource` counts per block on the cluster.
    domain : Domain
        The public domain the rows are encoded with (its columns are the ones read).
    queries : QuerySet
        Built on ``domain``'s layout.
    backend : module
        A kernel backend (:func:`polars_rap.kernels.get_backend`); its ``answers_exact``
        counts one batch.
    batch_rows : int, optional
        Rows per batch; default :func:`default_batch_rows` of ``domain``. Peak memory grows
        with it; the result does not depend on it.
    statistic : RowStatistic, optional
        Another statistic read in the same pass (:class:`polars_rap.decode.numeric_ties.TieSums`):
        its ``add`` gets each batch's encoded rows (on a Ray source each block's own
        ``fresh()`` copy does, and the copies are ``merge``d into it on the driver).

    Returns
    -------
    answers : float64[n_queries]
        Fraction of all rows satisfying each query; equal to the answers on the whole table
        at once.
    n_rows : int
        Number of rows read.

    Raises
    ------
    DataError
        For an input with no rows, and for rows the domain does not cover (an undeclared
        category, an undeclared null, text in a numeric column); the message then says in
        which rows the first such value was found. Those messages are for the curator.

    Notes
    -----
    Each batch is counted by :func:`batch_counts` (whole-row int64 counts), the counts are
    summed exactly in int64 (:func:`add_counts`) and divided by the total once, so the answers
    do not depend on how the rows are cut into batches or blocks. Values clipped to numeric
    bounds are counted over the whole pass and logged once per column, for the curator only.
    """
    if not isinstance(source, DataSource):  # a RaySource: the same counts, per block on the cluster
        return source.exact_answers(domain, queries, backend, batch_rows=batch_rows, statistic=statistic)
    batch_rows = default_batch_rows(domain) if batch_rows is None else batch_rows
    counts = np.zeros(queries.n_queries, dtype=np.int64)
    clip_counts: dict[str, int] = {}
    n_rows = 0
    for batch in source.batches(domain.names, batch_rows):
        where = f"the batch of input rows {n_rows:,} to {n_rows + batch.height - 1:,}; nothing was released"
        batch_count = batch_counts(batch, domain, queries, backend, clip_counts, where, statistic)
        n_rows = add_counts(counts, n_rows, batch_count, batch.height)
        del batch
    return finish_answers(counts, n_rows, clip_counts, domain)


def batch_counts(batch: pl.DataFrame, domain: Domain, queries: QuerySet, backend: ModuleType,
                 clip_counts: dict[str, int], where: str,
                 statistic: RowStatistic | None = None) -> np.ndarray:
    """int64[n_queries]: rows of ``batch`` satisfying each query, by ``backend.answers_exact``.

    The one counting step of every engine (this process, or a Ray worker per block). The
    backend returns fractions of the batch's height; ``rint(answer * height)`` recovers each
    whole-row count exactly (the rounding error of one division and one multiplication is far
    below half a row for any batch under 2**50 rows). Clipped values are added into
    ``clip_counts``; an error on the batch's content (for the curator) ends with ``where``.
    ``statistic``: see :func:`exact_answers`.
    """
    try:
        encoded = encode(batch, domain, clip_counts=clip_counts)
    except DataError as error:
        msg = f"{error} (found in {where})"
        raise DataError(msg) from error
    if statistic is not None:
        statistic.add(encoded)
    answers = backend.answers_exact(encoded.codes, encoded.numerics, queries)
    return np.rint(answers * batch.height).astype(np.int64)


def add_counts(total: np.ndarray, n_rows: int, counts: np.ndarray, height: int) -> int:
    """Add one batch's ``counts`` (int64[n_queries], each in [0, height]) into ``total`` in
    place, exactly; returns the rows counted so far.

    No count exceeds the rows counted, so refusing a row total past 2**63 - 1 keeps every sum
    inside int64 (``OverflowError``); a count outside [0, height] (a row counted twice, a
    partial result mixed up) is a ``RuntimeError``, never a silently wrong answer.
    """
    n_rows, height = int(n_rows), int(height)
    if n_rows + height > _INT64_MAX:
        msg = f"more than 2**63 - 1 rows ({n_rows:,} + {height:,}): int64 counts would overflow"
        raise OverflowError(msg)
    counts = np.asarray(counts)
    if counts.shape != total.shape or counts.dtype != np.int64 or (
            counts.size and (counts.min() < 0 or counts.max() > height)):
        msg = f"a batch of {height:,} rows returned counts outside [0, {height:,}] or of the wrong shape"
        raise RuntimeError(msg)
    total += counts
    return n_rows + height


def finish_answers(counts: np.ndarray, n_rows: int, clip_counts: Mapping[str, int],
                   domain: Domain) -> tuple[np.ndarray, int]:
    """(float64[n_queries] fractions ``counts / n_rows``, ``n_rows``) once every batch is in:
    refuses an input with no rows and logs the clip counts for the curator. Whatever the
    batches, equal counts give equal answers, bit for bit (exact below 2**53 rows)."""
    if n_rows == 0:
        msg = "the input has no rows; differential privacy needs at least one"
        raise DataError(msg)
    _log_clipped(clip_counts, domain)
    return counts / n_rows, n_rows


def _log_clipped(clip_counts: dict[str, int], domain: Domain) -> None:
    """One warning per clipped column, for the curator: these counts read the data and are
    never released."""
    for name, n_clipped in clip_counts.items():
        if n_clipped:
            logger.warning(
                "column %r: %d values outside the domain's bounds %s (declared or privately inferred) were clipped",
                name, n_clipped, bounds_text(domain[name]),
            )
