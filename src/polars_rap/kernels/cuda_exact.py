"""Exact answers on the GPU: hard-threshold counts of real rows (CUDA; design.md §6).

Two passes, as the CPU backend splits the work (``cpu_exact``):

- *marginal groups* (every cell of some columns in row-major order, sharing the halfspaces of
  the first cell; ``cpu_halfspaces._plan`` checks the structure) are counted in one histogram
  pass: a block takes one group and one segment of rows, each thread computes its rows' cell
  index (mixed radix over the group's columns) and the shared halfspace indicator, and adds 1
  to a shared-memory histogram (``int32[EXACT_HISTOGRAM_CELLS]``; larger groups add to the
  global counts directly); the block then adds its non-zero cells to the global ``int64``
  counts. Work per row is one cell index per *group*, not one test per cell.
- every other query (the linear thresholds) takes, by default (``EXACT_WARP_PER_QUERY``), the
  warp kernel: one warp per query, its lanes over the rows of a segment, one atomic add per
  query and segment; the chunk's rows are grouped on the device by the categorical column
  most of these queries test (``EXACT_SORT_ROWS``: the label of class-conditional
  thresholds), so that a query walks only the rows of its code there; or the tiled kernel: a
  block stages a tile of real rows (codes and numerics) in shared memory; each thread owns one
  query and keeps one bit per tile row in a 64-bit mask, clearing bits factor by factor, then
  adds the mask's popcount to a register, one atomic add per query and block at the end. Either reads a small query (at most 4
  categorical factors and one halfspace of at most 8 terms) once into local arrays rather
  than from the CSR arrays for every row.

The n x m indicator matrix never exists; rows reach the device in chunks of
``EXACT_CHUNK_ROWS``, are transposed there (``[column, row]``: the threads of a warp read
consecutive rows of one column) and counts add up on the device, in a buffer the plan keeps
with a pinned host copy, so repeated counts of one workload allocate nothing. Halfspace dot
products are float64, term by term from 0.0 in the stored order, with multiplies never fused
into an FMA (``_gpu_mul_rn``), so counts equal the reference's exactly. Integer atomics make
the counts exact in any order.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numba
import numpy as np
from numba import cuda

from polars_rap.errors import ParameterError
from polars_rap.kernels import cuda_config
from polars_rap.kernels.cpu_halfspaces import _plan
from polars_rap.kernels.cuda_host import _blocks, _threads_per_block, _upload
from polars_rap.kernels.cuda_device import _SIMULATED, _gpu_mul_rn
from polars_rap.workload.queries import QuerySet

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


#: The tiled kernel keeps a query in registers when it has at most this many categorical
#: factors and one halfspace of at most ``_HELD_TERMS`` terms (or none); others are walked in
#: the CSR arrays for every row.
_HELD_FACTORS = 4
_HELD_TERMS = 8


@cuda.jit(device=True)
def _gpu_hold_query(q, cat_offsets, cat_coords, coord_column, coord_code, halfspace_offsets,
                    theta_offsets, theta_index, theta_weight, tau, columns, codes, index, weight):
    """Read query ``q`` into local arrays when it is small (at most ``_HELD_FACTORS``
    categorical factors and at most one halfspace of at most ``_HELD_TERMS`` terms): the
    factors' ``columns`` and ``codes`` (float64), the halfspace's ``index`` and ``weight``.
    Returns ``(held, n_cat, n_terms, threshold)``, ``n_terms`` -1 without a halfspace."""
    c0 = cat_offsets[q]
    n_cat = cat_offsets[q + 1] - c0
    h0 = halfspace_offsets[q]
    n_halfspaces = halfspace_offsets[q + 1] - h0
    n_terms = -1
    threshold = 0.0
    if n_halfspaces == 1:
        n_terms = theta_offsets[h0 + 1] - theta_offsets[h0]
        threshold = numba.float64(tau[h0])
    held = n_cat <= _HELD_FACTORS and n_halfspaces <= 1 and n_terms <= _HELD_TERMS
    if held:
        for k in range(_HELD_FACTORS):
            if k < n_cat:
                coord = cat_coords[c0 + k]
                columns[k] = coord_column[coord]
                codes[k] = coord_code[coord]
        for k in range(_HELD_TERMS):
            if k < n_terms:
                t = theta_offsets[h0] + k
                index[k] = theta_index[t]
                weight[k] = numba.float64(theta_weight[t])
    return held, n_cat, n_terms, threshold


@cuda.jit(device=True)
def _gpu_tile_count_held(tile, n_tile_rows, width, n_columns, n_cat, columns, codes, n_terms,
                         index, weight, threshold):
    """``_gpu_tile_count`` of a query held in local arrays (``columns``/``codes`` of its
    ``n_cat`` factors, ``index``/``weight`` of its halfspace's ``n_terms`` terms, ``n_terms``
    -1 for no halfspace): the same tests in the same order, with constant trip counts so
    that the arrays can live in registers."""
    mask = (1 << n_tile_rows) - 1
    for k in range(_HELD_FACTORS):
        if k < n_cat:
            column = columns[k]
            code = codes[k]
            for i in range(n_tile_rows):
                if tile[i * width + column] != code:
                    mask &= ~(1 << i)
    if n_terms >= 0 and mask != 0:
        for i in range(n_tile_rows):
            if (mask >> i) & 1:
                dot = 0.0
                base = i * width + n_columns
                for k in range(_HELD_TERMS):
                    if k < n_terms:
                        dot += _gpu_mul_rn(weight[k], tile[base + index[k]])
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
    ``rows_per_tile`` rows, staged in dynamic shared memory (float64, codes then numerics, row
    by row) from the transposed chunk (``codes[column, row]``, ``numerics[column, row]``).
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
        # hold the query in registers when it is small (the common shapes: a cell, a
        # class-conditional linear threshold)
        columns = cuda.local.array(_HELD_FACTORS, dtype=numba.int32)
        codes_held = cuda.local.array(_HELD_FACTORS, dtype=numba.float64)
        index = cuda.local.array(_HELD_TERMS, dtype=numba.int32)
        weight = cuda.local.array(_HELD_TERMS, dtype=numba.float64)
        held, n_cat, n_terms, threshold = _gpu_hold_query(
            q, cat_offsets, cat_coords, coord_column, coord_code, halfspace_offsets, theta_offsets,
            theta_index, theta_weight, tau, columns, codes_held, index, weight)
        for row_tile in range(cuda.blockIdx.y, n_row_tiles, cuda.gridDim.y):
            r0 = row_tile * rows_per_tile
            n_tile_rows = rows_per_tile if r0 + rows_per_tile <= n_rows else n_rows - r0
            cuda.syncthreads()  # the previous tile is no longer read
            for e in range(tid, n_tile_rows * width, block_size):
                j = e // n_tile_rows  # consecutive threads: consecutive rows of one column
                i = e - j * n_tile_rows
                if j < n_columns:
                    tile[i * width + j] = codes[j, r0 + i]
                else:
                    tile[i * width + j] = numerics[j - n_columns, r0 + i]
            cuda.syncthreads()
            if active and held:
                count += _gpu_tile_count_held(tile, n_tile_rows, width, n_columns, n_cat,
                                              columns, codes_held, n_terms, index, weight,
                                              threshold)
            elif active:
                count += _gpu_tile_count(tile, n_tile_rows, width, n_columns, q, cat_offsets,
                                         cat_coords, coord_column, coord_code,
                                         halfspace_offsets, theta_offsets, theta_index,
                                         theta_weight, tau)
        if active and count > 0:
            cuda.atomic.add(counts, q, count)


def _exact_warp(codes, numerics, n_rows, segment_rows, query_list, key_column, list_key, key_offsets,
                cat_offsets, cat_coords, coord_column, coord_code, halfspace_offsets, theta_offsets,
                theta_index, theta_weight, tau, counts):
    """counts[q] += rows of this chunk satisfying query q (hard thresholds), for every q in
    ``query_list``: the tiled kernel's work laid out the other way round.

    One warp per listed query (grid x, grid-stride over warps), its 32 lanes over the rows of
    one segment of ``segment_rows`` (grid y), read straight from the transposed chunk (lanes read
    consecutive rows: coalesced; the warp's control flow is its query's, the same in every lane).
    When the chunk is sorted by ``key_column``, a listed query that tests code
    ``list_key[a] >= 0`` on it walks only rows ``key_offsets[code]:key_offsets[code + 1]`` (its
    segments start there) and, held, skips that factor's test (true on those rows);
    ``list_key[a] == -1`` walks every row. A small query is held in registers as in the tiled
    kernel. The lanes' counts meet in dynamic shared memory (int32 per thread, block barriers:
    the CUDA simulator has no warp shuffles); one atomic add per query and segment.
    ``blockDim.x`` is a multiple of 32. Compiled by :func:`_exact_warp_kernel`.
    """
    lanes = cuda.shared.array(0, dtype=numba.int32)  # one count per thread
    tid = cuda.threadIdx.x
    lane = tid % 32
    warps_per_block = cuda.blockDim.x // 32
    n_warps = cuda.gridDim.x * warps_per_block
    n_listed = query_list.shape[0]
    columns = cuda.local.array(_HELD_FACTORS, dtype=numba.int32)
    codes_held = cuda.local.array(_HELD_FACTORS, dtype=numba.float64)
    index = cuda.local.array(_HELD_TERMS, dtype=numba.int32)
    weight = cuda.local.array(_HELD_TERMS, dtype=numba.float64)
    # every thread of the block turns the same number of times (the block barriers below)
    for first in range(cuda.blockIdx.x * warps_per_block, n_listed, n_warps):
        a = first + tid // 32
        active = a < n_listed
        q = query_list[a] if active else query_list[first]
        key = list_key[a] if active else -1
        lo = key_offsets[key] if key >= 0 else 0
        hi = key_offsets[key + 1] if key >= 0 else n_rows
        r_lo = lo + cuda.blockIdx.y * segment_rows
        r_hi = r_lo + segment_rows if r_lo + segment_rows <= hi else hi
        c0 = cat_offsets[q]
        h0 = halfspace_offsets[q]
        held, n_cat, n_terms, threshold = _gpu_hold_query(
            q, cat_offsets, cat_coords, coord_column, coord_code, halfspace_offsets, theta_offsets,
            theta_index, theta_weight, tau, columns, codes_held, index, weight)
        n_halfspaces = halfspace_offsets[q + 1] - h0
        implied = -1  # the held factor that every row of the range satisfies
        if held and key >= 0:
            for k in range(_HELD_FACTORS):
                if k < n_cat and columns[k] == key_column and codes_held[k] == key:
                    implied = k
        count = numba.int32(0)
        for r in range(r_lo + lane, r_hi if active else r_lo, 32):  # empty past the range
            ok = True
            if held:
                for k in range(_HELD_FACTORS):
                    if k < n_cat and k != implied and codes[columns[k], r] != codes_held[k]:
                        ok = False
                if ok and n_terms >= 0:
                    dot = 0.0
                    for k in range(_HELD_TERMS):
                        if k < n_terms:
                            dot += _gpu_mul_rn(weight[k], numerics[index[k], r])
                    if not dot <= threshold:
                        ok = False
            else:
                for p in range(c0, c0 + n_cat):
                    coord = cat_coords[p]
                    if codes[coord_column[coord], r] != coord_code[coord]:
                        ok = False
                for h in range(h0, h0 + n_halfspaces):
                    if ok:
                        dot = 0.0
                        for t in range(theta_offsets[h], theta_offsets[h + 1]):
                            dot += _gpu_mul_rn(numba.float64(theta_weight[t]),
                                               numerics[theta_index[t], r])
                        if not dot <= numba.float64(tau[h]):
                            ok = False
            if ok:
                count += 1
        lanes[tid] = count
        cuda.syncthreads()
        if lane == 0 and active:
            total = numba.int64(0)
            for k in range(tid, tid + 32):
                total += lanes[k]
            if total > 0:
                cuda.atomic.add(counts, q, total)
        cuda.syncthreads()  # the lanes' counts are read before the next round writes them


@functools.lru_cache(maxsize=None)
def _exact_warp_kernel(max_registers: int):
    """``_exact_warp`` compiled with at most ``max_registers`` registers per thread (0: the
    compiler's choice; ignored by the CUDA simulator): one build per value."""
    options = {"fastmath": cuda_config.FASTMATH["exact"]}
    if max_registers and not _SIMULATED:
        options["max_registers"] = int(max_registers)
    return cuda.jit(**options)(_exact_warp)


@cuda.jit(fastmath=cuda_config.FASTMATH["exact"])
def _exact_histogram_kernel(codes, numerics, n_rows, groups, group_offsets, group_column_offsets,
                            group_columns, column_sizes, halfspace_offsets, theta_offsets,
                            theta_index, theta_weight, tau, counts):
    """counts[q] += rows of this chunk in cell q, for every cell of the marginal ``groups``
    (``codes[column, row]``, ``numerics[column, row]``: the transposed chunk).

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
        t0 = group_column_offsets[g]
        n_group_columns = group_column_offsets[g + 1] - t0
        # up to three columns read once per group (the cell index the loop below would form)
        a = group_columns[t0] if n_group_columns > 0 else 0
        b = group_columns[t0 + 1] if n_group_columns > 1 else 0
        c = group_columns[t0 + 2] if n_group_columns > 2 else 0
        size_b = column_sizes[b]
        size_c = column_sizes[c]
        h0 = halfspace_offsets[q0]
        h1 = halfspace_offsets[q0 + 1]
        for r in range(r_lo + tid, r_hi, block_size):
            if n_group_columns <= 3:
                cell = codes[a, r] if n_group_columns > 0 else 0
                if n_group_columns > 1:
                    cell = cell * size_b + codes[b, r]
                if n_group_columns > 2:
                    cell = cell * size_c + codes[c, r]
            else:
                cell = 0
                for t in range(t0, t0 + n_group_columns):
                    column = group_columns[t]
                    cell = cell * column_sizes[column] + codes[column, r]
            keep = True
            for h in range(h0, h1):
                dot = 0.0
                for t in range(theta_offsets[h], theta_offsets[h + 1]):
                    dot += _gpu_mul_rn(numba.float64(theta_weight[t]),
                                       numba.float64(numerics[theta_index[t], r]))
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


@cuda.jit
def _transpose_kernel(rows, out):
    """out[j, i] = rows[i, j] (a chunk of real rows, row-major, to ``[column, row]``)."""
    n_rows, n_columns = rows.shape
    for e in range(cuda.grid(1), n_rows * n_columns, cuda.gridsize(1)):
        i = e // n_columns
        j = e - i * n_columns
        out[j, i] = rows[i, j]


@cuda.jit
def _key_tally_kernel(rows, key_column, tally):
    """tally[code + 1] += 1 for each row's code on ``key_column`` (``tally`` zeroed,
    int32[key_size + 1]; rows row-major int32)."""
    for i in range(cuda.grid(1), rows.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(tally, rows[i, key_column] + 1, 1)


@cuda.jit
def _key_offsets_kernel(tally, cursor):
    """One thread: ``tally`` becomes the codes' start offsets (its prefix sums, in place) and
    ``cursor`` a copy of them, the next free position of each code."""
    if cuda.grid(1) == 0:
        for c in range(1, tally.shape[0]):
            tally[c] += tally[c - 1]
        for c in range(cursor.shape[0]):
            cursor[c] = tally[c]


@cuda.jit
def _sorted_transpose_kernel(codes_rows, numerics_rows, n_numeric, key_column, cursor, codes_t,
                             numerics_t):
    """codes_t[:, p] = codes_rows[i], numerics_t[:, p] = numerics_rows[i], where p is the next
    free position of row i's code on ``key_column``: the chunk transposed and grouped by that
    code (the order within a code is whatever the atomics give; counts do not depend on it)."""
    for i in range(cuda.grid(1), codes_rows.shape[0], cuda.gridsize(1)):
        p = cuda.atomic.add(cursor, codes_rows[i, key_column], 1)
        for j in range(codes_rows.shape[1]):
            codes_t[j, p] = codes_rows[i, j]
        for j in range(n_numeric):
            numerics_t[j, p] = numerics_rows[i, j]


@cuda.jit
def _zero_kernel(counts):
    for q in range(cuda.grid(1), counts.shape[0], cuda.gridsize(1)):
        counts[q] = 0


def zero_counts(counts) -> None:
    """Launch the kernel that sets a device count buffer to 0."""
    threads = _threads_per_block()
    _zero_kernel[_blocks(counts.shape[0], threads, cuda_config.MAX_BLOCKS), threads](counts)


def _sort_key(queries: QuerySet, listed: np.ndarray) -> tuple[int, np.ndarray]:
    """The categorical column that most ``listed`` queries test (ties: the lowest index) and
    int32[len(listed)]: each listed query's code on it, -1 where it tests no code there;
    ``(-1, all -1)`` when no listed query tests a categorical column."""
    key_codes = np.full(len(listed), -1, dtype=np.int32)
    starts = np.asarray(queries.cat_offsets)[listed]
    n_factors = np.asarray(queries.cat_offsets)[listed + 1] - starts
    if len(listed) == 0 or n_factors.sum() == 0:
        return -1, key_codes
    owner = np.repeat(np.arange(len(listed)), n_factors)
    first = np.repeat(starts - (np.cumsum(n_factors) - n_factors), n_factors)
    coords = np.asarray(queries.cat_coords)[first + np.arange(n_factors.sum())]
    columns = np.asarray(queries.coord_column)[coords]
    tested = np.unique(owner.astype(np.int64) * len(queries.column_sizes) + columns)
    key = int(np.argmax(np.bincount(tested % len(queries.column_sizes))))  # queries per column
    on_key = columns == key
    key_codes[owner[on_key]] = np.asarray(queries.coord_code)[coords[on_key]]
    return key, key_codes


class ExactPlan:
    """A workload's split for exact counting, on the device: marginal ``groups`` (histogram
    kernel) and the remaining ``queries`` (warp or tiled kernel), int64 each, plus the group
    arrays. A workload whose group columns do not describe whole marginals (``_plan`` refuses
    it) is counted by the warp or tiled kernel alone, which need no structure. With the warp
    kernel and ``EXACT_SORT_ROWS``, chunks are sorted by ``key_column`` (-1: not sorted) and
    ``list_key`` holds each listed query's code on it. The count buffers (device
    ``int64[n_queries]`` and its pinned host copy) are made on first use and reused."""

    def __init__(self, queries: QuerySet, structured: bool = True):
        try:
            groups, csr = _plan(queries, None, structured)
        except ParameterError:  # groups whose cells are not a whole marginal: count them tiled
            groups, csr = _plan(queries, None, False)
        self.n_queries = int(queries.n_queries)
        self.n_groups = len(groups)
        self.n_listed = len(csr)
        self.groups = _upload(groups)
        self.query_list = _upload(csr)
        for name in ("group_offsets", "group_column_offsets", "group_columns", "column_sizes"):
            setattr(self, name, _upload(np.asarray(getattr(queries, name))))
        self.key_column, list_key = -1, np.full(len(csr), -1, dtype=np.int32)
        if cuda_config.EXACT_WARP_PER_QUERY and cuda_config.EXACT_SORT_ROWS:
            self.key_column, list_key = _sort_key(queries, np.asarray(csr, dtype=np.int64))
        self.key_size = int(queries.column_sizes[self.key_column]) if self.key_column >= 0 else 0
        self.list_key = _upload(list_key)
        self._counts = None

    def counts(self):
        """(device int64[n_queries], pinned host int64[n_queries]) count buffers."""
        if self._counts is None:
            n = max(self.n_queries, 1)
            self._counts = (cuda.device_array(n, np.int64), cuda.pinned_array(n, np.int64))
        return self._counts


class DeviceChunk(NamedTuple):
    """A chunk of real rows on the device, transposed (``codes[column, row]`` int32,
    ``numerics[column, row]`` float64; one dummy column where the table has none), its
    ``n_rows``, ``n_columns`` and ``n_numeric``, and where its rows are grouped by the plan's
    key column, ``key_offsets`` (int32[key_size + 1]: code c's rows are
    ``key_offsets[c]:key_offsets[c + 1]``; a dummy, never read, when the chunk is unsorted)."""

    codes: object
    numerics: object
    n_rows: int
    n_columns: int
    n_numeric: int
    key_offsets: object


def upload_transposed(codes: np.ndarray, numerics: np.ndarray, plan: ExactPlan | None = None) -> DeviceChunk:
    """A chunk of checked real rows copied as they are and transposed on the device; grouped by
    ``plan.key_column``'s codes when the plan has one (a counting sort: tally, offsets,
    scatter)."""
    threads = _threads_per_block()
    n_rows, n_columns, n_numeric = codes.shape[0], codes.shape[1], numerics.shape[1]
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    numerics = np.ascontiguousarray(numerics, dtype=np.float64)
    if plan is None or plan.key_column < 0:
        blocks = _blocks(max(codes.size, numerics.size), threads, cuda_config.MAX_BLOCKS)
        parts = []
        for rows in (codes, numerics):
            out = cuda.device_array((max(rows.shape[1], 1), max(n_rows, 1)), rows.dtype)
            if rows.shape[1]:
                _transpose_kernel[blocks, threads](cuda.to_device(rows), out)
            parts.append(out)
        return DeviceChunk(*parts, n_rows, n_columns, n_numeric, cuda.device_array(1, np.int32))
    codes_rows = cuda.to_device(codes)
    numerics_rows = _upload(numerics)  # a dummy element when the table has no numeric column
    key_offsets = cuda.to_device(np.zeros(plan.key_size + 1, dtype=np.int32))
    cursor = cuda.device_array(plan.key_size, np.int32)
    row_blocks = _blocks(n_rows, threads, cuda_config.MAX_BLOCKS)
    _key_tally_kernel[row_blocks, threads](codes_rows, plan.key_column, key_offsets)
    _key_offsets_kernel[1, 1](key_offsets, cursor)
    codes_t = cuda.device_array((n_columns, n_rows), np.int32)
    numerics_t = cuda.device_array((max(n_numeric, 1), n_rows), np.float64)
    _sorted_transpose_kernel[row_blocks, threads](codes_rows, numerics_rows, n_numeric, plan.key_column,
                                                  cursor, codes_t, numerics_t)
    return DeviceChunk(codes_t, numerics_t, n_rows, n_columns, n_numeric, key_offsets)


def count_chunk(chunk: DeviceChunk, device_queries, plan: ExactPlan, counts) -> None:
    """Launch the kernels that add one chunk's counts (``upload_transposed(..., plan)``) into
    device ``counts``."""
    threads = _threads_per_block()
    n_rows, n_columns, n_numeric = chunk.n_rows, chunk.n_columns, chunk.n_numeric
    codes_t, numerics_t = chunk.codes, chunk.numerics
    width = n_columns + n_numeric
    rows_per_tile = int(min(cuda_config.EXACT_ROWS_PER_TILE, 62,
                            cuda_config.EXACT_SHARED_BYTES // (8 * max(width, 1))))
    rows_per_tile = max(1, rows_per_tile)
    shared_bytes = 8 * rows_per_tile * max(width, 1)
    dq = device_queries
    target = int(cuda_config.EXACT_TARGET_BLOCKS)
    if plan.n_groups:
        grid_x = _blocks(plan.n_groups, 1, cuda_config.MAX_BLOCKS)
        grid_y = max(1, min(-(-target // grid_x), -(-n_rows // threads), 65535))
        _exact_histogram_kernel[(grid_x, grid_y), threads](
            codes_t, numerics_t, n_rows, plan.groups, plan.group_offsets,
            plan.group_column_offsets, plan.group_columns, plan.column_sizes,
            dq.halfspace_offsets, dq.theta_offsets, dq.theta_index, dq.theta_weight, dq.tau,
            counts)
    if plan.n_listed and cuda_config.EXACT_WARP_PER_QUERY:
        warp_threads = max(32, threads - threads % 32)
        segment_rows = max(1, int(cuda_config.EXACT_WARP_SEGMENT_ROWS))
        grid_x = _blocks(plan.n_listed, warp_threads // 32, cuda_config.MAX_BLOCKS)
        grid_y = max(1, min(-(-n_rows // segment_rows), 65535))
        segment_rows = -(-n_rows // grid_y)
        kernel = _exact_warp_kernel(int(cuda_config.EXACT_WARP_MAX_REGISTERS))
        kernel[(grid_x, grid_y), warp_threads, 0, 4 * warp_threads](
            codes_t, numerics_t, n_rows, segment_rows, plan.query_list, plan.key_column,
            plan.list_key, chunk.key_offsets, dq.cat_offsets, dq.cat_coords, dq.coord_column, dq.coord_code,
            dq.halfspace_offsets, dq.theta_offsets, dq.theta_index, dq.theta_weight, dq.tau, counts)
    elif plan.n_listed:
        grid_x = _blocks(plan.n_listed, threads, cuda_config.MAX_BLOCKS)
        n_row_tiles = -(-n_rows // rows_per_tile)
        grid_y = max(1, min(n_row_tiles, -(-target // grid_x), 65535))
        _exact_tiled_kernel[(grid_x, grid_y), threads, 0, shared_bytes](
            codes_t, numerics_t, n_rows, n_columns, n_numeric, rows_per_tile,
            plan.query_list, dq.cat_offsets, dq.cat_coords, dq.coord_column, dq.coord_code,
            dq.halfspace_offsets, dq.theta_offsets, dq.theta_index, dq.theta_weight, dq.tau,
            counts)


def exact_counts(codes: np.ndarray, numerics: np.ndarray, device_queries, plan: ExactPlan) -> np.ndarray:
    """float64[n_queries] counts of rows satisfying each query (checked inputs, chunked).

    ``device_queries``: the workload's CSR arrays on the device (``cuda._DeviceQueries``).
    """
    n_rows = codes.shape[0]
    counts, host_counts = plan.counts()
    zero_counts(counts)
    chunk_rows = max(1, int(cuda_config.EXACT_CHUNK_ROWS))
    for start in range(0, n_rows, chunk_rows):
        stop = min(n_rows, start + chunk_rows)
        chunk = upload_transposed(codes[start:stop], numerics[start:stop], plan)
        count_chunk(chunk, device_queries, plan, counts)
    counts.copy_to_host(host_counts)
    return host_counts[: plan.n_queries].astype(np.float64)
