"""The input boundary under fuzzing (issue 15): random frames, domain declarations and keyword
values through the public entry points.

Each call must either return a valid release (the input's columns and dtypes, numeric values
inside their bounds, categories from their declared lists, nulls only where declared, rho
spent within the budget) or raise :class:`~polars_rap.ParameterError` /
:class:`~polars_rap.DataError` whose message names a column or a parameter; never another
exception, never a hang (a watchdog ends the run with every thread's traceback).

Frames mix integer, float, decimal, text, categorical, enum, boolean, date, datetime and
all-null columns, with nulls, NaN, +-inf, -0.0, empty strings, huge and tiny values, zero
columns, zero or one row, duplicate column names (pyarrow and pandas allow them), and go in as
a DataFrame, LazyFrame (both also through ``.dp``), pyarrow Table, pandas DataFrame, Parquet
or CSV file. Two more properties put junk into ``synthesize``'s keywords, the strategy's
loop settings and ``ProjectionConfig``, and run the domain constructors alone. Settings are tiny so that each
call is fast. ``POLARS_RAP_FUZZ_EXAMPLES`` sets the number of frame cases (default 60, with
30 keyword and 300 constructor cases: about 15 s of CPU); ``POLARS_RAP_FUZZ_LOG=path``
appends every outcome (``ok`` or the error's class and message) to a file, for review after
a long run."""

from __future__ import annotations

import datetime as dt
import faulthandler
import inspect
import math
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Mapping
from dataclasses import fields
from decimal import Decimal
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import polars_rap as pr
from polars_rap import DataError, ParameterError, PlannedStrategy, ProjectionConfig, WorkloadSize
from polars_rap.io.source import DataSource

EXAMPLES = int(os.environ.get("POLARS_RAP_FUZZ_EXAMPLES", "60"))
LOG = os.environ.get("POLARS_RAP_FUZZ_LOG")
WATCHDOG_SECONDS = 600  # far above any one call (well under a second once compiled)
FAST_PROJECTION = ProjectionConfig(max_steps=2, patience=1, max_doublings=1)
FAST = dict(progress=False, backend="cpu")
NAMES = ["a", "b", "age", "Sex", "x y", "é", "0", "", " ", "label", "日本"]
PARAMETERS = sorted(
    {name for name, p in inspect.signature(pr.synthesize).parameters.items() if p.kind is not p.VAR_KEYWORD}
    - {"data"} | {f.name for f in fields(ProjectionConfig)}
    | {f.name for f in fields(PlannedStrategy) if f.init} | {f.name for f in fields(WorkloadSize)}
    | {"lower", "upper", "categories", "nullable", "integer", "unlisted", "bounds", "candidates"}
)
KINDS = ["int8", "int64", "uint8", "uint64", "float32", "float64", "decimal", "string", "categorical", "enum",
         "boolean", "date", "datetime", "null"]
DTYPES = {"int8": pl.Int8, "int64": pl.Int64, "uint8": pl.UInt8, "uint64": pl.UInt64, "float32": pl.Float32,
          "float64": pl.Float64, "decimal": pl.Decimal(10, 2), "string": pl.String, "categorical": pl.Categorical,
          "boolean": pl.Boolean, "date": pl.Date, "datetime": pl.Datetime("us"), "null": pl.Null}
INT_RANGES = {"int8": (-128, 127), "int64": (-2**63, 2**63 - 1), "uint8": (0, 255), "uint64": (0, 2**64 - 1)}
ENTRIES = ["function", "namespace", "lazy", "lazy_namespace", "arrow", "pandas", "parquet", "csv"]

# ------------------------------------------------------------------ values and columns
SPECIAL_FLOATS = [0.0, -0.0, 1.0, 0.5, 1e308, -1e308, 5e-324, 1e-300, math.inf, -math.inf, math.nan]


