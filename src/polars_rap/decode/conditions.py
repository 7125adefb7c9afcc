"""Conditions on sampled rows: a ``where=`` argument read into per-column masks over relaxed rows.

A condition is a dict ``{column: value | [values] | (low, high)}`` (all entries must hold), a
Polars expression over the columns, or a string in Polars' SQL expression language
(:func:`polars.sql_expr`: ``"SEX = 2 AND AGEP >= 60"``), the form the command line takes.
A value ``None`` means a null; a range ``(low, high)`` holds both ends, and either end may be
None (open). An expression is split at its top-level ``&``/``AND``: each conjunct over one
column is read *exactly* (evaluated on every category of a categorical column, on every relaxed
row's decoded value of a numeric column); conjuncts over several columns form the *residual*,
checked on decoded rows (:mod:`polars_rap.decode.conditional`), as do those on a numeric column
where decoding moves the values away from the relaxed rows' (after a check that some value of
the column passes them: else the condition has probability 0). Expressions must be row-wise:
a row's truth may depend on that row only (no ``mean()`` over the frame).

:func:`read_condition` returns a :class:`Condition`: per categorical block a float64 0/1 mask
of its allowed codes (one row for a categorical column; one per relaxed row for the null
indicator of a nullable numeric column, whose value the row decodes to), and per relaxed row a
0/1 factor for conditions on non-nullable numeric columns. A relaxed row's probability of the
condition's exact part is then the product over masked blocks of its allowed probability mass,
times its factor (:func:`row_probabilities`). Reading a condition reads only released values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from polars_rap.decode.decoding import numeric_series
from polars_rap.errors import ParameterError, ParameterTypeError, did_you_mean
from polars_rap.schema.domain import ColumnSpec, Domain
from polars_rap.schema.encoding import block_slices

__all__ = ["Condition", "read_condition", "row_probabilities", "condition_expression", "column_bounds", "category_series"]

Where = Mapping[str, Any] | pl.Expr | str


@dataclass(frozen=True, slots=True, eq=False)
class Condition:
    """A ``where=`` condition, read against a domain and its relaxed rows.

    ``masks`` maps a block index to float64[1 or n_relaxed, n_codes] (1: allowed code);
    ``factor`` is float64[n_relaxed] (1: the relaxed row's numeric values pass) or None;
    ``residual`` the conjuncts checked on decoded rows (multi-column, or label columns that a
    label model redraws); ``expression`` the whole condition, checked on every output row;
    ``text`` how error messages name it."""

    masks: dict[int, np.ndarray]
    factor: np.ndarray | None
    residual: tuple[pl.Expr, ...]
    expression: pl.Expr
    text: str
    columns: tuple[str, ...] = field(default=())


def read_condition(where: Where, domain: Domain, relaxed: np.ndarray, redrawn_labels: bool = False,
                   computed: Sequence[str] = (), moved_numerics: bool = False) -> Condition:
    """Read ``where`` (module docstring) against ``domain`` and ``relaxed``
    (float32[n_relaxed, n_coords]). With ``redrawn_labels`` (a public label model redraws the
    label columns after decoding) conjuncts on a label column go to the residual, as do those on
    ``computed`` columns (a constraint's relation computes them after decoding). With
    ``moved_numerics`` (decoding moves the numeric values away from the relaxed rows': the
    ``"label"`` coupling, histogram margins) a conjunct on a numeric column goes to the
    residual too, after masking a nullable column's null where the conjunct fails on a null.

    Raises :class:`~polars_rap.errors.ParameterError` naming the column for an unknown column,
    a value outside the domain, an empty range or list, or an expression that is not a row-wise
    boolean."""
    text = where if isinstance(where, str) else None
    if isinstance(where, str):
        try:
            where = pl.sql_expr(where)
        except Exception as error:  # Polars raises several types for a bad SQL string
            msg = f"The 'where' condition {text!r} is not a valid SQL expression ({error}). Write e.g. \"SEX = 2 AND AGEP >= 60\""
            raise ParameterError(msg) from error
    if isinstance(where, Mapping):
        conjuncts = [_entry_expression(name, value, domain) for name, value in where.items()]
        if not conjuncts:
            msg = "The 'where' parameter must name at least one column. Got an empty dict; pass where=None for no condition"
            raise ParameterError(msg)
        text = ", ".join(f"{name}: {value!r}" for name, value in where.items())
    elif isinstance(where, pl.Expr):
        conjuncts = _conjuncts(where)
        text = text or str(where)
    else:
        msg = ("The 'where' parameter must be a dict of column -> value, list of values or (low, high), a Polars "
               f"expression or a SQL expression string. Got {type(where).__name__}")
        raise ParameterTypeError(msg)
    masks: dict[int, np.ndarray] = {}
    factor: np.ndarray | None = None
    residual: list[pl.Expr] = []
    columns: list[str] = []
    numeric_parts: dict[str, pl.Expr] = {}
    decoded = _DecodedNumerics(domain, relaxed)
    for expression in conjuncts:
        names = list(dict.fromkeys(expression.meta.root_names()))
        _check_names(names, domain)
        if len(names) != 1 or (redrawn_labels and names[0] in domain.labels) or names[0] in computed:
            residual.append(expression)
            continue
        spec = domain[names[0]]
        columns.append(spec.name)
        if spec.is_categorical:
            mask = _evaluate(expression, category_series(spec), text)[None, :]
            _combine(masks, domain.block_index(spec.name), mask)
            continue
        passes = _evaluate(expression, decoded.series(spec), text)  # checks it is row-wise on this column
        if moved_numerics:
            residual.append(expression)
            numeric_parts[spec.name] = expression if spec.name not in numeric_parts else (
                numeric_parts[spec.name] & expression)
            if spec.nullable:
                _combine(masks, domain.block_index(spec.name, indicator=True),
                         np.array([[1.0, _null_passes(expression, spec, text)]]))
            continue
        if spec.nullable:
            mask = np.column_stack([passes, np.full(len(passes), _null_passes(expression, spec, text))])
            _combine(masks, domain.block_index(spec.name, indicator=True), mask)
        else:
            factor = passes if factor is None else factor * passes
    for name, expression in numeric_parts.items():  # a contradiction on one column: probability 0, not rejection
        spec = domain[name]
        if not (spec.nullable and _null_passes(expression, spec, text)) and not _evaluate(expression, _value_grid(spec), text).any():
            factor = np.zeros(relaxed.shape[0])
    full = conjuncts[0]
    for expression in conjuncts[1:]:
        full = full & expression
    return Condition(masks, factor, tuple(residual), full, text, tuple(dict.fromkeys(columns)))


def condition_expression(where: Where, domain: Domain) -> pl.Expr:
    """The whole condition as one Polars expression (checked on decoded rows)."""
    return read_condition(where, domain, np.zeros((1, domain.n_coords), dtype=np.float32)).expression


def row_probabilities(condition: Condition, relaxed: np.ndarray, domain: Domain) -> np.ndarray:
    """float64[n_relaxed]: each relaxed row's probability of the condition's exact part, as
    decoding draws its codes (each block's probabilities clipped at 0 and renormalised)."""
    relaxed = np.asarray(relaxed, dtype=np.float64)
    weights = np.ones(relaxed.shape[0]) if condition.factor is None else condition.factor.copy()
    slices = block_slices(domain)
    for block, mask in condition.masks.items():
        probs = np.clip(relaxed[:, slices[block]], 0.0, None)
        total = probs.sum(axis=1)
        allowed = (probs * mask).sum(axis=1)
        last = np.broadcast_to(mask[:, -1], total.shape)  # a block of zeros decodes to its last code
        weights *= np.where(total > 0, allowed / np.where(total > 0, total, 1.0), last)
    return weights


# ------------------------------------------------------------------- reading
def _entry_expression(name: Any, value: Any, domain: Domain) -> pl.Expr:
    """One dict entry as an expression over its column, after checking it against the domain."""
    if not isinstance(name, str):
        msg = f"The 'where' keys must be column names (str). Got {name!r}"
        raise ParameterTypeError(msg)
    _check_names([name], domain)
    spec = domain[name]
    column = pl.col(name)
    if isinstance(value, tuple):
        if len(value) != 2:
            msg = f"where[{name!r}]: a range must be (low, high). Got {value!r}"
            raise ParameterError(msg)
        low, high = value
        _check_range(spec, low, high)
        parts = ([] if low is None else [column >= low]) + ([] if high is None else [column <= high])
        if not parts:
            msg = f"where[{name!r}]: the range (None, None) sets no condition; give a low or a high end"
            raise ParameterError(msg)
        return parts[0] if len(parts) == 1 else parts[0] & parts[1]
    values = list(value) if isinstance(value, (list, set, frozenset)) else [value]
    if not values:
        msg = f"where[{name!r}]: the list of values is empty, so no row can satisfy it. Give at least one value"
        raise ParameterError(msg)
    present = [v for v in values if v is not None]
    _check_values(spec, values)
    expression = column.is_in(present) if present else pl.lit(False)
    return expression | column.is_null() if len(present) < len(values) else expression


def _check_names(names: Sequence[str], domain: Domain) -> None:
    unknown = [name for name in names if name not in domain.names]
    if unknown:
        suggestion = did_you_mean(unknown, domain.names)
        msg = (f"The 'where' condition names {unknown[0]!r}, which is not a column of the model{suggestion}"
               f"{' ' if suggestion else '. '}Its columns are {domain.names}")
        raise ParameterError(msg)


def _check_values(spec: ColumnSpec, values: list[Any]) -> None:
    """Every value of a list must be in the column's domain (a category, a null where declared,
    a number inside the bounds)."""
    if any(v is None for v in values) and not spec.nullable:
        msg = f"where[{spec.name!r}]: the column is declared without nulls, so None never occurs. Remove None"
        raise ParameterError(msg)
    present = [v for v in values if v is not None]
    if spec.is_categorical:
        outside = [v for v in present if not any(_same(v, c) for c in spec.categories)]
        if outside:
            msg = (f"where[{spec.name!r}]: {outside[:5]} not among the column's categories {list(spec.categories)[:20]}; "
                   "use one of them")
            raise ParameterError(msg)
        return
    lower, upper = column_bounds(spec)
    for v in present:
        if not _compare(spec, lambda: lower <= v <= upper):
            msg = f"where[{spec.name!r}]: {v!r} is outside the column's bounds [{lower}, {upper}]; use a value inside"
            raise ParameterError(msg)


def _check_range(spec: ColumnSpec, low: Any, high: Any) -> None:
    if low is not None and high is not None and _compare(spec, lambda: low > high):
        msg = f"where[{spec.name!r}]: the range ({low!r}, {high!r}) is empty (low > high). Give (low, high) with low <= high"
        raise ParameterError(msg)
    if spec.is_categorical:
        inside = [c for c in spec.categories
                  if _compare(spec, lambda c=c: (low is None or c >= low) and (high is None or c <= high))]
        if not inside:
            msg = (f"where[{spec.name!r}]: no category of the column lies in ({low!r}, {high!r}); its categories are "
                   f"{list(spec.categories)[:20]}")
            raise ParameterError(msg)
        return
    lower, upper = column_bounds(spec)
    if _compare(spec, lambda: (low is not None and low > upper) or (high is not None and high < lower)):
        msg = (f"where[{spec.name!r}]: the range ({low!r}, {high!r}) lies outside the column's bounds "
               f"[{lower}, {upper}]; give a range that meets them")
        raise ParameterError(msg)


def _compare(spec: ColumnSpec, test) -> bool:
    try:
        return bool(test())
    except TypeError as error:
        msg = f"where[{spec.name!r}]: a value does not compare with the column's values ({spec.dtype}): {error}"
        raise ParameterTypeError(msg) from error


def _same(value: Any, category: Any) -> bool:
    return type(value) is type(category) and value == category or (
        isinstance(value, (int, float)) and isinstance(category, (int, float))
        and not isinstance(value, bool) and not isinstance(category, bool) and value == category)


def column_bounds(spec: ColumnSpec) -> tuple[Any, Any]:
    """The column's lowest and highest decoded values, as Python values of its dtype."""
    values = numeric_series(np.array([0.0, 1.0]), spec).cast(spec.dtype).to_list()
    return values[0], values[1]


def _conjuncts(expression: pl.Expr) -> list[pl.Expr]:
    """The top-level ``&`` operands of ``expression`` (itself when it is no ``&``)."""
    try:
        tree = json.loads(expression.meta.serialize(format="json"))
    except Exception:  # an expression Polars cannot serialise (e.g. a Python function) is one conjunct
        return [expression]
    node = tree.get("BinaryExpr") if isinstance(tree, dict) else None
    if not isinstance(node, dict) or node.get("op") not in ("And", "LogicalAnd"):
        return [expression]
    right, left = expression.meta.pop()
    return _conjuncts(left) + _conjuncts(right)


def category_series(spec: ColumnSpec) -> pl.Series:
    """The column's codes' values, in code order (the null last where declared), in its dtype."""
    categories = list(spec.categories) + ([None] if spec.nullable else [])
    lookup = pl.String if isinstance(spec.dtype, (pl.Enum, pl.Categorical)) else spec.dtype
    return pl.Series(spec.name, categories, dtype=lookup).cast(spec.dtype)


def _evaluate(expression: pl.Expr, series: pl.Series, text: str) -> np.ndarray:
    """float64[len(series)] 0/1: whether each value passes ``expression`` (a null result fails).
    An expression whose answer on the first half of the values, or on the smallest or the largest
    value alone, differs from its answer on all of them reads more than its own row (an
    aggregation such as ``mean()``) and is refused."""
    try:
        result = pl.DataFrame([series]).select(expression.alias("passes")).to_series()
        if len(series) > 1 and len(result) == len(series) and result.dtype == pl.Boolean:
            order = series.arg_sort(nulls_last=True)
            for rows in (np.arange(len(series) // 2), order[:1].to_numpy(), order[-1:].to_numpy()):
                part = pl.DataFrame([series.gather(rows)]).select(expression.alias("passes")).to_series()
                if not part.equals(result.gather(rows)):
                    result = result.head(1)  # not row-wise: refused below
                    break
    except pl.exceptions.PolarsError as error:
        msg = f"The 'where' condition {text!r} cannot be evaluated on column {series.name!r} ({series.dtype}): {error}"
        raise ParameterError(msg) from error
    if result.dtype != pl.Boolean or (len(result) != len(series) and len(series) > 1):
        msg = (f"The 'where' condition {text!r} must be a row-wise boolean expression; on column {series.name!r} it "
               f"gives {len(result)} value(s) of {result.dtype} for {len(series)} rows")
        raise ParameterError(msg)
    passes = result.fill_null(False).to_numpy().astype(np.float64)
    return np.broadcast_to(passes, (len(series),)).copy()


def _null_passes(expression: pl.Expr, spec: ColumnSpec, text: str) -> float:
    """1.0 where ``expression`` holds on a null of column ``spec``, else 0.0."""
    return _evaluate(expression, pl.Series(spec.name, [None], dtype=spec.dtype), text)[0]


def _combine(masks: dict[int, np.ndarray], block: int, mask: np.ndarray) -> None:
    masks[block] = mask if block not in masks else masks[block] * mask


VALUE_GRID = 65_537
"""Decoded values a numeric column's conditions are tried on (the mapped range's equal steps, so
every whole value of an integer column up to 65,536 values wide) where decoding moves the values."""


def _value_grid(spec: ColumnSpec) -> pl.Series:
    """The column's decoded values at :data:`VALUE_GRID` equal steps of its mapped range."""
    return numeric_series(np.linspace(0.0, 1.0, VALUE_GRID), spec).cast(spec.dtype)


class _DecodedNumerics:
    """Each relaxed row's decoded value of a numeric column (as decoding outputs it, before
    histogram margins), built once per column."""

    def __init__(self, domain: Domain, relaxed: np.ndarray) -> None:
        self._numerics = np.clip(np.asarray(relaxed, dtype=np.float64)[:, domain.n_categorical_coords:], 0.0, 1.0)
        self._index = {spec.name: j for j, spec in enumerate(domain.numeric_columns)}

    def series(self, spec: ColumnSpec) -> pl.Series:
        return numeric_series(self._numerics[:, self._index[spec.name]], spec).cast(spec.dtype)
