"""Synthetic rows in fixed blocks, written as partitioned Parquet (here or from Ray workers).

Sampling rows from a released model is post-processing (design.md §2 item 6), and it is the
other step of a synthesis that touches data at scale. :func:`write_parquet` cuts ``rows``
into blocks of ``block_rows`` rows (the last one shorter): block ``i`` holds rows
``[i * block_rows, min((i + 1) * block_rows, rows))``, is decoded by
:func:`polars_rap.decode.decoding.decode` from a generator seeded by ``(seed, i)`` alone
(``SeedSequence(seed, spawn_key=(i,))``), and is written to ``part-{i:06d}.parquet`` under the
output folder. What lands in each file depends on the model, ``rows``, ``block_rows`` and
``seed`` only, never on how many Ray tasks or workers wrote them, so the engine (``"polars"``:
this process, one block at a time; ``"ray"``: Ray tasks, :mod:`polars_rap.io.ray_engine`) and
the cluster's layout do not change the output. Memory per writer is one block's rows.

Each file is written beside its final name (``.part-....parquet.partial``, hidden from
Parquet readers) and then moved into place, so a retried block overwrites its own file with
the same content and a reader never sees half a file.

Within a block each relaxed row yields ``height / n_relaxed`` rows (rounded systematically),
as :meth:`SyntheticModel.sample <polars_rap.pipeline.model.SyntheticModel.sample>` does for its one
block; the files are not the rows ``sample(rows, seed)`` returns, which draws all rows from
one generator.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from polars_rap.schema.domain import Domain
from polars_rap.decode.decoding import decode
from polars_rap.errors import ParameterError
from polars_rap.fit.strategy_checks import check_numeric_coupling

__all__ = ["write_parquet", "write_relaxed", "check_folder", "clear_folder", "sample_block", "block_file_name",
           "DEFAULT_BLOCK_ROWS", "WRITE_ENGINES"]

DEFAULT_BLOCK_ROWS = 1_000_000
"""Rows per output file: about 100-200 MB of decoded rows in a writer's memory for a
20-column table."""

WRITE_ENGINES = ("polars", "ray")


def block_file_name(index: int) -> str:
    """``part-000007.parquet`` for block 7 (six digits at least, so names sort as blocks)."""
    return f"part-{index:06d}.parquet"


def sample_block(relaxed: np.ndarray, domain: Domain, index: int, height: int, entropy: int,
                 decoding: str = "independent", labels=None, numeric_coupling: str = "fitted",
                 margins=None, ties=None, constraints=None, ranks=None) -> pl.DataFrame:
    """Block ``index`` of the output: ``height`` rows decoded from ``relaxed``
    (float32[n_relaxed, n_coords]) with a generator seeded by ``(entropy, index)`` only, their
    labels redrawn by ``labels`` (a :class:`~polars_rap.public.labels.LabelModel`) if given,
    their numerics coupled as ``numeric_coupling`` says (:mod:`polars_rap.decode.numeric_coupling`) and
    moved toward ``ties`` (:class:`~polars_rap.decode.numeric_ties.NumericTies`) and ``margins`` (a
    :class:`~polars_rap.decode.histogram_margins.HistogramMargins`) if given, every row keeping
    ``constraints`` (:class:`~polars_rap.decode.constraints.Constraints`) if given, each label's numerics
    reordered to meet ``ranks`` (:class:`~polars_rap.decode.rank_pairs.RankPairs`) if given.

    >>> import polars as pl, numpy as np
    >>> from polars_rap import Domain
    >>> domain = Domain.from_mapping({"x": pl.Float64}, {"x": (0.0, 1.0)})
    >>> relaxed = np.full((4, 1), 0.5, dtype=np.float32)
    >>> sample_block(relaxed, domain, 3, 5, entropy=0).equals(sample_block(relaxed, domain, 3, 5, entropy=0))
    True
    """
    rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(int(index),)))
    return decode(relaxed, domain, int(height), rng, method=decoding, labels=labels,
                  numeric_coupling=numeric_coupling, margins=margins, ties=ties, constraints=constraints, ranks=ranks)


@dataclass(frozen=True, slots=True)
class _WriteJob:
    """What every block writer needs: the released model's parts, the layout and the target."""

    relaxed: np.ndarray = field(repr=False)
    domain: Domain
    decoding: str
    rows: int
    block_rows: int
    entropy: int
    filesystem: object  # a pyarrow.fs.FileSystem
    root: str
    labels: object = None  # a LabelModel, or None
    numeric_coupling: str = "fitted"
    margins: object = None  # a HistogramMargins, or None
    ties: object = None  # a NumericTies, or None
    constraints: object = None  # a Constraints, or None
    ranks: object = None  # a RankPairs, or None

    @property
    def n_blocks(self) -> int:
        return -(-self.rows // self.block_rows)

    def write(self, index: int) -> int:
        """Decode and write block ``index``; returns its rows."""
        import pyarrow.parquet as pq

        height = min(self.block_rows, self.rows - index * self.block_rows)
        frame = sample_block(self.relaxed, self.domain, index, height, self.entropy, self.decoding, self.labels,
                             self.numeric_coupling, self.margins, self.ties, self.constraints, self.ranks)
        final = f"{self.root}/{block_file_name(index)}"
        partial = f"{self.root}/.{block_file_name(index)}.partial"
        pq.write_table(frame.to_arrow(), partial, filesystem=self.filesystem)
        self.filesystem.move(partial, final)
        return height


def write_parquet(model, path: str | os.PathLike, rows: int, *, seed: int | None = None,
                  block_rows: int = DEFAULT_BLOCK_ROWS, engine: str = "polars",
                  overwrite: bool = False, ray_tasks: int | None = None) -> list[str]:
    """Write ``rows`` synthetic rows of ``model`` as a folder of Parquet files, one per block.

    Post-processing of released values: no privacy cost.

    Parameters
    ----------
    model : SyntheticModel
        A released model (``result.model`` or :func:`polars_rap.load`).
    path : str or path-like
        The output folder: a local path or a URI a ``pyarrow.fs`` filesystem reads
        (``s3://bucket/prefix``). Created if missing; refused when it holds files, unless
        ``overwrite`` and every file is a ``part-*.parquet`` written here before.
    rows : int
        Rows in all, >= 1.
    seed : int, optional
        Seed of the sampling; ``None`` draws one from the OS.
    block_rows : int
        Rows per block and file (default 1,000,000); bounds each writer's memory.
    engine : {"polars", "ray"}
        ``"polars"``: one block after the other in this process; ``"ray"``: Ray tasks (the
        ``ray`` extra). Same files either way.
    overwrite : bool
        Replace the ``part-*.parquet`` files of an earlier write in ``path``.
    ray_tasks : int, optional
        With ``engine="ray"``: how many Ray tasks share the blocks (default: Ray's choice).
        The files do not depend on it.

    Returns
    -------
    list of str
        The files written, in block order.

    Examples
    --------
    >>> import tempfile, polars as pl, polars_rap
    >>> df = pl.DataFrame({"age": [23, 35, 47, 59] * 50, "sex": ["F", "M"] * 100})
    >>> res = polars_rap.synthesize(
    ...     df, epsilon=1.0, delta=1e-6, domain={"age": (18, 90), "sex": ["F", "M"]},
    ...     strategy=polars_rap.PlannedStrategy(relaxed_rows=20, rounds={"LT": 2},
    ...                                         workload={"n_linear_thresholds": 20}),
    ...     seed=0, progress=False)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     files = write_parquet(res.model, tmp, 2_500, seed=0, block_rows=1_000)
    ...     [f.rsplit("/", 1)[-1] for f in files], pl.read_parquet(files).shape
    (['part-000000.parquet', 'part-000001.parquet', 'part-000002.parquet'], (2500, 2))
    """
    return write_relaxed(model.relaxed, model.domain, path, rows, decoding=model.report.parameters.get(
        "decoding", "independent"), seed=seed, block_rows=block_rows, engine=engine, overwrite=overwrite,
        ray_tasks=ray_tasks, labels=model.label_model,
        numeric_coupling=model.report.parameters.get("numeric_coupling", "fitted"), margins=model.histogram_margins,
        ties=model.numeric_ties, constraints=model.constraints, ranks=model.rank_pairs)


def write_relaxed(relaxed: np.ndarray, domain: Domain, path: str | os.PathLike, rows: int, *, decoding: str,
                  seed: int | None = None, block_rows: int = DEFAULT_BLOCK_ROWS, engine: str = "polars",
                  overwrite: bool = False, ray_tasks: int | None = None, labels=None,
                  numeric_coupling: str = "fitted", margins=None, ties=None, constraints=None,
                  ranks=None) -> list[str]:
    """:func:`write_parquet` from a model's parts: the relaxed rows (float32[n_relaxed,
    n_coords]), their domain, decoding method (``"independent"`` or ``"controlled"``), label
    model (None without one), numeric coupling, histogram margins, numeric ties, constraints and
    numeric pairs' ranks (None without);
    :func:`polars_rap.synthesize` writes its ``output=`` with it before its model exists."""
    for name, value in (("rows", rows), ("block_rows", block_rows)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            msg = f"The {name!r} parameter must be an int in [1, inf). Got {value!r}"
            raise ParameterError(msg)
    if engine not in WRITE_ENGINES:
        msg = f"The 'engine' parameter must be one of {list(WRITE_ENGINES)}. Got {engine!r}"
        raise ParameterError(msg)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        msg = f"The 'seed' parameter must be an int >= 0 or None. Got {seed!r}"
        raise ParameterError(msg)
    filesystem, root = _prepare_folder(path, overwrite)
    entropy = secrets.randbits(128) if seed is None else int(seed)
    check_numeric_coupling(numeric_coupling)
    job = _WriteJob(relaxed, domain, decoding, int(rows), int(block_rows), entropy, filesystem, root, labels,
                    numeric_coupling, margins, ties, constraints, ranks)
    if engine == "ray":
        from polars_rap.io.ray_engine import write_blocks

        written = write_blocks(job, tasks=ray_tasks)
    else:
        written = {index: job.write(index) for index in range(job.n_blocks)}
    if sorted(written) != list(range(job.n_blocks)) or sum(written.values()) != job.rows:
        msg = f"wrote blocks {sorted(written)[:8]}... of {job.n_blocks}, {sum(written.values())} of {job.rows} rows"
        raise RuntimeError(msg)
    return [f"{_display_root(path, root)}/{block_file_name(index)}" for index in range(job.n_blocks)]


def check_folder(path: str | os.PathLike, overwrite: bool = False):
    """(filesystem, root, our files) of an output folder that may be written, changing
    nothing: a ``FileExistsError`` for a file, for a folder holding files this writer did not
    make, and for one holding its files without ``overwrite``. ``synthesize(output=...)``
    asks before it reads a row, so that a fit is never lost to a folder it cannot write."""
    from pyarrow import fs

    text = os.fspath(path)
    filesystem, root = fs.FileSystem.from_uri(text if "://" in text else os.path.abspath(text))
    info = filesystem.get_file_info(root)
    ours: list[str] = []
    if info.type == fs.FileType.File:
        msg = f"cannot write partitioned Parquet to {text!r}: it is a file. Give a folder"
        raise FileExistsError(msg)
    if info.type == fs.FileType.Directory:
        entries = [e.base_name for e in filesystem.get_file_info(fs.FileSelector(root))]
        ours = [n for n in entries if n.startswith(("part-", ".part-")) and n.endswith((".parquet", ".partial"))]
        if entries and (not overwrite or len(ours) != len(entries)):
            reason = "pass overwrite=True (--overwrite) to replace the parts written there" if len(
                ours) == len(entries) else "it holds files this writer did not make; choose an empty or new folder"
            msg = f"cannot write partitioned Parquet to {text!r}: the folder is not empty; {reason}"
            raise FileExistsError(msg)
    return filesystem, root, ours


def clear_folder(path: str | os.PathLike, overwrite: bool):
    """(filesystem, root) of the output folder after :func:`check_folder`, the parts of an
    earlier write deleted when ``overwrite``; the folder is not created."""
    filesystem, root, ours = check_folder(path, overwrite)
    for name in ours:
        filesystem.delete_file(f"{root}/{name}")
    return filesystem, root


def _prepare_folder(path: str | os.PathLike, overwrite: bool):
    """(filesystem, root) of the output folder, cleared (:func:`clear_folder`) and created."""
    filesystem, root = clear_folder(path, overwrite)
    filesystem.create_dir(root, recursive=True)
    return filesystem, root


def _display_root(path: str | os.PathLike, root: str) -> str:
    text = os.fspath(path)
    return text.rstrip("/") if "://" in text else root
