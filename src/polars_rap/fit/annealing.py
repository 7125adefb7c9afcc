"""Annealed rounds: a query class's budget spent as AIM spends its own (McKenna et al. 2022,
Alg. 2 and its budget annealing, Alg. 4), for an annealed step of a plan (the planned
strategy's CM step: :func:`polars_rap.fit.planned_strategy.planned_steps`).

A fixed plan measures a fixed number of tables whatever the noise: at small epsilon that
spreads the budget too thin, at large epsilon it stops short. Here the step's budget
``rho_step`` (the class's share, fixed by the public plan) is spent by rounds of
select / measure / project, and the noise level decides how many:

1. *select* ``k`` groups (tables) among **all** the class's groups, measured before or not
   (on a wide table, one slice of them per round, the slices in turn:
   :mod:`polars_rap.fit.table_turns`),
   by one-shot Gumbel top-``k`` (``selection_share`` of the round's budget) on AIM's
   noise-aware score: the L1 error of the current synthetic data minus the expected L1 norm
   of the group's measurement noise at this round's budget, ``sqrt(2/pi) sigma_t cells``
   (:func:`polars_rap.privacy.selection_scores.noise_shift_counts`: whole counts, so the scores stay exact);
2. *measure* each with the discrete Gaussian mechanism (the rest of the round's budget,
   split evenly); a group measured again
   adds a second measurement, and the projection fits both, each weighed by its inverse
   noise variance (their maximum-likelihood combination);
3. *project* onto every measurement so far, warm-started;
4. *anneal*: if the measured groups' synthetic answers moved by at most the noise's
   expected L1 norm, ``sum_g ||q_g(D_t) - q_g(D_{t-1})||_1 <= sum_g sqrt(2/pi) sigma_g
   cells_g`` (the measurement taught less than its noise), the next round's budget is four
   times this one's (sigma halves, AIM's eps doubling and sigma halving).

Where the step's budget would measure every group with a mean expected noise L1 norm of at
most ``Step.outright_l1`` (:func:`outright_noise_l1`, public: the budget, n, the sizes and
sensitivities), the step is one round that measures every group with its whole budget, without
selection, as an outright step would: annealing is for noise too large to measure everything
well. Not on a wide table, whose tables take turns in slices (:mod:`polars_rap.fit.table_turns`):
there the outright round spreads the budget over ``c^2 / 2`` tables, most of them near
independence, and the fit takes in every table's noise (a 50-column network at eps = 1:
categorical pairs' total variation from the exact ones 0.034 outright against 0.008 annealed,
the independent baseline's 0.016), so its rounds anneal.

Margin refresh. With ``Step.margin_reserve`` r > 0 (and base marginals in the workload) the
rounds below spend ``(1 - r) rho_step`` (read ``rho_step`` as that), and one more round measures,
without selection, the base marginals whose feature no CM table measured by the rounds holds
(:func:`polars_rap.fit.base_marginals.unheld_margins`; all of them when every feature is held), with
the ``r rho_step`` left split evenly, then projects: a feature the rounds never reached keeps
only the base step's margin, which every table of it left to the prior inherits. Which groups
it measures is a function of the released selections; each is a marginal of L2 sensitivity
``sqrt(2)/n``, measured by the same Gaussian mechanism; the step's charges still add up to
``rho_step``.

Budget. With T0 = ``step.annealed_rounds`` (public), round t spends ``rho_t = rho_step * m_t
/ T0`` with ``m_t`` a power of 4 (1 at first). The test for the last round is on integers:
with ``U`` the units of ``rho_step / T0`` spent so far, round t is the last when ``T0 - U <=
2 m_t`` (what is left would not pay for two more rounds: AIM's Alg. 4, line 8), and it then
takes exactly what is left: its last charge is
:func:`polars_rap.privacy.ledger.closing_charge` of the step's charges against ``rho_step`` (or
:attr:`~polars_rap.privacy.ledger.PrivacyLedger.rho_remaining` when the step ends the plan), so
the step's charges add up to ``rho_step`` to the last float. A round that is not the last
leaves more than ``m_t >= 1`` units, so the last round gets at least ``rho_step / T0`` and at
most ``max(1, T0 - 1)`` rounds run: the cost is bounded by T0 projections.

Privacy. Every charge goes through the ledger before its release. The selection: replacing
one row moves a marginal's count-unit L1 error by at most 2 (one count out of one cell, one
into another; 1 for a single query) and the shift is public (sizes, sensitivities, the
round's planned rho, n), so each score has sensitivity 2 and the Gumbel top-k of
``selection_share * rho_t`` is that rho-zCDP (:func:`polars_rap.privacy.ledger.gumbel_top_k`). The
measurement: a marginal's counts move by an integer vector of squared L2 norm 2 (sqrt(2)/n
in answer units), so the discrete Gaussian of sigma^2 = 2 / (2 rho_g) counts^2 is exactly
rho_g-zCDP (:func:`polars_rap.privacy.ledger.gaussian_mechanism`). The round budgets ``rho_t`` and
the number of rounds depend on earlier releases (the synthetic data and its movement are
post-processing of released measurements); zCDP composes under such fully adaptive choices of
the privacy parameters as long as the realised total never exceeds the budget (privacy
filters: Feldman & Zrnic 2021; Whitehouse, Ramdas, Rogers & Wu 2023, the argument of AIM's
Thm. 1), and here it is at most ``rho_step`` by construction, with every charge checked by the
ledger. The number of rounds and each ``rho_t`` are visible in the ledger's events: they are
released, and cost nothing more.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from polars_rap.fit.base_marginals import unheld_margins
from polars_rap.fit.independence_prior import PriorSettings, PublicInteractions
from polars_rap.fit.loop_record import LoopRecord
from polars_rap.fit.plan_steps import Step
from polars_rap.privacy.ledger import PrivacyLedger, closing_charge, gumbel_scale, gumbel_top_k
from polars_rap.fit.projection import ProjectionConfig
from polars_rap.fit.table_turns import table_stride, table_turn
from polars_rap.workload.queries import CLASS_CODES, QueryClass, QuerySet
from polars_rap.fit.rounds import fit_measurements, measure_groups
from polars_rap.privacy.selection_scores import (
    expected_noise_l1, noise_shift_counts, selection_record, selection_scores,
)

__all__ = ["ANNEAL_FACTOR", "annealing_threshold", "is_last_round", "outright_noise_l1", "run_annealed_step"]

logger = logging.getLogger(__name__)

ANNEAL_FACTOR = 4
"""A round that taught little multiplies the next round's budget by this (sigma halves)."""


