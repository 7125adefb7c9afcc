"""The parts a plan is made of: :class:`Step` and the helpers strategies build plans with.

A plan is a list of :class:`Step`, each on one query class (``"CM"``, ``"MM"``, ``"LT"``):

- a *selection round* (``k`` set): one-shot Gumbel top-``k`` among the class's groups not yet
  measured, by the L1 error of the current synthetic data, then a Gaussian measurement of
  each group picked, the round's budget split evenly between them (paper Alg. 2); when ``k``
  would pick every candidate left, the round measures them all and pays no selection;
- an *outright* step (``k is None``): a Gaussian measurement of every group of the class
  left, with no selection (choosing all of them reveals nothing, so it costs nothing);
- an *annealed* step (``annealed_rounds`` set): the class's share spent by adaptive rounds,
  each selecting ``k`` groups among all of the class's by AIM's noise-aware score, with a
  per-round budget that starts at ``share / annealed_rounds`` and quadruples whenever a round
  taught little (:mod:`polars_rap.fit.annealing`).

A step's ``weight`` fixes its share of the loop's budget: at run time step ``i`` spends
``rho_remaining * weight_i / sum(weights of the steps not yet run)``, so the shares hold
exactly when every step spends its part, and the last step takes what is left to the last
float. Plans depend only on public values (group counts, rounds, K): never on the data.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CLASSES", "Step", "add_outright_step", "add_step_with_share", "capped_rounds", "fixed_steps",
           "interleave"]

CLASSES = ("CM", "MM", "LT")
"""Query classes in workload order."""


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a plan: ``query_class`` measured with ``weight`` (a share of the loop's
    budget, relative to the other steps), selecting ``k`` groups, or all left when None.

    ``annealed_rounds`` (T0, public) makes it an annealed step: rounds of ``k`` groups each,
    starting at ``1 / T0`` of the step's budget, at most ``max(1, T0 - 1)`` of them
    (:func:`polars_rap.fit.annealing.run_annealed_step`); None for the other kinds.

    ``loss_scale`` (> 0, public) multiplies an outright or selection step's measurements'
    weights in the projection loss, relative to the other steps' (post-processing: what is
    released is unchanged); an annealed step's are not scaled.

    ``selection_share`` (public): the part of an annealed round's budget its selection pays,
    instead of the run's (None: the run's).

    ``outright_l1`` (public): an annealed step whose whole budget would measure every group of
    its class with a mean expected noise L1 norm (answer units: a marginal's answers sum to 1)
    of at most this measures them so, in one round without selection, as an outright step
    would (None: it never does).

    ``margin_reserve`` (public, in [0, 1)): the part of an annealed step's budget kept from its
    rounds for one last measurement of the base marginals no table it measured holds
    (:func:`polars_rap.fit.base_marginals.unheld_margins`); none in a step measured outright in one
    round."""

    query_class: str
    weight: float
    k: int | None
    annealed_rounds: int | None = None
    loss_scale: float = 1.0
    selection_share: float | None = None
    outright_l1: float | None = None
    margin_reserve: float = 0.0

    @property
    def outright(self) -> bool:
        return self.k is None

    @property
    def annealed(self) -> bool:
        return self.annealed_rounds is not None

    @property
    def kind(self) -> str:
        """``"outright"``, ``"selection"`` or ``"annealed"``."""
        return "outright" if self.outright else "annealed" if self.annealed else "selection"


def capped_rounds(group_counts: Mapping[str, int], rounds: Mapping[str, int], k: int) -> dict[str, int]:
    """Rounds per class, at most ``ceil(groups / k)``: a round always has a group left to
    measure, so no round's share of the budget is stranded."""
    return {c: min(int(r), -(-int(group_counts.get(c, 0)) // k)) for c, r in rounds.items()}


def interleave(rounds: Mapping[str, int]) -> list[str]:
    """Spread each class's rounds evenly over one schedule (deterministic)."""
    slots = [((i + 0.5) / count, name) for name, count in rounds.items() for i in range(count)]
    return [name for _, name in sorted(slots, key=lambda s: (s[0], s[1]))]


def add_step_with_share(plan: list[Step], step: Step, share: float, *, last: bool = False) -> list[Step]:
    """``plan`` with ``step`` put first (or ``last``), its weight set so that it takes
    ``share`` (in (0, 1)) of the loop's budget: ``share / (1 - share)`` times the other steps'
    weights (weight 1, all of it, when ``plan`` is empty)."""
    others = math.fsum(s.weight for s in plan)
    step = dataclasses.replace(step, weight=share / (1.0 - share) * others if others > 0 else 1.0)
    return [*plan, step] if last else [step, *plan]


def fixed_steps(shares: Mapping[str, float], rounds: Mapping[str, int], capped: Mapping[str, int],
                group_counts: Mapping[str, int], k: int) -> list[Step]:
    """The steps of the classes of ``shares`` (each class's share of the loop's budget): one
    outright step first for each class whose rounds asked would measure all its groups anyway
    (``rounds * k >= groups``: in one step, with no selection charge), then the other classes'
    ``capped`` rounds of ``k`` groups interleaved (:func:`interleave`), each round an equal part
    of its class's share. Public values only."""
    outright = [c for c in shares if int(rounds[c]) * k >= int(group_counts.get(c, 0))]
    steps = [Step(c, shares[c], None) for c in outright]
    selecting = {c: capped[c] for c in shares if c not in outright}
    return steps + [Step(c, shares[c] / selecting[c], k) for c in interleave(selecting)]


def add_outright_step(plan: list[Step], query_class: str, share: float, *, last: bool = False,
                      loss_scale: float = 1.0, from_class: str | None = None) -> list[Step]:
    """``plan`` with an outright step of ``query_class`` taking ``share`` of the loop's budget
    (:func:`add_step_with_share`); ``loss_scale`` is its :attr:`Step.loss_scale`. With
    ``from_class`` the share comes out of that class's steps alone, the others keeping their
    budgets (out of every step's still when that class's steps weigh no more than the share,
    or the plan has none)."""
    step = Step(query_class, 0.0, None, loss_scale=float(loss_scale))
    total = math.fsum(s.weight for s in plan)
    donor = math.fsum(s.weight for s in plan if s.query_class == from_class)
    if from_class is None or donor <= share * total:
        return add_step_with_share(plan, step, share, last=last)
    scale = (donor - share * total) / donor
    kept = [dataclasses.replace(s, weight=s.weight * scale) if s.query_class == from_class else s for s in plan]
    step = dataclasses.replace(step, weight=share * total)
    return [*kept, step] if last else [step, *kept]
