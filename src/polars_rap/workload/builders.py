"""Workload builders: the statistical queries to preserve, generated from the domain alone.

Three classes (paper §5.1, design.md §3), all class-conditional when the domain has labels:

- categorical marginals (CM): every pair of categorical features × one label; one *group* per
  marginal, holding all its cells;
- mixed marginals (MM): random prefix thresholds on two numeric columns × one label; one group
  per threshold pair, holding every label value (one threshold per numeric column in a group,
  so the group's sensitivity stays that of one marginal);
- linear thresholds (LT): one label value times one random halfspace over all numeric columns;
  one group per query;
- null rates (NR, :mod:`polars_rap.fit.null_rates`): a nullable column's block times each label,
  for the blocks the other classes leave unmeasured.

Thresholds are drawn on numerics mapped to ``[0, 1]`` by their *public* bounds and map (scale
and atoms, :mod:`polars_rap.schema.transforms`), never from the data: a threshold uniform in the mapped
coordinate follows a declared ``"log"`` or ``"sqrt"`` scale in the column's units. For LT the
normal is ``theta ~ N(0, I) / sqrt(d)`` as in the paper, but the threshold is ``tau = theta .
u`` for a uniform point ``u`` of the unit box rather than ``tau ~ N(0, 1)``: on ``[0, 1]``
coordinates ``theta . x`` spans only about ``±0.8 sqrt(d)``, so most ``N(0, 1)`` thresholds
would cut nothing. ``theta . u`` always lies inside the range of ``theta . x``.
"""

from __future__ import annotations

import itertools
import logging
import math

import numpy as np

from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import block_slices
from polars_rap.errors import ParameterError
from polars_rap.workload.queries import QueryClass, QuerySet, _offsets, categorical_layout
from polars_rap.schema.temporal import format_internal
from polars_rap.schema.transforms import from_unit, to_unit

__all__ = [
    "categorical_marginals",
    "mixed_marginals",
    "linear_thresholds",
    "null_rate_marginals",
    "build_workload",
    "group_sensitivities",
    "describe_queries",
]

logger = logging.getLogger(__name__)


def _layout(domain: Domain) -> dict:
    slices = block_slices(domain)
    # code 1 of a nullable numeric column's indicator block is "null" (polars_rap.schema.encoding)
    null_coord = [
        slices[domain.block_index(spec.name, indicator=True)].start + 1 if spec.nullable else -1
        for spec in domain.numeric_columns
    ]
    return dict(
        slices=slices,
        n_numeric=len(domain.numeric_columns),
        null_coord=np.asarray(null_coord, dtype=np.int32),
        **categorical_layout(domain.block_sizes),
    )


def _marginal_groups(
    domain: Domain,
    block_groups: list[tuple[int, ...]],
    halfspaces: list[list[tuple[np.ndarray, np.ndarray, float]]],
    query_class: int,
) -> QuerySet:
    """Marginal groups: all cells of each tuple of blocks, each with shared halfspaces."""
    layout = _layout(domain)
    slices = layout["slices"]
    cat_coords, cat_lengths, hs_lengths = [], [], []
    theta_index, theta_weight, theta_lengths, taus = [], [], [], []
    group_sizes, group_columns = [], []
    for blocks, group_halfspaces in zip(block_groups, halfspaces, strict=True):
        shape = [slices[b].stop - slices[b].start for b in blocks]
        n_cells = math.prod(shape)
        cells = np.indices(shape).reshape(len(blocks), n_cells).T  # row-major
        starts = np.array([slices[b].start for b in blocks], dtype=np.int32)
        cat_coords.append((cells + starts).astype(np.int32).ravel())
        cat_lengths.append(np.full(n_cells, len(blocks), dtype=np.int64))
        hs_lengths.append(np.full(n_cells, len(group_halfspaces), dtype=np.int64))
        for _ in range(n_cells if group_halfspaces else 0):
            for index, weight, tau in group_halfspaces:
                theta_index.append(index)
                theta_weight.append(weight)
                theta_lengths.append(len(index))
                taus.append(tau)
        group_sizes.append(n_cells)
        group_columns.extend(blocks)
    return _assemble(
        layout, cat_coords, cat_lengths, hs_lengths, theta_index, theta_weight, theta_lengths,
        taus, query_class, group_sizes, [len(b) for b in block_groups], group_columns,
    )


