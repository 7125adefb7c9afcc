"""Strategies: how a run spends its zCDP budget over query classes and rounds (a plan).

A plan is a list of :class:`~polars_rap.fit.plan_steps.Step` (selection rounds, outright steps,
annealed steps; :mod:`polars_rap.fit.plan_steps`), each with a weight fixing its share of the
loop's budget. Plans depend only on public values (group counts, rounds, K): never on the data.

Two strategies ship:

- :class:`PaperStrategy` (``strategy="paper"``): the paper's algorithm, rounds of every class
  interleaved evenly, an equal share each, each paying half its budget for its Gumbel
  selection, projection weighing every measurement alike, categories decoded independently.
- :class:`~polars_rap.fit.planned_strategy.PlannedStrategy` (``strategy="planned"``, the default;
  its own module, its settings' checks in :mod:`polars_rap.fit.strategy_checks`): a budget per query class,
  classes whose rounds would measure all their groups anyway measured outright first,
  measurements weighed by their inverse noise variance in the projection (the maximum-likelihood
  fit under Gaussian noise), controlled decoding (:func:`polars_rap.decode.decoding.decode`) and numeric
  columns decoupled within each label (:mod:`polars_rap.decode.numeric_coupling`).
  Its settings are the budget's shares and the switches that tell it from the paper's; the
  values measured and kept are constants of the modules that use them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from polars_rap.errors import ParameterError, did_you_mean
from polars_rap.fit.loop_settings import LoopSettings, WorkloadSize, check_loop_settings
from polars_rap.fit.projection import ProjectionConfig
from polars_rap.fit.plan_steps import Step, add_outright_step, capped_rounds, interleave
from polars_rap.fit.planned_strategy import DEFAULT_CLASS_SHARES, PlannedStrategy

__all__ = ["DEFAULT_CLASS_SHARES", "LoopSettings", "PaperStrategy", "PlannedStrategy", "Step", "Strategy",
           "WorkloadSize", "add_outright_step", "resolve_strategy", "STRATEGIES"]


class Strategy(Protocol):
    """What the select/measure/project loop (:mod:`polars_rap.fit.rounds`) asks of a strategy."""

    name: str
    relaxed_rows: int
    queries_per_round: int
    rounds: Mapping[str, int]
    workload: WorkloadSize
    projection: ProjectionConfig
    """The loop's size (:class:`~polars_rap.fit.loop_settings.LoopSettings`: a strategy object
    gets them by subclassing it)."""
    rounds_lt: int
    """Linear-threshold rounds when ``rounds`` does not set ``"LT"``."""
    inverse_variance: bool
    """Weigh each measured answer by ``1 / noise_std**2`` in the projection loss."""
    decoding: str
    """``"independent"`` or ``"controlled"`` (see :func:`polars_rap.decode.decoding.decode`)."""
    selection_share: float
    """Part of a selection round's budget its Gumbel top-K spends (the rest measures)."""
    base_share: float
    """Part of the loop's budget for the base marginals (every feature block x label, measured
    outright first: :mod:`polars_rap.fit.base_marginals`); 0 measures none."""
    histogram_share: float
    """Part of the loop's budget for the numeric histograms (every numeric column's one-way
    distribution x label, measured outright: :mod:`polars_rap.fit.numeric_histograms`); 0
    measures none."""
    tie_share: float
    """Part of the loop's budget for the numeric ties (each numeric column's sums by feature and
    label, released before the loop: :mod:`polars_rap.decode.numeric_ties`); 0 measures none."""

    rank_share: float
    """Part of the loop's budget for the numeric pairs' rank statistic (every numeric pair's rank
    covariance within the labels, charged before the loop and drawn after it:
    :mod:`polars_rap.decode.rank_pairs`); 0 measures none."""

    warm_doublings: int | None
    """The projection schedule of threshold rounds after the first, unless the run's
    :class:`~polars_rap.fit.projection.ProjectionConfig` sets its own: the last ``warm_doublings
    + 1`` temperature stages (None: the whole schedule every round)."""

    max_steps: int | None
    """Adam steps a temperature stage may run, unless the run's
    :class:`~polars_rap.fit.projection.ProjectionConfig` sets its own (None: the paper's 60)."""

    independence_prior: bool | str
    """Fit the categorical marginals not measured (yet) toward conditional independence given
    the label (True), or given a third feature and the label where two measured tables link
    them (``"mediated"``) (:mod:`polars_rap.fit.independence_prior`; post-processing)."""

    numeric_coupling: str
    """``"fitted"`` or ``"label"``: whether decoded rows keep their relaxed row's numeric values
    together or each numeric column is permuted within each label value
    (:mod:`polars_rap.decode.numeric_coupling`; post-processing)."""

    def plan(self, group_counts: Mapping[str, int], rounds: Mapping[str, int], k: int) -> list[Step]:
        """The steps, from the number of workload groups per class (``group_counts``), the
        rounds asked per class and the groups per round ``k``: public values only."""
        ...

    def describe(self) -> dict[str, Any]:
        """The strategy's settings, for the report's parameters."""
        ...


