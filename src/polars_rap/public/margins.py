"""The public rows reweighted to one-way margins measured for them (``public_use="margins"``, issue 19).

Where every marginal answer is noisy (small ε), what another state's survey shares with the
sensitive table is how its columns go together, not their distributions. This use spends part
of the loop's budget measuring the one-way margins directly, before the loop: every categorical
block (labels and categorical nulls included) and each numeric column on :data:`NUMERIC_CELLS`
equal cells of its mapped ``[0, 1]`` plus a null cell (which stands for the column's null
indicator, not measured apart); a binary feature's margin is measured split by the label
(:func:`_split_by_label`). The public rows are reweighted to fit every released margin at once
(:func:`~polars_rap.public.tilt.tilted_weights`: the posterior mode of an exponential tilt of
the public rows, each margin's deviation from the public table's under an empirical-Bayes prior
that lets a cell differ in proportion to its public share, so that a margin the two tables share
keeps little of the noise, one that differs beyond the noise keeps the measurement, and each
release informs the margins the public rows associate with it), and a sample of them by weight
joins the public table check (:func:`~polars_rap.public.reweight.checked_release`) as the
candidate ``"measured"``: released instead of the loop's rows only when the check prefers it,
so that a public table of another population loses to the loop.

Budget (:func:`margins_share`): the least share of the loop's budget that measures a categorical
feature's margin of weight 1 (the features' average) with a noise std of :data:`MARGIN_STD` per
cell, at most :data:`MAX_SHARE`. Past that precision the candidate's error is the public
table's own associations', which more budget cannot mend, while the loop's rows keep improving.
When that share is below :data:`MIN_SHARE` the loop's budget knows the margins itself: nothing
is measured, no check is charged, and the loop's rows are released as without a public table.
On acs-income-CA the margins take the cap at ε = 0.25 and are not measured at ε = 1.

Privacy: each margin (a feature x label table too) is one histogram, its cells partition the
rows, so replacing one row moves two cells by one count: L2 sensitivity ``sqrt(2) / n``. Margin
``i`` is released by the discrete Gaussian mechanism at ``rho_i = rho * w_i / sum(w)`` (``w``
from the domain alone: a categorical feature's in proportion to the square root of its cells,
scaled by the features' codes' average; :data:`LABEL_WEIGHT` for a label's;
:data:`NUMERIC_WEIGHT` for a numeric one's, the mixed marginals' prefixes adding up several
cells' noise), each charged to the ledger, ``sum(rho_i) = rho``. The counts are read in the same
pass as the workload's answers (:class:`MarginCounts`). Shrinking, fitting and sampling read
released values and the public rows only: post-processing.

Measured on acs-income-CA with the other states' rows and Puerto Rico's
(``bench/results/public_margins.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import block_slices
from polars_rap.privacy.ledger import PrivacyLedger, gaussian_mechanism
from polars_rap.public.reweight import charge_check, choose_release, disputed_groups, margin_cells, reweighted_candidate
from polars_rap.public.tilt import tilted_weights
from polars_rap.workload.queries import CLASS_CODES, QuerySet

DryRun = Callable[[np.ndarray, float, np.random.Generator], np.ndarray]
"""``dry_run(answers float64[m], rho, rng) -> float32[n_relaxed, n_coords]``: the loop's plan run
on ``answers`` as if they were the private table's, at ``rho`` with a ledger of its own
(:func:`loop_ratio`)."""

__all__ = ["FIRST_PART", "LABEL_WEIGHT", "LOOP_RESERVE", "MARGIN_STD", "MAX_SHARE", "MIN_SHARE", "NUMERIC_CELLS",
           "NUMERIC_WEIGHT", "UNHELD_Z", "DryRun", "MarginCounts", "candidate_weights", "check_margins", "combined",
           "independent_rows", "loop_ratio", "margin_names", "margins_share", "measured_candidate", "own_margins_row",
           "public_first_margins", "release_margins"]

MARGIN_STD = 0.005
"""Noise std per cell (a share of the rows) the margins are measured with when the budget
allows. On acs-income-CA (``bench/results/public_margins_probe.md``) raking the other states'
rows to margins measured with the whole ε = 0.25 budget (std 0.005; empirical Bayes, label weight
1) scores CM 0.58x the run without them, to the true margins 0.39x: the rest is the public table's
associations."""
MAX_SHARE = 0.8
"""Share of the loop's budget the margins take at most (ε = 0.25 on acs-income-CA hits it)."""
MIN_SHARE = 0.15
"""Below this share the margins are not measured and nothing is released but the loop's rows:
the budget is large enough for the loop to know them. The default strategy's base marginals
(each feature x label, 10% of the loop) reach :data:`MARGIN_STD` per cell about where this
share does on acs-income-CA (between ε = 0.5 and 1). Measured there at ε = 1 (9%), the margins
and the check cost the loop's rows mixed-marginal error 1.37x and 1.71x (means of 3 seeds, Puerto
Rico's and the other states' tables) while the candidate was released in 1 run of 6
(``bench/results/public_margins_first.md``)."""
NUMERIC_WEIGHT = 4.0
"""A numeric margin's budget relative to a categorical one's (a mixed marginal's prefix sums up
to :data:`NUMERIC_CELLS` of its cells' noise). On acs-income-CA at ε = 0.25 with the whole
budget (``bench/results/public_margins_probe.md``; James-Stein, label weight 1): weight 1,
mixed-marginal error 0.69x the run without a public table, LT 0.86x; 3, 0.60x and 0.76x; 4, 0.60x
and 0.77x; 6, 0.59x and 0.77x; CM 0.57x / 0.58x / 0.59x / 0.61x."""
LABEL_WEIGHT = 8.0
"""A label's margin's budget relative to a categorical feature's: every class-conditional query
(the mixed marginals and linear thresholds split by the label) carries the error of its class's
share. On acs-income-CA at ε = 0.25, offline (``bench/results/public_margins_probe.md``, 80% of
the budget), the true label margin in place of the measured one (weight 1) alone takes MM from
0.60x the run without a public table to 0.36x and LT from 0.78x to 0.38x; weight 4, 8 or 16 scores
MM 0.47x / 0.44x / 0.44x, LT 0.57x / 0.53x / 0.51x, CM 0.59x / 0.59x / 0.61x. Through the
pipeline (3 seeds, ``bench/results/public_margins_label.md``) weight 8 scores MM 0.40x / 0.42x at
ε = 0.1 / 0.25 (weight 1: 0.46x / 0.58x), LT 0.49x / 0.47x (0.57x / 0.71x), CM 0.39x / 0.61x
(0.38x / 0.58x); weight 4, MM 0.46x / 0.42x, LT 0.56x / 0.47x, CM 0.39x / 0.59x."""
LOOP_RESERVE = 2.0
"""The margins leave the loop at least this many times the budget below which its plan's noise
would swamp every answer (:func:`~polars_rap.fit.planning.loop_rho_needed`): on a small table at a
small ε they take less than :func:`margins_share` says, or nothing, rather than leave a loop that
cannot run. Acs-income-CA at ε = 0.1 (the loop needs 6% of the budget) keeps the 80% cap."""
FIRST_PART = 0.1
"""Part of the margins' share measured before the public table's associations are checked
(:func:`public_first_margins`); the rest is measured only if they pass. A tenth rather than a
quarter (``bench/results/public_margins_first_part.md``): the check chose alike in all 12 runs
on acs-income-CA, and with Puerto Rico's table the loop keeps 90% of the budget at ε <= 0.25
instead of 78% (CM 0.93x / 1.07x of none at ε = 0.1 / 0.25, was 1.07x / 1.15x)."""
FIRST_CHECK_TABLES = 0.25
"""Part of the workload's categorical marginals the first check scores where the margins take
their largest share (:data:`MAX_SHARE`; every table under it): those where the public rows and the
independent rows disagree most (:func:`~polars_rap.public.reweight.disputed_groups`: it reads the
two candidates alone). A table where the public rows are about independent adds 2 counts of
sensitivity and nothing to the gap: with a quarter, tables whose release pays pass more often and
those whose release costs less often (``bench/results/public_margins_check_tables.md``; Florida's
commuters at ε = 0.25 passed in 10 of 10 runs against 3 of 5, ``public_task_check.md``). Under the
cap the first part is noisier (2.4% of the budget for Florida's at ε = 1, against 8%) and the
quarter, where the loop is strongest, failed tables whose release paid (3 of 10 passes against 7):
``docs/public-data.md``."""
UNHELD_Z = 3.0
"""A cell no public row falls in keeps its released share in the check's independent rows
(:func:`check_margins`) when the release exceeds this many noise stds: a share the public rows
cannot hold, told from the noise of the many empty cells a small public table leaves (3 stds: one
empty cell in 740 by chance)."""
NUMERIC_CELLS = 8
"""Equal cells of a numeric column's mapped ``[0, 1]`` its margin has (and a null cell): with
weight 1 and the whole ε = 0.25 budget on acs-income-CA (James-Stein), 20 cells scored mixed-marginal error
1.11x the run without a public table, 8 cells 0.69x, 4 cells 0.79x (``bench/results/public_margins_probe.md``)."""


