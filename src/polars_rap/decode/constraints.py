"""Declared constraints: public rules that every output row satisfies, enforced at decoding.

A rule is a row-wise boolean Polars expression over the columns, or the same as a SQL
expression string (:func:`polars.sql_expr`): ``"start_date <= end_date"``, ``"NOT (AGEP < 15
AND MAR = 1)"``, ``"COW IN (1, 2) OR WKHP IS NULL"``. Rules come as one rule, a list, or a dict
``{name: rule}`` (a config file's ``[constraints]`` table); a rule's name is its text otherwise.
Two kinds:

- a **relation** ``column = expression``, a bare column on the left and an expression over
  other columns on the right (``"total = wages + other"``), is enforced by *repair*: after
  decoding, the column is computed from the others (cast to its dtype, integers rounded), in
  the order the relations are given. A row whose computed value falls outside the column's
  public domain (outside its bounds, not one of its categories, a null where it has none) is
  redrawn;
- every other rule is enforced by *redrawing*: a decoded row that breaks it is replaced, in
  place, by one drawn from the same model that keeps it, in rounds, until every row passes.
  The rows returned are the model's rows conditioned on the rules (rejection sampling); rows
  that keep the rules come out as decoded.

A rule holds on a row where it is true or null (an operand null), as a SQL ``CHECK`` does:
``"start <= end"`` lets a row without an end through; write ``"end IS NOT NULL AND start <=
end"`` to require one.

Rules are public, like the domain: they are declared, never read from the data, and checked
against the domain alone before any row is read (:func:`read_constraints`: the names, that a
rule is a row-wise boolean, and that some value of the domain keeps it). They act on released
values only, so they cost no privacy budget, and they do not enter the fit: the model measures
and fits the data as it is, and the rules condition its rows. A rule the real rows often break
(the quality report counts them) conditions the model on a region it fits less well; one the
model gives almost no probability is refused at decoding with that probability.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from polars_rap.decode.conditions import category_series, column_bounds
from polars_rap.decode.decoding import numeric_series
from polars_rap.errors import ParameterError, ParameterTypeError, did_you_mean
from polars_rap.schema.domain import ColumnSpec, Domain

__all__ = ["Constraint", "Constraints", "read_constraints", "MIN_ACCEPTANCE", "PROBE_ROWS"]

Rules = str | pl.Expr | Sequence[str | pl.Expr] | Mapping[str, str | pl.Expr]

MIN_ACCEPTANCE = 1e-3
"""Decoding refuses rules that fewer decoded rows keep than this (after :data:`_EVIDENCE`
draws), stating the share: the model gives them (almost) no probability."""

PROBE_ROWS = 100_000
"""Rows drawn uniformly from the public domain to check that a rule can hold at all."""

_EVIDENCE = 10_000
_MAX_ROUND_ROWS = 2_000_000
_MAX_ROUNDS = 50


@dataclass(frozen=True, slots=True, eq=False)
class Constraint:
    """One rule: its ``name``, its ``text`` (the SQL given, or the expression's ``str``),
    ``expression`` (a boolean ``pl.Expr``) and, for a relation, the ``target`` column and the
    ``value`` expression computed into it (both None otherwise)."""

    name: str
    text: str
    expression: pl.Expr
    target: str | None = None
    value: pl.Expr | None = None
    sql: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the name, the SQL text (stable across Polars versions) or the
        expression serialised by Polars."""
        return {"name": self.name, "sql": self.text if self.sql else None,
                "expression": None if self.sql else self.expression.meta.serialize(format="json")}


@dataclass(frozen=True, slots=True, eq=False)
class Constraints:
    """The rules of one model, checked against its domain (:func:`read_constraints`)."""

    rules: tuple[Constraint, ...]

    @property
    def relations(self) -> tuple[Constraint, ...]:
        return tuple(rule for rule in self.rules if rule.target is not None)

    @property
    def targets(self) -> tuple[str, ...]:
        """The columns relations compute (a ``where`` condition on them is checked after repair)."""
        return tuple(dict.fromkeys(rule.target for rule in self.relations if rule.target is not None))

    def describe(self) -> list[dict[str, str]]:
        """``[{"name", "rule", "enforced_by"}]``: what the report and the model's manifest list."""
        return [{"name": r.name, "rule": r.text, "enforced_by": "repair" if r.target else "redraw"} for r in self.rules]

    def repair(self, frame: pl.DataFrame, domain: Domain) -> pl.DataFrame:
        """``frame`` with each relation's target computed from its value expression, in order."""
        for rule in self.relations:
            frame = frame.with_columns(_computed(rule, domain).alias(rule.target))
        return frame

    def broken(self, frame: pl.DataFrame, domain: Domain) -> list[int]:
        """Per rule, the rows of ``frame`` (as given, not repaired) that break it: a rule false
        (not null), or a relation's column differing from the value computed from the others.
        The quality report counts them on the real rows and on the synthetic ones."""
        tests = [pl.col(rule.target).ne_missing(_computed(rule, domain)) if rule.target
                 else rule.expression.not_().fill_null(False) for rule in self.rules]
        counts = frame.select([test.cast(pl.Int64).sum().alias(str(i)) for i, test in enumerate(tests)])
        return [int(value) for value in counts.row(0)]

    def passes(self, frame: pl.DataFrame, domain: Domain) -> np.ndarray:
        """bool[frame.height]: whether each (repaired) row keeps every rule: a redraw rule true
        or null, a relation's target inside its column's domain."""
        tests = [rule.expression.fill_null(True) for rule in self.rules if rule.target is None]
        tests += [_inside_domain(domain[target]) for target in self.targets]
        return frame.select(pl.all_horizontal(tests).alias("passes")).to_series().to_numpy().astype(bool)

    def enforce(self, frame: pl.DataFrame, domain: Domain, redraw: Callable[[int], pl.DataFrame]) -> pl.DataFrame:
        """``frame`` (decoded rows) repaired, and each row that still breaks a rule replaced in
        place by a row of ``redraw(n)`` (``n`` more decoded rows from the same model) that keeps
        them, in rounds. Raises :class:`~polars_rap.errors.ParameterError` when fewer than
        :data:`MIN_ACCEPTANCE` of the rows drawn keep the rules, or when the rows would take
        more than ``20 * rows + 10**6`` draws, stating the share that kept them."""
        frame = self.repair(frame, domain)
        keeps = self.passes(frame, domain)
        failing = np.flatnonzero(~keeps)
        if not len(failing):
            return frame
        drawn, kept = frame.height, frame.height - len(failing)
        replacements: list[pl.DataFrame] = []
        found = 0
        for _ in range(_MAX_ROUNDS):
            acceptance = kept / drawn
            needed = len(failing) - found
            if (drawn >= _EVIDENCE and acceptance < MIN_ACCEPTANCE) or drawn + needed / max(
                    acceptance, 1.0 / drawn) > 20 * frame.height + 1_000_000:
                break
            proposal = min(_MAX_ROUND_ROWS, max(1_000, math.ceil(1.2 * needed / max(acceptance, 1.0 / drawn))))
            extra = self.repair(redraw(proposal), domain)
            passing = extra.filter(pl.Series(self.passes(extra, domain)))
            drawn, kept = drawn + proposal, kept + passing.height
            replacements.append(passing.head(needed))
            found += min(passing.height, needed)
            if found == len(failing):
                order = np.arange(frame.height)
                order[failing] = frame.height + np.arange(len(failing))
                return pl.concat([frame, *replacements]).select(pl.all().gather(order))
        self._refuse(kept, drawn, frame.height)
        raise AssertionError("unreachable")  # pragma: no cover

    def _refuse(self, kept: int, drawn: int, rows: int) -> None:
        names = ", ".join(repr(rule.name) for rule in self.rules)
        draws = f"about {rows * drawn / kept:.3g}" if kept else f"more than {drawn:,}"
        msg = (f"The constraints ({names}) are kept by {kept} of {drawn} rows drawn from the model (share "
               f"{kept / drawn:.3g}); {rows} rows would take {draws} "
               "draws. The model gives these rules (almost) no probability: check that they hold on the real rows "
               "(polars-rap evaluate counts the rows that break them), widen them, or state an exact relation as "
               "'column = expression' so that it is computed rather than drawn")
        raise ParameterError(msg)

    def to_json(self) -> bytes:
        return (json.dumps([rule.to_dict() for rule in self.rules], indent=2) + "\n").encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes, domain: Domain) -> Constraints:
        """The rules :meth:`to_json` wrote, checked again against ``domain``."""
        entries = json.loads(data)
        rules: dict[str, str | pl.Expr] = {}
        for entry in entries:
            if entry.get("sql") is not None:
                rules[entry["name"]] = entry["sql"]
            else:
                rules[entry["name"]] = pl.Expr.deserialize(io.StringIO(entry["expression"]), format="json")
        constraints = read_constraints(rules, domain)
        assert constraints is not None
        return constraints


