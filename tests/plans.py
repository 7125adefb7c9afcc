"""Strategy settings shared by the tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from polars_rap.fit.planned_strategy import PlannedStrategy, class_budget_shares, planned_steps
from polars_rap.fit.plan_steps import Step, capped_rounds, fixed_steps


@dataclass(frozen=True, slots=True)
class TestPlanned(PlannedStrategy):
    """The planned strategy with plan parts that are no longer its settings, which tests of the
    steps' mechanics pin: ``anneal_cm=False`` plans the CM class as the other classes (measured
    outright when its rounds would measure all its groups, else by selection rounds); ``cm_step``
    (pairs of a :class:`~polars_rap.fit.plan_steps.Step` field and its value: ``k``,
    ``annealed_rounds``, ``selection_share``, ``outright_l1``) replaces those fields of the
    annealed CM step."""

    __test__ = False  # not a test class, for pytest

    anneal_cm: bool = True
    cm_step: tuple[tuple[str, Any], ...] = ()

    def plan(self, group_counts: Mapping[str, int], rounds: Mapping[str, int], k: int) -> list[Step]:
        if not self.anneal_cm:  # every class as the planned strategy plans MM and LT
            capped = {c: capped_rounds(group_counts, {c: r}, k)[c] for c, r in rounds.items()}
            return fixed_steps(class_budget_shares(self.class_shares, capped), rounds, capped, group_counts, k)
        steps = planned_steps(self.class_shares, group_counts, rounds, k,
                              margin_reserve=self.cm_margin_reserve if self.base_share > 0 else 0.0)
        return [dataclasses.replace(s, **dict(self.cm_step)) if s.annealed else s for s in steps]

    def but(self, cm_step: Mapping[str, Any] | None = None, **settings) -> TestPlanned:
        """This strategy with ``settings`` replaced and ``cm_step``'s fields added to its own."""
        return dataclasses.replace(self, cm_step=tuple({**dict(self.cm_step), **(cm_step or {})}.items()), **settings)


OUTRIGHT = TestPlanned(anneal_cm=False, base_share=0.0, independence_prior=False, histogram_share=0.0,
                       numeric_coupling="fitted")
"""The planned strategy measuring every CM table outright, with no base marginals, no numeric
histograms, no prior for tables a selection round leaves unmeasured and each decoded row keeping
its relaxed row's numerics: the default until the annealed, mediated one
(bench/results/ablation_mediated_prior.md), bit for bit. Tests of the
outright and selection plans' mechanics pin it."""

ANNEALED_ONLY = OUTRIGHT.but(anneal_cm=True, cm_step={"selection_share": None, "outright_l1": None})
"""AIM's budget annealing of the CM share alone (bench/results/ablation_cm_anneal.md): no base
marginals, no prior for the unmeasured tables, the run's selection share, always annealed.
Tests of the annealing's own mechanics pin it."""