def _assemble(
    layout, cat_coords, cat_lengths, hs_lengths, theta_index, theta_weight, theta_lengths,
    taus, query_class, group_sizes, group_column_counts, group_columns,
) -> QuerySet:
    cat_lengths_arr = np.concatenate(cat_lengths) if cat_lengths else np.zeros(0, np.int64)
    n_queries = len(cat_lengths_arr)
    return QuerySet(
        cat_offsets=_offsets(cat_lengths_arr),
        cat_coords=np.concatenate(cat_coords).astype(np.int32) if cat_coords else np.zeros(0, np.int32),
        halfspace_offsets=_offsets(np.concatenate(hs_lengths) if hs_lengths else np.zeros(0, np.int64)),
        theta_offsets=_offsets(np.asarray(theta_lengths, dtype=np.int64)),
        theta_index=(np.concatenate(theta_index) if theta_index else np.zeros(0)).astype(np.int32),
        theta_weight=(np.concatenate(theta_weight) if theta_weight else np.zeros(0)).astype(np.float32),
        tau=np.asarray(taus, dtype=np.float32),
        query_class=np.full(n_queries, query_class, dtype=np.int8),
        group_offsets=_offsets(np.asarray(group_sizes, dtype=np.int64)),
        group_column_offsets=_offsets(np.asarray(group_column_counts, dtype=np.int64)),
        group_columns=np.asarray(group_columns, dtype=np.int32),
        coord_column=layout["coord_column"],
        coord_code=layout["coord_code"],
        column_sizes=layout["column_sizes"],
        numeric_offset=layout["numeric_offset"],
        n_numeric=layout["n_numeric"],
        null_coord=layout["null_coord"],
    )


def _feature_and_label_blocks(domain: Domain) -> tuple[list[int], list[int]]:
    features = [i for i, b in enumerate(domain.blocks) if not b.is_label]
    labels = [i for i, b in enumerate(domain.blocks) if b.is_label]
    return features, labels


def categorical_marginals(domain: Domain, max_cells: int | None = 20_000) -> QuerySet:
    """All class-conditional 3-way marginals (two categorical features × one label).

    Without labels, all 2-way marginals of categorical features (a lone feature's 1-way
    marginal; with labels and no feature, the labels' as features'). Null indicators of nullable
    numeric columns count as categorical features. Marginals with more than ``max_cells``
    cells are left out (logged): their cells would be pure noise at any useful ε.
    """
    features, labels = _feature_and_label_blocks(domain)
    sizes = domain.block_sizes
    if labels:
        combos = [(a, b, l) for a, b in itertools.combinations(features, 2) for l in labels]
        if len(features) == 1:
            combos = [(features[0], l) for l in labels]
        elif not features:  # labels alone: as features would be without labels
            combos = list(itertools.combinations(labels, 2)) or [(labels[0],)]
    else:
        combos = list(itertools.combinations(features, 2)) or [(b,) for b in features]
    if max_cells is not None:
        kept = [c for c in combos if math.prod(sizes[b] for b in c) <= max_cells]
        if len(kept) < len(combos):
            logger.info("left out %d marginals over %d cells", len(combos) - len(kept), max_cells)
        combos = kept
    return _marginal_groups(domain, combos, [[] for _ in combos], QueryClass.CATEGORICAL_MARGINAL)


def null_rate_marginals(domain: Domain, blocks: list[int],
                        query_class: int = QueryClass.NULL_RATE) -> QuerySet:
    """Null-rate groups of the categorical ``blocks`` (nullable columns, null indicators):
    each block times each label (block x label marginals), or the block alone when the domain
    has no label or the block is a label. Their cells sum to the block's null rate. The same
    groups over every feature block are the base marginals (``query_class`` BASE_MARGINAL)."""
    _, labels = _feature_and_label_blocks(domain)
    combos: list[tuple[int, ...]] = []
    for block in blocks:
        combos += [(block,)] if not labels or block in labels else [(block, label) for label in labels]
    return _marginal_groups(domain, combos, [[] for _ in combos], query_class)


