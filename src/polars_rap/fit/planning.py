"""The plan of a run, from public values only: the workload, the strategy's steps with their
budget shares, and the check that refuses a plan whose noise would swamp every answer.

:func:`workload_and_plan` draws the workload (:mod:`polars_rap.workload.builders`), asks the strategy
(:mod:`polars_rap.fit.strategy`) for its steps, and adds the steps a strategy or the domain calls
for: base marginals, numeric histograms, and null rates the plan would leave unmeasured.
:func:`check_rows_against_noise` refuses a run whose most thinly spread measurement would
carry noise above :data:`MAX_NOISE_STD` (design.md §5b), naming the rows it needs.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Mapping, Sequence

import numpy as np

from polars_rap.fit.base_marginals import add_base_marginals
from polars_rap.schema.domain import Domain
from polars_rap.errors import DataError, ParameterError
from polars_rap.fit.null_rates import add_null_rates
from polars_rap.fit.numeric_histograms import add_numeric_histograms, histogram_runs
from polars_rap.fit.plan_steps import Step
from polars_rap.fit.table_turns import COLUMNS_PER_PICK, MAX_ANNEALED_ROUNDS
from polars_rap.workload.queries import CLASS_CODES, QuerySet
from polars_rap.fit.strategy import Strategy
from polars_rap.workload.builders import build_workload

__all__ = ["MAX_NOISE_STD", "check_rows_against_noise", "loop_rho_needed", "smallest_share", "workload_and_plan"]

MAX_NOISE_STD = 0.5
"""Largest planned noise std of a measured answer (a fraction in [0, 1]) a run accepts."""


def workload_and_plan(domain: Domain, strategy: Strategy, rng: np.random.Generator, *,
                      rounds_cm: int | None, rounds_lt: int | None, rounds_mm: int, queries_per_round: int,
                      n_mixed_marginals: int, n_linear_thresholds: int,
                      max_marginal_cells: int | None) -> tuple[QuerySet, list[Step], dict[str, int]]:
    """The workload (drawn from ``rng``), the plan and the groups per class, from public
    values only: the domain, the rounds asked (``rounds_cm`` None: one per categorical
    feature; ``rounds_lt`` None: the strategy's) and the strategy; null-rate groups join
    where the plan leaves a nullable column unmeasured
    (:func:`polars_rap.fit.null_rates.add_null_rates`)."""
    n_categorical_features = sum(1 for c in domain.columns if c.is_categorical and c.name not in domain.labels)
    labels_alone = n_categorical_features == 0 and not domain.numeric_columns
    asked = {  # a table of labels alone still has their marginals: one round
        "CM": (n_categorical_features or int(labels_alone)) if rounds_cm is None else int(rounds_cm),
        "LT": int(strategy.rounds_lt if rounds_lt is None else rounds_lt),
        "MM": int(rounds_mm),
    }
    classes = tuple(c for c in ("CM", "MM", "LT") if asked[c] > 0)
    if not classes:
        msg = (
            "every query class has 0 rounds: give one class 1 or more with the strategy's rounds, e.g. "
            'PlannedStrategy(rounds={"LT": 1}) (CM defaults to the number of categorical feature columns, '
            f"here {n_categorical_features})"
        )
        raise ParameterError(msg)
    queries = build_workload(
        domain, rng, classes=classes, n_mixed_marginals=n_mixed_marginals,
        n_linear_thresholds=n_linear_thresholds, max_marginal_cells=max_marginal_cells,
    )
    group_counts = {c: int(np.count_nonzero(queries.group_class == CLASS_CODES[c])) for c in asked}
    plan = [with_round_cap(step, len(queries.column_sizes))
            for step in strategy.plan(group_counts, asked, queries_per_round)]
    if strategy.base_share > 0:
        queries, plan, group_counts = add_base_marginals(domain, queries, plan, group_counts, strategy.base_share)
    if strategy.histogram_share > 0:
        queries, plan, group_counts = add_numeric_histograms(domain, queries, plan, group_counts,
                                                             strategy.histogram_share)
    queries, plan, group_counts = add_null_rates(domain, queries, plan, group_counts)
    if not plan:
        msg = (
            "the workload is empty: the domain needs categorical feature columns (for "
            "marginals) or numeric columns (for thresholds), and at least one round"
        )
        raise ParameterError(msg)
    return queries, plan, group_counts


def with_round_cap(step: Step, n_columns: int) -> Step:
    """``step`` sized for a table of ``n_columns`` categorical columns: an annealed step
    (:mod:`polars_rap.fit.annealing`) picks ``K = ceil(n_columns /`` :data:`~polars_rap.fit.
    table_turns.COLUMNS_PER_PICK` ``)`` tables a round (at least the step's own K) over
    ``T0 = ceil(min(T0,`` :data:`~polars_rap.fit.table_turns.MAX_ANNEALED_ROUNDS` ``) / K)``
    budget units, so that each table's share of the budget stays that of K = 1 over the capped
    T0. T0 is the number of tables (about ``c^2 / 2``): a wide table ran more rounds the wider
    it was, each of them longer, though the informative measurements a fixed budget pays for
    do not grow with the columns (``bench/results/wide_profile.md``). No suite table reaches
    either cap; other steps are returned as they are."""
    if not step.annealed:
        return step
    own_k = int(step.k or 1)
    k = max(own_k, -(-max(n_columns, 1) // COLUMNS_PER_PICK))
    units = min(int(step.annealed_rounds), MAX_ANNEALED_ROUNDS)
    if k > own_k:
        units = max(1, -(-units // k))
    if (k, units) == (step.k, step.annealed_rounds):
        return step
    return replace(step, k=k, annealed_rounds=units)


def smallest_share(plan: Sequence[Step], queries: QuerySet) -> dict[tuple[str, bool], float]:
    """Per (class, outright) of the plan's steps: the smallest share of a step's measurement
    budget any one group can get, the budget being split evenly (an outright step shares among
    all the class's groups; a selection step among at most K; an annealed step's rounds, as
    selection steps of K, are keyed as those; a numeric-histogram step among its histograms),
    the thinnest over a key's steps. Public sizes only."""
    largest_k = {}
    for step in plan:
        key = (step.query_class, step.outright)
        largest_k[key] = max(step.k or 0, largest_k.get(key, 0))
    return {(query_class, outright): _smallest_group_share(queries, query_class, outright, k)
            for (query_class, outright), k in largest_k.items()}


def _smallest_group_share(queries: QuerySet, query_class: str, outright: bool, k: int) -> float:
    """The smallest share of one step's measurement budget a group of ``query_class`` can get
    (see :func:`smallest_share`)."""
    if query_class == "NH":  # one release per histogram, the step's budget split evenly
        nh_groups = np.flatnonzero(queries.group_class == CLASS_CODES["NH"])
        return 1.0 / len(histogram_runs(queries, nh_groups))
    n_groups = int(np.count_nonzero(queries.group_class == CLASS_CODES[query_class]))
    return 1.0 / (n_groups if outright else min(k, n_groups))


def _thinnest_part(plan: Sequence[Step], smallest_share: Mapping[tuple[str, bool], float],
                   selection_share: float) -> float:
    """The part of the loop's rho that its most thinly spread measurement gets (see
    :func:`check_rows_against_noise`)."""
    total = math.fsum(step.weight for step in plan)
    part = min(
        step.weight / total * (1.0 if step.outright else 1.0 - selection_share)
        / (step.annealed_rounds or 1) * smallest_share[step.query_class, step.outright]
        for step in plan
    )
    for step in plan:
        if step.annealed and step.margin_reserve > 0 and ("BM", True) in smallest_share:
            part = min(part, step.weight / total * step.margin_reserve * smallest_share["BM", True])
    return part


def loop_rho_needed(n_rows: int, plan: Sequence[Step], smallest_share: Mapping[tuple[str, bool], float],
                    selection_share: float) -> float:
    """The least rho with which :func:`check_rows_against_noise` lets the plan run: its most
    thinly spread measurement's noise std is then exactly :data:`MAX_NOISE_STD` (public)."""
    return 1.0 / (float(n_rows) ** 2 * MAX_NOISE_STD**2 * _thinnest_part(plan, smallest_share, selection_share))


def check_rows_against_noise(n_rows: int, rho: float, plan: Sequence[Step],
                              smallest_share: Mapping[tuple[str, bool], float], queries_per_round: int,
                              selection_share: float, epsilon: float) -> None:
    """Refuse a run whose planned measurement noise swamps every answer.

    A selection step measures with ``rho_step (1 - selection_share)``, an outright step with
    ``rho_step``, an annealed step's thinnest round with ``rho_step (1 - selection_share) /
    T0`` (its rounds start at ``1 / T0`` of its budget and never go below it: see
    :mod:`polars_rap.fit.annealing`); the group given the least of it (``smallest_share`` per
    class and kind of step, from :func:`smallest_share`) gets ``rho_g``, and a marginal cell
    carries noise of std ``1 / (n sqrt(rho_g))`` (design.md §5b). An annealed step's margin
    refresh (``Step.margin_reserve``) measures each base group with at least ``rho_step *
    reserve`` over their number. The plan's most thinly spread measurement is checked. Answers
    are fractions in [0, 1]: past a std of 0.5 nothing can be learned. The row count is public.
    """
    rho_group = rho * _thinnest_part(plan, smallest_share, selection_share)
    noise_std = 1.0 / (n_rows * math.sqrt(rho_group))
    if noise_std > MAX_NOISE_STD:
        minimum = math.ceil(1.0 / (MAX_NOISE_STD * math.sqrt(rho_group)))
        msg = (
            f"{n_rows} rows are too few for epsilon={epsilon:g} over {len(plan)} rounds of up "
            f"to {queries_per_round} queries: each measured answer (a fraction in [0, 1]) would "
            f"carry noise of std {noise_std:.2g} > {MAX_NOISE_STD}. This plan needs at least "
            f"{minimum} rows; or raise epsilon, or lower the strategy's rounds (its rounds={{...}}) or "
            "queries_per_round"
        )
        raise DataError(msg)
