"""The public rows reweighted to the synthetic margins, released only if a private check prefers them.

``public_use="reweight"`` (issue 19). After the loop, the public table's rows are weighted by
iterative proportional fitting (raking) so that their margins match the relaxed rows', and a
sample of them by weight becomes a candidate release; two candidates (:data:`MARGIN_SETS`): one
raked to the one-way margins (every categorical block, null indicators and labels included, and
each numeric column on :data:`NUMERIC_CELLS` equal cells of its mapped ``[0, 1]``), one to each
of those margins crossed with the labels. Raking moves every column at once through the public table's
own associations, so a margin the loop measured also corrects the columns that go with it:
where the two populations share how columns depend on each other (another state's survey)
a candidate's joint tables beat the relaxed rows'; where they do not, they are far off.
Which of the three is released is decided privately, by the exponential mechanism on their
total L1 error over the workload's marginal tables where they disagree most (:func:`choose_release`,
:func:`disputed_groups`), with
:data:`CHECK_SHARE` of the loop's budget held out for it: a mismatched public table loses
that check, and the loop's rows are released. The more noise in the relaxed rows' margins,
the fewer of them a candidate should follow: which of the two raked candidates is better
depends on the budget, and the check chooses that too, at no extra cost.

Raking and resampling read the public rows and released values only (post-processing); the
check is the one release, charged before the loop (:func:`charge_check`) and drawn after it.

Measured on acs-income-CA with the other states' rows (``bench/results/public_reweight_disputed.md``;
the check on every table: ``public_reweight_xlabel.md``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import block_slices
from polars_rap.errors import DataError
from polars_rap.privacy.ledger import PrivacyEvent, PrivacyLedger
from polars_rap.workload.queries import CLASS_CODES, QuerySet
from polars_rap.privacy.samplers import words_from
from polars_rap.privacy.selection import exponential_top_k, selection_epsilon
from polars_rap.privacy.selection_scores import selection_scores
from polars_rap.schema.transforms import equal_bin

__all__ = ["CHECK_SHARE", "CHECK_TABLES", "MARGIN_SETS", "NUMERIC_CELLS", "MAX_CANDIDATE_ROWS", "candidate_rows",
           "charge_check", "check_columns", "check_groups", "checked_release", "choose_release", "crossed_cells",
           "crossed_margins", "disputed_groups", "drawn_rows", "error_scale", "margin_cells", "public_relaxed", "rake",
           "raked_candidates", "raking_targets", "relaxed_margins", "reweighted_candidate", "SAMPLING_CELLS",
           "sampling_order"]

CHECK_SHARE = 0.02
"""Part of the loop's budget held out for the check between the loop's rows and the reweighted
public rows (the loop keeps the rest). 2% rather than 5% on acs-income-CA
(``bench/results/public_reweight_check2.md``): the same choices in all 18 runs (the other
states' rows 8 of 9, Puerto Rico's 0 of 9), and with Puerto Rico's table the loop's rows within
0.97-1.01x of the run without a public table at eps = 1 (5%: 0.99-1.05x)."""
MARGIN_SETS = ("one-way", "x-label")
"""The candidates, by the relaxed rows' margins their public rows are raked to: ``"one-way"``,
every categorical block's and numeric column's; ``"x-label"``, each of those crossed with each
label (tables with labels only). Neither wins everywhere, so the check chooses among both and
the loop's rows: on acs-income-CA with the other states' rows (``bench/results/
reweight_margins_probe.md``), the label-crossed margins are too noisy at eps = 0.25 (CM 1.20x
the one-way candidate's) and the better target at eps = 1 (CM 0.89x, MM 0.83x)."""
CHECK_TABLES = 0.5
"""Part of the marginal tables the check scores: those where the candidates disagree most
(:func:`disputed_groups`). A table where they agree adds 2 counts of sensitivity and nothing
to their gap: on acs-income-CA the best candidate's probability rose from 0.69-0.86 to
0.85-0.95 with half of the 153 tables (``bench/results/reweight_margins_probe.md``)."""
NUMERIC_CELLS = 20
"""Equal cells of a numeric column's mapped ``[0, 1]`` whose shares the raking matches."""
MAX_CANDIDATE_ROWS = 100_000
"""Public rows drawn for the candidate at most (the output's rows, or the relaxed rows if more)."""
_SWEEPS = 100
_TOLERANCE = 1e-9


def check_columns(missing: Sequence[str], use: str = "reweight") -> None:
    """Raise :class:`DataError` when the public table lacks columns (``missing``, the data's
    names it does not hold): public rows released by ``use`` would have nothing to give them."""
    if missing:
        msg = (f"public_use {use!r} may release public rows, but the public table lacks columns "
               f"{list(missing)}; add them to it, or drop {use!r} from public_use")
        raise DataError(msg)


def _numeric_cells(values: np.ndarray, n_cells: int = NUMERIC_CELLS) -> np.ndarray:
    """int64: each value's cell of ``n_cells`` equal cells of ``[0, 1]`` (:func:`~polars_rap.schema.transforms.equal_bin`;
    NaN in cell 0)."""
    return equal_bin(np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0), n_cells)


