"""CPU kernels: Numba ``@njit(parallel=True, cache=True)`` over the CSR query layout.

Same three functions and signatures as ``reference`` (design.md §6). Each public function
checks its inputs once on the host, transposes the data so that rows are the contiguous
(vectorised) axis, allocates the outputs and calls pure kernels:

- ``answers_exact`` counts a whole *marginal group* in one pass over the rows (a histogram of
  the cell index, weighted by the group's shared halfspace indicator), parallel over groups;
  other queries take the general CSR loop, parallel over chunks of queries, tiled over blocks
  of rows so that a block stays in cache for the whole chunk. Queries that read the same
  few columns (the linear thresholds and mixed marginals of a table with few numeric columns)
  are counted over those columns' distinct values, each weighted by the rows that hold it
  (:mod:`polars_rap.kernels.distinct_rows`): the same integer counts, far fewer evaluations.
- ``answers_relaxed`` walks each marginal group's cells in row-major order, multiplying one
  column's probabilities into a running prefix product per level (the "structured" path: no
  per-query index loads, one multiply-add per cell and row); other queries take the CSR loop.
  Parallel over groups and over chunks of queries.
- ``loss_and_grad`` runs ``answers_relaxed``, then the gradient parallel over blocks of rows
  (one thread owns a block's rows, so no two threads write one row). For a marginal group the
  gradient is reverse-mode through the same prefix products; for a CSR query it is the
  product of the other factors from prefix and suffix products (never a division).

A halfspace over nullable numeric columns is the expectation over their null indicators
(``polars_rap.queries``): ``_halfspace_value`` sums the null patterns of its first
``EXACT_NULLABLE_PER_HALFSPACE`` nullable columns (further ones at their expected value
``(1 - q) x``), and ``_null_halfspace_grad``
recomputes them in the backward pass (derivatives with respect to the numerics and to the
null-code probabilities). A halfspace without nullable columns takes the plain path, unchanged.

Halfspace dot products are accumulated in float64, term by term, without fast-math, exactly as
in ``reference``: hard thresholds agree to the bit. Only the row sums of the relaxed answers
use the ``reassoc`` flag, so that they vectorise.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from polars_rap.errors import ParameterError
from polars_rap.kernels._checks import (
    check_queries,
    check_real_data,
    check_relaxed_call,
    check_weights,
    checked,
    mark_checked,
)
from polars_rap.kernels.distinct_rows import distinct_rows, footprint_plan
from polars_rap.queries import EXACT_NULLABLE_PER_HALFSPACE, QuerySet

__all__ = ["answers_exact", "answers_relaxed", "loss_and_grad"]

#: Rows per block in the relaxed kernels (float64 scratch vectors of this length).
_RELAXED_ROW_BLOCK = 128
#: Rows per block in the exact kernels.
_EXACT_ROW_BLOCK = 1024
#: Fast-math flags of the kernels whose only float reductions are row sums.
_REDUCTION_FASTMATH = {"reassoc"}
#: Work chunks per thread in the CSR loops (load balance against scratch reuse).
_CHUNKS_PER_THREAD = 8
#: Nullable columns of a halfspace summed over their null patterns (a compile-time constant).
_EXACT_NULLS = EXACT_NULLABLE_PER_HALFSPACE


# --------------------------------------------------------------------------- shared helpers
@njit(cache=True)
def _first_bad_marginal_group(
    cat_offsets, cat_coords, halfspace_offsets, theta_offsets, theta_index, theta_weight, tau,
    group_offsets, group_column_offsets, group_columns, coord_column, coord_code, column_sizes,
):
    """Index of the first marginal group whose queries are not all the cells of its columns
    in row-major order with the halfspaces of its first query, or -1."""
    for g in range(len(group_offsets) - 1):
        c0, c1 = group_column_offsets[g], group_column_offsets[g + 1]
        if c1 == c0:
            continue
        q0, q1 = group_offsets[g], group_offsets[g + 1]
        n_cells = 1
        for t in range(c0, c1):
            n_cells *= column_sizes[group_columns[t]]
            for u in range(t + 1, c1):
                if group_columns[u] == group_columns[t]:
                    return g
        if q1 - q0 != n_cells:
            return g
        h0 = halfspace_offsets[q0]
        n_halfspaces = halfspace_offsets[q0 + 1] - h0
        for q in range(q0, q1):
            if cat_offsets[q + 1] - cat_offsets[q] != c1 - c0:
                return g
            rest = q - q0
            for t in range(c1 - 1, c0 - 1, -1):  # unravel, last column fastest
                column = group_columns[t]
                code = rest % column_sizes[column]
                rest //= column_sizes[column]
                found = 0
                for p in range(cat_offsets[q], cat_offsets[q + 1]):
                    if coord_column[cat_coords[p]] == column:
                        if coord_code[cat_coords[p]] != code:
                            return g
                        found += 1
                if found != 1:
                    return g
            hq = halfspace_offsets[q]
            if halfspace_offsets[q + 1] - hq != n_halfspaces:
                return g
            for i in range(n_halfspaces):
                a, b = h0 + i, hq + i
                length = theta_offsets[a + 1] - theta_offsets[a]
                if tau[a] != tau[b] or theta_offsets[b + 1] - theta_offsets[b] != length:
                    return g
                for u in range(length):
                    ta, tb = theta_offsets[a] + u, theta_offsets[b] + u
                    if theta_index[ta] != theta_index[tb] or theta_weight[ta] != theta_weight[tb]:
                        return g
    return -1


@njit(cache=True)
def _halfspace_dot(values_t, row_offset, theta_offsets, theta_index, theta_weight, h, r0, nb, dot):
    """dot[:nb] = theta_h . x for rows r0 .. r0 + nb, float64, term by term (no fast-math:
    the rounding must match ``reference`` exactly)."""
    for i in range(nb):
        dot[i] = 0.0
    for t in range(theta_offsets[h], theta_offsets[h + 1]):
        weight = np.float64(theta_weight[t])
        source = values_t[row_offset + theta_index[t], r0 : r0 + nb]
        for i in range(nb):
            dot[i] += weight * np.float64(source[i])


@njit(cache=True, inline="always")
def _sigmoid(z):
    """1 / (1 + e^-z) for a float64 ``z``, without overflow at either end."""
    e = np.exp(-abs(z))
    return (1.0 if z >= 0.0 else e) / (1.0 + e)


@njit(cache=True)
def _halfspace_factor(dot, tau, sigma, nb, value, slope):
    """value = s(sigma (tau - dot)) and slope = d value / d dot = -sigma s (1 - s); with
    ``sigma == inf`` the hard indicator 1[tau - dot >= 0] and a zero slope."""
    if np.isinf(sigma):
        for i in range(nb):
            value[i] = 1.0 if tau - dot[i] >= 0.0 else 0.0
            slope[i] = 0.0
    else:
        for i in range(nb):
            z = sigma * (tau - dot[i])
            s = _sigmoid(z)
            value[i] = s
            slope[i] = -sigma * s * (1.0 - s)


@njit(cache=True)
def _null_count(null_coord, theta_offsets, theta_index, h):
    """Number of nullable numeric columns halfspace h reads; the first ``_EXACT_NULLS`` of
    them make its null patterns."""
    count = 0
    for t in range(theta_offsets[h], theta_offsets[h + 1]):
        if null_coord[theta_index[t]] >= 0:
            count += 1
    return count


@njit(cache=True)
def _pattern_dot(XT, numeric_offset, null_coord, theta_offsets, theta_index, theta_weight, h,
                 mask, r0, nb, dot):
    """dot[:nb] = theta_h . x with the nullable entries whose bit is set in ``mask`` left out
    (x_j := 0) and those past the first ``_EXACT_NULLS`` nullable ones at ``(1 - q_j) x_j``,
    term by term as ``_halfspace_dot`` (which it equals for ``mask == 0`` and at most
    ``_EXACT_NULLS`` nullable entries)."""
    for i in range(nb):
        dot[i] = 0.0
    k = 0
    for t in range(theta_offsets[h], theta_offsets[h + 1]):
        weight = np.float64(theta_weight[t])
        source = XT[numeric_offset + theta_index[t], r0 : r0 + nb]
        coord = null_coord[theta_index[t]]
        if coord >= 0:
            k += 1
            if k > _EXACT_NULLS:  # expected value
                q = XT[coord, r0 : r0 + nb]
                for i in range(nb):
                    dot[i] += weight * ((1.0 - np.float64(q[i])) * np.float64(source[i]))
                continue
            if (mask >> (k - 1)) & 1:
                continue
        for i in range(nb):
            dot[i] += weight * np.float64(source[i])


@njit(cache=True)
def _pattern_weight(XT, null_coord, theta_offsets, theta_index, h, mask, left_out, r0, nb, out):
    """out[:nb] = prod over the pattern-making nullable entries k != left_out of halfspace h
    (the first ``_EXACT_NULLS``) of q_k (bit k of ``mask`` set: null) or 1 - q_k;
    ``left_out = -1`` gives the pattern's probability, and ``left_out = k`` its derivative
    with respect to q_k up to the sign (+ if bit k is set)."""
    for i in range(nb):
        out[i] = 1.0
    k = 0
    for t in range(theta_offsets[h], theta_offsets[h + 1]):
        coord = null_coord[theta_index[t]]
        if coord < 0:
            continue
        if k == _EXACT_NULLS:
            break
        if k != left_out:
            source = XT[coord, r0 : r0 + nb]
            if (mask >> k) & 1:
                for i in range(nb):
                    out[i] *= np.float64(source[i])
            else:
                for i in range(nb):
                    out[i] *= 1.0 - np.float64(source[i])
        k += 1


@njit(cache=True)
def _halfspace_value(XT, numeric_offset, null_coord, theta_offsets, theta_index, theta_weight,
                     tau, h, sigma, r0, nb, dot, value, slope):
    """value[:nb] = relaxed factor of halfspace h on rows r0 .. r0 + nb. Without nullable
    columns: s(sigma (tau - theta . x)), with its slope in slope[:nb]. With them: the sum over
    null patterns of their probability times the pattern's s; slope[:nb] is scratch then (the
    gradient recomputes the patterns: ``_null_halfspace_grad``). Returns the null count."""
    n_null = _null_count(null_coord, theta_offsets, theta_index, h)
    threshold = np.float64(tau[h])
    if n_null == 0:
        _halfspace_dot(XT, numeric_offset, theta_offsets, theta_index, theta_weight, h, r0, nb, dot)
        _halfspace_factor(dot, threshold, sigma, nb, value, slope)
        return 0
    hard = np.isinf(sigma)
    for i in range(nb):
        value[i] = 0.0
    for mask in range(1 << min(n_null, _EXACT_NULLS)):
        _pattern_dot(XT, numeric_offset, null_coord, theta_offsets, theta_index, theta_weight, h,
                     mask, r0, nb, dot)
        _pattern_weight(XT, null_coord, theta_offsets, theta_index, h, mask, -1, r0, nb, slope)
        for i in range(nb):
            if hard:
                s = 1.0 if threshold - dot[i] >= 0.0 else 0.0
            else:
                s = _sigmoid(sigma * (threshold - dot[i]))
            value[i] += slope[i] * s
    return n_null


@njit(cache=True)
def _null_halfspace_grad(XT, numeric_offset, null_coord, theta_offsets, theta_index,
                         theta_weight, tau, h, sigma, coefficient, r0, nb, scratch, grad):
    """grad[:, :nb] += coefficient * d value_h / dX for a halfspace h over nullable columns
    (value as in ``_halfspace_value``), pattern by pattern: each pattern's probability times
    its slope times theta for the entries it keeps, and its s times the derivative of its
    probability for each pattern-making null-code coordinate (also at sigma = inf, where the
    value is linear in those probabilities); an entry at its expected value ``(1 - q) x``
    gets the slope times theta times ``1 - q`` (numeric) and ``-x`` (null code), not at
    sigma = inf. ``scratch``: float64[3, >= nb]."""
    n_null = _null_count(null_coord, theta_offsets, theta_index, h)
    hard = np.isinf(sigma)
    threshold = np.float64(tau[h])
    s_values, chance, term = scratch[0], scratch[1], scratch[2]
    for mask in range(1 << min(n_null, _EXACT_NULLS)):
        _pattern_dot(XT, numeric_offset, null_coord, theta_offsets, theta_index, theta_weight, h,
                     mask, r0, nb, s_values)
        _pattern_weight(XT, null_coord, theta_offsets, theta_index, h, mask, -1, r0, nb, chance)
        for i in range(nb):
            if hard:
                s_values[i] = 1.0 if threshold - s_values[i] >= 0.0 else 0.0
                term[i] = 0.0
            else:
                s = _sigmoid(sigma * (threshold - s_values[i]))
                s_values[i] = s
                term[i] = coefficient[i] * chance[i] * (-sigma * s * (1.0 - s))
        k = 0
        for t in range(theta_offsets[h], theta_offsets[h + 1]):
            coord = null_coord[theta_index[t]]
            weight = np.float64(theta_weight[t])
            x_target = grad[numeric_offset + theta_index[t]]
            if coord >= 0 and k >= _EXACT_NULLS:  # at its expected value (1 - q) x
                if not hard:
                    x = XT[numeric_offset + theta_index[t], r0 : r0 + nb]
                    q = XT[coord, r0 : r0 + nb]
                    q_target = grad[coord]
                    for i in range(nb):
                        x_target[i] += term[i] * weight * (1.0 - np.float64(q[i]))
                        q_target[i] += term[i] * weight * -np.float64(x[i])
                k += 1
                continue
            is_null = False
            if coord >= 0:
                is_null = ((mask >> k) & 1) == 1
                _pattern_weight(XT, null_coord, theta_offsets, theta_index, h, mask, k, r0, nb,
                                chance)
                q_target = grad[coord]
                sign = 1.0 if is_null else -1.0
                for i in range(nb):
                    q_target[i] += sign * coefficient[i] * s_values[i] * chance[i]
                k += 1
            if not hard and not is_null:
                for i in range(nb):
                    x_target[i] += term[i] * weight


@njit(cache=True)
def _query_block(XT, numeric_offset, null_coord, cat_offsets, cat_coords, halfspace_offsets,
                 theta_offsets, theta_index, theta_weight, tau, sigma, q, r0, nb, product, dot,
                 value, slope):
    """product[:nb] = relaxed value of query q on rows r0 .. r0 + nb."""
    for i in range(nb):
        product[i] = 1.0
    for p in range(cat_offsets[q], cat_offsets[q + 1]):
        source = XT[cat_coords[p], r0 : r0 + nb]
        for i in range(nb):
            product[i] *= source[i]
    for h in range(halfspace_offsets[q], halfspace_offsets[q + 1]):
        _halfspace_value(XT, numeric_offset, null_coord, theta_offsets, theta_index, theta_weight,
                         tau, h, sigma, r0, nb, dot, value, slope)
        for i in range(nb):
            product[i] *= value[i]


@njit(cache=True)
def _scale(a, b, nb, out):
    """out[:nb] = a[:nb] * b[:nb] (float64)."""
    for i in range(nb):
        out[i] = a[i] * np.float64(b[i])


@njit(cache=True)
def _group_halfspaces(XT, numeric_offset, null_coord, halfspace_offsets, theta_offsets,
                      theta_index, theta_weight, tau, sigma, q0, r0, nb, dot, values, slopes,
                      product):
    """Factors of the halfspaces of query q0 into values[h]/slopes[h]; their product."""
    for i in range(nb):
        product[i] = 1.0
    h0 = halfspace_offsets[q0]
    for j in range(halfspace_offsets[q0 + 1] - h0):
        value = values[j]
        _halfspace_value(XT, numeric_offset, null_coord, theta_offsets, theta_index,
                         theta_weight, tau, h0 + j, sigma, r0, nb, dot, value, slopes[j])
        for i in range(nb):
            product[i] *= value[i]


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
    counts ``weights[r]`` times (int64)."""
    n_rows = codes_t.shape[1]
    n_items = len(queries)
    for chunk in prange(n_chunks):
        lo = chunk * n_items // n_chunks
        hi = (chunk + 1) * n_items // n_chunks
        counts = np.zeros(hi - lo, dtype=np.int64)
        keep = np.empty(row_block, dtype=np.uint8)
        dot = np.empty(row_block, dtype=np.float64)
        for r0 in range(0, n_rows, row_block):
            nb = min(row_block, n_rows - r0)
            for a in range(lo, hi):
                q = queries[a]
                for i in range(nb):
                    keep[i] = 1
                for p in range(cat_offsets[q], cat_offsets[q + 1]):
                    source = codes_t[coord_column[cat_coords[p]], r0 : r0 + nb]
                    code = coord_code[cat_coords[p]]
                    for i in range(nb):
                        keep[i] &= source[i] == code
                for h in range(halfspace_offsets[q], halfspace_offsets[q + 1]):
                    _halfspace_dot(numerics_t, 0, theta_offsets, theta_index, theta_weight, h,
                                   r0, nb, dot)
                    threshold = np.float64(tau[h])
                    for i in range(nb):
                        keep[i] &= dot[i] <= threshold
                total = 0
                for i in range(nb):
                    total += keep[i] * weights[r0 + i]
                counts[a - lo] += total
        for a in range(lo, hi):
            out[queries[a]] = counts[a - lo]


