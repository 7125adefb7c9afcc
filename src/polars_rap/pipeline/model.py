"""Saved models: the released relaxed data, its public domain and report, on disk.

A :class:`SyntheticModel` holds only what a synthesis released and its post-processing
(design.md §2 item 6, §5): the relaxed synthetic data ``float32[n_relaxed, n_coords]``, the
public :class:`~polars_rap.schema.domain.Domain` and the :class:`~polars_rap.privacy.report.PrivacyReport`.
Sampling more rows from it is post-processing, so it costs no privacy budget. It never holds
the input rows, true answers or clip counts.

On disk a model is a directory of open, versioned files::

    manifest.json   {"format": "polars-rap-model", "format_version": 7, "library_version",
                     "created_utc", "relaxed_shape", "public_data", "files": [{"name", "bytes",
                     "sha256", "content"}, ...]}; ``public_data`` is the record of the public
                    table the synthesis started from (row count, content hash, columns, uses;
                    :attr:`PrivacyReport.public_data`), or null
    relaxed.arrow   Arrow IPC file: one float32 column per coordinate of the relaxed matrix,
                    named ``SEX=1`` (a category's probability), ``FER=null`` (a declared null
                    category), ``JWMNP is null`` / ``JWMNP is not null`` (the null indicator of
                    a nullable numeric column), ``AGEP`` (a numeric mapped to [0, 1] by its
                    public bounds, scale and atoms); one row per relaxed row
    domain.arrow    Arrow IPC file with no rows: the domain's Arrow schema
                    (:meth:`Domain.to_arrow_schema`), each field's spec in its metadata
    report.json     :meth:`PrivacyReport.summary_dict`: the guarantee, budget, parameters, and
                    charges and errors by class (a few KB whatever the workload)
    report_events.parquet, report_measurements.parquet, report_unmeasured.parquet
                    the report's tables (:mod:`polars_rap.privacy.report_files`): the ledger, the
                    measured queries, the unmeasured groups' bounds
    label_model.arrow
                    only with a public table's label model (``public_use="labels"``): Arrow
                    IPC, one row per (label, feature, code) coefficient
                    (:meth:`LabelModel.to_arrow <polars_rap.public.labels.LabelModel.to_arrow>`)
    histogram_margins.arrow
                    only with released histograms: Arrow IPC, the released numeric histograms
                    the decoded numerics are moved toward, one row per (column, label code,
                    edge) (:meth:`HistogramMargins.to_frame
                    <polars_rap.decode.histogram_margins.HistogramMargins.to_frame>`)
    numeric_ties.arrow
                    only with ``tie_share`` (where measured): Arrow IPC, the fitted numeric
                    ties and the numeric pairs kept each sampled block's
                    numerics follow, one row per (column, feature, label, code, label code)
                    (:meth:`NumericTies.to_frame <polars_rap.decode.numeric_ties.NumericTies.to_frame>`)
    rank_pairs.arrow
                    only with ``rank_share`` (where measured): Arrow IPC, the numeric pairs' cell
                    scores and rank targets each sampled block's numerics are reordered to
                    (:meth:`RankPairs.to_frame <polars_rap.decode.rank_pairs.RankPairs.to_frame>`)
    constraints.json
                    only with declared constraints: a JSON list of ``{"name", "sql",
                    "expression"}``, each rule's SQL text or, for a Polars expression, Polars'
                    JSON serialisation of it (:meth:`Constraints.to_json
                    <polars_rap.decode.constraints.Constraints.to_json>`); every sampled row keeps them

Format version 1 (polars-rap before issue 16) kept the whole report in ``report.json``
(:meth:`PrivacyReport.to_dict`, megabytes on the CA task); version 2 (before issue 19) had no
record of a public table, which older readers would drop unseen (hence version 3); version 3
(before the label model) had no ``label_model.arrow``, which an older reader would ignore and
sample different labels (hence version 4); version 4 had no ``histogram_margins.arrow``, which an
older reader would ignore and decode other numerics (hence version 5); version 5 had no
``numeric_ties.arrow`` (hence version 6); version 6 had no numeric pairs (``<column>.bins``
features), which an older reader would refuse as ties that do not match the domain (hence
version 7); version 7 had no constraints, which an older reader would ignore and sample rows
that break them (hence version 8); version 8 had no ``rank_pairs.arrow``, which an older reader
would ignore and decode numeric pairs it was not released with (hence version 9). All still load (a version-2 model's
``report.public_data`` is None; models before version 4 have no label model, before version 5
no histogram margins, before version 6 no numeric ties).

Any Arrow reader opens the ``.arrow`` files (``pl.read_ipc``, ``pyarrow.ipc.open_file``).
Loading checks the format name and version and each file's size and SHA-256, and names the
file at fault.

Examples
--------
>>> import tempfile, pathlib
>>> import polars as pl, polars_rap
>>> df = pl.DataFrame({"age": [23, 35, 47, 59] * 50, "sex": ["F", "M"] * 100})
>>> res = polars_rap.synthesize(
...     df, epsilon=1.0, delta=1e-6, domain={"age": (18, 90), "sex": ["F", "M"]},
...     strategy=polars_rap.PlannedStrategy(relaxed_rows=20, rounds={"LT": 2},
...                                         workload={"n_linear_thresholds": 20}),
...     seed=0, progress=False)
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = res.save(pathlib.Path(tmp) / "model")
...     sorted(p.name for p in path.iterdir())
...     model = polars_rap.load(path)
['domain.arrow', 'histogram_margins.arrow', 'manifest.json', 'relaxed.arrow', 'report.json', 'report_events.parquet', 'report_measurements.parquet', 'report_unmeasured.parquet']
>>> model.sample(1000, seed=0).schema == df.schema
True
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from polars_rap.schema.domain import Domain
from polars_rap.decode.conditional import sample_where
from polars_rap.decode.conditions import Where
from polars_rap.decode.constraints import Constraints
from polars_rap.decode.decoding import decode
from polars_rap.errors import DataError, ParameterError, ParameterTypeError
from polars_rap.decode.histogram_margins import HistogramMargins
from polars_rap.decode.numeric_ties import NumericTies
from polars_rap.decode.rank_pairs import RankPairs
from polars_rap.public.labels import LabelModel
from polars_rap.privacy.report import PrivacyReport
from polars_rap.privacy.report_files import REPORT_FILES, report_files, report_from_files

__all__ = ["SyntheticModel", "load", "coordinate_names", "FORMAT_NAME", "FORMAT_VERSION"]

FORMAT_NAME = "polars-rap-model"
"""The ``format`` every saved model's manifest names."""