def values_of(kind: str) -> st.SearchStrategy:
    """Values a column of ``kind`` may hold (None: a null)."""
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]
        plain = st.integers(-3, 120).filter(lambda v: low <= v <= high)
        return st.one_of(plain, st.integers(low, high), st.sampled_from([low, high]))
    if kind.startswith("float"):
        return st.one_of(st.sampled_from(SPECIAL_FLOATS), st.floats(-200, 200), st.floats(allow_nan=True))
    if kind in ("string", "categorical", "enum"):
        return st.one_of(st.sampled_from(["", " ", "F", "M", "a", "0", "1", "é"]), st.text(max_size=4))
    if kind == "boolean":
        return st.booleans()
    if kind == "decimal":
        return st.decimals(-10**7, 10**7, places=2, allow_nan=False, allow_infinity=False)
    if kind == "date":
        return st.one_of(st.dates(dt.date(1970, 1, 1), dt.date(2030, 1, 1)), st.dates())
    if kind == "datetime":
        return st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1))
    return st.none()


@st.composite
def columns(draw, name: str, n_rows: int, kind: str | None = None) -> pl.Series:
    """A column of ``kind`` (default: any): a few distinct values (nulls among them, maybe)
    repeated over ``n_rows`` rows in a random order."""
    kind = kind or draw(st.sampled_from(KINDS))
    pool = draw(st.lists(values_of(kind), min_size=1, max_size=4))
    if kind != "null" and draw(st.booleans()):
        pool.append(None)
    picks = draw(st.lists(st.integers(0, len(pool) - 1), min_size=min(n_rows, 8), max_size=min(n_rows, 8)))
    values = [pool[picks[i % len(picks)]] for i in range(n_rows)] if picks else []
    if kind == "enum":
        categories = list(dict.fromkeys(v for v in pool if v is not None))
        extra = draw(st.lists(st.text(max_size=3), max_size=2))
        dtype = pl.Enum(list(dict.fromkeys(categories + extra)))
    else:
        dtype = DTYPES[kind]
    return pl.Series(name, values, dtype=dtype, strict=False)


# ------------------------------------------------------------------ domain declarations
def fitting(column: pl.Series) -> st.SearchStrategy:
    """A declaration that fits ``column``'s dtype and values (nulls declared when present),
    in one of the forms ``domain=`` accepts; enum and boolean columns may go undeclared."""
    present = [v for v in column.unique(maintain_order=True).to_list() if v is not None]
    has_null = column.null_count() > 0 or (column.dtype.is_float() and column.is_nan().any())
    if column.dtype.is_numeric():
        finite = [float(v) for v in present if math.isfinite(v)] or [0]
        low, high = min(finite), max(finite)
        if column.dtype.is_integer():
            low, high = int(low), int(high)
        # bounds the dtype can hold, as floats too (2**63 - 1 is 2**63 as a float: too big for Int64)
        smallest, largest = INT_RANGES.get(str(column.dtype).lower(), (-1e300, 1e300))
        smallest, largest = max(smallest, -2**62), min(largest, 2**62)
        if column.dtype == pl.Float32:
            smallest, largest = -3e38, 3e38
        elif isinstance(column.dtype, pl.Decimal):
            smallest, largest = -9e7, 9e7
        low, high = max(low - 1, smallest), min(high + 1, largest)
        if not low < high:
            low, high = smallest, largest
        bounds = st.sampled_from([(low, high), (float(low), float(high)), (low, (low + high) / 2)])
        forms = [bounds.map(lambda b: {"bounds": b, "nullable": True}),
                 bounds.map(lambda b: ("Numeric", b, True, False))]
        if not has_null:
            forms.append(bounds)
        if column.dtype.is_integer():
            forms.append(bounds.map(lambda b: {"bounds": (math.floor(b[0]), math.ceil(b[1])), "nullable": True,
                                               "integer": True}))
        return st.one_of(forms)
    categories = [v for v in present if not (isinstance(v, float) and math.isnan(v))]
    if not categories:  # all null: one category of the column's type beside the null
        categories = [column.dtype.categories[0] if isinstance(column.dtype, pl.Enum) and len(column.dtype.categories)
                      else {pl.Boolean: False, pl.Date: dt.date(2000, 1, 1)}.get(column.dtype, "x")]
    if has_null:
        categories = categories + [None]
    forms = [st.just(categories), st.just(("Categorical", categories, has_null)),
             st.just({"categories": categories, "nullable": has_null})]
    if isinstance(column.dtype, pl.Enum) or column.dtype == pl.Boolean:
        forms.append(st.just("omit"))
    return st.one_of(forms)


