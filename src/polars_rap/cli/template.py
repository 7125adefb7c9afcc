"""A config template from a table's schema alone (``polars-rap init``).

:func:`template_text` writes one ``[domain.NAME]`` table per column from its name and dtype:
a numeric dtype gives ``kind = "numeric"`` with :data:`~polars_rap.cli.config.TODO` bounds, a
text dtype ``kind = "categorical"`` with a TODO category list, an ``Enum`` or ``Boolean``
dtype its declared categories (the dtype's, never the data's). A numeric column's optional
keys come commented out, each with when to use it: ``atoms``, ``scale`` and, for a float
dtype (an integer dtype implies it), ``integer``. A CSV file has no dtypes, so
its columns get a TODO kind. The labels are left to choose. No value of the table is read:
:func:`schema_of` asks Polars for the schema only (a Parquet or IPC file's footer, a CSV
file's header line). :func:`~polars_rap.cli.config.read_config` refuses the file until every TODO
is filled in, naming each column that still holds one.

>>> import polars as pl
>>> text = template_text({"age": pl.Int64, "children": pl.Float64, "ok": pl.Boolean}, "people.parquet")
>>> print(text[text.index("[domain.age]"):])
[domain.age]                    # Int64
kind = "numeric"
bounds = ["TODO", "TODO"]       # TODO: public [lower, upper] in whole numbers; values outside are clipped
nullable = false                # true when the column may hold nulls (their rate is then kept)
# atoms = []                    # values many rows hold exactly (0, a top code, a bound): kept exactly
# scale = "log"                 # for a right-skewed column (incomes, prices): "log", or "sqrt" (milder)
<BLANKLINE>
[domain.children]               # Float64
kind = "numeric"
bounds = ["TODO", "TODO"]       # TODO: public [lower, upper]; values outside are clipped
nullable = false                # true when the column may hold nulls (their rate is then kept)
# atoms = []                    # values many rows hold exactly (0, a top code, a bound): kept exactly
# integer = true                # when every value is a whole number (counts, years): output is then whole
# scale = "log"                 # for a right-skewed column (incomes, prices): "log", or "sqrt" (milder)
<BLANKLINE>
[domain.ok]                     # Boolean: categories from the dtype
kind = "categorical"
categories = [false, true]
nullable = false                # true when the column may hold nulls (a category of its own)
<BLANKLINE>
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from polars_rap.cli.config import OPTIONAL_TABLES, TODO, toml_key, toml_value
from polars_rap.schema.transforms import SCALES

__all__ = ["schema_of", "template_text", "write_template"]

_COMMENT_COLUMN = 32
"""Column at which a line's comment starts, so the tables read as one aligned block."""


def schema_of(path: str | os.PathLike[str]) -> pl.Schema:
    """Column names and dtypes of a Parquet, IPC or CSV file, without reading a row of it
    (a CSV file's columns are all text: its types are never inferred from its rows)."""
    from polars_rap.io.source import scan_file

    return scan_file(path, None).collect_schema()


def template_text(schema: Mapping[str, pl.DataType], source: str, *, typed: bool = True,
                  config_name: str = "spec.toml") -> str:
    """A config file named ``config_name`` for a table with ``schema`` (read from ``source``),
    every value a person must choose marked TODO. ``typed=False`` (a CSV file) leaves each
    column's kind to choose."""
    lines = [
        f"# polars-rap config for {source}, written by polars-rap init from its schema alone:",
        "# no value of the table was read. Replace every TODO with public knowledge (the data's",
        "# documentation, a code book, legal ranges), never with values read off the data: bounds",
        "# and categories are published with the synthetic data and are not charged to the budget.",
        f"# Then: polars-rap synthesize {source} -o synthetic.parquet --config {config_name} --epsilon 1 --delta 1e-9",
        "",
        _commented("labels = []", "the categorical target columns, if any, e.g. [\"income\"]"),
        _commented('# public = "public.parquet"', "a public table of the same columns, a prior (free)"),
        "",
        *OPTIONAL_TABLES,
        "",
    ]
    for name, dtype in schema.items():
        lines += _column_table(name, dtype if typed else None)
        lines.append("")
    return "\n".join(lines)


def _column_table(name: str, dtype: pl.DataType | None) -> list[str]:
    header = f"[domain.{toml_key(name)}]"
    null_line = "nullable = false"
    if dtype is None or dtype == pl.Null:
        why = "a CSV file has no dtypes" if dtype is None else "dtype Null"
        return [
            _commented(header, why),
            _commented(f"kind = {toml_value(TODO)}", 'TODO: "numeric" or "categorical"'),
            _commented(f"# bounds = [{TODO}, {TODO}]", "numeric: public [lower, upper] (whole numbers: Int64 in a CSV)"),
            _commented(f"# categories = [{TODO}]", "categorical: every public category"),
            _commented(null_line, "true when the column may hold nulls"),
        ]
    if _declares_categories(dtype):
        categories = dtype.categories.to_list() if isinstance(dtype, pl.Enum) else [False, True]
        return [
            _commented(header, f"{'Enum' if isinstance(dtype, pl.Enum) else dtype}: categories from the dtype"),
            'kind = "categorical"',
            f"categories = {toml_value(categories)}",
            _commented(null_line, "true when the column may hold nulls (a category of its own)"),
        ]
    if dtype.is_numeric():
        whole = " in whole numbers" if dtype.is_integer() else ""
        return [
            _commented(header, str(dtype)),
            'kind = "numeric"',
            _commented(f"bounds = {toml_value([TODO, TODO])}", f"TODO: public [lower, upper]{whole}; values outside are clipped"),
            _commented(null_line, "true when the column may hold nulls (their rate is then kept)"),
            _commented("# atoms = []", "values many rows hold exactly (0, a top code, a bound): kept exactly"),
            *_numeric_options(dtype),
        ]
    return [
        _commented(header, str(dtype)),
        'kind = "categorical"',
        _commented(f"categories = {toml_value([TODO])}", 'TODO: every public category, e.g. ["a", "b"]'),
        _commented(null_line, "true when the column may hold nulls (a category of its own)"),
    ]


def _numeric_options(dtype: pl.DataType) -> list[str]:
    """The commented-out ``integer`` (a float dtype only: an integer dtype implies it) and
    ``scale`` lines of a numeric column, each with when to use it: the template cannot tell,
    as it reads no value (``polars-rap evaluate`` can, and says so)."""
    lines = []
    if dtype.is_float():
        lines.append(_commented("# integer = true", "when every value is a whole number (counts, years): output is then whole"))
    scales = ", or ".join(f'"{scale}"' for scale in SCALES if scale != "linear")
    lines.append(_commented('# scale = "log"', f"for a right-skewed column (incomes, prices): {scales} (milder)"))
    return lines


def _declares_categories(dtype: pl.DataType) -> bool:
    """Whether the dtype itself declares the column's categories (no TODO for it)."""
    return isinstance(dtype, pl.Enum) or dtype == pl.Boolean


def _commented(line: str, comment: str) -> str:
    return f"{line:<{_COMMENT_COLUMN}}# {comment}"


def write_template(path: str | os.PathLike[str], target: str | os.PathLike[str]) -> list[str]:
    """Write :func:`template_text` of the file at ``path`` to ``target``; returns the names
    of the columns it leaves a TODO in."""
    path = Path(path)
    schema = schema_of(path)
    typed = path.suffix.lower() != ".csv"
    target = Path(target)
    target.write_text(template_text(schema, path.name, typed=typed, config_name=target.name), encoding="utf-8")
    return [name for name, dtype in schema.items() if not (typed and _declares_categories(dtype))]
