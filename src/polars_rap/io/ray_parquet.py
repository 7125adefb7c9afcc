"""Parquet paths cut into pieces of whole row groups, so that Ray counts one file on many workers.

``ray.data.read_parquet`` reads a file in one task, and Ray Data fuses the counting map into
that task: a 10M-row single-file table was counted by one worker on one core, 2x the
in-process pass's seconds with a 2.1 GiB worker (``bench/results/ray_pass_*.json`` before
this module). Here the driver reads only the files' footers (``pyarrow.dataset``: folders,
``s3://`` and other URIs, hive partitions) and plans :class:`ParquetPieces`: runs of
consecutive row groups of one file of about ``piece_rows`` rows (at least one row group).
Each piece is one item of a ``ray.data.from_items`` dataset, hence one Ray task, which
streams its row groups in record batches of the counting task's batch size: a worker holds
one batch, never a piece or a file. The pieces partition the row groups, so every row is
read exactly once.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import polars as pl

from polars_rap.errors import DataError, ParameterError

__all__ = ["ParquetPieces", "plan_pieces", "piece_frames", "describe_piece", "DEFAULT_PIECE_ROWS"]

DEFAULT_PIECE_ROWS = 1_000_000
"""Rows of a piece (one Ray task) the planner aims at; a piece holds whole row groups, at
least one. Memory does not depend on it (tasks stream record batches), only the number of
tasks: enough of them to balance a cluster, few enough that scheduling costs nothing."""


@dataclass(frozen=True, slots=True)
class ParquetPieces:
    """The plan of a Parquet input: ``pieces`` (each a pickled ``pyarrow`` Parquet fragment
    restricted to its row groups: path, filesystem, partition values; about 1.4 KB), the
    dataset's Arrow ``schema`` (partition columns included) and its total ``rows``."""

    pieces: tuple[bytes, ...]
    schema: object  # pyarrow.Schema
    rows: int

    @property
    def polars_schema(self) -> pl.Schema:
        """The column names and dtypes as Polars reads them (no rows read)."""
        return pl.from_arrow(self.schema.empty_table()).schema


def plan_pieces(paths: Sequence[str | os.PathLike], piece_rows: int | None = DEFAULT_PIECE_ROWS, *,
                min_pieces: int = 1) -> ParquetPieces:
    """Plan the pieces of Parquet ``paths`` (files, folders or URIs, hive partitioning as
    ``ray.data.read_parquet`` reads it) from their footers alone: pieces of about
    ``piece_rows`` rows, or with None of ``DEFAULT_PIECE_ROWS`` at most and small enough
    that there are ``min_pieces`` of them where the row groups allow (a cluster's CPUs get
    work even from a small input).

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> pl.DataFrame({"x": range(10)}).write_parquet(folder / "a.parquet", row_group_size=3)
    >>> plan = plan_pieces([folder], piece_rows=6)
    >>> len(plan.pieces), plan.rows   # row groups of 3, 3, 3, 1 rows: pieces of 6 and 4 rows
    (2, 10)
    >>> len(plan_pieces([folder], None, min_pieces=4).pieces)   # pieces of 3 rows at most
    4
    """
    import pyarrow.dataset as pads

    if piece_rows is not None and (isinstance(piece_rows, bool) or not isinstance(piece_rows, int) or piece_rows < 1):
        msg = f"The 'piece_rows' parameter must be an int in [1, inf) or None. Got {piece_rows!r}"
        raise ParameterError(msg)
    datasets = [pads.dataset(_absolute(p), format="parquet", partitioning="hive") for p in paths]
    schema = datasets[0].schema
    for path, dataset in zip(paths, datasets, strict=True):
        if not dataset.schema.equals(schema):
            msg = (f"the Parquet inputs differ in their columns: {os.fspath(path)!r} has {dataset.schema.names} "
                   f"({dataset.schema.types}), {os.fspath(paths[0])!r} {schema.names} ({schema.types}); "
                   "pass files of one table")
            raise DataError(msg)
    fragments = [f for dataset in datasets for f in dataset.get_fragments()]
    if piece_rows is None:
        total = sum(group.num_rows for f in fragments for group in f.row_groups)  # reads the footers
        piece_rows = max(1, min(DEFAULT_PIECE_ROWS, -(-total // max(1, int(min_pieces)))))
    pieces, rows = [], 0
    for fragment in fragments:
        run, run_rows = [], 0
        for group in fragment.row_groups:
            if group.num_rows == 0:  # a writer may leave an empty row group: nothing to read
                continue
            if run and run_rows + group.num_rows > piece_rows:
                pieces.append(pickle.dumps(fragment.subset(row_group_ids=run), protocol=5))
                run, run_rows = [], 0
            run.append(group.id)
            run_rows += group.num_rows
            rows += group.num_rows
        if run:
            pieces.append(pickle.dumps(fragment.subset(row_group_ids=run), protocol=5))
    if not pieces:
        msg = f"the input has no rows; differential privacy needs at least one (no Parquet row groups in {list(paths)})"
        raise DataError(msg)
    return ParquetPieces(tuple(pieces), schema, rows)


def piece_frames(piece: bytes, schema, columns: Sequence[str], batch_rows: int) -> Iterator[pl.DataFrame]:
    """The rows of one planned ``piece`` (``columns`` only) as Polars frames of ``batch_rows``
    rows (the last one shorter), read one record batch at a time on the calling thread (a
    Ray task holds the CPUs it was given, no more). Record batches end at row groups, so they
    are joined up to ``batch_rows`` rows: a count pays a fixed cost per call, and 100k-row
    calls took 1.3x the time of 250k-row ones on the benchmark's table."""
    import pyarrow as pa

    fragment = pickle.loads(piece)  # planned by plan_pieces on the driver, never the user's bytes
    pending: list = []
    pending_rows = 0
    for batch in fragment.to_batches(schema=schema, columns=list(columns), batch_size=int(batch_rows),
                                     use_threads=False):
        pending.append(batch)
        pending_rows += batch.num_rows
        while pending_rows >= batch_rows:
            table = pa.Table.from_batches(pending)
            yield pl.from_arrow(table.slice(0, batch_rows), rechunk=False)
            rest = table.slice(batch_rows)
            pending, pending_rows = rest.to_batches(), rest.num_rows
    if pending_rows:
        yield pl.from_arrow(pa.Table.from_batches(pending, schema=pending[0].schema), rechunk=False)


def describe_piece(piece: bytes) -> str:
    """Where a planned piece's rows are, for a curator's message: ``row groups 2-3 of
    '/data/part-0.parquet'``."""
    fragment = pickle.loads(piece)  # planned by plan_pieces on the driver
    ids = [group.id for group in fragment.row_groups]
    span = f"row group {ids[0]}" if len(ids) == 1 else f"row groups {ids[0]}-{ids[-1]}"
    return f"{span} of {fragment.path!r}"


def _absolute(path: str | os.PathLike) -> str:
    """A local path made absolute (workers may start elsewhere); a URI (``s3://``) as given."""
    text = os.fspath(path)
    return text if "://" in text else os.path.abspath(text)