@dataclass(frozen=True, slots=True)
class PaperStrategy(LoopSettings):
    """RAP++ as in the paper (Alg. 2): ``T = sum(rounds)`` interleaved rounds, ``rho / T``
    each, every round a Gumbel selection of ``k`` groups (unless it would pick all left).
    Its settings are the loop's size (:class:`~polars_rap.fit.loop_settings.LoopSettings`:
    the paper's n-hat, K and rounds); the rest is the paper's, fixed."""

    name: str = field(default="paper", init=False)
    rounds_lt: int = field(default=50, init=False)
    inverse_variance: bool = field(default=False, init=False)
    decoding: str = field(default="independent", init=False)
    selection_share: float = field(default=0.5, init=False)
    base_share: float = field(default=0.0, init=False)
    histogram_share: float = field(default=0.0, init=False)
    tie_share: float = field(default=0.0, init=False)
    rank_share: float = field(default=0.0, init=False)
    numeric_coupling: str = field(default="fitted", init=False)
    warm_doublings: int | None = field(default=None, init=False)
    max_steps: int | None = field(default=None, init=False)
    independence_prior: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        check_loop_settings(self)

    def plan(self, group_counts: Mapping[str, int], rounds: Mapping[str, int], k: int) -> list[Step]:
        return [Step(c, 1.0, k) for c in interleave(capped_rounds(group_counts, rounds, k))]

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


STRATEGIES = {"planned": PlannedStrategy, "paper": PaperStrategy}
_PROTOCOL = ("name", "relaxed_rows", "queries_per_round", "rounds", "workload", "projection", "rounds_lt",
             "inverse_variance", "decoding", "selection_share", "base_share", "histogram_share",
             "tie_share", "rank_share", "numeric_coupling", "warm_doublings", "max_steps", "independence_prior", "plan", "describe")


def resolve_strategy(strategy: str | Strategy | Mapping[str, Any]) -> Strategy:
    """A strategy from its name (``"planned"``, ``"paper"``), a mapping of a name and its
    settings (``{"name": "planned", "base_share": 0.2, "rounds": {"LT": 5}}``, as a config
    file's ``[strategy]`` table), or itself."""
    if isinstance(strategy, str):
        spec: dict[str, Any] = {"name": strategy}
    elif isinstance(strategy, Mapping):
        spec = dict(strategy)
    elif hasattr(strategy, "plan") and hasattr(strategy, "inverse_variance"):
        missing = [a for a in _PROTOCOL if not hasattr(strategy, a)]
        if missing:
            msg = f"the strategy object {strategy!r} lacks {', '.join(missing)} (see polars_rap.fit.strategy.Strategy)"
            raise ParameterError(msg)
        return strategy
    else:
        msg = f"The 'strategy' parameter must be 'planned', 'paper' or a strategy object. Got {strategy!r}"
        raise ParameterError(msg)
    name = spec.pop("name", "planned")
    if name not in STRATEGIES:
        msg = f"unknown strategy {name!r}; choose one of {', '.join(repr(s) for s in STRATEGIES)}"
        raise ParameterError(msg)
    valid = [f.name for f in fields(STRATEGIES[name]) if f.init]
    unknown = [key for key in spec if key not in valid]
    if unknown:
        msg = (f"strategy {name!r} has no settings {unknown}; its settings are {valid}"
               f"{did_you_mean(unknown, valid)}")
        raise ParameterError(msg)
    return STRATEGIES[name](**spec)
