"""Numeric pairs' rank dependence: one release of how every pair of numeric columns moves
together within the labels, and a decoding that reorders each label's numerics to meet it.

The label coupling (:mod:`polars_rap.decode.numeric_coupling`) leaves the numeric columns
independent of each other given the labels, and the numeric ties' pair tables
(:mod:`polars_rap.decode.numeric_pairs`) bring back only what their equal bins of the mapped range
can see, where the ties are measured at all. On a table whose columns crowd into a corner of
their declared bounds (SDNist's person and household weights, 99% of them below 430 of
[1, 9999], real r 0.874) neither sees anything, and the output's pairs come out near 0
(issue #78, ``bench/results/relations.md``).

The statistic. Each numeric column's mapped coordinate is cut on a fixed grid (:data:`RANK_GRID`:
16 equal cells and cells halving toward both ends, down to 2^-12 of the range, so a column
crowded near a bound still spans several), a null its own cell. After the loop each cell of
column ``j`` gets, within each label group ``g`` (the rows sharing every label's code), a
score ``w[g, j, cell]``: the relaxed rows' mid-CDF of the cell within the group less one half,
rounded to ``1 / (2 Q)`` steps (``Q`` = :data:`RANK_QUANTUM`), 0 for the null cell. For every
pair ``j < k`` the release is

    S[j, k] = (1/n) sum over rows of w[g, j, cell_j] * w[g, k, cell_k],

a rank covariance pooled over the label groups (12 S is about Spearman's rank correlation
within the labels, times the share of rows where both are present). The pass over the rows
only counts rows by (group, pair, cell, cell); the scores, read from released values, weigh
those counts after the loop.

Privacy. A row's term in each pair is ``m_j m_k / (4 Q^2)`` with integers ``|m| <= Q``, so in
units of ``1 / (4 Q^2 n)`` the sums are integers and replacing one row moves each of the ``P``
pairs' sums by at most ``2 Q^2`` (its old term leaves, the new row's enters, whatever their
groups and cells): an integer vector of squared L2 norm at most ``4 Q^4 P``. The release is
:func:`~polars_rap.privacy.ledger.gaussian_mechanism` with L2 sensitivity ``sqrt(P) / (2 n)``
in statistic units, ``rho`` zCDP. The scores are a function of the relaxed rows (released) and
of the public grid, fixed before the noise is drawn, so the weighing is the adaptive choice of
a query, not a read of the data. The release's ``rho`` is held back before the loop
(:meth:`PrivacyLedger.reserve <polars_rap.privacy.ledger.PrivacyLedger.reserve>`) and charged,
to the last float of the budget, after it. Whether the pairs are measured at all
and at what budget (:func:`rank_pairs_rho`: what reaches a set noise std, within a share of
the loop's budget) depend on ``P``, ``n`` and the budget only: public.

Decoding (:meth:`RankPairs.apply`, last of the numeric steps): within each label group the
numeric columns are handed out again in domain order, column ``j``'s values sorted into the
order of a latent score ``z_(<j) b + sqrt(1 - b R_(<j) j) e``: ``z_(<j)`` the normal scores of the
columns already handed out, ``b = R_(<j <j)^-1 R_(<j) j``, and ``e`` the standardised residual
of the column's own current order (its ties to the categories, :mod:`polars_rap.decode.numeric_ties`)
after regressing on ``z_(<j)``, so that the features' ties fade only as much as the pairs take.
``R`` starts from the target read as Spearman's rho and is calibrated a few times until the
decoded rows' own statistic, computed with the same scores, meets it. The target is the
released ``S`` shrunk by its noise toward what the decoded rows already hold, ``A`` (their
statistic before the reorder: the pairing the loop and the ties' pair tables gave them), by
positive-part James–Stein, ``A + (S - A)(1 - std^2 / (S - A)^2)``, where ``S`` is more than
:func:`pair_z` stds from ``A`` (else ``A``): a release within its noise of the rows leaves them be
(acs-income-CA at ε = 5, whose pair the rest of the fit already holds more precisely), one far
from them moves them (SDNist's weights, ``A`` near 0 and ``S``
at its real 1.1).
Each column's values within each label group and null state are only permuted: every one-way
margin within each label, and so the histograms' match, is unchanged; the reorder draws from a
stream spawned off the decoding's, so the categories decoded after it are the same.

Measured with ``rank_share`` (the most of the loop's budget the pairs may take) where
:func:`rank_pairs_rho` allows, with ``numeric_coupling`` ``"label"``. Where the numeric ties are
measured (:mod:`polars_rap.decode.numeric_ties`) the pairs are paid out of the ties' share instead
(:func:`rank_pairs_rho_beside_ties`: at most :data:`RANK_TIE_SHARE` of it, no more than reaches
:data:`RANK_FLOOR_STD`), so the loop keeps its budget to the last float, and their noise shrinks
as the budget grows: at a fixed std of 0.05 the reorder beside the ties moved Adult's pairs on
noise (worst Pearson |Δr| 0.081 → 0.161 at ε = 1, seed 0; ``bench/results/ablation_rank_pairs.md``),
while at a quarter of the ties' share (a std of 0.022 on Adult at ε = 1) Adult's mean |Δr| fell
from 0.038 to 0.032 and cps1988's pair from 0.076 to 0.027 (seeds 0–4,
``bench/results/ablation_pairs_beside_ties.md``, ``rerun_2026-12-08.md``). There a pair moves
only past :func:`pair_z` stds, a 5% chance over all the pairs of a table that none differs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.special import ndtri

from polars_rap.decode.anchors import placed, quantiles_among
from polars_rap.kernels.cpu_sampling import value_then_key_order
from polars_rap.privacy.ledger import PrivacyLedger, gaussian_mechanism, gaussian_noise_std
from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import block_slices
from polars_rap.schema.transforms import from_unit, to_unit, whole_units

__all__ = ["FAMILY_ALPHA", "MAX_RANK_PAIRS", "N_RANK_CELLS", "PAIR_Z", "RANK_FLOOR_STD", "RANK_GRID", "RANK_QUANTUM",
           "RANK_TARGET_STD", "RANK_TIE_SHARE", "RankLatent", "RankPairCounts", "RankPairs", "as_decoded", "cell_codes",
           "label_index", "n_label_groups", "n_pairs", "pair_sums", "pair_z", "rank_pair_std", "rank_pairs_rho",
           "rank_pairs_rho_beside_ties", "rank_scores", "release_rank_pairs", "shrunk"]

_HALVINGS = 2.0 ** (-np.arange(1, 25) / 2)
RANK_GRID = np.unique(np.concatenate([np.linspace(0.0, 1.0, 17), _HALVINGS, 1.0 - _HALVINGS]))
"""float64 edges on a numeric column's mapped coordinate ``[0, 1]``: 16 equal cells, refined by
edges at ``2^(-i/2)`` and ``1 - 2^(-i/2)`` (i = 1..24), so that values crowded near either bound
still fall into several cells. Public: the same for every table."""
N_RANK_CELLS = len(RANK_GRID) - 1
"""Cells of :data:`RANK_GRID` (56); a null is cell ``N_RANK_CELLS``."""
RANK_QUANTUM = 16
"""``Q``: the cell scores are multiples of ``1 / (2 Q)`` in ``[-1/2, 1/2]``."""
RANK_TARGET_STD = 0.05
"""The release's noise std in units of Spearman's rho (12 times the statistic's): the pairs get
the budget that reaches it (:func:`rank_pairs_rho`), so a correlation of 0.1 stands two stds
clear of none."""
MAX_RANK_PAIRS = 120
"""At most this many numeric pairs (16 numeric columns) are counted: the pass holds
``groups x pairs x 57^2`` int64 counts (6 MB at the cap with a binary label) and bins every pair
of every batch; on a wider table the pairs are left out (issue #75's wide tables keep their
cost growing with the columns, not their square)."""
RANK_TIE_SHARE = 0.25
"""Where the numeric ties are measured, the most of their share the pairs take (the ties' noise
std then grows by at most ``1 / sqrt(1 - 0.25)``, 15%)."""
RANK_FLOOR_STD = 0.005
"""Where the ties are measured, the pairs take no more than brings their noise std (Spearman
units) to this: a tenth of what the suite's pair targets resolve."""
PAIR_Z = 2.0
"""Where the ties are not measured, a pair's release moves the rows only where it is more than
this many noise stds from their own statistic (there the rows' pairs are the label coupling's
independence): with 15 pairs (Adult) a 1-std rule moved about five of them on noise alone."""
FAMILY_ALPHA = 0.05
"""Beside the ties, the chance that a table none of whose pairs differs from the decoded rows'
has one moved on noise alone: each pair's test is two-sided at ``FAMILY_ALPHA / P``
(Bonferroni, :func:`pair_z`). There a false move takes a pair the ties' tables kept to a
wrong value; without the ties :data:`PAIR_Z` keeps more of the pairs (sdnist-national's
Spearman worst |Δr| 0.115 → 0.149 with this test there, ``ablation_pairs_beside_ties.md``)."""
CALIBRATION_STEPS = 6
"""Reorders of a decoding's first chunk that calibrate the latent correlations to its targets."""


def n_pairs(domain: Domain) -> int:
    """The numeric pairs ``P = p (p - 1) / 2`` of ``domain``."""
    p = len(domain.numeric_columns)
    return p * (p - 1) // 2


def pair_z(n_pairs: int, beside_ties: bool) -> float:
    """Noise stds past which a pair's release moves the rows: beside the numeric ties
    ``Phi^-1(1 - FAMILY_ALPHA / (2 P))`` (1.96 for one pair, 2.94 for Adult's 15, where a 2-std
    rule moves one table in two on noise alone), else :data:`PAIR_Z`."""
    if not beside_ties:
        return PAIR_Z
    return float(ndtri(1.0 - FAMILY_ALPHA / (2.0 * max(int(n_pairs), 1))))


def rank_pair_std(n_pairs: int, n_rows: int, rho: float) -> float:
    """The release's noise std (statistic units) at ``rho``: ``sqrt(P) / (2 n) / sqrt(2 rho)``."""
    return gaussian_noise_std(_sensitivity(n_pairs, n_rows), rho)


def rank_pairs_rho(domain: Domain, n_rows: int, most: float) -> float:
    """The budget the pairs are released at: what brings their noise std to
    :data:`RANK_TARGET_STD` in Spearman units, ``18 P / (n^2 target^2)``, where that is at most
    ``most``; 0.0 (not measured) where it is not, or with fewer than two numeric columns or more
    than :data:`MAX_RANK_PAIRS` pairs. Public: the domain, the row count and the budget. On a
    large table the pairs cost almost nothing (acs-income-CA, one pair, 156,532 rows: 3e-5 of
    the loop's budget at ε = 1), on a small one with many pairs more than ``most`` allows."""
    pairs = n_pairs(domain)
    if pairs == 0 or pairs > MAX_RANK_PAIRS or most <= 0.0:
        return 0.0
    needed = _rho_at(pairs, n_rows, RANK_TARGET_STD)
    return needed if needed <= most else 0.0


def rank_pairs_rho_beside_ties(domain: Domain, n_rows: int, tie_rho: float) -> float:
    """The budget the pairs take out of the numeric ties' ``tie_rho`` where the ties are measured:
    :data:`RANK_TIE_SHARE` of it, or what brings their noise std to :data:`RANK_FLOOR_STD` if
    less; 0.0 (not measured) where their std would exceed :data:`RANK_TARGET_STD`, or with
    fewer than two numeric columns or more than :data:`MAX_RANK_PAIRS` pairs. Public: the
    domain, the row count and the ties' budget. At ε = 1 Adult (15 pairs, 39,073 rows) takes
    the quarter, 2.5% of the budget, a std of 0.022; acs-income-CA (one pair, 156,532 rows)
    0.23% of it at the floor std."""
    pairs = n_pairs(domain)
    if pairs == 0 or pairs > MAX_RANK_PAIRS or tie_rho <= 0.0:
        return 0.0
    rho = min(RANK_TIE_SHARE * tie_rho, _rho_at(pairs, n_rows, RANK_FLOOR_STD))
    return rho if rho >= _rho_at(pairs, n_rows, RANK_TARGET_STD) else 0.0


def _rho_at(pairs: int, n_rows: int, std: float) -> float:
    """The budget at which the release's noise std is ``std`` in Spearman units (12 times the
    statistic's): ``18 P / (n^2 std^2)``."""
    return 18.0 * pairs / (float(n_rows) ** 2 * std**2)


def _sensitivity(pairs: int, n_rows: int) -> float:
    """L2 sensitivity in statistic units: ``sqrt(4 Q^4 P) / (4 Q^2 n)``, written so that times
    the release's units ``4 Q^2 n`` its square is the integer ``4 Q^4 P``."""
    return math.sqrt(4 * RANK_QUANTUM**4 * pairs) / _units(n_rows)


def _units(n_rows: int) -> int:
    return 4 * RANK_QUANTUM**2 * int(n_rows)


def n_label_groups(domain: Domain) -> int:
    """The label groups of ``domain``: the product of its label blocks' codes (1 without labels)."""
    return math.prod(block.n_codes for block in domain.blocks if block.is_label)


def label_index(codes: np.ndarray, domain: Domain) -> tuple[np.ndarray, int]:
    """(int64[n] group of each row of ``codes`` (int32[n, n_blocks]), the number of groups): the
    mixed-radix index of the rows' codes in every label block (one group without labels)."""
    group = np.zeros(codes.shape[0], dtype=np.int64)
    for b, block in enumerate(domain.blocks):
        if block.is_label:
            group = group * block.n_codes + codes[:, b]
    return group, n_label_groups(domain)


def cell_codes(codes: np.ndarray, numerics: np.ndarray, domain: Domain) -> np.ndarray:
    """int64[n, p]: each numeric value's (``numerics`` float64[n, p], mapped) cell of
    :data:`RANK_GRID`, :data:`N_RANK_CELLS` where the row's null indicator (in ``codes``) is set."""
    cells = _grid_cells(np.clip(numerics, 0.0, 1.0))
    cells[~present_values(codes, domain)] = N_RANK_CELLS
    return cells.astype(np.int64)


def present_values(codes: np.ndarray, domain: Domain) -> np.ndarray:
    """bool[n, p]: whether each row's numeric value is present (its null indicator in ``codes``
    not set; always for a column that is not nullable)."""
    present = np.ones((len(codes), len(domain.numeric_columns)), dtype=bool)
    for j, spec in enumerate(domain.numeric_columns):
        if spec.nullable:
            present[:, j] = codes[:, domain.block_index(spec.name, indicator=True)] != 1
    return present


def _grid_cells(t: np.ndarray) -> np.ndarray:
    """int64: each mapped value's (``t`` in ``[0, 1]``) cell of :data:`RANK_GRID` (1 falls in the last)."""
    return np.clip(np.searchsorted(RANK_GRID, t, side="right") - 1, 0, N_RANK_CELLS - 1)


def as_decoded(numerics: np.ndarray, domain: Domain) -> np.ndarray:
    """float64[n, p]: mapped values (``numerics``) as decoding outputs them, mapped again: an
    integer (or temporal) column's rounded to whole units, so that a value's cell is the cell
    of the row it becomes (on the unrounded coordinate most of a count column's zeros would sit
    in cells above 0)."""
    out = np.clip(np.asarray(numerics, dtype=np.float64), 0.0, 1.0)
    for j, spec in enumerate(domain.numeric_columns):
        if spec.is_integer:
            out[:, j] = np.clip(to_unit(whole_units(from_unit(out[:, j], spec), spec), spec), 0.0, 1.0)
    return out


def _pairs(p: int) -> list[tuple[int, int]]:
    return [(j, k) for j in range(p) for k in range(j + 1, p)]


@dataclass(slots=True)
class RankPairCounts:
    """The rows counted by (label group, pair, cell of ``j``, cell of ``k``) in the pass over
    the rows (a :class:`~polars_rap.io.source.RowStatistic`): ``counts`` int64[n_groups, P, 57^2]."""

    domain: Domain
    counts: np.ndarray = None

    def __post_init__(self) -> None:
        if self.counts is None:
            shape = (n_label_groups(self.domain), n_pairs(self.domain), (N_RANK_CELLS + 1) ** 2)
            self.counts = np.zeros(shape, dtype=np.int64)

    def add(self, encoded) -> None:
        """Add one batch's rows (:class:`~polars_rap.schema.encoding.EncodedData`)."""
        group, n_groups = label_index(encoded.codes, self.domain)
        cells = cell_codes(encoded.codes, encoded.numerics, self.domain)
        width = (N_RANK_CELLS + 1) ** 2
        for t, (j, k) in enumerate(_pairs(cells.shape[1])):
            index = group * width + cells[:, j] * (N_RANK_CELLS + 1) + cells[:, k]
            self.counts[:, t, :] += np.bincount(index, minlength=n_groups * width).reshape(n_groups, width)

    def fresh(self) -> RankPairCounts:
        return RankPairCounts(self.domain)

    def merge(self, other: RankPairCounts) -> None:
        self.counts += other.counts


def rank_scores(relaxed: np.ndarray, domain: Domain) -> np.ndarray:
    """int64[n_groups, p, 57]: each cell's score ``m`` (the score is ``m / (2 Q)``): the relaxed
    rows' (float[n_rel, n_coords], values as decoded: :func:`as_decoded`) mid-CDF of the cell
    within each label group less one half,
    each relaxed row weighted by its probability of the group (and of a value, for a nullable
    column); 0 for the null cell and for a group or column without mass. Post-processing."""
    relaxed = np.asarray(relaxed, dtype=np.float64)
    slices = block_slices(domain)
    group_weight = np.ones((relaxed.shape[0], 1))
    for b, block in enumerate(domain.blocks):
        if block.is_label:
            probs = np.clip(relaxed[:, slices[b]], 0.0, None)
            probs = probs / np.maximum(probs.sum(axis=1, keepdims=True), 1e-300)
            group_weight = (group_weight[:, :, None] * probs[:, None, :]).reshape(relaxed.shape[0], -1)
    n_groups, specs = group_weight.shape[1], domain.numeric_columns
    out = np.zeros((n_groups, len(specs), N_RANK_CELLS + 1), dtype=np.int64)
    coordinates = as_decoded(relaxed[:, domain.n_categorical_coords:], domain)
    for j, spec in enumerate(specs):
        present = np.ones(relaxed.shape[0])
        if spec.nullable:
            indicator = np.clip(relaxed[:, slices[domain.block_index(spec.name, indicator=True)]], 0.0, None)
            present = indicator[:, 0] / np.maximum(indicator.sum(axis=1), 1e-300)
        cells = _grid_cells(coordinates[:, j])
        for g in range(n_groups):
            mass = np.bincount(cells, weights=group_weight[:, g] * present, minlength=N_RANK_CELLS)
            total = mass.sum()
            if total <= 0.0:
                continue
            mid = (np.cumsum(mass) - mass / 2.0) / total - 0.5
            out[g, j, :N_RANK_CELLS] = np.rint(mid * 2 * RANK_QUANTUM).astype(np.int64)
    return out


def pair_sums(counts: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """int64[P]: each pair's sum of ``m_j m_k`` over the counted rows (``counts`` as
    :class:`RankPairCounts` holds them, ``scores`` from :func:`rank_scores`)."""
    n_groups, pairs = counts.shape[0], _pairs(scores.shape[1])
    out = np.zeros(len(pairs), dtype=np.int64)
    for t, (j, k) in enumerate(pairs):
        for g in range(n_groups):
            products = np.outer(scores[g, j], scores[g, k]).reshape(-1)
            out[t] += int(counts[g, t] @ products)
    return out


def release_rank_pairs(counts: np.ndarray, relaxed: np.ndarray, domain: Domain, n_rows: int, rho: float,
                       ledger: PrivacyLedger, rng) -> RankPairs:
    """The pairs' statistic (``counts`` int64 from the pass, scores from the released
    ``relaxed`` rows) with discrete Gaussian noise at ``rho`` (charged to ``ledger`` first); the
    decoding shrinks it to its targets."""
    scores = rank_scores(relaxed, domain)
    values = pair_sums(counts, scores) / _units(n_rows)
    pairs = counts.shape[1]
    noisy, std = gaussian_mechanism(values, _sensitivity(pairs, n_rows), rho, ledger, rng,
                                    description=f"numeric pairs' rank statistic: {pairs} pairs", n_rows=_units(n_rows))
    return RankPairs(scores.astype(np.int8), noisy, std)


def shrunk(noisy: np.ndarray, std: float, toward: np.ndarray | float = 0.0, z: float = 1.0) -> np.ndarray:
    """float64: each released value ``S`` shrunk toward ``t`` (``toward``): ``t + (S - t)(1 -
    std^2 / (S - t)^2)`` (positive-part James–Stein) where ``|S - t| > z std``, else ``t``."""
    toward = np.broadcast_to(np.asarray(toward, dtype=np.float64), np.shape(noisy))
    gap = np.asarray(noisy, dtype=np.float64) - toward
    safe = np.where(gap == 0.0, 1.0, gap)
    return toward + np.where(np.abs(gap) > z * std, gap - std**2 / safe, 0.0)


@dataclass(slots=True)
class RankLatent:
    """What a decoding's first chunk calibrated, reused by its later chunks, drawn alike: the
    latent ``correlation`` (float64[p, p]; None before) or ``unchanged`` (the release was
    within its noise of the rows: no reorder)."""

    correlation: np.ndarray | None = None
    unchanged: bool = False


@dataclass(frozen=True, slots=True)
class RankPairs:
    """Released: the cell ``scores`` (int8[n_groups, p, 57], in ``1 / (2 Q)`` steps), the noisy
    statistic ``released`` (float64[P], statistic units) and its noise ``std``."""

    scores: np.ndarray
    released: np.ndarray
    std: float

    def statistic(self, codes: np.ndarray, numerics: np.ndarray, domain: Domain) -> np.ndarray:
        """float64[P]: the statistic of rows (``codes``, ``numerics`` mapped, as decoding outputs
        them: :func:`as_decoded`) with these scores."""
        group, _ = label_index(codes, domain)
        cells = cell_codes(codes, as_decoded(numerics, domain), domain)
        w = self.scores[group[:, None], np.arange(cells.shape[1])[None, :], cells].astype(np.float64)
        w /= 2 * RANK_QUANTUM
        gram = w.T @ w  # every pair's sum in one product
        return np.array([gram[j, k] for j, k in _pairs(w.shape[1])]) / max(len(w), 1)

    def apply(self, codes: np.ndarray, numerics: np.ndarray, domain: Domain, rng: np.random.Generator,
              latent: RankLatent | None = None, anchor: np.ndarray | None = None,
              beside_ties: bool = False) -> np.ndarray:
        """float64[n, p]: ``numerics`` with each column permuted within each label group and null
        state so that the rows' statistic meets its target (module docstring; ``numerics``
        itself where the release is within its noise of the rows). ``latent``: what a first
        chunk calibrated (filled here when empty; None: calibrate on these rows). ``anchor``
        (bool[n], :mod:`polars_rap.decode.anchors`): calibrated and permuted among the anchors,
        every other row placed among them. ``beside_ties``: the numeric ties were applied
        first (the test's z, :func:`pair_z`)."""
        if numerics.shape[0] < 2 or (anchor is not None and np.count_nonzero(anchor) < 2):
            return numerics
        latent = RankLatent() if latent is None else latent
        if latent.unchanged:
            return numerics
        rng = _child(rng)
        group, _ = label_index(codes, domain)
        present = present_values(codes, domain)
        if latent.correlation is None:
            at = slice(None) if anchor is None else anchor
            current = self.statistic(codes[at], numerics[at], domain)
            targets = shrunk(self.released, self.std, toward=current, z=pair_z(len(current), beside_ties))
            if np.array_equal(targets, current):
                latent.unchanged = True
                return numerics
            latent.correlation = self._calibrated(codes[at], numerics[at], domain, group[at], present[at], rng, targets)
        if anchor is not None:
            return _anchored_reordering(numerics, group, present, latent.correlation, rng, anchor)
        return _reordered(numerics, group, present, latent.correlation, rng)

    def to_frame(self, domain: Domain) -> pl.DataFrame:
        """One row per ``"score"`` (``column_a``, ``group``, ``cell``, ``value`` = m), per
        ``"released"`` pair (``column_a``, ``column_b``, ``value``) and one ``"std"`` (``value``)."""
        names = [spec.name for spec in domain.numeric_columns]
        n_groups, p, cells = self.scores.shape
        g, j, c = (a.reshape(-1) for a in np.meshgrid(np.arange(n_groups), np.arange(p), np.arange(cells), indexing="ij"))
        pairs = _pairs(p)
        schema = {"part": pl.String, "column_a": pl.String, "column_b": pl.String, "group": pl.Int32,
                  "cell": pl.Int32, "value": pl.Float64}
        return pl.concat([
            pl.DataFrame({"part": "score", "column_a": [names[i] for i in j], "column_b": None, "group": g,
                          "cell": c, "value": self.scores.reshape(-1).astype(np.float64)}, schema=schema),
            pl.DataFrame({"part": "released", "column_a": [names[a] for a, _ in pairs],
                          "column_b": [names[b] for _, b in pairs], "group": None, "cell": None,
                          "value": self.released}, schema=schema),
            pl.DataFrame({"part": ["std"], "column_a": None, "column_b": None, "group": None, "cell": None,
                          "value": [self.std]}, schema=schema),
        ])

    @classmethod
    def from_frame(cls, frame: pl.DataFrame, domain: Domain) -> RankPairs:
        """The pairs :meth:`to_frame` wrote, for the ``domain`` it was written with; a frame
        whose columns, pairs or cells do not match it raises ``ValueError``."""
        names = [spec.name for spec in domain.numeric_columns]
        scores = frame.filter(pl.col("part") == "score")
        targets = frame.filter(pl.col("part") == "released")
        std = frame.filter(pl.col("part") == "std")["value"]
        pairs = [(names[a], names[b]) for a, b in _pairs(len(names))]
        n_groups = n_label_groups(domain)
        expected = n_groups * len(names) * (N_RANK_CELLS + 1)
        if (scores.height != expected or list(zip(targets["column_a"], targets["column_b"], strict=True)) != pairs
                or len(std) != 1 or scores["column_a"].unique(maintain_order=True).to_list() != names):
            raise ValueError("the rank pairs do not match the domain's numeric columns, pairs or label groups")
        order = {name: i for i, name in enumerate(names)}
        values = scores.with_columns(pl.col("column_a").replace_strict(order, return_dtype=pl.Int32).alias("j")
                                     ).sort("group", "j", "cell")["value"].to_numpy()
        return cls(np.rint(values).astype(np.int8).reshape(n_groups, len(names), N_RANK_CELLS + 1),
                   targets["value"].to_numpy().astype(np.float64), float(std[0]))

    def _calibrated(self, codes, numerics, domain, group, present, rng, targets) -> np.ndarray:
        p = numerics.shape[1]
        pairs = _pairs(p)
        both = np.array([max(float(np.mean(present[:, j] & present[:, k])), 1e-3) for j, k in pairs])
        spearman = np.clip(12.0 * targets / both, -0.99, 0.99)
        correlation = _nearest_correlation(_matrix(p, pairs, 2.0 * np.sin(np.pi * spearman / 6.0)))
        state = rng.bit_generator.state
        for _ in range(CALIBRATION_STEPS):
            rng.bit_generator.state = state  # the same draws each time: the steps compare like with like
            got = self.statistic(codes, _reordered(numerics, group, present, correlation, rng), domain)
            step = _matrix(p, pairs, 12.0 * (targets - got) / both)
            correlation = _nearest_correlation(np.clip(correlation + step, -0.99, 0.99))
        rng.bit_generator.state = state
        return correlation


def _child(rng: np.random.Generator) -> np.random.Generator:
    """A generator spawned from ``rng``'s seed sequence, which leaves ``rng``'s own draws as
    they were (the categories a later chunk draws do not depend on the reorder); ``rng`` itself
    where it has no seed sequence."""
    try:
        return rng.spawn(1)[0]
    except (TypeError, ValueError, AttributeError):
        return rng


def _matrix(p: int, pairs: list[tuple[int, int]], values: np.ndarray) -> np.ndarray:
    """float64[p, p]: ``values`` (one per pair) placed symmetrically, 0 on the diagonal."""
    out = np.zeros((p, p))
    for (j, k), v in zip(pairs, values, strict=True):
        out[j, k] = out[k, j] = v
    return out


def _nearest_correlation(matrix: np.ndarray) -> np.ndarray:
    """The symmetric ``matrix`` with unit diagonal made positive definite (eigenvalues at least
    1e-3) and rescaled to a unit diagonal."""
    matrix = (matrix + matrix.T) / 2.0
    np.fill_diagonal(matrix, 1.0)
    values, vectors = np.linalg.eigh(matrix)
    matrix = (vectors * np.clip(values, 1e-3, None)) @ vectors.T
    scale = np.sqrt(np.diag(matrix))
    return matrix / np.outer(scale, scale)


def _normal_scores(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """float64[m]: ``ndtri((rank + 1/2) / m)`` of ``values``, equal values in a random order."""
    return ndtri((_tie_broken_ranks(values, rng.random(len(values))) + 0.5) / len(values))


def _tie_broken_ranks(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """float64[m]: each value's rank in ``np.lexsort((keys, values))``'s order (by value, equal
    values by ``keys``, then by position; :func:`value_then_key_order`)."""
    ranks = np.empty(len(values))
    ranks[value_then_key_order(values, keys)] = np.arange(len(values))
    return ranks


def _latent_score(own: np.ndarray, before: np.ndarray, correlation: np.ndarray, j: int,
                  fit: np.ndarray | slice = slice(None)) -> np.ndarray:
    """float64[m]: column ``j``'s latent score, ``before @ b`` (``before`` float64[m, j], the
    earlier columns' normal scores) plus the part of its own normal scores ``own`` (float64[m])
    they do not explain, standardised and scaled so the scores have ``correlation``; the
    regression and the standardisation read the rows ``fit`` (a bool mask; all by default)."""
    fitted = before[fit]
    coefficients = np.linalg.lstsq(fitted.T @ fitted, fitted.T @ own[fit], rcond=None)[0]  # normal equations
    residual = own - before @ coefficients
    residual = (residual - residual[fit].mean()) / max(float(residual[fit].std()), 1e-12)
    b = np.linalg.solve(correlation[:j, :j], correlation[:j, j])
    return before @ b + math.sqrt(max(1.0 - float(correlation[j, :j] @ b), 1e-6)) * residual


def _reordered(numerics: np.ndarray, group: np.ndarray, present: np.ndarray, correlation: np.ndarray,
               rng: np.random.Generator) -> np.ndarray:
    """float64[n, p]: each column's present values handed out again within each group in the
    order of the latent score (module docstring), columns in order."""
    out = numerics.copy()
    p = numerics.shape[1]
    for g in np.unique(group):
        rows = np.flatnonzero(group == g)
        z = np.zeros((len(rows), p))
        for j in range(p):
            here = np.flatnonzero(present[rows, j])
            if len(here) < 3:
                continue
            index = rows[here]
            own = _normal_scores(out[index, j], rng)
            score = own if j == 0 else _latent_score(own, np.ascontiguousarray(z[here, :j]), correlation, j)
            values = np.sort(out[index, j])
            placed = np.empty_like(values)
            placed[np.argsort(score, kind="stable")] = values
            out[index, j] = placed
            z[here, j] = _normal_scores(placed, rng)
    return out


def _anchored_reordering(numerics: np.ndarray, group: np.ndarray, present: np.ndarray, correlation: np.ndarray,
                         rng: np.random.Generator, anchor: np.ndarray) -> np.ndarray:
    """:func:`_reordered` with anchors (bool[n], :mod:`polars_rap.decode.anchors`): the scores'
    regressions and the hand-out run among the anchors; every other row's normal scores are its
    values' quantiles among the anchors' and it takes the anchors' value at its score's place."""
    out = numerics.copy()
    p = numerics.shape[1]
    for g in np.unique(group):
        rows = np.flatnonzero(group == g)
        z = np.zeros((len(rows), p))
        for j in range(p):
            here = np.flatnonzero(present[rows, j])
            is_anchor = anchor[rows[here]]
            if np.count_nonzero(is_anchor) < 3:
                continue
            index = rows[here]
            values = np.sort(out[index[is_anchor], j])
            own = np.empty(len(here))
            own[is_anchor] = _normal_scores(out[index[is_anchor], j], rng)
            own[~is_anchor] = ndtri(quantiles_among(values, out[index[~is_anchor], j], rng))
            score = own if j == 0 else _latent_score(own, np.ascontiguousarray(z[here, :j]), correlation, j, is_anchor)
            anchors = np.flatnonzero(is_anchor)
            order = anchors[np.argsort(score[anchors], kind="stable")]
            handed = np.empty(len(here))
            handed[order] = values
            others = np.flatnonzero(~is_anchor)
            handed[others] = placed(score[order], values, score[others], rng)
            out[index, j] = handed
            z[here[anchors], j] = _normal_scores(handed[anchors], rng)
            z[here[others], j] = ndtri(quantiles_among(values, handed[others], rng))
    return out