FORMAT_VERSION = 9
"""The on-disk format this library writes; it reads this one and versions 1 to 8."""
_READABLE_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8, FORMAT_VERSION)

_MANIFEST = "manifest.json"
_RELAXED = "relaxed.arrow"
_DOMAIN = "domain.arrow"
_REPORT = "report.json"
_LABEL_MODEL = "label_model.arrow"
_MARGINS = "histogram_margins.arrow"
_TIES = "numeric_ties.arrow"
_CONSTRAINTS = "constraints.json"
_RANKS = "rank_pairs.arrow"
_CONTENTS = {
    _RELAXED: "relaxed synthetic data, float32[n_relaxed, n_coords], one column per coordinate",
    _DOMAIN: "public domain: Arrow schema with per-field metadata, no rows",
    **REPORT_FILES,
}
_CONTENTS_V1 = {_RELAXED: _CONTENTS[_RELAXED], _DOMAIN: _CONTENTS[_DOMAIN],
                _REPORT: "privacy report: ledger events, measured queries, noisy answers, intervals"}
_OPTIONAL_CONTENTS = {_LABEL_MODEL: "the public table's label model: one row per (label, feature, code) coefficient",
                      _MARGINS: "released numeric histograms the decoded numerics move toward: one row per "
                                "(column, label code, edge)",
                      _TIES: "fitted numeric ties the decoded numerics follow: one row per (column, feature, label, "
                             "code, label code)",
                      _CONSTRAINTS: "declared constraints every sampled row keeps: one entry per rule",
                      _RANKS: "numeric pairs' released rank targets and cell scores: one row per (label group, "
                              "column, cell) score and per pair"}
