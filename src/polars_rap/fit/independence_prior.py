"""An independence prior for the categorical marginals a run did not measure.

When a run measures only some of its categorical-marginal (CM) tables (an annealed CM step,
:mod:`polars_rap.fit.annealing`), the relaxed projection fits the measured ones and leaves every
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

weighed in the loss as if it were a measurement of std ``prior_std`` per cell (the noisiest
categorical measurement so far, CM or base marginal: a table the selection left out is one
whose interaction, at that noise, was not worth its budget). The target keeps the table's
margins where the measured tables put them and pulls its interaction toward zero; once the
table is measured its pseudo-target is dropped and the measurement alone is fitted. The
targets are recomputed at every projection, from the rows the last one left. On a wide table
each projection fits one slice of them, the slices taking turns (:mod:`polars_rap.fit.table_turns`).

``independence_prior="mediated"`` (:class:`PriorSettings`) goes one step further where the
measured tables allow it: a table ``(a, b, label)`` whose features each share a measured table
with a third feature ``c`` gets the maximum-entropy table given those two, ``a`` and ``b``
independent given ``(c, label)`` (:func:`mediated_interaction`, through the ``c`` of strongest
association, :func:`mediated_targets`), computed from the relaxed data's tables; only measured
tables whose interaction stands out of their noise by :data:`MEDIATOR_GATE` link
(:func:`significant_links`). With true tables this is 2.2x closer to the truth than independence
given the label on acs-income-CA and 1.4x on Adult (``bench/results/mediation_oracle.md``).

With a public table used for its ``"interactions"`` (:data:`polars_rap.public.prior.PUBLIC_USES`)
a table's pseudo-target is the public table's own table raked to the relaxed margins
(:func:`raked_interaction`): its odds ratios, not independence, where the public table has the
table's columns, its log odds ratios scaled by the strength (0, 1/4, ..., 1) that best fits the
tables measured so far (:func:`public_strength`): a public table from another population is
tempered toward independence, or falls back to it, instead of imposing its associations.

Privacy: the pseudo-targets are functions of the relaxed rows, themselves fitted to released
measurements only, of public shapes and of the public table; the strength is a function of the
released measurements and the public table; ``prior_std`` is a function of the noise stds,
fixed by the public plan and the released budget of each round. The prior reads nothing
private and costs no budget (post-processing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from polars_rap.fit.table_turns import table_stride, table_turn
from polars_rap.workload.queries import QueryClass, QuerySet

if TYPE_CHECKING:
    from polars_rap.fit.loop_record import LoopRecord

__all__ = ["MEDIATOR_GATE", "PriorSettings", "PublicInteractions", "conditional_independence",
           "conditional_mutual_information", "independence_pseudo_targets", "independence_targets",
           "mediated_interaction", "mediated_targets", "public_strength", "raked_interaction", "significant_links",
           "unmeasured_marginals"]


MEDIATOR_GATE = 1.0
"""A measured table links two features through its third only where its interaction stands out
of its noise, ``||y - m(y)||^2 > (1 + MEDIATOR_GATE) * cells * sigma^2``
(:func:`significant_links`). Without the gate (every measured table linking) a table measured
mostly as noise passed it on to the tables it mediates: on acs-income-CA at eps = 0.25 the gate
of 1 gives CM -8% and macro F1 +0.010 against the ungated prior, 3 seeds
(``bench/results/ablation_mediated_prior.md``)."""


@dataclass(frozen=True, slots=True)
class PriorSettings:
    """How a run's prior builds the pseudo-targets of the CM tables it has not measured
    (from :attr:`~polars_rap.fit.strategy.PlannedStrategy.independence_prior`)."""

    mediated: bool = False
    """Through a measured third feature where one links the two (:func:`mediated_targets`),
    the links gated by :data:`MEDIATOR_GATE`."""


@dataclass(eq=False)
class PublicInteractions:
    """A public table's answers for the pseudo-targets (``public_use="interactions"``), with
    :func:`public_strength`'s memo for one run.

    Attributes
    ----------
    answers : float64[n_queries]
        The public table's answers on the workload, NaN where it has none.
    strength_residuals : list
        :func:`public_strength`'s ``memo``: each measurement's residuals at every strength.
    """

    answers: np.ndarray
    strength_residuals: list = field(default_factory=list, repr=False)


def conditional_independence(table: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """float64[prod(shape)]: the independence fit of ``table``'s first two axes given the
    others (``table``: cells in row-major order over ``shape``, at least two axes). Negative
    margins are clipped to 0 first; where a slice of the trailing axes has no mass the fit is 0."""
    cube = np.asarray(table, dtype=np.float64).reshape(shape[0], shape[1], -1)
    row = np.clip(cube.sum(axis=1, keepdims=True), 0.0, None)  # T[a, +, c]
    column = np.clip(cube.sum(axis=0, keepdims=True), 0.0, None)  # T[+, b, c]
    total = row.sum(axis=0, keepdims=True)  # T[+, +, c]
    return np.divide(row * column, total, out=np.zeros(cube.shape), where=total > 0.0).ravel()


RAKING_SWEEPS = 25
"""Iterative proportional fitting sweeps of :func:`raked_interaction` (each fits both margins)."""
RAKING_FLOOR = 0.01
"""Part of the conditional-independence fit mixed into the public table before raking, so that
a cell the public table lacks (0) can still take the mass the relaxed margins give it."""


def raked_interaction(public: np.ndarray, table: np.ndarray, shape: tuple[int, ...],
                      strength: float = 1.0) -> np.ndarray:
    """float64[prod(shape)]: the ``public`` table's interaction of its first two axes, raked
    to ``table``'s margins over them given the rest (both float[prod(shape)], row-major over
    ``shape``, at least two axes), its log odds ratios scaled by ``strength`` (1: the public
    table's; 0: none, independence).

    Iterative proportional fitting from ``(1 - f) * public' + f * m`` (``public'`` the public
    table to the power ``strength``, scaled to ``table``'s mass per trailing slice, ``m`` =
    :func:`conditional_independence` of ``table``, ``f`` = :data:`RAKING_FLOOR`) alternately
    matches ``T[a, +, c]`` and ``T[+, b, c]`` (negative margins count as 0),
    :data:`RAKING_SWEEPS` times: the maximum-entropy table with those margins and those odds
    ratios."""
    cube = np.asarray(table, dtype=np.float64).reshape(shape[0], shape[1], -1)
    row = np.clip(cube.sum(axis=1, keepdims=True), 0.0, None)
    column = np.clip(cube.sum(axis=0, keepdims=True), 0.0, None)
    mass = row.sum(axis=0, keepdims=True)
    reference = np.clip(np.asarray(public, dtype=np.float64), 0.0, None).reshape(cube.shape) ** float(strength)
    reference_mass = reference.sum(axis=(0, 1), keepdims=True)
    scaled = np.divide(reference * mass, reference_mass, out=np.zeros(cube.shape), where=reference_mass > 0.0)
    # as conditional_independence
    independent = np.divide(row * column, mass, out=np.zeros(cube.shape), where=mass > 0.0)
    fitted = (1.0 - RAKING_FLOOR) * scaled + RAKING_FLOOR * independent
    for _ in range(RAKING_SWEEPS):
        sums = fitted.sum(axis=1, keepdims=True)
        fitted *= np.divide(row, sums, out=np.zeros(sums.shape), where=sums > 0.0)
        sums = fitted.sum(axis=0, keepdims=True)
        fitted *= np.divide(column, sums, out=np.zeros(sums.shape), where=sums > 0.0)
    return fitted.ravel()


def conditional_mutual_information(table: np.ndarray) -> float:
    """The mutual information (nats) of ``table``'s first two axes given its third
    (float[a, b, r], a distribution or a multiple of one: cells of mass <= 0 count as 0)."""
    cube = np.clip(np.asarray(table, dtype=np.float64), 0.0, None)
    total = cube.sum()
    if total <= 0.0:
        return 0.0
    cube = cube / total
    independent = conditional_independence(cube.ravel(), cube.shape).reshape(cube.shape)
    mass = (cube > 0.0) & (independent > 0.0)
    return float(np.sum(cube[mass] * np.log(cube[mass] / independent[mass])))


def mediated_interaction(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """float64[a, b, r]: the maximum-entropy table over ``a x b`` given ``r`` whose tables with
    a third feature ``c`` are ``first`` (float[a, c, r]) and ``second`` (float[b, c, r]) (the
    same ``c x r`` margins): ``a`` and ``b`` independent given ``(c, r)``,

        m[a, b, r] = sum_c first[a, c, r] * second[b, c, r] / first[+, c, r].

    Its ``a x r`` and ``b x r`` margins are ``first``'s and ``second``'s (where their ``c x r``
    margins agree); negative cells count as 0; a ``(c, r)`` slice with no mass adds nothing."""
    first = np.clip(np.asarray(first, dtype=np.float64), 0.0, None)
    second = np.clip(np.asarray(second, dtype=np.float64), 0.0, None)
    middle = first.sum(axis=0)  # [c, r]
    ratio = np.divide(second, middle[None], out=np.zeros(second.shape), where=middle[None] > 0.0)
    return np.einsum("xcr,ycr->xyr", first, ratio)


def _oriented_table(queries: QuerySet, group: int, answers: np.ndarray, first_column: int) -> np.ndarray:
    """float64[k_first, k_other, r]: a two-feature group's answers with ``first_column``'s axis
    first (the group's columns are ``(x, y, *rest)``; ``r`` the cells of ``rest``)."""
    shape = queries.marginal_shape(group)
    cube = np.asarray(answers, dtype=np.float64).reshape(shape[0], shape[1], -1)
    columns = queries.columns_of(group)
    return cube if int(columns[0]) == first_column else cube.transpose(1, 0, 2)


def mediated_targets(queries: QuerySet, groups: np.ndarray, measured: np.ndarray,
                     tables: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Per group of ``groups`` (CM groups ``(a, b, *rest)``) that a third feature ``c``
    mediates, its :func:`mediated_interaction` through the ``c`` whose measured groups
    ``(a, c, *rest)`` and ``(b, c, *rest)`` (both in ``measured``) hold the strongest
    association, ``max_c min(I(a; c | rest), I(b; c | rest))``
    (:func:`conditional_mutual_information`), as float64[cells of the group], row-major over its
    shape. ``tables`` maps every group of ``groups`` and ``measured`` to its (relaxed) answers.
    A group no ``c`` mediates, or whose best ``c`` carries no association, is left out."""
    offsets, columns = queries.group_column_offsets, queries.group_columns

    def key(group: int):
        cols = columns[offsets[group]:offsets[group + 1]]
        return frozenset((int(cols[0]), int(cols[1]))), tuple(int(c) for c in cols[2:])

    index = {key(int(g)): int(g) for g in measured if offsets[g + 1] - offsets[g] >= 2}
    strength: dict[int, float] = {}
    out = {}
    for group in map(int, groups):
        _, rest = key(group)
        a, b = (int(c) for c in columns[offsets[group]:offsets[group] + 2])
        best, best_score = None, 0.0
        for (other_pair, other_rest), first in index.items():
            if other_rest != rest or a not in other_pair or b in other_pair:
                continue
            (c,) = other_pair - {a}
            second = index.get((frozenset((b, c)), rest))
            if second is None:
                continue
            for g in (first, second):
                if g not in strength:
                    strength[g] = conditional_mutual_information(
                        tables[g].reshape(*queries.marginal_shape(g)[:2], -1))
            score = min(strength[first], strength[second])
            if score > best_score:
                best, best_score = (first, second, c), score
        if best is not None:
            first, second, c = best
            out[group] = mediated_interaction(_oriented_table(queries, first, tables[first], a),
                                              _oriented_table(queries, second, tables[second], b)).ravel()
    return out


def significant_links(record: LoopRecord, queries: QuerySet, gate: float = MEDIATOR_GATE) -> set[int]:
    """The measured CM groups (two features and the rest) whose interaction stands out of
    their noise: ``||y - m(y)||^2 > (1 + gate) * cells * sigma^2``, with ``y`` the group's
    measurements combined by inverse variance (std ``sigma``) and ``m`` their
    :func:`conditional_independence` fit. Without an interaction the left side is below
    ``cells * sigma^2`` in expectation (noise less what the margins absorb). A function of
    released answers and their public stds (post-processing)."""
    sums: dict[int, tuple[np.ndarray, float]] = {}
    for group, noisy, std in zip(record.groups, record.noisy_parts, record.noise_stds, strict=True):
        if queries.group_class[group] != QueryClass.CATEGORICAL_MARGINAL:
            continue
        weighted, precision = sums.get(int(group), (0.0, 0.0))
        sums[int(group)] = (weighted + np.asarray(noisy, dtype=np.float64) / std**2, precision + 1.0 / std**2)
    links = set()
    for group, (weighted, precision) in sums.items():
        shape = queries.marginal_shape(group)
        if len(shape) < 2:
            continue
        combined = weighted / precision
        energy = float(np.sum(np.square(combined - conditional_independence(combined, shape))))
        if energy > (1.0 + gate) * combined.size / precision:
            links.add(group)
    return links


def unmeasured_marginals(queries: QuerySet, measured) -> np.ndarray:
    """int64[g]: the CM groups of ``queries`` with at least two axes that are not in
    ``measured`` (group ids), in id order."""
    measured = np.asarray(list(measured), dtype=np.int64)
    cm = queries.group_class == QueryClass.CATEGORICAL_MARGINAL
    cm[measured] = False
    axes = np.diff(queries.group_column_offsets)
    return np.flatnonzero(cm & (axes >= 2)).astype(np.int64)


def independence_targets(queries: QuerySet, groups: np.ndarray, answers: np.ndarray,
                         public: np.ndarray | None = None, strength: float = 1.0,
                         mediated: dict[int, np.ndarray] | None = None) -> np.ndarray:
    """float64[answers of ``groups``]: each group's :func:`conditional_independence` fit of its
    ``answers`` (the relaxed data's, float[answers of ``groups``], concatenated in order), or,
    where ``public`` (float64[n_queries of ``queries``], NaN where a public table has no
    answer) covers the whole group, its :func:`raked_interaction` at ``strength``, or else, where
    ``mediated`` (from :func:`mediated_targets`) has the group, that table."""
    mediated = {} if mediated is None else mediated
    answers = np.asarray(answers, dtype=np.float64)
    sizes = queries.group_sizes[groups]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    out = np.empty(len(answers), dtype=np.float64)
    for i, group in enumerate(groups):
        part = slice(starts[i], starts[i + 1])
        shape = queries.marginal_shape(int(group))
        reference = None if public is None else public[queries.group_query_indices(np.array([group]))]
        if reference is not None and not np.isnan(reference).any():
            out[part] = raked_interaction(reference, answers[part], shape, strength)
        elif int(group) in mediated:
            out[part] = mediated[int(group)]
        else:
            out[part] = conditional_independence(answers[part], shape)
    return out


STRENGTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The public association strengths :func:`public_strength` chooses from."""


def public_strength(record: LoopRecord, queries: QuerySet, public: np.ndarray,
                    memo: list | None = None) -> float:
    """How much of the public table's association the measured CM tables support: the
    strength in :data:`STRENGTHS` whose :func:`raked_interaction` fits every CM measurement so
    far (whose group the public table covers) best, ``min_s sum ||y - raked(p, y, s)||^2``
    (``y`` the noisy table; each fit takes its own margins, so every residual carries the same
    noise). 0 (independence) before any such measurement, and for a public table whose
    associations are not the data's. A function of released measurements and the public table
    (post-processing).

    ``memo`` (a list, optional, kept by the caller for one run and one public table): each
    measurement's residuals, in measurement order; a record only grows, so later calls compute
    those of the new measurements alone."""
    memo = [] if memo is None else memo
    for group, noisy in list(zip(record.groups, record.noisy_parts, strict=True))[len(memo):]:
        memo.append(_strength_residuals(queries, int(group), noisy, public))
    return float(STRENGTHS[int(np.argmin(np.sum(memo, axis=0) if memo else np.zeros(len(STRENGTHS))))])


def _strength_residuals(queries: QuerySet, group: int, noisy: np.ndarray, public: np.ndarray) -> np.ndarray:
    """float64[len(STRENGTHS)]: ``||y - raked(p, y, s)||^2`` of one measurement at each
    strength; zeros for a group that is not a CM table the public table covers."""
    reference = public[queries.group_query_indices(np.array([group]))]
    shape = queries.marginal_shape(group)
    if (queries.group_class[group] != QueryClass.CATEGORICAL_MARGINAL or np.isnan(reference).any()
            or len(shape) < 2):
        return np.zeros(len(STRENGTHS))
    return np.array([np.sum(np.square(noisy - raked_interaction(reference, noisy, shape, strength)))
                     for strength in STRENGTHS])


def independence_pseudo_targets(record: LoopRecord, queries: QuerySet, backend, public: np.ndarray | None = None,
                                memo: list | None = None, settings: PriorSettings | None = None
                                ) -> tuple[np.ndarray, np.ndarray, float]:
    """``(groups, targets, prior_std)`` of this prior for ``record``'s relaxed data now: the
    CM groups not measured (int64[g]), their pseudo-targets (float64, concatenated; raked
    public interactions where ``public``, the public answers of ``queries``, covers a group,
    at the strength the measured tables support, :func:`public_strength`, with its ``memo``)
    and the std they are weighed with, the largest of the categorical (CM and base-marginal)
    measurements'; no groups before any such measurement. ``settings`` (default: independence
    given the label) may ask for :func:`mediated_targets` where no public table covers a group,
    through the measured tables :func:`significant_links` keeps at :data:`MEDIATOR_GATE`."""
    groups = np.asarray(record.groups, dtype=np.int64)
    categorical = np.isin(queries.group_class[groups], (QueryClass.CATEGORICAL_MARGINAL, QueryClass.BASE_MARGINAL))
    unmeasured = unmeasured_marginals(queries, groups)
    unmeasured = table_turn(unmeasured, table_stride(len(unmeasured), len(queries.column_sizes)), len(groups))
    if not categorical.any() or len(unmeasured) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0), 0.0
    prior_std = float(np.max(np.asarray(record.noise_stds)[categorical]))
    strength = 0.0 if public is None else public_strength(record, queries, public, memo)
    settings = PriorSettings() if settings is None else settings
    measured_cm = np.zeros(0, dtype=np.int64)
    if settings.mediated:
        measured_cm = np.unique(groups[queries.group_class[groups] == QueryClass.CATEGORICAL_MARGINAL])
        links = significant_links(record, queries, MEDIATOR_GATE)
        measured_cm = np.array([g for g in measured_cm if int(g) in links], dtype=np.int64)
    every = np.concatenate([unmeasured, measured_cm])
    answers = backend.answers_relaxed(record.params.relaxed(), queries.take_groups(every), np.inf)
    mediated = None
    if len(measured_cm):
        bounds = np.concatenate([[0], np.cumsum(queries.group_sizes[every])])
        tables = {int(g): answers[bounds[i]:bounds[i + 1]] for i, g in enumerate(every)}
        mediated = mediated_targets(queries, unmeasured, measured_cm, tables)
    answers = answers[:int(queries.group_sizes[unmeasured].sum())]
    return unmeasured, independence_targets(queries, unmeasured, answers, public if strength > 0.0 else None,
                                            strength, mediated), prior_std