def unfitting(column: pl.Series) -> st.SearchStrategy:
    """Any declaration at all: wrong kind, wrong or missing values, bad bounds, junk, and
    requests for private inference."""
    numbers = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                        st.sampled_from([0, 1, 100, 1e300, -1e300, 2**63, 2**64, np.int64(3), np.float32(0.5),
                                         Decimal("2.5"), True, "7", None]))
    any_values = st.lists(st.one_of(values_of("int64"), values_of("float64"), values_of("string"), st.none(),
                                     values_of("boolean"), values_of("date")), max_size=4)
    bounds = st.tuples(numbers, numbers)
    return st.one_of(
        st.just("omit"),
        any_values,
        bounds,
        st.fixed_dictionaries({"bounds": bounds, "nullable": st.booleans()},
                              optional={"integer": st.one_of(st.booleans(), st.just("yes"))}),
        st.fixed_dictionaries({"categories": any_values, "nullable": st.booleans()}),
        st.builds(lambda b, n, i: ("Numeric", b, n, i), bounds, st.booleans(), st.booleans()),
        st.builds(lambda c, n: ("Categorical", c, n), st.one_of(any_values, values_of("int64")), st.booleans()),
        st.sampled_from(["numeric", "categorical", "categorial"]),
        st.fixed_dictionaries({"candidates": any_values}),
        st.sampled_from([42, 3.5, (1,), (1, 2, 3), ("a", "b"), "abc", {"foo": 1}, {"bounds": (0, 1), "x": 1},
                         {"bounds": 5}, frozenset({1}), [[1], [2]], {"categories": ["a"], "integer": True}]),
    )


def built(declaration):
    """The declaration as ``domain=`` takes it; ``Numeric``/``Categorical`` are constructed
    here, inside the checked call, since their constructors are public entry points too."""
    if isinstance(declaration, tuple) and declaration and declaration[0] == "Numeric":
        _, (lower, upper), nullable, integer = declaration
        return pr.Numeric(lower, upper, nullable=nullable, integer=integer)
    if isinstance(declaration, tuple) and declaration and declaration[0] == "Categorical":
        _, categories, nullable = declaration
        return pr.Categorical(categories, nullable=nullable)
    return declaration


def chance(odds: int) -> st.SearchStrategy:
    """True about once in ``odds`` draws (shrinks to False); ``st.integers`` would favour its
    bounds far more often than that."""
    return st.sampled_from([False] * (odds - 1) + [True])


def rarely(strategy: st.SearchStrategy, otherwise: st.SearchStrategy, odds: int = 5) -> st.SearchStrategy:
    """``strategy`` about once in ``odds`` draws, else ``otherwise`` (shrinks to ``otherwise``)."""
    return chance(odds).flatmap(lambda hit: strategy if hit else otherwise)


