"""Feature pairs: the 2-way marginals of two categorical features, without the label, as
candidates of the annealed categorical step (``PlannedStrategy(cm_anneal_pairs=True)``).

The class-conditional workload's tables are two features x the label. AIM's candidates are the
workload's cliques *and their subsets* (its downward closure), so it may measure the 2-way
marginal of two features alone: half the cells of their label-crossed table (a binary label),
so half its noise's expected L1 norm at the same budget. How two features go together is most of
what their label-crossed table adds to its margins, and where that table is too large to be
worth its noise (``bench/results/f1_diagnosis.md``: COW x OCCP x label on acs-income-CA, 450
cells, which AIM measured as the 225-cell COW x OCCP), the pair alone may be.

:func:`add_feature_pairs` appends one group per pair of categorical feature blocks (class
``"FP"``; null indicators of nullable numeric columns count as features, as in the workload) and
joins them to the plan's annealed ``"CM"`` step (:attr:`~polars_rap.fit.plan_steps.Step.joined`):
they compete in its selections by the same noise-aware score and get no budget of their own.
Privacy: each group is one marginal; replacing a row moves one count out of one cell and into
another, so its L1 sensitivity is 2/n and its L2 sensitivity sqrt(2)/n
(:func:`polars_rap.workload.builders.group_sensitivities`), the same as a table's: the selection's score
sensitivity and the Gaussian measurement are those of the step, charged in its ledger. Which
groups exist is a function of the public domain.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

from polars_rap.schema.domain import Domain
from polars_rap.fit.plan_steps import Step, join_annealed
from polars_rap.workload.queries import QueryClass, QuerySet
from polars_rap.workload.builders import _feature_and_label_blocks, _marginal_groups

__all__ = ["add_feature_pairs", "feature_pairs"]


def feature_pairs(domain: Domain, max_cells: int | None = 20_000) -> QuerySet:
    """One 2-way marginal group per pair of categorical feature blocks (class ``"FP"``), in the
    order of the class-conditional tables; pairs over ``max_cells`` cells left out, as the
    workload leaves out its tables. Empty without labels (the workload's tables are then these
    pairs already) or with fewer than two feature blocks."""
    features, labels = _feature_and_label_blocks(domain)
    combos = list(itertools.combinations(features, 2)) if labels else []
    if max_cells is not None:
        combos = [c for c in combos if math.prod(domain.block_sizes[b] for b in c) <= max_cells]
    return _marginal_groups(domain, combos, [[] for _ in combos], QueryClass.FEATURE_PAIR)


def add_feature_pairs(domain: Domain, queries: QuerySet, plan: list[Step], group_counts: Mapping[str, int],
                      max_cells: int | None = 20_000) -> tuple[QuerySet, list[Step], dict[str, int]]:
    """The workload, plan and group counts with the feature-pair groups joined to the plan's
    annealed ``"CM"`` step. The groups are appended to ``queries`` (earlier group ids keep
    their meaning). Unchanged when the plan has no annealed CM step or there are no pairs."""
    counts = dict(group_counts)
    if not any(step.query_class == "CM" and step.annealed for step in plan):
        return queries, list(plan), counts
    added = feature_pairs(domain, max_cells)
    if added.n_groups == 0:
        return queries, list(plan), counts
    counts["FP"] = added.n_groups
    return QuerySet.concatenate([queries, added]), join_annealed(plan, "CM", "FP"), counts
