"""Domain: the public description of every column, held as an Arrow schema with metadata.

A column is either *categorical* (a finite, declared list of values) or *numeric* (declared
public bounds ``[lower, upper]``). Nothing here reads the sensitive data: categories come from
the user's ``domain=`` mapping or from a Polars ``Enum``/``Boolean`` dtype (declared, not
data-derived), bounds come from the user (design.md §5).

Nulls are data when they are declared: ``None`` in a category list makes the null its own
category, and a numeric column declared ``nullable`` gets a companion two-category null
indicator so that its null rate survives synthesis. Whether a column holds nulls is itself a
fact about the sensitive data, so it is never inferred: a null in a column declared without
one is an error for the curator, naming the column and the fix.

A numeric column is *integer* when its dtype is an integer type or it is declared
``integer=True`` (e.g. ages stored as Float64): its decoded values are whole numbers, still in
the column's dtype, and its bounds must be whole numbers.
"""

from __future__ import annotations

import decimal
import json
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from polars_rap.errors import DataError, ParameterError, ParameterTypeError

__all__ = ["Categorical", "Numeric", "Domain", "ColumnSpec", "check_declared"]

_METADATA_KEY = b"polars_rap"
_FORMAT_VERSION = 1
_UNLISTED = ("error", "null")
MAX_CATEGORIES = 10_000
"""Most categories one column may declare: each is a coordinate of every relaxed row."""


@dataclass(frozen=True, slots=True)
class Categorical:
    """A categorical column's public domain: ``categories`` in code order.

    Examples
    --------
    >>> Categorical(["Female", "Male"]).categories
    ('Female', 'Male')
    >>> Categorical([1, 2, None]).nullable
    True

    ``unlisted`` says what a value outside the list is: ``"error"`` (the default: the curator
    is told) or ``"null"`` (it joins the null category; privately inferred columns use this).
    """

    categories: tuple
    nullable: bool = False
    unlisted: str = "error"

    def __init__(self, categories: Iterable, nullable: bool = False, unlisted: str = "error") -> None:
        try:
            values = list(categories)
        except TypeError:
            msg = f"The 'categories' parameter must be a list of values. Got {categories!r}"
            raise ParameterTypeError(msg) from None
        for value in values:
            try:
                hash(value)
            except TypeError:
                msg = (f"The 'categories' parameter must hold single values (numbers, strings, "
                       f"dates, booleans); {value!r} is not one. Got {values!r}")
                raise ParameterTypeError(msg) from None
        if any(v is None for v in values):
            nullable = True
            values = [v for v in values if v is not None]
        if unlisted not in _UNLISTED:
            msg = f"The 'unlisted' parameter must be one of {list(_UNLISTED)}. Got {unlisted!r}"
            raise ParameterError(msg)
        if unlisted == "null" and not nullable:
            msg = "unlisted='null' maps values outside the list to null, so it needs nullable=True"
            raise ParameterError(msg)
        object.__setattr__(self, "categories", tuple(values))
        object.__setattr__(self, "nullable", bool(nullable))
        object.__setattr__(self, "unlisted", unlisted)


