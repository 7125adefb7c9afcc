"""An independence prior for the categorical marginals a run did not measure.

When a run measures only some of its categorical-marginal (CM) tables (an annealed CM step,
:mod:`polars_rap.annealing`), the relaxed projection fits the measured ones and leaves every
other table's interaction to chance: whatever the relaxed rows happen to hold. AIM infers an
unmeasured table from its graphical model, the maximum-entropy distribution given what it
measured; given the label, that makes two features that share no measured table independent.
On acs-income-CA at ε = 1 the conditional-independence table built from the true feature x
label margins is closer to the truth than RAP++'s fit (every table measured) on 110 of its 153
tables (seed 0; ``bench/results/ablation_independence_prior.md``).

This module gives the projection that prior. Before each projection, every CM group not
measured yet, a table ``T[a, b, c]`` over two features and the label, gets a *pseudo-target*:
the conditional independence fit of the relaxed data's own table,

    m[a, b, c] = T[a, +, c] * T[+, b, c] / T[+, +, c],

weighed in the loss as if it were a measurement of std ``prior_std`` per cell (the noisiest CM
measurement so far: a table the selection left out is one whose interaction, at that noise,
was not worth its budget). The target keeps the table's margins where the measured tables put
them and pulls its interaction toward zero; once the table is measured its pseudo-target is
dropped and the measurement alone is fitted. The targets are recomputed at every projection,
from the rows the last one left.

Privacy: the pseudo-targets are functions of the relaxed rows, themselves fitted to released
measurements only, and of public shapes; ``prior_std`` is a function of the noise stds, fixed
by the public plan and the released budget of each round. The prior reads nothing private and
costs no budget (post-processing).
"""

from __future__ import annotations

import numpy as np

from typing import TYPE_CHECKING

from polars_rap.queries import QueryClass, QuerySet

if TYPE_CHECKING:
    from polars_rap.rounds import LoopRecord

__all__ = ["conditional_independence", "independence_pseudo_targets", "independence_targets",
           "unmeasured_marginals"]


def conditional_independence(table: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """float64[prod(shape)]: the independence fit of ``table``'s first two axes given the
    others (``table``: cells in row-major order over ``shape``, at least two axes). Negative
    margins are clipped to 0 first; where a slice of the trailing axes has no mass the fit is 0."""
    cube = np.asarray(table, dtype=np.float64).reshape(shape[0], shape[1], -1)
    row = np.clip(cube.sum(axis=1, keepdims=True), 0.0, None)  # T[a, +, c]
    column = np.clip(cube.sum(axis=0, keepdims=True), 0.0, None)  # T[+, b, c]
    total = row.sum(axis=0, keepdims=True)  # T[+, +, c]
    return np.divide(row * column, total, out=np.zeros(cube.shape), where=total > 0.0).ravel()


def unmeasured_marginals(queries: QuerySet, measured) -> np.ndarray:
    """int64[g]: the CM groups of ``queries`` with at least two axes that are not in
    ``measured`` (group ids), in id order."""
    cm = queries.group_class == QueryClass.CATEGORICAL_MARGINAL
    cm[np.asarray(list(measured), dtype=np.int64)] = False
    axes = np.diff(queries.group_column_offsets)
    return np.flatnonzero(cm & (axes >= 2)).astype(np.int64)


def independence_targets(queries: QuerySet, groups: np.ndarray, answers: np.ndarray) -> np.ndarray:
    """float64[answers of ``groups``]: each group's :func:`conditional_independence` fit of its
    ``answers`` (the relaxed data's, float[answers of ``groups``], concatenated in order)."""
    answers = np.asarray(answers, dtype=np.float64)
    sizes = queries.group_sizes[groups]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    out = np.empty(len(answers), dtype=np.float64)
    for i, group in enumerate(groups):
        part = slice(starts[i], starts[i + 1])
        out[part] = conditional_independence(answers[part], queries.marginal_shape(int(group)))
    return out


def independence_pseudo_targets(record: LoopRecord, queries: QuerySet,
                                backend) -> tuple[np.ndarray, np.ndarray, float]:
    """``(groups, targets, prior_std)`` of this prior for ``record``'s relaxed data now: the CM groups not measured (int64[g]), their pseudo-targets (float64,
    concatenated) and the std they are weighed with, the largest of the categorical (CM and
    base-marginal) measurements'; no groups before any such measurement."""
    groups = np.asarray(record.groups, dtype=np.int64)
    categorical = np.isin(queries.group_class[groups], (QueryClass.CATEGORICAL_MARGINAL, QueryClass.BASE_MARGINAL))
    unmeasured = unmeasured_marginals(queries, groups)
    if not categorical.any() or len(unmeasured) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0), 0.0
    prior_std = float(np.max(np.asarray(record.noise_stds)[categorical]))
    answers = backend.answers_relaxed(record.params.relaxed(), queries.take_groups(unmeasured), np.inf)
    return unmeasured, independence_targets(queries, unmeasured, answers), prior_std