def margin_cells(codes: np.ndarray, numerics: np.ndarray, domain: Domain,
                 numeric_cells: int = NUMERIC_CELLS) -> list[np.ndarray]:
    """int64[n_rows] per margin: each row's cell, one margin per categorical block (its code),
    then one per numeric column (its cell of ``numeric_cells`` equal cells of ``[0, 1]``; a
    null value, by its null indicator's code or NaN, gets the extra cell ``numeric_cells``).
    ``codes`` int[n_rows, n_blocks], ``numerics`` float[n_rows, n_numeric] mapped to ``[0, 1]``."""
    cells = [np.asarray(codes[:, b], dtype=np.int64) for b in range(codes.shape[1])]
    for j, spec in enumerate(domain.numeric_columns):
        values = np.asarray(numerics[:, j], dtype=np.float64)
        null = np.isnan(values)
        if spec.nullable:
            null |= codes[:, domain.block_index(spec.name, indicator=True)] == 1
        cells.append(np.where(null, numeric_cells, _numeric_cells(values, numeric_cells)))
    return cells


def _soft_cells(relaxed: np.ndarray, domain: Domain, margin: int) -> np.ndarray:
    """float64[n_rows, n_cells]: each relaxed row's probability of each cell of ``margin``
    (:func:`margin_cells`' order). A block's cells are its probabilities; a numeric column's
    row puts its non-null probability (one minus its null indicator's, 1 without one) on its
    value's cell and the rest on the null cell."""
    blocks = block_slices(domain)
    if margin < len(blocks):
        return np.asarray(relaxed[:, blocks[margin]], dtype=np.float64)
    j = margin - len(blocks)
    spec = domain.numeric_columns[j]
    n_rows = relaxed.shape[0]
    present = np.ones(n_rows)
    if spec.nullable:
        present = 1.0 - relaxed[:, blocks[domain.block_index(spec.name, indicator=True)].start + 1]
    soft = np.zeros((n_rows, NUMERIC_CELLS + 1))
    soft[np.arange(n_rows), _numeric_cells(relaxed[:, domain.n_categorical_coords + j])] = present
    soft[:, NUMERIC_CELLS] = 1.0 - present
    return soft


def _n_margins(domain: Domain) -> int:
    return len(domain.blocks) + len(domain.numeric_columns)


def relaxed_margins(relaxed: np.ndarray, domain: Domain) -> list[np.ndarray]:
    """float64[cells] per margin (as :func:`margin_cells`): the relaxed rows' expected shares,
    the mean of each row's cell probabilities. ``relaxed`` float[n_rows, n_coords]."""
    relaxed = np.asarray(relaxed, dtype=np.float64)
    return [_soft_cells(relaxed, domain, m).mean(axis=0) for m in range(_n_margins(domain))]


def _label_pairs(domain: Domain) -> list[tuple[int, int]]:
    """(margin, label block) for every label and every other margin: the label-crossed margins."""
    labels = [domain.block_index(name) for name in domain.labels]
    return [(m, label) for label in labels for m in range(_n_margins(domain)) if m != label]


