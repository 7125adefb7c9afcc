"""The privacy report of a synthesis, assembled from what the loop released.

Post-processing only: the noisy answers and their noise scales (from
:class:`polars_rap.fit.loop_record.LoopRecord`), confidence intervals built from them (the
simultaneous ones corrected for the most answers the public plan can measure), the last
Gumbel selection of each class (bounds on the groups never measured), and the returned
rows' answers on the workload. The true answers never reach this module.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from polars_rap.fit.loop_record import LoopRecord
from polars_rap.fit.plan_steps import Step
from polars_rap.workload.queries import CLASS_CODES, QueryClass, QuerySet
from polars_rap.privacy.report import PrivacyReport, interval_halfwidth, simultaneous_halfwidth, subgaussian_halfwidth, unmeasured_error_bounds
from polars_rap.io.source import DataSource, exact_answers
from polars_rap.workload.builders import describe_queries
from polars_rap.pipeline.arguments import RunSettings
from polars_rap.pipeline.decoding import Decoded
from polars_rap.pipeline.fitting import Fitted, Workload
from polars_rap.pipeline.inputs import Inputs
from polars_rap.public.labels import LabelModel
from polars_rap.public.prior import PublicTable

__all__ = ["bonferroni_answers", "build_report", "most_answers_by_class", "release_report"]


def release_report(inputs: Inputs, workload: Workload, fitted: Fitted, decoded: Decoded,
                   run: RunSettings) -> PrivacyReport:
    """The run's :class:`~polars_rap.privacy.report.PrivacyReport`: its ledger, the loop's
    measurements with their intervals, the returned rows' answers, the settings as they ran
    and the public table's record. Post-processing of released values only."""
    strategy, projection = run.strategy, run.projection
    described = strategy.describe()
    if "numeric_coupling" in described:  # the strategy's settings as they ran: with released public rows, "fitted"
        described["numeric_coupling"] = decoded.numeric_coupling
    steps_run = {c: sum(1 for s in workload.plan if s.query_class == c) for c in workload.group_counts}  # "NR" too
    steps_run.update(fitted.record.class_rounds)  # an annealed class: the rounds it ran (released)
    parameters = dict(
        relaxed_rows=run.relaxed_rows, queries_per_round=run.queries_per_round, rounds=steps_run,
        n_linear_thresholds=run.n_linear_thresholds, n_mixed_marginals=run.n_mixed_marginals,
        max_marginal_cells=run.max_marginal_cells, selection_share=run.selection_share,
        inferred_columns=[r.name for r in inputs.requests],
        inference_share=run.inference_share if inputs.requests else 0.0,
        labels=list(inputs.domain.labels), rows=fitted.out_rows, backend=run.backend.__name__.rsplit(".", 1)[-1],
        strategy=described, decoding=strategy.decoding, numeric_coupling=decoded.numeric_coupling,
        warm_doublings=projection.warm_doublings, max_steps=projection.stage_steps, dropped_columns=run.drop,
        constraints=[] if inputs.constraints is None else inputs.constraints.describe(),
    )
    public_data = _public_record(inputs.public_table, inputs.public_uses, decoded.label_model, fitted.reweight)
    return build_report(inputs.budget, inputs.ledger, fitted.n_rows, workload.queries, inputs.domain, workload.plan,
                        fitted.record, decoded.frame, run.backend, run.confidence,
                        parameters=parameters, public_data=public_data)


def _public_record(public_table: PublicTable | None, uses: Sequence[str], label_model: LabelModel | None,
                   reweight: dict | None = None) -> dict | None:
    """The report's record of the public table (:meth:`PublicTable.record`), with the label
    model's ridge and share of redrawn rows when it drew the labels, and the release's record
    (``reweight``) when its uses released or checked anything, whose ``rho_charged`` (the fsum
    of the ledger events those uses made) replaces the table's 0.0; None without one."""
    if public_table is None:
        return None
    record = public_table.record(uses)
    if label_model is not None:
        record.update(label_ridge=label_model.ridge, label_share=label_model.share)
    if reweight is not None:
        record.update(reweight)
    return record


