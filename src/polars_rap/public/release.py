"""Public rows that may be released instead of the loop's (``public_use`` ``"reweight"`` and
``"margins"``, issue 19): what ``synthesize`` does before and after the loop for them.

Before the loop (:meth:`PublicRelease.before_loop`): ``"margins"`` measures the one-way margins
and checks the public table against independence scaled by the loop's strength in a dry run
(:func:`~polars_rap.public.margins.public_first_margins`, only where
:func:`~polars_rap.public.margins.margins_share` is not 0); then, when a candidate
will exist (``"reweight"``, or ``"margins"`` measured: the public rows fitted to every margin
where they passed, to the first part where they did not), the final check's budget is charged.

After the loop (:meth:`PublicRelease.after_loop`): the candidates are drawn and the check
releases one of them or the loop's rows (:func:`~polars_rap.public.reweight.checked_release`).

A table that fails the first check keeps a candidate because that check is coarse where the
private table is small: on Florida's commuters (14,217 rows, label MIG, the other states' rows
public; ``bench/results/public_task_check.md``, 5 seeds) the other states' rows passed in 2 and 3
runs of 5 at ε = 0.1 and 0.25, though every run that passed scored CM 0.41-0.63x of the run
without a public table. As final candidates the failed runs' rows were released in 4 of 5 (CM
-12% to -38% on those runs; the means 0.76x -> 0.66x and 0.78x -> 0.67x). On acs-income-CA the
tables that fail (Puerto Rico's, West Virginia's, New Mexico's at ε = 0.25) lost the final check
to the loop's rows in all 15 runs (``bench/results/public_margins_second_chance.md``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np

from polars_rap.schema.domain import Domain
from polars_rap.privacy.ledger import PrivacyLedger
from polars_rap.public.margins import LOOP_RESERVE, MARGIN_STD, DryRun, MarginCounts, margin_names, margins_share, measured_candidate, public_first_margins
from polars_rap.public.reweight import CHECK_SHARE, charge_check, checked_release, raked_candidates
from polars_rap.workload.queries import QuerySet

__all__ = ["PublicRelease"]

logger = logging.getLogger(__name__)


@dataclass
class PublicRelease:
    """The public rows' releases of one synthesis: ``uses`` (the run's public uses), the
    encoded public ``table``, the ``domain``; ``counts`` (:class:`MarginCounts`, read in the pass
    over the rows when ``"margins"`` is used, else None); filled by :meth:`before_loop`:
    ``size`` (the rows a public candidate draws, :func:`~polars_rap.public.reweight.candidate_rows`),
    ``margins`` (the released margins, or None), ``check_rho`` (the final check's budget, 0
    without one) and ``record`` (the report's fields, ``rho_charged`` among them: the fsum of
    the ledger events these uses made, which :meth:`before_loop` makes all of)."""

    uses: tuple[str, ...]
    table: object
    domain: Domain
    counts: MarginCounts | None = None
    size: int = 0
    margins: list | None = None
    check_rho: float = 0.0
    record: dict = field(default_factory=dict)

    @classmethod
    def for_uses(cls, uses, table, domain: Domain) -> PublicRelease:
        return cls(tuple(uses), table, domain, MarginCounts(domain) if "margins" in uses else None)

    def before_loop(self, queries: QuerySet, true_answers: np.ndarray, l1_sensitivity: np.ndarray, n_rows: int,
                    size: int, loop_floor: float, ledger: PrivacyLedger, backend, noise_rng,
                    candidate_rng, dry_run: DryRun | None = None) -> None:
        """Measure the margins where they are wanted (``size`` public rows, every candidate's,
        for their check, ``candidate_rng``; ``dry_run``, the loop's plan on other answers, gives
        the check's rival the loop's strength, :func:`~polars_rap.public.margins.loop_ratio`),
        leaving the loop at least ``loop_floor`` times
        :data:`~polars_rap.public.margins.LOOP_RESERVE` of rho (``loop_floor``: the least its
        plan runs with, :func:`~polars_rap.fit.planning.loop_rho_needed`, public), then charge the
        final check when a candidate will exist."""
        self.size = size
        charged = len(ledger.events)  # every charge of the public uses is made below, before the loop
        share = 0.0 if self.counts is None else margins_share(self.domain, n_rows, ledger.rho_remaining)
        margins_check = CHECK_SHARE * ledger.rho_remaining
        rho = min(share * (ledger.rho_remaining - margins_check),  # what the loop may give: both checks, its floor
                  (ledger.rho_remaining - margins_check) * (1.0 - CHECK_SHARE) - LOOP_RESERVE * loop_floor)
        if share > 0 and rho <= 0:
            logger.info("public_use 'margins': not measured, the loop needs the whole budget at these rows")
        elif share > 0:  # measured now, checked against independence, for the public rows raked to them after the loop
            self.margins, self.record = public_first_margins(
                self.counts, self.table, self.domain, queries, true_answers, l1_sensitivity, n_rows, margins_check,
                rho, ledger, backend, noise_rng, size, candidate_rng, dry_run)
        if self.counts is not None:  # what they charged and their noise (none when skipped): no value of theirs
            self.record.setdefault("margins_rho", 0.0)
            self.record["margins_noise_std"] = dict(zip(margin_names(self.domain),
                                                        (std for _, std in self.margins or ()), strict=False))
            if share == 0:
                logger.info("public_use 'margins': not measured, the loop's budget measures them to %.3g per "
                            "cell itself; the loop's rows are released", MARGIN_STD)
        if "reweight" in self.uses or self.margins is not None:  # held out of the loop; drawn after it
            self.check_rho = CHECK_SHARE * ledger.rho_remaining
            charge_check(ledger, self.check_rho)
        if self.counts is not None or self.check_rho > 0:  # what its uses charged: the sum of their events
            self.record["rho_charged"] = math.fsum(event.rho for event in ledger.events[charged:])

    def after_loop(self, relaxed: np.ndarray, queries: QuerySet, true_answers: np.ndarray,
                   l1_sensitivity: np.ndarray, n_rows: int, backend, noise_rng,
                   candidate_rng) -> tuple[np.ndarray, dict | None]:
        """(the relaxed rows to release, the report's record or None): the loop's ``relaxed`` rows
        and the candidates through the final check, when one was charged."""
        if self.check_rho > 0:
            candidates, effective = {}, {}
            if "reweight" in self.uses:
                candidates, effective = raked_candidates(self.table, relaxed, self.domain, self.size, candidate_rng)
            if self.margins is not None:
                candidates["measured"], effective["measured"] = measured_candidate(
                    self.table, self.margins, self.domain, self.size, candidate_rng)
            relaxed, checked = checked_release(relaxed, candidates, effective, queries, true_answers, l1_sensitivity,
                                               n_rows, self.check_rho, backend, noise_rng)
            self.record.update(checked)
        return relaxed, (self.record or None)
