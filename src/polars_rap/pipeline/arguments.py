"""Checks of :func:`polars_rap.synthesize`'s keyword parameters, before any data is read, and
the run's settings they give (:class:`RunSettings`, the first stage of the pipeline).

Each refusal is a :class:`~polars_rap.errors.ParameterError` (a value out of range) or a
:class:`~polars_rap.errors.ParameterTypeError` (a value of the wrong type) whose message names
the parameter, the rule and the value (:mod:`polars_rap.checks`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from types import ModuleType
from typing import Any

import numpy as np

from polars_rap import kernels
from polars_rap.checks import check_int, check_positive_finite, check_range, check_share
from polars_rap.errors import ParameterError, ParameterTypeError, did_you_mean
from polars_rap.fit.projection import ProjectionConfig
from polars_rap.fit.strategy import Strategy, resolve_strategy
from polars_rap.io.blocks import check_folder
from polars_rap.public.prior import check_public_use

__all__ = ["MOVED_TO_STRATEGY", "RunSettings", "check_arguments", "check_synthesis_parameters", "check_memory"]


@dataclass(frozen=True, slots=True)
class RunSettings:
    """:func:`~polars_rap.synthesize`'s keyword parameters, checked and resolved: the strategy an
    object, the loop's size read off it (``relaxed_rows`` to ``max_marginal_cells``,
    ``selection_share``; a round count left None takes its default when the plan is made), the
    labels and dropped columns lists, the projection with the strategy's schedule, the backend a
    kernel module. Public values only: nothing here has seen a row."""

    epsilon: float
    delta: float
    domain: Mapping[str, Any] | None
    labels: list[str]
    infer_domain: bool | Sequence[str]
    inference_share: float
    rows: int | None
    seed: int | None
    backend: ModuleType
    relaxed_rows: int
    queries_per_round: int
    rounds_cm: int | None
    rounds_lt: int | None
    rounds_mm: int
    n_linear_thresholds: int
    n_mixed_marginals: int
    max_marginal_cells: int | None
    selection_share: float
    confidence: float
    projection: ProjectionConfig
    strategy: Strategy
    progress: bool | None
    engine: str
    public_use: Sequence[str] | None
    """As given: None lets the public table's columns choose (:func:`~polars_rap.public.prior.default_public_uses`)."""
    public_uses: tuple[str, ...]
    """The uses checked against ``public``; the public table's defaults once its schema is read."""
    output: Any
    output_block_rows: int
    drop: list[str]
    constraints: Any
    """As given; read against the domain once it is built (:func:`~polars_rap.decode.constraints.read_constraints`)."""


def check_arguments(*, public: Any, moved: Mapping[str, Any], **keywords: Any) -> RunSettings:
    """The run's settings from ``synthesize``'s keywords (all but ``data``), each refused by name
    before any row is read; ``public`` is looked at only to check ``public_use`` against it,
    ``moved`` (any keyword ``synthesize`` does not take) only to say where it went."""
    if moved:
        raise moved_keyword_error(moved)
    check_synthesis_parameters(**{name: keywords[name] for name in _CHECKED})
    strategy = resolve_strategy(keywords["strategy"])
    labels, drop = keywords["labels"], keywords["drop"]
    projection = strategy.projection
    if projection.warm_doublings is None and strategy.warm_doublings is not None:  # the strategy's schedule
        projection = replace(projection, warm_doublings=strategy.warm_doublings)
    if projection.max_steps is None and strategy.max_steps is not None:  # the strategy's stage length
        projection = replace(projection, max_steps=strategy.max_steps)
    backend = kernels.resolve_backend(keywords["backend"])
    public_uses = check_public_use(public, keywords["public_use"])
    if keywords["output"] is not None:
        check_int("output_block_rows", keywords["output_block_rows"], 1)
        check_folder(keywords["output"])  # before any row is read: a fit is never lost to a folder in use
    rounds = strategy.rounds
    settings = {**keywords, "strategy": strategy, "selection_share": strategy.selection_share, "projection": projection,
                "relaxed_rows": strategy.relaxed_rows, "queries_per_round": strategy.queries_per_round,
                "rounds_cm": rounds.get("CM"), "rounds_lt": rounds.get("LT"), "rounds_mm": rounds.get("MM", 0),
                "n_linear_thresholds": strategy.workload.n_linear_thresholds,
                "n_mixed_marginals": strategy.workload.n_mixed_marginals,
                "max_marginal_cells": strategy.workload.max_marginal_cells,
                "backend": backend, "public_uses": public_uses,
                "labels": [labels] if isinstance(labels, str) else list(labels),
                "drop": [drop] if isinstance(drop, str) else list(drop)}
    return RunSettings(**settings)


