"""The shape of a numeric column's real values, and the declarations it suggests.

``polars-rap init`` writes a config from the schema alone, so it cannot tell a float column of
counts (whole numbers, to be declared ``integer``) or a skewed one (to be declared on a
``"log"`` scale) from any other. The quality report reads the real rows anyway (it is not
private, :mod:`polars_rap.quality.report`), so it can: :class:`ValueShape` follows a numeric
column's values batch by batch in the report's one pass, and :func:`declaration_hints` turns
what it saw into :class:`DeclarationHint` records, which the report and ``polars-rap
evaluate`` show to the curator. They name no value of the data (only a skewness and a
fraction), and they are never part of a release.

A hint is given for a numeric column that is not temporal and

- **integer**: is not integer already (neither declared so nor of an integer dtype) and
  every one of its non-null real values, clipped to its bounds, is a whole number;
- **scale = "log"**: is on the linear scale, has at least :data:`MIN_SKEW_VALUES` non-null
  values, their sample skewness exceeds :data:`LOG_SKEWNESS` and more than half of them lie
  in the lowest tenth of its bounds (:data:`LOW_TENTH`). See :func:`suggests_log` for why.

>>> shape = ValueShape(0.0, 100.0)
>>> shape.add(np.array([0.0, 1.0, 1.0, 2.0, 90.0]))
>>> shape.all_whole, round(shape.skewness, 3), shape.low_fraction
(True, 1.499, 0.8)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["DeclarationHint", "ValueShape", "declaration_hints", "suggests_log"]

LOG_SKEWNESS = 2.0
"""Sample skewness above which a column is strongly right-skewed: an exponential
distribution's skewness is exactly 2, so this asks for a tail heavier than exponential
(a log-normal one with σ = 1 has 6.2, a uniform one 0)."""
LOW_TENTH = 0.1
"""The fraction of the bounds, from the lower one, in which more than half the values must lie."""
MIN_SKEW_VALUES = 30
"""Fewest non-null values whose skewness the report trusts (a small sample's swings widely)."""


class ValueShape:
    """One numeric column's values, added batch by batch: whether all are whole numbers, how
    many lie in the lowest tenth of ``[lower, upper]``, and the count, mean and sums of
    squared and cubed deviations of their fraction of the bounds, merged batch by batch with
    the pairwise update of Chan et al. (1979) and Pébay (2008), which stays exact where sums of
    raw powers cancel.

    Parameters
    ----------
    lower, upper : float
        The column's bounds in its internal units; values are already clipped to them.
    """

    __slots__ = ("lower", "width", "all_whole", "n_values", "n_low", "mean", "m2", "m3")

    def __init__(self, lower: float, upper: float) -> None:
        self.lower, self.width = float(lower), float(upper) - float(lower)
        self.all_whole = True
        self.n_values = self.n_low = 0
        self.mean = self.m2 = self.m3 = 0.0

    def add(self, values: np.ndarray) -> None:
        """Count ``values`` (float64[n], no NaN, inside the bounds)."""
        if values.size == 0:
            return
        self.all_whole = self.all_whole and bool(np.all(values == np.floor(values)))
        fractions = (values - self.lower) / self.width if self.width > 0 else np.zeros(values.size)
        self.n_low += int(np.count_nonzero(fractions < LOW_TENTH))
        n_b, mean_b = fractions.size, float(fractions.mean())
        deviations = fractions - mean_b
        m2_b, m3_b = float(deviations @ deviations), float((deviations * deviations) @ deviations)
        n_a, n = self.n_values, self.n_values + n_b
        delta = mean_b - self.mean
        self.m3 += (m3_b + delta ** 3 * n_a * n_b * (n_a - n_b) / n ** 2
                    + 3.0 * delta * (n_a * m2_b - n_b * self.m2) / n)
        self.m2 += m2_b + delta * delta * n_a * n_b / n
        self.mean += delta * n_b / n
        self.n_values = n

    @property
    def skewness(self) -> float:
        """The sample skewness ``m3 / m2**1.5`` (moments about the mean); 0 for a constant column."""
        if self.m2 <= 1e-12 * self.n_values:  # fractions of the bounds: a constant column
            return 0.0
        return (self.m3 / self.n_values) / (self.m2 / self.n_values) ** 1.5

    @property
    def low_fraction(self) -> float:
        """The fraction of values in the lowest tenth of the bounds (0 without values)."""
        return self.n_low / self.n_values if self.n_values else 0.0


def suggests_log(shape: ValueShape) -> bool:
    """Whether a linear-scale column with this shape would be better declared ``scale = "log"``.

    Both conditions are needed. The library's log scale maps a value's fraction ``t`` of the
    bounds to ``log1p(1000 t) / log1p(1000)`` (:mod:`polars_rap.schema.transforms`), which
    gives the lowest tenth of the bounds two thirds of the thresholds against a tenth on the
    linear scale: it pays when more than half the values lie there. A column can crowd its
    lowest tenth only because its bounds are loose (an age declared in [0, 1000]), which a
    log scale would not mend; the skewness above :data:`LOG_SKEWNESS` asks, besides, for a long
    right tail, as incomes and prices have. The log scale is taken from the lower bound, so
    no sign condition is needed.
    """
    return (shape.n_values >= MIN_SKEW_VALUES and shape.low_fraction > 0.5
            and shape.skewness > LOG_SKEWNESS)


@dataclass(frozen=True, slots=True)
class DeclarationHint:
    """A domain key the real rows suggest for a column: ``key`` (``"integer"`` or ``"scale"``)
    set to ``value`` (``True`` or ``"log"``), because of ``reason`` (a clause naming the column).
    ``str()`` spells the fix as a ``domain=`` entry (:attr:`python_fix`); ``polars-rap
    evaluate`` prints ``text(config_fix)``.

    >>> hint = DeclarationHint("childs", "integer", True, "every real value of 'childs' is whole",
    ...                        "declare it integer")
    >>> hint.text(hint.config_fix)
    "every real value of 'childs' is whole: declare it integer (integer = true in [domain.childs])"
    >>> str(hint)
    "every real value of 'childs' is whole: declare it integer ('integer': True in its domain= entry)"
    """

    column: str
    key: str
    value: bool | str
    reason: str
    advice: str

    def text(self, fix: str) -> str:
        """The hint with ``fix``, the key's spelling, in brackets."""
        return f"{self.reason}: {self.advice} ({fix})"

    @property
    def python_fix(self) -> str:
        """The key as a ``domain=`` entry spells it: ``'integer': True in its domain= entry``."""
        return f"{self.key!r}: {self.value!r} in its domain= entry"

    @property
    def config_fix(self) -> str:
        """The key as a config file spells it: ``integer = true in [domain.childs]`` (JSON's
        literals of a bool and a string are TOML's; a name other than letters, digits, ``_``
        and ``-`` is quoted, as :func:`polars_rap.cli.config.toml_key` does)."""
        table = self.column if re.fullmatch(r"[A-Za-z0-9_-]+", self.column) else json.dumps(self.column)
        return f"{self.key} = {json.dumps(self.value)} in [domain.{table}]"

    def __str__(self) -> str:
        return self.text(self.python_fix)


def declaration_hints(domain, shapes: dict[str, ValueShape]) -> tuple[DeclarationHint, ...]:
    """The hints for ``domain``'s numeric columns from their real values' ``shapes`` (see the
    module docstring), in column order, the integer hint before the scale one."""
    hints = []
    for spec in domain.numeric_columns:
        shape = shapes[spec.name]
        if spec.is_temporal or shape.n_values == 0:
            continue
        if not spec.is_integer and shape.all_whole:
            hints.append(DeclarationHint(spec.name, "integer", True, f"every real value of {spec.name!r} is whole",
                                         "declare it integer"))
        if spec.scale == "linear" and suggests_log(shape):
            reason = (f"the real values of {spec.name!r} are strongly right-skewed (skewness "
                      f"{shape.skewness:.1f}, {shape.low_fraction:.0%} of them in the lowest tenth of its bounds)")
            hints.append(DeclarationHint(spec.name, "scale", "log", reason, "declare a log scale"))
    return tuple(hints)