def _split_by_label(domain: Domain) -> dict[int, int]:
    """{block: the label's block}: the binary categorical features whose margin is measured split
    by the label (a feature x label table, one label only; none with several labels). Every
    class-conditional query reads how such a feature goes with the label, and the public rows
    miss it most: on acs-income-CA SEX x label's association the raked rows lack is the largest
    of all features' (``bench/results/public_margins_alternatives.md``). Through the pipeline
    (``bench/results/public_margins_split.md``, 3 seeds) the split took CA's MM from 0.40x / 0.46x
    of the run without a public table to 0.37x / 0.41x at ε = 0.1 / 0.25, LT 0.47x / 0.53x to 0.44x
    / 0.42x, CM 0.37x / 0.58x to 0.36x / 0.58x; Texas's MM 0.41x / 0.74x to 0.33x / 0.69x at ε =
    0.25 / 1, LT 0.49x / 0.81x to 0.44x / 0.73x, CM 0.48x / 0.77x to 0.49x / 0.77x."""
    labels = [b for b, block in enumerate(domain.blocks) if block.is_label]
    if len(labels) != 1:
        return {}
    return {b: labels[0] for b, block in enumerate(domain.blocks)
            if block.n_codes == 2 and not block.is_label and not block.indicator}


def _kept(domain: Domain) -> list[int]:
    """Indices into :func:`~polars_rap.public.reweight.margin_cells`' margins that are measured:
    every categorical block but a nullable numeric's null indicator (the numeric margin's null
    cell holds it), then every numeric column."""
    blocks = [b for b, block in enumerate(domain.blocks) if not block.indicator]
    return blocks + [len(domain.blocks) + j for j in range(len(domain.numeric_columns))]


