"""The select / measure / project loop over a plan (paper Alg. 2, design.md §4).

:func:`run_plan` walks the steps of a :mod:`polars_rap.strategy` plan. Each step spends
``rho_remaining * weight / (weights of the steps left)``: a selection round pays
``selection_share`` of it for a one-shot Gumbel top-K over the class's unmeasured groups (by
the L1 error of the current synthetic data's expected answers) and splits the rest evenly over
the Gaussian measurements of the groups picked; an outright step measures every unmeasured
group of its class, its whole share split evenly; an annealed step runs its own rounds
(:func:`polars_rap.annealing.run_annealed_step`, AIM's budget annealing), numbered on from
its place so that the rounds after it keep counting. After each step the relaxed data is
projected onto every measurement so far, warm-started. The last measurement of the plan
charges exactly what is left, so the ledger closes to the last float.

Only the true answers are private; they are read here only through the two charged
mechanisms (``gumbel_top_k``, ``gaussian_mechanism``; a numeric-histogram step, class
``"NH"``, releases its cells through the latter in
:func:`polars_rap.numeric_histograms.measure_histograms`). Everything recorded is released. Both
sample exactly (:mod:`polars_rap.samplers`): measurements add discrete Gaussian noise to the
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

from polars_rap.histogram_nodes import node_groups_of
from polars_rap.independence_prior import PriorSettings, independence_pseudo_targets
from polars_rap.loop_record import LoopRecord, class_fit_lines, fit_figures
from polars_rap.numeric_histograms import measure_histograms
from polars_rap.plan_steps import Step, group_shares
from polars_rap.privacy import PrivacyLedger, gaussian_mechanism, gumbel_scale, gumbel_top_k
from polars_rap.projection import ProjectionConfig, RelaxedParams, project
from polars_rap.public_targets import PublicPrior
from polars_rap.queries import CLASS_CODES, QueryClass, QuerySet
from polars_rap.selection_scores import noise_shift_counts, selection_record, selection_scores
from polars_rap.shrinkage import shrink_marginal

__all__ = ["run_plan", "measure_groups", "fit_measurements"]

logger = logging.getLogger(__name__)

_CATEGORICAL_ONLY = ("CM", "NR", "BM")  # classes without thresholds: no temperature to anneal
_FINAL_TEMPERATURE = (*_CATEGORICAL_ONLY, "CP")
"""Classes whose annealed rounds project at the final temperature only: the categorical
prefixes' one threshold each is fitted through the rows' categories, on numerics already placed."""


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
    shrinkage: bool = False,
    size_exponent: float = 0.0,
    noise_aware: bool = False,
    prior: PublicPrior | None = None,
    independence: PriorSettings | None = None,
    progress: bool,
) -> LoopRecord:
    """Run ``plan`` on the workload ``queries`` (exact answers ``true_answers``, float64[m];
    per-group sensitivities float64[n_groups], answers being counts over ``n_rows``, public);
    charges ``ledger`` for every release and returns what was released. ``rng`` (a
    :class:`~polars_rap.samplers.SecureRandom`, or a seeded generator for research) draws all
    the noise. ``shrinkage`` projects onto
    shrunk categorical marginals (post-processing of the released answers);
    ``size_exponent`` splits a step's measurement budget by :func:`group_shares` of the
    measured groups' sizes (public), evenly when 0, unless the step sets its own
    (:attr:`~polars_rap.plan_steps.Step.size_exponent`). ``noise_aware`` subtracts each
    candidate's expected noise L1 norm from its selection score (:func:`expected_noise_l1`).
    ``prior`` (public answers, :mod:`polars_rap.public_targets`) may pull the projection's
    targets toward them and let each class's first selection score against them.
    ``independence`` (:class:`~polars_rap.independence_prior.PriorSettings`, None: off) fits
    the CM groups not measured toward conditional independence (given the label, or a measured
    third feature; :mod:`polars_rap.independence_prior`, post-processing)."""
    record = LoopRecord(params)
    group_class = queries.group_class
    available = np.ones(queries.n_groups, dtype=bool)
    weights_left = [float(w) for w in np.cumsum([s.weight for s in plan][::-1])[::-1]]
    rho = ledger.rho_budget
    bar = tqdm(plan, desc="RAP++ rounds", disable=not progress, unit="round")
    extra_rounds = 0  # rounds an annealed step ran beyond its one slot in the plan
    fitted_in_full = True  # the last projection run had max_steps, not max_steps_between
    for index, step in enumerate(bar):
        is_last = index == len(plan) - 1
        projection_now = projection if is_last else projection.between()  # the last keeps max_steps
        step_rho = ledger.rho_remaining * step.weight / weights_left[index]
        round_index = index + extra_rounds
        if step.annealed:  # its own loop of rounds, AIM's budget annealing
            from polars_rap.annealing import run_annealed_step  # it builds on this module

            extra_rounds += run_annealed_step(
                step, queries, true_answers, l1_sensitivity, l2_sensitivity, ledger, record, backend,
                projection_now, rng, step_rho=step_rho, closes_ledger=is_last, first_round=round_index,
                n_rows=n_rows,
                selection_share=selection_share if step.selection_share is None else step.selection_share,
                inverse_variance=inverse_variance, shrinkage=shrinkage,
                size_exponent=size_exponent if step.size_exponent is None else step.size_exponent,
                anneal_temperature=step.query_class not in _FINAL_TEMPERATURE, independence=independence,
                prior=prior,
            ) - 1
            fitted_in_full = projection_now is projection
            bar.set_postfix(cls=step.query_class, rounds=record.class_rounds[step.query_class],
                            rho=f"{ledger.rho_spent:.3g}/{rho:.3g}")
            continue
        candidates = np.flatnonzero(available & (group_class == CLASS_CODES[step.query_class]))
        if len(candidates) == 0:
            continue
        if step.query_class == "NH":  # histograms: one release each, its prefixes or nodes fitted
            measure_histograms(record, queries, candidates, true_answers, ledger, rng, measure_rho=step_rho,
                               round_index=round_index, n_rows=n_rows,
                               close=(lambda: ledger.rho_remaining) if is_last else None,
                               loss_scale=step.loss_scale, branching=step.branching,
                               node_groups=node_groups_of(queries))
            available[candidates] = False
            _project_step(record, queries, step, backend, projection_now, inverse_variance, prior, bar, ledger,
                          rho, round_index, len(candidates), independence)
            fitted_in_full = projection_now is projection
            continue
        k = len(candidates) if step.outright else min(step.k, len(candidates))
        chosen_by_gumbel = k < len(candidates)
        if chosen_by_gumbel:
            synthetic = backend.answers_relaxed(record.params.relaxed(), queries.take_groups(candidates), np.inf)
            if prior is not None:  # public values: the scores' sensitivity is unchanged
                synthetic = prior.reference_answers(step.query_class, queries.group_query_indices(candidates),
                                                    synthetic)
            true_counts = np.rint(true_answers[queries.group_query_indices(candidates)] * n_rows)
            sizes = queries.group_sizes[candidates]
            errors = selection_scores(true_counts, synthetic, sizes, n_rows)
            selection_l1 = float(l1_sensitivity[candidates].max())  # answer units: 2/n or 1/n
            measure_rho = (1.0 - selection_share) * step_rho
            shift = None
            if noise_aware:  # public, and whole counts below the scores' grid: still exact
                shift = noise_shift_counts(l2_sensitivity[candidates], sizes, measure_rho / k, n_rows)
                errors = errors - shift
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
                       n_rows=n_rows, shrinkage=shrinkage,
                       size_exponent=size_exponent if step.size_exponent is None else step.size_exponent,
                       close=(lambda: ledger.rho_remaining) if is_last else None, loss_scale=step.loss_scale)
        available[selected] = False
        if chosen_by_gumbel:
            record.selections[step.query_class] = selection_record(
                round_index, step.query_class, queries, candidates, synthetic, selected_local,
                gumbel_scale(selection_l1, selection_share * step_rho, k),
                record.noisy_parts[-len(selected):], record.noise_stds[-len(selected):], 1.0 / n_rows,
                None if shift is None else shift / n_rows,
            )
        _project_step(record, queries, step, backend, projection_now, inverse_variance, prior, bar, ledger,
                      rho, round_index, len(selected), independence)
        fitted_in_full = projection_now is projection
    bar.close()
    if not fitted_in_full and record.groups:  # the last step had nothing left to measure
        fit_measurements(record, queries, backend, projection, inverse_variance=inverse_variance, anneal=True,
                         warm=record.thresholds_fitted, prior=prior, independence=independence)
    if not progress and logger.isEnabledFor(logging.INFO):  # no bar to look at: one line per class
        for line in class_fit_lines(record, queries, plan, backend):
            logger.info(line)
    return record


def _project_step(record: LoopRecord, queries: QuerySet, step: Step, backend, projection: ProjectionConfig,
                  inverse_variance: bool, prior: PublicPrior | None, bar, ledger: PrivacyLedger, rho: float,
                  round_index: int, n_measured: int, independence: PriorSettings | None = None) -> None:
    """Project ``record.params`` onto every measurement so far (warm start), after a step."""
    anneal = step.query_class not in _CATEGORICAL_ONLY
    trace, stds, weights = fit_measurements(record, queries, backend, projection, inverse_variance=inverse_variance,
                                            anneal=anneal, warm=record.thresholds_fitted, prior=prior,
                                            independence=independence)
    record.thresholds_fitted |= anneal
    residual_rms, noise_rms = fit_figures(trace.exact_loss, stds, weights)
    bar.set_postfix(cls=step.query_class, fit=f"{residual_rms:.2g} rms, {residual_rms / noise_rms:.2f}x noise",
                    rho=f"{ledger.rho_spent:.3g}/{rho:.3g}")
    logger.debug(
        "step %d (%s): measured %d groups, %d Adam steps in %d temperature stages, "
        "exact loss %.4g, rho spent %.6g of %.6g", round_index, step.query_class, n_measured,
        trace.steps, trace.stages, trace.exact_loss, ledger.rho_spent, rho,
    )


def fit_measurements(record: LoopRecord, queries: QuerySet, backend, projection: ProjectionConfig, *,
                     inverse_variance: bool, anneal: bool, warm: bool = False, prior: PublicPrior | None = None,
                     independence: PriorSettings | None = None):
    """Project ``record.params`` (replaced by the result) onto every measurement so far;
    returns ``(trace, stds, weights)``: the projection's trace and each fitted answer's noise
    std and loss weight (float64[answers], weights of mean 1, or None when all equal).

    ``prior`` (public answers) may pull the targets toward them; ``independence`` (its
    settings, or None: off) adds the
    pseudo-targets of :mod:`polars_rap.independence_prior` for the CM groups not measured yet,
    once a categorical table is measured, as does a prior used for its ``interactions`` (then
    raked from the public tables; post-processing all)."""
    groups = np.asarray(record.groups, dtype=np.int64)
    sizes = queries.group_sizes[groups]
    targets = np.concatenate(record.targets)
    if prior is not None and prior.targets:  # post-processing of the noisy answers
        targets = prior.shrunk_targets(queries, groups, record.noisy_parts, record.noise_stds, targets)
    fitted, pseudo_stds = groups, None
    public_interactions = prior is not None and prior.interactions
    if independence is not None or public_interactions:
        public, memo = (prior.answers, prior.strength_residuals) if public_interactions else (None, None)
        pseudo_groups, pseudo_targets, prior_std = independence_pseudo_targets(
            record, queries, backend, public, memo, settings=independence)
        if len(pseudo_groups):
            fitted = np.concatenate([groups, pseudo_groups])
            targets = np.concatenate([targets, pseudo_targets])
            pseudo_stds = np.full(len(pseudo_targets), prior_std)
    weights = record.answer_weights(sizes, inverse_variance, pseudo_stds)
    stds = record.answer_stds(sizes)
    if pseudo_stds is not None:
        stds = np.concatenate([stds, pseudo_stds])
    floor = projection.noise_floor * float(np.sum((1.0 if weights is None else weights) * np.square(stds)))
    record.params, trace = project(record.params, queries.take_groups(fitted), targets, backend, projection,
                                   anneal=anneal, weights=weights, warm=warm, loss_floor=floor)
    return trace, stds, weights


def measure_groups(record: LoopRecord, queries: QuerySet, selected: np.ndarray, true_answers: np.ndarray,
                   l2_sensitivity: np.ndarray, ledger: PrivacyLedger, rng, *, measure_rho: float,
                   round_index: int, n_rows: int, shrinkage: bool = False,
                   size_exponent: float = 0.0, close=None, charges: list[float] | None = None,
                   loss_scale: float = 1.0) -> list[float]:
    """Measure each group of ``selected`` (int64[k]) with the Gaussian mechanism, charged to
    ``ledger``, and append it to ``record`` (its noisy answers, std and projection target);
    returns the stds (float, answer units), in order.

    ``measure_rho`` is split evenly over the groups, or by :func:`group_shares` of their sizes
    when ``size_exponent`` is set. ``close`` (a callable or None): the last group's charge is
    its value instead, read just before that charge, so that it is exactly what is left of a
    budget. ``charges`` (optional) gets each charge appended as it is made. ``loss_scale``:
    the groups' factor on their loss weights (:attr:`~polars_rap.plan_steps.Step.loss_scale`).
    """
    shares = group_shares(queries.group_sizes[selected], size_exponent) if size_exponent else None
    stds = []
    for position, group in enumerate(selected):
        if close is not None and position == len(selected) - 1:
            group_rho = close()
        elif shares is None:
            group_rho = measure_rho / len(selected)
        else:
            group_rho = measure_rho * float(shares[position])
        start, stop = queries.group_offsets[group], queries.group_offsets[group + 1]
        group_class = QueryClass.SHORT[queries.group_class[group]]  # a joined class's own name
        noisy, std = gaussian_mechanism(
            true_answers[start:stop], float(l2_sensitivity[group]), group_rho, ledger, rng,
            description=f"{group_class} group {group}", round=round_index, n_rows=n_rows,
        )
        if charges is not None:
            charges.append(group_rho)
        stds.append(std)
        shrunk = shrinkage and group_class == "CM"
        record.add(group, round_index, noisy, std, loss_scale=loss_scale,
                   target=shrink_marginal(noisy, queries.marginal_shape(group), std)[0] if shrunk else None)
    return stds