def crossed_cells(cells: Sequence[np.ndarray], domain: Domain) -> list[np.ndarray]:
    """int64[n_rows] per label-crossed margin (every margin of :func:`margin_cells` but the
    label's own, crossed with each label): ``cell * n_label_codes + label_code``."""
    sizes = domain.block_sizes
    return [cells[m] * sizes[label] + cells[label] for m, label in _label_pairs(domain)]


def crossed_margins(relaxed: np.ndarray, domain: Domain) -> list[np.ndarray]:
    """float64[cells * n_label_codes] per label-crossed margin (as :func:`crossed_cells`): the
    relaxed rows' expected joint shares, ``soft_m.T @ soft_label / n_rows`` raveled."""
    relaxed = np.asarray(relaxed, dtype=np.float64)
    pairs = _label_pairs(domain)
    labels = {label: _soft_cells(relaxed, domain, label) for _, label in pairs}  # each once, not per margin
    return [(_soft_cells(relaxed, domain, m).T @ labels[label]).ravel() / relaxed.shape[0] for m, label in pairs]


def rake(cells: Sequence[np.ndarray], targets: Sequence[np.ndarray], sweeps: int = _SWEEPS,
         tolerance: float = _TOLERANCE, start: np.ndarray | None = None) -> np.ndarray:
    """float64[n_rows]: row weights (summing to 1) whose margins match ``targets`` as far as
    the rows allow, by iterative proportional fitting from equal weights (or from ``start``,
    float64[n_rows] >= 0, e.g. a survey's design weights; a row at 0 stays there).

    ``cells``: int64[n_rows] per margin; ``targets``: float[n_cells] per margin, summing to 1.
    A sweep scales the weights margin by margin; it stops after ``sweeps`` sweeps or once no
    margin's shares moved by more than ``tolerance``. A cell no row falls in cannot be
    matched; its share is spread over the margin's other cells by the rescaling."""
    n_rows = len(cells[0])
    weights = np.full(n_rows, 1.0 / n_rows) if start is None else np.asarray(start, dtype=np.float64) / np.sum(start)
    for _ in range(sweeps):
        moved = 0.0
        for cell, target in zip(cells, targets, strict=True):
            current = np.bincount(cell, weights=weights, minlength=len(target))
            ratio = np.divide(target, current, out=np.zeros(len(target)), where=current > 0)
            weights = weights * ratio[cell]
            weights /= weights.sum()
            moved = max(moved, float(np.abs(current - target)[current > 0].max(initial=0.0)))
        if moved <= tolerance:
            break
    return weights


SAMPLING_CELLS = 8
"""Equal cells of a numeric column's mapped ``[0, 1]`` the candidates' draw is ordered by (:func:`sampling_order`)."""


def sampling_order(codes: np.ndarray, numerics: np.ndarray, domain: Domain) -> np.ndarray:
    """int64[n_rows]: the public rows sorted by their labels, then each numeric column's cell
    (:data:`SAMPLING_CELLS` of ``[0, 1]``, and null), then the other categorical blocks, fewest
    codes first; ties in table order. Systematic resampling along it draws every leading
    stratum its expected count to within one row (implicit stratification). On acs-income-CA,
    the other states' rows raked to CA's true one-way margins and drawn 27,540 at a time along
    it score CM 0.00047, MM 0.0019, LT 0.0012 against 0.00048, 0.0022, 0.0015 drawn in a random
    order and 0.00050, 0.0030, 0.0022 in the table's own (3 draws; ``bench/results/public_margins_probe.md``)."""
    cells = margin_cells(codes, numerics, domain, numeric_cells=SAMPLING_CELLS)
    n_blocks = len(domain.blocks)
    labels = [b for b, block in enumerate(domain.blocks) if block.is_label]
    others = sorted((b for b in range(n_blocks) if b not in labels), key=lambda b: domain.block_sizes[b])
    keys = [*labels, *range(n_blocks, len(cells)), *others]  # most significant first
    return np.lexsort([cells[k] for k in reversed(keys)]) if keys else np.arange(len(codes))


