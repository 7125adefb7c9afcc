"""Numeric histograms: each numeric column's one-way distribution x label, measured outright.

Thresholds drawn at random (mixed marginals, linear thresholds) rarely fall where a column's
mass sits: commute times heaped on 10, 15, 20, 30 minutes, an age pinned at its bound. A
*numeric histogram* measures the whole one-way distribution of a numeric column within each
label value, on a public grid of edges ``t_1 < ... < t_K = 1`` of its mapped coordinate:

- an integer column with at most ``max_bins`` whole values gets an edge between every two
  (half-integers: no whole value sits on one, so decoding's rounding never crosses an edge);
- other columns get ``max_bins`` cells even on the mapped coordinate (so they follow the
  column's declared scale and atoms), their edges moved to half-integers on integer columns
  (:func:`polars_rap.workload.half_integer_threshold`).

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
release (:func:`polars_rap.privacy.gaussian_mechanism`, discrete Gaussian on counts, charged
to the ledger before any noise is drawn); the step's budget is split evenly over the
histograms. The edges, the groups and their number depend on the domain only (public), and
measuring all of them selects nothing. The prefixes the projection fits are cumulative sums of
the noisy cells: post-processing. A prefix ``k`` thus carries the sum of ``k`` independent
draws: std ``sqrt(k) sigma``, recorded as such (its inverse-variance weight) with ``k`` draws
for its reported interval (:func:`polars_rap.report.subgaussian_halfwidth`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from polars_rap.domain import Domain
from polars_rap.plan_steps import Step, add_outright_step
from polars_rap.privacy import PrivacyLedger, gaussian_mechanism
from polars_rap.queries import QueryClass, QuerySet
from polars_rap.transforms import to_unit
from polars_rap.workload import _feature_and_label_blocks, _marginal_groups, half_integer_threshold

__all__ = ["DEFAULT_MAX_BINS", "add_numeric_histograms", "histogram_edges", "histogram_groups",
           "histogram_runs", "measure_histograms"]

DEFAULT_MAX_BINS = 200
"""Cells of a numeric histogram at most: every whole value of an integer column up to this
many (acs-income-CA's JWMNP, 1-200 minutes, gets one cell per minute)."""


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


def histogram_runs(queries: QuerySet, groups: np.ndarray) -> list[np.ndarray]:
    """``groups`` (NH group ids, ascending) cut into histograms: maximal runs of consecutive
    ids on the same numeric column and label block, each one histogram's prefixes in order."""
    groups = np.asarray(groups, dtype=np.int64)
    if len(groups) == 0:
        return []
    column = _threshold_column(queries, groups)
    starts, stops = queries.group_column_offsets[groups], queries.group_column_offsets[groups + 1]
    label = np.array([queries.group_columns[a] if b > a else -1 for a, b in zip(starts, stops, strict=True)])
    cut = np.flatnonzero((np.diff(groups) != 1) | (np.diff(column) != 0) | (np.diff(label) != 0)) + 1
    return np.split(groups, cut)


def measure_histograms(record, queries: QuerySet, groups: np.ndarray, true_answers: np.ndarray,
                       ledger: PrivacyLedger, rng, *, measure_rho: float, round_index: int, n_rows: int,
                       close=None, loss_scale: float = 1.0) -> None:
    """Release every histogram of the NH ``groups`` (:func:`histogram_runs`) by the Gaussian
    mechanism on its cells (L2 sensitivity ``sqrt(2)/n``, module docstring), ``measure_rho``
    split evenly over them, and append its prefixes to ``record`` (a
    :class:`polars_rap.loop_record.LoopRecord`) group by group: noisy answers, std ``sqrt(k)
    sigma`` and ``k`` draws for the ``k``-th prefix, each with ``loss_scale``. ``close``
    (callable or None): the last histogram's charge is its value, read just before that
    charge (what is left)."""
    runs = histogram_runs(queries, groups)
    sensitivity = math.sqrt(2.0) / n_rows
    for position, run in enumerate(runs):
        rho = close() if close is not None and position == len(runs) - 1 else measure_rho / len(runs)
        prefix_counts = np.rint(true_answers[queries.group_query_indices(run)] * n_rows).reshape(len(run), -1)
        cells = np.diff(prefix_counts, axis=0, prepend=0.0) / n_rows
        column = int(_threshold_column(queries, run[:1])[0])
        noisy, std = gaussian_mechanism(
            cells.ravel(), sensitivity, rho, ledger, rng,
            description=f"NH histogram of numeric column {column} ({len(run)} cells per label value)",
            round=round_index, n_rows=n_rows,
        )
        noisy_prefix = np.cumsum(noisy.reshape(cells.shape), axis=0)
        for k, group in enumerate(run, start=1):
            record.add(group, round_index, noisy_prefix[k - 1], std * math.sqrt(k), draws=k,
                       loss_scale=loss_scale)


def add_numeric_histograms(domain: Domain, queries: QuerySet, plan: list[Step], group_counts: Mapping[str, int],
                           share: float, max_bins: int = DEFAULT_MAX_BINS, *, last: bool = False,
                           loss_scale: float = 1.0, from_class: str | None = None,
                           ) -> tuple[QuerySet, list[Step], dict[str, int]]:
    """The workload, plan and group counts with every numeric column's histogram prefixes.

    The groups are appended to ``queries`` (earlier group ids keep their meaning) and one
    outright ``"NH"`` step goes first (or ``last``), weighted so that it takes ``share`` (in
    (0, 1)) of the loop's budget (out of ``from_class``'s steps alone when given:
    :func:`~polars_rap.plan_steps.add_outright_step`), its answers' loss weights times
    ``loss_scale``. Unchanged when the domain has no numeric column or the plan is empty."""
    counts = dict(group_counts)
    if not domain.numeric_columns or not plan:
        return queries, list(plan), counts
    added = histogram_groups(domain, max_bins)
    counts["NH"] = added.n_groups
    return QuerySet.concatenate([queries, added]), add_outright_step(plan, "NH", share, last=last,
                                                                   loss_scale=loss_scale, from_class=from_class), counts