def read_constraints(given: Rules | None, domain: Domain) -> Constraints | None:
    """The rules ``given`` (module docstring) checked against ``domain`` (public values only,
    before any row is read); None for None or an empty list.

    Raises :class:`~polars_rap.errors.ParameterError`, naming the rule, for a SQL string that
    does not parse, an unknown column (with a suggestion), an expression that is not a row-wise
    boolean, two relations computing one column, or a rule that no value of the domain keeps
    (a single-column rule checked on every category, or on a grid of the column's bounds; a
    rule over several columns on :data:`PROBE_ROWS` rows drawn uniformly from the domain);
    :class:`~polars_rap.errors.ParameterTypeError` for a rule of the wrong type."""
    if given is None:
        return None
    if isinstance(given, (str, pl.Expr)):
        items: list[tuple[str | None, Any]] = [(None, given)]
    elif isinstance(given, Mapping):
        items = list(given.items())
    elif isinstance(given, Sequence):
        items = [(None, rule) for rule in given]
    else:
        msg = ("The 'constraints' parameter must be a rule (a SQL string or a Polars expression), a list of rules "
               f"or a dict of name -> rule. Got {type(given).__name__}")
        raise ParameterTypeError(msg)
    rules = tuple(_read_rule(name, rule, domain) for name, rule in items)
    if not rules:
        return None
    names = [rule.name for rule in rules]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        msg = f"The constraints name {twice[0]!r} twice; give each rule its own name"
        raise ParameterError(msg)
    targets = [rule.target for rule in rules if rule.target is not None]
    computed_twice = sorted({t for t in targets if targets.count(t) > 1})
    if computed_twice:
        msg = (f"Two relations compute column {computed_twice[0]!r}; keep one 'column = expression' per column "
               "(write the other as a comparison, e.g. with <=, to have it checked instead)")
        raise ParameterError(msg)
    constraints = Constraints(rules)
    _check_feasible(constraints, domain)
    return constraints


