"""CUDA kernels: hand-written ``numba.cuda`` kernels over the CSR query layout (design.md §6).

Same three functions and signatures as ``reference`` and ``cpu``, plus ``device_fit``: the
primitives (:mod:`polars_rap.kernels.cuda_fit`) with which ``projection.project`` runs its Adam
loop on the device:

- ``answers_exact`` (real data): :mod:`polars_rap.kernels.cuda_exact` (a histogram pass per
  marginal group, a tiled rows x queries kernel for the other queries).
- ``answers_relaxed``: one block per query (grid x, grid-stride), its threads striding over
  the relaxed rows of one row segment (grid y); a tree reduction per block and one partial
  sum per (segment, query), added in order by the residual kernel, which also forms the loss
  terms and the weights ``2 (answer - target) / n`` of the gradient. A marginal cell (at
  most three categorical factors, no halfspace) reads its coordinates once, not per row.
- ``loss_and_grad``: the answers above, then one thread per (query slice, relaxed row): it
  walks the queries of its slice, multiplies prefix and suffix products of the factors (the
  product of the *other* factors, never a division) and adds them into a private gradient
  slice; the slices are added in order afterwards. No atomics: every result is deterministic.
  The halfspace derivative is ``-sigma s (1 - s) theta``, with ``s (1 - s)`` computed as
  ``e / (1 + e)^2``, ``e = exp(-|z|)``, which keeps small slopes that ``1 - s`` would round
  away in float32.

A halfspace over nullable numeric columns is the expectation over their null indicators
(``polars_rap.queries``): ``_gpu_halfspace_value`` sums its null patterns (bit masks over its
first ``EXACT_NULLABLE_PER_HALFSPACE`` nullable entries, each a dot product with those entries
left out and any further nullable entry at ``(1 - q) x``, weighted by the pattern's
probability from the null-code coordinates), and ``_gpu_null_halfspace_grad`` recomputes them
for the gradient with respect to the numerics and the null-code probabilities. A halfspace
without nullable columns takes the plain path, unchanged.

The relaxed matrix lives on the device transposed, ``XT`` = ``[n_coords, n_rows]``, so that
threads of a warp (consecutive rows) read and write consecutive addresses.

Numerics follow ``reference``: every halfspace dot product is accumulated in float64, term by
term, with a multiply that is never fused into an FMA (``libdevice.dmul_rn``), so hard
thresholds agree with the reference to the bit. Sigmoids, products and gradients run in the
precision of ``X`` (float32 normally; float64 ``X`` gives float64 kernels, which the
finite-difference tests use); row sums and losses are float64. Compile-time sizes (threads
per block of the shared reduction arrays, the most factors of a query in the local scratch)
and the compute precision are baked in by ``_relaxed_kernels``, a cached factory.

``device_fit`` keeps the parameters, Adam moments and a small state vector (step counts, stage
best, stop flag) on the device; the plateau and gradient-norm tests run there after every
step, and the host reads the state every ``PROJECTION_CHECK_EVERY`` steps. The kernels know the
query contract and the Adam arithmetic, never the projection's schedule (its stages and
best-iterate rule live in ``projection.project``).

Launch sizes and math flags live in ``cuda_config``, read at launch. Kernels never validate:
the host wrappers run the checks of ``_checks`` first. Kernels use comparisons, not the
``min``/``max`` builtins, which numba 0.68's built-in CUDA target fails to type ("Signature
mismatch"). Importing this module needs no GPU; kernels compile on first use.
``is_available`` is False under the simulator, so ``backend="auto"`` never picks it; the
tests run the kernels there on purpose.
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numba
import numpy as np
from numba import cuda

from polars_rap.errors import ParameterError
from polars_rap.kernels import cuda_config
from polars_rap.kernels._checks import (
    check_queries,
    check_real_data,
    check_relaxed_call,
    check_weights,
)
from polars_rap.queries import EXACT_NULLABLE_PER_HALFSPACE, QuerySet

__all__ = ["answers_exact", "answers_relaxed", "is_available", "loss_and_grad", "device_fit"]

_SIMULATED = bool(numba.config.ENABLE_CUDASIM)
#: Nullable columns of a halfspace summed over their null patterns (a compile-time constant).
_EXACT_NULLS = EXACT_NULLABLE_PER_HALFSPACE


def is_available() -> bool:
    """True when a real CUDA GPU can run these kernels.

    False under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), which runs them correctly but
    thousands of times slower, so that ``backend="auto"`` never picks it.
    """
    if _SIMULATED:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:  # a broken driver install reads as "no GPU", never as a crash
        return False


# ------------------------------------------------------------------------- device helpers
if _SIMULATED:
    # The simulator has no libdevice; Python floats never fuse a multiply-add anyway.
    @cuda.jit(device=True)
    def _gpu_mul_rn(a, b):
        return a * b

    @cuda.jit(device=True)
    def _gpu_fast_exp32(x):
        return math.exp(x)

else:
    from numba.cuda import libdevice

    @cuda.jit(device=True)
    def _gpu_mul_rn(a, b):
        """a * b in float64, rounded on its own: never merged into an FMA."""
        return libdevice.dmul_rn(a, b)

    @cuda.jit(device=True)
    def _gpu_fast_exp32(x):
        return libdevice.fast_expf(x)


@cuda.jit(device=True)
def _gpu_margin(values, r, h, column_start, theta_offsets, theta_index, theta_weight, tau):
    """float64 ``tau_h - theta_h . x`` of row (column) ``r`` of a coords-major array,
    accumulated term by term from 0.0 in the stored order, as ``reference`` does."""
    dot = 0.0
    for t in range(theta_offsets[h], theta_offsets[h + 1]):
        x = numba.float64(values[column_start + theta_index[t], r])
        dot += _gpu_mul_rn(numba.float64(theta_weight[t]), x)
    return numba.float64(tau[h]) - dot


@cuda.jit(device=True)
def _gpu_null_count(null_coord, theta_offsets, theta_index, h):
    """Number of nullable numeric columns halfspace ``h`` reads (the first ``_EXACT_NULLS``
    make its null patterns)."""
    count = 0
    for t in range(theta_offsets[h], theta_offsets[h + 1]):
        if null_coord[theta_index[t]] >= 0:
            count += 1
    return count


@cuda.jit(device=True)
def _gpu_pattern_margin(values, r, h, column_start, null_coord, theta_offsets, theta_index,
                        theta_weight, tau, mask):
    """``_gpu_margin`` with the nullable entries whose bit is set in ``mask`` left out
    (x_j := 0) and those past the first ``_EXACT_NULLS`` at ``(1 - q_j) x_j``, in the same
    order: equal to it for ``mask == 0`` and at most ``_EXACT_NULLS`` nullable entries."""
    dot = 0.0
    k = 0
    for t in range(theta_offsets[h], theta_offsets[h + 1]):
        x = numba.float64(values[column_start + theta_index[t], r])
        coord = null_coord[theta_index[t]]
        if coord >= 0:
            k += 1
            if k > _EXACT_NULLS:  # expected value
                x = (1.0 - numba.float64(values[coord, r])) * x
            elif (mask >> (k - 1)) & 1:
                continue
        dot += _gpu_mul_rn(numba.float64(theta_weight[t]), x)
    return numba.float64(tau[h]) - dot


@cuda.jit(device=True)
def _gpu_pattern_weight(values, r, h, null_coord, theta_offsets, theta_index, mask, left_out):
    """float64 product over the pattern-making nullable entries ``k != left_out`` of
    halfspace ``h`` (the first ``_EXACT_NULLS``) of ``q_k`` (bit ``k`` of ``mask`` set: null)
    or ``1 - q_k``: the pattern's probability for ``left_out = -1``, its derivative in
    ``q_k`` up to the sign for ``left_out = k``."""
    weight = 1.0
    k = 0
    for t in range(theta_offsets[h], theta_offsets[h + 1]):
        coord = null_coord[theta_index[t]]
        if coord < 0:
            continue
        if k == _EXACT_NULLS:
            break
        if k != left_out:
            q = numba.float64(values[coord, r])
            if (mask >> k) & 1:
                weight *= q
            else:
                weight *= 1.0 - q
        k += 1
    return weight


@cuda.jit(device=True)
def _gpu_adam_value(params, first, second, c, r, g, beta1, beta2, correction1, correction2,
                    learning_rate, adam_epsilon):
    """Adam moments of parameter ``[c, r]`` updated in place (float32 storage, float64
    math, the moments read back after rounding, as ``projection._adam_step``); returns the
    new parameter value in float64, before any clipping."""
    first[c, r] = beta1 * numba.float64(first[c, r]) + (1.0 - beta1) * g
    second[c, r] = beta2 * numba.float64(second[c, r]) + (1.0 - beta2) * g * g
    update = (numba.float64(first[c, r]) / correction1) / (
        math.sqrt(numba.float64(second[c, r]) / correction2) + adam_epsilon)
    return numba.float64(params[c, r]) - learning_rate * update


# ------------------------------------------------------------------------- fixed kernels
@cuda.jit(fastmath=cuda_config.FASTMATH["relaxed"])
def _sum_slices_kernel(grad_slices, out, halt):
    """out[c, r] = sum over slices s of grad_slices[s, c, r], in slice order (float64).
    ``out`` may be ``grad_slices[0]``: each element is read before it is written."""
    if halt[0] != 0.0:
        return
    n_slices, n_coords, n_rows = grad_slices.shape
    for e in range(cuda.grid(1), n_coords * n_rows, cuda.gridsize(1)):
        c = e // n_rows
        r = e - c * n_rows
        total = 0.0
        for s in range(n_slices):
            total += grad_slices[s, c, r]
        out[c, r] = total


@cuda.jit(fastmath=cuda_config.FASTMATH["projection"])
def _softmax_kernel(params, block_starts, n_blocks, numeric_offset, relaxed, halt):
    """relaxed[:, r] = block softmax of the logits params[:numeric_offset, r], numerics
    copied; one thread per row, in the operation order of ``RelaxedParams.relaxed``."""
    if halt[0] != 0.0:
        return
    n_coords, n_rows = params.shape
    for r in range(cuda.grid(1), n_rows, cuda.gridsize(1)):
        for b in range(n_blocks):
            start = block_starts[b]
            stop = block_starts[b + 1] if b + 1 < n_blocks else numeric_offset
            top = params[start, r]
            for c in range(start + 1, stop):
                if params[c, r] > top:
                    top = params[c, r]
            total = 0.0  # float64, as RelaxedParams.relaxed
            for c in range(start, stop):
                shifted = math.exp(params[c, r] - top)  # float32 exp
                relaxed[c, r] = shifted
                total += shifted
            for c in range(start, stop):
                relaxed[c, r] = relaxed[c, r] / total
        for c in range(numeric_offset, n_coords):
            relaxed[c, r] = params[c, r]


# Slots of the projection's device state (float64; counts are exact integers there).
_STOPPED, _STEP, _STAGE_STEPS, _STAGE_BEST, _SINCE_BEST, _LOSS, _GRAD_NORM = range(7)
_N_STATE = 7


@cuda.jit(fastmath=cuda_config.FASTMATH["projection"])
def _stage_control_kernel(state, loss_partials, norm_partials, one_minus_min_improvement,
                          grad_tolerance, patience, max_steps):
    """After one Adam step: count it, and set the stop flag on a plateau (``patience`` steps
    without a relative improvement), a small gradient norm, or ``max_steps`` steps in the
    stage, exactly as ``projection.project`` decides. One thread."""
    if state[_STOPPED] != 0.0 or cuda.grid(1) != 0:
        return
    loss = 0.0
    for i in range(loss_partials.shape[0]):
        loss += loss_partials[i]
    norm2 = 0.0
    for i in range(norm_partials.shape[0]):
        norm2 += norm_partials[i]
    grad_norm = math.sqrt(norm2)
    state[_STEP] += 1.0
    state[_STAGE_STEPS] += 1.0
    state[_LOSS] = loss
    state[_GRAD_NORM] = grad_norm
    if loss < state[_STAGE_BEST] * one_minus_min_improvement:
        state[_STAGE_BEST] = loss
        state[_SINCE_BEST] = 0.0
    else:
        state[_SINCE_BEST] += 1.0
    if (state[_SINCE_BEST] >= patience or grad_norm <= grad_tolerance
            or state[_STAGE_STEPS] >= max_steps):
        state[_STOPPED] = 1.0


# ------------------------------------------------------------------------ built kernels
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


# ----------------------------------------------------------------------------- host side
def _threads_per_block() -> int:
    threads = int(cuda_config.THREADS_PER_BLOCK)
    if threads < 1 or threads & (threads - 1):
        msg = (
            f"cuda_config.THREADS_PER_BLOCK must be a power of two >= 1 (the block reductions "
            f"halve it); got {threads}"
        )
        raise ParameterError(msg)
    return threads


def _blocks(n_items: int, threads: int, cap: int) -> int:
    """Blocks of a grid-stride launch over ``n_items``: enough for one item per thread, at
    most ``cap``, at least one."""
    return max(1, min(int(cap), -(-int(n_items) // threads)))


def _upload(array: np.ndarray):
    """Device copy of a host array; an empty array becomes one dummy element (never read)."""
    array = np.ascontiguousarray(array)
    if array.size == 0:
        array = np.zeros((1,) * max(array.ndim, 1), dtype=array.dtype)
    return cuda.to_device(array)


def _real_of(dtype: np.dtype):
    return numba.float64 if np.dtype(dtype) == np.float64 else numba.float32


def _encode_sigma(sigma: np.ndarray) -> np.ndarray:
    """float32 sigma with ``inf`` (hard threshold) encoded as 0: the kernels then never meet
    an infinity (checked sigma is > 0, so 0 is free)."""
    return np.where(np.isinf(sigma), np.float32(0.0), sigma).astype(np.float32)


class _DeviceQueries:
    """The CSR arrays of a ``QuerySet`` copied to the device once."""

    def __init__(self, queries: QuerySet):
        self.n_queries = queries.n_queries
        self.numeric_offset = int(queries.numeric_offset)
        self.n_numeric = int(queries.n_numeric)
        self.n_coords = queries.n_coords
        for name in ("cat_offsets", "cat_coords", "coord_column", "coord_code",
                     "halfspace_offsets", "theta_offsets", "theta_index", "theta_weight", "tau",
                     "null_coord"):
            setattr(self, name, _upload(getattr(queries, name)))
        n_factors = np.diff(queries.cat_offsets) + np.diff(queries.halfspace_offsets)
        most = int(n_factors.max(initial=0))
        self.max_factors = 1 << max(2, (most - 1).bit_length())  # bucketed: fewer builds
        self.has_threshold = np.diff(queries.halfspace_offsets) > 0

    def csr(self) -> tuple:
        """The arguments every relaxed kernel takes after ``numeric_offset``."""
        return (self.cat_offsets, self.cat_coords, self.halfspace_offsets, self.theta_offsets,
                self.theta_index, self.theta_weight, self.tau, self.null_coord)


class _RelaxedWorkspace:
    """Device buffers and launch sizes for relaxed answers, loss and gradient of one
    workload on ``n_rows`` relaxed rows in precision ``dtype``; reused across Adam steps."""

    def __init__(self, device_queries: _DeviceQueries, n_rows: int, dtype: np.dtype):
        self.queries = device_queries
        self.n_rows = int(n_rows)
        self.dtype = np.dtype(dtype)
        self.threads = _threads_per_block()
        self.kernels = _relaxed_kernels(self.threads, _real_of(dtype), device_queries.max_factors)
        n_queries = device_queries.n_queries
        n_coords = device_queries.n_coords
        # relaxed sums: one block per query (grid x), rows split in segments (grid y)
        self.sum_grid_x = _blocks(n_queries, 1, cuda_config.MAX_BLOCKS)
        wanted = -(-int(cuda_config.RELAXED_TARGET_BLOCKS) // self.sum_grid_x)
        self.sum_grid_y = max(1, min(wanted, -(-self.n_rows // self.threads), 65535))
        self.partials = cuda.device_array((self.sum_grid_y, max(n_queries, 1)), np.float64)
        # residuals: one partial loss per block
        self.residual_grid = _blocks(n_queries, self.threads, cuda_config.REDUCTION_BLOCKS)
        self.answers = cuda.device_array(max(n_queries, 1), np.float64)
        self.weights = cuda.device_array(max(n_queries, 1), np.float64)
        self.loss_partials = cuda.device_array(self.residual_grid, np.float64)
        # gradient: one thread per (query slice, row), slices added afterwards
        slice_bytes = max(1, n_coords * self.n_rows * self.dtype.itemsize)
        n_slices = -(-int(cuda_config.GRAD_TARGET_THREADS) // self.n_rows)
        n_slices = min(n_slices, max(n_queries, 1), int(cuda_config.GRAD_SLICE_BYTES) // slice_bytes)
        self.n_slices = max(1, n_slices)
        self.grad_grid = _blocks(self.n_slices * self.n_rows, self.threads, cuda_config.MAX_BLOCKS)
        self.sum_slices_grid = _blocks(n_coords * self.n_rows, self.threads, cuda_config.MAX_BLOCKS)
        self.grad_slices = cuda.device_array((self.n_slices, max(n_coords, 1), self.n_rows), self.dtype)
        self.grad = self.grad_slices[0]  # the summed gradient, [n_coords, n_rows]
        self.never = cuda.to_device(np.zeros(1, dtype=np.float64))  # a halt flag never set
        self.ones = cuda.to_device(np.ones(max(n_queries, 1), dtype=np.float64))  # unweighted loss

    def relaxed_answers(self, XT, sigma, targets, *, query_weights=None, round_to_float32=False,
                        halt=None):
        """Launch the sums and residual kernels: answers, weights and loss partials
        (``query_weights``: a device float64[n_queries] of loss weights; None: all ones)."""
        halt = self.never if halt is None else halt
        query_weights = self.ones if query_weights is None else query_weights
        dq = self.queries
        self.kernels.relaxed_sums[(self.sum_grid_x, self.sum_grid_y), self.threads](
            XT, self.n_rows, dq.n_queries, dq.numeric_offset, *dq.csr(), sigma, self.partials,
            halt)
        self.kernels.residual[self.residual_grid, self.threads](
            self.partials, self.n_rows, dq.n_queries, targets, query_weights, int(round_to_float32),
            self.answers,
            self.weights, self.loss_partials, halt)

    def gradient(self, XT, sigma, *, halt=None):
        """Launch the gradient kernel (after ``relaxed_answers``); the summed gradient is
        left in ``grad`` (``grad_slices[0]``)."""
        halt = self.never if halt is None else halt
        dq = self.queries
        self.kernels.grad[self.grad_grid, self.threads](
            XT, self.n_rows, dq.n_queries, dq.numeric_offset, *dq.csr(), sigma, self.weights,
            self.grad_slices, halt)
        if self.n_slices > 1:
            _sum_slices_kernel[self.sum_slices_grid, self.threads](
                self.grad_slices, self.grad, halt)

    def loss(self) -> float:
        """The loss of the last ``relaxed_answers`` (float64 partials added in order)."""
        total = 0.0
        for value in self.loss_partials.copy_to_host():
            total += float(value)
        return total


# --------------------------------------------------------------------------- public API
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
        Fraction of rows satisfying each query. Rows go to the device in chunks of
        ``cuda_config.EXACT_CHUNK_ROWS``; marginal groups are counted in one histogram pass.
    """
    check_queries(queries)
    codes, numerics = check_real_data(codes, numerics, queries)
    if queries.n_queries == 0:
        return np.zeros(0, dtype=np.float64)
    from polars_rap.kernels.cuda_exact import ExactPlan, exact_counts

    counts = exact_counts(codes, numerics, _DeviceQueries(queries), ExactPlan(queries))
    return counts / codes.shape[0]


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
    workspace = _RelaxedWorkspace(_DeviceQueries(queries), X.shape[0], X.dtype)
    XT = cuda.to_device(np.ascontiguousarray(X.T))
    targets = cuda.to_device(np.zeros(queries.n_queries, dtype=np.float64))
    workspace.relaxed_answers(XT, cuda.to_device(_encode_sigma(sigma)), targets)
    return workspace.answers.copy_to_host()[: queries.n_queries].astype(np.float32)


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

    Returns
    -------
    (float, ndarray)
        The loss, and ``dL/dX`` with the dtype and shape of ``X`` (computed in that
        precision, summed over queries in float64 across slices).
    """
    X, sigma, targets = check_relaxed_call(X, queries, sigma, targets)
    weights = check_weights(weights, queries.n_queries)
    if queries.n_queries == 0:
        return 0.0, np.zeros_like(X)
    workspace = _RelaxedWorkspace(_DeviceQueries(queries), X.shape[0], X.dtype)
    XT = cuda.to_device(np.ascontiguousarray(X.T))
    sigma_device = cuda.to_device(_encode_sigma(sigma))
    workspace.relaxed_answers(XT, sigma_device, cuda.to_device(targets),
                              query_weights=cuda.to_device(weights))
    workspace.gradient(XT, sigma_device)
    grad_t = workspace.grad.copy_to_host()[: queries.n_coords]
    return workspace.loss(), np.ascontiguousarray(grad_t.T)



def device_fit(*args, **kwargs):
    """The projection's device-resident Adam state and step primitives
    (:class:`~polars_rap.kernels.cuda_fit.DeviceFit`; same arguments). Its presence tells
    :func:`polars_rap.projection.project` to run its loop on the device."""
    from polars_rap.kernels.cuda_fit import DeviceFit

    return DeviceFit(*args, **kwargs)
