"""The size of the select / measure / project loop, a setting of every strategy
(:class:`LoopSettings`, with :class:`WorkloadSize`): how many relaxed rows, how many groups a
round selects, how many rounds each query class runs, how large the random workload is and
how the projection optimises. Public values, checked when the strategy is made."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from polars_rap.checks import check_int
from polars_rap.errors import ParameterError, ParameterTypeError, did_you_mean
from polars_rap.fit.projection import ProjectionConfig

__all__ = ["LoopSettings", "ROUND_CLASSES", "WorkloadSize", "check_loop_settings"]

ROUND_CLASSES = ("CM", "LT", "MM")
"""The query classes a strategy's ``rounds`` may set: categorical marginals, linear thresholds,
mixed marginals."""


@dataclass(frozen=True, slots=True)
class WorkloadSize:
    """Size of the random workload the rounds select from (:mod:`polars_rap.workload.builders`).

    ``n_linear_thresholds`` and ``n_mixed_marginals``: queries drawn of each random family (int
    >= 0); ``max_marginal_cells``: categorical marginals with more cells are left out of the
    workload (None: none is)."""

    n_linear_thresholds: int = 20_000
    n_mixed_marginals: int = 2_000
    max_marginal_cells: int | None = 20_000

    def __post_init__(self) -> None:
        check_int("n_linear_thresholds", self.n_linear_thresholds, 0)
        check_int("n_mixed_marginals", self.n_mixed_marginals, 0)
        if self.max_marginal_cells is not None:
            check_int("max_marginal_cells", self.max_marginal_cells, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopSettings:
    """The loop's size, shared by every strategy (keyword-only fields).

    Parameters
    ----------
    relaxed_rows : int
        Rows of the relaxed synthetic data (the paper's n-hat, default 1000).
    queries_per_round : int
        Groups a selection round picks (K, default 10).
    rounds : mapping of str to int
        Rounds per query class, ``{"CM": ..., "LT": ..., "MM": ...}``; a class left out takes
        its default: CM the number of categorical feature columns, LT the strategy's own
        (``rounds_lt``: 10 for ``"planned"``, the paper's 50 for ``"paper"``), MM 0. A class
        with G query groups runs at most ceil(G / queries_per_round) rounds, so that no round
        is left with nothing to measure; ``report.parameters["rounds"]`` lists the rounds run
        (a class measured outright counts one). Whatever the rounds, every nullable column's
        null rate is measured (:mod:`polars_rap.fit.null_rates`).
    workload : WorkloadSize or mapping
        Size of the random workload (a mapping is read as :class:`WorkloadSize`'s fields).
    projection : ProjectionConfig or mapping
        The optimiser's settings (a mapping is read as its fields); its ``max_steps`` and
        ``warm_doublings`` left None take the strategy's own.
    """

    relaxed_rows: int = 1000
    queries_per_round: int = 10
    rounds: Mapping[str, int] = field(default_factory=dict)
    workload: WorkloadSize = field(default_factory=WorkloadSize)
    projection: ProjectionConfig = field(default_factory=ProjectionConfig)

    def __post_init__(self) -> None:
        check_loop_settings(self)


def check_loop_settings(settings: LoopSettings) -> None:
    """Refuse a bad loop setting by name; read ``workload`` and ``projection`` given as mappings
    into their dataclasses (in place: ``settings`` is frozen, so through ``object.__setattr__``)."""
    check_int("relaxed_rows", settings.relaxed_rows, 1)
    check_int("queries_per_round", settings.queries_per_round, 1)
    if not isinstance(settings.rounds, Mapping):
        msg = f"rounds must be a mapping of query class to rounds, e.g. {{'LT': 10}}. Got {settings.rounds!r}"
        raise ParameterTypeError(msg)
    unknown = [key for key in settings.rounds if key not in ROUND_CLASSES]
    if unknown:
        named = [str(key).upper() for key in unknown]  # "lt" is "LT"
        msg = (f"rounds has unknown query classes {unknown}; choose from {ROUND_CLASSES}"
               f"{did_you_mean(named, ROUND_CLASSES)}")
        raise ParameterError(msg)
    for key, value in settings.rounds.items():
        check_int(f"rounds[{key!r}]", value, 0)
    object.__setattr__(settings, "rounds", dict(settings.rounds))
    for name, kind in (("workload", WorkloadSize), ("projection", ProjectionConfig)):
        value = getattr(settings, name)
        if isinstance(value, Mapping):
            object.__setattr__(settings, name, _from_mapping(name, kind, value))
        elif not isinstance(value, kind):
            msg = f"{name} must be a polars_rap.{kind.__name__} or a mapping of its fields. Got {value!r}"
            raise ParameterTypeError(msg)


def _from_mapping(name: str, kind: type, table: Mapping[str, Any]) -> Any:
    """``kind(**table)``, an unknown key refused by name with the valid ones."""
    valid = [f.name for f in fields(kind)]
    unknown = [key for key in table if key not in valid]
    if unknown:
        msg = f"{name} has unknown settings {unknown}; valid ones are {valid}{did_you_mean(unknown, valid)}"
        raise ParameterError(msg)
    return kind(**table)
