"""Shared pieces of the CPU kernels (:mod:`polars_rap.kernels.cpu`): the block sizes, the
Numba helpers that evaluate one halfspace (plain, over null patterns, and its gradient) and one
query's factors, and the host-side plan that splits a workload into marginal groups (walked
as a whole) and single queries (the CSR loop).

Halfspace dot products are accumulated in float64, term by term, without fast-math, exactly as
in ``reference``: hard thresholds agree to the bit. The null patterns of a halfspace over
nullable columns share one such dot product (:func:`_null_patterns`).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit

from polars_rap.errors import ParameterError
from polars_rap.kernels._checks import checked, mark_checked
from polars_rap.workload.queries import EXACT_NULLABLE_PER_HALFSPACE, QuerySet

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
#: Null patterns of one halfspace at most: ``patterns`` scratch holds each one's s in rows
#: ``0 .. _PATTERNS`` and its probability in rows ``_PATTERNS .. 2 * _PATTERNS``.
_PATTERNS = 1 << EXACT_NULLABLE_PER_HALFSPACE


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
                 mask, r0, nb, dot, magnitude):
    """dot[:nb] = theta_h . x with the nullable entries whose bit is set in ``mask`` left out
    (x_j := 0) and those past the first ``_EXACT_NULLS`` nullable ones at ``(1 - q_j) x_j``,
    term by term as ``_halfspace_dot`` (which it equals for ``mask == 0`` and at most
    ``_EXACT_NULLS`` nullable entries). Unless ``magnitude`` is empty, magnitude[:nb] = the
    sum of the same terms' absolute values (:func:`_rounding_factor`)."""
    track = len(magnitude) > 0
    for i in range(nb):
        dot[i] = 0.0
        if track:
            magnitude[i] = 0.0
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
                    term = weight * ((1.0 - np.float64(q[i])) * np.float64(source[i]))
                    dot[i] += term
                    if track:
                        magnitude[i] += abs(term)
                continue
            if (mask >> (k - 1)) & 1:
                continue
        for i in range(nb):
            term = weight * np.float64(source[i])
            dot[i] += term
            if track:
                magnitude[i] += abs(term)


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
def _null_patterns(XT, numeric_offset, null_coord, theta_offsets, theta_index, theta_weight, tau, h,
                   sigma, r0, nb, dot, patterns):
    """For each null pattern ``m`` of halfspace h over nullable columns (a bit mask over its
    first ``_EXACT_NULLS`` nullable entries) on rows r0 .. r0 + nb: ``patterns[m]`` = its s
    (the indicator at ``sigma == inf``) and ``patterns[_PATTERNS + m]`` its probability.
    Returns the number of patterns.

    The dot product of the pattern without nulls is taken once, term by term, into ``dot``;
    each other pattern's is that minus the terms of the entries it leaves out (a few
    subtractions instead of a whole dot product per pattern). Relaxed thresholds take their s
    from it (differing from the term-by-term s in the last bits). Hard ones must agree with
    ``reference`` to the bit: where the threshold lies within the two sums' rounding bound of
    the shortcut's dot product (:func:`_rounding_factor` times the sum of |terms|), the row's
    indicator comes from the term-by-term dot product (``_pattern_dot`` of that row alone).
    The probabilities come last (:func:`_pattern_weights`)."""
    n_patterns = 1 << min(_null_count(null_coord, theta_offsets, theta_index, h), _EXACT_NULLS)
    threshold = np.float64(tau[h])
    hard = np.isinf(sigma)
    magnitude = patterns[_PATTERNS]  # sum of |terms| per row; mask 0's probability row, written last
    _pattern_dot(XT, numeric_offset, null_coord, theta_offsets, theta_index, theta_weight, h, 0, r0, nb, dot,
                 magnitude if hard else magnitude[:0])
    bound = _rounding_factor(theta_offsets, h)
    for mask in range(n_patterns - 1, -1, -1):
        s_values = patterns[mask]  # the pattern's dot product first, then its s
        for i in range(nb):
            s_values[i] = dot[i]
        k = 0
        for t in range(theta_offsets[h], theta_offsets[h + 1]):
            if null_coord[theta_index[t]] < 0:
                continue
            if k == _EXACT_NULLS:
                break
            if (mask >> k) & 1:
                weight = np.float64(theta_weight[t])
                source = XT[numeric_offset + theta_index[t], r0 : r0 + nb]
                for i in range(nb):
                    s_values[i] -= weight * np.float64(source[i])
            k += 1
        if hard:
            for i in range(nb):
                margin = threshold - s_values[i]
                if mask and abs(margin) <= bound * magnitude[i]:  # rare: this row term by term
                    exact = np.empty(1, dtype=np.float64)
                    _pattern_dot(XT, numeric_offset, null_coord, theta_offsets, theta_index, theta_weight, h,
                                 mask, r0 + i, 1, exact, exact[:0])
                    margin = threshold - exact[0]
                s_values[i] = 1.0 if margin >= 0.0 else 0.0
        else:
            for i in range(nb):
                s_values[i] = _sigmoid(sigma * (threshold - s_values[i]))
    _pattern_weights(XT, null_coord, theta_offsets, theta_index, h, r0, nb, patterns[_PATTERNS:])
    return n_patterns


