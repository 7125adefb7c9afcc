"""Numeric ties: how each numeric column goes with each categorical feature, within each label.

The default decoding permutes each numeric column within each label value
(:mod:`polars_rap.decode.numeric_coupling`), so the synthetic rows carry age independent of marital
status, education and every other feature given the label: nothing in the CM + MM + LT workload
measures those ties. A classifier trained on the rows weighs both, and on the real rows of
acs-income-CA / Adult the same permutation alone costs 0.010 / 0.007 macro F1
(``bench/results/numeric_ties.md``, "each numeric shuffled").

``PlannedStrategy(tie_share=s)`` (default 0.1, where the noise std per cell is at most
:data:`TIE_NOISE_CAP`) measures them: for every numeric column ``j``, every feature block ``a``
(other than ``j``'s own null indicator) and every label block ``l``, the *tie table*

    S[j, a, l][v, c] = (1/n) sum over rows with a = v and l = c of q(x_j)

(``x_j`` mapped to ``[0, 1]``, a null as 0, ``q`` the rounding to the grid of
:data:`TIE_QUANTUM` steps), all of them in one discrete Gaussian release of a share ``s`` of the
loop's budget, charged before the loop. After the loop :func:`~polars_rap.decode.tie_ridge.fit_ties`
reads, from the relaxed rows alone, how the features go together within each label (their
expected co-occurrence ``C``), fits the cell deviations ``S - cnt * m`` (``m`` the label's mean
of ``x_j``) by the Bayesian ridge ``r = C g + noise`` (prior std of ``g`` chosen by evidence
among a few fractions of ``x_j``'s spread: a tie the noise hides is shrunk to none), and keeps
each cell's fitted deviation of its mean from the label's, ``(C g) / cnt``.

With ``B`` = :data:`TIE_NUMERIC_BINS` a feature may also be an earlier numeric column ``k < j``
cut into ``B`` equal bins of its mapped range (a null its own code ``B``): the *pair tables*,
released with the others. They are not fitted by the ridge: each tests the relaxed rows'
pairing of ``x_j`` with ``x_k``, and a pair the release supports keeps the relaxed rows' means as
its targets (:mod:`polars_rap.decode.numeric_pairs`).

Decoding (:meth:`NumericTies.apply`, after the label coupling, before the histogram margins)
gives each row a latent score ``sum_a beta[a, v_a, c] + N(0, 1)`` and, within each label value
(and null state), hands the rows' own sorted values out in the order of their scores, ``beta``
fitted by backfitting so that each cell's mean is the label's mean plus its deviation (on a
decoding's first chunk of rows; later chunks, drawn alike, reuse its ``beta`` with one
assignment each: :class:`TieScores`). Each column's values within each label are unchanged (the
histogram margins' rank moves keep the order). The columns are handed out in order, each
following the bins of those before it as already handed out where the layout has numeric
pairs; without them the numeric columns stay independent of each other given the categories
and labels.

Privacy. Replacing one row changes each of the ``T`` released tables in at most two cells, by at
most ``Q`` grid steps each (``Q`` = :data:`TIE_QUANTUM`; the row's quantized value leaves the cell
it was in, the new row's enters its own; a row lies in one cell of each table, a pair table's as
a block's), so the integer sums move by a vector of squared L2 norm
at most ``T * 2 Q^2``: the release is :func:`~polars_rap.privacy.ledger.gaussian_mechanism` on sums
of ``n Q`` units with L2 sensitivity ``sqrt(2 T) / n`` in answer units, ``rho`` zCDP, charged
before any noise is drawn. The quantization is a fixed per-row map; ``T`` and the cells come
from the public domain. Fitting and decoding read the released sums, their public std and the
relaxed rows: post-processing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import block_slices
from polars_rap.decode.anchors import placed
from polars_rap.decode.numeric_coupling import label_groups
from polars_rap.kernels.cpu_sampling import backfit_step, tie_scores
from polars_rap.privacy.ledger import PrivacyLedger, gaussian_mechanism, gaussian_noise_std
from polars_rap.schema.transforms import equal_bin

__all__ = ["NumericTies", "TIE_NOISE_CAP", "TIE_NUMERIC_BINS", "TIE_QUANTUM", "TieLayout", "TieScores", "TieSums",
           "layout_of", "release_ties", "tables_values", "tie_layout", "tie_noise_std", "tie_sums"]

TIE_NOISE_CAP = 0.01
"""The ties are measured only where their noise std per cell (answer units: :func:`tie_noise_std`,
from the domain, the row count and the budget; public) is at most this: noisier ties shrink
toward none, and their share is better spent on the loop. At 0.025 (measured at eps = 0.25 on
both headline datasets), 3 seeds: CM 1.06x / 1.04x (acs-income-CA / Adult), MM 1.13x / 1.38x,
LT 1.15x / 1.41x, macro F1 -0.004 / -0.002 (``bench/results/ablation_tie_noise_cap.md``)."""

TIE_NUMERIC_BINS = 8
"""``B``: the ties' release also holds each numeric column's sums by ``B`` equal bins of every
earlier numeric column and label, the pair tables (:mod:`polars_rap.decode.numeric_pairs`).
Against none, over 6 seeds at eps = 1 (``bench/results/tie_numeric_bins_pairs.md``): cps1988
(education x experience) MM 0.48x, LT 0.48x, F1 +0.008; Adult MM 0.99x, LT 0.95x;
acs-income-CA MM 0.98x, LT 0.98x, F1 -0.0007; at eps = 5 within 3% on both."""

TIE_QUANTUM = 1024
"""Grid steps of a mapped numeric value in a tie sum: the release adds integer noise to integers."""
BACKFIT_SWEEPS = 8
"""Sweeps over a column's tables when decoding fits the latent scores."""
BACKFIT_BLOCKS = 24
"""Most assignments per sweep: a column's tables are updated one at a time up to this many
(every suite table: at most 23), past it in this many blocks whose tables step together from
one assignment, so that decoding a wide table costs O(rows log rows) per sweep and column, not
per table (``bench/results/wide_profile.md``)."""
BACKFIT_STEP = 1.5
"""A table's score moves by this many latent units per std of ``x_j`` its cell mean is off."""




