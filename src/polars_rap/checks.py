"""Checks of keyword parameters shared by every layer, before any work starts.

Each refusal is a :class:`~polars_rap.errors.ParameterError` (a value out of range) or a
:class:`~polars_rap.errors.ParameterTypeError` (a value of the wrong type: ``"1"`` for a number,
``True`` or ``2.0`` for a count; also a ``TypeError``) whose message names the parameter, the
rule and the value, as scikit-learn's do: "The 'rows' parameter must be an int in [1, inf).
Got 0".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from polars_rap.errors import ParameterError, ParameterTypeError

__all__ = ["check_int", "check_positive_finite", "check_range", "check_share"]

MAX_INT = 2**62
"""Largest count a parameter may take: far beyond any feasible run, and within int64."""


def _refuse(name: str, rule: str, value: Any, right_type: bool) -> None:
    """Raise the refusal of ``value``: a :class:`ParameterTypeError` (also a ``TypeError``) when
    its type is wrong (a string for a number, a bool for a count), else a
    :class:`ParameterError`."""
    msg = f"The {name!r} parameter must be {rule}. Got {value!r}"
    if not right_type:
        msg += f" of type {type(value).__name__}"
        raise ParameterTypeError(msg)
    raise ParameterError(msg)


def _real(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))


def check_positive_finite(name: str, value: Any) -> None:
    if not _real(value) or not (math.isfinite(value) and value > 0):
        _refuse(name, "a finite float > 0", value, _real(value))


def check_int(name: str, value: Any, low: int) -> None:
    whole = not isinstance(value, bool) and isinstance(value, (int, np.integer))
    if not whole or value < low:
        _refuse(name, f"an int in [{low}, inf)", value, whole)
    if value > MAX_INT:
        msg = f"The {name!r} parameter must be at most 2**62. Got {value!r}"
        raise ParameterError(msg)


def check_range(name: str, value: Any, low: float, high: float, *, include_low: bool = False,
                include_high: bool = False, note: str = "") -> None:
    """A real number (not a bool, not NaN) in the interval from ``low`` to ``high``, each end
    open unless included; ``note`` follows the interval in the message."""
    real = _real(value)
    if not real or not ((low <= value if include_low else low < value)
                        and (value <= high if include_high else value < high)):
        interval = f"{'[' if include_low else '('}{low:g}, {high:g}{']' if include_high else ')'}"
        _refuse(name, f"a float in {interval}{note}", value, real)


def check_share(name: str, value: Any) -> None:
    """A number in the open interval (0, 1)."""
    check_range(name, value, 0.0, 1.0)
