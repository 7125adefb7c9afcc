"""Column tables: the TOML form of a public domain (``kind``, ``bounds`` or ``categories``,
``nullable``, ``integer``, ``scale``, ``atoms``), checked and turned into ``synthesize``'s
``domain=`` mapping. Task spec files (:mod:`polars_rap.io.datasets`) and config files
(:mod:`polars_rap.cli.config`) both declare their columns this way.
"""

from __future__ import annotations

import datetime
from typing import Any

from polars_rap.errors import ParameterError

__all__ = ["check_spec", "domain_from_columns", "domain_from_tables"]

_KINDS = ("numeric", "categorical")


def check_spec(spec: dict[str, Any], spec_file: str) -> None:
    """Check a parsed spec (``{"dataset": {...}, "columns": {...}}``): raises ``ParameterError``
    (``ValueError`` for a transform) naming ``spec_file``, the column and the rule."""
    dataset = spec.get("dataset")
    columns = spec.get("columns")
    if not isinstance(dataset, dict) or not isinstance(columns, dict) or not columns:
        msg = f"spec file {spec_file!r} must have a [dataset] table and at least one [columns.NAME] table"
        raise ParameterError(msg)
    for label in dataset.get("labels", []):
        if label not in columns:
            msg = f"spec file {spec_file!r}: label {label!r} has no [columns.{label}] table"
            raise ParameterError(msg)
        if columns[label].get("kind") != "categorical":
            msg = f"spec file {spec_file!r}: label {label!r} must be categorical, found kind={columns[label].get('kind')!r}"
            raise ParameterError(msg)
    for name, table in columns.items():
        kind = table.get("kind")
        if kind not in _KINDS:
            msg = f"spec file {spec_file!r}: column {name!r} has kind={kind!r}; it must be one of {_KINDS}"
            raise ParameterError(msg)
        for flag in ("nullable", "integer"):
            if not isinstance(table.get(flag, False), bool):
                msg = f"spec file {spec_file!r}: column {name!r} has a non-boolean {flag!r} (write true or false)"
                raise ParameterError(msg)
        for key in _NUMERIC_ONLY:
            if key in table and kind != "numeric":
                msg = (f"spec file {spec_file!r}: column {name!r}: {key!r} applies to numeric columns "
                       f"(kind = \"numeric\"), not to kind = {kind!r}; remove it")
                raise ParameterError(msg)
        if kind == "numeric":
            bounds = table.get("bounds")
            if (
                not isinstance(bounds, list)
                or len(bounds) != 2
                or not (all(_is_number(b) for b in bounds) or all(_is_date(b) for b in bounds))
                or not bounds[0] < bounds[1]
            ):
                msg = (f"spec file {spec_file!r}: numeric column {name!r} needs bounds = [lo, hi] with "
                       f"lo < hi, both numbers or both TOML dates/datetimes (1990-01-01); found {bounds!r}")
                raise ParameterError(msg)
            _check_transform(table, name, spec_file)
            if table.get("integer", False) and not all(_is_number(b) and float(b).is_integer() for b in bounds):
                msg = (f"spec file {spec_file!r}: column {name!r} is declared integer but its bounds "
                       f"{bounds!r} are not whole numbers; write whole-number bounds or drop 'integer'")
                raise ParameterError(msg)
        else:
            categories = table.get("categories")
            if not isinstance(categories, list) or not categories:
                msg = f"spec file {spec_file!r}: categorical column {name!r} needs a non-empty 'categories' list"
                raise ParameterError(msg)
            if len(set(categories)) != len(categories):
                msg = f"spec file {spec_file!r}: categorical column {name!r} lists a category twice"
                raise ParameterError(msg)


_NUMERIC_ONLY = ("integer", "scale", "atoms")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_date(value: Any) -> bool:
    return isinstance(value, datetime.date)  # TOML dates and datetimes (a datetime is a date)


def _check_transform(table: dict[str, Any], name: str, spec_file: str) -> None:
    """``scale`` one of the scales, ``atoms`` a list of numbers or dates (checked further by
    :class:`~polars_rap.schema.domain.Domain`, which knows the column's dtype)."""
    from polars_rap.schema.transforms import SCALES

    scale = table.get("scale", "linear")
    if scale not in SCALES:
        msg = f"spec file {spec_file!r}: column {name!r} has scale = {scale!r}; it must be one of {list(SCALES)}"
        raise ValueError(msg)
    atoms = table.get("atoms", [])
    if not isinstance(atoms, list) or not all(_is_number(a) or _is_date(a) for a in atoms):
        msg = (f"spec file {spec_file!r}: column {name!r} needs atoms = [values, ...] (numbers or TOML "
               f"dates), e.g. atoms = [0]; found {atoms!r}")
        raise ValueError(msg)


def domain_from_tables(columns: dict[str, dict[str, Any]], labels: list[str], source: str) -> dict[str, Any]:
    """The ``domain=`` mapping of TOML column tables (``kind``, ``bounds`` or
    ``categories``, optional ``nullable`` and, for numeric columns, ``integer``, both
    defaulting to false, ``scale`` and ``atoms``), checked first. Bounds and atoms of a date or
    datetime column are TOML dates (``1990-01-01``) or datetimes (``1990-01-01T00:00:00``).

    ``labels`` must name categorical tables; ``source`` names the file in error messages,
    which raise ``ValueError`` naming the column and the rule.

    >>> domain_from_tables({"age": {"kind": "numeric", "bounds": [0, 120]},
    ...                     "sex": {"kind": "categorical", "categories": [1, 2], "nullable": True}},
    ...                    ["sex"], "config.toml")
    {'age': (0, 120), 'sex': [1, 2, None]}
    >>> domain_from_tables({"age": {"kind": "numeric", "bounds": [18, 99], "integer": True}}, [], "c.toml")
    {'age': {'bounds': (18, 99), 'integer': True}}
    >>> domain_from_tables({"gain": {"kind": "numeric", "bounds": [0, 99999], "scale": "log",
    ...                              "atoms": [0]}}, [], "c.toml")
    {'gain': {'bounds': (0, 99999), 'scale': 'log', 'atoms': [0]}}
    """
    check_spec({"dataset": {"labels": list(labels)}, "columns": columns}, source)
    return domain_from_columns(columns)


def domain_from_columns(columns: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The ``domain=`` mapping of checked column tables (nullable and integer default to false)."""
    domain: dict[str, Any] = {}
    for name, table in columns.items():
        nullable = table.get("nullable", False)
        if table["kind"] == "numeric":
            bounds = (table["bounds"][0], table["bounds"][1])
            flags = {key: True for key in ("nullable", "integer") if table.get(key, False)}
            if table.get("scale", "linear") != "linear":
                flags["scale"] = table["scale"]
            if table.get("atoms"):
                flags["atoms"] = list(table["atoms"])
            domain[name] = {"bounds": bounds, **flags} if flags else bounds
        else:
            categories = list(table["categories"])
            domain[name] = [*categories, None] if nullable else categories
    return domain