"""Files a model has only with what they hold (a label model, histogram margins)."""
_MODEL_FILES = frozenset({_MANIFEST, *_CONTENTS, *_OPTIONAL_CONTENTS})


def _library_version() -> str:
    try:
        return importlib.metadata.version("polars-rap")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return "unknown"


@dataclass(frozen=True, slots=True, eq=False)
class SyntheticModel:
    """What a synthesis released, ready to sample more rows at no privacy cost.

    Attributes
    ----------
    relaxed : np.ndarray
        float32[n_relaxed, n_coords]: per relaxed row, the probabilities of each categorical
        block's codes, then the numerics mapped to [0, 1] by their public bounds and declared
        scale and atoms (the layout of
        :func:`coordinate_names`).
    domain : Domain
        The public schema: column names, dtypes, categories, bounds, labels.
    report : PrivacyReport
        What was released and what it cost.
    label_model : LabelModel or None
        With a public table used for ``"labels"``: the model each sampled row's labels are
        redrawn from (:mod:`polars_rap.public.labels`); None otherwise.
    histogram_margins : HistogramMargins or None
        With released histograms: those each sampled block's numerics are
        moved toward (:mod:`polars_rap.decode.histogram_margins`); None otherwise.
    numeric_ties : NumericTies or None
        With ``tie_share`` (where measured): the fitted ties and the numeric pairs kept
        each sampled block's numerics follow (:mod:`polars_rap.decode.numeric_ties`,
        :mod:`polars_rap.decode.numeric_pairs`); None otherwise.
    constraints : Constraints or None
        Declared rules every sampled row keeps (:mod:`polars_rap.decode.constraints`): relations
        computed, rows breaking a rule redrawn; None without.
    rank_pairs : RankPairs or None
        With ``rank_share`` (where measured): the numeric pairs' released rank statistic each
        sampled block's numerics are reordered to meet (:mod:`polars_rap.decode.rank_pairs`);
        None otherwise.
    library_version : str
        The polars-rap version that made the model (``"unknown"`` outside an install).
    format_version : int
        The on-disk format version (:data:`FORMAT_VERSION` for a model made here).
    """

    relaxed: np.ndarray = field(repr=False)
    domain: Domain
    report: PrivacyReport = field(repr=False)
    label_model: LabelModel | None = field(default=None, repr=False)
    histogram_margins: HistogramMargins | None = field(default=None, repr=False)
    numeric_ties: NumericTies | None = field(default=None, repr=False)
    constraints: Constraints | None = field(default=None, repr=False)
    library_version: str = field(default_factory=_library_version)
    format_version: int = FORMAT_VERSION
    rank_pairs: RankPairs | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.domain, Domain):
            msg = f"The 'domain' parameter must be a polars_rap.Domain. Got {type(self.domain).__name__}"
            raise ParameterTypeError(msg)
        if not isinstance(self.report, PrivacyReport):
            msg = f"The 'report' parameter must be a PrivacyReport. Got {type(self.report).__name__}"
            raise ParameterTypeError(msg)
        relaxed = np.ascontiguousarray(self.relaxed, dtype=np.float32)  # no copy when float32
        if relaxed.ndim != 2 or relaxed.shape[0] < 1 or relaxed.shape[1] != self.domain.n_coords:
            msg = (
                f"The 'relaxed' parameter must be float32[n_relaxed >= 1, {self.domain.n_coords}] "
                f"(the domain's coordinates). Got shape {relaxed.shape}"
            )
            raise ParameterError(msg)
        object.__setattr__(self, "relaxed", relaxed)

    def __repr__(self) -> str:
        """One line: size, columns and guarantee (``repr`` of the fields would print them whole)."""
        names = self.domain.names
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        return (f"SyntheticModel({self.relaxed.shape[0]} relaxed rows, {len(names)} columns ({shown}), "
                f"({self.report.epsilon:g}, {self.report.delta:g})-DP, polars-rap {self.library_version})")

    def _repr_html_(self) -> str:
        """A notebook's view: the model's size and columns, then its privacy report."""
        import html

        from polars_rap.privacy.report import _summary_html

        names = ", ".join(self.domain.names)
        return (f"<div><p><strong>SyntheticModel</strong>: {self.relaxed.shape[0]:,} relaxed rows, "
                f"{len(self.domain.names)} columns ({html.escape(names)}); more rows cost no privacy "
                f"(<code>.sample(rows)</code>).</p>{_summary_html(self.report)}</div>")

    def sample(self, rows: int, seed: int | None = None, where: Where | None = None) -> pl.DataFrame:
        """Draw ``rows`` synthetic rows; post-processing, so no privacy cost.

        Each relaxed row yields ``rows / n_relaxed`` rows (rounded systematically): categories
        drawn from its probabilities, numerics mapped back to their units and dtypes. With
        ``where``, all ``rows`` rows satisfy the condition, drawn from the fitted distribution
        conditioned on it (:mod:`polars_rap.decode.conditional`: each relaxed row weighted by its
        probability of the condition, categories drawn within it; histogram margins are not
        applied to a conditioned sample). Every row keeps the model's ``constraints``.

        Parameters
        ----------
        rows : int
            Number of rows, >= 1.
        seed : int, optional
            Seed of the sampling; ``None`` seeds from the operating system. A fixed seed is
            safe here: sampling reads only released values.
        where : dict, pl.Expr or str, optional
            A condition every row satisfies: ``{column: value | [values] | (low, high)}``
            (ranges hold both ends; ``None`` as an end leaves it open, as a value means null),
            a row-wise Polars expression, or the same as a SQL expression string
            (``"SEX = 2 AND AGEP >= 60"``, :func:`polars.sql_expr`). A condition the model
            gives (almost) no probability raises a ``ParameterError`` stating it.

        Returns
        -------
        pl.DataFrame
            The domain's columns, in order, with the synthesized input's dtypes.

        Examples
        --------
        >>> import polars as pl, polars_rap
        >>> df = pl.DataFrame({"age": [23, 35, 47, 59] * 50, "sex": ["F", "M"] * 100})
        >>> res = polars_rap.synthesize(
        ...     df, epsilon=1.0, delta=1e-6, domain={"age": (18, 90), "sex": ["F", "M"]},
        ...     strategy=polars_rap.PlannedStrategy(relaxed_rows=20, rounds={"LT": 2},
        ...                                         workload={"n_linear_thresholds": 20}),
        ...     seed=0, progress=False)
        >>> more = res.model.sample(10_000, seed=1)
        >>> more.shape, more.schema == df.schema
        ((10000, 2), True)
        >>> more.equals(res.model.sample(10_000, seed=1))
        True
        >>> older = res.model.sample(1_000, seed=1, where={"sex": "F", "age": (40, None)})
        >>> older["sex"].unique().to_list(), older["age"].min() >= 40, older.height
        (['F'], True, 1000)
        """
        if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 1:
            msg = f"The 'rows' parameter must be an int in [1, inf). Got {rows!r}"
            raise ParameterError(msg)
        decoding = self.report.parameters.get("decoding", "independent")
        if where is not None:
            return sample_where(self.relaxed, self.domain, int(rows), np.random.default_rng(seed), where,
                                method=decoding, labels=self.label_model,
                                numeric_coupling=self.report.parameters.get("numeric_coupling", "fitted"),
                                margins=self.histogram_margins, ties=self.numeric_ties, constraints=self.constraints,
                                ranks=self.rank_pairs)
        return decode(self.relaxed, self.domain, int(rows), np.random.default_rng(seed), method=decoding,
                      labels=self.label_model,
                      numeric_coupling=self.report.parameters.get("numeric_coupling", "fitted"),
                      margins=self.histogram_margins, ties=self.numeric_ties, constraints=self.constraints,
                      ranks=self.rank_pairs)

    def write_parquet(self, path: str | os.PathLike[str], rows: int, *, seed: int | None = None,
                      block_rows: int = 1_000_000, engine: str = "polars", overwrite: bool = False) -> list[str]:
        """Write ``rows`` synthetic rows as a folder (or ``s3://...`` URI) of Parquet parts of
        ``block_rows`` rows, block ``i`` seeded by ``(seed, i)``; ``engine="ray"`` writes them
        from Ray tasks, with the same files. No privacy cost; see
        :func:`polars_rap.io.blocks.write_parquet`. Returns the files written."""
        from polars_rap.io.blocks import write_parquet

        return write_parquet(self, path, rows, seed=seed, block_rows=block_rows, engine=engine,
                             overwrite=overwrite)

    def save(self, path: str | os.PathLike[str], overwrite: bool = False) -> Path:
        """Write the model as a directory (format in the module docstring).

        Parameters
        ----------
        path : path-like
            The directory; created with its parents if missing.
        overwrite : bool
            Replace a model already saved at ``path``. A non-empty directory is refused
            without it, and a directory holding anything but a saved model's files is refused
            even with it (nothing the library did not write is ever deleted).

        Returns
        -------
        Path
            ``path``.
        """
        directory = Path(path)
        _check_target(directory, overwrite)
        directory.mkdir(parents=True, exist_ok=True)
        written = [
            _write_atomic(directory / _DOMAIN, _ipc_bytes(self.domain.to_arrow_schema().empty_table())),
            _write_atomic(directory / _RELAXED, _ipc_bytes(_relaxed_table(self.relaxed, self.domain))),
            *(_write_atomic(directory / name, data) for name, data in report_files(self.report).items()),
        ]
        if self.label_model is not None:
            written.append(_write_atomic(directory / _LABEL_MODEL, _ipc_bytes(self.label_model.to_arrow())))
        elif (directory / _LABEL_MODEL).exists():  # an overwritten model's
            (directory / _LABEL_MODEL).unlink()
        if self.histogram_margins is not None:
            written.append(_write_atomic(directory / _MARGINS,
                                         _ipc_bytes(self.histogram_margins.to_frame(self.domain).to_arrow())))
        elif (directory / _MARGINS).exists():  # an overwritten model's
            (directory / _MARGINS).unlink()
        if self.numeric_ties is not None:
            ties = self.numeric_ties.to_frame(self.domain).to_arrow()
            written.append(_write_atomic(directory / _TIES, _ipc_bytes(ties)))
        elif (directory / _TIES).exists():  # an overwritten model's
            (directory / _TIES).unlink()
        if self.constraints is not None:
            written.append(_write_atomic(directory / _CONSTRAINTS, self.constraints.to_json()))
        elif (directory / _CONSTRAINTS).exists():  # an overwritten model's
            (directory / _CONSTRAINTS).unlink()
        if self.rank_pairs is not None:
            ranks = self.rank_pairs.to_frame(self.domain).to_arrow()
            written.append(_write_atomic(directory / _RANKS, _ipc_bytes(ranks)))
        elif (directory / _RANKS).exists():  # an overwritten model's
            (directory / _RANKS).unlink()
        manifest = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "library": "polars-rap",
            "library_version": self.library_version,
            "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "relaxed_shape": list(self.relaxed.shape),
            "public_data": self.report.public_data,
            "files": [
                {"name": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                 "content": {**_CONTENTS, **_OPTIONAL_CONTENTS}[name]}
                for name, data in written
            ],
        }
        _write_atomic(directory / _MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
        return directory

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "SyntheticModel":
        """Read a model written by :meth:`save`; see :func:`load`."""
        directory = Path(path)
        if not directory.is_dir():
            msg = f"no saved model at {str(directory)!r}: not a directory. Give the directory that save() wrote"
            raise FileNotFoundError(msg)
        manifest = _read_manifest(directory)
        expected = _CONTENTS_V1 if manifest["format_version"] == 1 else _CONTENTS
        contents = {name: _read_checked(directory, name, manifest) for name in expected}
        domain = _domain_from_ipc(contents[_DOMAIN])
        relaxed = _relaxed_from_ipc(contents[_RELAXED], domain)
        try:
            if manifest["format_version"] == 1:
                report = PrivacyReport.from_dict(json.loads(contents[_REPORT]))
            else:
                report = report_from_files(contents)
        except (ValueError, TypeError, KeyError) as error:
            msg = f"the report in {str(directory)!r} is not a valid privacy report: {error}"
            raise DataError(msg) from error
        label_model = None
        if any(isinstance(e, dict) and e.get("name") == _LABEL_MODEL for e in manifest["files"]):
            label_model = _label_model_from_ipc(_read_checked(directory, _LABEL_MODEL, manifest), domain)
        margins = None
        if any(isinstance(e, dict) and e.get("name") == _MARGINS for e in manifest["files"]):
            margins = _margins_from_ipc(_read_checked(directory, _MARGINS, manifest), domain)
        ties = None
        if any(isinstance(e, dict) and e.get("name") == _TIES for e in manifest["files"]):
            ties = _ties_from_ipc(_read_checked(directory, _TIES, manifest), domain)
        constraints = None
        if any(isinstance(e, dict) and e.get("name") == _CONSTRAINTS for e in manifest["files"]):
            constraints = _constraints_from_json(_read_checked(directory, _CONSTRAINTS, manifest), domain)
        ranks = None
        if any(isinstance(e, dict) and e.get("name") == _RANKS for e in manifest["files"]):
            ranks = _ranks_from_ipc(_read_checked(directory, _RANKS, manifest), domain)
        return cls(relaxed, domain, report, label_model, margins, ties, constraints,
                   library_version=str(manifest.get("library_version", "unknown")),
                   format_version=manifest["format_version"], rank_pairs=ranks)


def load(path: str | os.PathLike[str]) -> SyntheticModel:
    """Load a model saved by :meth:`SynthesisResult.save` or :meth:`SyntheticModel.save`.

    Parameters
    ----------
    path : path-like
        The model directory.

    Returns
    -------
    SyntheticModel

    Raises
    ------
    FileNotFoundError
        ``path`` is not a directory, or a file of the model is missing (named).
    DataError
        The format is not a polars-rap model, its version is newer than this library reads,
        or a file is corrupt (named).

    Examples
    --------
    >>> import tempfile
    >>> import polars as pl, polars_rap
    >>> df = pl.DataFrame({"age": [23, 35, 47, 59] * 50, "sex": ["F", "M"] * 100})
    >>> res = polars_rap.synthesize(
    ...     df, epsilon=1.0, delta=1e-6, domain={"age": (18, 90), "sex": ["F", "M"]},
    ...     strategy=polars_rap.PlannedStrategy(relaxed_rows=20, rounds={"LT": 2},
    ...                                         workload={"n_linear_thresholds": 20}),
    ...     seed=0, progress=False)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     model = polars_rap.load(res.save(tmp))
    >>> bool((model.relaxed == res.relaxed).all()), model.domain == res.domain
    (True, True)
    >>> model.report.rho_spent == res.report.rho_spent
    True
    """
    return SyntheticModel.load(path)


def coordinate_names(domain: Domain) -> list[str]:
    """Names of the relaxed matrix's columns, in order (``n_coords`` of them).

    >>> from polars_rap import Domain
    >>> import polars as pl
    >>> schema = {"sex": pl.String, "hours": pl.Float64}
    >>> declared = {"sex": ["F", "M", None], "hours": {"bounds": (0, 99), "nullable": True}}
    >>> domain = Domain.from_mapping(schema, declared)
    >>> coordinate_names(domain)
    ['sex=F', 'sex=M', 'sex=null', 'hours is not null', 'hours is null', 'hours']
    """
    names = []
    for block in domain.blocks:
        if block.indicator:
            names += [f"{block.source} is not null", f"{block.source} is null"]
            continue
        spec = domain[block.source]
        names += [f"{spec.name}={category}" for category in spec.categories]
        if spec.nullable:
            names.append(f"{spec.name}=null")
    return names + [spec.name for spec in domain.numeric_columns]


# ---------------------------------------------------------------- writing
def _check_target(directory: Path, overwrite: bool) -> None:
    """Raise unless ``directory`` may receive a model (before any work is done)."""
    if directory.exists() and not directory.is_dir():
        msg = f"cannot save a model at {str(directory)!r}: it is a file. Choose a directory path"
        raise FileExistsError(msg)
    if not directory.is_dir():
        return
    entries = sorted(p.name for p in directory.iterdir())
    if not entries:
        return
    if not overwrite:
        msg = (
            f"cannot save a model at {str(directory)!r}: the directory is not empty. Choose a new "
            "directory, or pass overwrite=True (--overwrite) to replace a model saved there"
        )
        raise FileExistsError(msg)
    foreign = [name for name in entries if name not in _MODEL_FILES]
    if foreign:
        msg = (
            f"cannot save a model at {str(directory)!r}: it holds files that are not part of a "
            f"saved model ({foreign[:5]}); overwrite only replaces a saved model. Choose an "
            "empty or new directory"
        )
        raise FileExistsError(msg)


def _relaxed_table(relaxed: np.ndarray, domain: Domain) -> pa.Table:
    names = coordinate_names(domain)
    return pa.table([pa.array(relaxed[:, j]) for j in range(relaxed.shape[1])], names=names)


def _ipc_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _write_atomic(path: Path, data: bytes) -> tuple[str, bytes]:
    """Write ``data`` beside ``path`` and rename it into place (no half-written file)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    os.replace(partial, path)
    return path.name, data


# ---------------------------------------------------------------- reading
def _read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / _MANIFEST
    if not path.is_file():
        msg = f"no saved model at {str(directory)!r}: {_MANIFEST} is missing"
        raise FileNotFoundError(msg)
    try:
        manifest = json.loads(path.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        msg = f"{_MANIFEST} in {str(directory)!r} is corrupt (not JSON: {error})"
        raise DataError(msg) from error
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        msg = f"{_MANIFEST} in {str(directory)!r} names format {found!r}, not {FORMAT_NAME!r}; not a polars-rap model"
        raise DataError(msg)
    version = manifest.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        msg = (
            f"the model at {str(directory)!r} has format version {version}, written by polars-rap "
            f"{manifest.get('library_version', 'unknown')}; this polars-rap ({_library_version()}) "
            f"reads format version {FORMAT_VERSION} and older. Upgrade polars-rap"
        )
        raise DataError(msg)
    if version not in _READABLE_VERSIONS or isinstance(version, bool):
        msg = f"{_MANIFEST} in {str(directory)!r} has an unknown format_version {version!r}; expected {FORMAT_VERSION}"
        raise DataError(msg)
    if not isinstance(manifest.get("files"), list):
        msg = f"{_MANIFEST} in {str(directory)!r} is corrupt: it has no 'files' list"
        raise DataError(msg)
    return manifest


def _read_checked(directory: Path, name: str, manifest: dict[str, Any]) -> bytes:
    """The bytes of file ``name``, checked against the size and SHA-256 in the manifest."""
    entries = [e for e in manifest["files"] if isinstance(e, dict) and e.get("name") == name]
    if len(entries) != 1:
        msg = f"{_MANIFEST} in {str(directory)!r} is corrupt: it does not list {name!r} once"
        raise DataError(msg)
    path = directory / name
    if not path.is_file():
        msg = f"the model at {str(directory)!r} is incomplete: {name} is missing"
        raise FileNotFoundError(msg)
    data = path.read_bytes()
    if len(data) != entries[0].get("bytes") or hashlib.sha256(data).hexdigest() != entries[0].get("sha256"):
        msg = (
            f"{name} in {str(directory)!r} is corrupt: its size or SHA-256 differs from "
            f"{_MANIFEST}. Save the model again"
        )
        raise DataError(msg)
    return data


def _domain_from_ipc(data: bytes) -> Domain:
    try:
        schema = pa.ipc.open_file(pa.BufferReader(data)).schema
        return Domain.from_arrow_schema(schema)
    except (pa.ArrowException, ValueError, TypeError, KeyError) as error:
        msg = f"{_DOMAIN} is not a valid polars-rap domain: {error}"
        raise DataError(msg) from error


def _relaxed_from_ipc(data: bytes, domain: Domain) -> np.ndarray:
    try:
        table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
    except pa.ArrowException as error:
        msg = f"{_RELAXED} is not a readable Arrow IPC file: {error}"
        raise DataError(msg) from error
    expected = coordinate_names(domain)
    if table.column_names != expected:
        msg = (
            f"{_RELAXED} has columns {table.column_names[:6]}... but {_DOMAIN} lays out "
            f"{expected[:6]}... ({len(expected)} coordinates); the files are not from one model"
        )
        raise DataError(msg)
    if table.num_rows < 1 or any(c.type != pa.float32() or c.null_count for c in table.columns):
        msg = f"{_RELAXED} must hold float32 columns without nulls and at least one row"
        raise DataError(msg)
    relaxed = np.column_stack([c.to_numpy() for c in table.columns]).astype(np.float32, copy=False)
    if not np.isfinite(relaxed).all():
        msg = f"{_RELAXED} holds non-finite values; save the model again"
        raise DataError(msg)
    return relaxed


def _label_model_from_ipc(data: bytes, domain: Domain) -> LabelModel:
    try:
        table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
    except pa.ArrowException as error:
        msg = f"{_LABEL_MODEL} is not a readable Arrow IPC file: {error}"
        raise DataError(msg) from error
    return LabelModel.from_arrow(table, domain)


def _frame_from_ipc(data: bytes, domain: Domain, kind, name: str, what: str):
    """``kind.from_frame`` of the Arrow IPC file ``name`` (``data``) for ``domain``; a file that
    does not read, or does not fit the domain, is a :class:`DataError` naming it and ``what``."""
    try:
        return kind.from_frame(pl.read_ipc(io.BytesIO(data)), domain)
    except (pl.exceptions.PolarsError, OSError, KeyError, ValueError) as error:
        msg = f"{name} is not a readable Arrow IPC file of {what} for this domain: {error}"
        raise DataError(msg) from error


def _margins_from_ipc(data: bytes, domain: Domain) -> HistogramMargins:
    return _frame_from_ipc(data, domain, HistogramMargins, _MARGINS, "histogram margins")


def _constraints_from_json(data: bytes, domain: Domain) -> Constraints:
    try:
        return Constraints.from_json(data, domain)
    except (ValueError, TypeError, KeyError, pl.exceptions.PolarsError) as error:
        msg = f"{_CONSTRAINTS} does not hold constraints for this domain: {error}"
        raise DataError(msg) from error


def _ranks_from_ipc(data: bytes, domain: Domain) -> RankPairs:
    return _frame_from_ipc(data, domain, RankPairs, _RANKS, "numeric pairs' ranks")


def _ties_from_ipc(data: bytes, domain: Domain) -> NumericTies:
    return _frame_from_ipc(data, domain, NumericTies, _TIES, "numeric ties")
