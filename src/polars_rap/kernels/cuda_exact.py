"""Exact answers on the GPU: hard-threshold counts of real rows (CUDA; design.md §6).

Two kernels, as the CPU backend splits the work (``cpu_exact``):

- *marginal groups* (every cell of some columns in row-major order, sharing the halfspaces of
  the first cell; ``cpu_halfspaces._plan`` checks the structure) are counted in one histogram
  pass: a block takes one group and one segment of rows, each thread computes its rows' cell
  index (mixed radix over the group's columns) and the shared halfspace indicator, and adds 1
  to a shared-memory histogram (``int32[EXACT_HISTOGRAM_CELLS]``; larger groups add to the
  global counts directly); the block then adds its non-zero cells to the global ``int64``
  counts. Work per row is one cell index per *group*, not one test per cell.
- every other query takes the tiled kernel: a block stages a tile of real rows (codes and
  numerics) in shared memory; each thread owns one query and keeps one bit per tile row in a
  64-bit mask, clearing bits factor by factor, then adds the mask's popcount to a register.
  One atomic add per query and block at the end.

The n x m indicator matrix never exists; rows reach the device in chunks of
``EXACT_CHUNK_ROWS`` and counts add up there. Halfspace dot products are float64, term by term
from 0.0 in the stored order, with multiplies never fused into an FMA (``_gpu_mul_rn``), so
counts equal the reference's exactly. Integer atomics make the counts exact in any order.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import cuda

from polars_rap.errors import ParameterError
from polars_rap.kernels import cuda_config
from polars_rap.kernels.cpu_halfspaces import _plan
from polars_rap.kernels.cuda import _blocks, _gpu_mul_rn, _threads_per_block, _upload
from polars_rap.queries import QuerySet

#: Cells of the shared-memory histogram (int32 each), a compile-time constant of the kernel.
_HISTOGRAM_CELLS = int(cuda_config.EXACT_HISTOGRAM_CELLS)


@cuda.jit(device=True)
def _gpu_tile_count(tile, n_tile_rows, width, n_columns, q, cat_offsets, cat_coords,
                    coord_column, coord_code, halfspace_offsets, theta_offsets, theta_index,
                    theta_weight, tau):
    """Rows of a shared-memory tile (``[row][codes..., numerics...]``, float64) that satisfy
    query ``q`` with hard thresholds: one mask bit per row, cleared factor by factor."""
    mask = (1 << n_tile_rows) - 1
    for p in range(cat_offsets[q], cat_offsets[q + 1]):
        coord = cat_coords[p]
        column = coord_column[coord]
        code = coord_code[coord]
        for i in range(n_tile_rows):
            if tile[i * width + column] != code:
                mask &= ~(1 << i)
    for h in range(halfspace_offsets[q], halfspace_offsets[q + 1]):
        if mask == 0:
            break
        threshold = numba.float64(tau[h])
        for i in range(n_tile_rows):
            if (mask >> i) & 1:
                dot = 0.0
                base = i * width + n_columns
                for t in range(theta_offsets[h], theta_offsets[h + 1]):
                    dot += _gpu_mul_rn(numba.float64(theta_weight[t]), tile[base + theta_index[t]])
                if not dot <= threshold:
                    mask &= ~(1 << i)
    return cuda.popc(mask)


@cuda.jit(fastmath=cuda_config.FASTMATH["exact"])
def _exact_tiled_kernel(codes, numerics, n_rows, n_columns, n_numeric, rows_per_tile,
                        query_list, cat_offsets, cat_coords, coord_column, coord_code,
                        halfspace_offsets, theta_offsets, theta_index, theta_weight, tau, counts):
    """counts[q] += rows of this chunk satisfying query q (hard thresholds), for every q in
    ``query_list``.

    Grid x walks tiles of ``blockDim.x`` listed queries (one per thread), grid y walks tiles of
    ``rows_per_tile`` rows, staged in dynamic shared memory (float64, codes then numerics).
    """
    tile = cuda.shared.array(0, dtype=numba.float64)
    tid = cuda.threadIdx.x
    block_size = cuda.blockDim.x
    n_listed = query_list.shape[0]
    width = n_columns + n_numeric
    n_row_tiles = (n_rows + rows_per_tile - 1) // rows_per_tile
    n_query_tiles = (n_listed + block_size - 1) // block_size
    for query_tile in range(cuda.blockIdx.x, n_query_tiles, cuda.gridDim.x):
        a = query_tile * block_size + tid
        active = a < n_listed
        q = query_list[a] if active else 0
        count = 0
        for row_tile in range(cuda.blockIdx.y, n_row_tiles, cuda.gridDim.y):
            r0 = row_tile * rows_per_tile
            n_tile_rows = rows_per_tile if r0 + rows_per_tile <= n_rows else n_rows - r0
            cuda.syncthreads()  # the previous tile is no longer read
            for e in range(tid, n_tile_rows * width, block_size):
                i = e // width
                j = e - i * width
                if j < n_columns:
                    tile[e] = codes[r0 + i, j]
                else:
                    tile[e] = numerics[r0 + i, j - n_columns]
            cuda.syncthreads()
            if active:
                count += _gpu_tile_count(tile, n_tile_rows, width, n_columns, q, cat_offsets,
                                         cat_coords, coord_column, coord_code,
                                         halfspace_offsets, theta_offsets, theta_index,
                                         theta_weight, tau)
        if active and count > 0:
            cuda.atomic.add(counts, q, count)


@cuda.jit(fastmath=cuda_config.FASTMATH["exact"])
def _exact_histogram_kernel(codes, numerics, n_rows, groups, group_offsets, group_column_offsets,
                            group_columns, column_sizes, halfspace_offsets, theta_offsets,
                            theta_index, theta_weight, tau, counts):
    """counts[q] += rows of this chunk in cell q, for every cell of the marginal ``groups``.

    Grid x walks the groups, grid y splits the rows into segments. A group of at most
    ``_HISTOGRAM_CELLS`` cells counts in shared memory first (int32: a segment has fewer
    than 2**31 rows), then adds its non-zero cells to ``counts`` (int64).
    """
    histogram = cuda.shared.array(_HISTOGRAM_CELLS, dtype=numba.int32)
    tid = cuda.threadIdx.x
    block_size = cuda.blockDim.x
    segment_rows = (n_rows + cuda.gridDim.y - 1) // cuda.gridDim.y
    r_lo = cuda.blockIdx.y * segment_rows
    r_hi = r_lo + segment_rows if r_lo + segment_rows <= n_rows else n_rows
    for a in range(cuda.blockIdx.x, groups.shape[0], cuda.gridDim.x):
        g = groups[a]
        q0 = group_offsets[g]
        n_cells = group_offsets[g + 1] - q0
        in_shared = n_cells <= _HISTOGRAM_CELLS
        if in_shared:
            for j in range(tid, n_cells, block_size):
                histogram[j] = 0
        cuda.syncthreads()
        for r in range(r_lo + tid, r_hi, block_size):
            cell = 0
            for t in range(group_column_offsets[g], group_column_offsets[g + 1]):
                column = group_columns[t]
                cell = cell * column_sizes[column] + codes[r, column]
            keep = True
            for h in range(halfspace_offsets[q0], halfspace_offsets[q0 + 1]):
                dot = 0.0
                for t in range(theta_offsets[h], theta_offsets[h + 1]):
                    dot += _gpu_mul_rn(numba.float64(theta_weight[t]),
                                       numba.float64(numerics[r, theta_index[t]]))
                if not dot <= numba.float64(tau[h]):
                    keep = False
            if keep:
                if in_shared:
                    cuda.atomic.add(histogram, cell, 1)
                else:
                    cuda.atomic.add(counts, q0 + cell, 1)
        cuda.syncthreads()
        if in_shared:
            for j in range(tid, n_cells, block_size):
                if histogram[j] != 0:
                    cuda.atomic.add(counts, q0 + j, numba.int64(histogram[j]))
        cuda.syncthreads()  # the histogram is cleared for the next group only after this


class ExactPlan:
    """A workload's split for exact counting, on the device: marginal ``groups`` (histogram
    kernel) and the remaining ``queries`` (tiled kernel), int64 each, plus the group arrays.
    A workload whose group columns do not describe whole marginals (``_plan`` refuses it)
    is counted by the tiled kernel alone, which needs no structure."""

    def __init__(self, queries: QuerySet, structured: bool = True):
        try:
            groups, csr = _plan(queries, None, structured)
        except ParameterError:  # groups whose cells are not a whole marginal: count them tiled
            groups, csr = _plan(queries, None, False)
        self.n_groups = len(groups)
        self.n_listed = len(csr)
        self.groups = _upload(groups)
        self.query_list = _upload(csr)
        for name in ("group_offsets", "group_column_offsets", "group_columns", "column_sizes"):
            setattr(self, name, _upload(np.asarray(getattr(queries, name))))


def exact_counts(codes: np.ndarray, numerics: np.ndarray, device_queries, plan: ExactPlan) -> np.ndarray:
    """float64[n_queries] counts of rows satisfying each query (checked inputs, chunked).

    ``device_queries``: the workload's CSR arrays on the device (``cuda._DeviceQueries``).
    """
    threads = _threads_per_block()
    n_rows, n_columns = codes.shape
    n_numeric = numerics.shape[1]
    width = n_columns + n_numeric
    rows_per_tile = int(min(cuda_config.EXACT_ROWS_PER_TILE, 62,
                            cuda_config.EXACT_SHARED_BYTES // (8 * max(width, 1))))
    rows_per_tile = max(1, rows_per_tile)
    shared_bytes = 8 * rows_per_tile * max(width, 1)
    dq = device_queries
    counts = cuda.to_device(np.zeros(dq.n_queries, dtype=np.int64))
    chunk_rows = max(1, int(cuda_config.EXACT_CHUNK_ROWS))
    target = int(cuda_config.EXACT_TARGET_BLOCKS)
    for start in range(0, n_rows, chunk_rows):
        stop = min(n_rows, start + chunk_rows)
        n_chunk = stop - start
        codes_chunk = _upload(codes[start:stop] if n_columns else np.zeros((0, 1), np.int32))
        numerics_chunk = _upload(numerics[start:stop] if n_numeric else np.zeros((0, 1)))
        if plan.n_groups:
            grid_x = _blocks(plan.n_groups, 1, cuda_config.MAX_BLOCKS)
            grid_y = max(1, min(-(-target // grid_x), -(-n_chunk // threads), 65535))
            _exact_histogram_kernel[(grid_x, grid_y), threads](
                codes_chunk, numerics_chunk, n_chunk, plan.groups, plan.group_offsets,
                plan.group_column_offsets, plan.group_columns, plan.column_sizes,
                dq.halfspace_offsets, dq.theta_offsets, dq.theta_index, dq.theta_weight, dq.tau,
                counts)
        if plan.n_listed:
            grid_x = _blocks(plan.n_listed, threads, cuda_config.MAX_BLOCKS)
            n_row_tiles = -(-n_chunk // rows_per_tile)
            grid_y = max(1, min(n_row_tiles, -(-target // grid_x), 65535))
            _exact_tiled_kernel[(grid_x, grid_y), threads, 0, shared_bytes](
                codes_chunk, numerics_chunk, n_chunk, n_columns, n_numeric, rows_per_tile,
                plan.query_list, dq.cat_offsets, dq.cat_coords, dq.coord_column, dq.coord_code,
                dq.halfspace_offsets, dq.theta_offsets, dq.theta_index, dq.theta_weight, dq.tau,
                counts)
    return counts.copy_to_host().astype(np.float64)