# ------------------------------------------------------------------ whole cases
@st.composite
def cases(draw) -> dict:
    """A frame, its declarations and settings: mostly fitting, with one thing (or several)
    wrong often enough that every refusal path is reached."""
    n_rows = draw(rarely(st.just(0), st.sampled_from([40, 300, 1, 2, 3, 7]), odds=15))
    n_columns = draw(rarely(st.just(0), st.integers(1, 4), odds=20))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=n_columns, max_size=n_columns, unique=True))
    series = [draw(columns(name, n_rows)) for name in names]
    domain = {}
    for column in series:
        declaration = draw(rarely(unfitting(column), fitting(column), odds=6))
        if declaration != "omit":
            domain[column.name] = declaration
    if draw(chance(20)):
        domain[draw(st.sampled_from(["zzz", "a"]))] = (0, 1)  # perhaps not a column
    categorical = [s.name for s in series if isinstance(domain.get(s.name), (list, dict))
                   and "categories" in (domain[s.name] if isinstance(domain[s.name], dict) else {"categories": 1})]
    label_pool = names + ["zzz"]
    settings_ = dict(
        epsilon=draw(st.sampled_from([1e6, 1e4, 50.0, 1.0, 1e-3])),
        delta=draw(st.sampled_from([1e-9, 1e-4, 0.3])),
        labels=draw(rarely(st.one_of(st.lists(st.sampled_from(label_pool), max_size=2), st.sampled_from(label_pool)),
                           st.lists(st.sampled_from(categorical), max_size=1) if categorical else st.just([]))),
        infer_domain=draw(rarely(st.one_of(st.booleans(), st.lists(st.sampled_from(label_pool), max_size=2)),
                                 st.just(False), odds=8)),
        rows=draw(st.one_of(st.none(), st.integers(1, 30))),
        seed=draw(st.integers(0, 2**32 - 1)),
    )
    loop = {
        "relaxed_rows": draw(st.integers(1, 6)),
        "queries_per_round": draw(st.integers(1, 3)),
        "rounds.CM": draw(st.one_of(st.none(), st.integers(0, 2))),  # None: left out, its default
        "rounds.LT": draw(rarely(st.just(0), st.integers(1, 2), odds=4)),
        "rounds.MM": draw(st.integers(0, 1)),
        "workload.n_linear_thresholds": draw(st.integers(0, 6)),
        "workload.n_mixed_marginals": draw(st.integers(0, 4)),
        "workload.max_marginal_cells": draw(st.one_of(st.none(), st.integers(1, 60))),
        "projection": FAST_PROJECTION,
    }
    if loop["rounds.CM"] is None:
        del loop["rounds.CM"]
    settings_["strategy"] = with_loop(draw(st.sampled_from(["planned", "paper"])), loop)
    duplicate = n_columns > 0 and draw(chance(20))  # a repeated name, where the container allows it
    entry = draw(st.sampled_from(["arrow", "pandas"] if duplicate else ENTRIES))
    return dict(series=series, domain=domain, settings=settings_, entry=entry, duplicate=duplicate)


def with_loop(strategy, loop: dict):
    """``strategy`` (a name or a mapping, as ``synthesize`` takes it) as a mapping holding the
    loop settings ``loop``, given flat: ``"rounds.LT"`` is ``rounds={"LT": ...}``,
    ``"workload.n_linear_thresholds"`` a field of its workload, and a whole ``"rounds"`` or
    ``"workload"`` value replaces its fields. Any other ``strategy`` is returned as it is (junk
    that holds no settings)."""
    if isinstance(strategy, str):
        strategy = {"name": strategy}
    if not isinstance(strategy, Mapping):
        return strategy
    nested = {**strategy}
    for key, value in loop.items():
        outer, _, inner = key.partition(".")
        if not inner:
            nested[outer] = value
        elif outer not in loop:
            nested.setdefault(outer, {})[inner] = value
    return nested


def input_of(case: dict, directory: Path):
    """The frame in the form ``case["entry"]`` names, and a function that synthesizes it from
    keyword arguments alone."""
    frame = frame_of(case)
    entry = case["entry"]
    data = frame
    if entry in ("arrow", "pandas"):
        table = frame.to_arrow()
        if case["duplicate"]:
            table = pa.table(table.columns + [table.column(0)], names=table.column_names + [table.column_names[0]])
        data = table if entry == "arrow" else table.to_pandas()
    elif entry in ("lazy", "lazy_namespace"):
        data = frame.lazy()
    elif entry in ("parquet", "csv"):
        data = directory / f"in.{entry}"
        getattr(frame, f"write_{entry}")(data)
    if entry.endswith("namespace"):
        return data, data.dp.synthesize
    return data, lambda **arguments: pr.synthesize(data, **arguments)


def frame_of(case: dict) -> pl.DataFrame:
    return pl.DataFrame({s.name: s for s in case["series"]})


# ------------------------------------------------------------------ the checks
def names_a_column_or_parameter(message: str, column_names: list[str], whole_input: bool) -> bool:
    """Whether ``message`` names a column (quoted as repr) or a parameter (as a word); for a
    table without rows or columns, naming the input as a whole ("the data", a file) will do."""
    if any(repr(name) in message for name in column_names):
        return True
    if whole_input and re.search(r"\b(data|input)\b|cannot read '", message):
        return True
    return any(re.search(rf"(?<!\w){re.escape(p)}(?!\w)", message) for p in PARAMETERS)


