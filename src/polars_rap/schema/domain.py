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

Dates, datetimes and durations are numeric columns with bounds given as ``date``,
``datetime`` or ``timedelta`` objects; inside, a :class:`ColumnSpec` holds them as whole days
or microseconds (:mod:`polars_rap.schema.temporal`). A numeric column may also declare a ``scale``
(``"linear"``, ``"log"``, ``"sqrt"``) and ``atoms`` (values many rows hold exactly): the
public map between its units and its coordinate in ``[0, 1]`` (:mod:`polars_rap.schema.transforms`).
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

from polars_rap.schema import temporal
from polars_rap.errors import DataError, ParameterError, ParameterTypeError
from polars_rap.schema.transforms import MAX_ATOMS, SCALES

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

    ``scale`` (``"linear"``, ``"log"`` or ``"sqrt"``) and ``atoms`` (values that many rows
    hold exactly, kept exactly) set the public map to the column's coordinate in ``[0, 1]``,
    where thresholds are drawn and values decoded (:mod:`polars_rap.schema.transforms`). Bounds and
    atoms of a Date, Datetime or Duration column are ``date``, ``datetime`` or ``timedelta``
    objects, kept as given (:mod:`polars_rap.schema.temporal`); other bounds become floats.

    Examples
    --------
    >>> Numeric(17, 95)
    Numeric(lower=17.0, upper=95.0, nullable=False, integer=False, scale='linear', atoms=())
    >>> Numeric(18, 99, integer=True).integer
    True
    >>> Numeric(0, 100_000, scale="log", atoms=[0]).atoms
    (0.0,)
    """

    lower: Any
    upper: Any
    nullable: bool = False
    integer: bool = False
    scale: str = "linear"
    atoms: tuple = ()

    def __init__(self, lower: Any, upper: Any, nullable: bool = False, integer: bool = False,
                 scale: str = "linear", atoms: Iterable = ()) -> None:
        object.__setattr__(self, "lower", _bound_value("lower", lower))
        object.__setattr__(self, "upper", _bound_value("upper", upper))
        object.__setattr__(self, "nullable", bool(nullable))
        object.__setattr__(self, "integer", integer)  # checked with the column's name (Domain)
        if scale not in SCALES:
            msg = f"The 'scale' parameter must be one of {list(SCALES)}. Got {scale!r}"
            raise ParameterError(msg)
        object.__setattr__(self, "scale", scale)
        if isinstance(atoms, (str, bytes)) or not isinstance(atoms, Iterable):
            msg = f"The 'atoms' parameter must be a list of values, e.g. [0]. Got {atoms!r}"
            raise ParameterTypeError(msg)
        object.__setattr__(self, "atoms", tuple(_bound_value("atoms", a) for a in atoms))


def _bound_value(name: str, value: Any) -> Any:
    """A bound or atom as stored: a date, datetime or timedelta as given (checked against the
    column's dtype later, with its name), a number as a float; anything else is a
    :class:`ParameterTypeError` naming the parameter."""
    if temporal.is_temporal_value(value):
        return value
    if not isinstance(value, (bool, np.bool_)):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    kind = "hold numbers" if name == "atoms" else "be a number"
    msg = f"The {name!r} parameter must {kind} (or dates, datetimes or timedeltas). Got {value!r}"
    raise ParameterTypeError(msg) from None


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One column of a :class:`Domain`.

    ``kind`` is ``"categorical"`` or ``"numeric"``; ``dtype`` is the Polars dtype the
    synthetic column gets (the input's dtype); ``integer`` is the declared flag of a numeric
    column (:attr:`is_integer` adds what an integer or temporal dtype implies). ``lower``,
    ``upper`` and ``atoms`` (sorted) are floats in the column's internal units: its own units,
    or days / microseconds for temporal dtypes (:mod:`polars_rap.schema.temporal`); ``scale`` and
    ``atoms`` define its map to ``[0, 1]`` (:mod:`polars_rap.schema.transforms`).
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
    scale: str = "linear"
    atoms: tuple = ()

    @property
    def is_categorical(self) -> bool:
        return self.kind == "categorical"

    @property
    def n_codes(self) -> int:
        """Number of category codes (the null, when declared, is the last code)."""
        return len(self.categories) + int(self.nullable)

    @property
    def is_integer(self) -> bool:
        """Whether decoded values are whole numbers: declared ``integer``, an integer dtype, or
        a temporal one (whole days or microseconds)."""
        return self.integer or self.dtype.is_integer() or self.is_temporal

    @property
    def is_temporal(self) -> bool:
        """Whether the column is a Date, Datetime or Duration (held in internal units)."""
        return temporal.is_temporal(self.dtype)

    def declaration(self) -> "Categorical | Numeric":
        """The :class:`Categorical` or :class:`Numeric` that declares this column (temporal
        bounds and atoms as ``date``/``datetime``/``timedelta`` objects)."""
        if self.is_categorical:
            return Categorical(self.categories, nullable=self.nullable, unlisted=self.unlisted)
        if self.is_temporal:
            lower, upper = (temporal.internal_to_bound(v, self.dtype) for v in (self.lower, self.upper))
            atoms = [temporal.internal_to_bound(v, self.dtype) for v in self.atoms]
        else:
            lower, upper, atoms = self.lower, self.upper, list(self.atoms)
        return Numeric(lower, upper, nullable=self.nullable, integer=self.integer, scale=self.scale,
                       atoms=atoms)


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
        (numeric; ``date``/``datetime``/``timedelta`` bounds for temporal columns), a
        ``{"bounds": (lo, hi), "nullable": bool, "integer": bool, "scale": str, "atoms":
        [...]}`` or ``{"categories": [...], "nullable": bool}`` table, or a
        :class:`Categorical` / :class:`Numeric`. Columns absent from the mapping must have an ``Enum`` or
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
                meta["bounds"] = [spec.lower, spec.upper]  # internal units (days/us if temporal)
                meta["integer"] = spec.integer
                meta["scale"] = spec.scale
                meta["atoms"] = list(spec.atoms)
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
                bounds, atoms = meta["bounds"], meta.get("atoms", [])  # scale, atoms: absent before
                if temporal.is_temporal(dtype):
                    bounds = [temporal.internal_to_bound(v, dtype) for v in bounds]
                    atoms = [temporal.internal_to_bound(v, dtype) for v in atoms]
                declared = Numeric(*bounds, nullable=meta["nullable"], integer=meta.get("integer", False),
                                   scale=meta.get("scale", "linear"), atoms=atoms)  # issue 14
            specs.append(_spec_from_declaration(arrow_field.name, dtype, declared))
            if meta.get("label"):
                labels.append(arrow_field.name)
        return cls(tuple(specs), tuple(labels))


# ---------------------------------------------------------------- helpers
def _of_column(name: str, build, *args, **kwargs) -> Any:
    """``build(*args, **kwargs)`` (a :class:`Numeric` or :class:`Categorical`); its
    :class:`ParameterError` says which column's declaration it comes from."""
    try:
        return build(*args, **kwargs)
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


def decimal_steps(lower: float, upper: float, scale: int) -> tuple[int, int]:
    """``(lowest, highest)``: the first and last multiples of ``10**-scale`` in ``[lower,
    upper]``, counted in those steps (exact decimal arithmetic on the floats' binary values);
    ``lowest > highest`` when none lies there. A ``Decimal`` column's decoded values stay on
    them (:func:`polars_rap.decode.decoding.decoded_values`)."""
    unit = decimal.Decimal(10) ** scale
    lowest = (decimal.Decimal(lower) * unit).to_integral_value(rounding=decimal.ROUND_CEILING)
    highest = (decimal.Decimal(upper) * unit).to_integral_value(rounding=decimal.ROUND_FLOOR)
    return int(lowest), int(highest)


def _integer_flag(name: str, declared: Numeric, lower: float, upper: float) -> bool:
    """``declared.integer``, checked: a bool, and whole-number bounds (``lower``, ``upper``)
    when True (bounds that are not finite are refused by :func:`_check_spec`)."""
    if not isinstance(declared.integer, (bool, np.bool_)):
        msg = f"column {name!r}: 'integer' must be True or False. Got {declared.integer!r}"
        raise ParameterTypeError(msg)
    bounds = (lower, upper)
    if declared.integer and all(map(math.isfinite, bounds)) and any(v != math.floor(v) for v in bounds):
        msg = (
            f"column {name!r} is declared integer but its bounds ({lower}, "
            f"{upper}) are not whole numbers; declare whole-number bounds, e.g. "
            f"({math.floor(lower)}, {math.ceil(upper)}), or drop 'integer'"
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
    times = [name for name, dtype in schema.items() if dtype == pl.Time]
    if times:
        msg = (
            f"column {times[0]!r} holds {pl.Time}, which polars-rap does not support (dates, "
            "datetimes and durations are); cast it to a Duration since midnight "
            f"(pl.col({times[0]!r}).cast(pl.Duration)) or to a number, or drop the column"
        )
        raise ParameterError(msg)
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
        f"infer_domain=True (charged to the budget), or leave {'it' if len(undeclared) == 1 else 'them'} out "
        f"with drop={[name for name, _ in undeclared]!r}"
    )
    raise ParameterError(msg)


def _example_entry(name: str, dtype: pl.DataType, labels: Sequence[str]) -> str:
    """A placeholder declaration for an undeclared column: classes for a label or a text
    column, bounds for any other numeric one."""
    if temporal.is_temporal(dtype) and name not in labels:
        return _TEMPORAL_EXAMPLES[type(dtype).__name__ if dtype != pl.Date else "Date"]
    if dtype.is_numeric() and name not in labels:
        return "(lower, upper)"
    return "[class, ...]" if name in labels else "['a', 'b', ...]"


_TEMPORAL_EXAMPLES = {
    "Date": "(date(1990, 1, 1), date(2025, 12, 31))",
    "Datetime": "(datetime(1990, 1, 1), datetime(2025, 12, 31, 23, 59))",
    "Duration": "(timedelta(0), timedelta(days=365))",
}
_NUMERIC_KEYS = ("integer", "scale", "atoms")


def _is_bound(value: Any) -> bool:
    """A real number (NumPy's and ``Decimal`` too, not a bool) or a date/datetime/timedelta:
    what a tuple of bounds holds."""
    if isinstance(value, (bool, np.bool_)):
        return False
    return isinstance(value, (numbers.Real, decimal.Decimal)) or temporal.is_temporal_value(value)


def _spec_from_declaration(name: str, dtype: pl.DataType, declared: Any) -> ColumnSpec:
    if isinstance(declared, Mapping):
        declared = dict(declared)
        nullable = bool(declared.pop("nullable", False))
        if "bounds" in declared:
            bounds = declared.pop("bounds")
            if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
                msg = f"column {name!r}: 'bounds' must be a pair (lower, upper). Got {bounds!r}"
                raise ParameterTypeError(msg)
            options = {key: declared.pop(key) for key in _NUMERIC_KEYS if key in declared}
            declared_obj: Any = _of_column(name, Numeric, *bounds, nullable, **options)
        elif "categories" in declared and any(key in declared for key in _NUMERIC_KEYS):
            keys = " and ".join(repr(key) for key in _NUMERIC_KEYS if key in declared)
            verb = "apply" if " and " in keys else "applies"
            msg = (
                f"column {name!r}: {keys} {verb} to numeric bounds, not to categories; "
                f"categories are decoded as declared. Remove {keys}"
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
                "(lower, upper) bounds (numbers, or dates/datetimes/timedeltas for a temporal "
                "column). Give categories as a list, e.g. ['a', 'b']"
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
        if not (dtype.is_numeric() or temporal.is_temporal(dtype)):  # nor a Null column
            msg = (
                f"column {name!r} is declared numeric with bounds ({declared.lower:g}, "
                f"{declared.upper:g}) but holds {dtype}, not numbers. Store it as numbers first "
                f"(pl.col({name!r}).cast(pl.Float64) fails on any value that is not a number; "
                "with strict=False such values become nulls, and the column must then be "
                "declared nullable), or declare its categories as a list"
            )
            raise DataError(msg)
        lower, upper = (_internal(name, dtype, v, "bound") for v in (declared.lower, declared.upper))
        atoms = tuple(sorted(_internal(name, dtype, v, "atom") for v in declared.atoms))
        limits = _dtype_range(dtype)
        finite = math.isfinite(lower) and math.isfinite(upper)  # else _check_spec says so
        if limits is not None and finite and not (limits[0] <= lower and upper <= limits[1]):
            msg = (
                f"column {name!r} is declared with bounds ({lower}, {upper}) but "
                f"holds {dtype}, which holds values in [{limits[0]}, {limits[1]}] only; "
                f"cast it to a wider type first (pl.col({name!r}).cast(pl.Float64)) or narrow the bounds"
            )
            raise DataError(msg)
        if isinstance(dtype, pl.Decimal) and dtype.scale is not None and finite:
            lowest, highest = decimal_steps(lower, upper, int(dtype.scale))
            if lowest > highest:
                msg = (
                    f"column {name!r} is declared with bounds ({lower}, {upper}) but holds {dtype}, "
                    f"whose values are multiples of {10.0 ** -dtype.scale:g}: none lies between those "
                    "bounds; widen the bounds to take one, or cast the column to pl.Float64 first"
                )
                raise DataError(msg)
        return ColumnSpec(
            name,
            "numeric",
            dtype,
            lower=lower,
            upper=upper,
            nullable=declared.nullable,
            integer=_integer_flag(name, declared, lower, upper),
            scale=declared.scale,
            atoms=atoms,
        )
    msg = (
        f"domain entry for {name!r} must be a list of categories, a (lower, upper) tuple, "
        f"a dict with 'bounds' or 'categories', or Categorical/Numeric. Got {declared!r}"
    )
    raise ParameterTypeError(msg)


def _internal(name: str, dtype: pl.DataType, value: Any, what: str) -> float:
    """A declared bound or atom as a float in the column's internal units, or a ParameterTypeError
    naming the column (text, a bool, a date for a number column, a number for a date one)."""
    if temporal.is_temporal(dtype):
        return temporal.bound_to_internal(value, dtype, name, what)
    if isinstance(value, (numbers.Real, decimal.Decimal)) and not isinstance(value, (bool, np.bool_)):
        return float(value)
    hint = (" Dates and times need a Date/Datetime/Duration column: cast it first"
            if temporal.is_temporal_value(value) else "")
    msg = f"column {name!r} holds {dtype}, so its {what} must be a number. Got {value!r}.{hint}"
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
    if spec.scale not in SCALES:
        msg = f"column {spec.name!r}: 'scale' must be one of {list(SCALES)}. Got {spec.scale!r}"
        raise ParameterError(msg)
    _check_atoms(spec)


def _check_atoms(spec: ColumnSpec) -> None:
    """Atoms: at most ``MAX_ATOMS``, distinct, inside the bounds, whole for integer columns."""
    atoms = spec.atoms
    shown = _shown_values(spec, atoms)
    if len(atoms) > MAX_ATOMS:
        msg = (f"column {spec.name!r} declares {len(atoms)} atoms, more than {MAX_ATOMS}: atoms are "
               "the few values many rows hold exactly (e.g. 0); declare a categorical column instead")
        raise ParameterError(msg)
    if len(set(atoms)) != len(atoms):
        msg = f"column {spec.name!r} declares repeated atoms: {shown}"
        raise ParameterError(msg)
    outside = [a for a in atoms if not (math.isfinite(a) and spec.lower <= a <= spec.upper)]
    if outside:
        msg = (f"column {spec.name!r}: atoms {_shown_values(spec, outside)} lie outside its bounds "
               f"{_shown_values(spec, [spec.lower, spec.upper])}; an atom is a value inside the bounds")
        raise ParameterError(msg)
    if spec.is_integer and any(a != math.floor(a) for a in atoms):
        msg = (f"column {spec.name!r} is integer but its atoms {shown} are not all whole numbers; "
               "an integer column can only hold whole values")
        raise ParameterError(msg)


def _shown_values(spec: ColumnSpec, values) -> list:
    """``values`` (internal units) as the user declared them, for messages."""
    if spec.is_temporal:
        return [temporal.internal_to_bound(v, spec.dtype) for v in values]
    return [float(v) for v in values]
