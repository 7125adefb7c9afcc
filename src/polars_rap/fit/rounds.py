"""The steps of the select / measure / project loop: measure a step's groups with the Gaussian
mechanism (:func:`measure_groups`) and project the relaxed data onto every measurement so far
(:func:`fit_measurements`, :func:`project_step`). :func:`polars_rap.fit.loop.run_plan` walks a
plan through them.

Only the true answers are private; they are read here only through the charged Gaussian
mechanism, which samples exactly (:mod:`polars_rap.privacy.samplers`): discrete Gaussian noise on the
true counts (answers times the public n).
"""

from __future__ import annotations

import logging

import numpy as np

from polars_rap.fit.independence_prior import PriorSettings, PublicInteractions, independence_pseudo_targets
from polars_rap.fit.loop_record import LoopRecord, fit_figures
from polars_rap.fit.plan_steps import Step
from polars_rap.privacy.ledger import PrivacyLedger, gaussian_mechanism
from polars_rap.fit.projection import ProjectionConfig, project
from polars_rap.workload.queries import QueryClass, QuerySet

__all__ = ["CATEGORICAL_ONLY", "measure_groups", "fit_measurements", "project_step"]

logger = logging.getLogger(__name__)

CATEGORICAL_ONLY = ("CM", "NR", "BM")
"""Classes without thresholds: no temperature to anneal, their projections run at the final one."""



def project_step(record: LoopRecord, queries: QuerySet, step: Step, backend, projection: ProjectionConfig,
                  inverse_variance: bool, public: PublicInteractions | None, bar, ledger: PrivacyLedger, rho: float,
                  round_index: int, n_measured: int, independence: PriorSettings | None = None) -> None:
    """Project ``record.params`` onto every measurement so far (warm start), after a step."""
    anneal = step.query_class not in CATEGORICAL_ONLY
    trace, stds, weights = fit_measurements(record, queries, backend, projection, inverse_variance=inverse_variance,
                                            anneal=anneal, warm=record.thresholds_fitted, public=public,
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
                     inverse_variance: bool, anneal: bool, warm: bool = False,
                     public: PublicInteractions | None = None, independence: PriorSettings | None = None):
    """Project ``record.params`` (replaced by the result) onto every measurement so far;
    returns ``(trace, stds, weights)``: the projection's trace and each fitted answer's noise
    std and loss weight (float64[answers], weights of mean 1, or None when all equal).

    ``independence`` (its settings, or None: off) adds the pseudo-targets of
    :mod:`polars_rap.fit.independence_prior` for the CM groups not measured yet, once a
    categorical table is measured, as does ``public`` (a public table's answers, then raked from
    its tables; post-processing all)."""
    groups = np.asarray(record.groups, dtype=np.int64)
    sizes = queries.group_sizes[groups]
    targets = np.concatenate(record.targets)
    fitted, pseudo_stds = groups, None
    if independence is not None or public is not None:
        answers, memo = (public.answers, public.strength_residuals) if public is not None else (None, None)
        pseudo_groups, pseudo_targets, prior_std = independence_pseudo_targets(
            record, queries, backend, answers, memo, settings=independence)
        if len(pseudo_groups):
            fitted = np.concatenate([groups, pseudo_groups])
            targets = np.concatenate([targets, pseudo_targets])
            pseudo_stds = np.full(len(pseudo_targets), prior_std)
    weights = record.answer_weights(sizes, inverse_variance, pseudo_stds)
    stds = record.answer_stds(sizes)
    if pseudo_stds is not None:
        stds = np.concatenate([stds, pseudo_stds])
    record.params, trace = project(record.params, queries.take_groups(fitted), targets, backend, projection,
                                   anneal=anneal, weights=weights, warm=warm)
    return trace, stds, weights


def measure_groups(record: LoopRecord, queries: QuerySet, selected: np.ndarray, true_answers: np.ndarray,
                   l2_sensitivity: np.ndarray, ledger: PrivacyLedger, rng, *, measure_rho: float,
                   round_index: int, n_rows: int, close=None, charges: list[float] | None = None,
                   loss_scale: float = 1.0) -> list[float]:
    """Measure each group of ``selected`` (int64[k]) with the Gaussian mechanism, charged to
    ``ledger``, and append it to ``record`` (its noisy answers and std); returns the stds
    (float, answer units), in order.

    ``measure_rho`` is split evenly over the groups. ``close`` (a callable or None): the last
    group's charge is its value instead, read just before that charge, so that it is exactly
    what is left of a budget. ``charges`` (optional) gets each charge appended as it is made.
    ``loss_scale``: the groups' factor on their loss weights
    (:attr:`~polars_rap.fit.plan_steps.Step.loss_scale`).
    """
    stds = []
    for position, group in enumerate(selected):
        if close is not None and position == len(selected) - 1:
            group_rho = close()
        else:
            group_rho = measure_rho / len(selected)
        start, stop = queries.group_offsets[group], queries.group_offsets[group + 1]
        group_class = QueryClass.SHORT[queries.group_class[group]]
        noisy, std = gaussian_mechanism(
            true_answers[start:stop], float(l2_sensitivity[group]), group_rho, ledger, rng,
            description=f"{group_class} group {group}", round=round_index, n_rows=n_rows,
        )
        if charges is not None:
            charges.append(group_rho)
        stds.append(std)
        record.add(group, round_index, noisy, std, loss_scale=loss_scale)
    return stds