def most_answers_by_class(plan: list[Step], queries: QuerySet) -> dict[str, int]:
    """The most answers ``plan`` can measure on ``queries``, per query class (its short name).

    Per class, an outright step measures all its groups and a selection step at most its
    ``k`` largest; the sum is capped at the class's answers, since such steps pick among the
    groups not measured yet. An annealed step may measure a group again, so its rounds (at most
    T0 = ``annealed_rounds``) of at most the ``k`` largest groups each are added beyond that
    cap. An annealed step with a ``margin_reserve`` ends with the margin refresh
    (:mod:`polars_rap.fit.annealing`), which measures base marginals (``"BM"``) a second time:
    at most every one of them, added to that class beyond its cap. Public values only (the
    plan and the workload's group sizes), never which groups the noisy selections picked."""
    most = {}
    for name, code in CLASS_CODES.items():
        sizes = np.sort(queries.group_sizes[queries.group_class == code])[::-1].astype(np.int64)
        steps = [step for step in plan if step.query_class == name]
        once = sum(int(sizes.sum()) if step.outright else int(sizes[:step.k].sum())
                   for step in steps if not step.annealed)
        again = sum(step.annealed_rounds * int(sizes[:step.k].sum()) for step in steps if step.annealed)
        most[name] = min(once, int(sizes.sum())) + again
    refreshes = sum(1 for step in plan if step.annealed and step.margin_reserve > 0.0)
    base = int(queries.group_sizes[queries.group_class == CLASS_CODES["BM"]].sum())
    most["BM"] += refreshes * base
    return most


def bonferroni_answers(plan: list[Step], queries: QuerySet) -> int:
    """The most answers ``plan`` can measure on ``queries``: the count the simultaneous
    intervals are corrected for, the sum of :func:`most_answers_by_class`.

    It reads only public values, so the correction cannot depend on the data: with M fixed in
    advance and at least as many as measured, a union bound over the measured answers gives
    at most ``measured * alpha / M <= alpha``. A count taken after the selections would not.
    """
    return sum(most_answers_by_class(plan, queries).values())