# ------------------------------------------------------------------------- relaxed answers
@njit(parallel=True, cache=True, fastmath=_REDUCTION_FASTMATH)
def _relaxed_marginal_kernel(XT, numeric_offset, null_coord, halfspace_offsets, theta_offsets,
                             theta_index, theta_weight, tau, sigma, group_offsets, group_column_offsets,
                             group_columns, column_sizes, block_starts, groups, max_halfspaces,
                             row_block, out):
    """out[q] (row sums) for every query of ``groups``, walking each group's cells in
    row-major order with one running prefix product per group column."""
    n_rows = XT.shape[1]
    for a in prange(len(groups)):
        g = groups[a]
        q0 = group_offsets[g]
        c0 = group_column_offsets[g]
        k = group_column_offsets[g + 1] - c0
        last_start = block_starts[group_columns[c0 + k - 1]]
        last_size = column_sizes[group_columns[c0 + k - 1]]
        sums = np.zeros(group_offsets[g + 1] - q0, dtype=np.float64)
        prefix = np.empty((k, row_block), dtype=np.float64)  # prefix[t]: columns < t times h
        index = np.zeros(k, dtype=np.int64)
        dot = np.empty(row_block, dtype=np.float64)
        values = np.empty((max(max_halfspaces, 1), row_block), dtype=np.float64)
        slopes = np.empty_like(values)
        sig = np.float64(sigma[q0])
        for r0 in range(0, n_rows, row_block):
            nb = min(row_block, n_rows - r0)
            _group_halfspaces(XT, numeric_offset, null_coord, halfspace_offsets, theta_offsets,
                              theta_index, theta_weight, tau, sig, q0, r0, nb, dot, values,
                              slopes, prefix[0])
            for t in range(k - 1):
                index[t] = 0
                _scale(prefix[t], XT[block_starts[group_columns[c0 + t]], r0 : r0 + nb], nb,
                       prefix[t + 1])
            base = 0
            while True:
                last = prefix[k - 1]
                for j in range(last_size):
                    source = XT[last_start + j, r0 : r0 + nb]
                    total = 0.0
                    for i in range(nb):
                        total += last[i] * source[i]
                    sums[base + j] += total
                base += last_size
                t = k - 2  # odometer over the leading columns, last one fastest
                while t >= 0:
                    index[t] += 1
                    if index[t] < column_sizes[group_columns[c0 + t]]:
                        break
                    index[t] = 0
                    t -= 1
                if t < 0:
                    break
                for u in range(t, k - 1):
                    c = block_starts[group_columns[c0 + u]] + index[u]
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
        for r0 in range(0, n_rows, row_block):
            nb = min(row_block, n_rows - r0)
            for a in range(lo, hi):
                q = queries[a]
                _query_block(XT, numeric_offset, null_coord, cat_offsets, cat_coords,
                             halfspace_offsets, theta_offsets, theta_index, theta_weight, tau,
                             np.float64(sigma[q]), q, r0, nb, scratch[0], scratch[1],
                             scratch[2], scratch[3])
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
                         group_columns, column_sizes, block_starts, weights, g, r0, nb,
                         prefix, adjoint, index, dot, values, slopes, others, null_scratch, grad):
    """grad[:, :nb] += d/dX of sum_q weights[q] * value_q over the cells of group g, on rows
    r0 .. r0 + nb: reverse mode through the prefix products of the forward walk.

    prefix[t] is the product of the halfspace factors and of the probabilities of the group's
    first t columns at the current cell; adjoint[t] accumulates dL/dprefix[t] until the walk
    moves on to the next category of column t, when it is passed down to level t - 1.
    """
    q0 = group_offsets[g]
    c0 = group_column_offsets[g]
    k = group_column_offsets[g + 1] - c0
    last_start = block_starts[group_columns[c0 + k - 1]]
    last_size = column_sizes[group_columns[c0 + k - 1]]
    _group_halfspaces(XT, numeric_offset, null_coord, halfspace_offsets, theta_offsets,
                      theta_index, theta_weight, tau, sig, q0, r0, nb, dot, values, slopes,
                      prefix[0])
    adjoint[:k, :nb] = 0.0
    for t in range(k - 1):
        index[t] = 0
        _scale(prefix[t], XT[block_starts[group_columns[c0 + t]], r0 : r0 + nb], nb, prefix[t + 1])
    base = q0
    while True:
        last = prefix[k - 1]
        last_adjoint = adjoint[k - 1]
        for j in range(last_size):
            w = weights[base + j]
            source = XT[last_start + j, r0 : r0 + nb]
            target = grad[last_start + j]
            for i in range(nb):
                target[i] += w * last[i]
                last_adjoint[i] += w * source[i]
        base += last_size
        t = k - 2
        while t >= 0:
            # level t + 1 (prefix[t] times column t's probability) is done: pass its adjoint on
            c = block_starts[group_columns[c0 + t]] + index[t]
            upper, lower, below = adjoint[t + 1], adjoint[t], prefix[t]
            source = XT[c, r0 : r0 + nb]
            target = grad[c]
            for i in range(nb):
                target[i] += upper[i] * below[i]
                lower[i] += upper[i] * source[i]
                upper[i] = 0.0
            index[t] += 1
            if index[t] < column_sizes[group_columns[c0 + t]]:
                break
            index[t] = 0
            t -= 1
        if t < 0:
            break
        for u in range(t, k - 1):
            c = block_starts[group_columns[c0 + u]] + index[u]
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
                                     theta_weight, tau, h0 + j, sig, dot, r0, nb, null_scratch,
                                     grad)
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
                    factors, slopes, suffix, prefix, dot, null_scratch, grad):
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
                         tau, h0 + f - n_cat, sig, r0, nb, dot, factors[f], slopes[f])
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
                                 theta_weight, tau, h0 + f - n_cat, sig, dot, r0, nb,
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
                 group_column_offsets,
                 group_columns, column_sizes, block_starts, groups, queries, weights,
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
        suffix = np.empty((factors.shape[0] + 1, row_block), dtype=np.float64)
        prefix = np.empty((max(max_group_columns, 1), row_block), dtype=np.float64)
        adjoint = np.empty_like(prefix)
        index = np.zeros(max(max_group_columns, 1), dtype=np.int64)
        null_scratch = np.empty((3, row_block), dtype=np.float64)
        for a in range(len(groups)):
            g = groups[a]
            group_sigma = np.float64(sigma[group_offsets[g]])
            _marginal_group_grad(XT, numeric_offset, null_coord, halfspace_offsets,
                                 theta_offsets, theta_index, theta_weight, tau, group_sigma,
                                 group_offsets, group_column_offsets, group_columns, column_sizes,
                                 block_starts, weights, g, r0, nb, prefix, adjoint, index, dot,
                                 factors, slopes, others, null_scratch, grad)
        for a in range(len(queries)):
            q = queries[a]
            if weights[q] == 0.0:
                continue
            _csr_query_grad(XT, numeric_offset, null_coord, cat_offsets, cat_coords,
                            halfspace_offsets, theta_offsets, theta_index, theta_weight, tau,
                            np.float64(sigma[q]), weights[q], q, r0, nb, factors, slopes, suffix,
                            others, dot, null_scratch, grad)
        for i in range(nb):
            for c in range(n_coords):
                grad_out[r0 + i, c] = grad[c, i]