def margin_names(domain: Domain) -> list[str]:
    """The measured margins' names, in order (categorical blocks, then numeric columns): a
    column's name, ``"SEX x label"`` for one split by the label (:func:`_split_by_label`)."""
    names = [block.source for block in domain.blocks] + [spec.name for spec in domain.numeric_columns]
    for b, label in _split_by_label(domain).items():
        names[b] = f"{names[b]} x {names[label]}"
    return [names[m] for m in _kept(domain)]


def _cells(codes: np.ndarray, numerics: np.ndarray, domain: Domain) -> list[np.ndarray]:
    all_cells = margin_cells(codes, numerics, domain, numeric_cells=NUMERIC_CELLS)
    for b, label in _split_by_label(domain).items():
        all_cells[b] = all_cells[b] * domain.block_sizes[label] + all_cells[label]
    return [all_cells[m] for m in _kept(domain)]


def _sizes(domain: Domain) -> list[int]:
    sizes = [*domain.block_sizes, *[NUMERIC_CELLS + 1] * len(domain.numeric_columns)]
    for b, label in _split_by_label(domain).items():
        sizes[b] *= domain.block_sizes[label]
    return [sizes[m] for m in _kept(domain)]


def _weights(domain: Domain) -> np.ndarray:
    """float64[margins]: each measured margin's budget weight, in :func:`margin_names`' order: a
    categorical feature's in proportion to the square root of its cells (a feature split by the
    label: of the table's), scaled so that the features' codes' square roots average 1 (the split
    that minimises the summed noise energy ``sum k_i sigma_i^2`` of margins that differ from the
    public ones beyond their noise); a label's :data:`LABEL_WEIGHT`, a numeric column's
    :data:`NUMERIC_WEIGHT`. On acs-income-CA with the other states' rows
    (``bench/results/public_margins_sqrt.md``, 3 seeds) the square roots took CM from 0.39x / 0.61x
    of the run without a public table to 0.37x / 0.58x at ε = 0.1 / 0.25 (every seed lower), MM
    0.40x / 0.42x to 0.40x / 0.46x, LT 0.49x / 0.47x to 0.47x / 0.53x."""
    kept = [b for b, block in enumerate(domain.blocks) if not block.indicator]
    roots = np.sqrt([float(domain.block_sizes[b]) for b in kept if not domain.blocks[b].is_label])
    scale = float(roots.mean()) if len(roots) else 1.0
    cells = _sizes(domain)
    categorical = [LABEL_WEIGHT if domain.blocks[b].is_label else float(np.sqrt(k)) / scale
                   for b, k in zip(kept, cells[:len(kept)], strict=True)]
    return np.array(categorical + [NUMERIC_WEIGHT] * len(domain.numeric_columns))