def is_last_round(units_left: int, multiplier: int) -> bool:
    """Whether a round of ``multiplier`` units must take all that is left, ``units_left``
    units (of ``rho_step / T0`` each): when that would not pay for two such rounds (AIM's
    Alg. 4, line 8). Integers only, so the number of rounds does not hang on float rounding."""
    return units_left <= 2 * multiplier


def annealing_threshold(stds, sizes) -> float:
    """The movement at or below which a round taught little: the expected L1 norm of its
    measurements' noise, ``sum_g sqrt(2/pi) std_g cells_g`` (answer units; ``stds`` the
    groups' per-answer noise std, ``sizes`` their cells). AIM's test, summed over the round's
    groups when it measures more than one."""
    return float(math.sqrt(2.0 / math.pi) * np.sum(np.asarray(stds, dtype=np.float64)
                                                    * np.asarray(sizes, dtype=np.float64)))


def outright_noise_l1(l2_sensitivity: np.ndarray, sizes: np.ndarray, step_rho: float) -> float:
    """The mean over the class's groups (float64[groups] sensitivities, int[groups] sizes) of
    the expected L1 norm of a group's noise (answer units; a marginal's answers sum to 1) if
    ``step_rho`` measured every group at once, split evenly as
    :func:`polars_rap.fit.rounds.measure_groups` splits a step's budget
    (:func:`polars_rap.privacy.selection_scores.expected_noise_l1`). Public values only."""
    return float(np.mean(expected_noise_l1(l2_sensitivity, sizes, step_rho * (1.0 / len(sizes)))))