@njit(cache=True)
def _pattern_weights(XT, null_coord, theta_offsets, theta_index, h, r0, nb, out):
    """out[m, :nb] = ``_pattern_weight`` of every null pattern m of halfspace h, to the bit:
    each the same product, factor by factor in the entries' order, built by doubling (entry
    k splits every pattern of the first k entries in two: times q_k, with bit k set, and times
    1 - q_k) in two multiplies per pattern rather than one per entry."""
    for i in range(nb):
        out[0, i] = 1.0
    k = 0
    for t in range(theta_offsets[h], theta_offsets[h + 1]):
        coord = null_coord[theta_index[t]]
        if coord < 0:
            continue
        if k == _EXACT_NULLS:
            break
        source = XT[coord, r0 : r0 + nb]
        half = 1 << k
        for m in range(half):
            kept, null = out[m], out[m + half]
            for i in range(nb):
                q = np.float64(source[i])
                null[i] = kept[i] * q
                kept[i] = kept[i] * (1.0 - q)
        k += 1


@njit(cache=True)
def _rounding_factor(theta_offsets, h):
    """The factor ``c`` such that any null pattern's dot product of halfspace h, taken as the
    dot product without nulls minus the pattern's left-out terms, lies within ``c`` times the
    sum of the absolute terms (``_pattern_dot``'s ``magnitude``, mask 0) of the same taken term
    by term.

    With n terms, u = 2^-53 and gamma_m = m u / (1 - m u): the term-by-term sum is within
    gamma_(n+2) of the exact one times the sum of |terms| (a product, an expected value's two
    products, then the n additions), and the shortcut, at most ``_EXACT_NULLS`` more products
    and subtractions, within gamma_(n+2+2 _EXACT_NULLS) of it; the sum of both bounds, doubled
    for the rounding of the sum of |terms| itself, is below ``c = 4 (n + 2 + 2 _EXACT_NULLS) u``."""
    n_terms = theta_offsets[h + 1] - theta_offsets[h]
    return 4.0 * (n_terms + 2 + 2 * _EXACT_NULLS) * 2.0**-53


@njit(cache=True)
def _halfspace_value(XT, numeric_offset, null_coord, theta_offsets, theta_index, theta_weight,
                     tau, h, sigma, r0, nb, dot, value, slope, patterns):
    """value[:nb] = relaxed factor of halfspace h on rows r0 .. r0 + nb. Without nullable
    columns: s(sigma (tau - theta . x)), with its slope in slope[:nb]. With them: the sum over
    null patterns of their probability times the pattern's s, each pattern's s and
    probability left in ``patterns`` (float64[2 * _PATTERNS, >= nb], :func:`_null_patterns`)
    for the gradient (``_null_halfspace_grad``); slope[:nb] is then unused. Returns the null
    count."""
    n_null = _null_count(null_coord, theta_offsets, theta_index, h)
    if n_null == 0:
        _halfspace_dot(XT, numeric_offset, theta_offsets, theta_index, theta_weight, h, r0, nb, dot)
        _halfspace_factor(dot, np.float64(tau[h]), sigma, nb, value, slope)
        return 0
    for i in range(nb):
        value[i] = 0.0
    for mask in range(_null_patterns(XT, numeric_offset, null_coord, theta_offsets, theta_index,
                                     theta_weight, tau, h, sigma, r0, nb, dot, patterns)):
        chance, s_values = patterns[_PATTERNS + mask], patterns[mask]
        for i in range(nb):
            value[i] += chance[i] * s_values[i]
    return n_null