def check_release(result, expected_schema: pl.Schema, n_rows: int, rows: int | None) -> None:
    """The release is what a caller may rely on: its schema, bounds, categories, budget."""
    data = result.data
    assert data.schema == expected_schema
    assert data.height == (n_rows if rows is None else rows)
    report = result.report
    assert report.rho_spent <= report.rho_budget
    for spec in result.domain.columns:
        column = data.get_column(spec.name)
        if column.null_count():
            assert spec.nullable, f"{spec.name!r} holds nulls it does not declare"
        present = column.drop_nulls()
        if spec.is_categorical:
            if isinstance(present.dtype, (pl.Enum, pl.Categorical)):
                present = present.cast(pl.String)
            assert set(present.to_list()) <= in_type(spec.categories, present.dtype), f"{spec.name!r}: undeclared category"
            continue
        values = present.cast(pl.Float64).to_numpy()
        assert np.isfinite(values).all(), f"{spec.name!r}: non-finite value"
        if len(values):
            assert values.min() >= spec.lower and values.max() <= spec.upper, f"{spec.name!r} out of bounds"
            if spec.is_integer:
                assert (values == np.round(values)).all(), f"{spec.name!r}: not whole numbers"


def in_type(categories: tuple, dtype: pl.DataType) -> set:
    """The declared ``categories`` as values of ``dtype``, as the encoder reads them (a CSV
    column declared ``[date(2000, 1, 1)]`` is text, by the public CSV rule, so its category
    is "2000-01-01")."""
    try:
        return set(pl.Series(list(categories)).cast(dtype, strict=True).to_list())
    except Exception:  # noqa: BLE001  (mixed types: compare the values as declared)
        return set(categories)


def _log(outcome: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as out:
            out.write(" ".join(outcome.split())[:400] + "\n")


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """One small run first, so that JIT compilation (cached on disk afterwards) is not
    charged to the first fuzzed case."""
    frame = pl.DataFrame({"x": [0.5, 1.5] * 20, "s": ["a", "b", "b", "a"] * 10, "y": [0, 1] * 20})
    pr.synthesize(frame, epsilon=1e4, delta=1e-9, domain={"x": {"bounds": (0, 2), "nullable": True},
                  "s": ["a", "b"], "y": [0, 1]}, labels=["y"], seed=0, **FAST,
                  strategy=PlannedStrategy(relaxed_rows=4, rounds={"MM": 1}, projection=FAST_PROJECTION,
                                           workload=WorkloadSize(n_linear_thresholds=4, n_mixed_marginals=4)))


@settings(max_examples=EXAMPLES, deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=cases())
def test_every_call_returns_a_valid_release_or_a_named_parameter_or_data_error(case):
    faulthandler.dump_traceback_later(WATCHDOG_SECONDS, exit=True, file=sys.__stderr__)
    try:
        with tempfile.TemporaryDirectory() as directory, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _run_case(case, Path(directory))
    finally:
        faulthandler.cancel_dump_traceback_later()


def _run_case(case: dict, directory: Path) -> None:
    names = [s.name for s in case["series"]]
    n_rows = case["series"][0].len() if case["series"] else 0
    data, synthesize = input_of(case, directory)
    note(f"entry={case['entry']} schema={dict(frame_of(case).schema)} domain={case['domain']}")
    try:
        domain = {name: built(declaration) for name, declaration in case["domain"].items()}
        result = synthesize(domain=domain, **case["settings"], **FAST)
    except (ParameterError, DataError) as error:
        message = str(error)
        _log(f"{type(error).__name__}: {message}")
        assert names_a_column_or_parameter(message, names + list(case["domain"]), not (names and n_rows)), message
        return
    _log("ok")
    expected = DataSource.from_input(data, domain).schema  # a CSV's types come from the domain
    check_release(result, expected, n_rows, case["settings"]["rows"])


# ------------------------------------------------------------------ the keyword parameters
JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
    st.sampled_from([0.5, 1e-300, "", "3", "auto", "paper", [1], ["y"], ("y",), {"a": 1}, {"name": "planned"},
                     np.int64(2), np.float64(0.5), np.array([1, 2]), object()]),
)
KEYWORDS = ["epsilon", "delta", "domain", "labels", "infer_domain", "inference_share", "rows", "seed", "backend",
            "confidence", "strategy"]