# ---------------------------------------------------------------------------- host wrappers
def _plan(queries: QuerySet, sigma: np.ndarray | None, structured: bool):
    """(marginal groups to walk as a whole, remaining queries for the CSR loop), int64 each.

    A marginal group is walked as a whole only when its structure checks out and (for relaxed
    kernels) all its queries share one sigma; otherwise its queries go through CSR.
    """
    marginal = np.diff(queries.group_column_offsets) > 0
    if not structured:
        marginal[:] = False
    if marginal.any() and not checked(queries, "marginal_groups"):
        bad = _first_bad_marginal_group(
            queries.cat_offsets, queries.cat_coords, queries.halfspace_offsets,
            queries.theta_offsets, queries.theta_index, queries.theta_weight, queries.tau,
            queries.group_offsets, queries.group_column_offsets, queries.group_columns,
            queries.coord_column, queries.coord_code, queries.column_sizes,
        )
        if bad >= 0:
            msg = (
                f"marginal group {bad} does not match its group_columns: a marginal group must "
                "hold every cell of its columns, in row-major order, all sharing the halfspaces "
                "of its first query; build it with polars_rap.workload or leave its "
                "group_columns empty"
            )
            raise ParameterError(msg)
        mark_checked(queries, "marginal_groups")
    if marginal.any() and sigma is not None:
        group_of_query = queries.group_of_query()
        first = queries.group_offsets[:-1][group_of_query]
        mixed = np.unique(group_of_query[sigma != sigma[first]])
        marginal[mixed] = False
    groups = np.flatnonzero(marginal).astype(np.int64)
    csr = np.flatnonzero(~np.repeat(marginal, queries.group_sizes)).astype(np.int64)
    return groups, csr


