"""Numeric histograms: each numeric column's one-way distribution x label, measured outright.

Thresholds drawn at random (mixed marginals, linear thresholds) rarely fall where a column's
mass sits: commute times heaped on 10, 15, 20, 30 minutes, an age pinned at its bound. A
*numeric histogram* measures the whole one-way distribution of a numeric column within each
label value, on a public grid of edges ``t_1 < ... < t_K = 1`` of its mapped coordinate:

- an integer column with at most ``max_bins`` whole values gets an edge between every two
  (half-integers: no whole value sits on one, so decoding's rounding never crosses an edge);
- other columns get ``max_bins`` cells even on the mapped coordinate (so they follow the
  column's declared scale and atoms), their edges moved to half-integers on integer columns
  (:func:`polars_rap.workload.builders.half_integer_threshold`), where each bound's whole value also
  gets a cell of its own: a top code (the ACS's poverty ratio at 501 for 38-57% of the rows) or
  values clipped to a bound are measured, fitted and decoded on the bound itself, not spread over
  the cell's other values.

The workload holds one *prefix* group per edge: ``1[label = y] 1[x <= t_k]`` for every label
value ``y`` (class ``"NH"``; the column alone when the domain has no label), an ordinary
product query the kernels answer and the projection fits, temperature-annealed like every
threshold. The release is not these prefixes, though, but the histogram's cells, differences
of consecutive prefixes: the rows of label ``y`` with ``t_(k-1) < x <= t_k`` (``t_0 = -inf``;
a null numeric reads as 0, as in every exact answer, so nulls count in the first cell).

Privacy. The cells of one (column, label block) histogram are disjoint (a row is in at most
one, whatever its value: the prefixes are nested), so replacing one row moves one count out of
a cell and one into a cell: the count vector changes by at most 1 in two entries, L2
sensitivity ``sqrt(2)/n`` in answer units, as a marginal's. Each histogram is one Gaussian
release (:func:`polars_rap.privacy.ledger.gaussian_mechanism`, discrete Gaussian on counts, charged
to the ledger before any noise is drawn); the step's budget is split evenly over the
histograms. The edges, the groups and their number depend on the domain only (public), and
measuring all of them selects nothing. The prefixes the projection fits are cumulative sums of
the noisy cells: post-processing. A prefix ``k`` thus carries the sum of ``k`` independent
draws: std ``sqrt(k) sigma``, recorded as such (its inverse-variance weight) with ``k`` draws
for its reported interval (:func:`polars_rap.privacy.report.subgaussian_halfwidth`).

Trees. Released flat, the ``k``-th prefix's noise variance grows as ``k``: at 200 cells the
mean prefix carries the noise of 100 draws. With ``branching`` ``b`` a histogram is released
instead as the nodes of a tree over its cells (Hay et al. 2010, "Boosting the accuracy of
differentially private histograms through consistency"): level 0 the cells themselves, level
``l`` the sums of ``b**l`` consecutive cells, up to one node over all of them, per label value.
Each level is a partition of the rows (every row in exactly one node of it), so replacing a row
changes each level's counts by 0 or 2 in squared L2 norm: ``sqrt(2 h)/n`` over ``h`` levels,
and one Gaussian release of all nodes costs the same ``rho`` as the flat one with ``h`` times
its noise variance per node. The cells are then the least-squares fit to the noisy nodes
(ordinary least squares: every node has the same noise), a linear function of released values
(post-processing), and each prefix a fixed weighting ``w_k`` of the noisy nodes, std ``sigma
||w_k||``. At 200 cells a binary tree's mean prefix variance is 9 flat draws' instead of 100
(:meth:`HistogramTree.mean_prefix_variance`); ``"auto"`` (:data:`HISTOGRAM_BRANCHING`, what
every run uses) takes whichever of the flat release and the branchings :data:`TREE_BRANCHINGS`
minimises that public figure for the histogram's number of cells.

The step. :func:`add_numeric_histograms` puts one outright ``"NH"`` step last in the plan, its
budget out of the linear thresholds' (:data:`HISTOGRAM_FROM`), its answers weighed
:data:`HISTOGRAM_WEIGHT` times their inverse variance in the projection loss.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from polars_rap.schema.domain import Domain
from polars_rap.errors import ParameterError
from polars_rap.fit.plan_steps import Step, add_outright_step
from polars_rap.privacy.ledger import PrivacyLedger, gaussian_mechanism
from polars_rap.workload.queries import QueryClass, QuerySet
from polars_rap.schema.transforms import to_unit
from polars_rap.workload.builders import _feature_and_label_blocks, _marginal_groups, half_integer_threshold

__all__ = ["DEFAULT_MAX_BINS", "HISTOGRAM_BRANCHING", "HISTOGRAM_FROM", "HISTOGRAM_WEIGHT", "MAX_TREE_CELLS",
           "TREE_BRANCHINGS", "HistogramTree", "add_numeric_histograms", "histogram_edges", "histogram_groups",
           "histogram_runs", "histogram_tree", "measure_histograms"]

DEFAULT_MAX_BINS = 200
"""Cells of a numeric histogram at most (two more on a wider integer column: its bounds' own):
every whole value of an integer column up to this many (acs-income-CA's JWMNP, 1-200 minutes,
gets one cell per minute). Once the planned strategy's ``histogram_bins``, never measured at
another value."""

HISTOGRAM_WEIGHT = 0.1
"""Factor on the histograms' answers' inverse-variance weights in the projection loss
(post-processing). A histogram cell gets far more budget than one threshold query, and its k-th
cumulative sum about 80 / k times a threshold answer's weight on acs-income-CA, so at 1 the fit
serves the margins before the joint thresholds: 0.3 or 1 gave the numeric KS 0.99-1.14x of 0.1's,
and 0.3 and 0.01 lost on trees too (``bench/results/ablation_histogram_weight.md``)."""

HISTOGRAM_FROM = "LT"
"""The query class whose share pays for the histograms, the others keeping theirs (every class
pays when its share is no larger than the histograms'). At 20% the thresholds keep about a third
of their share, and over 6 seeds on both datasets at eps 0.25 and 1
(``bench/results/ablation_tree_share_seeds.md``) MM error falls 17-31% (lower in all 24 runs), the
numeric KS 26-34% (CA at eps = 1: +5%), CM and LT within seed noise, for 0.008 macro F1 on Adult
at eps = 1, against 5% out of every class's."""

HISTOGRAM_BRANCHING = "auto"
"""How each histogram is released (:func:`histogram_tree`): whichever of the flat release and the
trees of :data:`TREE_BRANCHINGS` has the least expected prefix noise for its number of cells
(public; binary on the headline datasets' columns). Against the flat release, 3 seeds on both
datasets at eps 0.25 and 1 (``bench/results/ablation_histogram_trees.md``): MM -15 to -25%, LT
-12 to -19%, numeric KS -15 to -38%, CM level, macro F1 +0.001 to +0.004."""


TREE_BRANCHINGS = (2, 3, 4, 8, 16)
"""The branchings ``"auto"`` weighs against the flat release (:func:`histogram_tree`)."""
MAX_TREE_CELLS = 1024
"""A histogram of more cells is released flat (its tree's dense least-squares weights would
take ``O(cells**2)`` memory); :data:`DEFAULT_MAX_BINS` is 200."""


@dataclass(frozen=True, slots=True, eq=False)
class HistogramTree:
    """The public design of one histogram's release: which sums of its ``K`` cells are noised,
    and how its prefixes are read back from them (module docstring).

    ``nodes`` (float64[N, K], 0/1) holds one row per released sum, level by level from the
    cells up; ``levels`` is ``h``, the number of partitions of the cells among the rows;
    ``prefix_weights`` (float64[K, N]) the least-squares estimate of the ``k``-th prefix as a
    weighting of the noisy nodes. ``branching`` None is the flat release: ``nodes`` the
    identity, one level, the ``k``-th prefix the sum of the first ``k`` noisy cells."""

    branching: int | None
    nodes: np.ndarray
    levels: int
    prefix_weights: np.ndarray

    @classmethod
    def build(cls, n_cells: int, branching: int | None) -> HistogramTree:
        """The tree of ``branching`` (an int >= 2, or None: flat) over ``n_cells`` cells."""
        if branching is None:
            nodes = np.eye(n_cells)
            return cls(None, nodes, 1, np.tril(np.ones((n_cells, n_cells))))
        rows, width = [np.eye(n_cells)], 1
        while width < n_cells:
            width *= branching
            starts = np.arange(0, n_cells, width)
            level = np.zeros((len(starts), n_cells))
            for i, start in enumerate(starts):
                level[i, start:start + width] = 1.0
            rows.append(level)
        nodes = np.concatenate(rows)
        # Least squares with equal noise on every node: cells = (A'A)^-1 A' y, prefixes = P cells.
        cells_from_nodes = np.linalg.solve(nodes.T @ nodes, nodes.T)
        prefix_weights = np.cumsum(cells_from_nodes, axis=0)
        return cls(int(branching), nodes, len(rows), prefix_weights)

    @property
    def prefix_norms(self) -> np.ndarray:
        """float64[K]: ``||w_k||``, the ``k``-th prefix's noise std in units of a node's sigma."""
        return np.sqrt(np.sum(np.square(self.prefix_weights), axis=1))

    @property
    def prefix_draws(self) -> np.ndarray:
        """int64[K]: the noisy nodes each prefix sums (with non-zero weight)."""
        return np.count_nonzero(np.abs(self.prefix_weights) > 1e-12, axis=1).astype(np.int64)

    def mean_prefix_variance(self) -> float:
        """The prefixes' mean noise variance in units of one flat cell's at the same ``rho``:
        ``h`` times the mean ``||w_k||**2`` (each node's variance is ``h`` flat cells', its
        release's squared sensitivity being ``h`` times theirs). Public: the cells' count only."""
        return self.levels * float(np.mean(np.sum(np.square(self.prefix_weights), axis=1)))


def histogram_tree(n_cells: int, branching: int | str | None = HISTOGRAM_BRANCHING) -> HistogramTree:
    """The release design of a histogram of ``n_cells`` cells: flat (``branching`` None, or
    more than :data:`MAX_TREE_CELLS` cells), the tree of an int ``branching`` >= 2, or for
    ``"auto"`` (:data:`HISTOGRAM_BRANCHING`) the design of least
    :meth:`~HistogramTree.mean_prefix_variance` among the flat release and
    :data:`TREE_BRANCHINGS` (public: it depends on ``n_cells`` only). Cached; its arrays are
    read-only."""
    if not (branching is None or branching == "auto" or (
            isinstance(branching, int) and not isinstance(branching, bool) and branching >= 2)):
        msg = f"branching must be None (flat), 'auto' or an int >= 2. Got {branching!r}"
        raise ParameterError(msg)
    return _histogram_tree(int(n_cells), branching)


@functools.lru_cache(maxsize=64)
def _histogram_tree(n_cells: int, branching: int | str | None) -> HistogramTree:
    """:func:`histogram_tree` of a checked ``branching`` (None, ``"auto"`` or an int)."""
    if branching is None or n_cells > MAX_TREE_CELLS or n_cells < 2:
        tree = HistogramTree.build(n_cells, None)
    elif branching == "auto":
        trees = [HistogramTree.build(n_cells, b) for b in (None, *TREE_BRANCHINGS)]
        tree = min(trees, key=HistogramTree.mean_prefix_variance)
    else:
        tree = HistogramTree.build(n_cells, branching)
    for array in (tree.nodes, tree.prefix_weights):
        array.setflags(write=False)
    return tree


def histogram_edges(spec, max_bins: int = DEFAULT_MAX_BINS) -> np.ndarray:
    """float32[K]: the upper edges ``t_1 < ... < t_K = 1`` of the column's histogram cells on
    its mapped ``[0, 1]`` coordinate (module docstring), from its public spec only."""
    values = spec.upper - spec.lower + 1.0
    if spec.is_integer and float(spec.lower).is_integer() and values <= max_bins:
        halves = np.arange(spec.lower, spec.upper, dtype=np.float64) + 0.5
        inner = to_unit(halves, spec)
    else:
        inner = np.arange(1, max_bins, dtype=np.float64) / max_bins
        inner = np.array([half_integer_threshold(float(t), spec) for t in inner])
        if spec.is_integer and float(spec.lower).is_integer():  # each bound's whole value a cell of its own
            inner = np.append(inner, to_unit(np.array([spec.lower + 0.5, spec.upper - 0.5]), spec))
    edges = np.unique(np.append(inner, 1.0).astype(np.float32))  # sorted, strictly increasing
    return edges[(edges > np.float32(0.0)) | (edges == edges.max())]


def histogram_groups(domain: Domain, max_bins: int = DEFAULT_MAX_BINS) -> QuerySet:
    """The prefix groups of every numeric column's histogram within each label block (class
    ``"NH"``): for column ``j`` and label block ``l``, one group per edge ``t`` of
    :func:`histogram_edges`, the cells of ``l`` times ``1[x_j <= t]``, edges ascending. A
    (column, label block) pair's groups are consecutive (:func:`histogram_runs`)."""
    _, labels = _feature_and_label_blocks(domain)
    block_groups, halfspaces = [], []
    for j, spec in enumerate(domain.numeric_columns):
        index, weight = np.array([j], dtype=np.int32), np.array([1.0], dtype=np.float32)
        for label in labels or [None]:
            for tau in histogram_edges(spec, max_bins):
                block_groups.append(() if label is None else (label,))
                halfspaces.append([(index, weight, float(tau))])
    return _marginal_groups(domain, block_groups, halfspaces, QueryClass.NUMERIC_HISTOGRAM)


def _threshold_column(queries: QuerySet, groups: np.ndarray) -> np.ndarray:
    """int32[len(groups)]: the numeric column of each group's (first) threshold."""
    first_query = queries.group_offsets[groups]
    return queries.theta_index[queries.theta_offsets[queries.halfspace_offsets[first_query]]]


def _label_block(queries: QuerySet, group: int) -> int:
    """The label block of a histogram group (its one column), -1 for none."""
    columns = queries.columns_of(group)
    return int(columns[0]) if len(columns) else -1


def histogram_runs(queries: QuerySet, groups: np.ndarray) -> list[np.ndarray]:
    """``groups`` (NH group ids, ascending) cut into histograms: maximal runs of consecutive
    ids on the same numeric column and label block, each one histogram's prefixes in order."""
    groups = np.asarray(groups, dtype=np.int64)
    if len(groups) == 0:
        return []
    column = _threshold_column(queries, groups)
    label = np.array([_label_block(queries, int(g)) for g in groups])
    cut = np.flatnonzero((np.diff(groups) != 1) | (np.diff(column) != 0) | (np.diff(label) != 0)) + 1
    return np.split(groups, cut)


def measure_histograms(record, queries: QuerySet, groups: np.ndarray, true_answers: np.ndarray,
                       ledger: PrivacyLedger, rng, *, measure_rho: float, round_index: int, n_rows: int,
                       close=None, loss_scale: float = 1.0) -> None:
    """Release every histogram of the NH ``groups`` (:func:`histogram_runs`) by one Gaussian
    mechanism on the nodes of its :func:`histogram_tree` (:data:`HISTOGRAM_BRANCHING`; flat: its
    cells, L2 sensitivity ``sqrt(2)/n``; a tree of ``h`` levels: ``sqrt(2 h)/n``, module docstring),
    ``measure_rho`` split evenly over them, and append its prefixes to ``record`` (a
    :class:`polars_rap.fit.loop_record.LoopRecord`) group by group: noisy answers, std ``sigma
    ||w_k||`` and the draws summed (``k`` for the ``k``-th prefix of a flat release), each
    with ``loss_scale``. ``close`` (callable or None): the last histogram's charge is its
    value, read just before that charge (what is left)."""
    runs = histogram_runs(queries, groups)
    for position, run in enumerate(runs):
        rho = close() if close is not None and position == len(runs) - 1 else measure_rho / len(runs)
        prefix_counts = np.rint(true_answers[queries.group_query_indices(run)] * n_rows).reshape(len(run), -1)
        cell_counts = np.diff(prefix_counts, axis=0, prepend=0.0)
        tree = histogram_tree(len(run), HISTOGRAM_BRANCHING)
        column = int(_threshold_column(queries, run[:1])[0])
        description = f"NH histogram of numeric column {column} ({len(run)} cells per label value)"
        if tree.branching is None:
            released = cell_counts
        else:
            released = tree.nodes @ cell_counts  # integer sums, exact in float64
            description = (f"NH histogram of numeric column {column} ({len(run)} cells per label value, "
                           f"tree of branching {tree.branching}: {len(tree.nodes)} nodes, {tree.levels} levels)")
        noisy, std = gaussian_mechanism(
            released.ravel() / n_rows, math.sqrt(2.0 * tree.levels) / n_rows, rho, ledger, rng,
            description=description, round=round_index, n_rows=n_rows,
        )
        noisy_prefix, norms, draws = histogram_prefixes(tree, noisy.reshape(released.shape))
        for k, group in enumerate(run):
            record.add(group, round_index, noisy_prefix[k], std * norms[k], draws=int(draws[k]),
                       loss_scale=loss_scale)


def histogram_prefixes(tree: HistogramTree, noisy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The prefixes read from one release's noisy values (float64[N, L], node by label value):
    float64[K, L] prefixes, float64[K] their stds in units of the release's sigma and int64[K]
    the draws each sums. A flat release's prefixes are the cumulative sums of its cells; a
    tree's the least-squares weighting :attr:`HistogramTree.prefix_weights`."""
    if tree.branching is None:
        k = np.arange(1, len(noisy) + 1)
        return np.cumsum(noisy, axis=0), np.sqrt(k.astype(np.float64)), k.astype(np.int64)
    return tree.prefix_weights @ noisy, tree.prefix_norms, tree.prefix_draws


def add_numeric_histograms(domain: Domain, queries: QuerySet, plan: list[Step], group_counts: Mapping[str, int],
                           share: float) -> tuple[QuerySet, list[Step], dict[str, int]]:
    """The workload, plan and group counts with every numeric column's histogram prefixes
    (at most :data:`DEFAULT_MAX_BINS` cells each).

    The groups are appended to ``queries`` (earlier group ids keep their meaning) and one
    outright ``"NH"`` step goes last, weighted so that it takes ``share`` (in (0, 1)) of the
    loop's budget, out of :data:`HISTOGRAM_FROM`'s steps
    (:func:`~polars_rap.fit.plan_steps.add_outright_step`), its answers' loss weights times
    :data:`HISTOGRAM_WEIGHT`. Unchanged when the domain has no numeric column or the plan is
    empty."""
    counts = dict(group_counts)
    if not domain.numeric_columns or not plan:
        return queries, list(plan), counts
    added = histogram_groups(domain, DEFAULT_MAX_BINS)
    counts["NH"] = added.n_groups
    steps = add_outright_step(plan, "NH", share, last=True, loss_scale=HISTOGRAM_WEIGHT, from_class=HISTOGRAM_FROM)
    return QuerySet.concatenate([queries, added]), steps, counts
