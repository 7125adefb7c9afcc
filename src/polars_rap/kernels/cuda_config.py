"""Launch geometry and math flags of the CUDA kernels, in one place (design.md §6).

``polars_rap.kernels.cuda`` reads these names when it launches a kernel, so a test (or a
user tuning for another GPU) may patch them at run time, e.g. with pytest's ``monkeypatch``:
the tests shrink ``THREADS_PER_BLOCK`` and the block caps so that tiny inputs span several
blocks and every grid-stride loop turns more than once under the CUDA simulator.

Grids are capped and every kernel walks its items with a grid-stride loop, so no size here is
a correctness limit: they trade parallelism against per-block reuse and scratch memory.
The defaults aim at a data-centre GPU (H100/H200: 132 SMs, 2048 resident threads each).
"""

from __future__ import annotations

#: Threads per block of every kernel. Must be a power of two (the block-wide tree reductions
#: halve it); the kernels that hold it in a shared array are compiled once per value.
THREADS_PER_BLOCK = 128

#: Most blocks of a one-dimensional grid-stride kernel (gradient, slice sums, softmax), and
#: most query blocks (grid x) of the relaxed-answer and exact-answer kernels.
MAX_BLOCKS = 8192

#: Blocks of the kernels that leave one partial sum per block (residuals -> loss, Adam ->
#: gradient norm). The partial sums are added in block order by the next kernel, so the loss
#: and the gradient norm are deterministic: same input, same bits.
REDUCTION_BLOCKS = 256

#: Blocks the relaxed-answer kernel aims for (queries x row segments): with few queries the
#: rows of each query are split over several blocks (grid y), summed in order afterwards.
RELAXED_TARGET_BLOCKS = 4096

#: Threads the gradient kernel aims for: it runs one thread per (query slice, relaxed row)
#: and adds the slices afterwards, so few rows still fill the device.
GRAD_TARGET_THREADS = 1 << 18

#: Largest scratch buffer of per-slice gradients, in bytes (bounds the number of slices).
GRAD_SLICE_BYTES = 1 << 30

#: Real rows per shared-memory tile of the exact-answer kernel: each thread keeps one bit per
#: row of the tile in a 64-bit mask, so at most 62.
EXACT_ROWS_PER_TILE = 32

#: Shared memory of one exact-answer tile, in bytes (rows x (codes + numerics) x 8); the row
#: count of a tile shrinks for very wide tables.
EXACT_SHARED_BYTES = 32 * 1024

#: Cells of the shared-memory histogram with which the exact-answer kernel counts a marginal
#: group (int32 each: 16 KiB); larger groups count with global atomics. Read when
#: ``kernels.cuda_exact`` is imported (a compile-time constant of its kernel).
EXACT_HISTOGRAM_CELLS = 4096

#: Count the queries that are not whole marginals (linear thresholds) with one warp per query,
#: its lanes over the rows (``cuda_exact._exact_warp``), instead of one thread per query
#: over shared-memory tiles of rows (the tiled kernel, 0). On an H200, kernels_cpu.py's 20,000
#: thresholds x 35,000 rows: 8.7 ms against the tiled kernel's 11.9 (bench/results/gpu_rounds.md).
EXACT_WARP_PER_QUERY = 1

#: Sort each chunk's rows on the device by the categorical column that most of those queries
#: test (the label, for class-conditional thresholds; ``cuda_exact._sort_key``), so that the
#: warp kernel walks only the rows of its query's code on that column instead of every row
#: (0: every query walks every row). Counts are the same either way (integer counts of the
#: same tests); only the rows' order on the device changes.
EXACT_SORT_ROWS = 1

#: Rows of one segment of the warp-per-query kernel (grid y); with a few thousand rows a
#: segment's columns stay in the SM's L1 cache while the block's warps read them (measured on
#: the workload above: 512 rows 10.1 ms, 2,048 rows 8.7, 8,192 rows 9.1).
EXACT_WARP_SEGMENT_ROWS = 2048

#: Most registers per thread of the warp-per-query kernel (0: the compiler's choice). Its
#: occupancy is bound by registers: the compiler's 128 per thread leave 16 of 64 warps per SM
#: resident (Nsight Compute on an H200). Measured there on kernels_cpu.py's thresholds: 0 4.80 ms,
#: 80 4.36, 64 4.43, 48 5.15 (bench/results/gpu_h200_round4c).
EXACT_WARP_MAX_REGISTERS = 80

#: Blocks the exact-answer kernels aim for (query tiles or marginal groups x row segments).
EXACT_TARGET_BLOCKS = 4096

#: Real rows copied to the device per chunk by ``answers_exact`` (counts are summed on the
#: device across chunks, so the input may be larger than device memory).
EXACT_CHUNK_ROWS = 1 << 20

#: Adam steps launched between two reads of the device-side stop flag by the host. The
#: plateau and gradient-norm tests run on the device after every step (exactly as in
#: ``projection.project``); steps launched after a stop are no-ops, so this only trades a
#: host round trip against a few empty launches.
PROJECTION_CHECK_EVERY = 16

#: ``fastmath=`` of each kernel family, read when its kernels are first built. Off by default:
#: LLVM's fast-math flags include ``reassoc`` (it may reorder the float64 halfspace dot
#: products, and hard thresholds would no longer agree with ``reference`` to the bit) and
#: ``ninf``/``nnan``. Speed comes from ``FAST_EXP_FLOAT32`` instead.
FASTMATH = {"exact": False, "relaxed": False, "projection": False}

#: Use the hardware ``__expf`` approximation (about 2 ulp) in the float32 sigmoid. The float64
#: kernels (float64 ``X``, used by the finite-difference tests) always use the precise exp.
FAST_EXP_FLOAT32 = True