@dataclass(slots=True)
class MarginCounts:
    """The measured margins' cell counts read in the pass over the rows (a
    :class:`~polars_rap.io.source.RowStatistic`): ``counts``, int64 per margin (its cells)."""

    domain: Domain
    counts: list = None

    def __post_init__(self) -> None:
        if self.counts is None:
            self.counts = [np.zeros(k, dtype=np.int64) for k in _sizes(self.domain)]

    def add(self, encoded) -> None:
        """Add one batch's rows (:class:`~polars_rap.schema.encoding.EncodedData`)."""
        for total, cells in zip(self.counts, _cells(encoded.codes, encoded.numerics, self.domain), strict=True):
            total += np.bincount(cells, minlength=len(total))

    def fresh(self) -> MarginCounts:
        return MarginCounts(self.domain)

    def merge(self, other: MarginCounts) -> None:
        for total, part in zip(self.counts, other.counts, strict=True):
            total += part


def margins_share(domain: Domain, n_rows: int, rho: float) -> float:
    """The share of ``rho`` (the loop's budget) that measures a categorical feature's margin of
    weight 1 with noise std :data:`MARGIN_STD` per cell, at most :data:`MAX_SHARE`, or 0 when that
    is below :data:`MIN_SHARE` (public: the domain, the row count and the budget). That margin's
    std at share ``s`` is ``sqrt(2) / n / sqrt(2 rho s / sum(w))``, so ``s = sum(w) / (rho n^2
    MARGIN_STD^2)``."""
    needed = float(_weights(domain).sum()) / (rho * float(n_rows) ** 2 * MARGIN_STD**2)
    return 0.0 if needed < MIN_SHARE else min(MAX_SHARE, needed)


def release_margins(counts: MarginCounts, n_rows: int, rho: float, ledger: PrivacyLedger,
                    rng, stage: str = "") -> list[tuple[np.ndarray, float]]:
    """``(noisy shares float64[cells], std)`` per measured margin: each released by the discrete
    Gaussian mechanism at its part of ``rho`` (module docstring), charged to ``ledger`` first."""
    weights = _weights(counts.domain)
    released = []
    for name, total, weight in zip(margin_names(counts.domain), counts.counts, weights, strict=True):
        released.append(gaussian_mechanism(
            total / float(n_rows), np.sqrt(2.0) / n_rows, rho * float(weight / weights.sum()), ledger, rng,
            description=f"public margins: {name}'s margin{stage}", n_rows=n_rows))
    return released


