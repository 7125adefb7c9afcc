"""The checks of :class:`~polars_rap.fit.planned_strategy.PlannedStrategy`'s settings: each bad
setting refused by name with what it accepts (a :class:`~polars_rap.errors.ParameterError`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from polars_rap.errors import ParameterError
from polars_rap.fit.plan_steps import CLASSES

__all__ = ["check_planned_settings"]


def _check_share_below_one(name: str, value) -> None:
    """A part of the loop's budget: a number in ``[0, 1)``, else a :class:`ParameterError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        msg = f"{name} must be a number in [0, 1). Got {value!r}"
        raise ParameterError(msg)


def check_planned_settings(strategy) -> None:
    """Raise a ParameterError naming the first bad setting of ``strategy`` (a
    :class:`~polars_rap.fit.planned_strategy.PlannedStrategy`)."""
    if isinstance(strategy.class_shares, str) and strategy.class_shares != "rounds":
        msg = f"class_shares must be a mapping, 'rounds' or None. Got {strategy.class_shares!r}"
        raise ParameterError(msg)
    if isinstance(strategy.class_shares, Mapping):
        for key, value in strategy.class_shares.items():
            if key not in CLASSES:
                msg = f"class_shares has an unknown query class {key!r}; choose from {CLASSES}"
                raise ParameterError(msg)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    math.isfinite(value) and value > 0):
                msg = f"class_shares[{key!r}] must be a finite number > 0. Got {value!r}"
                raise ParameterError(msg)
    for name in ("base_share", "histogram_share", "tie_share", "rank_share"):  # parts of the loop's budget taken first
        _check_share_below_one(name, getattr(strategy, name))
    if isinstance(strategy.selection_share, bool) or not isinstance(strategy.selection_share, (int, float)) or not (
            0.0 < strategy.selection_share < 1.0):
        msg = f"selection_share must be a number in (0, 1). Got {strategy.selection_share!r}"
        raise ParameterError(msg)
    if not (isinstance(strategy.independence_prior, bool) or strategy.independence_prior == "mediated"):
        msg = f"independence_prior must be True, False or 'mediated'. Got {strategy.independence_prior!r}"
        raise ParameterError(msg)
    reserve = strategy.cm_margin_reserve
    if isinstance(reserve, bool) or not isinstance(reserve, (int, float)) or not 0.0 <= reserve < 1.0:
        msg = f"cm_margin_reserve must be a number in [0, 1) (0: none kept). Got {reserve!r}"
        raise ParameterError(msg)
    check_numeric_coupling(strategy.numeric_coupling)
    if strategy.decoding not in ("controlled", "independent"):
        msg = f"decoding must be 'controlled' or 'independent'. Got {strategy.decoding!r}"
        raise ParameterError(msg)


NUMERIC_COUPLINGS = ("fitted", "label")


def check_numeric_coupling(value: object) -> str:
    """``value`` if it is one of :data:`NUMERIC_COUPLINGS`, else a :class:`ParameterError`."""
    if value not in NUMERIC_COUPLINGS:
        msg = f"numeric_coupling must be one of {', '.join(repr(c) for c in NUMERIC_COUPLINGS)}. Got {value!r}"
        raise ParameterError(msg)
    return str(value)