_CHECKED = ("epsilon", "delta", "domain", "labels", "infer_domain", "inference_share", "rows", "seed", "confidence",
            "drop")

MOVED_TO_STRATEGY = {
    "relaxed_rows": ("PlannedStrategy(relaxed_rows=...)", "relaxed_rows = ... in [strategy]"),
    "queries_per_round": ("PlannedStrategy(queries_per_round=...)", "queries_per_round = ... in [strategy]"),
    "rounds_cm": ('PlannedStrategy(rounds={"CM": ...})', "CM = ... in [strategy.rounds]"),
    "rounds_lt": ('PlannedStrategy(rounds={"LT": ...})', "LT = ... in [strategy.rounds]"),
    "rounds_mm": ('PlannedStrategy(rounds={"MM": ...})', "MM = ... in [strategy.rounds]"),
    "n_linear_thresholds": ("PlannedStrategy(workload=WorkloadSize(n_linear_thresholds=...))",
                            "n_linear_thresholds = ... in [strategy.workload]"),
    "n_mixed_marginals": ("PlannedStrategy(workload=WorkloadSize(n_mixed_marginals=...))",
                          "n_mixed_marginals = ... in [strategy.workload]"),
    "max_marginal_cells": ("PlannedStrategy(workload=WorkloadSize(max_marginal_cells=...))",
                           "max_marginal_cells = ... in [strategy.workload]"),
    "selection_share": ("PlannedStrategy(selection_share=...)", "selection_share = ... in [strategy]"),
    "projection": ("PlannedStrategy(projection=ProjectionConfig(...))", "the [strategy.projection] table"),
}
"""The tuning keywords ``synthesize`` took before they moved onto the strategy (issue #72), and
where each is set now: its Python spelling and its config-file spelling (``PaperStrategy``
takes the same loop settings)."""


def moved_keyword_error(moved: Mapping[str, Any]) -> ParameterTypeError:
    """The error for keywords ``synthesize`` does not take: where each moved one is set now, or
    the closest valid keyword (a ``TypeError``, as Python's own for an unknown keyword)."""
    names = sorted(moved)
    known = [name for name in names if name in MOVED_TO_STRATEGY]
    unknown = [name for name in names if name not in MOVED_TO_STRATEGY]
    parts = []
    if unknown:
        valid = sorted({f.name for f in fields(RunSettings)} - set(MOVED_TO_STRATEGY) - {"public_uses"} | {"public"})
        parts.append(f"synthesize() got unexpected keyword arguments {unknown}{did_you_mean(unknown, valid)}")
    if known:
        where = "; ".join(f"{name}: strategy=polars_rap.{MOVED_TO_STRATEGY[name][0]}" for name in known)
        parts.append(f"synthesize() no longer takes {known}: tuning settings live on the strategy "
                     f"({where}; \"paper\" takes them on PaperStrategy)")
    return ParameterTypeError("; and ".join(parts))


def _check_names(name: str, value: Any, *, allow_bool: bool = False) -> None:
    """A column name or a sequence of column names (``True``/``False`` too when allowed)."""
    if isinstance(value, str) or (allow_bool and isinstance(value, bool)):
        return
    if not isinstance(value, Sequence) or not all(isinstance(item, str) for item in value):
        rule = "True, False, a column name or a list of them" if allow_bool else "a column name or a list of them"
        msg = f"The {name!r} parameter must be {rule}. Got {value!r}"
        raise ParameterTypeError(msg)


