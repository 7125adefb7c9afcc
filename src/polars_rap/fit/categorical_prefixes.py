"""Categorical prefixes: how a numeric column varies with each categorical feature (and the label).

The categorical marginals tie features to features and the linear thresholds tie numeric
columns to the label, but nothing in that workload ties a numeric column to a categorical
feature: the synthetic rows come out with age independent of marital status given the label,
while a model trained on them weighs both. A *categorical prefix* group is the marginal of one
feature block ``a`` and one label ``y`` restricted to the rows below a public threshold of a
numeric column ``x_j``::

    1[a = v] 1[y = c] 1[x_j <= t]      for every cell (v, c); class "CP"

Beside the base marginal of (a, y), it gives the (a, y) table on both sides of ``t``: how
``x_j``'s distribution moves with ``a`` within each class, as AIM's 3-way marginals of
(binned numeric, feature, label) do. The thresholds ``t`` are fixed fractions of the column's
mapped ``[0, 1]`` coordinate (so they follow its declared scale and atoms), moved down to
half-integers on integer columns (:func:`polars_rap.workload.builders.half_integer_threshold`), so that
decoding's rounding never crosses one: public, from the domain only.

They are measured by AIM's annealed rounds (:mod:`polars_rap.fit.annealing`), whose noise-aware
Gumbel selection measures one only where its error on the synthetic data stands out of the
noise its measurement would add: either as candidates of the annealed categorical step
(:attr:`polars_rap.fit.plan_steps.Step.joined`; a step that measures every categorical marginal
outright in one round, ``Step.outright_l1``, measures none of them), or in an annealed step of
their own with a share of the budget, last in the plan, after the thresholds have placed the
numeric columns.

Privacy. A group's cells partition the rows with ``x_j <= t`` (a null numeric reads as 0 and
is among them, as in every exact answer), so replacing one row moves at most one count out of
one cell and one into another (the rows of one side of ``t`` are in no cell): L1 sensitivity
``2/n`` and L2 ``sqrt(2)/n``, as a marginal's (:func:`polars_rap.workload.builders.group_sensitivities`:
the group has categorical columns). Its selection score (count-unit L1 error) has sensitivity
2 and its measurement is the discrete Gaussian of the annealed round, charged to the ledger
before any noise is drawn, exactly as a categorical marginal's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from polars_rap.schema.domain import Domain
from polars_rap.fit.plan_steps import Step, add_step_with_share, join_annealed
from polars_rap.workload.queries import QueryClass, QuerySet
from polars_rap.workload.builders import _feature_and_label_blocks, _marginal_groups, half_integer_threshold

__all__ = ["DEFAULT_PREFIX_FRACTIONS", "add_categorical_prefixes", "categorical_prefixes"]

DEFAULT_PREFIX_FRACTIONS = (0.125, 0.25, 0.5, 0.75)
"""Where on each numeric column's mapped ``[0, 1]`` coordinate the prefixes end: denser at the
low end, where skewed columns (incomes, commute times) hold their mass."""


def categorical_prefixes(domain: Domain, fractions: Sequence[float] = DEFAULT_PREFIX_FRACTIONS) -> QuerySet:
    """The categorical-prefix groups (class ``"CP"``, module docstring): for each numeric
    column ``j``, each feature block ``a`` other than ``j``'s own null indicator (a query
    never holds both) and each fraction ``f``, the cells of ``a`` × each label (``a`` alone
    without labels) times ``1[x_j <= t]`` with ``t`` the fraction ``f`` of the mapped
    coordinate (half-integer on integer columns). Thresholds that coincide are kept once."""
    features, labels = _feature_and_label_blocks(domain)
    block_groups, halfspaces = [], []
    for j, spec in enumerate(domain.numeric_columns):
        own_indicator = domain.block_index(spec.name, indicator=True) if spec.nullable else -1
        taus = sorted({np.float32(half_integer_threshold(float(f), spec)) for f in fractions})
        index, weight = np.array([j], dtype=np.int32), np.array([1.0], dtype=np.float32)
        for block in features:
            if block == own_indicator:
                continue
            for label in labels or [None]:
                for tau in taus:
                    block_groups.append((block,) if label is None else (block, label))
                    halfspaces.append([(index, weight, float(tau))])
    return _marginal_groups(domain, block_groups, halfspaces, QueryClass.CATEGORICAL_PREFIX)


def add_categorical_prefixes(domain: Domain, queries: QuerySet, plan: list[Step], group_counts: Mapping[str, int],
                             fractions: Sequence[float], share: float | None = None,
                             selection_share: float = 0.1) -> tuple[QuerySet, list[Step], dict[str, int]]:
    """The workload, plan and group counts with the categorical-prefix groups.

    With ``share`` None they join the plan's annealed ``"CM"`` step (its candidates; no budget
    of their own), and nothing changes when the plan has none. With ``share`` (in (0, 1)) an
    annealed ``"CP"`` step goes last, weighted so that it takes that share of the loop's
    budget (out of every step's), one group per round, ``selection_share`` of each round for
    its selection, T0 the number of groups. The groups are appended to ``queries`` (earlier
    group ids keep their meaning). Unchanged when the domain has no numeric column or feature
    block, or the plan is empty."""
    counts = dict(group_counts)
    annealed = [i for i, step in enumerate(plan) if step.query_class == "CM" and step.annealed]
    if not plan or (share is None and not annealed):
        return queries, list(plan), counts
    added = categorical_prefixes(domain, fractions)
    if added.n_groups == 0:
        return queries, list(plan), counts
    counts["CP"] = added.n_groups
    if share is None:
        steps = join_annealed(plan, "CM", "CP")
    else:
        steps = add_step_with_share(plan, Step("CP", 0.0, 1, added.n_groups, selection_share=selection_share),
                                    share, last=True)
    return QuerySet.concatenate([queries, added]), steps, counts