@njit(cache=True)
def _null_halfspace_grad(XT, numeric_offset, null_coord, theta_offsets, theta_index,
                         theta_weight, tau, h, sigma, coefficient, r0, nb, patterns, scratch, grad):
    """grad[:, :nb] += coefficient * d value_h / dX for a halfspace h over nullable columns
    (value as in ``_halfspace_value``, whose ``patterns`` of the same rows it reads: each null
    pattern's s and probability).

    The numerics: with ``term_m`` = coefficient times pattern m's probability times its slope,
    an entry gets theta times the sum of ``term_m`` over the patterns that keep it (all of them
    for a column without nulls; those with its bit clear for a pattern-making one), and an
    entry at its expected value ``(1 - q) x`` gets that sum times theta times ``1 - q``, and
    ``-x`` on its null code; nothing at sigma = inf. The null codes that make the patterns:
    each pattern's s times the derivative of its probability (also at sigma = inf, where the
    value is linear in those probabilities). ``scratch``: float64[3 + _EXACT_NULLS, >= nb]."""
    n_exact = min(_null_count(null_coord, theta_offsets, theta_index, h), _EXACT_NULLS)
    n_patterns = 1 << n_exact
    hard = np.isinf(sigma)
    derivative, term, every = scratch[0], scratch[1], scratch[2]
    if not hard:  # the sums of term_m: over every pattern, and over those keeping entry k
        for i in range(nb):
            every[i] = 0.0
        for k in range(n_exact):
            kept = scratch[3 + k]
            for i in range(nb):
                kept[i] = 0.0
        for mask in range(n_patterns):
            s_values, chance = patterns[mask], patterns[_PATTERNS + mask]
            for i in range(nb):
                s = s_values[i]
                term[i] = coefficient[i] * chance[i] * (-sigma * s * (1.0 - s))
                every[i] += term[i]
            for k in range(n_exact):
                if not (mask >> k) & 1:
                    kept = scratch[3 + k]
                    for i in range(nb):
                        kept[i] += term[i]
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
                    x_target[i] += every[i] * weight * (1.0 - np.float64(q[i]))
                    q_target[i] += every[i] * weight * -np.float64(x[i])
            k += 1
            continue
        if coord < 0:
            if not hard:
                for i in range(nb):
                    x_target[i] += every[i] * weight
            continue
        q_target = grad[coord]
        for mask in range(n_patterns):
            _pattern_weight(XT, null_coord, theta_offsets, theta_index, h, mask, k, r0, nb, derivative)
            s_values = patterns[mask]
            sign = 1.0 if (mask >> k) & 1 else -1.0
            for i in range(nb):
                q_target[i] += sign * coefficient[i] * s_values[i] * derivative[i]
        if not hard:
            kept = scratch[3 + k]
            for i in range(nb):
                x_target[i] += kept[i] * weight
        k += 1


@njit(cache=True)
def _query_block(XT, numeric_offset, null_coord, cat_offsets, cat_coords, halfspace_offsets,
                 theta_offsets, theta_index, theta_weight, tau, sigma, q, r0, nb, product, dot,
                 value, slope, patterns):
    """product[:nb] = relaxed value of query q on rows r0 .. r0 + nb (``patterns``: scratch as
    ``_halfspace_value``'s)."""
    for i in range(nb):
        product[i] = 1.0
    for p in range(cat_offsets[q], cat_offsets[q + 1]):
        source = XT[cat_coords[p], r0 : r0 + nb]
        for i in range(nb):
            product[i] *= source[i]
    for h in range(halfspace_offsets[q], halfspace_offsets[q + 1]):
        _halfspace_value(XT, numeric_offset, null_coord, theta_offsets, theta_index, theta_weight,
                         tau, h, sigma, r0, nb, dot, value, slope, patterns)
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
                      patterns, product):
    """Factors of the halfspaces of query q0 into values[h]/slopes[h] (and the null patterns
    of a halfspace over nullable columns into patterns[h]); their product."""
    for i in range(nb):
        product[i] = 1.0
    h0 = halfspace_offsets[q0]
    for j in range(halfspace_offsets[q0 + 1] - h0):
        value = values[j]
        _halfspace_value(XT, numeric_offset, null_coord, theta_offsets, theta_index,
                         theta_weight, tau, h0 + j, sigma, r0, nb, dot, value, slopes[j], patterns[j])
        for i in range(nb):
            product[i] *= value[i]


# ---------------------------------------------------------------------------- host plan
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
                "of its first query; build it with polars_rap.workload.builders or leave its "
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


def _walk_order(queries: QuerySet) -> tuple[np.ndarray, np.ndarray]:
    """(int32 columns, int64 strides)[nnz_group_columns]: each marginal group's columns in the
    order its cells are walked, smallest column first (ties in the group's order), and each
    one's stride in the group's row-major cell order.

    The walk's innermost loop runs over the last column's categories, and every category of
    the columns before it costs a pass over the rows (a prefix product; in the gradient an
    adjoint pass too): with the largest column last, a class-conditional marginal (two
    features and a binary label, label last) walks its cells in runs of a feature's size
    instead of runs of two.
    """
    return _walk_order_kernel(queries.group_column_offsets, queries.group_columns, queries.column_sizes)


@njit(cache=True)
def _walk_order_kernel(group_column_offsets, group_columns, column_sizes):
    walk_columns = np.empty(len(group_columns), dtype=np.int32)
    walk_strides = np.empty(len(group_columns), dtype=np.int64)
    for g in range(len(group_column_offsets) - 1):
        c0, c1 = group_column_offsets[g], group_column_offsets[g + 1]
        stride = 1
        for t in range(c1 - 1, c0 - 1, -1):
            walk_columns[t] = group_columns[t]
            walk_strides[t] = stride
            stride *= column_sizes[group_columns[t]]
        for t in range(c0 + 1, c1):  # insertion sort by size, stable
            column, column_stride = walk_columns[t], walk_strides[t]
            u = t - 1
            while u >= c0 and column_sizes[walk_columns[u]] > column_sizes[column]:
                walk_columns[u + 1] = walk_columns[u]
                walk_strides[u + 1] = walk_strides[u]
                u -= 1
            walk_columns[u + 1] = column
            walk_strides[u + 1] = column_stride
    return walk_columns, walk_strides


def _max_halfspaces(queries: QuerySet) -> int:
    return int(np.diff(queries.halfspace_offsets).max(initial=0))