@dataclass(frozen=True, slots=True)
class _Pool:
    """The tables one round looks at (a slice of the candidates, :mod:`polars_rap.fit.table_turns`): their
    ``groups`` (int64[g]), ``queries``, ``sizes`` and answer ``starts`` (int64[g + 1]), and their
    true answers as whole counts (float64, **private**; None when nothing is selected)."""

    groups: np.ndarray
    queries: QuerySet
    sizes: np.ndarray
    starts: np.ndarray
    true_counts: np.ndarray | None

    @classmethod
    def of(cls, queries: QuerySet, groups: np.ndarray, true_answers: np.ndarray | None, n_rows: int) -> _Pool:
        sizes = queries.group_sizes[groups]
        true_counts = (None if true_answers is None
                       else np.rint(true_answers[queries.group_query_indices(groups)] * n_rows))
        return cls(groups, queries.take_groups(groups), sizes,
                   np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), true_counts)


def run_annealed_step(
    step: Step,
    queries: QuerySet,
    true_answers: np.ndarray,
    l1_sensitivity: np.ndarray,
    l2_sensitivity: np.ndarray,
    ledger: PrivacyLedger,
    record: LoopRecord,
    backend,
    projection: ProjectionConfig,
    rng,
    *,
    step_rho: float,
    closes_ledger: bool,
    first_round: int,
    n_rows: int,
    selection_share: float,
    inverse_variance: bool,
    anneal_temperature: bool = False,
    independence: PriorSettings | None = None,
    public: PublicInteractions | None = None,
) -> int:
    """Spend ``step_rho`` on ``step``'s class by annealed rounds (see the module's text);
    returns the number of rounds run.

    ``record`` gains each measurement (its ``rounds`` numbered from ``first_round``), the
    class's last selection (for the unmeasured groups' bounds), the rounds run
    (``record.class_rounds``; the margin refresh counts as one) and the projected parameters.
    ``closes_ledger``: the step is the plan's last, so its last charge is the ledger's whole
    remainder. The other arguments are
    :func:`polars_rap.fit.loop.run_plan`'s; ``anneal_temperature`` is the projection's
    ``anneal`` (False for categorical classes, which have no thresholds); ``independence``
    its independence prior for the CM groups not measured yet; ``public`` the public table's
    answers its pseudo-targets are raked from (``public_use="interactions"``).
    """
    name = step.query_class
    total_units = int(step.annealed_rounds)
    candidates = np.flatnonzero(queries.group_class == CLASS_CODES[name])
    noise_l1 = outright_noise_l1(l2_sensitivity[candidates], queries.group_sizes[candidates], step_rho)
    # a wide table's rounds each score one slice of the tables, the slices in turn (public)
    slices = table_stride(len(candidates), len(queries.column_sizes))
    precise = step.outright_l1 is not None and noise_l1 <= step.outright_l1 and slices == 1
    k = min(int(step.k), len(candidates))
    selecting = k < len(candidates)
    if precise:  # public: every group measured in one round, the step's whole budget, no selection
        selecting, k = False, len(candidates)
    stride = slices if selecting else 1
    pools: dict[int, _Pool] = {}
    margins = np.flatnonzero(queries.group_class == QueryClass.BASE_MARGINAL)
    reserve = 0.0 if precise or len(margins) == 0 else float(step.margin_reserve)
    rounds_rho = step_rho * (1.0 - reserve)  # public: the rounds' part of the step's budget
    logger.debug("%s: measuring every group at once would add a mean noise L1 norm of %.3g per group%s",
                 name, noise_l1, ": measured so, in one round" if precise else "")
    if selecting:
        selection_l1 = float(l1_sensitivity[candidates].max())  # answer units: 2/n or 1/n
    charges: list[float] = []  # this step's, to close it at step_rho exactly
    units_spent, multiplier, round_index = 0, 1, first_round
    while True:
        last = precise or is_last_round(total_units - units_spent, multiplier)
        round_rho = closing_charge(charges, rounds_rho) if last else rounds_rho * multiplier / total_units
        turn = (round_index - first_round) % stride
        if turn not in pools:
            pools[turn] = _Pool.of(queries, table_turn(candidates, stride, turn),
                                   true_answers if selecting else None, n_rows)
        pool = pools[turn]
        synthetic = backend.answers_relaxed(record.params.relaxed(), pool.queries, np.inf)
        measure_rho = (1.0 - selection_share) * round_rho if selecting else round_rho
        if selecting:
            selection_rho = selection_share * round_rho
            shift = noise_shift_counts(l2_sensitivity[pool.groups], pool.sizes, measure_rho / k, n_rows)
            # the only read of the real data outside the measurements, charged
            scores = selection_scores(pool.true_counts, synthetic, pool.sizes, n_rows) - shift
            selected_local = gumbel_top_k(
                scores, k, float(np.rint(selection_l1 * n_rows)), selection_rho, ledger, rng,
                description=f"{name} selection", round=round_index,
            )
            charges.append(selection_rho)
        else:  # every group each round: choosing all reveals nothing and costs nothing
            selected_local = np.arange(len(candidates))
        selected = pool.groups[selected_local]
        if reserve > 0.0:  # the rounds close at their part; the refresh below closes the step
            close = lambda: closing_charge(charges, rounds_rho)  # noqa: E731
        else:
            close = (lambda: ledger.rho_remaining) if closes_ledger else (lambda: closing_charge(charges, step_rho))
        stds = measure_groups(record, queries, selected, true_answers, l2_sensitivity, ledger, rng,
                              measure_rho=measure_rho, round_index=round_index,
                              n_rows=n_rows,
                              close=close if last else None, charges=charges)
        if selecting:  # one record per slice: each table's bound comes from the last round it competed in
            record.selections[name if stride == 1 else f"{name} slice {turn}"] = selection_record(
                round_index, name, queries, pool.groups, synthetic, selected_local,
                gumbel_scale(selection_l1, selection_rho, k), record.noisy_parts[-len(selected):],
                stds, 1.0 / n_rows, shift / n_rows,
            )
        trace = fit_measurements(record, queries, backend, projection, inverse_variance=inverse_variance,
                                 anneal=anneal_temperature, public=public, independence=independence)[0]
        before = np.concatenate([synthetic[pool.starts[i]:pool.starts[i + 1]]
                                 for i in selected_local]).astype(np.float64)
        after = backend.answers_relaxed(record.params.relaxed(), queries.take_groups(selected), np.inf)
        movement = float(np.abs(after.astype(np.float64) - before).sum())
        threshold = annealing_threshold(stds, queries.group_sizes[selected])
        logger.debug("%s round %d: %d group(s), rho %.4g (x%d), moved %.4g vs noise %.4g%s, %d Adam steps",
                     name, round_index, len(selected), round_rho, multiplier, movement, threshold,
                     " (last)" if last else "", trace.steps)
        round_index += 1
        if last:
            break
        units_spent += multiplier
        if movement <= threshold:
            multiplier *= ANNEAL_FACTOR
    if reserve > 0.0:
        round_index = _refresh_margins(
            queries, true_answers, l2_sensitivity, ledger, record, backend, projection, rng, margins,
            step_rho=step_rho, closes_ledger=closes_ledger, charges=charges,
            round_index=round_index, n_rows=n_rows, inverse_variance=inverse_variance,
            anneal_temperature=anneal_temperature, independence=independence, public=public)
    rounds_run = round_index - first_round
    record.class_rounds[name] = rounds_run
    return rounds_run