def build_report(budget, ledger, n_rows: int, queries: QuerySet, domain, plan: list[Step],
                 record: LoopRecord, synthetic_frame: pl.DataFrame, backend_module,
                 confidence: float, parameters: dict, public_data: dict | None = None) -> PrivacyReport:
    """The :class:`~polars_rap.privacy.report.PrivacyReport` of a run: the ledger's events, one row
    per measured answer (noisy answer, std, intervals, the returned rows' answer, error
    bound) and the unmeasured groups' bounds. ``parameters`` gains ``bonferroni_answers``
    (see :func:`bonferroni_answers`) and ``bonferroni_by_class`` (its parts,
    :func:`most_answers_by_class`); ``public_data`` is the public table's record, if any
    (:meth:`polars_rap.public.prior.PublicTable.record`)."""
    groups, rounds, noisy_parts = record.groups, record.rounds, record.noisy_parts
    stds, selections = record.noise_stds, record.selections
    query_index = queries.group_query_indices(np.asarray(groups, dtype=np.int64))
    sizes = queries.group_sizes[groups] if groups else np.zeros(0, dtype=np.int64)
    noisy = np.concatenate(noisy_parts) if noisy_parts else np.zeros(0)
    std = np.repeat(np.asarray(stds, dtype=np.float64), sizes)
    # The noise is discrete Gaussian on counts: intervals widen by one count (1/n); a
    # histogram's prefix sums several draws and takes the sub-Gaussian bound instead.
    summed = np.repeat(np.asarray(record.noise_draws, dtype=np.int64), sizes) > 1
    by_class = most_answers_by_class(plan, queries)
    n_bonferroni = sum(by_class.values())
    halfwidth = np.where(summed, subgaussian_halfwidth(std, confidence),
                         interval_halfwidth(std, confidence, lattice_step=1.0 / n_rows))
    joint_halfwidth = np.where(summed, subgaussian_halfwidth(std, confidence, n_bonferroni),
                               simultaneous_halfwidth(std, confidence, n_bonferroni, lattice_step=1.0 / n_rows))
    # The returned rows' answers on the whole workload, in one batched pass (bounded memory).
    all_synthetic, _ = exact_answers(DataSource.from_input(synthetic_frame), domain, queries, backend_module)

    def synthetic_answers(group_ids) -> np.ndarray:
        return all_synthetic[queries.group_query_indices(np.asarray(group_ids, dtype=np.int64))]

    synthetic = synthetic_answers(groups)
    measurements = pl.DataFrame({
        "round": np.repeat(np.asarray(rounds, dtype=np.int64), sizes),
        "query_class": [QueryClass.SHORT[c] for c in queries.query_class[query_index]],
        "group": np.repeat(np.asarray(groups, dtype=np.int64), sizes),
        "query": query_index,
        "description": describe_queries(queries, domain, query_index),
        "noisy_answer": noisy,
        "noise_std": std,
        "ci_low": noisy - halfwidth,
        "ci_high": noisy + halfwidth,
        "ci_low_simultaneous": noisy - joint_halfwidth,
        "ci_high_simultaneous": noisy + joint_halfwidth,
        "synthetic_answer": synthetic,
        "error_bound": np.abs(synthetic - noisy) + halfwidth,
    }, schema_overrides={"query_class": pl.String, "description": pl.String})
    unmeasured, note = _unmeasured_bounds(queries, domain, selections, synthetic_answers, confidence,
                                          measured=groups)
    return PrivacyReport(
        epsilon=budget.epsilon, delta=budget.delta, rho_budget=budget.rho,
        rho_spent=ledger.rho_spent, n_rows=n_rows, events=ledger.events,
        measurements=measurements, confidence=confidence,
        parameters={**parameters, "bonferroni_answers": n_bonferroni, "bonferroni_by_class": by_class},
        conversion_delta=budget.conversion_delta, approximate_delta=budget.approximate_delta,
        unmeasured=unmeasured, unmeasured_note=note, public_data=public_data,
    )


def _unmeasured_bounds(queries: QuerySet, domain, selections, synthetic_answers, confidence, measured=()):
    """The unmeasured groups' error bounds (a frame) and a note on which have none, and why.

    A candidate the last selection passed over but an earlier round measured (annealed rounds
    select among every group of their class, measured or not: :mod:`polars_rap.fit.annealing`)
    has its measurement's interval instead, so it is left out (``measured``: group ids)."""
    parts = []
    for record in selections.values():
        bounds = unmeasured_error_bounds(record, queries.group_sizes,
                                         synthetic_answers(record.candidates), confidence)
        groups = record.candidates[record.unmeasured]
        never = ~np.isin(groups, np.asarray(measured, dtype=np.int64))
        bounds, groups = bounds[never], groups[never]
        first_query = queries.group_offsets[groups]
        parts.append(pl.DataFrame({
            "query_class": [QueryClass.SHORT[c] for c in queries.group_class[groups]],  # joined classes too
            "group": groups,
            "description": describe_queries(queries, domain, first_query),
            "round": np.full(len(groups), record.round, dtype=np.int64),
            "error_bound": bounds,
        }, schema_overrides={"query_class": pl.String, "description": pl.String}))
    schema = {"query_class": pl.String, "group": pl.Int64, "description": pl.String,
              "round": pl.Int64, "error_bound": pl.Float64}
    frame = pl.concat(parts) if parts else pl.DataFrame(schema=schema)
    note = (
        "Bounds cover the workload's groups never measured, from the last selection each "
        "competed in; queries outside the workload (e.g. marginals over max_marginal_cells "
        "cells, classes with no rounds) have none."
    )
    return frame.cast(schema), note