def reweighted_candidate(codes: np.ndarray, numerics: np.ndarray, weights: np.ndarray, n_rows: int,
                         domain: Domain, rng: np.random.Generator) -> np.ndarray:
    """float32[n_rows, n_coords]: ``n_rows`` public rows drawn by ``weights`` (:func:`drawn_rows`)
    as relaxed rows (:func:`public_relaxed`)."""
    return public_relaxed(codes, numerics, drawn_rows(codes, numerics, weights, n_rows, domain, rng), domain)


def drawn_rows(codes: np.ndarray, numerics: np.ndarray, weights: np.ndarray, n_rows: int, domain: Domain,
               rng: np.random.Generator) -> np.ndarray:
    """int64[n_rows]: public row indices drawn by ``weights`` (systematic resampling along
    :func:`sampling_order`, shuffled)."""
    order = sampling_order(codes, numerics, domain)
    cumulative = np.cumsum(weights[order] / weights.sum())
    drawn = np.searchsorted(cumulative, (rng.random() + np.arange(n_rows)) / n_rows, side="right")
    drawn = order[np.minimum(drawn, len(weights) - 1)]
    rng.shuffle(drawn)
    return drawn


def public_relaxed(codes: np.ndarray, numerics: np.ndarray, drawn: np.ndarray, domain: Domain) -> np.ndarray:
    """float32[len(drawn), n_coords]: public rows ``drawn`` (int64 indices) as relaxed rows: one-hot
    categorical blocks, numerics as mapped (a null value's coordinate at 0.5; its indicator says null)."""
    out = np.zeros((len(drawn), domain.n_coords), dtype=np.float32)
    rows = np.arange(len(drawn))
    for b, block in enumerate(block_slices(domain)):
        out[rows, block.start + codes[drawn, b]] = 1.0
    values = numerics[drawn]
    out[:, domain.n_categorical_coords:] = np.where(np.isnan(values), 0.5, np.clip(values, 0.0, 1.0))
    return out


def check_groups(queries: QuerySet) -> np.ndarray:
    """int64 group ids the check scores: the marginal tables (a pair of categorical columns x
    the labels, and the mixed marginals) and the numeric histograms' prefixes (each label value
    x ``1[x <= t]``, class ``"NH"``), each of whose L1 error moves by at most 2 counts when one
    row is replaced; every group if the workload has none.

    The prefixes let the check see the numeric columns. Without them it read the categorical
    tables alone, and on Boston's NIST excerpt at ε = 0.25 (``bench/results/public_task_check.md``)
    it released public rows whose numeric columns were far off: the Bronx's 1,109 rows fitted to
    Boston's margins (38.8 effective rows, every density the Bronx's; MM 3.3x, LT 4.5x of the run
    without a public table). A numeric column's joint with another stays unseen: rows fitted to
    the first tenth of the margins alone still won there once with MM 1.8x."""
    prefixes = queries.group_class == CLASS_CODES["NH"]
    groups = np.flatnonzero(_marginal_tables(queries) | prefixes)
    return groups if len(groups) else np.arange(queries.n_groups)


def _marginal_tables(queries: QuerySet) -> np.ndarray:
    """bool[n_groups]: the groups that are marginal tables (categorical or mixed, with columns)."""
    is_marginal = np.diff(queries.group_column_offsets) > 0
    return is_marginal & np.isin(queries.group_class, [CLASS_CODES["CM"], CLASS_CODES["MM"]])


