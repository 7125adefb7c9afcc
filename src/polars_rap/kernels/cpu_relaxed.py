"""Relaxed answers and the loss gradient on the CPU (sigmoid thresholds on relaxed rows).

A marginal group's cells are walked column by column, smallest column first (its largest
column innermost: :func:`~polars_rap.kernels.cpu_halfspaces._walk_order`), one column's
probabilities multiplied into a running prefix product per level (one multiply-add per cell
and row); other queries
take the CSR loop. The gradient runs parallel over blocks of rows (one thread owns a block's
rows, so no two threads write one row): reverse-mode through the same prefix products for a
marginal group, the product of the other factors from prefix and suffix products for a CSR
query (never a division). Only the row sums use the ``reassoc`` fast-math flag.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from polars_rap.kernels.cpu_halfspaces import (
    _EXACT_NULLS,
    _PATTERNS,
    _REDUCTION_FASTMATH,
    _RELAXED_ROW_BLOCK,
    _block_starts,
    _group_halfspaces,
    _halfspace_value,
    _max_halfspaces,
    _n_chunks,
    _null_count,
    _null_halfspace_grad,
    _plan,
    _query_block,
    _scale,
    _walk_order,
)
from polars_rap.workload.queries import QuerySet

# ------------------------------------------------------------------------- relaxed answers
@njit(parallel=True, cache=True, fastmath=_REDUCTION_FASTMATH)
def _relaxed_marginal_kernel(XT, numeric_offset, null_coord, halfspace_offsets, theta_offsets,
                             theta_index, theta_weight, tau, sigma, group_offsets, group_column_offsets,
                             walk_columns, walk_strides, column_sizes, block_starts, groups,
                             max_halfspaces, row_block, out):
    """out[q] (row sums) for every query of ``groups``, walking each group's cells column by
    column in ``walk_columns`` order (:func:`_walk_order`) with one running prefix product per
    column; a cell's query is its group's first plus the ``walk_strides`` of its categories."""
    n_rows = XT.shape[1]
    for a in prange(len(groups)):
        g = groups[a]
        q0 = group_offsets[g]
        c0 = group_column_offsets[g]
        k = group_column_offsets[g + 1] - c0
        last_start = block_starts[walk_columns[c0 + k - 1]]
        last_size = column_sizes[walk_columns[c0 + k - 1]]
        last_stride = walk_strides[c0 + k - 1]
        sums = np.zeros(group_offsets[g + 1] - q0, dtype=np.float64)
        prefix = np.empty((k, row_block), dtype=np.float64)  # prefix[t]: columns < t times h
        index = np.zeros(k, dtype=np.int64)
        dot = np.empty(row_block, dtype=np.float64)
        values = np.empty((max(max_halfspaces, 1), row_block), dtype=np.float64)
        slopes = np.empty_like(values)
        patterns = np.empty((values.shape[0], 2 * _PATTERNS, row_block), dtype=np.float64)
        sig = np.float64(sigma[q0])
        for r0 in range(0, n_rows, row_block):
            nb = min(row_block, n_rows - r0)
            _group_halfspaces(XT, numeric_offset, null_coord, halfspace_offsets, theta_offsets,
                              theta_index, theta_weight, tau, sig, q0, r0, nb, dot, values,
                              slopes, patterns, prefix[0])
            for t in range(k - 1):
                index[t] = 0
                _scale(prefix[t], XT[block_starts[walk_columns[c0 + t]], r0 : r0 + nb], nb,
                       prefix[t + 1])
            base = 0  # the current cell's query less q0 and the last column's term
            while True:
                last = prefix[k - 1]
                for j in range(last_size):
                    source = XT[last_start + j, r0 : r0 + nb]
                    total = 0.0
                    for i in range(nb):
                        total += last[i] * source[i]
                    sums[base + j * last_stride] += total
                t = k - 2  # odometer over the leading columns, last one fastest
                while t >= 0:
                    index[t] += 1
                    base += walk_strides[c0 + t]
                    if index[t] < column_sizes[walk_columns[c0 + t]]:
                        break
                    base -= index[t] * walk_strides[c0 + t]
                    index[t] = 0
                    t -= 1
                if t < 0:
                    break
                for u in range(t, k - 1):
                    c = block_starts[walk_columns[c0 + u]] + index[u]
                    _scale(prefix[u], XT[c, r0 : r0 + nb], nb, prefix[u + 1])
        for j in range(len(sums)):
            out[q0 + j] = sums[j]


@njit(parallel=True, cache=True, fastmath=_REDUCTION_FASTMATH)
def _relaxed_csr_kernel(XT, numeric_offset, null_coord, cat_offsets, cat_coords,
                        halfspace_offsets, theta_offsets, theta_index, theta_weight, tau, sigma,
                        queries, n_chunks, row_block, out):
    """out[q] (row sums) for every q in ``queries``, chunks of queries in parallel."""
    n_rows = XT.shape[1]
    n_items = len(queries)
    for chunk in prange(n_chunks):
        lo = chunk * n_items // n_chunks
        hi = (chunk + 1) * n_items // n_chunks
        sums = np.zeros(hi - lo, dtype=np.float64)
        scratch = np.empty((4, row_block), dtype=np.float64)
        patterns = np.empty((2 * _PATTERNS, row_block), dtype=np.float64)
        for r0 in range(0, n_rows, row_block):
            nb = min(row_block, n_rows - r0)
            for a in range(lo, hi):
                q = queries[a]
                _query_block(XT, numeric_offset, null_coord, cat_offsets, cat_coords,
                             halfspace_offsets, theta_offsets, theta_index, theta_weight, tau,
                             np.float64(sigma[q]), q, r0, nb, scratch[0], scratch[1],
                             scratch[2], scratch[3], patterns)
                product = scratch[0]
                total = 0.0
                for i in range(nb):
                    total += product[i]
                sums[a - lo] += total
        for a in range(lo, hi):
            out[queries[a]] = sums[a - lo]


# -------------------------------------------------------------------------------- gradient
@njit(cache=True)
def _marginal_group_grad(XT, numeric_offset, null_coord, halfspace_offsets, theta_offsets,
                         theta_index, theta_weight, tau, sig, group_offsets, group_column_offsets,
                         walk_columns, walk_strides, column_sizes, block_starts, weights, g, r0, nb,
                         prefix, adjoint, index, dot, values, slopes, patterns, others, null_scratch,
                         grad):
    """grad[:, :nb] += d/dX of sum_q weights[q] * value_q over the cells of group g, on rows
    r0 .. r0 + nb: reverse mode through the prefix products of the forward walk (its column
    order, ``walk_columns``).

    prefix[t] is the product of the halfspace factors and of the probabilities of the walk's
    first t columns at the current cell; adjoint[t] accumulates dL/dprefix[t] until the walk
    moves on to the next category of column t, when it is passed down to level t - 1.
    """
    q0 = group_offsets[g]
    c0 = group_column_offsets[g]
    k = group_column_offsets[g + 1] - c0
    last_start = block_starts[walk_columns[c0 + k - 1]]
    last_size = column_sizes[walk_columns[c0 + k - 1]]
    last_stride = walk_strides[c0 + k - 1]
    _group_halfspaces(XT, numeric_offset, null_coord, halfspace_offsets, theta_offsets,
                      theta_index, theta_weight, tau, sig, q0, r0, nb, dot, values, slopes,
                      patterns, prefix[0])
    adjoint[:k, :nb] = 0.0
    for t in range(k - 1):
        index[t] = 0
        _scale(prefix[t], XT[block_starts[walk_columns[c0 + t]], r0 : r0 + nb], nb, prefix[t + 1])
    base = q0  # the current cell's query less the last column's term
    while True:
        last = prefix[k - 1]
        last_adjoint = adjoint[k - 1]
        for j in range(last_size):
            w = weights[base + j * last_stride]
            source = XT[last_start + j, r0 : r0 + nb]
            target = grad[last_start + j]
            for i in range(nb):
                target[i] += w * last[i]
                last_adjoint[i] += w * source[i]
        t = k - 2
        while t >= 0:
            # level t + 1 (prefix[t] times column t's probability) is done: pass its adjoint on
            c = block_starts[walk_columns[c0 + t]] + index[t]
            upper, lower, below = adjoint[t + 1], adjoint[t], prefix[t]
            source = XT[c, r0 : r0 + nb]
            target = grad[c]
            for i in range(nb):
                target[i] += upper[i] * below[i]
                lower[i] += upper[i] * source[i]
                upper[i] = 0.0
            index[t] += 1
            base += walk_strides[c0 + t]
            if index[t] < column_sizes[walk_columns[c0 + t]]:
                break
            base -= index[t] * walk_strides[c0 + t]
            index[t] = 0
            t -= 1
        if t < 0:
            break
        for u in range(t, k - 1):
            c = block_starts[walk_columns[c0 + u]] + index[u]
            _scale(prefix[u], XT[c, r0 : r0 + nb], nb, prefix[u + 1])
    # adjoint[0] is dL/dh for h = product of the halfspace factors. Hard thresholds have no
    # derivative through the numerics, but a halfspace over nullable columns still has one
    # through its null-code probabilities.
    hard = np.isinf(sig)
    h0 = halfspace_offsets[q0]
    n_halfspaces = halfspace_offsets[q0 + 1] - h0
    head = adjoint[0]
    for i in range(nb):
        others[i] = head[i]  # times the factors before halfspace j
    for j in range(n_halfspaces):
        has_nulls = _null_count(null_coord, theta_offsets, theta_index, h0 + j) > 0
        if has_nulls or not hard:
            slope = slopes[j]
            for i in range(nb):
                dot[i] = others[i] if has_nulls else others[i] * slope[i]
            for l in range(j + 1, n_halfspaces):
                value = values[l]
                for i in range(nb):
                    dot[i] *= value[i]
            if has_nulls:
                _null_halfspace_grad(XT, numeric_offset, null_coord, theta_offsets, theta_index,
                                     theta_weight, tau, h0 + j, sig, dot, r0, nb, patterns[j],
                                     null_scratch, grad)
            else:
                _add_theta(theta_offsets, theta_index, theta_weight, numeric_offset, h0 + j,
                           dot, nb, grad)
        value = values[j]
        for i in range(nb):
            others[i] *= value[i]


@njit(cache=True)
def _add_theta(theta_offsets, theta_index, theta_weight, numeric_offset, h, coefficient, nb, grad):
    """grad[numeric_offset + theta_index[t], :nb] += coefficient * theta_weight[t] over h."""
    for t in range(theta_offsets[h], theta_offsets[h + 1]):
        target = grad[numeric_offset + theta_index[t]]
        weight = np.float64(theta_weight[t])
        for i in range(nb):
            target[i] += coefficient[i] * weight


@njit(cache=True)
def _csr_query_grad(XT, numeric_offset, null_coord, cat_offsets, cat_coords, halfspace_offsets,
                    theta_offsets, theta_index, theta_weight, tau, sig, w, q, r0, nb,
                    factors, slopes, patterns, suffix, prefix, dot, null_scratch, grad):
    """grad[:, :nb] += w * d value_q / dX on rows r0 .. r0 + nb (products of the other
    factors from prefix and suffix products)."""
    n_cat = cat_offsets[q + 1] - cat_offsets[q]
    h0 = halfspace_offsets[q]
    n_factors = n_cat + halfspace_offsets[q + 1] - h0
    for f in range(n_cat):
        source = XT[cat_coords[cat_offsets[q] + f], r0 : r0 + nb]
        factor = factors[f]
        for i in range(nb):
            factor[i] = source[i]
    for f in range(n_cat, n_factors):
        _halfspace_value(XT, numeric_offset, null_coord, theta_offsets, theta_index, theta_weight,
                         tau, h0 + f - n_cat, sig, r0, nb, dot, factors[f], slopes[f], patterns[f])
    suffix[n_factors, :nb] = 1.0
    prefix[:nb] = w
    for f in range(n_factors - 1, -1, -1):
        _scale(suffix[f + 1], factors[f], nb, suffix[f])
    hard = np.isinf(sig)
    for f in range(n_factors):
        after = suffix[f + 1]
        if f < n_cat:
            target = grad[cat_coords[cat_offsets[q] + f]]
            for i in range(nb):
                target[i] += prefix[i] * after[i]
        elif _null_count(null_coord, theta_offsets, theta_index, h0 + f - n_cat) > 0:
            for i in range(nb):
                dot[i] = prefix[i] * after[i]
            _null_halfspace_grad(XT, numeric_offset, null_coord, theta_offsets, theta_index,
                                 theta_weight, tau, h0 + f - n_cat, sig, dot, r0, nb, patterns[f],
                                 null_scratch, grad)
        elif not hard:
            slope = slopes[f]
            for i in range(nb):
                dot[i] = prefix[i] * after[i] * slope[i]
            _add_theta(theta_offsets, theta_index, theta_weight, numeric_offset, h0 + f - n_cat,
                       dot, nb, grad)
        factor = factors[f]
        for i in range(nb):
            prefix[i] *= factor[i]


@njit(parallel=True, cache=True)
def _grad_kernel(XT, numeric_offset, null_coord, cat_offsets, cat_coords, halfspace_offsets,
                 theta_offsets, theta_index, theta_weight, tau, sigma, group_offsets,
                 group_column_offsets, walk_columns, walk_strides, column_sizes, block_starts,
                 groups, queries, weights,
                 max_factors, max_halfspaces, max_group_columns, row_block, grad_out):
    """grad_out[r, :] = sum_q weights[q] d value_q(row r) / d X[r, :], parallel over blocks
    of rows (each block's rows are written by one thread only)."""
    n_coords, n_rows = XT.shape
    n_blocks = (n_rows + row_block - 1) // row_block
    for block in prange(n_blocks):
        r0 = block * row_block
        nb = min(row_block, n_rows - r0)
        grad = np.zeros((n_coords, row_block), dtype=np.float64)
        dot = np.empty(row_block, dtype=np.float64)
        others = np.empty(row_block, dtype=np.float64)
        factors = np.empty((max(max_factors, max_halfspaces, 1), row_block), dtype=np.float64)
        slopes = np.empty_like(factors)
        patterns = np.empty((factors.shape[0], 2 * _PATTERNS, row_block), dtype=np.float64)
        suffix = np.empty((factors.shape[0] + 1, row_block), dtype=np.float64)
        prefix = np.empty((max(max_group_columns, 1), row_block), dtype=np.float64)
        adjoint = np.empty_like(prefix)
        index = np.zeros(max(max_group_columns, 1), dtype=np.int64)
        null_scratch = np.empty((3 + _EXACT_NULLS, row_block), dtype=np.float64)
        for a in range(len(groups)):
            g = groups[a]
            group_sigma = np.float64(sigma[group_offsets[g]])
            _marginal_group_grad(XT, numeric_offset, null_coord, halfspace_offsets,
                                 theta_offsets, theta_index, theta_weight, tau, group_sigma,
                                 group_offsets, group_column_offsets, walk_columns, walk_strides,
                                 column_sizes, block_starts, weights, g, r0, nb, prefix, adjoint, index, dot,
                                 factors, slopes, patterns, others, null_scratch, grad)
        for a in range(len(queries)):
            q = queries[a]
            if weights[q] == 0.0:
                continue
            _csr_query_grad(XT, numeric_offset, null_coord, cat_offsets, cat_coords,
                            halfspace_offsets, theta_offsets, theta_index, theta_weight, tau,
                            np.float64(sigma[q]), weights[q], q, r0, nb, factors, slopes, patterns,
                            suffix, others, dot, null_scratch, grad)
        for i in range(nb):
            for c in range(n_coords):
                grad_out[r0 + i, c] = grad[c, i]


# ---------------------------------------------------------------------------- host side
def _relaxed_sums(XT, queries: QuerySet, sigma, groups, csr) -> np.ndarray:
    """float64[n_queries] row sums of the relaxed queries on ``XT`` (coords x rows)."""
    out = np.zeros(queries.n_queries, dtype=np.float64)
    if len(groups):
        _relaxed_marginal_kernel(
            XT, queries.numeric_offset, queries.null_coord, queries.halfspace_offsets,
            queries.theta_offsets,
            queries.theta_index, queries.theta_weight, queries.tau, sigma, queries.group_offsets,
            queries.group_column_offsets, *_walk_order(queries), queries.column_sizes,
            _block_starts(queries), groups, _max_halfspaces(queries), _RELAXED_ROW_BLOCK, out,
        )
    if len(csr):
        _relaxed_csr_kernel(
            XT, queries.numeric_offset, queries.null_coord, queries.cat_offsets, queries.cat_coords,
            queries.halfspace_offsets, queries.theta_offsets, queries.theta_index,
            queries.theta_weight, queries.tau, sigma, csr, _n_chunks(len(csr)),
            _RELAXED_ROW_BLOCK, out,
        )
    return out


def _gradient(XT, queries: QuerySet, sigma, groups, csr, weights, grad) -> None:
    """grad (float64[rows, coords], written) = sum over ``groups`` and ``csr`` of weights[q]
    (float64[n_queries]) times d value_q / dX on ``XT`` (coords x rows)."""
    n_factors = np.diff(queries.cat_offsets) + np.diff(queries.halfspace_offsets)
    _grad_kernel(
        XT, queries.numeric_offset, queries.null_coord, queries.cat_offsets, queries.cat_coords,
        queries.halfspace_offsets, queries.theta_offsets, queries.theta_index,
        queries.theta_weight, queries.tau, sigma, queries.group_offsets,
        queries.group_column_offsets, *_walk_order(queries), queries.column_sizes,
        _block_starts(queries), groups, csr, weights, int(n_factors.max(initial=0)),
        _max_halfspaces(queries), int(np.diff(queries.group_column_offsets).max(initial=0)),
        _grad_row_block(XT.shape[1]), grad,
    )


def _grad_row_block(n_rows: int) -> int:
    """Rows per gradient block: at least 4 blocks per thread when rows allow, 16 .. 128."""
    per_block = -(-n_rows // (4 * numba.get_num_threads()))
    return int(min(_RELAXED_ROW_BLOCK, max(16, -(-per_block // 8) * 8)))


def _relaxed(X, queries: QuerySet, sigma, targets, *, structured: bool = True, query_weights=None):
    """(float64 answers, loss, gradient or None) on checked inputs; ``query_weights``
    (float64[n_queries] or None) weigh each squared residual."""
    groups, csr = _plan(queries, sigma, structured)
    XT = np.ascontiguousarray(X.T)
    answers = _relaxed_sums(XT, queries, sigma, groups, csr) / X.shape[0]
    if targets is None:
        return answers, None, None
    residual = answers - targets
    if query_weights is not None:
        loss = float(np.sum(query_weights * residual * residual))
        weights = 2.0 * query_weights * residual / X.shape[0]
    else:
        loss = float(np.sum(residual * residual))
        weights = 2.0 * residual / X.shape[0]
    grad = np.empty_like(X)
    _gradient(XT, queries, sigma, groups, csr, weights, grad)
    return answers, loss, grad