def _refresh_margins(queries: QuerySet, true_answers: np.ndarray, l2_sensitivity: np.ndarray,
                     ledger: PrivacyLedger, record: LoopRecord, backend, projection: ProjectionConfig, rng,
                     margins: np.ndarray, *, step_rho: float, closes_ledger: bool, charges: list[float],
                     round_index: int, n_rows: int, inverse_variance: bool, anneal_temperature: bool,
                     independence: PriorSettings | None, public: PublicInteractions | None) -> int:
    """The margin refresh (see the module's text): the base groups no measured CM table holds
    (of ``margins``, every base group) measured with what ``charges`` leave of ``step_rho``,
    split evenly, the last charge closing the step (or the ledger), then one projection;
    returns the next round's index."""
    refreshed = unheld_margins(queries, np.asarray(record.groups, dtype=np.int64))
    measure_rho = closing_charge(charges, step_rho)
    close = (lambda: ledger.rho_remaining) if closes_ledger else (lambda: closing_charge(charges, step_rho))
    measure_groups(record, queries, refreshed, true_answers, l2_sensitivity, ledger, rng, measure_rho=measure_rho,
                   round_index=round_index, n_rows=n_rows, close=close, charges=charges)
    fit_measurements(record, queries, backend, projection, inverse_variance=inverse_variance,
                     anneal=anneal_temperature, public=public, independence=independence)
    logger.debug("margin refresh, round %d: %d of %d base groups, rho %.4g", round_index, len(refreshed),
                 len(margins), measure_rho)
    return round_index + 1