LOOP_SETTINGS = ["relaxed_rows", "queries_per_round", "rounds", "rounds.CM", "rounds.LT", "rounds.MM", "workload",
                 "workload.n_linear_thresholds", "workload.n_mixed_marginals", "workload.max_marginal_cells",
                 "selection_share", "projection"]
"""The strategy's settings junk may go into, flat as :func:`with_loop` reads them."""
PROJECTION_FIELDS = [f.name for f in fields(ProjectionConfig)]
PARAMETER_FRAME = pl.DataFrame({"x": [0.5, 1.5] * 40, "s": ["a", "b", "b", "a"] * 20, "y": [0, 1] * 40})
PARAMETER_BASE = dict(epsilon=1e4, delta=1e-9, domain={"x": (0, 2), "s": ["a", "b"], "y": [0, 1]}, labels=["y"],
                      seed=0)
PARAMETER_LOOP = {"relaxed_rows": 4, "rounds.LT": 1, "workload.n_linear_thresholds": 4, "projection": FAST_PROJECTION}


@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(replaced=st.dictionaries(st.sampled_from(KEYWORDS + LOOP_SETTINGS), JUNK, min_size=1, max_size=2),
       projection=st.dictionaries(st.sampled_from(PROJECTION_FIELDS), JUNK, max_size=1))
def test_junk_keyword_values_are_refused_by_name_or_run(replaced, projection):
    """Junk in one or two of ``synthesize``'s keywords or the strategy's loop settings (or a
    ProjectionConfig field): a valid release or a ParameterError/DataError naming a parameter,
    as for the frames above."""
    faulthandler.dump_traceback_later(WATCHDOG_SECONDS, exit=True, file=sys.__stderr__)
    arguments = {**PARAMETER_BASE, **FAST, **{k: v for k, v in replaced.items() if k in KEYWORDS}}
    loop = {**PARAMETER_LOOP, **{k: v for k, v in replaced.items() if k in LOOP_SETTINGS}}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if projection:
                loop["projection"] = ProjectionConfig(**{**{"max_steps": 2, "max_doublings": 1}, **projection})
            arguments["strategy"] = with_loop(arguments.get("strategy", "planned"), loop)
            result = pr.synthesize(PARAMETER_FRAME, **arguments)
    except (ParameterError, DataError) as error:
        _log(f"{type(error).__name__}: {error}")
        assert names_a_column_or_parameter(str(error), PARAMETER_FRAME.columns, whole_input=False), str(error)
        return
    finally:
        faulthandler.cancel_dump_traceback_later()
    _log("ok")
    rows = arguments.get("rows")
    check_release(result, PARAMETER_FRAME.schema, PARAMETER_FRAME.height, rows)


# ------------------------------------------------------------------ the domain constructors
@settings(max_examples=EXAMPLES * 5, deadline=None, print_blob=True)
@given(data=st.data(), kind=st.sampled_from(KINDS), n_rows=st.integers(0, 3))
def test_domain_constructors_build_a_domain_or_refuse_by_name(data, kind, n_rows):
    """``Domain.from_mapping`` (with ``Numeric``/``Categorical`` built inside) on a one-column
    schema and any declaration: a Domain whose spec is well formed, or a named refusal."""
    column = data.draw(columns("c", n_rows, kind), "column")
    declaration = data.draw(st.one_of(fitting(column), unfitting(column)), "declaration")
    mapping = {} if declaration == "omit" or declaration in ("numeric", "categorical") else {"c": declaration}
    try:
        domain = pr.Domain.from_mapping({"c": column.dtype}, {k: built(v) for k, v in mapping.items()})
    except (ParameterError, DataError) as error:
        assert names_a_column_or_parameter(str(error), ["c"], whole_input=False), str(error)
        return
    spec = domain["c"]
    assert spec.dtype == column.dtype
    if spec.is_categorical:
        assert len(set(spec.categories)) == len(spec.categories) and (spec.categories or spec.nullable)
    else:
        assert math.isfinite(spec.lower) and math.isfinite(spec.upper) and spec.lower < spec.upper