def mixed_marginals(domain: Domain, n_groups: int, rng: np.random.Generator) -> QuerySet:
    """``n_groups`` random class-conditional mixed marginals: two numeric prefixes
    ``x_i <= t_i, x_j <= t_j`` (one numeric column if there is only one) × every value of one
    label, with thresholds uniform on the mapped ``[0, 1]`` coordinate (uniform in the
    column's units for a linear scale)."""
    n_numeric = len(domain.numeric_columns)
    features, labels = _feature_and_label_blocks(domain)
    if n_numeric == 0 or n_groups <= 0:
        return _marginal_groups(domain, [], [], QueryClass.MIXED_MARGINAL)
    width = min(2, n_numeric)
    block_groups, halfspaces = [], []
    for _ in range(n_groups):
        columns = np.sort(rng.choice(n_numeric, size=width, replace=False))
        thresholds = rng.random(width)
        block_groups.append((int(rng.choice(labels)),) if labels else ())
        halfspaces.append([
            (np.array([j], dtype=np.int32), np.array([1.0], dtype=np.float32), float(t))
            for j, t in zip(columns, thresholds, strict=True)
        ])
    return _marginal_groups(domain, block_groups, halfspaces, QueryClass.MIXED_MARGINAL)


def half_integer_threshold(tau: float, spec) -> float:
    """The mapped threshold of ``x <= floor(F^-1(tau)) + 1/2`` for an integer column ``spec``
    (``tau`` itself for other columns): on whole values it selects the same rows as ``tau``,
    and decoding's rounding never moves a value across it (the numeric histograms' edges,
    :func:`polars_rap.fit.numeric_histograms.histogram_edges`). A threshold inside an atom's
    slab stays: it already splits the whole values (``x < a`` or ``x <= a``).

    >>> from polars_rap.schema.domain import ColumnSpec
    >>> import polars as pl
    >>> age = ColumnSpec("age", "numeric", pl.Int64, lower=0.0, upper=100.0)
    >>> round(half_integer_threshold(0.413, age), 6)
    0.415
    """
    if not spec.is_integer:
        return tau
    value = float(from_unit(np.array([tau]), spec)[0])
    if value in spec.atoms:
        return tau
    return float(to_unit(np.array([min(math.floor(value) + 0.5, spec.upper)]), spec)[0])


def linear_thresholds(domain: Domain, n_queries: int, rng: np.random.Generator) -> QuerySet:
    """``n_queries`` class-conditional linear thresholds ``1[x_label = y] 1[theta . x <= tau]``
    (paper Def. 4 and §5.1) over all numeric columns; one group per query."""
    n_numeric = len(domain.numeric_columns)
    layout = _layout(domain)
    _, labels = _feature_and_label_blocks(domain)
    if n_numeric == 0 or n_queries <= 0:
        return _assemble(layout, [], [], [], [], [], [], [], QueryClass.LINEAR_THRESHOLD, [], [], [])
    theta = rng.standard_normal((n_queries, n_numeric)) / math.sqrt(n_numeric)
    tau = np.einsum("qd,qd->q", theta, rng.random((n_queries, n_numeric)))
    cat_coords: list[np.ndarray] = []
    if labels:
        label_blocks = rng.choice(labels, size=n_queries)
        slices = layout["slices"]
        label_values = np.array([
            slices[b].start + rng.integers(len(domain[domain.blocks[b].source].categories))
            for b in label_blocks
        ], dtype=np.int32)
        cat_coords = [label_values]
        cat_lengths = [np.ones(n_queries, dtype=np.int64)]
    else:
        cat_lengths = [np.zeros(n_queries, dtype=np.int64)]
    all_numeric = np.arange(n_numeric, dtype=np.int32)
    return _assemble(
        layout, cat_coords, cat_lengths, [np.ones(n_queries, dtype=np.int64)],
        [np.tile(all_numeric, n_queries)], [theta.astype(np.float32).ravel()],
        [n_numeric] * n_queries, tau.astype(np.float32), QueryClass.LINEAR_THRESHOLD,
        [1] * n_queries, [0] * n_queries, [],
    )


