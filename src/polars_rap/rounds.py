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
import math
from dataclasses import dataclass, field

import numpy as np

if importlib.util.find_spec("ipywidgets") is not None:  # notebook bar in notebooks, text elsewhere
    from tqdm.auto import tqdm
else:  # tqdm.auto would warn at import that ipywidgets is missing
    from tqdm import tqdm

from polars_rap.independence_prior import independence_pseudo_targets
from polars_rap.numeric_histograms import measure_histograms
from polars_rap.privacy import PrivacyLedger, gaussian_mechanism, gumbel_scale, gumbel_top_k
from polars_rap.projection import ProjectionConfig, RelaxedParams, project
from polars_rap.public_targets import PublicPrior
from polars_rap.queries import QueryClass, QuerySet
from polars_rap.report import SelectionRecord
from polars_rap.shrinkage import shrink_marginal
from polars_rap.strategy import Step, group_shares

__all__ = ["CLASS_CODES", "LoopRecord", "run_plan", "fit_figures", "class_fit_lines", "measure_groups",
           "noise_shift_counts", "selection_scores", "fit_measurements"]

logger = logging.getLogger(__name__)

CLASS_CODES = {"CM": QueryClass.CATEGORICAL_MARGINAL, "MM": QueryClass.MIXED_MARGINAL,
               "LT": QueryClass.LINEAR_THRESHOLD, "NR": QueryClass.NULL_RATE,
               "BM": QueryClass.BASE_MARGINAL, "NH": QueryClass.NUMERIC_HISTOGRAM}
_CATEGORICAL_ONLY = ("CM", "NR", "BM")  # classes without thresholds: no temperature to anneal


