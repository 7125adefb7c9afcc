"""The checks of :class:`~polars_rap.fit.planned_strategy.PlannedStrategy`'s settings: each bad
setting refused by name with what it accepts (a :class:`~polars_rap.errors.ParameterError`)."""

from __future__ import annotations

import math

import numpy as np
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
    :class:`~polars_rap.fit.planned_strategy.PlannedStrategy`); normalise ``histogram_match``
    as :func:`check_histogram_match` does, and the ties' settings as their checks do (frozen
    fields, set in place)."""
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
    if isinstance(strategy.size_exponent, bool) or not isinstance(strategy.size_exponent, (int, float)) or not (
            0.0 <= strategy.size_exponent <= 2.0):
        msg = f"size_exponent must be a number in [0, 2]. Got {strategy.size_exponent!r}"
        raise ParameterError(msg)
    for name in ("base_share", "histogram_share", "tie_share"):  # parts of the loop's budget taken first
        _check_share_below_one(name, getattr(strategy, name))
    if isinstance(strategy.selection_share, bool) or not isinstance(strategy.selection_share, (int, float)) or not (
            0.0 < strategy.selection_share < 1.0):
        msg = f"selection_share must be a number in (0, 1). Got {strategy.selection_share!r}"
        raise ParameterError(msg)
    if not (isinstance(strategy.independence_prior, bool) or strategy.independence_prior == "mediated"):
        msg = f"independence_prior must be True, False or 'mediated'. Got {strategy.independence_prior!r}"
        raise ParameterError(msg)
    if strategy.mediator_gate is not None and (
            isinstance(strategy.mediator_gate, bool) or not isinstance(strategy.mediator_gate, (int, float))
            or not math.isfinite(strategy.mediator_gate) or strategy.mediator_gate < 0.0):
        msg = f"mediator_gate must be a number >= 0 or None (no gate). Got {strategy.mediator_gate!r}"
        raise ParameterError(msg)
    reserve = strategy.cm_margin_reserve
    if isinstance(reserve, bool) or not isinstance(reserve, (int, float)) or not 0.0 <= reserve < 1.0:
        msg = f"cm_margin_reserve must be a number in [0, 1) (0: none kept). Got {reserve!r}"
        raise ParameterError(msg)
    if not isinstance(strategy.integer_cells, bool):
        msg = f"integer_cells must be True or False. Got {strategy.integer_cells!r}"
        raise ParameterError(msg)
    if strategy.warm_doublings is not None and (isinstance(strategy.warm_doublings, bool) or not isinstance(
            strategy.warm_doublings, int) or strategy.warm_doublings < 0):
        msg = f"warm_doublings must be an int >= 0 or None (the whole schedule). Got {strategy.warm_doublings!r}"
        raise ParameterError(msg)
    if strategy.max_steps is not None and (isinstance(strategy.max_steps, bool) or not isinstance(
            strategy.max_steps, int) or strategy.max_steps < 1):
        msg = f"max_steps must be an int >= 1 or None (the paper's 60). Got {strategy.max_steps!r}"
        raise ParameterError(msg)
    check_numeric_coupling(strategy.numeric_coupling)
    object.__setattr__(strategy, "tie_noise_cap", check_tie_noise_cap(strategy.tie_noise_cap))
    object.__setattr__(strategy, "tie_numeric_bins", check_tie_numeric_bins(strategy.tie_numeric_bins))
    check_tie_pair_counts(strategy.tie_pair_counts)
    object.__setattr__(strategy, "tie_pair_separation", check_tie_pair_separation(strategy.tie_pair_separation))
    object.__setattr__(strategy, "histogram_match", check_histogram_match(strategy.histogram_match))
    if strategy.decoding not in ("controlled", "independent"):
        msg = f"decoding must be 'controlled' or 'independent'. Got {strategy.decoding!r}"
        raise ParameterError(msg)


def check_histogram_match(value) -> float | None:
    """``value`` as ``histogram_match`` takes it: None (off) or a finite number >= 0 (noise stds;
    0: the histograms' own distribution); else a :class:`~polars_rap.errors.ParameterError`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        msg = (f"histogram_match must be None or a finite number >= 0 (noise stds; 0: the histograms' own "
               f"distribution). Got {value!r}")
        raise ParameterError(msg)
    return float(value)


NUMERIC_COUPLINGS = ("fitted", "label")


def check_numeric_coupling(value: object) -> str:
    """``value`` if it is one of :data:`NUMERIC_COUPLINGS`, else a :class:`ParameterError`."""
    if value not in NUMERIC_COUPLINGS:
        msg = f"numeric_coupling must be one of {', '.join(repr(c) for c in NUMERIC_COUPLINGS)}. Got {value!r}"
        raise ParameterError(msg)
    return str(value)


PAIR_COUNTS = ("histograms", "relaxed")
"""The values of ``tie_pair_counts``: where the pairs' test reads each cell's count."""


def check_tie_pair_counts(value) -> str:
    """``value`` as ``tie_pair_counts`` takes it: one of :data:`PAIR_COUNTS`; else a
    :class:`~polars_rap.errors.ParameterError`."""
    if not isinstance(value, str) or value not in PAIR_COUNTS:
        msg = (f"tie_pair_counts must be 'histograms' (each cell's count from the released histograms) or "
               f"'relaxed' (the relaxed rows' cell masses). Got {value!r}")
        raise ParameterError(msg)
    return value


def check_tie_pair_separation(value) -> float:
    """``value`` as ``tie_pair_separation`` takes it: a finite number >= 0 (noise stds)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        msg = (f"tie_pair_separation must be a finite number >= 0 (the noise stds by which the released pair sums "
               f"must separate the relaxed rows' pairing from none for it to be kept; 0: no floor). Got {value!r}")
        raise ParameterError(msg)
    return float(value)


def check_tie_noise_cap(value) -> float | None:
    """``value`` as ``tie_noise_cap`` takes it: None (no cap) or a finite number > 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        msg = (f"tie_noise_cap must be None or a finite number > 0 (the largest noise std per tie cell, in mapped "
               f"units of the rows' mean, at which the ties are measured). Got {value!r}")
        raise ParameterError(msg)
    return float(value)


def check_tie_numeric_bins(value) -> int:
    """``value`` as ``tie_numeric_bins`` takes it: an int from 0 (no numeric features) to 64."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value <= 64:
        msg = (f"tie_numeric_bins must be an int from 0 to 64 (the equal bins of each earlier numeric column's "
               f"range the numeric ties use as a feature; 0: none). Got {value!r}")
        raise ParameterError(msg)
    return int(value)