def build_workload(
    domain: Domain,
    rng: np.random.Generator,
    *,
    classes: tuple[str, ...] = ("CM", "LT"),
    n_mixed_marginals: int = 2_000,
    n_linear_thresholds: int = 20_000,
    max_marginal_cells: int | None = 20_000,
) -> QuerySet:
    """The workload of the given ``classes`` (any of ``"CM"``, ``"MM"``, ``"LT"``), in that
    order; the same ``rng`` state gives the same workload."""
    parts = []
    for name in classes:
        if name == "CM":
            parts.append(categorical_marginals(domain, max_marginal_cells))
        elif name == "MM":
            parts.append(mixed_marginals(domain, n_mixed_marginals, rng))
        elif name == "LT":
            parts.append(linear_thresholds(domain, n_linear_thresholds, rng))
        else:
            msg = f"unknown query class {name!r}; choose from 'CM', 'MM', 'LT'"
            raise ParameterError(msg)
    return QuerySet.concatenate(parts)


def group_sensitivities(queries: QuerySet, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(L1, L2) sensitivities, float64[n_groups], of each group's answer vector (means) under
    replace-one neighbours with ``n_rows`` public.

    A marginal group (cells partition the rows passing its shared halfspaces): one row moves
    out of one cell and into another, so L1 = 2/n and L2 = sqrt(2)/n. A single query: 1/n.
    """
    is_marginal = np.diff(queries.group_column_offsets) > 0
    l1 = np.where(is_marginal, 2.0, 1.0) / n_rows
    l2 = np.where(is_marginal, math.sqrt(2.0), 1.0) / n_rows
    return l1, l2


def describe_queries(queries: QuerySet, domain: Domain, indices: np.ndarray) -> list[str]:
    """Human-readable text of queries ``indices``, e.g. ``"SEX=2 & income=>50K & AGEP<=41.3"``."""
    numeric = domain.numeric_columns
    out = []
    for q in np.asarray(indices, dtype=np.int64):
        parts = []
        for c in queries.cat_coords[queries.cat_offsets[q] : queries.cat_offsets[q + 1]]:
            block = domain.blocks[queries.coord_column[c]]
            code = int(queries.coord_code[c])
            if block.indicator:
                parts.append(f"{block.source} is {'null' if code else 'not null'}")
            else:
                spec = domain[block.source]
                value = spec.categories[code] if code < len(spec.categories) else None
                parts.append(f"{spec.name}={value}")
        for h in range(queries.halfspace_offsets[q], queries.halfspace_offsets[q + 1]):
            lo, hi = queries.theta_offsets[h], queries.theta_offsets[h + 1]
            index, weight, tau = queries.theta_index[lo:hi], queries.theta_weight[lo:hi], queries.tau[h]
            if len(index) == 1 and weight[0] == 1.0:
                parts.append(f"{numeric[index[0]].name}<={_threshold_text(numeric[index[0]], float(tau))}")
            elif len(index) == 1 and weight[0] == -1.0:  # a histogram node's lower edge
                parts.append(f"{numeric[index[0]].name}>={_threshold_text(numeric[index[0]], -float(tau))}")
            else:
                terms = " + ".join(f"{w:.3g}*{numeric[j].name}~" for j, w in zip(index, weight, strict=True))
                parts.append(f"{terms} <= {float(tau):.3g}")
        out.append(" & ".join(parts) if parts else "all rows")
    return out


def _threshold_text(spec, tau: float) -> str:
    """The threshold ``tau`` of the mapped coordinate in the column's units: ``u <= tau`` holds
    exactly when ``x <= F^-1(tau)`` (:mod:`polars_rap.schema.transforms`)."""
    value = float(from_unit(np.array([tau]), spec)[0])
    return format_internal(value, spec.dtype) if spec.is_temporal else f"{value:.4g}"