def disputed_groups(candidate_answers: Sequence[np.ndarray], sizes: np.ndarray, share: float,
                    of: int | None = None) -> np.ndarray:
    """int64 positions (ascending) of the ``ceil(share * of)`` groups (``of``: ``len(sizes)`` when
    None) where the candidates disagree most: the largest L1 distance between two candidates'
    answers over the group's queries (ties to the earlier group). ``candidate_answers``: float per
    candidate, the groups' queries concatenated in order; ``sizes``: int64[n_groups], queries per
    group.

    It reads the candidates' answers only (released rows and the public table: no true answer),
    so scoring the check on these groups alone keeps its stated sensitivity, the sum of theirs."""
    answers = np.asarray(candidate_answers, dtype=np.float64)
    starts = np.concatenate([[0], np.cumsum(sizes)])[:-1]
    distance = np.zeros(len(sizes))
    for i in range(len(answers)):
        for j in range(i + 1, len(answers)):
            gaps = np.abs(answers[i] - answers[j])
            distance = np.maximum(distance, np.add.reduceat(gaps, starts) if len(gaps) else distance)
    keep = min(int(np.ceil(share * (len(sizes) if of is None else of))), len(sizes))
    return np.sort(np.argsort(-distance, kind="stable")[:keep])


FINAL_CHECK = "public table check: the loop's rows or the reweighted public rows (drawn after the loop)"
"""The ledger's description of the final check (:func:`choose_release` after the loop)."""


def charge_check(ledger: PrivacyLedger, rho: float, description: str = FINAL_CHECK) -> PrivacyEvent:
    """Charge a check's ``rho`` (an exponential mechanism's, :func:`choose_release`) now: the
    final one before the loop spends the rest (zCDP composes in any order; its draw comes after
    the loop), or ``"margins"``' check against independence before the rest of the margins."""
    event = PrivacyEvent("exponential", rho, description)
    ledger.charge(event)
    return event


def error_scale(scale: float, n_rows: int) -> float:
    """A candidate's error multiplier as :func:`choose_release` applies it: 1 at or above 1, else
    at most ``1 - n_rows 2^-51``. A total error ``E`` is at most ``n_rows`` times the check's
    sensitivity ``Delta`` (each group's L1 error at most ``n_rows`` times its own), so rounding
    ``c E`` and ``c E'`` moves their gap by at most ``2^-52 n_rows Delta``: with ``c`` so capped,
    the rounded scaled errors of neighbouring tables differ by at most ``Delta``."""
    if not 0.0 < scale:
        msg = f"an error scale must be positive, got {scale!r}"
        raise ValueError(msg)
    return 1.0 if scale >= 1.0 else min(float(scale), 1.0 - n_rows * 2.0**-51)


def choose_release(candidate_answers: Sequence[np.ndarray], true_answers: np.ndarray, queries: QuerySet,
                   groups: np.ndarray, l1_sensitivity: np.ndarray, n_rows: int, rho: float, rng,
                   scales: Sequence[float] | None = None) -> int:
    """The index of the candidate released: the exponential mechanism on minus each one's
    total L1 error over ``groups``, in counts (charged beforehand by :func:`charge_check`),
    times its public ``scales`` (1 each when None; :func:`error_scale`: a scale below 1 favours
    that candidate, and never raises the sensitivity).

    Sensitivity: replacing one row moves each true count by one in at most two cells of a
    marginal group (one for a single query), so each group's L1 error moves by at most its
    ``l1_sensitivity * n_rows`` (2 or 1) and the total by the sum of those over ``groups``.
    The totals are exact floats (:func:`~polars_rap.privacy.selection_scores.selection_scores` over
    the groups' queries as one vector), so the stated sensitivity holds for the numbers the
    exact sampler (:func:`~polars_rap.privacy.selection.exponential_top_k`) reads; with ``rho``, the
    mechanism is ``eps' = sqrt(8 rho)``-DP with bounded range, rho-zCDP. Only the index is
    released. ``candidate_answers``: float64 per candidate, its answers to ``groups``' queries
    in :meth:`~polars_rap.workload.queries.QuerySet.group_query_indices` order (``queries.take_groups(groups)``'s).
    """
    indices = queries.group_query_indices(groups)
    true_counts = np.rint(true_answers[indices] * n_rows)
    size = np.array([len(indices)], dtype=np.int64)
    errors = np.array([selection_scores(true_counts, np.asarray(answers), size, n_rows)[0]
                       for answers in candidate_answers])
    if scales is not None:
        errors = errors * np.array([error_scale(c, n_rows) for c in scales])
    sensitivity = float(np.rint(l1_sensitivity[groups] * n_rows).sum())
    return int(exponential_top_k(-errors, 1, sensitivity, selection_epsilon(rho, 1), words_from(rng))[0])


