"""A public table as a prior (issue 19): read it, check it against the domain, start from it.

Data teams often hold a table that resembles the sensitive one and is public: last year's
release, another state's survey, a published sample. GEM-pub (Liu et al. 2021,
``gem-pep_liu2021.md`` §6) starts its generator from such data; here the relaxed rows start
from it. The public table

- is read freely and costs no budget: it is not the sensitive data, so nothing read from it
  is charged. It must really be public (never derived from the sensitive rows), or the
  release's guarantee does not hold;
- never replaces the declared domain: it is encoded *with* the domain (categories and bounds
  from the user), and values outside it are a :class:`~polars_rap.errors.DataError` naming
  the column, as for the sensitive data;
- may hold the domain's columns or a subset: a missing column is *filled* from the domain
  uniformly (uniform category probabilities, numerics uniform on the column's public map,
  a null indicator at one half), and a log line says so; a query over a filled column has
  no public answer. A column the domain does not declare is an error.

:func:`read_public` reads and encodes it into a :class:`PublicTable`;
:meth:`PublicTable.relaxed_params` gives the starting relaxed rows (``public_use`` ``"init"``);
:meth:`PublicTable.answers` its answers on a workload (``"interactions"``,
:mod:`polars_rap.fit.independence_prior`); :meth:`PublicTable.record` what the report and saved
models say of it: its row count and a content hash, never its rows.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np
import polars as pl

from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import encode
from polars_rap.decode.decoding import spread_rows
from polars_rap.errors import DataError, ParameterError, ParameterTypeError
from polars_rap.fit.projection import RelaxedParams
from polars_rap.workload.queries import QuerySet
from polars_rap.io.source import DataSource, add_counts, default_batch_rows, without_columns

__all__ = ["PUBLIC_USES", "DEFAULT_PUBLIC_USES", "LABELLED_PUBLIC_USES", "PublicTable", "check_public_use",
           "default_public_uses", "open_public",
           "read_public", "touches_columns"]

logger = logging.getLogger(__name__)

PUBLIC_USES = ("init", "interactions", "labels", "reweight", "margins")
"""What a public table may be used for (``synthesize(public_use=...)``; ``"fit"``, ``"targets"``
and ``"selection"`` were removed for what they measured, ``docs/findings.md``):

- ``"init"``: the relaxed rows start from a sample of the public rows (one-hot, softened);
- ``"interactions"``: every categorical marginal not measured (yet) is fitted toward the public
  table's interaction, raked to the relaxed rows' own margins and scaled by the strength the
  measured tables support, instead of being left to chance (:mod:`polars_rap.fit.independence_prior`,
  whose own targets, mediated tables or independence, it replaces where it covers a table). On CA with the other states' table it lowers
  CM by 23% at ε = 1, but Puerto Rico's raises it by 34% (``bench/results/public_prior.md``):
  for a public table of the same population only;
- ``"labels"``: after decoding, each row's labels are redrawn from the public table's
  conditional of the labels given the other columns, tilted to the synthetic rows' own label
  margins, more strongly the noisier the measurements (:mod:`polars_rap.public.labels`);