@dataclass
class LoopRecord:
    """What the loop released, in measurement order: group ids (int), the step (round) each
    was measured in, its noisy answers (float64 arrays) and per-answer noise std, and the
    projection's targets (the noisy answers, or their shrunk estimates); the last
    Gumbel selection of each class that still has unmeasured groups (for their bounds; a
    class whose leftovers a later step measured without selection has none); the final
    relaxed parameters. An annealed step may measure a group more than once: its id then
    appears once per measurement, each with its own answers and std."""

    params: RelaxedParams
    groups: list[int] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    noisy_parts: list[np.ndarray] = field(default_factory=list)
    noise_stds: list[float] = field(default_factory=list)
    noise_draws: list[int] = field(default_factory=list)
    """Independent noise draws summed into each answer of the group (1 but for a histogram's
    prefixes, :mod:`polars_rap.numeric_histograms`): how its interval is drawn."""
    loss_scales: list[float] = field(default_factory=list)
    """Factor on each group's answers' weights in the projection loss (its step's
    :attr:`~polars_rap.strategy.Step.loss_scale`)."""
    targets: list[np.ndarray] = field(default_factory=list)
    selections: dict[str, SelectionRecord] = field(default_factory=dict)
    class_rounds: dict[str, int] = field(default_factory=dict)
    """Rounds run by each class measured by an annealed step (data-dependent, released)."""
    thresholds_fitted: bool = False
    """Whether a projection with thresholds has run: the next one starts warm
    (:attr:`polars_rap.projection.ProjectionConfig.warm_doublings`)."""

    def add(self, group: int, round_index: int, noisy: np.ndarray, std: float, *, draws: int = 1,
            target: np.ndarray | None = None, loss_scale: float = 1.0) -> None:
        """Record one measured group: its noisy answers and std, the noise draws summed into
        each answer, its projection target (the noisy answers unless given) and loss scale."""
        self.groups.append(int(group))
        self.rounds.append(round_index)
        self.noisy_parts.append(noisy)
        self.noise_stds.append(std)
        self.noise_draws.append(draws)
        self.loss_scales.append(float(loss_scale))
        self.targets.append(noisy if target is None else target)

    def answer_stds(self, sizes: np.ndarray) -> np.ndarray:
        """float64[answers measured]: each answer's noise std (``sizes``: each group's answers)."""
        return np.repeat(np.asarray(self.noise_stds, dtype=np.float64), sizes)

    def answer_weights(self, sizes: np.ndarray, inverse_variance: bool,
                       extra_stds: np.ndarray | None = None) -> np.ndarray | None:
        """float64[answers measured]: each answer's weight in the projection loss, ``1 /
        std**2`` (1 unless ``inverse_variance``) times its group's loss scale, scaled to mean 1
        (None when every weight is equal). ``sizes``: each group's answers. ``extra_stds``
        (float64[e], optional): answers fitted after the measured ones (a prior's
        pseudo-targets), each weighed as a measurement of that std with loss scale 1; the
        weights are then always an array, over the measured answers and those.

        std is the discrete Gaussian's scale sigma, not its variance's root: the variance is
        below sigma^2 by a relative 8 pi^2 sigma^2 exp(-2 pi^2 sigma^2) or so (2e-7 at sigma
        = 1 count, 1e-74 at 3), the same for every answer to that precision, and the weights
        are relative, so sigma^2 is the simple and (for intervals) conservative choice."""
        scaled = any(scale != 1.0 for scale in self.loss_scales)
        if not inverse_variance and not scaled and extra_stds is None:
            return None
        extra = np.zeros(0) if extra_stds is None else np.asarray(extra_stds, dtype=np.float64)
        stds = np.concatenate([self.answer_stds(sizes), extra])
        weight = 1.0 / np.square(stds) if inverse_variance else np.ones(len(stds))
        if scaled:
            weight = weight * np.concatenate([np.repeat(np.asarray(self.loss_scales, dtype=np.float64), sizes),
                                              np.ones(len(extra))])
        return weight / weight.mean()


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
    independence: bool | str = False,
    progress: bool,
) -> LoopRecord:
    """Run ``plan`` on the workload ``queries`` (exact answers ``true_answers``, float64[m];
    per-group sensitivities float64[n_groups], answers being counts over ``n_rows``, public);
    charges ``ledger`` for every release and returns what was released. ``rng`` (a
    :class:`~polars_rap.samplers.SecureRandom`, or a seeded generator for research) draws all
    the noise. ``shrinkage`` projects onto
    shrunk categorical marginals (post-processing of the released answers);
    ``size_exponent`` splits a step's measurement budget by :func:`group_shares` of the
    measured groups' sizes (public), evenly when 0. ``noise_aware`` subtracts each
    candidate's expected noise L1 norm from its selection score (:func:`expected_noise_l1`).
    ``prior`` (public answers, :mod:`polars_rap.public_targets`) may pull the projection's
    targets toward them and let each class's first selection score against them.
    ``independence`` fits the CM groups not measured toward conditional independence
    (:mod:`polars_rap.independence_prior`, post-processing)."""
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
            from polars_rap.annealing import run_annealed_step  # it builds on this module

            extra_rounds += run_annealed_step(
                step, queries, true_answers, l1_sensitivity, l2_sensitivity, ledger, record, backend,
                projection, rng, step_rho=step_rho, closes_ledger=is_last, first_round=round_index,
                n_rows=n_rows,
                selection_share=selection_share if step.selection_share is None else step.selection_share,
                inverse_variance=inverse_variance, shrinkage=shrinkage, size_exponent=size_exponent,
                anneal_temperature=step.query_class not in _CATEGORICAL_ONLY, independence=independence,
                prior=prior,
            ) - 1
            bar.set_postfix(cls=step.query_class, rounds=record.class_rounds[step.query_class],
                            rho=f"{ledger.rho_spent:.3g}/{rho:.3g}")
            continue
        candidates = np.flatnonzero(available & (group_class == CLASS_CODES[step.query_class]))
        if len(candidates) == 0:
            continue
        if step.query_class == "NH":  # histograms: one release of cells each, prefixes fitted
            measure_histograms(record, queries, candidates, true_answers, ledger, rng, measure_rho=step_rho,
                               round_index=round_index, n_rows=n_rows,
                               close=(lambda: ledger.rho_remaining) if is_last else None,
                               loss_scale=step.loss_scale)
            available[candidates] = False
            _project_step(record, queries, step, backend, projection, inverse_variance, prior, bar, ledger,
                          rho, round_index, len(candidates), independence)
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
                       measure_rho=measure_rho, query_class=step.query_class, round_index=round_index,
                       n_rows=n_rows, shrinkage=shrinkage, size_exponent=size_exponent,
                       close=(lambda: ledger.rho_remaining) if is_last else None, loss_scale=step.loss_scale)
        available[selected] = False
        if chosen_by_gumbel:
            record.selections[step.query_class] = _selection_record(
                round_index, step.query_class, queries, candidates, synthetic, selected_local,
                gumbel_scale(selection_l1, selection_share * step_rho, k),
                record.noisy_parts[-len(selected):], record.noise_stds[-len(selected):], 1.0 / n_rows,
                None if shift is None else shift / n_rows,
            )
        _project_step(record, queries, step, backend, projection, inverse_variance, prior, bar, ledger,
                      rho, round_index, len(selected), independence)
    bar.close()
    if not progress and logger.isEnabledFor(logging.INFO):  # no bar to look at: one line per class
        for line in class_fit_lines(record, queries, plan, backend):
            logger.info(line)
    return record