@dataclass(frozen=True, slots=True)
class TieLayout:
    """The tie tables of a domain: table ``t`` is ``(numeric j, feature a, label block l)`` and
    holds ``width(a) * n_codes(l)`` cells (``v * n_codes(l) + c``) at ``offsets[t]:offsets[t +
    1]`` of the concatenated sums. A feature ``a`` below the domain's block count is that block;
    ``n_blocks + k`` is numeric column ``k`` cut into ``bins`` equal bins of ``[0, 1]`` (mapped
    units; a null its own last code)."""

    tables: tuple[tuple[int, int, int], ...]
    offsets: np.ndarray  # int64[n_tables + 1]
    bins: int = 0

    def width(self, domain: Domain, a: int) -> int:
        """The codes of feature ``a``."""
        if a < len(domain.blocks):
            return domain.blocks[a].n_codes
        return self.bins + int(domain.numeric_columns[a - len(domain.blocks)].nullable)

    def bin_of(self, x: np.ndarray) -> np.ndarray:
        """int64[n]: the bin of each mapped value ``x`` (float64[n]; ``[0, 1]`` in ``bins`` equal bins)."""
        return equal_bin(x, self.bins)

    def relaxed_codes(self, relaxed: np.ndarray, domain: Domain, a: int) -> np.ndarray:
        """float64[n_rel, width(a)]: each relaxed row's (float[n_rel, n_coords]) probabilities of
        feature ``a``'s codes: a block's coordinates, or the bin its numeric value falls in (times
        its probability of not being null) and the null code (that probability)."""
        slices = block_slices(domain)
        if a < len(domain.blocks):
            return np.asarray(relaxed[:, slices[a]], dtype=np.float64)
        k = a - len(domain.blocks)
        spec = domain.numeric_columns[k]
        out = np.zeros((len(relaxed), self.width(domain, a)))
        null = relaxed[:, slices[domain.block_index(spec.name, indicator=True)].start + 1] if spec.nullable else 0.0
        out[np.arange(len(relaxed)), self.bin_of(relaxed[:, domain.n_categorical_coords + k])] = 1.0 - null
        if spec.nullable:
            out[:, self.bins] = null
        return out

    def feature_codes(self, codes: np.ndarray, numerics: np.ndarray, domain: Domain, a: int) -> np.ndarray:
        """int64[n]: each row's code of feature ``a`` (``codes`` int32[n, n_blocks], ``numerics``
        float64[n, n_numeric] mapped to ``[0, 1]``)."""
        if a < len(domain.blocks):
            return codes[:, a].astype(np.int64)
        k = a - len(domain.blocks)
        out = self.bin_of(numerics[:, k])
        spec = domain.numeric_columns[k]
        if spec.nullable:
            out[codes[:, domain.block_index(spec.name, indicator=True)] == 1] = self.bins
        return out

    @property
    def n_cells(self) -> int:
        return int(self.offsets[-1])

    @property
    def l2_sensitivity_squared(self) -> int:
        """Squared L2 sensitivity of the integer sums in grid steps: ``2 T Q^2``."""
        return 2 * len(self.tables) * TIE_QUANTUM**2


