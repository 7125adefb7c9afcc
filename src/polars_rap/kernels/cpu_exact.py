"""Exact answers on the CPU: hard-threshold counts of real rows (weighted, so that distinct
rows can stand for the rows that hold them: :mod:`polars_rap.kernels.distinct_rows`).

A *marginal group* is counted in one pass over the rows (a histogram of the cell index,
weighted by the group's shared halfspace indicator), parallel over groups; other queries take
the general CSR loop, parallel over chunks of queries, tiled over blocks of rows so that a
block stays in cache for the whole chunk. Counts are int64 weights summed exactly in float64.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from polars_rap.kernels.cpu_halfspaces import _EXACT_ROW_BLOCK, _halfspace_dot, _n_chunks, _plan
from polars_rap.kernels.distinct_rows import distinct_rows, footprint_plan
from polars_rap.workload.queries import QuerySet

# --------------------------------------------------------------------------- exact answers
@njit(parallel=True, cache=True)
def _exact_marginal_kernel(codes_t, numerics_t, halfspace_offsets, theta_offsets, theta_index,
                           theta_weight, tau, group_offsets, group_column_offsets, group_columns,
                           column_sizes, groups, weights, row_block, out):
    """out[q] (counts) for every query of ``groups``: one histogram pass per group; row ``r``
    counts ``weights[r]`` times (int64; ones, or the multiplicities of distinct rows)."""
    n_rows = codes_t.shape[1]
    for a in prange(len(groups)):
        g = groups[a]
        q0 = group_offsets[g]
        n_cells = group_offsets[g + 1] - q0
        counts = np.zeros(n_cells, dtype=np.int64)
        cell = np.empty(row_block, dtype=np.int64)
        keep = np.empty(row_block, dtype=np.bool_)
        dot = np.empty(row_block, dtype=np.float64)
        for r0 in range(0, n_rows, row_block):
            nb = min(row_block, n_rows - r0)
            for i in range(nb):
                cell[i] = 0
                keep[i] = True
            for t in range(group_column_offsets[g], group_column_offsets[g + 1]):
                column = group_columns[t]
                size = column_sizes[column]
                source = codes_t[column, r0 : r0 + nb]
                for i in range(nb):
                    cell[i] = cell[i] * size + source[i]
            for h in range(halfspace_offsets[q0], halfspace_offsets[q0 + 1]):
                _halfspace_dot(numerics_t, 0, theta_offsets, theta_index, theta_weight, h,
                               r0, nb, dot)
                threshold = np.float64(tau[h])
                for i in range(nb):
                    keep[i] = keep[i] and dot[i] <= threshold
            for i in range(nb):
                if keep[i]:
                    counts[cell[i]] += weights[r0 + i]
        for j in range(n_cells):
            out[q0 + j] = counts[j]


@njit(parallel=True, cache=True)
def _exact_csr_kernel(codes_t, numerics_t, cat_offsets, cat_coords, halfspace_offsets,
                      theta_offsets, theta_index, theta_weight, tau, coord_column, coord_code,
                      queries, weights, n_chunks, row_block, out):
    """out[q] (counts) for every q in ``queries``; chunks of queries in parallel, each chunk
    sweeping blocks of rows so a block is reused from cache by all its queries. Row ``r``
    counts ``weights[r]`` times (int64). Two neighbouring queries of one halfspace over the
    same numeric columns (linear thresholds) take their dot products in one sweep of those
    columns (:func:`_halfspace_dot_pair`), each term by term as alone."""
    n_rows = codes_t.shape[1]
    n_items = len(queries)
    for chunk in prange(n_chunks):
        lo = chunk * n_items // n_chunks
        hi = (chunk + 1) * n_items // n_chunks
        counts = np.zeros(hi - lo, dtype=np.int64)
        keep = np.empty((2, row_block), dtype=np.uint8)
        dot = np.empty((2, row_block), dtype=np.float64)
        for r0 in range(0, n_rows, row_block):
            nb = min(row_block, n_rows - r0)
            a = lo
            while a < hi:
                q = queries[a]
                if a + 1 < hi and _one_shared_halfspace(halfspace_offsets, theta_offsets, theta_index, q,
                                                        queries[a + 1]):
                    pair = 2
                    _halfspace_dot_pair(numerics_t, theta_offsets, theta_index, theta_weight,
                                        halfspace_offsets[q], halfspace_offsets[queries[a + 1]], r0, nb,
                                        dot[0], dot[1])
                else:
                    pair = 1
                for u in range(pair):
                    qu = queries[a + u]
                    row_keep, row_dot = keep[u], dot[u]
                    for i in range(nb):
                        row_keep[i] = 1
                    for p in range(cat_offsets[qu], cat_offsets[qu + 1]):
                        source = codes_t[coord_column[cat_coords[p]], r0 : r0 + nb]
                        code = coord_code[cat_coords[p]]
                        for i in range(nb):
                            row_keep[i] &= source[i] == code
                    for h in range(halfspace_offsets[qu], halfspace_offsets[qu + 1]):
                        if pair == 1:
                            _halfspace_dot(numerics_t, 0, theta_offsets, theta_index, theta_weight, h,
                                           r0, nb, row_dot)
                        threshold = np.float64(tau[h])
                        for i in range(nb):
                            row_keep[i] &= row_dot[i] <= threshold
                    total = 0
                    for i in range(nb):
                        total += row_keep[i] * weights[r0 + i]
                    counts[a + u - lo] += total
                a += pair
        for a in range(lo, hi):
            out[queries[a]] = counts[a - lo]


@njit(cache=True)
def _one_shared_halfspace(halfspace_offsets, theta_offsets, theta_index, q, other):
    """Whether queries q and ``other`` each have exactly one halfspace, over the same numeric
    columns in the same order."""
    h = halfspace_offsets[q]
    g = halfspace_offsets[other]
    if halfspace_offsets[q + 1] - h != 1 or halfspace_offsets[other + 1] - g != 1:
        return False
    length = theta_offsets[h + 1] - theta_offsets[h]
    if theta_offsets[g + 1] - theta_offsets[g] != length:
        return False
    for u in range(length):
        if theta_index[theta_offsets[h] + u] != theta_index[theta_offsets[g] + u]:
            return False
    return True


@njit(cache=True)
def _halfspace_dot_pair(values_t, theta_offsets, theta_index, theta_weight, h, g, r0, nb, dot_h, dot_g):
    """``_halfspace_dot`` of halfspaces h and g over the same columns (in the same order) in one
    sweep: each column's values are read once for both; each dot product takes the same terms
    in the same order as alone, so it is the same to the bit."""
    for i in range(nb):
        dot_h[i] = 0.0
        dot_g[i] = 0.0
    for u in range(theta_offsets[h + 1] - theta_offsets[h]):
        weight_h = np.float64(theta_weight[theta_offsets[h] + u])
        weight_g = np.float64(theta_weight[theta_offsets[g] + u])
        source = values_t[theta_index[theta_offsets[h] + u], r0 : r0 + nb]
        for i in range(nb):
            x = np.float64(source[i])
            dot_h[i] += weight_h * x
            dot_g[i] += weight_g * x


# ---------------------------------------------------------------------------- host side
def _exact_counts(codes, numerics, queries: QuerySet, *, structured: bool = True,
                  distinct: bool = True) -> np.ndarray:
    """float64[n_queries] counts of rows satisfying each query (checked inputs).

    With ``distinct``, the queries of each footprint that holds enough work are counted over
    that footprint's distinct rows, weighted (:mod:`polars_rap.kernels.distinct_rows`); the
    integer counts are the same either way.
    """
    out = np.zeros(queries.n_queries, dtype=np.float64)
    groups, csr = _plan(queries, None, structured)
    if distinct:
        for footprint in footprint_plan(queries, groups, csr):
            reduced = distinct_rows(codes, numerics, footprint)
            if reduced is None:
                continue
            _count(*reduced, queries, footprint.groups, footprint.queries, out)
            groups = np.setdiff1d(groups, footprint.groups, assume_unique=True)
            csr = np.setdiff1d(csr, footprint.queries, assume_unique=True)
    _count(codes, numerics, np.ones(codes.shape[0], dtype=np.int64), queries, groups, csr, out)
    return out


def _count(codes, numerics, weights, queries: QuerySet, groups, csr, out) -> None:
    """Write into ``out`` the weighted counts of marginal ``groups`` and single ``csr`` queries."""
    if not (len(groups) or len(csr)):
        return
    codes_t = np.ascontiguousarray(codes.T)
    numerics_t = np.ascontiguousarray(numerics.T)
    if len(groups):
        _exact_marginal_kernel(
            codes_t, numerics_t, queries.halfspace_offsets, queries.theta_offsets,
            queries.theta_index, queries.theta_weight, queries.tau, queries.group_offsets,
            queries.group_column_offsets, queries.group_columns, queries.column_sizes, groups,
            weights, _EXACT_ROW_BLOCK, out,
        )
    if len(csr):
        _exact_csr_kernel(
            codes_t, numerics_t, queries.cat_offsets, queries.cat_coords,
            queries.halfspace_offsets, queries.theta_offsets, queries.theta_index,
            queries.theta_weight, queries.tau, queries.coord_column, queries.coord_code, csr,
            weights, _n_chunks(len(csr)), _EXACT_ROW_BLOCK, out,
        )
