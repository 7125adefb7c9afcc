"""What :func:`polars_rap.synthesize` returns: the synthetic table, the privacy report, and
the released relaxed rows and domain that sample more rows at no privacy cost."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from polars_rap.decode.constraints import Constraints
from polars_rap.decode.histogram_margins import HistogramMargins
from polars_rap.decode.numeric_ties import NumericTies
from polars_rap.decode.rank_pairs import RankPairs
from polars_rap.schema.domain import Domain
from polars_rap.pipeline.model import SyntheticModel
from polars_rap.public.labels import LabelModel
from polars_rap.privacy.report import PrivacyReport

__all__ = ["SynthesisResult"]

_HTML_COLUMNS = 12
"""Columns a result's notebook view names before it says how many more there are."""


@dataclass(frozen=True, slots=True, eq=False)
class SynthesisResult:
    """Synthetic data and what was released to make it.

    ``data`` has the input's column names, order and dtypes: a DataFrame, or with
    ``synthesize(output=...)`` a LazyFrame scanning the Parquet parts written there (``files``,
    in block order; None otherwise). ``relaxed`` (float32[n_relaxed, n_coords]), ``domain`` and
    ``label_model`` (a public table's, with ``public_use="labels"``; else None) and
    ``histogram_margins`` (with released histograms; else None) and ``numeric_ties`` (with
    ``tie_share``; else None) and ``rank_pairs`` (with ``rank_share``; else None) let more rows be sampled at no
    privacy cost; ``constraints`` are the declared rules every sampled row keeps (None without). No attribute refers to the sensitive input.
    """

    data: pl.DataFrame | pl.LazyFrame
    report: PrivacyReport
    domain: Domain
    relaxed: np.ndarray = field(repr=False)
    files: list[str] | None = None
    label_model: LabelModel | None = field(default=None, repr=False)
    histogram_margins: HistogramMargins | None = field(default=None, repr=False)
    numeric_ties: NumericTies | None = field(default=None, repr=False)
    constraints: Constraints | None = field(default=None, repr=False)
    rank_pairs: RankPairs | None = field(default=None, repr=False)

    @property
    def model(self) -> SyntheticModel:
        """The released part as a :class:`~polars_rap.pipeline.model.SyntheticModel`: sample more rows
        from it (``res.model.sample(rows, seed=...)``) at no privacy cost."""
        return SyntheticModel(self.relaxed, self.domain, self.report, self.label_model, self.histogram_margins,
                              self.numeric_ties, self.constraints, rank_pairs=self.rank_pairs)

    def __repr__(self) -> str:
        """One line: the table's shape, the guarantee and where the rest is (the fields whole
        would print every ledger event)."""
        height, width = self._shape()
        return (f"SynthesisResult({height:,} rows x {width} columns, ({self.report.epsilon:g}, "
                f"{self.report.delta:g})-DP over {self.report.n_rows:,} input rows, "
                f"{self.relaxed.shape[0]:,} relaxed rows; .data, .report, .model)")

    def _shape(self) -> tuple[int, int]:
        """(rows, columns) of ``data`` without reading written parts."""
        if isinstance(self.data, pl.DataFrame):
            return self.data.shape
        return int(self.report.parameters["rows"]), len(self.domain.names)

    def _repr_html_(self) -> str:
        """A notebook's view: the table's shape and columns, then the privacy report."""
        import html

        from polars_rap.privacy.report import _summary_html

        height, width = self._shape()
        schema = self.data.collect_schema() if isinstance(self.data, pl.LazyFrame) else self.data.schema
        columns = ", ".join(f"{name} ({dtype})" for name, dtype in list(schema.items())[:_HTML_COLUMNS])
        more = f", ... ({width - _HTML_COLUMNS} more)" if width > _HTML_COLUMNS else ""
        return (f"<div><p><strong>SynthesisResult</strong>: {height:,} synthetic rows x {width} columns "
                f"({html.escape(columns + more)}) in <code>.data</code>; more rows at no privacy cost "
                f"from <code>.model.sample(rows)</code>.</p>{_summary_html(self.report)}</div>")

    def save(self, path: str | os.PathLike[str], overwrite: bool = False) -> Path:
        """Save :attr:`model` as a directory (see :mod:`polars_rap.pipeline.model`); load it back with
        :func:`polars_rap.load`. Returns the directory."""
        return self.model.save(path, overwrite=overwrite)