def combined(first: list[tuple[np.ndarray, float]],
             second: list[tuple[np.ndarray, float]]) -> list[tuple[np.ndarray, float]]:
    """Two independent releases of the same margins, each margin's combined by inverse
    variance: ``(a / sa^2 + b / sb^2) / (1 / sa^2 + 1 / sb^2)``, std ``(1 / sa^2 + 1 / sb^2) ** -0.5``."""
    out = []
    for (a, sa), (b, sb) in zip(first, second, strict=True):
        wa, wb = 1.0 / sa**2, 1.0 / sb**2
        out.append(((a * wa + b * wb) / (wa + wb), float((wa + wb) ** -0.5)))
    return out


def candidate_weights(public_table, released: list[tuple[np.ndarray, float]], domain: Domain) -> np.ndarray:
    """float64[public rows] summing to 1: the public rows' weights fitted to every ``released``
    margin at once (:func:`~polars_rap.public.tilt.tilted_weights`).

    Not raked to each margin shrunk alone (:func:`~polars_rap.public.shrinkage.measured_margins`):
    on acs-income-CA at ε = 0.25 (``bench/results/public_margins_joint.md``) the joint fit scores
    CM 0.540x of the run without a public table against 0.570x (lower on 7 of 8 noise draws), MM
    0.39x against 0.42x, LT 0.47x against 0.45x."""
    return tilted_weights(_cells(public_table.codes, public_table.numerics, domain), released)