def tie_layout(domain: Domain, bins: int = 0, categorical: bool = True) -> TieLayout | None:
    """The tie tables of ``domain`` (module docstring): each numeric column's by the feature
    blocks (unless ``categorical`` is false), then (``bins`` > 0) by each earlier numeric
    column's ``bins`` bins; None without a label, a numeric column or a feature."""
    labels = [i for i, block in enumerate(domain.blocks) if block.is_label]
    features = [i for i, block in enumerate(domain.blocks) if not block.is_label] if categorical else []
    n_blocks = len(domain.blocks)
    tables = []
    for j, spec in enumerate(domain.numeric_columns):
        own = domain.block_index(spec.name, indicator=True) if spec.nullable else -1
        tables += [(j, a, l) for a in features if a != own for l in labels]
        if bins:
            tables += [(j, n_blocks + k, l) for k in range(j) for l in labels]
    if not tables:
        return None
    return layout_of(domain, tables, bins)


def layout_of(domain: Domain, tables, bins: int = 0) -> TieLayout:
    """The :class:`TieLayout` of ``tables`` (``(j, a, l)`` triples, in order) with ``bins``
    bins a numeric feature."""
    layout = TieLayout(tuple(tuple(int(i) for i in table) for table in tables), np.zeros(1, dtype=np.int64),
                       int(bins))
    sizes = [layout.width(domain, a) * domain.blocks[l].n_codes for _, a, l in layout.tables]
    return TieLayout(layout.tables, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), layout.bins)


def tables_values(layout: TieLayout, values: np.ndarray, tables) -> np.ndarray:
    """float64[...]: the cells of ``tables`` (triples of ``layout``, in their order) out of
    ``values`` (float[layout.n_cells]), concatenated."""
    at = {table: t for t, table in enumerate(layout.tables)}
    return np.concatenate([values[layout.offsets[at[table]]:layout.offsets[at[table] + 1]] for table in tables])


