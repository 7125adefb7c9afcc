"""The relaxed-data CUDA kernels, built per compile-time sizes (design.md §6).

``_relaxed_kernels(threads_per_block, real, max_factors)`` builds (once per combination: numba
cannot size arrays at run time) the relaxed sums, the residuals and loss partials, the
gradient and the Adam step, in the precision ``real`` of the relaxed factors; the host side
(:mod:`polars_rap.kernels.cuda`) launches them. How each one divides the work is in that
module's docstring.
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numba
from numba import cuda

from polars_rap.kernels import cuda_config
from polars_rap.kernels.cuda_device import (
    _EXACT_NULLS,
    _STEP,
    _STOPPED,
    _gpu_adam_value,
    _gpu_fast_exp32,
    _gpu_margin,
    _gpu_null_count,
    _gpu_pattern_margin,
    _gpu_pattern_weight,
)


@functools.lru_cache(maxsize=None)
def _relaxed_kernels(threads_per_block: int, real, max_factors: int) -> SimpleNamespace:
    """The kernels whose compile-time constants vary: ``threads_per_block`` sizes the shared
    arrays of the tree reductions, ``real`` (``numba.float32`` or ``numba.float64``) is the
    compute precision of the relaxed factors, ``max_factors`` sizes the per-thread scratch of
    the gradient. Built once per combination (numba.cuda cannot size arrays at run time)."""
    one = real(1.0)
    zero = real(0.0)
    # exp(-88) is below float32's smallest normal; past it the sigmoid is saturated anyway.
    # Clamping keeps infinities out of the float32 path.
    z_limit = 88.0 if real == numba.float32 else 700.0
    exp = _gpu_fast_exp32 if (real == numba.float32 and cuda_config.FAST_EXP_FLOAT32) else math.exp
    scratch = max(1, max_factors)
    scratch_and_one = scratch + 1  # array sizes must be closure constants, not expressions
    relaxed_fastmath = cuda_config.FASTMATH["relaxed"]
    projection_fastmath = cuda_config.FASTMATH["projection"]

    @cuda.jit(device=True)
    def _gpu_threshold(margin, sig):
        """(value, d value / d (theta . x)) of a halfspace factor; ``sig == 0`` encodes a
        hard threshold (sigma = inf): the indicator of ``margin >= 0`` and a zero slope."""
        if sig == 0.0:
            return (one if margin >= 0.0 else zero), zero
        z64 = sig * margin
        if z64 > z_limit:
            z64 = z_limit
        elif z64 < -z_limit:
            z64 = -z_limit
        z = real(z64)
        e = exp(-abs(z))
        denominator = one + e
        s = (one if z >= zero else e) / denominator
        # s (1 - s) = e / (1 + e)^2 for either sign of z: in float32, 1 - s would round to 0
        # past |z| ~ 17 and lose the small slopes that Adam's normalisation still follows
        return s, real(-sig) * (e / (denominator * denominator))

    @cuda.jit(device=True)
    def _gpu_halfspace_value(XT, r, h, numeric_offset, theta_offsets, theta_index, theta_weight,
                             tau, null_coord, sig):
        """(value, slope) of halfspace ``h`` on row ``r``: ``_gpu_threshold`` of its margin
        without nullable columns; with them, the sum over null patterns of probability times
        value, and a zero slope (``_gpu_null_halfspace_grad`` gives its gradient)."""
        n_null = _gpu_null_count(null_coord, theta_offsets, theta_index, h)
        if n_null == 0:
            margin = _gpu_margin(XT, r, h, numeric_offset, theta_offsets, theta_index,
                                 theta_weight, tau)
            return _gpu_threshold(margin, sig)
        value = zero
        n_exact = n_null if n_null < _EXACT_NULLS else _EXACT_NULLS
        for mask in range(1 << n_exact):
            margin = _gpu_pattern_margin(XT, r, h, numeric_offset, null_coord, theta_offsets,
                                         theta_index, theta_weight, tau, mask)
            s, _ = _gpu_threshold(margin, sig)
            weight = _gpu_pattern_weight(XT, r, h, null_coord, theta_offsets, theta_index, mask, -1)
            value += real(weight) * s
        return value, zero

    @cuda.jit(device=True)
    def _gpu_null_halfspace_grad(XT, r, h, numeric_offset, theta_offsets, theta_index,
                                 theta_weight, tau, null_coord, sig, coefficient, grad_slices,
                                 slice_index):
        """grad_slices[slice_index, :, r] += coefficient * d value_h / d XT[:, r] for a
        halfspace over nullable columns, pattern by pattern: probability x slope x theta for
        the entries it keeps (not at sigma = inf), and value x d probability / d q_k for each
        pattern-making null-code coordinate (also at sigma = inf: the value is linear in those
        q_k); an entry at its expected value ``(1 - q) x`` gets slope x theta x ``(1 - q)``
        (numeric) and ``-x`` (null code), not at sigma = inf."""
        n_null = _gpu_null_count(null_coord, theta_offsets, theta_index, h)
        n_exact = n_null if n_null < _EXACT_NULLS else _EXACT_NULLS
        for mask in range(1 << n_exact):
            margin = _gpu_pattern_margin(XT, r, h, numeric_offset, null_coord, theta_offsets,
                                         theta_index, theta_weight, tau, mask)
            s, slope = _gpu_threshold(margin, sig)
            weight = _gpu_pattern_weight(XT, r, h, null_coord, theta_offsets, theta_index, mask, -1)
            term = coefficient * real(weight) * slope
            k = 0
            for t in range(theta_offsets[h], theta_offsets[h + 1]):
                coord = null_coord[theta_index[t]]
                if coord >= 0 and k >= _EXACT_NULLS:  # at its expected value (1 - q) x
                    if sig != 0.0:
                        change = term * real(theta_weight[t])
                        x_coord = numeric_offset + theta_index[t]
                        grad_slices[slice_index, x_coord, r] += change * (one - real(XT[coord, r]))
                        grad_slices[slice_index, coord, r] += change * -real(XT[x_coord, r])
                    k += 1
                    continue
                is_null = False
                if coord >= 0:
                    is_null = ((mask >> k) & 1) == 1
                    others = _gpu_pattern_weight(XT, r, h, null_coord, theta_offsets,
                                                 theta_index, mask, k)
                    change = coefficient * s * real(others)
                    grad_slices[slice_index, coord, r] += change if is_null else -change
                    k += 1
                if sig != 0.0 and not is_null:
                    coord = numeric_offset + theta_index[t]
                    grad_slices[slice_index, coord, r] += term * real(theta_weight[t])

    @cuda.jit(device=True)
    def _gpu_block_sum(shared, value):
        """Sum of ``value`` over the block (tree reduction; every thread gets the total)."""
        tid = cuda.threadIdx.x
        shared[tid] = value
        cuda.syncthreads()
        stride = threads_per_block // 2
        while stride > 0:
            if tid < stride:
                shared[tid] += shared[tid + stride]
            cuda.syncthreads()
            stride //= 2
        total = shared[0]
        cuda.syncthreads()  # shared may be reused right after
        return total

    @cuda.jit(fastmath=relaxed_fastmath)
    def _relaxed_sums_kernel(XT, n_rows, n_queries, numeric_offset, cat_offsets, cat_coords,
                             halfspace_offsets, theta_offsets, theta_index, theta_weight, tau,
                             null_coord, sigma, partials, halt):
        """partials[segment, q] = sum over the segment's rows of the relaxed value of q."""
        if halt[0] != 0.0:
            return
        shared = cuda.shared.array(threads_per_block, dtype=numba.float64)
        tid = cuda.threadIdx.x
        segment = cuda.blockIdx.y
        segment_rows = (n_rows + cuda.gridDim.y - 1) // cuda.gridDim.y
        r_lo = segment * segment_rows
        r_hi = r_lo + segment_rows if r_lo + segment_rows <= n_rows else n_rows
        for q in range(cuda.blockIdx.x, n_queries, cuda.gridDim.x):
            sig = numba.float64(sigma[q])
            total = 0.0
            c0 = cat_offsets[q]
            n_cat = cat_offsets[q + 1] - c0
            h0 = halfspace_offsets[q]
            h1 = halfspace_offsets[q + 1]
            if h0 == h1 and n_cat <= 3:  # a marginal cell: its coordinates read once
                a = cat_coords[c0] if n_cat > 0 else 0
                b = cat_coords[c0 + 1] if n_cat > 1 else 0
                c = cat_coords[c0 + 2] if n_cat > 2 else 0
                for r in range(r_lo + tid, r_hi, threads_per_block):
                    value = one  # the generic loop's products, in its order
                    if n_cat > 0:
                        value *= real(XT[a, r])
                    if n_cat > 1:
                        value *= real(XT[b, r])
                    if n_cat > 2:
                        value *= real(XT[c, r])
                    total += numba.float64(value)
            else:
                plain = True  # no halfspace over nullable columns: no null patterns per row
                for h in range(h0, h1):
                    if _gpu_null_count(null_coord, theta_offsets, theta_index, h) > 0:
                        plain = False
                for r in range(r_lo + tid, r_hi, threads_per_block):
                    value = one
                    for p in range(c0, c0 + n_cat):
                        value *= real(XT[cat_coords[p], r])
                    for h in range(h0, h1):
                        if plain:
                            margin = _gpu_margin(XT, r, h, numeric_offset, theta_offsets,
                                                 theta_index, theta_weight, tau)
                            factor, _ = _gpu_threshold(margin, sig)
                        else:
                            factor, _ = _gpu_halfspace_value(
                                XT, r, h, numeric_offset, theta_offsets, theta_index,
                                theta_weight, tau, null_coord, sig)
                        value *= factor
                    total += numba.float64(value)
            total = _gpu_block_sum(shared, total)
            if tid == 0:
                partials[segment, q] = total

    @cuda.jit(fastmath=relaxed_fastmath)
    def _residual_kernel(partials, n_rows, n_queries, targets, query_weights, round_to_float32,
                         answers, weights, loss_partials, halt):
        """answers[q] = mean of q (segments added in order); weights[q] = dL/d answer / n =
        2 w_q (answer - target) / n; loss_partials[block] = this block's sum of weighted
        squared residuals ``w_q (answer - target)**2``. ``round_to_float32``: round answers to float32 first, as the exact loss
        of ``projection.project`` does."""
        if halt[0] != 0.0:
            return
        shared = cuda.shared.array(threads_per_block, dtype=numba.float64)
        n_segments = partials.shape[0]
        total = 0.0
        for q in range(cuda.grid(1), n_queries, cuda.gridsize(1)):
            row_sum = 0.0
            for s in range(n_segments):
                row_sum += partials[s, q]
            answer = row_sum / n_rows
            if round_to_float32:
                answer = numba.float64(numba.float32(answer))
            residual = answer - targets[q]
            answers[q] = answer
            weights[q] = 2.0 * query_weights[q] * residual / n_rows
            total += query_weights[q] * residual * residual
        total = _gpu_block_sum(shared, total)
        if cuda.threadIdx.x == 0:
            loss_partials[cuda.blockIdx.x] = total

    @cuda.jit(fastmath=relaxed_fastmath)
    def _grad_kernel(XT, n_rows, n_queries, numeric_offset, cat_offsets, cat_coords,
                     halfspace_offsets, theta_offsets, theta_index, theta_weight, tau, null_coord,
                     sigma, weights, grad_slices, halt):
        """grad_slices[s, :, r] = sum over the queries q of slice s of
        weights[q] * d value_q(row r) / d XT[:, r]; one thread per (slice, row)."""
        if halt[0] != 0.0:
            return
        factors = cuda.local.array(scratch, dtype=real)
        slopes = cuda.local.array(scratch, dtype=real)
        suffix = cuda.local.array(scratch_and_one, dtype=real)
        n_slices, n_coords = grad_slices.shape[0], grad_slices.shape[1]
        for item in range(cuda.grid(1), n_slices * n_rows, cuda.gridsize(1)):
            s = item // n_rows
            r = item - s * n_rows
            for c in range(n_coords):
                grad_slices[s, c, r] = zero
            for q in range(s * n_queries // n_slices, (s + 1) * n_queries // n_slices):
                weight = weights[q]
                if weight == 0.0:
                    continue
                sig = numba.float64(sigma[q])
                c0 = cat_offsets[q]
                n_cat = cat_offsets[q + 1] - c0
                h0 = halfspace_offsets[q]
                n_halfspaces = halfspace_offsets[q + 1] - h0
                # the common shapes in registers, the same products in the same order as
                # the prefix/suffix walk below: a marginal cell of at most three factors ...
                if n_halfspaces == 0 and 0 < n_cat <= 3:
                    a = cat_coords[c0]
                    x_a = real(XT[a, r])
                    if n_cat == 1:
                        grad_slices[s, a, r] += real(weight)
                        continue
                    b = cat_coords[c0 + 1]
                    x_b = real(XT[b, r])
                    if n_cat == 2:
                        grad_slices[s, a, r] += real(weight) * x_b
                        grad_slices[s, b, r] += real(weight) * x_a
                        continue
                    c = cat_coords[c0 + 2]
                    x_c = real(XT[c, r])
                    grad_slices[s, a, r] += real(weight) * (x_b * x_c)
                    grad_slices[s, b, r] += (real(weight) * x_a) * x_c
                    grad_slices[s, c, r] += (real(weight) * x_a) * x_b
                    continue
                # ... and a class-conditional threshold: at most one factor, one plain halfspace
                if (n_halfspaces == 1 and n_cat <= 1
                        and _gpu_null_count(null_coord, theta_offsets, theta_index, h0) == 0):
                    x_a = one
                    if n_cat == 1:
                        a = cat_coords[c0]
                        x_a = real(XT[a, r])
                    margin = _gpu_margin(XT, r, h0, numeric_offset, theta_offsets, theta_index,
                                         theta_weight, tau)
                    value, slope = _gpu_threshold(margin, sig)
                    if n_cat == 1:
                        grad_slices[s, a, r] += real(weight) * value
                    if sig != 0.0:
                        coefficient = (real(weight) * x_a) * slope
                        for t in range(theta_offsets[h0], theta_offsets[h0 + 1]):
                            coord = numeric_offset + theta_index[t]
                            grad_slices[s, coord, r] += coefficient * real(theta_weight[t])
                    continue
                n_factors = n_cat + n_halfspaces
                for f in range(n_cat):
                    factors[f] = real(XT[cat_coords[c0 + f], r])
                for f in range(n_cat, n_factors):
                    factors[f], slopes[f] = _gpu_halfspace_value(
                        XT, r, h0 + f - n_cat, numeric_offset, theta_offsets, theta_index,
                        theta_weight, tau, null_coord, sig)
                suffix[n_factors] = one
                for f in range(n_factors - 1, -1, -1):
                    suffix[f] = suffix[f + 1] * factors[f]
                prefix = real(weight)  # times the factors before f
                for f in range(n_factors):
                    others = prefix * suffix[f + 1]
                    h = h0 + f - n_cat
                    if f < n_cat:
                        coord = cat_coords[c0 + f]
                        grad_slices[s, coord, r] += others
                    elif _gpu_null_count(null_coord, theta_offsets, theta_index, h) > 0:
                        _gpu_null_halfspace_grad(XT, r, h, numeric_offset, theta_offsets,
                                                 theta_index, theta_weight, tau, null_coord, sig,
                                                 others, grad_slices, s)
                    elif sig != 0.0:
                        coefficient = others * slopes[f]
                        for t in range(theta_offsets[h], theta_offsets[h + 1]):
                            coord = numeric_offset + theta_index[t]
                            grad_slices[s, coord, r] += coefficient * real(theta_weight[t])
                    prefix *= factors[f]

    @cuda.jit(fastmath=projection_fastmath)
    def _adam_kernel(params, relaxed, grad, first, second, block_starts, n_blocks,
                     numeric_offset, state, beta1, beta2, learning_rate, adam_epsilon,
                     norm_partials):
        """Chain rule through the block softmax (``p (g - sum_block p g)``, identity for
        numerics), one Adam step, numerics clipped to [0, 1]; norm_partials[block] = this
        block's sum of squared parameter gradients. One thread per row; float32 storage and
        float64 math in the operation order of ``projection._adam_step``."""
        if state[_STOPPED] != 0.0:
            return
        shared = cuda.shared.array(threads_per_block, dtype=numba.float64)
        t = state[_STEP] + 1.0
        correction1 = 1.0 - beta1**t
        correction2 = 1.0 - beta2**t
        n_coords, n_rows = params.shape
        norm2 = 0.0
        for r in range(cuda.grid(1), n_rows, cuda.gridsize(1)):
            for b in range(n_blocks):
                start = block_starts[b]
                stop = block_starts[b + 1] if b + 1 < n_blocks else numeric_offset
                inner = 0.0
                for c in range(start, stop):
                    inner += relaxed[c, r] * grad[c, r]  # float32 product, float64 sum
                for c in range(start, stop):
                    g = relaxed[c, r] * (grad[c, r] - inner)
                    norm2 += g * g
                    params[c, r] = _gpu_adam_value(params, first, second, c, r, g, beta1,
                                                   beta2, correction1, correction2,
                                                   learning_rate, adam_epsilon)
            for c in range(numeric_offset, n_coords):
                g = numba.float64(grad[c, r])
                norm2 += g * g
                value = _gpu_adam_value(params, first, second, c, r, g, beta1, beta2,
                                        correction1, correction2, learning_rate, adam_epsilon)
                if value < 0.0:  # clipped to [0, 1]
                    value = 0.0
                elif value > 1.0:
                    value = 1.0
                params[c, r] = value
        norm2 = _gpu_block_sum(shared, norm2)
        if cuda.threadIdx.x == 0:
            norm_partials[cuda.blockIdx.x] = norm2

    return SimpleNamespace(
        relaxed_sums=_relaxed_sums_kernel,
        residual=_residual_kernel,
        grad=_grad_kernel,
        adam=_adam_kernel,
    )
