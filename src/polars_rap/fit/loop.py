"""The select / measure / project loop over a plan (paper Alg. 2, design.md §4).

:func:`run_plan` walks the steps of a :mod:`polars_rap.fit.strategy` plan. Each step spends
``rho_remaining * weight / (weights of the steps left)``: a selection round pays
``selection_share`` of it for a one-shot Gumbel top-K over the class's unmeasured groups (by
the L1 error of the current synthetic data's expected answers) and splits the rest evenly over
the Gaussian measurements of the groups picked; an outright step measures every unmeasured
group of its class, its whole share split evenly; an annealed step runs its own rounds
(:func:`polars_rap.fit.annealing.run_annealed_step`, AIM's budget annealing), numbered on from
its place so that the rounds after it keep counting. After each step the relaxed data is
projected onto every measurement so far, warm-started. The last measurement of the plan
charges exactly what is left, so the ledger closes to the last float.

Only the true answers are private; they are read here only through the two charged
mechanisms (``gumbel_top_k``, ``gaussian_mechanism``; a numeric-histogram step, class
``"NH"``, releases its cells through the latter in
:func:`polars_rap.fit.numeric_histograms.measure_histograms`). Everything recorded is released. Both
sample exactly (:mod:`polars_rap.privacy.samplers`): measurements add discrete Gaussian noise to the
true counts (answers times the public n), and selection scores are exact floats in count
units (:func:`selection_scores`) so that their stated sensitivity holds for the very numbers
the exact exponential mechanisms read.
"""

from __future__ import annotations

import importlib.util
import logging

import numpy as np

if importlib.util.find_spec("ipywidgets") is not None:  # notebook bar in notebooks, text elsewhere
    from tqdm.auto import tqdm
else:  # tqdm.auto would warn at import that ipywidgets is missing
    from tqdm import tqdm

from polars_rap.fit.annealing import run_annealed_step
from polars_rap.fit.independence_prior import PriorSettings, PublicInteractions
from polars_rap.fit.loop_record import LoopRecord, class_fit_lines
from polars_rap.fit.numeric_histograms import measure_histograms
from polars_rap.fit.plan_steps import Step
from polars_rap.privacy.ledger import PrivacyLedger, gumbel_scale, gumbel_top_k
from polars_rap.fit.projection import ProjectionConfig, RelaxedParams
from polars_rap.workload.queries import CLASS_CODES, QuerySet
from polars_rap.fit.rounds import CATEGORICAL_ONLY, measure_groups, project_step
from polars_rap.privacy.selection_scores import selection_record, selection_scores

__all__ = ["run_plan"]

logger = logging.getLogger(__name__)