- ``"reweight"``: after the loop, the public rows are raked to the synthetic rows' one-way
  margins, and to those margins crossed with the labels, and one of the two is released instead
  of the synthetic rows if a private check (2% of the loop's budget) finds its marginal tables
  closer to the real ones (:mod:`polars_rap.public.reweight`); the
  public table must hold every column;
- ``"margins"``: before the loop, the one-way margins are measured, a binary feature's split by
  the label (up to 80% of the loop's budget, less the larger ε, none where the loop's own budget
  knows them); the public rows reweighted to fit them all at once, each margin's deviation from
  the public table's under an empirical-Bayes prior (:mod:`polars_rap.public.tilt`), are first
  checked against every column independent on a tenth of them, and if they pass join that check
  as one more candidate
  (:mod:`polars_rap.public.margins`); the public table must hold every column.
"""
_REMOVED_PUBLIC_USES = {
    "fit": "fitting the relaxed rows to the public answers before the loop (GEM-pub's pretraining) gave CM 0.99x "
           "and MM 1.10x the run without a public table at 8.6x its time (bench/results/public_prior.md)",
    "targets": "James-Stein targets toward the public answers raised MM 1.61x and LT 2.15x at eps = 0.25 "
               "(bench/results/public_prior.md)",
    "selection": "scoring each class's first selection against the public answers was never measured to gain",
}
"""Uses removed in #72, each with why (its measured figure): naming one is a ``ParameterError``
that says so (docs/findings.md, "Removed public-data uses")."""
DEFAULT_PUBLIC_USES = ("init",)
"""The uses when ``public_use`` is not given and the labels are not all in the public table (or
there are none): the one that is never worse by construction (a starting point; the
measurements and the projection still decide where it ends)."""
LABELLED_PUBLIC_USES = ("labels",)
"""The uses when ``public_use`` is not given and the public table holds every label column:
on acs-income-CA it lowered every error at ε <= 0.25 with the other states' table and with
Puerto Rico's, and left them level at ε = 1 (``bench/results/public_labels.md``)."""

_SOFTENING = 0.05
"""Probability mass a public row's one-hot category spreads evenly over its block (so that the
softmax logits stay finite and every category keeps a gradient): the hot code gets
``1 - 0.05 + 0.05 / k``."""
_HASH_HEADER = b"polars-rap public table v1\n"


def check_public_use(public, public_use) -> tuple[str, ...]:
    """The uses asked (a tuple in :data:`PUBLIC_USES` order), checked: ``()`` without a public
    table. ``public_use`` None gives :data:`DEFAULT_PUBLIC_USES`, the default before the public
    table's schema is known; ``synthesize`` replaces it by :func:`default_public_uses` of that
    schema once the table is opened (``("labels",)`` when it holds every label column).

    >>> check_public_use("pub.parquet", ["interactions", "init"])
    ('init', 'interactions')
    """
    if public is None:
        if public_use is not None:
            msg = ("The 'public_use' parameter needs a public table: pass public=frame_or_path "
                   f"(or leave public_use unset). Got public_use={public_use!r} and no public table")
            raise ParameterError(msg)
        return ()
    if public_use is None:
        return DEFAULT_PUBLIC_USES
    uses = [public_use] if isinstance(public_use, str) else public_use
    if not isinstance(uses, Sequence) or not all(isinstance(use, str) for use in uses):
        msg = f"The 'public_use' parameter must be a list of names from {list(PUBLIC_USES)}. Got {public_use!r}"
        raise ParameterTypeError(msg)
    removed = [use for use in uses if use in _REMOVED_PUBLIC_USES]
    if removed:
        reasons = "; ".join(f"{use!r} was removed: {_REMOVED_PUBLIC_USES[use]}" for use in dict.fromkeys(removed))
        msg = f"The 'public_use' parameter names a removed use: {reasons}. The remaining uses are {list(PUBLIC_USES)}"
        raise ParameterError(msg)
    unknown = [use for use in uses if use not in PUBLIC_USES]
    if unknown or not uses:
        from polars_rap.errors import did_you_mean

        msg = (f"The 'public_use' parameter must name at least one of {list(PUBLIC_USES)}. "
               f"Got {list(uses)!r}{did_you_mean(unknown, PUBLIC_USES)}")
        raise ParameterError(msg)
    return tuple(use for use in PUBLIC_USES if use in uses)


def default_public_uses(labels: Sequence[str], public_columns: Sequence[str]) -> tuple[str, ...]:
    """The uses of a public table when ``public_use`` is not given: :data:`LABELLED_PUBLIC_USES`
    when there are labels and the table holds every one, else :data:`DEFAULT_PUBLIC_USES`.

    >>> default_public_uses(["income"], ["age", "income"]), default_public_uses([], ["age"])
    (('labels',), ('init',))
    """
    if labels and all(label in public_columns for label in labels):
        return LABELLED_PUBLIC_USES
    return DEFAULT_PUBLIC_USES


def open_public(public, declared: Mapping[str, object] | None, names: Sequence[str],
                drop: Sequence[str] = ()) -> DataSource:
    """The public table as a :class:`~polars_rap.io.source.DataSource` (a DataFrame, LazyFrame,
    Parquet/CSV/IPC path, pyarrow Table or pandas DataFrame; a CSV typed by ``declared``, the
    user's ``domain=`` mapping), less the columns of ``drop`` it holds (``synthesize(drop=...)``;
    a name neither it nor ``names`` holds is a ``ParameterError``), its columns checked against
    ``names`` (the sensitive table's columns) before any row is read.

    Raises ``ParameterTypeError`` for another type, ``FileNotFoundError`` for a path with no
    file, and :class:`~polars_rap.errors.DataError` for a column the domain does not declare
    or a table with no declared column at all.
    """
    if not isinstance(public, (pl.DataFrame, pl.LazyFrame, str, os.PathLike)) and \
            type(public).__module__.split(".")[0] not in ("pyarrow", "pandas"):
        msg = ("The 'public' parameter must be a polars DataFrame/LazyFrame, a pyarrow Table, a pandas "
               f"DataFrame or a path to a Parquet/CSV/IPC file. Got {type(public).__name__}")
        raise ParameterTypeError(msg)
    try:
        full = DataSource.from_input(public, declared)
    except DataError as error:
        msg = f"the public table: {error}"
        raise DataError(msg) from error
    unknown = [name for name in drop if name not in names and name not in full.schema]
    if unknown:
        msg = (f"The 'drop' parameter names columns neither the data nor the public table has: {unknown}. The "
               f"data's columns are {list(names)}")
        raise ParameterError(msg)
    source = without_columns(full, drop, present_only=True)
    extra = [name for name in source.schema if name not in names]
    if extra:
        msg = (f"the public table has columns the synthesized data does not: {extra}. A public table "
               f"holds the data's columns or a subset of them ({list(names)}); drop the others first, "
               f"e.g. public.drop({extra!r}), or add them to drop={extra!r}, which leaves them out of both tables")
        raise DataError(msg)
    if not source.schema:
        msg = f"the public table has none of the data's columns ({list(names)}); it cannot serve as a prior"
        raise DataError(msg)
    return source


@dataclass(frozen=True, slots=True, eq=False)
class PublicTable:
    """A public table encoded in the domain's layout.

    Attributes
    ----------
    codes : int32[n_public, n_blocks]
        Category codes per categorical block of the domain (0 in a filled block).
    numerics : float64[n_public, n_numeric]
        Numerics mapped to ``[0, 1]`` by their public map (0 in a filled column).
    filled_blocks : bool[n_blocks]
        Blocks of columns the table lacks (a missing numeric column's null indicator too).
    filled_numeric : bool[n_numeric]
        Numeric columns the table lacks.
    columns, filled_columns : tuple of str
        The domain's columns the table holds, and those it lacks, in domain order.
    sha256 : str
        Hex SHA-256 of the encoded content (:func:`_content_hash`): equal for tables that
        shape a synthesis identically.
    """

    codes: np.ndarray
    numerics: np.ndarray
    filled_blocks: np.ndarray
    filled_numeric: np.ndarray
    columns: tuple[str, ...]
    filled_columns: tuple[str, ...]
    sha256: str

    @property
    def n_rows(self) -> int:
        return int(self.codes.shape[0])

    def record(self, uses: Sequence[str]) -> dict:
        """What a release says of the table: its row count, columns, filled columns, content
        hash and uses; never a row or a value read from one. ``rho_charged`` is 0.0 here:
        reading the public table is free, and only the uses that measure the sensitive rows
        for it (``"reweight"``, ``"margins"``) charge the ledger, which the synthesis then
        records in its place (:class:`~polars_rap.public.release.PublicRelease`)."""
        return {"rows": self.n_rows, "sha256": self.sha256, "columns": list(self.columns),
                "filled_columns": list(self.filled_columns), "uses": list(uses), "rho_charged": 0.0}

    def relaxed_params(self, n_relaxed: int, domain: Domain, rng: np.random.Generator) -> RelaxedParams:
        """Relaxed rows (``float32[n_relaxed, n_coords]`` parameters) started from the public rows.

        ``n_relaxed`` public rows are drawn by :func:`~polars_rap.decode.decoding.spread_rows`
        (without replacement when the table has that many, else each row ``n_relaxed //
        n_public`` times or once more). Each categorical block holds the row's code one-hot,
        softened by :data:`_SOFTENING`, as logits (``log p``); numerics keep their mapped
        values. A filled block gets zero logits (uniform) and a filled numeric a uniform draw
        on ``[0, 1]`` from ``rng``.
        """
        rows = spread_rows(self.n_rows, int(n_relaxed), rng)
        block_sizes = domain.block_sizes
        n_categorical = int(sum(block_sizes))
        values = np.zeros((len(rows), n_categorical + len(domain.numeric_columns)), dtype=np.float32)
        start = 0
        for b, size in enumerate(block_sizes):
            if not self.filled_blocks[b]:
                low = np.log(_SOFTENING / size)
                high = np.log(1.0 - _SOFTENING + _SOFTENING / size)
                block = np.full((len(rows), size), low, dtype=np.float32)
                block[np.arange(len(rows)), self.codes[rows, b]] = high
                values[:, start:start + size] = block
            start += size
        numerics = self.numerics[rows].astype(np.float32)
        filled = np.flatnonzero(self.filled_numeric)
        numerics[:, filled] = rng.random((len(rows), len(filled)))
        values[:, n_categorical:] = np.clip(numerics, 0.0, 1.0)
        starts = np.concatenate([[0], np.cumsum(block_sizes)[:-1]]) if block_sizes else np.zeros(0)
        return RelaxedParams(values, starts.astype(np.int64), n_categorical)

    def answers(self, queries: QuerySet, domain: Domain, backend: ModuleType) -> np.ndarray:
        """float64[n_queries]: the public table's exact answers (hard thresholds, the fraction
        of its rows), NaN for each query over a filled column (no public answer exists).
        Counted in batches of :func:`~polars_rap.io.source.default_batch_rows` rows by
        ``backend.answers_exact``, summed exactly by :func:`~polars_rap.io.source.add_counts`
        (the sensitive pass's own step)."""
        batch = default_batch_rows(domain)
        counts = np.zeros(queries.n_queries, dtype=np.int64)
        counted = 0
        for start in range(0, self.n_rows, batch):
            stop = min(start + batch, self.n_rows)
            fractions = backend.answers_exact(self.codes[start:stop], self.numerics[start:stop], queries)
            counted = add_counts(counts, counted, np.rint(fractions * (stop - start)).astype(np.int64),
                                 stop - start)
        answers = counts / self.n_rows
        answers[touches_columns(queries, self.filled_blocks, self.filled_numeric)] = np.nan
        return answers


def read_public(source: DataSource, domain: Domain) -> PublicTable:
    """Read every row of the public ``source`` and encode it with ``domain``
    (:func:`~polars_rap.schema.encoding.encode`: the same checks as for the sensitive rows).

    Raises :class:`~polars_rap.errors.DataError` (the message starts "the public table") for
    a value outside the declared categories, an undeclared null, text in a numeric column, or
    a table with no rows. Values outside numeric bounds are clipped and counted in one log
    line per column (public data: the counts may be shown). A log line names the columns
    filled from the domain.
    """
    present = [name for name in domain.names if name in source.schema]
    filled = [name for name in domain.names if name not in source.schema]
    part = Domain(tuple(domain[name] for name in present), tuple(label for label in domain.labels if label in present))
    batches, clip_counts, n_rows = [], {}, 0
    for batch in source.batches(present, default_batch_rows(domain)):
        try:
            batches.append(encode(batch, part, clip_counts=clip_counts))
        except DataError as error:
            msg = f"the public table: {error} (in its rows {n_rows:,} to {n_rows + batch.height - 1:,})"
            raise DataError(msg) from error
        n_rows += batch.height
    if n_rows == 0:
        msg = "the public table has no rows; give a table with rows, or leave public unset"
        raise DataError(msg)
    for name, count in clip_counts.items():
        if count:
            logger.info("public table: column %r: %d values outside the declared bounds were clipped", name, count)
    if filled:
        logger.info("public table: %d rows; columns %s are missing from it and filled from the domain uniformly "
                    "(queries over them have no public answer)", n_rows, filled)
    codes = np.zeros((n_rows, len(domain.blocks)), dtype=np.int32)
    numerics = np.zeros((n_rows, len(domain.numeric_columns)), dtype=np.float64)
    part_codes = np.concatenate([b.codes for b in batches])
    part_numerics = np.concatenate([b.numerics for b in batches])
    for b, block in enumerate(part.blocks):
        codes[:, domain.block_index(block.source, block.indicator)] = part_codes[:, b]
    numeric_index = {spec.name: j for j, spec in enumerate(domain.numeric_columns)}
    for j, spec in enumerate(part.numeric_columns):
        numerics[:, numeric_index[spec.name]] = part_numerics[:, j]
    filled_blocks = np.array([block.source in filled for block in domain.blocks], dtype=bool)
    filled_numeric = np.array([spec.name in filled for spec in domain.numeric_columns], dtype=bool)
    return PublicTable(codes, numerics, filled_blocks, filled_numeric, tuple(present), tuple(filled),
                       _content_hash(codes, numerics, present, filled))


def _content_hash(codes: np.ndarray, numerics: np.ndarray, present: Sequence[str], filled: Sequence[str]) -> str:
    """Hex SHA-256 of a versioned header, the column names (JSON), then the codes (int32) and
    the mapped numerics (float64), little-endian and row-major: a fingerprint of the table as
    the synthesis used it (independent of how it was read or batched)."""
    digest = hashlib.sha256(_HASH_HEADER)
    digest.update(json.dumps({"columns": list(present), "filled": list(filled)}).encode("utf-8"))
    digest.update(np.ascontiguousarray(codes, dtype="<i4").tobytes())
    digest.update(np.ascontiguousarray(numerics, dtype="<f8").tobytes())
    return digest.hexdigest()


def touches_columns(queries: QuerySet, blocks: np.ndarray, numeric: np.ndarray) -> np.ndarray:
    """bool[n_queries]: which queries read a categorical block flagged in ``blocks``
    (bool[n_blocks]) or a numeric column flagged in ``numeric`` (bool[n_numeric]) in one of
    their halfspaces."""
    def per_range(flags: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        cumulative = np.concatenate([[0], np.cumsum(flags, dtype=np.int64)])
        return cumulative[offsets[1:]] - cumulative[offsets[:-1]] > 0

    blocks, numeric = np.asarray(blocks, dtype=bool), np.asarray(numeric, dtype=bool)
    by_coord = blocks[queries.coord_column] if len(blocks) else np.zeros(0, dtype=bool)
    categorical = per_range(by_coord[queries.cat_coords] if len(queries.cat_coords) else np.zeros(0, bool),
                            queries.cat_offsets)
    halfspace = per_range(numeric[queries.theta_index] if len(queries.theta_index) else np.zeros(0, bool),
                          queries.theta_offsets)
    return categorical | per_range(halfspace, queries.halfspace_offsets)