def measured_candidate(public_table, released: list[tuple[np.ndarray, float]], domain: Domain, n_rows: int,
                       rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """(float32[n_rows, n_coords] relaxed rows, effective rows ``1 / sum(w^2)``): ``n_rows``
    public rows drawn by :func:`candidate_weights`."""
    weights = candidate_weights(public_table, released, domain)
    rows = reweighted_candidate(public_table.codes, public_table.numerics, weights, n_rows, domain, rng)
    return rows, round(float(1.0 / np.square(weights).sum()), 1)


def check_margins(public_table, weights: np.ndarray, released: list[tuple[np.ndarray, float]],
                  domain: Domain) -> list[np.ndarray]:
    """float64[cells] per measured margin, summing to 1: the margins the check's independent
    rows hold (:func:`independent_rows`), those of the public rows under ``weights``
    (:func:`candidate_weights`), so that the check weighs the rows' associations, not two fits'
    margins; but a cell no public row falls in, which no weight can fill, keeps its release where
    that exceeds :data:`UNHELD_Z` noise stds, the rest scaled to fill what such cells take: what
    the public rows miss, the check must see. Released values and public rows only: the check's
    sensitivity is its private answers' alone.

    Before, each margin shrunk alone toward the public table's
    (:func:`~polars_rap.public.shrinkage.measured_margins`): the worse a public table's margins,
    the worse the independent rows it was weighed against. On acs-income-CA
    (``bench/results/public_margins_check_rows.md``: the check's inputs, 16 simulated releases)
    West Virginia's rows passed with probability 0.90 at ε = 0.1 and 0.39 at ε = 0.25, and were
    released at ε = 0.1 in 3 of 3 runs (CM 1.18x of the run without a public table); against these
    margins they pass with 0.36 and 0.14 (Puerto Rico's 0.30 -> 0.18 and 0.014 -> 0.032), and the
    other states', Texas's and New York's as before (0.98 or more)."""
    out = []
    for cell, (noisy, std) in zip(_cells(public_table.codes, public_table.numerics, domain), released, strict=True):
        own = np.bincount(cell, weights=weights, minlength=len(noisy))
        unheld = np.bincount(cell, minlength=len(noisy)) == 0
        missing = np.where(unheld & (noisy > UNHELD_Z * std), noisy, 0.0)
        lost = min(float(missing.sum()), 1.0)
        scaled = missing * (lost / missing.sum()) if lost > 0 else missing
        out.append(own / own.sum() * (1.0 - lost) + scaled)
    return out


def independent_rows(targets: list[np.ndarray], domain: Domain) -> np.ndarray:
    """float64[1, n_coords]: one relaxed row whose categorical blocks hold the measured margins'
    shares (``targets``, :func:`check_margins`' order; a nullable numeric's null indicator
    from its margin's null cell), so that its answer to a categorical marginal is the product of
    its columns' margins: every column independent (a feature split by the label contributes
    its table summed over the label). Numeric coordinates sit at 0.5 (unused)."""
    row = np.full((1, domain.n_coords), 0.5)
    by_margin = dict(zip(_kept(domain), targets, strict=True))
    for b, label in _split_by_label(domain).items():
        by_margin[b] = by_margin[b].reshape(-1, domain.block_sizes[label]).sum(axis=1)
    for b, (block, cells) in enumerate(zip(domain.blocks, block_slices(domain), strict=True)):
        if block.indicator:
            j = [spec.name for spec in domain.numeric_columns].index(block.source)
            null = by_margin[len(domain.blocks) + j][NUMERIC_CELLS]
            row[0, cells] = (1.0 - null, null)
        else:
            row[0, cells] = by_margin[b]
    return row


def loop_ratio(rows: np.ndarray, queries: QuerySet, backend, dry_run: DryRun, rho: float, n_rows: int,
               rng: np.random.Generator, groups: np.ndarray | None = None) -> float:
    """``r``: the loop's error over independence's on the categorical marginals (``groups``, int64
    group ids; every CM group when None) in a dry run on
    ``rows`` (float32[n, n_coords] relaxed public rows, one-hot) as if they were a private table
    of ``n_rows`` rows. ``dry_run(answers, rho, rng)`` runs the loop's plan on their answers
    (float64[m], rounded to counts over ``n_rows``, as the mechanisms expect) at
    ``rho`` with ``rng`` for its noise and a ledger of its own, and returns its relaxed rows; the
    errors are total L1 over the CM groups, against the rows' own answers, of the loop's relaxed
    rows and of the rows' margins with every column independent (:func:`own_margins_row`).

    Public rows and released values only (the rows are fitted to released margins; ``rho`` and the
    plan are public): post-processing, whatever the dry run's noise."""
    answers = np.rint(np.asarray(backend.answers_relaxed(rows, queries, np.inf), dtype=np.float64) * n_rows) / n_rows
    if groups is None:
        groups = np.flatnonzero(queries.group_class == CLASS_CODES["CM"])
    scored, truth = queries.take_groups(groups), answers[queries.group_query_indices(groups)]
    relaxed = dry_run(answers, rho, rng)
    loop_error, independent_error = (float(np.abs(np.asarray(backend.answers_relaxed(x, scored, np.inf),
                                                             dtype=np.float64) - truth).sum())
                                     for x in (relaxed, own_margins_row(rows)))
    return loop_error / independent_error if independent_error > 0 else 1.0


def own_margins_row(rows: np.ndarray) -> np.ndarray:
    """float64[1, n_coords]: the mean of relaxed ``rows`` (one-hot in every categorical block), so
    that its answer to a categorical marginal is the product of the rows' own margins."""
    return np.asarray(rows).mean(axis=0, keepdims=True, dtype=np.float64)


def public_first_margins(counts: MarginCounts, public_table, domain: Domain, queries: QuerySet,
                         true_answers: np.ndarray, l1_sensitivity: np.ndarray, n_rows: int, check_rho: float,
                         rho: float, ledger: PrivacyLedger, backend, rng, size: int,
                         candidate_rng: np.random.Generator,
                         dry_run: DryRun | None = None) -> tuple[list[tuple[np.ndarray, float]], dict]:
    """(the released margins: all of them, or the first part's alone when the public table failed
    the check; the report's record).

    ``rho`` (the margins' share of the loop) is spent in two stages. First :data:`FIRST_PART` of it
    measures the margins, and ``size`` public rows fitted to them (:func:`candidate_weights`, drawn
    with ``candidate_rng``) are checked against every column independent with the same rows' margins
    (:func:`check_margins`, :func:`independent_rows`) on the :data:`FIRST_CHECK_TABLES` of the
    workload's categorical marginals where the two differ most (where ``rho`` is the largest share,
    :data:`MAX_SHARE`; on all of them under it): the exponential mechanism on their total L1 error
    in counts (:func:`~polars_rap.public.reweight.choose_release`; sensitivity 2 counts a table
    under replace-one) at ``check_rho``, charged here first. A public table whose associations are
    worse than none stops there (on acs-income-CA Puerto Rico's rows raked to CA's true margins
    score CM 0.0045, independence 0.0023, the other states' 0.00043:
    ``bench/results/public_margins_probe.md``), and the rest of ``rho`` stays with the loop; its
    rows fitted to the first part still go to the final check beside the loop's
    (:class:`~polars_rap.public.release.PublicRelease`), which releases them only where they beat
    the loop's rows there. Independence alone is a weaker rival than the loop's rows at ε = 0.25,
    where small tables of other states passed and cost more than failing would
    (``bench/results/public_margins_check_stakes.md``): with ``dry_run``, independence's error is
    scaled by :func:`loop_ratio` (at most 1), how much better the loop does in a dry run on the
    public rows themselves at the rho it would keep. Otherwise the rest measures the margins again,
    and the two releases are combined (:func:`combined`). ``rng`` draws the noise.
    The record holds the check's rho, its outcome, the dry run's ratio on the scored tables
    (``margins_check_rival``, applied up to 1), how many tables it scored and ``margins_rho``,
    what the margins charged (the sum of their events)."""
    at_cap = rho >= MAX_SHARE * (ledger.rho_remaining - check_rho)  # the first part then has 8% of the budget
    charge_check(ledger, check_rho, "public margins check: the public table's associations or none (every column "
                                    "independent)")
    charged = len(ledger.events)
    first = release_margins(counts, n_rows, FIRST_PART * rho, ledger, rng, " (first part)")
    groups = np.flatnonzero(queries.group_class == CLASS_CODES["CM"])
    passed, scale = True, 1.0
    if len(groups):
        weights = candidate_weights(public_table, first, domain)
        public_rows = reweighted_candidate(public_table.codes, public_table.numerics, weights, size, domain,
                                           candidate_rng)
        targets = check_margins(public_table, weights, first, domain)
        scored = queries.take_groups(groups)
        answers = [backend.answers_relaxed(x, scored, np.inf) for x in (public_rows, independent_rows(targets, domain))]
        kept = disputed_groups(answers, scored.group_sizes, FIRST_CHECK_TABLES if at_cap else 1.0)  # public
        answers, groups = [a[scored.group_query_indices(kept)] for a in answers], groups[kept]
        if dry_run is not None:  # the rival as strong as the loop the rest of rho would otherwise run
            scale = loop_ratio(public_rows, queries, backend, dry_run, ledger.rho_remaining, n_rows,
                               np.random.default_rng(candidate_rng.integers(2**63)), groups)
        passed = choose_release(answers, true_answers, queries, groups, l1_sensitivity, n_rows, check_rho, rng,
                                scales=(1.0, max(scale, 2.0**-30))) == 0  # error_scale: 1 above 1; a perfect dry run ~0
    released = first
    if passed:
        second = release_margins(counts, n_rows, (1.0 - FIRST_PART) * rho, ledger, rng, " (second part)")
        released = combined(first, second)
    record = {"margins_check_rho": check_rho, "margins_check_passed": bool(passed), "margins_check_rival": scale,
              "margins_check_tables": int(len(groups)),
              "margins_rho": math.fsum(event.rho for event in ledger.events[charged:])}  # the margins' charges
    return released, record