def _read_rule(name: Any, rule: Any, domain: Domain) -> Constraint:
    if name is not None and not isinstance(name, str):
        msg = f"The constraints' names must be strings. Got {name!r}"
        raise ParameterTypeError(msg)
    sql = isinstance(rule, str)
    if sql:
        text = rule
        try:
            expression = pl.sql_expr(rule)
        except Exception as error:  # Polars raises several types for a bad SQL string
            msg = (f"The constraint {name or rule!r} is not a valid SQL expression ({error}). Write e.g. "
                   "\"start_date <= end_date\" or \"total = wages + other\"")
            raise ParameterError(msg) from error
    elif isinstance(rule, pl.Expr):
        expression, text = rule, str(rule)
    else:
        msg = f"A constraint must be a SQL string or a Polars expression. Got {type(rule).__name__} ({rule!r})"
        raise ParameterTypeError(msg)
    label = name or text
    columns = list(dict.fromkeys(expression.meta.root_names()))
    if not columns:
        msg = f"The constraint {label!r} reads no column; a rule compares columns, e.g. \"start_date <= end_date\""
        raise ParameterError(msg)
    unknown = [column for column in columns if column not in domain.names]
    if unknown:
        suggestion = did_you_mean(unknown, domain.names)
        msg = (f"The constraint {label!r} names {unknown[0]!r}, which is not a column of the table{suggestion}"
               f"{' ' if suggestion else '. '}Its columns are {domain.names}")
        raise ParameterError(msg)
    target, value = _relation(expression)
    return Constraint(label, text, expression, target, value, sql)