def raking_targets(public_table, relaxed: np.ndarray, domain: Domain) -> dict[str, tuple[list, list]]:
    """Per margin set of :data:`MARGIN_SETS` the domain allows (``"x-label"`` needs labels):
    (the public rows' cells per margin, the relaxed rows' shares per margin)."""
    cells = margin_cells(public_table.codes, public_table.numerics, domain)
    targets = {"one-way": (cells, relaxed_margins(relaxed, domain))}
    if domain.labels:
        targets["x-label"] = (crossed_cells(cells, domain), crossed_margins(relaxed, domain))
    return targets


def candidate_rows(out_rows: int, n_relaxed: int) -> int:
    """Rows a public candidate draws: ``min(max(out_rows, n_relaxed),`` :data:`MAX_CANDIDATE_ROWS` ``)``
    (``n_relaxed``: the loop's relaxed rows)."""
    return int(min(max(out_rows, n_relaxed), MAX_CANDIDATE_ROWS))


def raked_candidates(public_table, relaxed: np.ndarray, domain: Domain, size: int,
                     rng: np.random.Generator) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """({margin set: ``size`` public rows as relaxed rows}, {margin set: effective rows ``1 /
    sum(w^2)``}): ``public_table``'s rows (:class:`~polars_rap.public.prior.PublicTable`) raked
    to each of :data:`MARGIN_SETS` of the loop's ``relaxed`` rows' margins and drawn by weight
    (``rng``; public post-processing)."""
    candidates, effective = {}, {}
    for name, (cells, targets) in raking_targets(public_table, relaxed, domain).items():
        weights = rake(cells, targets)
        candidates[name] = reweighted_candidate(public_table.codes, public_table.numerics, weights, size, domain, rng)
        effective[name] = round(float(1.0 / np.square(weights).sum()), 1)
    return candidates, effective


def checked_release(relaxed: np.ndarray, candidates: dict[str, np.ndarray], effective: dict[str, float],
                    queries: QuerySet, true_answers: np.ndarray, l1_sensitivity: np.ndarray, n_rows: int,
                    rho: float, backend, noise_rng) -> tuple[np.ndarray, dict]:
    """The relaxed rows to release and the report's record of the check.

    :func:`choose_release` (``rho``, already charged; ``noise_rng``) picks one of the loop's
    ``relaxed`` rows and the public ``candidates`` (named: ``"one-way"``, ``"x-label"``,
    ``"measured"``) on the groups of :func:`check_groups` where they disagree most, as many as
    :data:`CHECK_TABLES` of the marginal tables alone (``true_answers`` float64[m], read only by
    the check). The prefixes thus compete for the tables' places and do not add to their number:
    kept as a share of every group, the 430 prefixes of Boston's seven numeric columns took the
    sensitivity from 120 counts to 1,066, and rows the check had preferred with probability 0.997
    were kept with 0.89 (``bench/results/public_task_check.md``)."""
    groups = check_groups(queries)
    scored = queries.take_groups(groups)  # only the check's tables: their answers, not the whole workload's
    released = [relaxed, *candidates.values()]
    answers = [backend.answers_relaxed(x, scored, np.inf) for x in released]
    tables = int(_marginal_tables(scored).sum()) or scored.n_groups
    kept = disputed_groups(answers, scored.group_sizes, CHECK_TABLES, of=tables)  # public: where they differ
    positions = scored.group_query_indices(kept)  # the kept tables' queries in the answers above
    chosen = choose_release([a[positions] for a in answers], true_answers, queries, groups[kept], l1_sensitivity,
                            n_rows, rho, noise_rng)
    margins = (None, *candidates)[chosen]
    record = {"reweight_check_rho": rho, "reweight_check_tables": len(kept),
              "reweight_released": "synthetic rows" if margins is None else "reweighted public rows",
              "reweight_margins": margins, "reweight_effective_rows": effective}
    return released[chosen], record