@dataclass(frozen=True, slots=True)
class Numeric:
    """A numeric column's public bounds; values outside are clipped (that makes the
    sensitivity hold). ``nullable=True`` adds a null-indicator so the null rate survives;
    ``integer=True`` makes decoded values whole numbers (integer dtypes imply it).

    Examples
    --------
    >>> Numeric(17, 95)
    Numeric(lower=17.0, upper=95.0, nullable=False, integer=False)
    >>> Numeric(18, 99, integer=True).integer
    True
    """

    lower: float
    upper: float
    nullable: bool = False
    integer: bool = False

    def __init__(self, lower: float, upper: float, nullable: bool = False, integer: bool = False) -> None:
        object.__setattr__(self, "lower", _number("lower", lower))
        object.__setattr__(self, "upper", _number("upper", upper))
        object.__setattr__(self, "nullable", bool(nullable))
        object.__setattr__(self, "integer", integer)  # checked with the column's name (Domain)


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One column of a :class:`Domain`.

    ``kind`` is ``"categorical"`` or ``"numeric"``; ``dtype`` is the Polars dtype the
    synthetic column gets (the input's dtype); ``integer`` is the declared flag of a numeric
    column (:attr:`is_integer` adds what an integer dtype implies).
    """

    name: str
    kind: str
    dtype: pl.DataType
    categories: tuple = ()
    lower: float = 0.0
    upper: float = 1.0
    nullable: bool = False
    unlisted: str = "error"
    integer: bool = False

    @property
    def is_categorical(self) -> bool:
        return self.kind == "categorical"

    @property
    def n_codes(self) -> int:
        """Number of category codes (the null, when declared, is the last code)."""
        return len(self.categories) + int(self.nullable)

    @property
    def is_integer(self) -> bool:
        """Whether decoded values are whole numbers: declared ``integer`` or an integer dtype."""
        return self.integer or self.dtype.is_integer()


@dataclass(frozen=True, slots=True)
class CategoricalBlock:
    """A block of the relaxed matrix: one categorical column, or the null indicator of a
    nullable numeric column (``source`` names the numeric column, ``indicator=True``)."""

    source: str
    n_codes: int
    indicator: bool
    is_label: bool


@dataclass(frozen=True, slots=True)
class Domain:
    """The public schema: column specs in frame order, and which columns are labels.

    Derived layout (design.md §2): ``blocks`` are the categorical blocks of the relaxed
    matrix (user categorical columns in frame order, then one null indicator per nullable
    numeric column); ``numeric_columns`` follow, one coordinate each.
    """

    columns: tuple[ColumnSpec, ...]
    labels: tuple[str, ...] = ()
    blocks: tuple[CategoricalBlock, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            msg = f"domain column names must be unique. Got {names}"
            raise ParameterError(msg)
        for label in self.labels:
            if label not in names:
                msg = f"label column {label!r} is not in the domain; columns are {names}"
                raise ParameterError(msg)
            if not self[label].is_categorical:
                spec = self[label]
                msg = (
                    f"label column {label!r} must be categorical (a few classes), but it is declared "
                    f"numeric with bounds ({spec.lower:g}, {spec.upper:g}). If it takes a few values, "
                    f"list them as its classes, e.g. domain={{{label!r}: [class, ...]}} from its "
                    "documentation; otherwise derive a categorical label from it (e.g. "
                    f"pl.col({label!r}) > threshold, as a new column) and name that in labels, or "
                    f"remove {label!r} from labels"
                )
                raise ParameterError(msg)
        for spec in self.columns:
            _check_spec(spec)
        blocks = [
            CategoricalBlock(c.name, c.n_codes, False, c.name in self.labels)
            for c in self.columns
            if c.is_categorical
        ]
        blocks += [
            CategoricalBlock(c.name, 2, True, False)
            for c in self.columns
            if not c.is_categorical and c.nullable
        ]
        object.__setattr__(self, "blocks", tuple(blocks))

    # ------------------------------------------------------------------ access
    def __getitem__(self, name: str) -> ColumnSpec:
        for spec in self.columns:
            if spec.name == name:
                return spec
        raise KeyError(name)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def numeric_columns(self) -> list[ColumnSpec]:
        return [c for c in self.columns if not c.is_categorical]

    @property
    def block_sizes(self) -> list[int]:
        return [b.n_codes for b in self.blocks]

    @property
    def n_categorical_coords(self) -> int:
        return sum(self.block_sizes)

    @property
    def n_coords(self) -> int:
        return self.n_categorical_coords + len(self.numeric_columns)

    def block_index(self, source: str, indicator: bool = False) -> int:
        for i, block in enumerate(self.blocks):
            if block.source == source and block.indicator == indicator:
                return i
        raise KeyError(source)

    # -------------------------------------------------------------- building
    @classmethod
    def from_mapping(
        cls,
        schema: Mapping[str, pl.DataType],
        domain: Mapping[str, Any] | None,
        labels: Sequence[str] = (),
    ) -> "Domain":
        """Build the domain of a frame with ``schema`` from the user's ``domain=`` mapping.

        Each entry is a list of categories (categorical), a ``(lower, upper)`` tuple
        (numeric), a ``{"bounds": (lo, hi), "nullable": bool, "integer": bool}`` or
        ``{"categories": [...], "nullable": bool}`` table, or a :class:`Categorical` /
        :class:`Numeric`. Columns absent from the mapping must have an ``Enum`` or
        ``Boolean`` dtype, whose categories are declared by the dtype itself.
        """
        domain = dict(domain or {})
        if isinstance(labels, str):
            labels = [labels]
        unknown = [name for name in domain if name not in schema]
        if unknown:
            msg = (
                f"domain names columns that are not in the data: {unknown}; "
                f"the data's columns are {list(schema)}. Remove them or fix the spelling"
            )
            raise ParameterError(msg)
        missing_labels = [name for name in labels if name not in schema]
        if missing_labels:
            msg = (
                f"labels name columns that are not in the data: {missing_labels}; "
                f"the data's columns are {list(schema)}"
            )
            raise ParameterError(msg)
        check_declared(schema, domain, labels)
        specs = []
        for name, dtype in schema.items():
            declared = domain.get(name)
            if declared is None:
                declared = _declared_by_dtype(dtype)
            specs.append(_spec_from_declaration(name, dtype, declared))
        return cls(tuple(specs), tuple(labels))

    # ---------------------------------------------------------- Arrow round trip
    def to_arrow_schema(self) -> pa.Schema:
        """An Arrow schema whose fields carry each column's spec as JSON metadata."""
        empty = pl.DataFrame(schema={c.name: c.dtype for c in self.columns}).to_arrow()
        fields = []
        for spec, arrow_field in zip(self.columns, empty.schema, strict=True):
            meta = {
                "kind": spec.kind,
                "nullable": spec.nullable,
                "label": spec.name in self.labels,
            }
            if spec.is_categorical:
                meta["categories"] = list(spec.categories)
                meta["unlisted"] = spec.unlisted
            else:
                meta["bounds"] = [spec.lower, spec.upper]
                meta["integer"] = spec.integer
            metadata = {**(arrow_field.metadata or {}), _METADATA_KEY: json.dumps(meta)}
            fields.append(arrow_field.with_metadata(metadata))
        schema_meta = {_METADATA_KEY: json.dumps({"format_version": _FORMAT_VERSION})}
        return pa.schema(fields, metadata=schema_meta)

    @classmethod
    def from_arrow_schema(cls, schema: pa.Schema) -> "Domain":
        """Inverse of :meth:`to_arrow_schema`."""
        dtypes = pl.DataFrame(schema.empty_table()).schema
        specs, labels = [], []
        for arrow_field in schema:
            raw = (arrow_field.metadata or {}).get(_METADATA_KEY)
            if raw is None:
                msg = f"field {arrow_field.name!r} has no polars_rap metadata; not a saved domain"
                raise DataError(msg)
            meta = json.loads(raw)
            dtype = dtypes[arrow_field.name]
            if meta["kind"] == "categorical":
                declared: Any = Categorical(
                    meta["categories"], nullable=meta["nullable"],
                    unlisted=meta.get("unlisted", "error"),
                )
            else:
                declared = Numeric(*meta["bounds"], nullable=meta["nullable"],
                                   integer=meta.get("integer", False))  # absent before issue 14
            specs.append(_spec_from_declaration(arrow_field.name, dtype, declared))
            if meta.get("label"):
                labels.append(arrow_field.name)
        return cls(tuple(specs), tuple(labels))


# ---------------------------------------------------------------- helpers
def _number(name: str, value: Any) -> float:
    """``float(value)``, or a :class:`ParameterTypeError` naming the parameter."""
    try:
        return float(value)
    except (TypeError, ValueError):
        msg = f"The {name!r} parameter must be a number. Got {value!r}"
        raise ParameterTypeError(msg) from None


def _is_bound(value: Any) -> bool:
    """A real number a bound may be (NumPy's and ``Decimal`` too), not a bool."""
    return isinstance(value, (numbers.Real, decimal.Decimal)) and not isinstance(value, (bool, np.bool_))


def _of_column(name: str, build, *args) -> Any:
    """``build(*args)`` (a :class:`Numeric` or :class:`Categorical`); its
    :class:`ParameterError` says which column's declaration it comes from."""
    try:
        return build(*args)
    except ParameterError as error:
        raise type(error)(f"column {name!r}: {error}") from error


def _dtype_range(dtype: pl.DataType) -> tuple[float, float] | None:
    """The finite values a numeric ``dtype`` can hold (None: no limit worth checking)."""
    if dtype.is_integer():
        return pl.select(dtype.min().alias("min"), dtype.max().alias("max")).row(0)
    if dtype == pl.Float32:
        largest = float(np.finfo(np.float32).max)
        return -largest, largest
    if isinstance(dtype, pl.Decimal) and dtype.precision is not None:
        largest = 10.0 ** (dtype.precision - dtype.scale) - 10.0 ** -dtype.scale
        return -largest, largest
    return None


def _integer_flag(name: str, declared: Numeric) -> bool:
    """``declared.integer``, checked: a bool, and whole-number bounds when True (bounds that
    are not finite are refused by :func:`_check_spec`, with their own message)."""
    if not isinstance(declared.integer, (bool, np.bool_)):
        msg = f"column {name!r}: 'integer' must be True or False. Got {declared.integer!r}"
        raise ParameterTypeError(msg)
    bounds = (declared.lower, declared.upper)
    if declared.integer and all(map(math.isfinite, bounds)) and any(v != math.floor(v) for v in bounds):
        msg = (
            f"column {name!r} is declared integer but its bounds ({declared.lower}, "
            f"{declared.upper}) are not whole numbers; declare whole-number bounds, e.g. "
            f"({math.floor(declared.lower)}, {math.ceil(declared.upper)}), or drop 'integer'"
        )
        raise ParameterError(msg)
    return bool(declared.integer)


def _declared_by_dtype(dtype: pl.DataType) -> Categorical | None:
    """The categories an ``Enum`` or ``Boolean`` dtype declares; None for any other dtype."""
    if isinstance(dtype, pl.Enum):
        return Categorical(dtype.categories.to_list())
    if dtype == pl.Boolean:
        return Categorical([False, True])
    return None


def check_declared(schema: Mapping[str, pl.DataType], domain: Mapping[str, Any] | None,
                   labels: Sequence[str] = (), pending: Iterable[str] = ()) -> None:
    """Raise ``ValueError`` naming *every* column of ``schema`` without a public domain: no
    entry in ``domain``, not in ``pending`` (columns to be inferred), no ``Enum``/``Boolean``
    dtype. Checked before any row is read."""
    skip = {name for name, entry in (domain or {}).items() if entry is not None} | set(pending)
    undeclared = [(name, dtype) for name, dtype in schema.items()
                  if name not in skip and _declared_by_dtype(dtype) is None]
    if not undeclared:
        return
    examples = ", ".join(f"{name!r}: {_example_entry(name, dtype, labels)}" for name, dtype in undeclared)
    if len(undeclared) == 1:
        name, dtype = undeclared[0]
        head = f"column {name!r} ({dtype}) has no public domain. Declare it in domain=, e.g. "
    else:
        listed = ", ".join(f"{name!r} ({dtype})" for name, dtype in undeclared)
        head = f"{len(undeclared)} columns have no public domain: {listed}. Declare each in domain=, e.g. "
    msg = (
        f"{head}domain={{{examples}}} with values from public documentation (never from "
        "the data itself), give it a pl.Enum dtype, learn it privately with "
        "infer_domain=True (charged to the budget), or drop the column"
    )
    raise ParameterError(msg)


def _example_entry(name: str, dtype: pl.DataType, labels: Sequence[str]) -> str:
    """A placeholder declaration for an undeclared column: classes for a label or a text
    column, bounds for any other numeric one."""
    if dtype.is_numeric() and name not in labels:
        return "(lower, upper)"
    return "[class, ...]" if name in labels else "['a', 'b', ...]"


def _spec_from_declaration(name: str, dtype: pl.DataType, declared: Any) -> ColumnSpec:
    if isinstance(declared, Mapping):
        declared = dict(declared)
        nullable = bool(declared.pop("nullable", False))
        if "bounds" in declared:
            bounds = declared.pop("bounds")
            if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
                msg = f"column {name!r}: 'bounds' must be a pair (lower, upper). Got {bounds!r}"
                raise ParameterTypeError(msg)
            declared_obj: Any = _of_column(name, Numeric, *bounds, nullable, declared.pop("integer", False))
        elif "categories" in declared and "integer" in declared:
            msg = (
                f"column {name!r}: 'integer' applies to numeric bounds, not to categories; "
                "categories are decoded as declared. Remove 'integer'"
            )
            raise ParameterError(msg)
        elif "categories" in declared:
            declared_obj = _of_column(name, Categorical, declared.pop("categories"), nullable)
        else:
            msg = f"domain entry for {name!r} needs 'bounds' or 'categories'. Got {declared}"
            raise ParameterError(msg)
        if declared:
            msg = f"domain entry for {name!r} has unknown keys {sorted(declared)}"
            raise ParameterError(msg)
        declared = declared_obj
    elif isinstance(declared, tuple):
        if len(declared) != 2 or not all(_is_bound(v) for v in declared):
            msg = (
                f"domain entry for {name!r} is a tuple {declared!r}; a tuple means numeric "
                "(lower, upper) bounds. Give categories as a list, e.g. ['a', 'b']"
            )
            raise ParameterTypeError(msg)
        declared = Numeric(*declared)
    elif isinstance(declared, (list, pl.Series)):
        declared = _of_column(name, Categorical, list(declared))
    elif isinstance(declared, str) and declared in ("categorical", "numeric"):
        msg = (
            f"domain entry for {name!r} asks for private inference ({declared!r}); only "
            "synthesize() can do that, charging the budget. Declare its "
            + ("categories" if declared == "categorical" else "bounds") + " here instead"
        )
        raise ParameterError(msg)
    if isinstance(declared, Categorical):
        return ColumnSpec(
            name, "categorical", dtype, categories=declared.categories,
            nullable=declared.nullable, unlisted=declared.unlisted,
        )
    if isinstance(declared, Numeric):
        if not dtype.is_numeric():  # a Null column could not hold a synthetic number either
            msg = (
                f"column {name!r} is declared numeric with bounds ({declared.lower:g}, "
                f"{declared.upper:g}) but holds {dtype}, not numbers. Store it as numbers first "
                f"(pl.col({name!r}).cast(pl.Float64) fails on any value that is not a number; "
                "with strict=False such values become nulls, and the column must then be "
                "declared nullable), or declare its categories as a list"
            )
            raise DataError(msg)
        limits = _dtype_range(dtype)
        finite = math.isfinite(declared.lower) and math.isfinite(declared.upper)  # else _check_spec says so
        if limits is not None and finite and not (limits[0] <= declared.lower and declared.upper <= limits[1]):
            msg = (
                f"column {name!r} is declared with bounds ({declared.lower}, {declared.upper}) but "
                f"holds {dtype}, which holds values in [{limits[0]}, {limits[1]}] only; "
                f"cast it to a wider type first (pl.col({name!r}).cast(pl.Float64)) or narrow the bounds"
            )
            raise DataError(msg)
        return ColumnSpec(
            name,
            "numeric",
            dtype,
            lower=declared.lower,
            upper=declared.upper,
            nullable=declared.nullable,
            integer=_integer_flag(name, declared),
        )
    msg = (
        f"domain entry for {name!r} must be a list of categories, a (lower, upper) tuple, "
        f"a dict with 'bounds' or 'categories', or Categorical/Numeric. Got {declared!r}"
    )
    raise ParameterTypeError(msg)


def _check_spec(spec: ColumnSpec) -> None:
    if spec.is_categorical:
        if len(spec.categories) == 0 and spec.unlisted != "null":
            msg = f"column {spec.name!r} declares no categories; give at least one"
            raise ParameterError(msg)
        if len(spec.categories) > MAX_CATEGORIES:
            msg = (
                f"column {spec.name!r} declares {len(spec.categories):,} categories, more than "
                f"{MAX_CATEGORIES:,}: each is a coordinate of every relaxed row and marginals "
                "over it would be noise. Recode it to fewer categories (group rare codes, e.g. "
                "by a public hierarchy) or drop the column"
            )
            raise ParameterError(msg)
        if len(set(spec.categories)) != len(spec.categories):
            msg = f"column {spec.name!r} declares repeated categories: {list(spec.categories)}"
            raise ParameterError(msg)
        return
    if not (math.isfinite(spec.lower) and math.isfinite(spec.upper)) or spec.lower >= spec.upper:
        msg = (
            f"column {spec.name!r} bounds must be finite with lower < upper. "
            f"Got ({spec.lower}, {spec.upper})"
        )
        raise ParameterError(msg)
