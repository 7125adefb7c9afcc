"""Public answers in the loop: targets pulled toward them, and a first selection against them.

A public table's answers ``p`` on the workload (:meth:`polars_rap.public.prior.PublicTable.answers`)
serve the RAP++ loop (:func:`polars_rap.fit.loop.run_plan`) in two optional ways here (a third,
``"interactions"``, is :mod:`polars_rap.fit.independence_prior`'s):

``"targets"``
    Each measured answer ``y = q(D) + N(0, s^2)`` is replaced, as the projection's target, by
    the positive-part James-Stein estimate toward ``p``::

        y_hat = p + c (y - p),   c = max(0, 1 - (d - 2) / sum((y - p)^2 / s^2))

    over ``d`` answers at once: one marginal group's cells when it has at least 3, else all
    the measured small groups of its class pooled (single thresholds, label pairs). With
    ``p`` fixed before the noise is drawn (it is public), James-Stein's estimate has lower
    expected squared error, in units of each answer's noise, than ``y`` itself for ``d >= 3``
    whatever the true answers: where the public table is right and the noise large, ``c`` is
    near 0 and the target near ``p``; where the table is wrong, ``y - p`` stands out of the
    noise, ``c`` is near 1 and the measurement wins. Pooled factors are recomputed as
    measurements arrive. Answers without a public answer (queries over columns the table
    lacks) keep their own target.

``"selection"``
    The first selection round of each query class scores its candidates by their L1 error
    against the public answers instead of the relaxed rows' (whose ``n_relaxed``-row sample
    of the public table is noisier); a candidate without public answers keeps the relaxed
    rows' answers. Any fixed public reference keeps the scores' sensitivity, so the
    selection's privacy is unchanged, and the unmeasured-query bounds, which hold for any
    reference fixed before the true answers are read, keep theirs.

Both are post-processing of released values and public data: no budget, nothing private read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from polars_rap.workload.queries import QueryClass, QuerySet

__all__ = ["PublicPrior", "james_stein_toward"]

_MIN_ANSWERS = 3
"""James-Stein needs at least 3 answers at once to dominate the noisy answers."""


def james_stein_toward(noisy: np.ndarray, prior: np.ndarray, noise_std: np.ndarray) -> tuple[np.ndarray, float]:
    """``(estimate, factor)``: ``noisy`` (float64[d]) pulled toward ``prior`` (float64[d]) by
    the positive-part James-Stein ``factor`` in ``[0, 1]`` over standardised residuals
    (``noise_std`` float64[d] > 0, each answer's noise std). Fewer than 3 answers are
    returned as they are (factor 1).

    >>> estimate, factor = james_stein_toward(np.array([0.3, 0.2, 0.5]), np.array([0.3, 0.3, 0.4]),
    ...                                       np.full(3, 0.1))
    >>> round(factor, 3), np.round(estimate, 3).tolist()
    (0.5, [0.3, 0.25, 0.45])
    """
    noisy = np.asarray(noisy, dtype=np.float64)
    residual = noisy - prior
    if len(noisy) < _MIN_ANSWERS:
        return noisy.copy(), 1.0
    energy = float(np.sum(np.square(residual / noise_std)))
    if energy <= 0.0:
        return np.asarray(prior, dtype=np.float64).copy(), 0.0
    factor = max(0.0, 1.0 - (len(noisy) - 2) / energy)
    return prior + factor * residual, factor


@dataclass(eq=False)
class PublicPrior:
    """The public answers of a workload and the loop's uses of them.

    Attributes
    ----------
    answers : float64[n_queries]
        The public table's answers, NaN where it has none.
    targets, selection, interactions : bool
        Whether measured answers are pulled toward ``answers``, whether each class's first
        selection scores against them, and whether the categorical marginals not measured are
        fitted toward their public interactions (:mod:`polars_rap.fit.independence_prior`).
    strength_residuals : list
        The memo of :func:`polars_rap.fit.independence_prior.public_strength` for this run: each
        measurement's residuals at every association strength (used with ``interactions``).
    factors : dict
        Per query class, the mean James-Stein factor over its measured answers with a public
        answer at the last projection (1: the measurements alone; 0: the public answers);
        released with the report (post-processing).
    """

    answers: np.ndarray
    targets: bool = False
    selection: bool = False
    interactions: bool = False
    factors: dict[str, float] = field(default_factory=dict)
    strength_residuals: list = field(default_factory=list, repr=False)
    _selected_classes: set = field(default_factory=set, repr=False)

    def reference_answers(self, query_class: str, query_index: np.ndarray, relaxed_answers: np.ndarray) -> np.ndarray:
        """The answers a selection round of ``query_class`` scores against: the public answers
        (where they exist) in the class's first selection round when ``selection`` is on, else
        ``relaxed_answers`` (float, the candidates' queries in order; ``query_index`` int64,
        their indices in the workload)."""
        if not self.selection or query_class in self._selected_classes:
            return relaxed_answers
        self._selected_classes.add(query_class)
        public = self.answers[query_index]
        return np.where(np.isnan(public), relaxed_answers, public)

    def shrunk_targets(self, queries: QuerySet, groups: np.ndarray, noisy_parts: list[np.ndarray],
                       noise_stds: list[float], own_targets: np.ndarray) -> np.ndarray:
        """float64[answers measured]: the projection's targets for the measured ``groups`` (in
        measurement order, with their noisy answers and per-group noise std), each group with
        public answers pulled toward them (module docstring), the others keeping
        ``own_targets`` (their noisy answers, or estimates of them). Updates :attr:`factors`."""
        groups = np.asarray(groups, dtype=np.int64)
        targets = np.asarray(own_targets, dtype=np.float64).copy()
        starts = np.concatenate([[0], np.cumsum([len(part) for part in noisy_parts])]).astype(np.int64)
        factor_of_answer = np.full(len(targets), np.nan)
        pooled: dict[int, list[int]] = {}
        for i, group in enumerate(groups):
            public = self.answers[queries.group_query_indices(group[None])]
            if np.isnan(public).any():
                continue
            if len(public) >= _MIN_ANSWERS:
                stds = np.full(len(public), noise_stds[i])
                targets[starts[i]:starts[i + 1]], factor = james_stein_toward(noisy_parts[i], public, stds)
                factor_of_answer[starts[i]:starts[i + 1]] = factor
            else:
                pooled.setdefault(int(queries.group_class[group]), []).append(i)
        for members in pooled.values():
            where = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in members])
            public = np.concatenate([self.answers[queries.group_query_indices(groups[i][None])] for i in members])
            noisy = np.concatenate([noisy_parts[i] for i in members])
            stds = np.concatenate([np.full(starts[i + 1] - starts[i], noise_stds[i]) for i in members])
            if len(noisy) >= _MIN_ANSWERS:
                targets[where], factor = james_stein_toward(noisy, public, stds)
                factor_of_answer[where] = factor
        sizes = queries.group_sizes[groups]
        answer_class = np.repeat(queries.group_class[groups], sizes)
        self.factors = {QueryClass.SHORT[code]: float(np.nanmean(factor_of_answer[answer_class == code]))
                        for code in np.unique(answer_class)
                        if not np.isnan(factor_of_answer[answer_class == code]).all()}
        return targets
