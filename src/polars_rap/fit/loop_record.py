"""What the select / measure / project loop released (:class:`LoopRecord`), the weights it
gives each measured answer in the projection loss, and what the fit says about itself
(:func:`fit_figures`, :func:`class_fit_lines`: residuals in units of the noise)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from polars_rap.fit.plan_steps import Step
from polars_rap.fit.projection import RelaxedParams
from polars_rap.workload.queries import CLASS_CODES, QuerySet
from polars_rap.privacy.report import SelectionRecord

__all__ = ["LoopRecord", "class_fit_lines", "fit_figures"]


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
    prefixes, :mod:`polars_rap.fit.numeric_histograms`): how its interval is drawn."""
    loss_scales: list[float] = field(default_factory=list)
    """Factor on each group's answers' weights in the projection loss (its step's
    :attr:`~polars_rap.fit.plan_steps.Step.loss_scale`)."""
    targets: list[np.ndarray] = field(default_factory=list)
    selections: dict[str, SelectionRecord] = field(default_factory=dict)
    class_rounds: dict[str, int] = field(default_factory=dict)
    """Rounds run by each class measured by an annealed step (data-dependent, released)."""
    thresholds_fitted: bool = False
    """Whether a projection with thresholds has run: the next one starts warm
    (:attr:`polars_rap.fit.projection.ProjectionConfig.warm_doublings`)."""

    def add(self, group: int, round_index: int, noisy: np.ndarray, std: float, *, draws: int = 1,
            loss_scale: float = 1.0) -> None:
        """Record one measured group: its noisy answers (its projection target) and std, the
        noise draws summed into each answer and its loss scale."""
        self.groups.append(int(group))
        self.rounds.append(round_index)
        self.noisy_parts.append(noisy)
        self.noise_stds.append(std)
        self.noise_draws.append(draws)
        self.loss_scales.append(float(loss_scale))
        self.targets.append(noisy)

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