def run_plan(
    plan: list[Step],
    queries: QuerySet,
    true_answers: np.ndarray,
    l1_sensitivity: np.ndarray,
    l2_sensitivity: np.ndarray,
    ledger: PrivacyLedger,
    params: RelaxedParams,
    backend,
    projection: ProjectionConfig,
    rng,
    *,
    n_rows: int,
    selection_share: float,
    inverse_variance: bool,
    public: PublicInteractions | None = None,
    independence: PriorSettings | None = None,
    progress: bool,
) -> LoopRecord:
    """Run ``plan`` on the workload ``queries`` (exact answers ``true_answers``, float64[m];
    per-group sensitivities float64[n_groups], answers being counts over ``n_rows``, public);
    charges ``ledger`` for every release and returns what was released. ``rng`` (a
    :class:`~polars_rap.privacy.samplers.SecureRandom`, or a seeded generator for research) draws all
    the noise. A step's measurement budget is split evenly over the groups it measures.
    ``independence`` (:class:`~polars_rap.fit.independence_prior.PriorSettings`, None: off) fits
    the CM groups not measured toward conditional independence (given the label, or a measured
    third feature; :mod:`polars_rap.fit.independence_prior`, post-processing), and ``public``
    (a public table's answers, ``public_use="interactions"``) toward the public table's
    interactions where it covers a table."""
    record = LoopRecord(params)
    group_class = queries.group_class
    available = np.ones(queries.n_groups, dtype=bool)
    weights_left = [float(w) for w in np.cumsum([s.weight for s in plan][::-1])[::-1]]
    rho = ledger.rho_budget
    bar = tqdm(plan, desc="RAP++ rounds", disable=not progress, unit="round")
    extra_rounds = 0  # rounds an annealed step ran beyond its one slot in the plan
    for index, step in enumerate(bar):
        is_last = index == len(plan) - 1
        step_rho = ledger.rho_remaining * step.weight / weights_left[index]
        round_index = index + extra_rounds
        if step.annealed:  # its own loop of rounds, AIM's budget annealing
            extra_rounds += run_annealed_step(
                step, queries, true_answers, l1_sensitivity, l2_sensitivity, ledger, record, backend,
                projection, rng, step_rho=step_rho, closes_ledger=is_last, first_round=round_index,
                n_rows=n_rows,
                selection_share=selection_share if step.selection_share is None else step.selection_share,
                inverse_variance=inverse_variance, anneal_temperature=step.query_class not in CATEGORICAL_ONLY,
                independence=independence, public=public,
            ) - 1
            bar.set_postfix(cls=step.query_class, rounds=record.class_rounds[step.query_class],
                            rho=f"{ledger.rho_spent:.3g}/{rho:.3g}")
            continue
        candidates = np.flatnonzero(available & (group_class == CLASS_CODES[step.query_class]))
        if len(candidates) == 0:
            continue
        if step.query_class == "NH":  # histograms: one release each, its prefixes fitted
            measure_histograms(record, queries, candidates, true_answers, ledger, rng, measure_rho=step_rho,
                               round_index=round_index, n_rows=n_rows,
                               close=(lambda: ledger.rho_remaining) if is_last else None,
                               loss_scale=step.loss_scale)
            available[candidates] = False
            project_step(record, queries, step, backend, projection, inverse_variance, public, bar, ledger,
                          rho, round_index, len(candidates), independence)
            continue
        k = len(candidates) if step.outright else min(step.k, len(candidates))
        chosen_by_gumbel = k < len(candidates)
        if chosen_by_gumbel:
            synthetic = backend.answers_relaxed(record.params.relaxed(), queries.take_groups(candidates), np.inf)
            true_counts = np.rint(true_answers[queries.group_query_indices(candidates)] * n_rows)
            sizes = queries.group_sizes[candidates]
            errors = selection_scores(true_counts, synthetic, sizes, n_rows)
            selection_l1 = float(l1_sensitivity[candidates].max())  # answer units: 2/n or 1/n
            measure_rho = (1.0 - selection_share) * step_rho
            selected_local = gumbel_top_k(
                errors, k, float(np.rint(selection_l1 * n_rows)), selection_share * step_rho, ledger,
                rng, description=f"{step.query_class} selection", round=round_index,
            )
        else:  # selecting every candidate reveals nothing and costs nothing
            selected_local = np.arange(len(candidates))
            measure_rho = step_rho
            # Every group of the class left is measured now: an earlier Gumbel record's
            # unselected candidates are no longer unmeasured, so no bound is due for them.
            record.selections.pop(step.query_class, None)
        selected = candidates[selected_local]
        measure_groups(record, queries, selected, true_answers, l2_sensitivity, ledger, rng,
                       measure_rho=measure_rho, round_index=round_index,
                       n_rows=n_rows, close=(lambda: ledger.rho_remaining) if is_last else None,
                       loss_scale=step.loss_scale)
        available[selected] = False
        if chosen_by_gumbel:
            record.selections[step.query_class] = selection_record(
                round_index, step.query_class, queries, candidates, synthetic, selected_local,
                gumbel_scale(selection_l1, selection_share * step_rho, k),
                record.noisy_parts[-len(selected):], record.noise_stds[-len(selected):], 1.0 / n_rows,
            )
        project_step(record, queries, step, backend, projection, inverse_variance, public, bar, ledger,
                      rho, round_index, len(selected), independence)
    bar.close()
    if not progress and logger.isEnabledFor(logging.INFO):  # no bar to look at: one line per class
        for line in class_fit_lines(record, queries, plan, backend):
            logger.info(line)
    return record
