"""The quality report's inputs: the synthetic rows (and the domain, privacy report and
constraints a result or a model carries), the real and test tables as the report reads them,
checked against each other. Evaluation only (the real rows are the curator's)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from polars_rap.errors import DataError, ParameterError, ParameterTypeError
from polars_rap.io.source import DataSource, scan_file
from polars_rap.privacy.report import PrivacyReport
from polars_rap.schema.domain import Domain

__all__ = ["SyntheticInput", "synthetic_input", "privacy_input", "domain_mapping", "resolve_domain", "check_schemas",
           "read_test_frame", "without_columns", "short_name"]


@dataclass(frozen=True, slots=True)
class SyntheticInput:
    """The synthetic rows, and what a result or model carries beside them (None otherwise):
    its privacy report, domain and declared constraints."""

    frame: pl.DataFrame
    privacy: PrivacyReport | None = None
    domain: Domain | None = None
    constraints: Any = None  # a polars_rap.decode.constraints.Constraints


def synthetic_input(synthetic, mapping, seed: int, max_rows: int) -> SyntheticInput:
    """The synthetic rows (a model gives as many rows as it was fitted on, at most
    ``max_rows``) and what the input carries beside them."""
    from polars_rap.pipeline.result import SynthesisResult
    from polars_rap.pipeline.model import SyntheticModel, load

    if isinstance(synthetic, (str, os.PathLike)) and Path(synthetic).is_dir():
        synthetic = load(synthetic)
    if isinstance(synthetic, SynthesisResult):
        return SyntheticInput(synthetic.data, synthetic.report, synthetic.domain, synthetic.constraints)
    if isinstance(synthetic, SyntheticModel):
        rows = min(synthetic.report.n_rows, max_rows)
        return SyntheticInput(synthetic.sample(rows, seed=seed), synthetic.report, synthetic.domain,
                              synthetic.constraints)
    if isinstance(synthetic, pl.LazyFrame):
        return SyntheticInput(synthetic.collect())
    if isinstance(synthetic, (str, os.PathLike)):
        return SyntheticInput(scan_file(synthetic, mapping).collect())
    return SyntheticInput(DataSource.from_input(synthetic).frame)


def privacy_input(model) -> PrivacyReport:
    from polars_rap.pipeline.model import SyntheticModel, load

    if isinstance(model, PrivacyReport):
        return model
    if isinstance(model, SyntheticModel):
        return model.report
    if isinstance(model, (str, os.PathLike)):
        return load(model).report
    msg = f"The 'model' parameter must be a SyntheticModel, PrivacyReport or model directory. Got {type(model).__name__}"
    raise ParameterTypeError(msg)


def domain_mapping(domain) -> dict[str, Any] | None:
    """The ``domain=`` mapping (a CSV file's column types come from it)."""
    if isinstance(domain, Domain):
        return {c.name: c.declaration() for c in domain.columns}
    return None if domain is None else dict(domain)


def resolve_domain(domain, schema: pl.Schema, labels: Sequence[str] | None) -> Domain:
    if domain is None:
        msg = ("quality_report needs the public domain: pass domain= (the mapping given to "
               "synthesize) or a SynthesisResult / saved model as 'synthetic'")
        raise ParameterError(msg)
    if isinstance(domain, Domain):
        labels = domain.labels if labels is None else tuple([labels] if isinstance(labels, str) else labels)
        return Domain(domain.columns, tuple(labels))
    return Domain.from_mapping(schema, domain, () if labels is None else labels)


def _family(dtype: pl.DataType) -> str:
    if dtype.is_numeric():
        return "number"
    if dtype == pl.Boolean:
        return "boolean"
    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, (pl.Enum, pl.Categorical)):
        return "text"
    return str(dtype)


def check_schemas(real: pl.Schema, synthetic: pl.Schema) -> None:
    """The same column names, and types of the same family (number, text, boolean)."""
    only_real = [name for name in real if name not in synthetic]
    only_synthetic = [name for name in synthetic if name not in real]
    if only_real or only_synthetic:
        msg = (f"the real and synthetic tables have different columns: only in the real table "
               f"{only_real}, only in the synthetic table {only_synthetic}; compare tables with "
               "the same columns (the synthetic table of this real one)")
        raise DataError(msg)
    clashes = [f"{name} (real {real[name]}, synthetic {synthetic[name]})" for name in real
               if _family(real[name]) != _family(synthetic[name])]
    if clashes:
        msg = f"the real and synthetic tables disagree on column types: {', '.join(clashes)}; cast one to match"
        raise DataError(msg)


def read_test_frame(test, mapping, domain: Domain) -> pl.DataFrame:
    if isinstance(test, (str, os.PathLike)):
        test = scan_file(test, mapping)
    if isinstance(test, pl.LazyFrame):
        test = test.collect()
    frame = DataSource.from_input(test, mapping).frame  # columns of objects typed as the real table's
    missing = [name for name in domain.names if name not in frame.columns]
    if missing:
        msg = f"the test table lacks columns {missing}"
        raise DataError(msg)
    return frame.select(domain.names)


def without_columns(data, mapping, drop: list[str]) -> pl.LazyFrame:
    """``data`` (a frame or a file, a CSV typed by ``mapping``) as a LazyFrame without ``drop``."""
    if isinstance(data, (str, os.PathLike)):
        data = scan_file(data, mapping)
    elif not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        data = DataSource.from_input(data, mapping).frame
    return data.lazy().drop(drop, strict=False)


def short_name(data) -> str:
    """A file's name (never its full path, which may say more than the report should), or the kind of object."""
    if isinstance(data, (str, os.PathLike)):
        return Path(data).name
    return f"in-memory {type(data).__name__}"
