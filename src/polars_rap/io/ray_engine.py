"""The Ray engine: the one pass over the sensitive rows, per block on a Ray cluster.

Only two steps of a synthesis touch data at scale: the pass over the sensitive rows (exact
workload answers; private domain inference's counts) and writing the synthetic rows
(:mod:`polars_rap.io.blocks`). Everything else (selection, measurement, projection over the
``n_relaxed`` rows) stays on the driver. :class:`RaySource` is the input side: a
``ray.data.Dataset`` (or Parquet paths/URIs read by ``ray.data.read_parquet``) offering what
:class:`~polars_rap.io.source.DataSource` offers, so ``synthesize`` runs unchanged on it.

How a pass runs
---------------
Each block of a ``ray.data.Dataset`` goes to a Ray task (``map_batches``, one
``pyarrow.Table`` per block); Parquet paths are cut into pieces of whole row groups by the
driver (:mod:`polars_rap.io.ray_parquet`), one task each, which streams its piece in record
batches (``ray.data.read_parquet`` would read a file in one task, so one worker would count a
one-file table). A task counts with the functions the in-process pass uses
(:func:`polars_rap.io.source.batch_counts`, the Numba kernels; :class:`InferenceCounts.add
<polars_rap.privacy.inference.InferenceCounts>`) in slices of at most ``batch_rows`` rows, so a
worker's memory is bounded by the slice (and, for a Dataset, its block). The task *returns* its partial
counts (whole-row int64 counts and the block's row total) as its result; it writes nothing
anywhere. The driver streams these results in and adds them exactly
(:func:`polars_rap.io.source.add_counts`: int64, refusing more than 2**63 - 1 rows, refusing a
block's count outside [0, its rows]). Integer addition does not depend on the order, so the
answers equal the in-process pass bit for bit whatever the number of blocks or workers.

Retries and exactness: a block whose worker dies (lost node, OOM kill) is run again by Ray
Data, and a count that raises is run again on the same block inside the task (up to
``max_retries`` times); either way only the output of an attempt that finished reaches the
driver, and each attempt starts from zero counts, so a retried block's counts *replace* the
failed attempt's, never add to them: no row is lost or counted twice. A data error (an
undeclared category, text in a numeric column) is deterministic, so it is not retried: the
task returns it as a result and the driver raises the same ``DataError`` as the in-process
pass, for the curator.

Column types: a Dataset's Arrow types are taken as declared, except where Ray took them from
Python values. A column of Python objects (a pandas ``object`` column of a ``from_pandas``
Dataset, Ray's pickled-object columns) and every column of a Dataset built from Python rows
(``from_items``, or a row-wise ``map``/``flat_map``, whose output Ray types from the values: one
``4.5`` among whole numbers makes a column ``double``) are typed from the declared domain
instead, in each task, by the rule a CSV file's columns follow
(:func:`polars_rap.io.source.typed_column`). A materialized Dataset no longer shows how it was
built: its Arrow types are then taken as declared.

Workers run the CPU (Numba) kernels, with as many threads as the task holds CPUs; counts are
integers, so they equal any backend's. The driver holds the workload, one block's partial
counts at a time and the running sums: ``O(n_queries)``, whatever the number of rows.
"""

from __future__ import annotations

import importlib
import logging
import os
import pickle
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np
import polars as pl

from polars_rap.schema.domain import Domain
from polars_rap.errors import DataError, ParameterError
from polars_rap.workload.queries import QuerySet
from polars_rap.io.ray_parquet import ParquetPieces, describe_piece, piece_frames, plan_pieces
from polars_rap.io.source import MAX_BATCH_ROWS, add_counts, batch_counts, csv_dtype, default_batch_rows, finish_answers, typed_column

