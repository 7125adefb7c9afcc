"""A privacy report as files: a JSON summary and its tables as Parquet (saved models).

A report's tables grow with the workload (one row per ledger charge, per measured query, per
unmeasured group: tens of thousands on the bundled CA task), so a saved model keeps them as
compressed Parquet, with the rest as a small JSON file a person can read:

    report.json                  :meth:`PrivacyReport.summary_dict` (every field but the tables)
    report_events.parquet        the ledger: mechanism, rho, description, round, delta
    report_measurements.parquet  :attr:`PrivacyReport.measurements`
    report_unmeasured.parquet    :attr:`PrivacyReport.unmeasured`

:func:`report_files` writes them (file name -> bytes) and :func:`report_from_files` reads them
back, floats to the bit and dtypes kept.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Mapping

import polars as pl

from polars_rap.errors import DataError
from polars_rap.privacy.ledger import PrivacyEvent
from polars_rap.privacy.report import PrivacyReport, _json_default

__all__ = ["REPORT_FILES", "report_files", "report_from_files"]

REPORT_JSON = "report.json"
_TABLES = {"events": "report_events.parquet", "measurements": "report_measurements.parquet",
           "unmeasured": "report_unmeasured.parquet"}
REPORT_FILES = {
    REPORT_JSON: "privacy report summary: guarantee, budget, parameters, charges and errors by class",
    _TABLES["events"]: "privacy ledger: one row per charge (mechanism, rho, description, round, delta)",
    _TABLES["measurements"]: "measured queries: noisy answers, noise std, intervals, error bounds",
    _TABLES["unmeasured"]: "unmeasured workload groups: error bounds",
}
"""The files of a saved report, and what each holds."""
_EVENT_SCHEMA = {"mechanism": pl.String, "rho": pl.Float64, "description": pl.String, "round": pl.Int64,
                 "delta": pl.Float64}


def report_files(report: PrivacyReport) -> dict[str, bytes]:
    """The bytes of each file of :data:`REPORT_FILES`, for ``report``."""
    events = pl.DataFrame([dataclasses.asdict(event) for event in report.events] or None, schema=_EVENT_SCHEMA)
    tables = {"events": events, "measurements": report.measurements, "unmeasured": report.unmeasured}
    files = {REPORT_JSON: json.dumps(report.summary_dict(), indent=1, default=_json_default).encode("utf-8")}
    for field, name in _TABLES.items():
        sink = io.BytesIO()
        tables[field].write_parquet(sink, compression="zstd", statistics=False)
        files[name] = sink.getvalue()
    return files


def report_from_files(contents: Mapping[str, bytes]) -> PrivacyReport:
    """The report :func:`report_files` wrote. Raises :class:`~polars_rap.errors.DataError` naming the file at fault."""
    try:
        summary = json.loads(contents[REPORT_JSON])
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        msg = f"{REPORT_JSON} is not JSON: {error}"
        raise DataError(msg) from error
    fields = {f.name for f in dataclasses.fields(PrivacyReport)}
    values = {name: value for name, value in summary.items() if name in fields}
    for field, name in _TABLES.items():
        try:
            values[field] = pl.read_parquet(io.BytesIO(contents[name]))
        except (pl.exceptions.PolarsError, OSError) as error:
            msg = f"{name} is not a readable Parquet file: {error}"
            raise DataError(msg) from error
    values["events"] = tuple(PrivacyEvent(**row) for row in values["events"].iter_rows(named=True))
    required = {f.name for f in dataclasses.fields(PrivacyReport) if f.default is dataclasses.MISSING}
    missing = sorted(required - set(values))  # a field with a default (public_data) may be absent
    if missing:
        msg = f"{REPORT_JSON} lacks the keys {missing}, which a PrivacyReport requires"
        raise DataError(msg)
    return PrivacyReport(**values)