def _relation(expression: pl.Expr) -> tuple[str | None, pl.Expr | None]:
    """(target, value) when ``expression`` is ``col(target) == value`` with ``value`` reading
    at least one other column and not ``target``; (None, None) otherwise."""
    try:
        tree = json.loads(expression.meta.serialize(format="json"))
    except Exception:  # an expression Polars cannot serialise (a Python function) is a plain rule
        return None, None
    node = tree.get("BinaryExpr") if isinstance(tree, dict) else None
    if not isinstance(node, dict) or node.get("op") != "Eq" or not isinstance(node.get("left"), dict):
        return None, None
    target = node["left"].get("Column")
    right, _ = expression.meta.pop()
    reads = right.meta.root_names()
    if not isinstance(target, str) or not reads or target in reads:
        return None, None
    return target, right


def _computed(rule: Constraint, domain: Domain) -> pl.Expr:
    """A relation's value, cast to its target column's dtype (integers rounded; a value the
    dtype cannot hold is a null)."""
    spec = domain[rule.target]
    value = rule.value
    if spec.is_integer and not spec.is_categorical:
        value = value.round(0)
    return value.cast(spec.dtype, strict=False)


def _inside_domain(spec: ColumnSpec) -> pl.Expr:
    """Whether a computed column's value lies in its domain (a null only where it has nulls)."""
    column = pl.col(spec.name)
    if spec.is_categorical:
        inside = column.is_in(category_series(spec).drop_nulls().implode())
    else:
        lower, upper = column_bounds(spec)
        inside = column.is_between(pl.lit(lower, dtype=spec.dtype), pl.lit(upper, dtype=spec.dtype))
    return inside.fill_null(spec.nullable)


def _check_feasible(constraints: Constraints, domain: Domain) -> None:
    """Refuse a rule that no value of the domain keeps (:func:`read_constraints`)."""
    probe = _probe(domain)
    for rule in constraints.rules:
        frame = Constraints((rule,)).repair(probe, domain) if rule.target else probe
        try:
            result = frame.select(rule.expression.alias("holds")).to_series()
            half = frame.head(PROBE_ROWS // 2).select(rule.expression.alias("holds")).to_series()
        except pl.exceptions.PolarsError as error:
            msg = f"The constraint {rule.name!r} cannot be evaluated on the table's columns: {error}"
            raise ParameterError(msg) from error
        if result.dtype != pl.Boolean:
            msg = (f"The constraint {rule.name!r} must be a boolean expression (a comparison, IN, IS NULL, ...); "
                   f"it gives values of {result.dtype}")
            raise ParameterError(msg)
        if len(result) != frame.height or not half.equals(result.head(len(half))):
            msg = (f"The constraint {rule.name!r} must be row-wise: its truth on a row may read that row only, not an "
                   "aggregate over the rows such as mean() or max()")
            raise ParameterError(msg)
        keeps = Constraints((rule,)).passes(frame, domain)
        if not keeps.any():
            columns = list(dict.fromkeys(rule.expression.meta.root_names()))
            where = (f"no value of column {columns[0]!r} in its domain" if len(columns) == 1 else
                     f"none of {frame.height:,} rows drawn uniformly from the columns' domains {columns}")
            msg = (f"The constraint {rule.name!r} cannot hold: {where} keeps it. Check it against the domain "
                   "(bounds and categories) and the other rules")
            raise ParameterError(msg)


def _probe(domain: Domain) -> pl.DataFrame:
    """:data:`PROBE_ROWS` rows of public values: each categorical column its categories (and
    null) in turn, each numeric column its bounds, then a grid of them, then uniform draws of
    its unit coordinate (a null in every tenth row where it has nulls), columns drawn
    independently (a fixed seed: only the domain is read)."""
    rng = np.random.default_rng(0)
    columns = []
    for spec in domain.columns:
        if spec.is_categorical:
            values = category_series(spec)
            codes = np.concatenate([np.arange(len(values)), rng.integers(len(values), size=PROBE_ROWS)])[:PROBE_ROWS]
            series = values.gather(pl.Series(codes))
        else:
            unit = np.concatenate([[0.0, 1.0], np.linspace(0.0, 1.0, 1_001), rng.random(PROBE_ROWS)])[:PROBE_ROWS]
            series = numeric_series(unit, spec).cast(spec.dtype)
            if spec.nullable:
                series = pl.select(pl.when(pl.Series(np.arange(PROBE_ROWS) % 10 == 9)).then(None)
                                   .otherwise(series).alias(spec.name)).to_series()
        columns.append(series.rename(spec.name))
    return pl.DataFrame(columns)