__all__ = ["RaySource", "write_blocks", "import_ray", "DEFAULT_MAX_RETRIES"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_RETRIES = 3
"""Times a block's count is run again after an exception before the pass fails (a lost
worker is retried by Ray Data itself)."""

PIECES_PER_CPU = 4
"""Pieces per CPU of the cluster a Parquet input is cut into at least (where its row groups
allow): a small input still keeps every CPU busy, and the last pieces to finish are short."""

_PARTIAL = "partial"  # the one column of a task's output: its pickled partial counts
_PICKLED_OBJECTS = "ray.data.arrow_pickled_object"  # Ray's Arrow extension type for Python objects
_FROM_PYTHON_ROWS = ("FromItems", "MapRows", "FlatMap")  # logical operators whose output Ray types from values
_WORKER_BACKENDS = {"polars_rap.kernels.cuda": "polars_rap.kernels.cpu"}  # tasks hold no GPU


def import_ray() -> ModuleType:
    """The ``ray`` module with ``ray.data`` loaded; an ``ImportError`` naming the extra
    (``pip install 'polars-rap[ray]'``) when Ray is not installed."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as error:
        msg = (
            "the Ray engine needs Ray Data, which is not installed: pip install 'polars-rap[ray]' "
            f"(or use engine='polars' to read in this process) [{error}]"
        )
        raise ImportError(msg) from error
    return ray


@dataclass(frozen=True, slots=True)
class _DataError:
    """A block's content error (for the curator), returned instead of raised: not retried."""

    message: str


@dataclass(frozen=True, slots=True)
class _AnswerPart:
    """One block's exact counts: int64[n_queries] rows satisfying each query, its rows and
    its clip counts per column (for the curator's log, never released)."""

    counts: np.ndarray
    n_rows: int
    clip_counts: dict[str, int]
    statistic: Any = None  # the block's own copy of a RowStatistic read beside the counts, or None


@dataclass(frozen=True, slots=True)
class _AnswerTask:
    """Counts one block or piece (Polars frames) in slices of ``batch_rows`` rows; runs on a
    worker."""

    domain: Domain
    queries: QuerySet
    backend: str  # a kernel module's import path
    batch_rows: int
    statistic: Any = None  # a RowStatistic (source.exact_answers), each attempt reading into a fresh copy

    def __call__(self, frames: Iterable[pl.DataFrame], where: str) -> _AnswerPart:
        backend = importlib.import_module(self.backend)
        counts = np.zeros(self.queries.n_queries, dtype=np.int64)
        clip_counts: dict[str, int] = {}
        statistic = None if self.statistic is None else self.statistic.fresh()
        n_rows = 0
        for frame in frames:
            for batch in frame.iter_slices(self.batch_rows):
                part = batch_counts(batch, self.domain, self.queries, backend, clip_counts, where, statistic)
                n_rows = add_counts(counts, n_rows, part, batch.height)
        return _AnswerPart(counts, n_rows, clip_counts, statistic)


@dataclass(frozen=True, slots=True)
class _InferenceTask:
    """Counts one block or piece for private domain inference; runs on a worker."""

    requests: tuple
    batch_rows: int = MAX_BATCH_ROWS

    def __call__(self, frames: Iterable[pl.DataFrame], where: str):
        from polars_rap.privacy.inference import InferenceCounts

        counts = InferenceCounts(self.requests)
        for frame in frames:
            for batch in frame.iter_slices(self.batch_rows):
                counts.add(batch)
        return counts


def _count_block(table, task, retries: int, typed: Mapping[str, pl.DataType] | None = None) -> Any:
    """Ray ``map_batches`` function: ``task`` on one block of a Dataset (a ``pyarrow.Table``),
    its columns in ``typed`` typed from their declarations (:func:`_block_frame`); returns a
    one-row table holding the pickled partial result (or the block's data error)."""
    _use_assigned_cpus()
    where = f"a block of {table.num_rows:,} rows of the Ray dataset; nothing was released"
    return _attempts(lambda: task([_block_frame(table, typed or {}, where)], where), retries)


def _block_frame(table, typed: Mapping[str, pl.DataType], where: str) -> pl.DataFrame:
    """One block (a ``pyarrow.Table``) as a Polars frame: each column of ``typed`` built from
    its Python values as the dtype it maps to (:func:`~polars_rap.io.source.typed_column`,
    whatever Arrow type Ray gave this block), the others converted as they are."""
    if not typed:
        return pl.from_arrow(table, rechunk=False)
    names = list(table.column_names)
    plain = [name for name in names if name not in typed]
    converted = pl.from_arrow(table.select(plain), rechunk=False) if plain else None
    columns = []
    for name in names:
        if name not in typed:
            columns.append(converted.get_column(name))
            continue
        try:
            columns.append(typed_column(name, table.column(name).to_pylist(), typed[name],
                                        "a Ray column typed from Python values"))
        except DataError as error:
            msg = f"{error} (found in {where})"
            raise DataError(msg) from None
    return pl.DataFrame(columns)


def _count_piece(batch, task, retries: int, schema, columns: Sequence[str]) -> Any:
    """Ray ``map_batches`` function: ``task`` on the Parquet piece of ``batch`` (one row of
    pickled pieces, :mod:`polars_rap.io.ray_parquet`), streamed in record batches of the task's
    ``batch_rows``; returns as :func:`_count_block`."""
    _use_assigned_cpus()
    (piece,) = batch.column("piece").to_pylist()
    where = f"{describe_piece(piece)} (a piece of the Parquet input); nothing was released"
    return _attempts(lambda: task(piece_frames(piece, schema, columns, task.batch_rows), where), retries)


def _attempts(count, retries: int) -> Any:
    """``count()`` (one block's or piece's partial result) as a one-row ``pyarrow.Table`` of
    its pickle, run again up to ``retries`` times after an exception (a failed kernel call, a
    store's hiccup): each attempt starts from zero counts and rereads its rows, and only a
    finished attempt's result is returned, so nothing is counted twice. A ``DataError`` is
    the rows' content (deterministic): returned at once, for the driver to raise.
    """
    import pyarrow as pa

    for attempt in range(retries + 1):
        try:
            part = count()
            break
        except DataError as error:
            part = _DataError(str(error))
            break
        except Exception as error:  # noqa: BLE001  (anything else may be transient)
            if attempt == retries:
                raise
            logger.warning("a block's count failed (%s: %s); attempt %d of %d",
                           type(error).__name__, error, attempt + 2, retries + 1)
    return pa.table({_PARTIAL: pa.array([pickle.dumps(part, protocol=5)], type=pa.large_binary())})


def _use_assigned_cpus() -> None:
    """Numba threads = the CPUs Ray gave this task (no oversubscription of the node)."""
    import numba
    import ray

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
    numba.set_num_threads(int(min(max(1, round(cpus)), numba.config.NUMBA_NUM_THREADS)))


def _polars_schema(dataset, domain: Mapping[str, object] | None = None) -> tuple[pl.Schema, dict[str, pl.DataType]]:
    """(the dataset's column names and dtypes as Polars reads its schema, no rows read for a
    Parquet scan; the columns typed from ``domain`` instead, each with its dtype).

    A column is typed from its declaration (:func:`~polars_rap.io.source.csv_dtype` of its
    ``domain`` entry, text without one) where Ray took its type from Python values: a pandas
    ``object`` column, a column of Ray's pickled Python objects, and every column of a dataset
    built from Python rows (:func:`_from_python_rows`)."""
    schema = dataset.schema()
    if schema is None:
        msg = "the input has no rows; differential privacy needs at least one"
        raise DataError(msg)
    domain = domain or {}
    every = _from_python_rows(dataset)
    base = getattr(schema, "base_schema", schema)
    if hasattr(base, "empty_table"):  # an Arrow schema
        objects = [field.name for field in base if every or _holds_objects(field.type)]
        plain = pl.from_arrow(base.empty_table().select([n for n in base.names if n not in objects])).schema
        names = list(base.names)
    else:  # a pandas block schema: names and NumPy / pandas dtypes
        import pandas as pd

        names = [str(name) for name in base.names]
        objects = [n for n, t in zip(names, base.types, strict=True) if every or getattr(t, "kind", None) == "O"]
        plain = pl.from_pandas(pd.DataFrame({n: pd.Series(dtype=t) for n, t in zip(names, base.types, strict=True)
                                             if n not in objects})).schema
    typed = {name: csv_dtype(domain.get(name)) for name in objects}
    return pl.Schema([(name, typed[name] if name in typed else plain[name]) for name in names]), typed


def _holds_objects(arrow_type) -> bool:
    """Whether an Arrow column of ``arrow_type`` holds Python objects (Ray's pickled ones)."""
    return getattr(arrow_type, "extension_name", None) == _PICKLED_OBJECTS


def _from_python_rows(dataset) -> bool:
    """Whether Ray types the dataset's columns from Python values: its plan reads Python rows
    (``from_items``) or maps rows with Python functions (``map``, ``flat_map``). Read from
    Ray's logical plan (internal API; a plan it cannot read counts as typed, and so does a
    materialized dataset, which no longer shows how it was built)."""
    stack = [getattr(getattr(dataset, "_logical_plan", None), "dag", None)]
    while stack:
        operator = stack.pop()
        if operator is None:
            continue
        if type(operator).__name__ in _FROM_PYTHON_ROWS:
            return True
        stack.extend(getattr(operator, "input_dependencies", ()) or ())
    return False


@dataclass(frozen=True, slots=True, eq=False)
class RaySource:
    """The sensitive input read per block by Ray tasks: a ``ray.data.Dataset`` (``dataset``)
    or Parquet paths planned as pieces of row groups (``pieces``).

    Build it with :meth:`from_input`. Like :class:`~polars_rap.io.source.DataSource` it has a
    ``schema`` (read without reading rows), :meth:`inference_counts` and
    :meth:`exact_answers`; reading never changes it, so both passes read the same rows.
    """

    dataset: Any = field(repr=False)
    schema: pl.Schema
    max_retries: int = DEFAULT_MAX_RETRIES
    pieces: ParquetPieces | None = field(default=None, repr=False)
    typed: dict = field(default_factory=dict, repr=False)
    """Columns typed from their declarations in each task, with their dtypes (see the module
    docstring); the others keep their Arrow types."""

    @classmethod
    def from_input(cls, data, *, domain: Mapping[str, object] | None = None, max_retries: int = DEFAULT_MAX_RETRIES,
                   piece_rows: int | None = None) -> RaySource:
        """Wrap ``data``: a ``ray.data.Dataset`` (counted per its blocks), or a Parquet file,
        folder or URI (``str``, path-like, or a list of them), planned from its footers into
        pieces of whole row groups, one Ray task each (:func:`polars_rap.io.ray_parquet.plan_pieces`):
        of about ``piece_rows`` rows, or with None (default) of at most
        ``DEFAULT_PIECE_ROWS`` and at least ``PIECES_PER_CPU`` per CPU of the cluster where
        the row groups allow. ``domain``, the user's ``domain=`` mapping, types a Dataset's
        columns whose types Ray took from Python values (:func:`_polars_schema`). Needs the
        ``ray`` extra; a ``TypeError`` for anything else."""
        ray = import_ray()
        if isinstance(data, ray.data.Dataset):
            schema, typed = _polars_schema(data, domain)
            return cls(data, schema, int(max_retries), typed=typed)
        if isinstance(data, (str, os.PathLike)) or (
                isinstance(data, (list, tuple)) and data and all(isinstance(p, (str, os.PathLike)) for p in data)):
            if not ray.is_initialized():
                ray.init()  # as Ray Data would on first use: the pieces follow the cluster's CPUs
            cpus = ray.cluster_resources().get("CPU", 1)
            plan = plan_pieces([data] if isinstance(data, (str, os.PathLike)) else list(data), piece_rows,
                               min_pieces=int(PIECES_PER_CPU * cpus))
            return cls(None, plan.polars_schema, int(max_retries), plan)
        msg = (
            "with engine='ray', data must be a ray.data.Dataset or Parquet paths/URIs "
            f"(a file, a folder, s3://...). Got {type(data).__name__}"
        )
        raise TypeError(msg)

    def inference_counts(self, requests: Sequence) -> Any:
        """The counts private domain inference reads, as
        :class:`~polars_rap.privacy.inference.InferenceCounts`, each block counted by a task and
        merged exactly on the driver."""
        from polars_rap.privacy.inference import InferenceCounts

        total = InferenceCounts(requests)
        for part in self._partials([r.name for r in requests], _InferenceTask(tuple(requests))):
            total.merge(part)
        return total

    def exact_answers(self, domain: Domain, queries: QuerySet, backend: ModuleType, *,
                      batch_rows: int | None = None, statistic=None) -> tuple[np.ndarray, int]:
        """(float64[n_queries] answers, n_rows): :func:`polars_rap.io.source.exact_answers` of
        this dataset, each block counted by a task, the int64 counts summed on the driver (and
        each block's copy of ``statistic`` merged into it there)."""
        batch_rows = default_batch_rows(domain) if batch_rows is None else batch_rows
        if isinstance(batch_rows, bool) or not isinstance(batch_rows, (int, np.integer)) or batch_rows < 1:
            msg = f"The 'batch_rows' parameter must be an int in [1, inf). Got {batch_rows!r}"
            raise ParameterError(msg)
        name = _WORKER_BACKENDS.get(backend.__name__, backend.__name__)
        task = _AnswerTask(domain, queries, name, int(batch_rows), statistic)
        counts = np.zeros(queries.n_queries, dtype=np.int64)
        clip_counts: dict[str, int] = {}
        n_rows = 0
        for part in self._partials(domain.names, task):
            n_rows = add_counts(counts, n_rows, part.counts, part.n_rows)
            _merge_clip_counts(clip_counts, part.clip_counts)
            if statistic is not None:
                statistic.merge(part.statistic)
        return finish_answers(counts, n_rows, clip_counts, domain)

    def _partials(self, columns: Sequence[str], task) -> Iterator[Any]:
        """Run ``task`` on every block (only ``columns`` read) and yield its partial results
        on the driver as they come; a block's data error is raised here as ``DataError``."""
        missing = [name for name in columns if name not in self.schema]
        if missing:
            msg = f"the data lacks columns the domain declares: {missing}"
            raise DataError(msg)
        # One batch per block or piece; a worker lost mid-task is Ray Data's to rerun (its
        # default retries), and only the rerun's output reaches this loop.
        if self.pieces is None:
            typed = {name: dtype for name, dtype in self.typed.items() if name in columns}
            mapped = self.dataset.select_columns(list(columns)).map_batches(
                _count_block, fn_kwargs={"task": task, "retries": self.max_retries, "typed": typed},
                batch_format="pyarrow", batch_size=None, zero_copy_batch=True,
            )
        else:
            ray = import_ray()
            pieces = self.pieces.pieces
            mapped = ray.data.from_items([{"piece": p} for p in pieces], override_num_blocks=len(pieces)).map_batches(
                _count_piece, fn_kwargs={"task": task, "retries": self.max_retries, "schema": self.pieces.schema,
                                         "columns": list(columns)},
                batch_format="pyarrow", batch_size=1, zero_copy_batch=True,
            )
        for batch in mapped.iter_batches(batch_size=None, batch_format="pyarrow"):
            for blob in batch.column(_PARTIAL).to_pylist():
                part = pickle.loads(blob)  # written by _attempts above, never by the user
                if isinstance(part, _DataError):
                    raise DataError(part.message)
                yield part


# ---------------------------------------------------------------- output
def write_blocks(job, *, tasks: int | None = None) -> dict[int, int]:
    """Write every block of ``job`` (a :mod:`polars_rap.io.blocks` write job) from Ray tasks;
    returns ``{block index: rows written}``.

    The block indices are a ``ray.data.range`` spread over ``tasks`` Ray blocks (default:
    Ray's choice); each task decodes and writes its blocks (:meth:`_WriteJob.write`) and
    returns their indices and heights. A block's file depends on its index only, so a task
    run again rewrites the same files, and the driver keys what it hears by block index.
    """
    ray = import_ray()
    indices = ray.data.range(job.n_blocks, override_num_blocks=tasks)
    written = indices.map_batches(
        _write_batch, fn_kwargs={"job": job, "retries": DEFAULT_MAX_RETRIES}, batch_format="numpy",
        batch_size=1, zero_copy_batch=True,
    )
    heights: dict[int, int] = {}
    for batch in written.iter_batches(batch_size=None, batch_format="numpy"):
        for index, height in zip(batch["index"].tolist(), batch["rows"].tolist(), strict=True):
            heights[int(index)] = int(height)
    return heights


def _write_batch(batch: Mapping[str, np.ndarray], job, retries: int) -> dict[str, np.ndarray]:
    """Ray ``map_batches`` function: write the blocks whose indices ``batch["id"]`` holds,
    trying each up to ``retries`` more times (a write is idempotent)."""
    indices = np.asarray(batch["id"], dtype=np.int64)
    heights = np.empty(len(indices), dtype=np.int64)
    for k, index in enumerate(indices.tolist()):
        for attempt in range(retries + 1):
            try:
                heights[k] = job.write(index)
                break
            except Exception as error:  # noqa: BLE001  (a store's hiccup; a rewrite is harmless)
                if attempt == retries:
                    raise
                logger.warning("writing block %d failed (%s: %s); attempt %d of %d",
                               index, type(error).__name__, error, attempt + 2, retries + 1)
    return {"index": indices, "rows": heights}


def _merge_clip_counts(total: dict[str, int], part: Mapping[str, int]) -> None:
    for column, n_clipped in part.items():
        total[column] = total.get(column, 0) + n_clipped
