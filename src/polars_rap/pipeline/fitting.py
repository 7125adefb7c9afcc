"""The pipeline's private stages: the one pass over the sensitive rows, then everything that
reads its answers — the public table's check (when its rows may be released), the numeric ties'
release, the select / measure / project loop (:func:`polars_rap.fit.loop.run_plan`) and the
numeric pairs' rank statistic, whose budget is held back from the loop and released after it.

:func:`answer_workload` is the only place the true answers are computed, and :func:`fit_relaxed`
the only one that holds them: it returns released values only (:class:`Fitted`), so nothing
downstream can reach the answers. Every read of them goes through a charged mechanism of
:mod:`polars_rap.privacy`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from polars_rap.decode.numeric_ties import (TIE_NOISE_CAP, TIE_NUMERIC_BINS, TieLayout, TieSums, release_ties,
                                            tie_layout, tie_noise_std)
from polars_rap.decode.rank_pairs import (MAX_RANK_PAIRS, RankPairCounts, RankPairs, n_pairs, rank_pairs_rho,
                                          rank_pairs_rho_beside_ties, release_rank_pairs)
from polars_rap.errors import warn_caller
from polars_rap.fit.independence_prior import PriorSettings, PublicInteractions
from polars_rap.fit.loop import run_plan
from polars_rap.fit.loop_record import LoopRecord
from polars_rap.fit.plan_steps import Step
from polars_rap.fit.planning import check_rows_against_noise, loop_rho_needed, smallest_share
from polars_rap.fit.projection import RelaxedParams
from polars_rap.fit.strategy import Strategy
from polars_rap.io.source import RowStatistics, exact_answers
from polars_rap.pipeline.arguments import RunSettings
from polars_rap.pipeline.inputs import Inputs
from polars_rap.pipeline.streams import RandomStreams
from polars_rap.privacy.ledger import PrivacyLedger
from polars_rap.public.prior import PublicTable
from polars_rap.public.release import PublicRelease
from polars_rap.public.reweight import candidate_rows
from polars_rap.schema.domain import Domain
from polars_rap.workload.builders import group_sensitivities
from polars_rap.workload.queries import QuerySet

__all__ = ["Answers", "Fitted", "Workload", "answer_workload", "fit_relaxed"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Workload:
    """The run's ``queries``, its ``plan`` of steps and the workload groups per class
    (``group_counts``): public values only (:func:`polars_rap.fit.planning.workload_and_plan`)."""

    queries: QuerySet
    plan: list[Step]
    group_counts: dict[str, int]


@dataclass(frozen=True, slots=True)
class Answers:
    """What the one pass read: the workload's ``true`` answers (float64[n_queries], **private**),
    the public row count ``n_rows`` and the rows to return ``out_rows``, the groups'
    sensitivities (float64[n_groups] each, answer units), the numeric ties' layout and true
    sums (None when the ties are not measured), the numeric pairs' true counts (**private**;
    None when not counted) and the public table's release (its own counts read in the same
    pass)."""

    true: np.ndarray
    n_rows: int
    out_rows: int
    l1_sensitivity: np.ndarray
    l2_sensitivity: np.ndarray
    tie_layout: TieLayout | None
    tie_totals: TieSums | None
    public_release: PublicRelease
    rank_counts: RankPairCounts | None = None


@dataclass(frozen=True, slots=True)
class Fitted:
    """Released values only: the loop's ``record`` and final ``relaxed`` rows
    (float32[relaxed_rows, n_coords]; the public rows' when the check chose them), the public
    check's record (``reweight``), the ties' release (None when not measured), the ties' layout,
    the public row counts and the numeric pairs' release (None when not measured)."""

    record: LoopRecord
    relaxed: np.ndarray
    reweight: dict | None
    tie_release: tuple | None
    tie_layout: TieLayout | None
    n_rows: int
    out_rows: int
    rank_pairs: RankPairs | None = None


def answer_workload(inputs: Inputs, workload: Workload, run: RunSettings) -> Answers:
    """The one pass over the sensitive rows (streamed in batches): the workload's true answers,
    with the numeric ties' sums and the public table's counts read in the same pass. Raises
    :class:`~polars_rap.errors.DataError` for an input without rows."""
    strategy, domain = run.strategy, inputs.domain
    layout = None
    # with each row's fitted numerics kept ("fitted") nothing would follow the ties: they are not measured
    if strategy.tie_share > 0.0 and strategy.numeric_coupling == "label":
        layout = tie_layout(domain, TIE_NUMERIC_BINS)
    tie_totals = None if layout is None else TieSums(domain, layout)
    rank_counts = None  # counted where they could be measured; whether they are is decided on rho, after the pass
    if strategy.rank_share > 0.0 and strategy.numeric_coupling == "label" and 0 < n_pairs(domain) <= MAX_RANK_PAIRS:
        rank_counts = RankPairCounts(domain)
    public_release = PublicRelease.for_uses(inputs.public_uses, inputs.public_table, domain)  # rows it may release
    statistics = [part for part in (tie_totals, rank_counts, public_release.counts) if part is not None]
    true, n_rows = exact_answers(inputs.source, domain, workload.queries, run.backend,
                                 statistic=RowStatistics(tuple(statistics)) if statistics else None)
    l1_sensitivity, l2_sensitivity = group_sensitivities(workload.queries, n_rows)
    out_rows = n_rows if run.rows is None else int(run.rows)
    return Answers(true, n_rows, out_rows, l1_sensitivity, l2_sensitivity, layout, tie_totals, public_release,
                   rank_counts)


def fit_relaxed(inputs: Inputs, workload: Workload, answers: Answers, run: RunSettings,
                streams: RandomStreams) -> Fitted:
    """Spend the rest of the budget on ``answers``, in order: the public table's check (before
    the loop, so that the loop knows what is left), the numeric ties, then the loop over the
    plan (with the numeric pairs' share held back), the public rows raked to the loop's, and
    the numeric pairs' release with what the loop left. Returns released values only."""
    strategy, domain, queries, plan, ledger = run.strategy, inputs.domain, workload.queries, workload.plan, inputs.ledger
    n_rows, tie_share = answers.n_rows, strategy.tie_share
    rank_share = strategy.rank_share if answers.rank_counts is not None else 0.0
    thinnest = smallest_share(plan, queries)
    # the ties come first (the pairs' reserve, a few millionths to a few per cent, is left to LOOP_RESERVE's margin)
    loop_floor = loop_rho_needed(n_rows, plan, thinnest, run.selection_share) / (1.0 - tie_share)

    def dry_run(true: np.ndarray, rho: float, rng: np.random.Generator) -> np.ndarray:
        """The loop's plan on ``true`` as if they were the private table's answers, at ``rho``
        with a ledger of its own: what the margins' check weighs the public rows against."""
        start = RelaxedParams.random(run.relaxed_rows, domain.block_sizes, len(domain.numeric_columns), rng)
        return _run_loop(workload, true, answers, PrivacyLedger(rho), start, run, rng, None, False).params.relaxed()

    release = answers.public_release
    release.before_loop(queries, answers.true, answers.l1_sensitivity, n_rows,
                        candidate_rows(answers.out_rows, run.relaxed_rows), loop_floor, ledger, run.backend,
                        streams.noise, streams.reweight, dry_run)
    tie_rho = tie_share * ledger.rho_remaining
    # Where the ties are measured the pairs are paid out of their share (the loop's budget stays
    # as it is), at a std that shrinks as the budget grows (ablation_pairs_beside_ties.md)
    rank_rho = 0.0
    if rank_share > 0.0 and _ties_measured(answers, tie_rho, quiet=True):
        rank_rho = rank_pairs_rho_beside_ties(domain, n_rows, tie_rho)
        if not _ties_measured(answers, tie_rho - rank_rho, quiet=True):
            rank_rho = 0.0  # the ties keep their whole share where the pairs' cut would leave them unmeasured
    # the two parts sum to the ties' share to the last bit (Sterbenz: the pairs take at most a
    # quarter), so that the loop's budget is the one without the pairs, float for float
    rank_rho = tie_rho - (tie_rho - rank_rho)
    tie_rho -= rank_rho
    tie_release = _release_ties(answers, tie_rho, ledger, streams.ties) if _ties_measured(answers, tie_rho) else None
    if tie_release is None and rank_share > 0.0:
        rank_rho = rank_pairs_rho(domain, n_rows, rank_share * ledger.rho_remaining)
        if rank_rho == 0.0:
            logger.info("numeric pairs' ranks not measured: their noise std would exceed RANK_TARGET_STD within "
                        "rank_share of the budget")
    if rank_rho > 0.0:
        ledger.reserve(rank_rho)  # released after the loop, from its rows' cell scores
    check_rows_against_noise(n_rows, ledger.rho_remaining, plan, thinnest, run.queries_per_round,
                              run.selection_share, run.epsilon)
    if run.delta >= 1.0 / n_rows:
        warn_caller(f"delta={run.delta:g} is at least 1/n = {1.0 / n_rows:.3g}: at that level a mechanism "
                    "could publish a whole row and still meet (epsilon, delta)-DP. Use delta well "
                    f"below 1/n, e.g. 1/n^2 = {1.0 / n_rows**2:.3g}")
    params, public = _starting_point(inputs.public_table, inputs.public_uses, domain, queries, run.relaxed_rows,
                                     run.backend, streams.init)
    progress = sys.stderr.isatty() if run.progress is None else run.progress
    record = _run_loop(workload, answers.true, answers, ledger, params, run, streams.noise, public, progress)
    # the public rows raked to the loop's or the measured margins, released if the check prefers them
    relaxed, reweight = release.after_loop(record.params.relaxed(), queries, answers.true, answers.l1_sensitivity,
                                           n_rows, run.backend, streams.noise, streams.reweight)
    rank_pairs = None
    if ledger.release_reserve() > 0.0:  # what the loop left, to the last float
        rank_pairs = release_rank_pairs(answers.rank_counts.counts, relaxed, domain, n_rows, ledger.rho_remaining,
                                        ledger, streams.ranks)
    return Fitted(record, relaxed, reweight, tie_release, answers.tie_layout, n_rows, answers.out_rows, rank_pairs)


def _run_loop(workload: Workload, true: np.ndarray, answers: Answers, ledger: PrivacyLedger, start: RelaxedParams,
              run: RunSettings, rng, public: PublicInteractions | None, progress: bool) -> LoopRecord:
    """:func:`~polars_rap.fit.loop.run_plan` over the run's plan, with the run's settings."""
    strategy = run.strategy
    return run_plan(workload.plan, workload.queries, true, answers.l1_sensitivity, answers.l2_sensitivity, ledger,
                    start, run.backend, run.projection, rng, n_rows=answers.n_rows,
                    selection_share=run.selection_share, inverse_variance=strategy.inverse_variance,
                    public=public, independence=_prior_settings(strategy),
                    progress=progress)


def _ties_measured(answers: Answers, rho: float, *, quiet: bool = False) -> bool:
    """Whether the numeric ties are measured at their share ``rho``: a layout, and a noise per
    cell at most ``TIE_NOISE_CAP`` (public values: the layout, the row count, the budget);
    ``quiet``: a question, not the decision (nothing logged)."""
    if answers.tie_layout is None:
        return False
    tie_std = tie_noise_std(answers.tie_layout, answers.n_rows, rho)
    if tie_std > TIE_NOISE_CAP:
        if not quiet:
            logger.info("numeric ties not measured: their noise std per cell would be %.3g, above TIE_NOISE_CAP=%g",
                        tie_std, TIE_NOISE_CAP)
        return False
    return True


def _release_ties(answers: Answers, rho: float, ledger: PrivacyLedger, rng) -> tuple:
    """The numeric ties' sums released at ``rho`` now, fitted to the loop's rows after it."""
    return release_ties(answers.tie_totals.totals, answers.n_rows, answers.tie_layout, rho, ledger, rng)


def _starting_point(public_table: PublicTable | None, uses: Sequence[str], domain: Domain, queries: QuerySet,
                    relaxed_rows: int, backend,
                    rng: np.random.Generator) -> tuple[RelaxedParams, PublicInteractions | None]:
    """The relaxed rows the loop starts from (uniformly random, or from the public table with
    ``"init"``) and the public answers its pseudo-targets are raked from (None without
    ``"interactions"``). Public values only: nothing here reads the sensitive rows or charges
    the budget."""
    if public_table is not None and "init" in uses:
        params = public_table.relaxed_params(relaxed_rows, domain, rng)
    else:
        params = RelaxedParams.random(relaxed_rows, domain.block_sizes, len(domain.numeric_columns), rng)
    if public_table is None or "interactions" not in uses:
        return params, None
    return params, PublicInteractions(public_table.answers(queries, domain, backend))


def _prior_settings(strategy: Strategy) -> PriorSettings | None:
    """The independence prior's settings from the strategy's (None: no prior)."""
    if not strategy.independence_prior:
        return None
    return PriorSettings(mediated=strategy.independence_prior == "mediated")