def _n_chunks(n_items: int) -> int:
    return max(1, min(n_items, _CHUNKS_PER_THREAD * numba.get_num_threads()))


def _block_starts(queries: QuerySet) -> np.ndarray:
    sizes = queries.column_sizes.astype(np.int64)
    return np.cumsum(sizes) - sizes


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


def _relaxed_sums(XT, queries: QuerySet, sigma, groups, csr) -> np.ndarray:
    """float64[n_queries] row sums of the relaxed queries on ``XT`` (coords x rows)."""
    out = np.zeros(queries.n_queries, dtype=np.float64)
    if len(groups):
        _relaxed_marginal_kernel(
            XT, queries.numeric_offset, queries.null_coord, queries.halfspace_offsets,
            queries.theta_offsets,
            queries.theta_index, queries.theta_weight, queries.tau, sigma, queries.group_offsets,
            queries.group_column_offsets, queries.group_columns, queries.column_sizes,
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


def _max_halfspaces(queries: QuerySet) -> int:
    return int(np.diff(queries.halfspace_offsets).max(initial=0))


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
    n_factors = np.diff(queries.cat_offsets) + np.diff(queries.halfspace_offsets)
    _grad_kernel(
        XT, queries.numeric_offset, queries.null_coord, queries.cat_offsets, queries.cat_coords,
        queries.halfspace_offsets, queries.theta_offsets, queries.theta_index,
        queries.theta_weight, queries.tau, sigma, queries.group_offsets,
        queries.group_column_offsets, queries.group_columns, queries.column_sizes,
        _block_starts(queries), groups, csr, weights, int(n_factors.max(initial=0)),
        _max_halfspaces(queries), int(np.diff(queries.group_column_offsets).max(initial=0)),
        _grad_row_block(X.shape[0]), grad,
    )
    return answers, loss, grad


def answers_exact(codes: np.ndarray, numerics: np.ndarray, queries: QuerySet) -> np.ndarray:
    """Exact answers (hard thresholds) of every query on real data.

    Parameters
    ----------
    codes : int32[n_rows, n_categorical_columns]
        Category code of each row in each categorical column.
    numerics : float64[n_rows, n_numeric]
        Numeric values scaled to ``[0, 1]``.
    queries : QuerySet

    Returns
    -------
    float64[n_queries]
        Fraction of rows satisfying each query.
    """
    check_queries(queries)
    codes, numerics = check_real_data(codes, numerics, queries)
    return _exact_counts(codes, numerics, queries) / codes.shape[0]


def answers_relaxed(X: np.ndarray, queries: QuerySet, sigma: np.ndarray | float) -> np.ndarray:
    """Relaxed answers (sigmoid thresholds) of every query on a relaxed matrix.

    Parameters
    ----------
    X : float32[n_rows, n_coords] (or float64)
        Category probabilities, then numerics at ``numeric_offset + j``.
    queries : QuerySet
    sigma : float32[n_queries] or scalar
        Inverse temperature of each query; ``inf`` means hard thresholds.

    Returns
    -------
    float32[n_queries]
        Mean over rows of each relaxed query (accumulated in float64).
    """
    X, sigma, _ = check_relaxed_call(X, queries, sigma)
    if queries.n_queries == 0:
        return np.zeros(0, dtype=np.float32)
    answers, _, _ = _relaxed(X, queries, sigma, None)
    return answers.astype(np.float32)


def loss_and_grad(
    X: np.ndarray, queries: QuerySet, targets: np.ndarray, sigma: np.ndarray | float,
    weights: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """Weighted squared-error loss of the relaxed answers and its gradient with respect to ``X``.

    ``L = sum_q w_q (answers_relaxed_q - targets_q) ** 2`` (``w_q = 1`` when ``weights`` is None).

    Parameters
    ----------
    X : float32[n_rows, n_coords] (or float64)
    queries : QuerySet
    targets : float64[n_queries]
    sigma : float32[n_queries] or scalar
    weights : float64[n_queries], optional
        Non-negative weight of each query's squared residual.

    Returns
    -------
    (float, ndarray)
        The loss, and ``dL/dX`` with the dtype and shape of ``X``.
    """
    X, sigma, targets = check_relaxed_call(X, queries, sigma, targets)
    query_weights = None if weights is None else check_weights(weights, queries.n_queries)
    if queries.n_queries == 0:
        return 0.0, np.zeros_like(X)
    _, loss, grad = _relaxed(X, queries, sigma, targets, query_weights=query_weights)
    return loss, grad
