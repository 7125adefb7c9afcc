"""CUDA device functions and the kernels that need no compile-time sizes (design.md §6).

The halfspace margin and its null-pattern parts (``polars_rap.workload.queries``: a halfspace over
nullable columns is the expectation over their null indicators), one Adam update, the slice
sum of the gradient, the block softmax and the projection's stage control; used by
:mod:`polars_rap.kernels.cuda_relaxed` (the relaxed kernels), :mod:`~polars_rap.kernels.cuda_exact`
and :mod:`~polars_rap.kernels.cuda_fit`. Every halfspace dot product is accumulated in float64,
term by term, with a multiply never fused into an FMA (``_gpu_mul_rn``), so hard thresholds
agree with ``reference`` to the bit. Importing this module needs no GPU.
"""

from __future__ import annotations

import math

import numba
from numba import cuda

from polars_rap.kernels import cuda_config
from polars_rap.workload.queries import EXACT_NULLABLE_PER_HALFSPACE

_SIMULATED = bool(numba.config.ENABLE_CUDASIM)
#: Nullable columns of a halfspace summed over their null patterns (a compile-time constant).
_EXACT_NULLS = EXACT_NULLABLE_PER_HALFSPACE


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
    without a relative improvement), a small gradient norm, or ``max_steps`` steps in the stage, exactly as ``projection.project`` decides. One thread."""
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
    if state[_SINCE_BEST] >= patience or grad_norm <= grad_tolerance or state[_STAGE_STEPS] >= max_steps:
        state[_STOPPED] = 1.0