def _project_step(record: LoopRecord, queries: QuerySet, step: Step, backend, projection: ProjectionConfig,
                  inverse_variance: bool, prior: PublicPrior | None, bar, ledger: PrivacyLedger, rho: float,
                  round_index: int, n_measured: int, independence: bool | str = False) -> None:
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
                     independence: bool | str = False):
    """Project ``record.params`` (replaced by the result) onto every measurement so far;
    returns ``(trace, stds, weights)``: the projection's trace and each fitted answer's noise
    std and loss weight (float64[answers], weights of mean 1, or None when all equal).

    ``prior`` (public answers) may pull the targets toward them; ``independence`` (True or
    ``"mediated"``, :attr:`~polars_rap.strategy.Strategy.independence_prior`) adds the
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
    if independence or public_interactions:
        public, memo = (prior.answers, prior.strength_residuals) if public_interactions else (None, None)
        pseudo_groups, pseudo_targets, prior_std = independence_pseudo_targets(
            record, queries, backend, public, memo, mediators=independence == "mediated")
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
                   query_class: str, round_index: int, n_rows: int, shrinkage: bool = False,
                   size_exponent: float = 0.0, close=None, charges: list[float] | None = None,
                   loss_scale: float = 1.0) -> list[float]:
    """Measure each group of ``selected`` (int64[k]) with the Gaussian mechanism, charged to
    ``ledger``, and append it to ``record`` (its noisy answers, std and projection target);
    returns the stds (float, answer units), in order.

    ``measure_rho`` is split evenly over the groups, or by :func:`group_shares` of their sizes
    when ``size_exponent`` is set. ``close`` (a callable or None): the last group's charge is
    its value instead, read just before that charge, so that it is exactly what is left of a
    budget. ``charges`` (optional) gets each charge appended as it is made. ``loss_scale``:
    the groups' factor on their loss weights (:attr:`~polars_rap.strategy.Step.loss_scale`).
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
        noisy, std = gaussian_mechanism(
            true_answers[start:stop], float(l2_sensitivity[group]), group_rho, ledger, rng,
            description=f"{query_class} group {group}", round=round_index, n_rows=n_rows,
        )
        if charges is not None:
            charges.append(group_rho)
        stds.append(std)
        shrunk = shrinkage and query_class == "CM"
        record.add(group, round_index, noisy, std, loss_scale=loss_scale,
                   target=shrink_marginal(noisy, queries.marginal_shape(group), std)[0] if shrunk else None)
    return stds


def expected_noise_l1(l2_sensitivity: np.ndarray, sizes: np.ndarray, group_rho: float) -> np.ndarray:
    """float64[groups]: the expected L1 norm of each group's Gaussian noise if measured with
    ``group_rho``: ``sqrt(2/pi) * sigma * cells``, ``sigma = l2 / sqrt(2 rho)`` (per answer;
    ``l2_sensitivity`` float64[groups], ``sizes`` int[groups] answers per group). Public."""
    sigma = np.asarray(l2_sensitivity, dtype=np.float64) / np.sqrt(2.0 * group_rho)
    return np.sqrt(2.0 / np.pi) * sigma * np.asarray(sizes, dtype=np.float64)


def noise_shift_counts(l2_sensitivity: np.ndarray, sizes: np.ndarray, group_rho: float,
                       n_rows: int) -> np.ndarray:
    """float64[groups]: what a noise-aware score subtracts from each group's L1 error (count
    units): its :func:`expected_noise_l1` at ``group_rho``, in counts, capped at the group's
    largest possible error (``n_rows * cells``) and rounded to whole counts.

    Whole counts lie on the grid of :func:`selection_scores` (a multiple of ``2**-bits``,
    below ``n_rows * (cells + 1)``), so ``score - shift`` is exact too; the shift is public
    (sizes, sensitivities, the planned rho and n), so it leaves the score's sensitivity as is.
    """
    noise_counts = expected_noise_l1(l2_sensitivity, sizes, group_rho) * n_rows
    return np.rint(np.minimum(noise_counts, float(n_rows) * np.asarray(sizes, dtype=np.float64)))


def fit_figures(loss: float, stds: np.ndarray, weights: np.ndarray | None) -> tuple[float, float]:
    """(residual rms, noise rms) of the projection's fit to its M measured answers.

    ``loss`` is the exact loss ``sum_i w_i r_i**2`` (weights of mean 1, or all 1) and
    ``stds`` (float64[M]) each answer's noise std; both figures are per answer, so they do not
    grow as measurements are added (the loss does). Their ratio is the fit's residual in units
    of the noise: near 1, the data fits the answers as well as their noise allows; with
    inverse-variance weights it is exactly the rms of ``r_i / std_i``.
    """
    weights = np.ones(len(stds)) if weights is None else weights
    residual_rms = math.sqrt(max(loss, 0.0) / len(stds))
    noise_rms = math.sqrt(float(np.sum(weights * np.square(stds))) / len(stds))
    return residual_rms, noise_rms