def _listed(names: str | Sequence[str] | bool) -> list[str]:
    """Checked names as a list: one name alone, a sequence, or none for ``True``/``False``."""
    return [] if isinstance(names, bool) else [names] if isinstance(names, str) else list(names)


MAX_EPSILON = 1e6
"""The largest ``epsilon`` synthesize takes: the zCDP conversion and the noise's inverse variances
stay finite far past it (the fuzz tests found overflows only near 1.8e308)."""


def check_synthesis_parameters(*, epsilon: Any, delta: Any, domain: Any, labels: Any, infer_domain: Any,
                               inference_share: Any, rows: Any, seed: Any, confidence: Any = 0.95,
                               drop: Any = ()) -> None:
    """Refuse any of ``synthesize``'s parameters that it could not run with (the strategy's
    settings are checked when it is made, :mod:`polars_rap.fit.loop_settings`)."""
    check_positive_finite("epsilon", epsilon)
    if epsilon > MAX_EPSILON:
        msg = (f"The 'epsilon' parameter must be at most {MAX_EPSILON:g}: far beyond any meaningful guarantee (a few "
               f"dozen is already vacuous), and near the largest floats the accounting overflows. Got {epsilon!r}")
        raise ParameterError(msg)
    check_range("delta", delta, 0.0, 1.0)
    if rows is not None:
        check_int("rows", rows, 1)
    if seed is not None:
        whole = not isinstance(seed, bool) and isinstance(seed, (int, np.integer))
        if not whole or seed < 0:
            msg = f"The 'seed' parameter must be None or an int >= 0. Got {seed!r}"
            raise ParameterError(msg) if whole else ParameterTypeError(f"{msg} of type {type(seed).__name__}")
    check_share("inference_share", inference_share)
    check_share("confidence", confidence)
    if domain is not None and not isinstance(domain, Mapping):
        msg = f"The 'domain' parameter must be a mapping of column names to declarations. Got {domain!r}"
        raise ParameterTypeError(msg)
    _check_names("labels", labels)
    _check_names("infer_domain", infer_domain, allow_bool=True)
    _check_names("drop", drop)
    named = {*(domain or {}), *_listed(labels), *_listed(infer_domain)}
    kept = [name for name in _listed(drop) if name in named]
    if kept:
        msg = (f"The 'drop' parameter names columns that domain=, labels or infer_domain also name: {kept}. A dropped "
               "column is left out of the synthesis: remove it from drop to synthesize it, or from the others to "
               "leave it out")
        raise ParameterError(msg)


def physical_memory() -> int:
    """Bytes of physical memory of this machine (0 when the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def check_memory(*, relaxed_rows: int, n_coords: int, n_numeric: int, n_columns: int, rows: int | None,
                 n_linear_thresholds: int, n_mixed_marginals: int, available: int | None = None) -> None:
    """Refuse, before any work, a setting whose arrays alone would need more than half of the
    machine's memory (``available`` bytes; physical memory by default), naming the parameter:
    a count that passes :func:`check_int` (up to 2**62) can still be far beyond any machine, and
    the OS would kill the process instead of raising. Estimates, in bytes: the relaxed data
    with its gradient, Adam's two moments and the best iterate (5 float32 copies of
    ``relaxed_rows x n_coords``); a linear threshold's weights, indices and offsets
    (``16 n_numeric + 64``); a mixed marginal group's queries (~ 1 KiB); the output frame
    (8 bytes per value, ``rows x n_columns``)."""
    available = physical_memory() if available is None else int(available)
    if available <= 0:
        return
    needs = {
        "relaxed_rows": 20 * relaxed_rows * max(n_coords, 1),
        "n_linear_thresholds": n_linear_thresholds * (16 * n_numeric + 64),
        "n_mixed_marginals": 1024 * n_mixed_marginals,
        "rows": 8 * (rows or 0) * max(n_columns, 1),
    }
    for name, need in needs.items():
        if need > available / 2:
            msg = (f"The {name!r} parameter would need about {need / 2**30:.3g} GiB of memory, more than "
                   f"half of this machine's {available / 2**30:.3g} GiB; lower it")
            raise ParameterError(msg)