def tie_sums(codes: np.ndarray, numerics: np.ndarray, domain: Domain, layout: TieLayout) -> np.ndarray:
    """int64[layout.n_cells]: each tie cell's sum of ``round(x_j * Q)`` over the rows (``codes``
    int32[n, n_blocks], ``numerics`` float64[n, n_numeric] mapped to ``[0, 1]``, nulls 0)."""
    out = np.zeros(layout.n_cells, dtype=np.int64)
    steps = np.floor(np.clip(numerics, 0.0, 1.0) * TIE_QUANTUM + 0.5).astype(np.int64)
    for t, (j, a, l) in enumerate(layout.tables):
        cells = layout.feature_codes(codes, numerics, domain, a) * domain.blocks[l].n_codes + codes[:, l]
        size = int(layout.offsets[t + 1] - layout.offsets[t])
        # float64 sums of integers below 2**53 are exact: a batch holds far fewer than 2**43 rows
        out[layout.offsets[t]:layout.offsets[t + 1]] = np.rint(
            np.bincount(cells, weights=steps[:, j], minlength=size)).astype(np.int64)
    return out


def _sensitivity(layout: TieLayout, n_rows: int) -> float:
    """The release's L2 sensitivity in answer units (sums of mapped values / ``n_rows``):
    ``sqrt(2 T Q^2) / (n_rows Q)``."""
    return math.sqrt(layout.l2_sensitivity_squared) / (int(n_rows) * TIE_QUANTUM)


def tie_noise_std(layout: TieLayout, n_rows: int, rho: float) -> float:
    """The noise std per tie cell (answer units) of :func:`release_ties` at ``rho``:
    ``sqrt(2 T) / n_rows / sqrt(2 rho)``; public (the domain's tables, the row count, the budget)."""
    return gaussian_noise_std(_sensitivity(layout, n_rows), rho)


@dataclass(slots=True)
class TieSums:
    """The tie tables' integer sums read in the pass over the rows (a
    :class:`~polars_rap.io.source.RowStatistic`): ``totals`` int64[layout.n_cells]."""

    domain: Domain
    layout: TieLayout
    totals: np.ndarray = None

    def __post_init__(self) -> None:
        if self.totals is None:
            self.totals = np.zeros(self.layout.n_cells, dtype=np.int64)

    def add(self, encoded) -> None:
        """Add one batch's rows (:class:`~polars_rap.schema.encoding.EncodedData`)."""
        self.totals += tie_sums(encoded.codes, encoded.numerics, self.domain, self.layout)

    def fresh(self) -> TieSums:
        return TieSums(self.domain, self.layout)

    def merge(self, other: TieSums) -> None:
        self.totals += other.totals


def release_ties(sums: np.ndarray, n_rows: int, layout: TieLayout, rho: float, ledger: PrivacyLedger,
                 rng) -> tuple[np.ndarray, float]:
    """``(noisy, std)``: the tie tables (``sums`` from :func:`tie_sums` over every row) released
    by the discrete Gaussian mechanism at ``rho`` (charged to ``ledger`` first), in answer units
    (sums of mapped values / ``n_rows``); ``std`` the noise's std in those units,
    ``sqrt(2 T) / n_rows / sqrt(2 rho)`` (module docstring)."""
    units = int(n_rows) * TIE_QUANTUM
    values = np.asarray(sums, dtype=np.float64) / units
    return gaussian_mechanism(values, _sensitivity(layout, n_rows), rho, ledger, rng,
                              description=f"numeric ties: {len(layout.tables)} tables of numeric sums "
                                          "by feature and label", n_rows=units)