def class_fit_lines(record: LoopRecord, queries: QuerySet, plan: list[Step], backend) -> list[str]:
    """One line per query class: groups and answers measured, steps, and the final fit's
    residual rms (against the noisy answers, on the relaxed data with hard thresholds) in
    absolute terms and in units of each answer's noise std."""
    groups = np.asarray(record.groups)
    if len(groups) == 0:
        return []
    sizes = queries.group_sizes[groups]
    answers = backend.answers_relaxed(record.params.relaxed(), queries.take_groups(groups), np.inf)
    residuals = answers.astype(np.float64) - np.concatenate(record.noisy_parts)
    stds = record.answer_stds(sizes)
    answer_class = np.repeat(queries.group_class[groups], sizes)
    lines = []
    for name, code in CLASS_CODES.items():
        mine = answer_class == code
        if not mine.any():
            continue
        residual_rms = math.sqrt(float(np.mean(np.square(residuals[mine]))))
        relative = math.sqrt(float(np.mean(np.square(residuals[mine] / stds[mine]))))
        steps = record.class_rounds.get(name, sum(step.query_class == name for step in plan))
        lines.append(
            f"{name}: {len(np.unique(groups[queries.group_class[groups] == code]))} groups "
            f"({int(mine.sum())} answers) measured in {steps} step{'s' if steps > 1 else ''}; "
            f"fit residual rms {residual_rms:.2g} = {relative:.2f} x the noise std"
        )
    return lines


def selection_scores(true_counts: np.ndarray, synthetic: np.ndarray, sizes: np.ndarray,
                     n_rows: int) -> np.ndarray:
    """float64[n_groups]: each group's L1 error in count units, exact floats.

    Score of group g: sum over its queries j of |c_j - r_j / 2**bits|, with c_j the true
    count (float64 holding an integer) and r_j = rint(n s_j 2**bits) the synthetic answer s_j
    (clipped to [0, 1]) on a grid of 2**-bits counts: a post-processing of public values,
    fixed before the true counts are read. Every term and sum is an integer multiple of
    2**-bits below 2**53 of them (``bits`` is chosen for that from n and the largest group),
    so the floats are exact; replacing one row moves c by one in at most two cells of a
    marginal (one for a single query), so a score moves by at most 2 (1) exactly.
    ``sizes``: int64[n_groups], queries per group, concatenated in group order.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    if len(sizes) == 0:
        return np.zeros(0)
    largest = int(sizes.max())
    bits = max(0, 52 - (n_rows * (largest + 1) + largest).bit_length())
    scale = float(1 << bits)
    grid = np.rint(np.clip(np.asarray(synthetic, dtype=np.float64), 0.0, 1.0) * (n_rows * scale))
    terms = np.abs(np.asarray(true_counts, dtype=np.float64) * scale - grid).astype(np.int64)
    sums = np.add.reduceat(terms, np.concatenate([[0], np.cumsum(sizes)[:-1]]))
    return sums.astype(np.float64) / scale


def _selection_record(round_index, class_name, queries: QuerySet, candidates, synthetic,
                      selected_local, scale, noisy_parts, stds, lattice_step,
                      shift=None) -> SelectionRecord:
    """Keep what a Gumbel round released and compared against, for the unmeasured bounds
    (``shift``: float64[candidates] subtracted from the errors, answer units, or None)."""
    sizes = queries.group_sizes[candidates]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    gaps = np.array([
        np.abs(noisy - synthetic[starts[i]:starts[i + 1]]).sum()
        for i, noisy in zip(selected_local, noisy_parts, strict=True)
    ])
    return SelectionRecord(
        round=round_index, query_class=class_name, candidates=np.asarray(candidates, dtype=np.int64),
        candidate_answers=np.asarray(synthetic, dtype=np.float64), gumbel_scale=float(scale),
        selected=np.asarray(candidates[selected_local], dtype=np.int64),
        selected_gap=gaps, selected_std=np.asarray(stds, dtype=np.float64),
        selected_size=np.asarray(sizes[selected_local], dtype=np.int64), lattice_step=lattice_step,
        candidate_shift=None if shift is None else np.asarray(shift, dtype=np.float64),
    )
