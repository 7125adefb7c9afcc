"""Null rates: every nullable column's null rate is measured, whatever the workload.

A nullable column is a categorical block of the relaxed data: a categorical column whose
null is a category, or the two-code null indicator of a nullable numeric column. Its null
rate is measured when the plan measures some marginal group over its block (the group's
cells, summed over the other blocks, give it). The categorical marginals do that at the
defaults, but not always: with no categorical feature but the label (a numeric null
indicator, then, is in no CM group the rounds ask for), with no label and a single
categorical block (no pairs), or when CM rounds select rather than cover their class. An
unmeasured indicator is left to its random start, so about half the rows came back null.

:func:`add_null_rates` finds the nullable blocks the plan is not sure to measure, from public
values only (the domain, the workload's groups and the plan), and adds a *null-rate* group
for each: the block times each label (one marginal per label; the block alone when the
domain has no label or the block is a label), class ``"NR"``. One outright step measures them
first, each by the Gaussian mechanism on a marginal (L2 sensitivity sqrt(2)/n, as every
marginal group), charged in the same ledger; the step takes :data:`NULL_RATE_SHARE` of the
loop's budget, split evenly over the groups. When every nullable block is covered (the
bundled acs-income-CA and adult tasks at the defaults), nothing changes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from polars_rap.schema.domain import Domain
from polars_rap.fit.plan_steps import Step, add_outright_step
from polars_rap.workload.queries import QuerySet
from polars_rap.workload.queries import CLASS_CODES
from polars_rap.workload.builders import null_rate_marginals

__all__ = ["NULL_RATE_SHARE", "add_null_rates", "nullable_blocks", "uncovered_blocks"]

NULL_RATE_SHARE = 0.05
"""Part of the loop's zCDP budget spent on null-rate groups, when a run needs any."""


def nullable_blocks(domain: Domain) -> list[int]:
    """Indices of the blocks whose null rate is to be kept: null indicators of nullable
    numeric columns and nullable categorical columns (labels included), in block order."""
    return [i for i, block in enumerate(domain.blocks) if block.indicator or domain[block.source].nullable]


def fully_measured_classes(plan: list[Step], group_counts: Mapping[str, int]) -> set[str]:
    """Classes whose every group the plan measures: an outright step, or selection steps
    whose ``k`` add up to the class's groups (each step measures ``min(k, groups left)``)."""
    measured = set()
    for name in {step.query_class for step in plan}:
        steps = [step for step in plan if step.query_class == name]
        if any(step.outright for step in steps) or sum(step.k for step in steps) >= group_counts.get(name, 0):
            measured.add(name)
    return measured


def uncovered_blocks(domain: Domain, queries: QuerySet, plan: list[Step],
                     group_counts: Mapping[str, int]) -> list[int]:
    """The nullable blocks no group of a fully measured class enumerates (public values only)."""
    codes = [CLASS_CODES[name] for name in fully_measured_classes(plan, group_counts)]
    groups = np.flatnonzero(np.isin(queries.group_class, codes))
    starts, stops = queries.group_column_offsets[groups], queries.group_column_offsets[groups + 1]
    covered = {int(c) for start, stop in zip(starts, stops, strict=True)
               for c in queries.group_columns[start:stop]}
    return [block for block in nullable_blocks(domain) if block not in covered]


def add_null_rates(domain: Domain, queries: QuerySet, plan: list[Step], group_counts: Mapping[str, int],
                   share: float = NULL_RATE_SHARE) -> tuple[QuerySet, list[Step], dict[str, int]]:
    """The workload, plan and group counts with null-rate groups for the uncovered blocks.

    The groups are appended to ``queries`` (earlier group ids keep their meaning) and one
    outright ``"NR"`` step goes first in the plan, weighted to take ``share`` of the loop's
    budget (all of it when the plan is otherwise empty). Unchanged when nothing is uncovered.
    """
    counts = dict(group_counts)
    blocks = uncovered_blocks(domain, queries, plan, group_counts)
    if not blocks:
        return queries, list(plan), counts
    added = null_rate_marginals(domain, blocks)
    counts["NR"] = added.n_groups
    return QuerySet.concatenate([queries, added]), add_outright_step(plan, "NR", share), counts