@dataclass(slots=True)
class TieScores:
    """The latent cell scores one decoding fitted, per numeric column index (one float64 array
    per tie table): the first chunk's rows fit them, and later chunks, drawn from the same relaxed
    rows alike, reuse them (one assignment each instead of the backfit's
    ``BACKFIT_SWEEPS * T_j``; ``bench/results/ties_decoding.md``)."""

    by_column: dict[int, list[np.ndarray]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NumericTies:
    """Fitted tie targets: ``deviations`` (float64[layout.n_cells]) of each cell's mean of
    ``x_j`` from its label value's mean (mapped units), for :meth:`apply`."""

    layout: TieLayout
    deviations: np.ndarray

    def apply(self, codes: np.ndarray, numerics: np.ndarray, domain: Domain, rng: np.random.Generator,
              scores: TieScores | None = None, anchor: np.ndarray | None = None) -> np.ndarray:
        """float64[n, n_numeric]: ``numerics`` (decoded rows' mapped values, ``codes``
        int32[n, n_blocks]) with each column's values handed out again within each label group
        and null state, in the order of latent scores fitted to the tie targets (module
        docstring). Each group keeps its multiset of values. With ``scores``, a column's scores
        fitted by an earlier call are reused (one assignment, no backfitting) and those fitted
        here are kept in it. With ``anchor`` (bool[n], :mod:`polars_rap.decode.anchors`) the
        scores are fitted and the values handed out among the anchors, and every other row takes
        the anchors' value at its score's place among theirs."""
        out = np.array(numerics, dtype=np.float64, copy=True)
        labels = [i for i, block in enumerate(domain.blocks) if block.is_label]
        if len(codes) < 2 or not labels:
            return out
        label_group = label_groups(codes, labels)
        for j, spec in enumerate(domain.numeric_columns):
            tables = [t for t, (column, _, _) in enumerate(self.layout.tables) if column == j]
            if tables:
                fitted = None if scores is None else scores.by_column.get(j)
                if anchor is None:
                    out[:, j], betas = self._column(codes, out, j, domain, spec, tables, label_group, rng, fitted)
                else:
                    out[:, j], betas = self._anchored_column(codes, out, j, domain, spec, tables, label_group, rng,
                                                             fitted, anchor)
                if scores is not None and betas is not None:
                    scores.by_column.setdefault(j, betas)
        return out

    def _column(self, codes, current, j, domain, spec, tables, label_group, rng, fitted):
        """(float64[n] column ``j`` of ``current`` (float64[n, n_numeric], the columns before
        ``j`` as already handed out) reassigned, the tables' latent cell scores or None where too
        few rows); ``fitted`` (the scores of an earlier chunk) skips the backfit."""
        values = current[:, j]
        rows = _live_rows(codes, domain, spec)
        if len(rows) < 2:
            return values, None
        groups = label_group[rows]
        order = np.argsort(groups, kind="stable")
        bounds = np.flatnonzero(np.diff(groups[order])) + 1
        pieces = np.split(order, bounds)  # positions in ``rows`` of each label group
        sorted_values = [np.sort(values[rows[p]]) for p in pieces]
        noise = rng.standard_normal(len(rows))

        def assign(score: np.ndarray) -> np.ndarray:
            """The column's values handed out within each label group in the order of ``score``
            (continuous: its Gaussian part ties two rows with probability 0, so an unstable sort,
            SIMD-fast, gives the stable sort's order)."""
            new = np.empty(len(rows))
            for piece, values_sorted in zip(pieces, sorted_values, strict=True):
                new[piece[np.argsort(score[piece])]] = values_sorted
            return new

        if fitted is None:
            cells = self._cells(codes, current, rows, domain, tables)
            betas, assigned = self._backfit(codes, values[rows], rows, domain, tables, cells, noise, assign)
        else:
            betas = fitted
            assigned = assign(self._scores(codes, current, rows, domain, tables, betas, noise))
        out = values.copy()
        out[rows] = assigned
        return out, betas

    def _anchored_column(self, codes, current, j, domain, spec, tables, label_group, rng, fitted, anchor):
        """:meth:`_column` with anchors (bool[n]): the scores fitted (where ``fitted`` is None)
        on the anchors alone, the anchors' values handed out among them in their scores' order,
        every other row given the anchors' value at its score's place (:func:`placed`)."""
        values = current[:, j]
        rows = _live_rows(codes, domain, spec)
        anchors = rows[anchor[rows]]
        if len(anchors) < 2:
            return values, None
        betas = fitted
        if betas is None:
            _, betas = self._column(codes[anchors], current[anchors], j, domain, spec, tables, label_group[anchors],
                                    rng, None)
            if betas is None:
                return values, None
        score = self._scores(codes, current, rows, domain, tables, betas, rng.standard_normal(len(rows)))
        out = values.copy()
        is_anchor, groups = anchor[rows], label_group[rows]
        for g in np.unique(groups):
            here = groups == g
            own = np.flatnonzero(here & is_anchor)
            if len(own) == 0:
                continue
            order = own[np.argsort(score[own])]
            sorted_values = np.sort(values[rows[own]])
            out[rows[order]] = sorted_values
            others = np.flatnonzero(here & ~is_anchor)
            out[rows[others]] = placed(score[order], sorted_values, score[others], rng)
        return out, betas

    def _cells(self, codes, current, rows, domain, tables) -> np.ndarray:
        """int64[len(tables), len(rows)]: each of ``rows``' cell (feature code x label code) in
        each table of ``tables``, the rows' codes and values gathered once, not once per table."""
        live_codes, live_current = codes[rows], current[rows]
        cells = np.empty((len(tables), len(rows)), dtype=np.int64)
        for i, t in enumerate(tables):
            _, a, l = self.layout.tables[t]
            feature = self.layout.feature_codes(live_codes, live_current, domain, a)
            cells[i] = feature * domain.blocks[l].n_codes + live_codes[:, l]
        return cells

    def _scores(self, codes, current, rows, domain, tables, betas, noise) -> np.ndarray:
        """float64[len(rows)]: ``noise`` plus each of ``rows``' latent cell scores ``betas`` (one
        float64[n_cells] per table of ``tables``) summed over the tables: what
        ``noise + sum(beta[cell] for beta, cell in zip(betas, self._cells(...)))`` gives, to the
        bit, without the per-table cell arrays (:func:`~polars_rap.kernels.cpu_sampling.tie_scores`)."""
        spec, offsets = [], np.cumsum([0] + [len(beta) for beta in betas])
        for t, offset in zip(tables, offsets[:-1], strict=True):
            _, a, l = self.layout.tables[t]
            spec.append((a, l, domain.blocks[l].n_codes, offset))
        null_blocks = np.array([domain.block_index(c.name, indicator=True) if c.nullable else -1
                                for c in domain.numeric_columns], dtype=np.int64)
        return tie_scores(codes, current, rows, np.array(spec, dtype=np.int64).reshape(-1, 4), np.concatenate(betas),
                          null_blocks, self.layout.bins, noise)

    def _backfit(self, codes, x, rows, domain, tables, cells, noise, assign) -> tuple[list[np.ndarray], np.ndarray]:
        """(The tables' latent cell scores, float64[n_cells] each, backfitted so that each cell's
        mean of the values ``x`` (float64[len(rows)]) as assigned meets its tie target; ``x`` as
        last assigned by them). A row's score is ``noise`` plus its cells' scores, kept as a
        running sum that each table's update adds to, and a sweep assigns the values at most
        :data:`BACKFIT_BLOCKS` times: a sweep costs O(rows x tables + rows log rows), not
        O(rows x tables^2)."""
        spread = float(x.std()) or 1.0
        label_means = {}  # per label block: x's mean among the live rows of each code
        for l in {self.layout.tables[t][2] for t in tables}:
            k = domain.blocks[l].n_codes
            label_means[l] = np.bincount(codes[rows, l], weights=x, minlength=k) / np.maximum(
                np.bincount(codes[rows, l], minlength=k), 1)
        targets, sizes = [], []
        for t in tables:
            l = self.layout.tables[t][2]
            deviations = self.deviations[self.layout.offsets[t]:self.layout.offsets[t + 1]]
            targets.append(np.tile(label_means[l], len(deviations) // domain.blocks[l].n_codes) + deviations)
            sizes.append(len(deviations))
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        counts = np.concatenate([np.bincount(cell, minlength=size) for cell, size in zip(cells, sizes, strict=True)])
        target, beta = np.concatenate(targets), np.zeros(int(offsets[-1]))  # every table's cells, concatenated
        score = noise.copy()
        current = assign(score)
        blocks = np.array_split(np.arange(len(cells)), min(len(cells), BACKFIT_BLOCKS))
        for _ in range(BACKFIT_SWEEPS):
            for block in blocks:  # the tables of a block step from the same assignment
                backfit_step(cells, block, offsets, counts, current, target, beta, BACKFIT_STEP, spread, score)
                current = assign(score)
        return [beta[offsets[i]:offsets[i + 1]].copy() for i in range(len(sizes))], current

    def to_frame(self, domain: Domain) -> pl.DataFrame:
        """One row per tie cell: ``column``, ``feature``, ``label`` (block sources; a numeric's
        null indicator is named ``<column>.null``, its bins ``<column>.bins``), ``code``,
        ``label_code``, ``deviation``."""
        parts = []
        for t, (j, a, l) in enumerate(self.layout.tables):
            k_a, k_l = self.layout.width(domain, a), domain.blocks[l].n_codes
            parts.append(pl.DataFrame({
                "column": [domain.numeric_columns[j].name] * (k_a * k_l),
                "feature": [_feature_name(domain, a)] * (k_a * k_l),
                "label": [domain.blocks[l].source] * (k_a * k_l),
                "code": np.repeat(np.arange(k_a), k_l).astype(np.int32),
                "label_code": np.tile(np.arange(k_l), k_a).astype(np.int32),
                "deviation": self.deviations[self.layout.offsets[t]:self.layout.offsets[t + 1]],
            }))
        return pl.concat(parts)

    @classmethod
    def from_frame(cls, frame: pl.DataFrame, domain: Domain) -> NumericTies:
        """The ties :meth:`to_frame` wrote, for the ``domain`` it was written with (its tables
        read from the frame's column, feature and label names, in order; the numeric pairs'
        bins from their codes)."""
        blocks = {_feature_name(domain, a): a for a in range(len(domain.blocks))}
        numerics = {spec.name: j for j, spec in enumerate(domain.numeric_columns)}
        tables, bins = [], 0
        keys = frame.select("column", "feature", "label").unique(maintain_order=True)
        for column, feature, label in keys.iter_rows():
            if feature.endswith(".bins") and feature.removesuffix(".bins") in numerics:
                k = numerics[feature.removesuffix(".bins")]
                a = len(domain.blocks) + k
                codes = frame.filter((pl.col("column") == column) & (pl.col("feature") == feature))["code"]
                bins = int(codes.max()) + 1 - int(domain.numeric_columns[k].nullable)
            elif feature in blocks:
                a = blocks[feature]
            else:
                raise ValueError(f"the tie cells do not match the domain's: no feature {feature!r}")
            if column not in numerics or label not in blocks:
                raise ValueError(f"the tie cells do not match the domain's: no column {column!r} or label {label!r}")
            tables.append((numerics[column], a, blocks[label]))
        if not tables:
            raise ValueError("the tie frame holds no tables")
        layout = layout_of(domain, tables, bins)
        expected = cls(layout, np.zeros(layout.n_cells)).to_frame(domain).drop("deviation")
        if frame.height != expected.height or not frame.drop("deviation").equals(expected):
            raise ValueError("the tie cells do not match the domain's")
        return cls(layout, frame["deviation"].to_numpy().astype(np.float64))


def _live_rows(codes: np.ndarray, domain: Domain, spec) -> np.ndarray:
    """int64: the rows of ``codes`` whose value of numeric column ``spec`` is not null."""
    if not spec.nullable:
        return np.arange(len(codes))
    return np.flatnonzero(codes[:, domain.block_index(spec.name, indicator=True)] == 0)


def _feature_name(domain: Domain, a: int) -> str:
    if a >= len(domain.blocks):
        return f"{domain.numeric_columns[a - len(domain.blocks)].name}.bins"
    spec = domain.blocks[a]
    return f"{spec.source}.null" if spec.indicator else spec.source
