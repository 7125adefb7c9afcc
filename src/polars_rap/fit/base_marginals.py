"""Base marginals: every categorical feature block × each label, measured outright first.

AIM measures every one-way marginal before it selects larger ones: they are cheap (few cells),
they fix each column's distribution for whatever is never selected, and the larger marginals
selected later are fitted around them. In the class-conditional workload the analogue of a
one-way marginal is a feature block times the label, so a *base* group is the marginal of one
categorical block (a categorical feature, or a numeric column's null indicator) and one label,
or of the block alone when the domain has no label (the same groups as
:func:`polars_rap.workload.builders.null_rate_marginals`, over every feature block, class ``"BM"``).

:func:`add_base_marginals` appends them to the workload and puts one outright ``"BM"`` step
first in the plan, weighted to take ``share`` of the loop's budget, split evenly over the
groups. Each group is one marginal: a row changes two of its cells by ``1/n`` under
replace-one, so its L2 sensitivity is ``sqrt(2)/n`` (:func:`polars_rap.workload.builders.group_sensitivities`),
charged by the Gaussian mechanism in the same ledger as every other measurement. The groups and
their number come from the domain only (public), and measuring all of them selects nothing.
Every feature block is then measured, so no null-rate step is needed after it.

On a wide table the share grows with the feature blocks (:func:`wide_base_share`): the annealed
CM rounds measure about as many tables whatever the width (:mod:`polars_rap.fit.table_turns`),
so past :data:`~polars_rap.fit.table_turns.COLUMNS_PER_PICK` blocks most features' only release
is their base marginal, and a fixed share split over more of them leaves each noisier.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from polars_rap.schema.domain import Domain
from polars_rap.fit.plan_steps import Step, add_outright_step
from polars_rap.fit.table_turns import COLUMNS_PER_PICK
from polars_rap.workload.queries import QueryClass, QuerySet
from polars_rap.workload.builders import _feature_and_label_blocks, null_rate_marginals

__all__ = ["WIDE_BASE_SHARE", "add_base_marginals", "feature_blocks", "unheld_margins", "wide_base_share"]

WIDE_BASE_SHARE = 0.3
"""The most :func:`wide_base_share` gives the base marginals on a wide table."""


def feature_blocks(domain: Domain) -> list[int]:
    """Indices of the categorical blocks that are not labels (null indicators included)."""
    return _feature_and_label_blocks(domain)[0]


def wide_base_share(share: float, n_blocks: int) -> float:
    """The base marginals' share of the loop for ``n_blocks`` feature blocks: ``share`` up to
    :data:`~polars_rap.fit.table_turns.COLUMNS_PER_PICK` blocks (every suite table: at most 18),
    past it ``share`` times the blocks over that, at most :data:`WIDE_BASE_SHARE` (and never
    below ``share``), so that each block's budget falls no further until the cap. Public: the
    domain's blocks.

    >>> wide_base_share(0.1, 18), wide_base_share(0.1, 41), wide_base_share(0.1, 241)
    (0.1, 0.205, 0.3)
    """
    wide = share * max(1.0, n_blocks / COLUMNS_PER_PICK)
    return float(max(share, min(wide, WIDE_BASE_SHARE)))


def add_base_marginals(domain: Domain, queries: QuerySet, plan: list[Step], group_counts: Mapping[str, int],
                       share: float) -> tuple[QuerySet, list[Step], dict[str, int]]:
    """The workload, plan and group counts with one base group per feature block (× label).

    The groups are appended to ``queries`` (earlier group ids keep their meaning) and one
    outright ``"BM"`` step goes first, weighted so that it takes ``share`` (in (0, 1)) of the
    loop's budget, out of every step's, or more on a wide table (:func:`wide_base_share`).
    Unchanged when the domain has no categorical feature block.
    """
    counts = dict(group_counts)
    blocks = feature_blocks(domain)
    if not blocks or not plan:
        return queries, list(plan), counts
    added = null_rate_marginals(domain, blocks, QueryClass.BASE_MARGINAL)
    counts["BM"] = added.n_groups
    share = wide_base_share(share, len(blocks))
    return QuerySet.concatenate([queries, added]), add_outright_step(plan, "BM", share), counts


def unheld_margins(queries: QuerySet, measured: np.ndarray) -> np.ndarray:
    """int64[g]: the base groups (class ``"BM"``, in group order) whose columns no categorical
    marginal of ``measured`` (group ids) holds: a feature whose margin only the base step
    measured. Every base group when each is held (the margins then all get the refresh of
    :func:`polars_rap.fit.annealing.run_annealed_step`); none without base groups. A function of
    which groups were measured (released) and of public shapes only."""
    base = np.flatnonzero(queries.group_class == QueryClass.BASE_MARGINAL)
    measured = np.unique(np.asarray(measured, dtype=np.int64))
    tables = measured[queries.group_class[measured] == QueryClass.CATEGORICAL_MARGINAL]
    held = [set(queries.columns_of(g).tolist()) for g in tables]
    unheld = [g for g in base if not any(set(queries.columns_of(g).tolist()) <= table for table in held)]
    return np.asarray(unheld if unheld else base, dtype=np.int64)
