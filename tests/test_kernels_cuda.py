"""CUDA kernels: against the NumPy reference, gradients against finite differences, and the
device projection against ``projection.project`` with the reference backend.

Runs under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) and, unchanged, on a real GPU.
The simulator runs every thread as a Python thread, so the problems are tiny, and the launch
geometry is patched down (4 threads per block, 2-3 blocks, 5-row tiles, 16-row chunks, 3-step
polls) so that even tiny inputs span several blocks, row segments, query slices, tiles and
chunks, and every grid-stride loop turns more than once.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from numba import cuda

if not cuda.is_available():
    pytest.skip(
        "no GPU here: tests/test_cuda_simulator.py runs this module under NUMBA_ENABLE_CUDASIM=1",
        allow_module_level=True,
    )

from polars_rap.kernels import cuda as cuda_kernels  # noqa: E402
from polars_rap.kernels import cuda_config, reference  # noqa: E402
from polars_rap.fit.projection import ProjectionConfig, RelaxedParams, project  # noqa: E402
from polars_rap.workload.queries import QueryClass, QuerySet  # noqa: E402


def _lock_simulator_shared_arrays() -> None:
    """Numba's CUDA simulator allocates a block's ``cuda.shared.array`` on the first thread that
    asks, by a dictionary lookup then an insert with no lock: a thread preempted between them
    (under CPU load) gets an array of its own, and that block's reductions sum the wrong
    values (one CI run: a loss 8% off). Every thread of a block must see one array, as on a
    GPU: the allocation is made under a lock here. Simulator only; kernels are unchanged."""
    import threading
    import traceback

    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    allocate, lock = kernelapi.FakeCUDAShared.array, threading.Lock()
    if getattr(allocate, "locked", False):
        return

    def array(self, shape, dtype):
        if shape == 0:  # dynamic shared memory: one buffer, nothing allocated per call site
            return allocate(self, shape, dtype)
        if isinstance(dtype, numba.types.Type):
            dtype = numpy_support.as_dtype(dtype)
        caller = traceback.extract_stack(sys._getframe(1), limit=1)[-1][0:2]  # the kernel's line (the simulator's key)
        with lock:
            found = self._allocations.get(caller)
            if found is None:
                found = self._allocations[caller] = np.empty(shape, dtype)
        return found

    array.locked = True
    kernelapi.FakeCUDAShared.array = array


if numba.config.ENABLE_CUDASIM:
    _lock_simulator_shared_arrays()

# Tiny grids are the point here; on a real GPU numba would warn about each one.
pytestmark = pytest.mark.filterwarnings("ignore:Grid size .* under-utilization")

SMALL_GEOMETRY = {
    "THREADS_PER_BLOCK": 4,
    "MAX_BLOCKS": 3,
    "REDUCTION_BLOCKS": 2,
    "RELAXED_TARGET_BLOCKS": 6,
    "GRAD_TARGET_THREADS": 64,
    "EXACT_ROWS_PER_TILE": 5,
    "EXACT_TARGET_BLOCKS": 4,
    "EXACT_CHUNK_ROWS": 16,
    "PROJECTION_CHECK_EVERY": 3,
}
N_ROWS = 23  # > 16-row chunks, > 4 threads x 3 blocks, not a multiple of any of them


@pytest.fixture(autouse=True)
def small_geometry(monkeypatch):
    for name, value in SMALL_GEOMETRY.items():
        monkeypatch.setattr(cuda_config, name, value)


@pytest.fixture(autouse=True, scope="module")
def quick_thread_switches():
    """Under the simulator each CUDA thread is a Python thread: a block's threads meet at every
    ``syncthreads()`` while the simulator's block manager polls them in a busy loop, so each
    barrier waits on GIL hand-offs of up to Python's switch interval (5 ms by default). At
    0.5 ms the same launches run about 3x faster (this module: 278 s -> 98 s on 2 loaded
    cores); nothing computed changes (the relaxed kernels use no atomics, the exact ones integer
    atomics only). A real GPU runs no Python threads: the interval is left alone there."""
    if not numba.config.ENABLE_CUDASIM:
        yield
        return
    previous = sys.getswitchinterval()
    sys.setswitchinterval(5e-4)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


# ------------------------------------------------------------------------------ builders
COLUMN_SIZES = [2, 3, 1, 2]  # a one-category column; the label (2 values) last
N_NUMERIC = 3


def _halfspace(rng, width):
    index = rng.choice(N_NUMERIC, size=width, replace=False)
    weight = rng.standard_normal(width) / math.sqrt(width)
    return index.tolist(), weight.tolist(), float(weight @ rng.random(width))


def tiny_queries(rng) -> QuerySet:
    """Every query shape the kernels meet: categorical marginals of one to three columns (one
    over the one-category column), a mixed marginal sharing a prefix threshold, linear
    thresholds, a pure-halfspace query with two halfspaces, a repeated coordinate (x_c^2), and
    the empty product."""
    starts = np.cumsum(COLUMN_SIZES) - COLUMN_SIZES
    label = len(COLUMN_SIZES) - 1
    queries, group_sizes, group_columns, classes = [], [], [], []

    def add_group(columns, halfspaces, query_class):
        cells = np.indices([COLUMN_SIZES[c] for c in columns]).reshape(len(columns), -1).T
        for cell in cells:
            queries.append(([int(starts[c] + k) for c, k in zip(columns, cell)], halfspaces))
        group_sizes.append(len(cells))
        group_columns.append(list(columns))
        classes.extend([query_class] * len(cells))

    def add_single(coords, halfspaces, query_class):
        queries.append((coords, halfspaces))
        group_sizes.append(1)
        group_columns.append([])
        classes.append(query_class)

    add_group([0, 1], [], QueryClass.CATEGORICAL_MARGINAL)
    add_group([2, label], [], QueryClass.CATEGORICAL_MARGINAL)
    add_group([0, 1, label], [], QueryClass.CATEGORICAL_MARGINAL)  # class-conditional 3-way
    add_group([1], [], QueryClass.CATEGORICAL_MARGINAL)  # 1-way
    add_group([label], [([int(rng.integers(N_NUMERIC))], [1.0], float(rng.random()))],
              QueryClass.MIXED_MARGINAL)
    for width in (2, 3):
        add_single([int(starts[label] + rng.integers(2))], [_halfspace(rng, width)],
                   QueryClass.LINEAR_THRESHOLD)
    add_single([], [_halfspace(rng, 3), ([1], [1.0], 0.6)], QueryClass.LINEAR_THRESHOLD)
    add_single([int(starts[1] + 2), int(starts[1] + 2)], [], QueryClass.CATEGORICAL_MARGINAL)
    add_single([], [], QueryClass.CATEGORICAL_MARGINAL)
    return QuerySet.from_lists(queries, group_sizes, group_columns, COLUMN_SIZES, N_NUMERIC, classes)


def real_data(rng, column_sizes=COLUMN_SIZES, n_numeric=N_NUMERIC, n_rows=N_ROWS):
    codes = np.stack([rng.integers(0, k, size=n_rows) for k in column_sizes] or
                     [np.zeros(n_rows, dtype=np.int64)], axis=1)[:, : len(column_sizes)]
    return codes.astype(np.int32), rng.random((n_rows, n_numeric))


def relaxed_data(rng, dtype, column_sizes=COLUMN_SIZES, n_numeric=N_NUMERIC, n_rows=N_ROWS):
    blocks = [rng.dirichlet(np.ones(k), size=n_rows) for k in column_sizes]
    X = np.hstack([*blocks, rng.random((n_rows, n_numeric))])
    X[0, : sum(column_sizes)] = 0.0  # zero factors: the gradient must not divide by them
    return X.astype(dtype)


@pytest.fixture(params=[0, 1], ids=lambda seed: f"seed{seed}")
def problem(request):
    rng = np.random.default_rng(request.param)
    return rng, tiny_queries(rng)


def _assert_grad_close(actual, expected, rtol):
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1e-30)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


# float32 kernels compute sigmoids and products in float32 (hardware exp on a GPU):
# agreement to about 1e-6 relative; float64 kernels agree with the reference to rounding.
TOLERANCE = {np.float32: 2e-5, np.float64: 1e-10}


# ------------------------------------------------------------------------- availability
def test_is_available_is_false_under_the_simulator():
    """backend='auto' must never pick the simulator: is_available() is False there."""
    if numba.config.ENABLE_CUDASIM:
        assert cuda_kernels.is_available() is False
    else:
        assert cuda_kernels.is_available() is True


def test_threads_per_block_must_be_a_power_of_two(monkeypatch, problem):
    """The tree reductions halve the block: other sizes are refused on the host."""
    rng, queries = problem
    monkeypatch.setattr(cuda_config, "THREADS_PER_BLOCK", 6)
    with pytest.raises(ValueError, match="THREADS_PER_BLOCK must be a power of two"):
        cuda_kernels.answers_relaxed(relaxed_data(rng, np.float32), queries, 1.0)


def test_host_wrappers_validate_before_launching(problem):
    """Bad inputs raise the shared host checks' errors (kernels never validate)."""
    rng, queries = problem
    X = relaxed_data(rng, np.float32)
    with pytest.raises(ValueError, match="sigma must be > 0"):
        cuda_kernels.answers_relaxed(X, queries, -1.0)
    with pytest.raises(ValueError, match="X must have shape"):
        cuda_kernels.loss_and_grad(X[:, 1:], queries, np.zeros(queries.n_queries), 1.0)
    codes, numerics = real_data(rng)
    codes[3, 1] = 7
    with pytest.raises(ValueError, match="categorical column 1"):
        cuda_kernels.answers_exact(codes, numerics, queries)


# -------------------------------------------------------------------------- exact answers
def test_answers_exact_matches_reference_over_chunks_and_tiles(problem):
    """Counts over two 16-row chunks, 5-row tiles and 3 query blocks equal the reference
    exactly (float64 term-by-term dot products, never fused into an FMA)."""
    rng, queries = problem
    codes, numerics = real_data(rng)
    expected = reference.answers_exact(codes, numerics, queries)
    actual = cuda_kernels.answers_exact(codes, numerics, queries)
    assert actual.dtype == np.float64
    np.testing.assert_array_equal(actual, expected)


def test_marginal_groups_take_the_histogram_kernel_and_agree_with_the_tiled_one(problem):
    """The histogram pass over marginal groups (with a mixed marginal's shared threshold) and
    the tiled kernel over the same queries as single queries give the same counts."""
    from polars_rap.kernels import cuda_exact

    rng, queries = problem
    codes, numerics = real_data(rng)
    structured = cuda_exact.ExactPlan(queries)
    unstructured = cuda_exact.ExactPlan(queries, structured=False)
    assert structured.n_groups == 5 and unstructured.n_groups == 0
    device_queries = cuda_kernels._DeviceQueries(queries)
    counts = cuda_exact.exact_counts(codes, numerics, device_queries, structured)
    np.testing.assert_array_equal(
        counts, cuda_exact.exact_counts(codes, numerics, device_queries, unstructured))
    np.testing.assert_array_equal(counts / N_ROWS, reference.answers_exact(codes, numerics, queries))


@pytest.mark.parametrize(("warp", "sort", "segment_rows", "threads"),
                         [(1, 1, 5, 64), (1, 1, 64, 4), (1, 0, 5, 4), (0, 1, 5, 4)],
                         ids=["warp-2-per-block", "warp-1-per-block", "warp-unsorted", "tiled"])
def test_both_threshold_kernels_count_as_the_reference(problem, monkeypatch, warp, sort, segment_rows,
                                                       threads):
    """cuda_config.EXACT_WARP_PER_QUERY picks how the queries that are not whole marginals are
    counted: one warp per query (the default: lanes over rows, several row segments, held and
    walked queries; two warps per block, the second idle in a block's last round, or one; rows
    grouped by the label or not) or one thread per query over shared-memory tiles. All give
    the reference's counts, over chunks, with the marginal groups beside them or alone.
    (Two warps a block with sorted rows, one with unsorted rows: the warps' layout and the
    rows' order are independent, and sorted rows hold unkeyed queries that walk every row.)"""
    from polars_rap.kernels import cuda_exact

    rng, queries = problem
    codes, numerics = real_data(rng)
    monkeypatch.setattr(cuda_config, "EXACT_WARP_PER_QUERY", warp)
    monkeypatch.setattr(cuda_config, "EXACT_SORT_ROWS", sort)
    monkeypatch.setattr(cuda_config, "EXACT_WARP_SEGMENT_ROWS", segment_rows)
    monkeypatch.setattr(cuda_config, "THREADS_PER_BLOCK", threads)
    expected = reference.answers_exact(codes, numerics, queries)
    np.testing.assert_array_equal(cuda_kernels.answers_exact(codes, numerics, queries), expected)
    device_queries = cuda_kernels._DeviceQueries(queries)
    unstructured = cuda_exact.ExactPlan(queries, structured=False)  # every query by the warps
    np.testing.assert_array_equal(
        cuda_exact.exact_counts(codes, numerics, device_queries, unstructured) / N_ROWS, expected)


def test_rows_are_grouped_by_the_column_most_thresholds_test(problem):
    """The plan sorts by the label (tested by two listed thresholds; column 1 by one query that
    names one code twice) and gives each listed query its label code (-1: none); the chunk on
    the device holds the same rows, grouped by label code at ``key_offsets``."""
    from polars_rap.kernels import cuda_exact

    rng, queries = problem
    codes, numerics = real_data(rng)
    plan = cuda_exact.ExactPlan(queries)
    label = len(COLUMN_SIZES) - 1
    assert plan.key_column == label and plan.key_size == COLUMN_SIZES[label]
    listed = plan.query_list.copy_to_host()
    expected_keys = []
    for q in listed:
        coords = queries.cat_coords[queries.cat_offsets[q]:queries.cat_offsets[q + 1]]
        on_label = [int(queries.coord_code[c]) for c in coords if queries.coord_column[c] == label]
        expected_keys.append(on_label[0] if on_label else -1)
    assert len(expected_keys) == 5 and sum(key >= 0 for key in expected_keys) == 2
    np.testing.assert_array_equal(plan.list_key.copy_to_host(), expected_keys)

    chunk = cuda_exact.upload_transposed(codes, numerics, plan)
    sorted_codes = chunk.codes.copy_to_host().T
    sorted_numerics = chunk.numerics.copy_to_host().T
    offsets = chunk.key_offsets.copy_to_host()
    np.testing.assert_array_equal(offsets, np.concatenate([[0], np.cumsum(np.bincount(codes[:, label]))]))
    for code in range(COLUMN_SIZES[label]):
        assert np.all(sorted_codes[offsets[code]:offsets[code + 1], label] == code)
    original = np.hstack([codes, numerics])
    moved = np.hstack([sorted_codes, sorted_numerics])
    np.testing.assert_array_equal(original[np.lexsort(original.T[::-1])], moved[np.lexsort(moved.T[::-1])])


def test_a_group_larger_than_the_shared_histogram_counts_in_global_memory():
    """A marginal group of more cells than ``EXACT_HISTOGRAM_CELLS`` (65 x 64 > 4096) adds to
    the global counts directly, with the same result."""
    from polars_rap.kernels import cuda_exact

    sizes = [65, 64]
    assert sizes[0] * sizes[1] > cuda_exact._HISTOGRAM_CELLS
    cells = np.indices(sizes).reshape(2, -1).T + [0, sizes[0]]
    queries = QuerySet.from_lists([(list(map(int, c)), []) for c in cells], [len(cells)],
                                  [[0, 1]], sizes, 0)
    rng = np.random.default_rng(5)
    codes = np.stack([rng.integers(0, k, size=N_ROWS) for k in sizes], axis=1).astype(np.int32)
    codes[:6] = [3, 7]  # one cell counted several times, across blocks
    numerics = np.zeros((N_ROWS, 0))
    assert cuda_exact.ExactPlan(queries).n_groups == 1
    np.testing.assert_array_equal(cuda_kernels.answers_exact(codes, numerics, queries),
                                  reference.answers_exact(codes, numerics, queries))


def test_hard_thresholds_on_the_boundary_agree_to_the_bit():
    """Rows exactly on a threshold (theta . x == tau in float64) count as inside, in the
    exact and in the sigma=inf relaxed kernels, as in the reference."""
    weights = [0.5, 0.25, 0.125]
    x = np.array([0.5, 0.25, 0.75])
    tau = 0.40625  # = weights . x, exact in float32 and float64
    numerics = np.tile(x, (9, 1))
    numerics[::2, 2] += 1e-12  # just outside on even rows
    queries = QuerySet.from_lists([([], [([0, 1, 2], weights, tau)])], [1], [[]], [], 3)
    codes = np.zeros((9, 0), dtype=np.int32)
    expected = reference.answers_exact(codes, numerics, queries)
    np.testing.assert_array_equal(cuda_kernels.answers_exact(codes, numerics, queries), expected)
    assert 0 < expected[0] < 1
    relaxed_expected = reference.answers_relaxed(numerics, queries, np.inf)
    np.testing.assert_array_equal(cuda_kernels.answers_relaxed(numerics, queries, np.inf),
                                  relaxed_expected)


# ------------------------------------------------------------------------ relaxed answers
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("sigma", [3.0, 1e4, np.inf, "mixed"])
def test_answers_relaxed_matches_reference(problem, dtype, sigma):
    """Relaxed answers equal the reference for soft, very sharp, hard and per-query mixed
    (some inf) temperatures; float32 output."""
    rng, queries = problem
    X = relaxed_data(rng, dtype)
    if sigma == "mixed":
        sigma = rng.choice([np.inf, 0.5, 20.0], size=queries.n_queries).astype(np.float32)
    expected = reference.answers_relaxed(X, queries, sigma)
    actual = cuda_kernels.answers_relaxed(X, queries, sigma)
    assert actual.dtype == np.float32
    np.testing.assert_allclose(actual, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


# ------------------------------------------------------------------------ loss + gradient
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("sigma", [3.0, np.inf, "mixed"])
def test_loss_and_grad_matches_reference(problem, dtype, sigma):
    """Loss and gradient (three query slices, summed on the device) equal the reference,
    including rows whose categorical factors are exactly zero."""
    rng, queries = problem
    X = relaxed_data(rng, dtype)
    targets = rng.random(queries.n_queries)
    if sigma == "mixed":
        sigma = rng.choice([np.inf, 0.5, 20.0], size=queries.n_queries).astype(np.float32)
    loss, grad = cuda_kernels.loss_and_grad(X, queries, targets, sigma)
    expected_loss, expected_grad = reference.loss_and_grad(X, queries, targets, sigma)
    assert isinstance(loss, float)
    assert grad.dtype == X.dtype and grad.shape == X.shape and grad.flags.c_contiguous
    assert loss == pytest.approx(expected_loss, rel=TOLERANCE[dtype])
    _assert_grad_close(grad, expected_grad, TOLERANCE[dtype])


def test_weighted_loss_and_grad_matches_reference(problem):
    """Per-query loss weights: the device's loss and gradient equal the reference's."""
    rng, queries = problem
    X = relaxed_data(rng, np.float64)
    targets = rng.random(queries.n_queries)
    weights = rng.random(queries.n_queries) * 4.0
    loss, grad = cuda_kernels.loss_and_grad(X, queries, targets, 3.0, weights)
    expected_loss, expected_grad = reference.loss_and_grad(X, queries, targets, 3.0, weights)
    assert loss == pytest.approx(expected_loss, rel=TOLERANCE[np.float64])
    _assert_grad_close(grad, expected_grad, TOLERANCE[np.float64])


def test_float32_gradient_keeps_the_small_slopes_of_sharp_thresholds():
    """Far from a sharp threshold (|sigma * margin| = 16 .. 24) the slope sigma s (1 - s) is
    tiny but not zero; float32 kernels must keep it to float32 relative precision, on both
    sides (1 - s would round to 0 in float32): Adam's normalisation still follows gradients
    down to about 1e-10."""
    queries = QuerySet.from_lists([([], [([0], [1.0], 0.5)])], [1], [[]], [], 1)
    X = np.array([[0.2], [0.3], [0.7], [0.8]], dtype=np.float32)
    _, grad = cuda_kernels.loss_and_grad(X, queries, np.array([0.9]), 80.0)
    _, expected = reference.loss_and_grad(X.astype(np.float64), queries, np.array([0.9]), 80.0)
    assert np.all(expected != 0.0)
    np.testing.assert_allclose(grad, expected, rtol=1e-4)


@pytest.mark.parametrize("sigma", [3.0, 30.0])
def test_gradient_matches_finite_differences(problem, sigma):
    """<dL/dX, v> equals the central difference of the float64 loss along random v."""
    rng, queries = problem
    X = relaxed_data(rng, np.float64)
    targets = rng.random(queries.n_queries)
    _, grad = cuda_kernels.loss_and_grad(X, queries, targets, sigma)

    step = 1e-6
    for _ in range(2):
        direction = rng.standard_normal(X.shape)
        up, _ = cuda_kernels.loss_and_grad(X + step * direction, queries, targets, sigma)
        down, _ = cuda_kernels.loss_and_grad(X - step * direction, queries, targets, sigma)
        numeric = (up - down) / (2 * step)
        analytic = float(np.sum(grad * direction))
        assert analytic == pytest.approx(numeric, rel=1e-6, abs=1e-9)


def test_results_are_deterministic(problem):
    """No atomics in the relaxed path: the same input gives the same bits."""
    rng, queries = problem
    X = relaxed_data(rng, np.float32)
    targets = rng.random(queries.n_queries)
    first = cuda_kernels.loss_and_grad(X, queries, targets, 3.0)
    second = cuda_kernels.loss_and_grad(X, queries, targets, 3.0)
    assert first[0] == second[0]
    np.testing.assert_array_equal(first[1], second[1])


# ------------------------------------------------------------------- nullable numerics
def _null_problem():
    """The nullable-numerics problem of ``test_null_halfspaces.py`` (halfspaces reading 0, 1
    and 2 nullable columns, in marginal groups and single queries)."""
    path = Path(__file__).with_name("test_null_halfspaces.py")
    spec = importlib.util.spec_from_file_location("null_halfspaces_problem", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("dtype", "sigma", "wide"),
                         [(np.float64, 3.0, False), (np.float64, np.inf, False),
                          (np.float32, 3.0, False), (np.float64, 3.0, True)],
                         ids=["f64-3", "f64-inf", "f32-3", "wide-f64-3"])
def test_nullable_halfspaces_match_reference(dtype, sigma, wide):
    """Halfspaces over nullable numerics (the expectation over their null indicators; wide:
    more nullable columns than the exact ones, the rest at their expected value): answers,
    loss and gradient, null-code coordinates included, equal the reference."""
    problem = _null_problem()
    rng = np.random.default_rng(5)
    queries = problem.wide_queries() if wide else problem.null_queries()
    X = (problem.wide_relaxed if wide else problem.relaxed)(rng, N_ROWS, dtype)
    targets = rng.random(queries.n_queries)
    np.testing.assert_allclose(cuda_kernels.answers_relaxed(X, queries, sigma),
                               reference.answers_relaxed(X, queries, sigma),
                               rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    loss, grad = cuda_kernels.loss_and_grad(X, queries, targets, sigma)
    expected_loss, expected_grad = reference.loss_and_grad(X, queries, targets, sigma)
    assert loss == pytest.approx(expected_loss, rel=TOLERANCE[dtype])
    _assert_grad_close(grad, expected_grad, TOLERANCE[dtype])
    assert np.abs(grad[:, [c for c in queries.null_coord if c >= 0]]).max() > 0.0


def test_null_probability_zero_gives_the_plain_factor_to_the_bit():
    """With q = 0 everywhere the device's answers and (non-null-code) gradient are those of
    the same queries without nullable columns, bit for bit."""
    import dataclasses

    problem = _null_problem()
    rng = np.random.default_rng(6)
    queries = problem.null_queries()
    plain = dataclasses.replace(queries, null_coord=np.full(queries.n_numeric, -1, np.int32))
    X = problem.relaxed(rng, N_ROWS, np.float32)
    X[:, [5, 7]], X[:, [6, 8]] = 1.0, 0.0
    targets = rng.random(queries.n_queries)
    np.testing.assert_array_equal(cuda_kernels.answers_relaxed(X, queries, 3.0),
                                  cuda_kernels.answers_relaxed(X, plain, 3.0))
    loss, grad = cuda_kernels.loss_and_grad(X, queries, targets, 3.0)
    plain_loss, plain_grad = cuda_kernels.loss_and_grad(X, plain, targets, 3.0)
    assert loss == plain_loss
    keep = [c for c in range(queries.n_coords) if c not in (6, 8)]
    np.testing.assert_array_equal(grad[:, keep], plain_grad[:, keep])


# ------------------------------------------------------------------------------ edge cases
def _check_all_three(queries, column_sizes, n_numeric, rng, sigma=3.0):
    codes, numerics = real_data(rng, column_sizes, n_numeric)
    np.testing.assert_array_equal(cuda_kernels.answers_exact(codes, numerics, queries),
                                  reference.answers_exact(codes, numerics, queries))
    X = relaxed_data(rng, np.float64, column_sizes, n_numeric)
    np.testing.assert_allclose(cuda_kernels.answers_relaxed(X, queries, sigma),
                               reference.answers_relaxed(X, queries, sigma), rtol=1e-6, atol=1e-7)
    targets = rng.random(queries.n_queries)
    loss, grad = cuda_kernels.loss_and_grad(X, queries, targets, sigma)
    expected_loss, expected_grad = reference.loss_and_grad(X, queries, targets, sigma)
    assert loss == pytest.approx(expected_loss, rel=1e-10)
    _assert_grad_close(grad, expected_grad, 1e-10)


def test_workload_without_halfspaces_and_without_numerics():
    """Categorical queries only, on a table with no numeric column at all."""
    rng = np.random.default_rng(3)
    sizes = [3, 1, 2]
    queries = QuerySet.from_lists(
        [([0, 3], []), ([1, 4], []), ([2, 3], []), ([3], []), ([0, 1, 5], [])],
        [1] * 5, [[]] * 5, sizes, 0)
    _check_all_three(queries, sizes, 0, rng)


def test_pure_halfspace_workload_without_categorical_columns():
    """Halfspace-only queries (one and two halfspaces, one prefix) on numerics alone."""
    rng = np.random.default_rng(4)
    queries = QuerySet.from_lists(
        [([], [([0, 1], [0.5, -0.4], 0.1)]),
         ([], [([2], [1.0], 0.5), ([0, 1, 2], [0.3, 0.3, 0.3], 0.45)]),
         ([], [([1], [1.0], 0.25)])],
        [1, 1, 1], [[], [], []], [], 3)
    _check_all_three(queries, [], 3, rng, sigma=10.0)


def test_one_category_column_marginal():
    """A marginal over a single-category column: its only cell is the whole data."""
    rng = np.random.default_rng(5)
    sizes = [1, 2]
    queries = QuerySet.from_lists([([0, 1], []), ([0, 2], [([0], [1.0], 0.5)])], [2],
                                  [[0, 1]], sizes, 1)
    _check_all_three(queries, sizes, 1, rng)


def test_empty_query_set():
    """No queries: empty answers of the right dtypes, zero loss and gradient."""
    rng = np.random.default_rng(6)
    queries = QuerySet.from_lists([], [], [], COLUMN_SIZES, N_NUMERIC)
    codes, numerics = real_data(rng)
    exact = cuda_kernels.answers_exact(codes, numerics, queries)
    assert exact.shape == (0,) and exact.dtype == np.float64
    X = relaxed_data(rng, np.float32)
    relaxed = cuda_kernels.answers_relaxed(X, queries, np.inf)
    assert relaxed.shape == (0,) and relaxed.dtype == np.float32
    loss, grad = cuda_kernels.loss_and_grad(X, queries, np.zeros(0), 1.0)
    assert loss == 0.0 and grad.dtype == np.float32 and not grad.any()


# ----------------------------------------------------------------------------- projection
def _projection_problem(seed):
    rng = np.random.default_rng(seed)
    queries = tiny_queries(rng)
    codes, numerics = real_data(rng, n_rows=40)
    targets = reference.answers_exact(codes, numerics, queries)  # a hidden dataset's answers
    params = RelaxedParams.random(9, COLUMN_SIZES, N_NUMERIC, rng)
    return queries, targets, params


def test_device_projection_follows_the_reference_trajectory():
    """Same stages, same step count, same best iterate up to float32 rounding.

    The device loop runs the same float32 Adam in the same operation order and makes the
    plateau / gradient-norm decisions on the device after every step, so the stop steps are
    the reference's exactly (here a plateau stops each stage before max_steps, between two
    3-step host polls, so steps launched after the stop must be no-ops); the values differ
    only by float32 rounding (exp, summation order).
    """
    queries, targets, params = _projection_problem(7)
    config = ProjectionConfig(learning_rate=0.2, max_steps=7, patience=2, min_improvement=0.3,
                              max_doublings=1)  # stage 1 stops on a plateau after 5 steps
    expected, expected_trace = project(params, queries, targets, reference, config)
    actual, trace = project(params, queries, targets, cuda_kernels, config)
    assert expected_trace.steps < config.max_steps * expected_trace.stages  # a plateau stop
    assert (trace.steps, trace.stages) == (expected_trace.steps, expected_trace.stages)
    assert trace.exact_loss == pytest.approx(expected_trace.exact_loss, rel=1e-5)
    assert trace.exact_loss < _exact_loss(params, queries, targets)
    assert isinstance(actual, RelaxedParams)
    assert actual.values.dtype == np.float32 and actual.values.shape == params.values.shape
    np.testing.assert_array_equal(actual.block_starts, params.block_starts)
    assert actual.numeric_offset == params.numeric_offset
    np.testing.assert_allclose(actual.values, expected.values, rtol=1e-4, atol=1e-4)
    numerics = actual.values[:, actual.numeric_offset:]
    assert numerics.min() >= 0.0 and numerics.max() <= 1.0


def test_projection_delegates_to_the_device_loop_without_annealing():
    """``projection.project`` with this backend runs the device loop (its delegation call
    form), and ``anneal=False`` runs one stage at the final temperature, as the reference."""
    queries, targets, params = _projection_problem(9)
    config = ProjectionConfig(learning_rate=0.2, max_steps=4, patience=2, max_doublings=2)
    expected, expected_trace = project(params, queries, targets, reference, config, anneal=False)
    actual, trace = project(params, queries, targets, cuda_kernels, config, anneal=False)
    assert trace.stages == expected_trace.stages == 1
    assert trace.steps == expected_trace.steps
    assert trace.exact_loss == pytest.approx(expected_trace.exact_loss, rel=1e-5)
    np.testing.assert_allclose(actual.values, expected.values, rtol=1e-4, atol=1e-4)


def test_weighted_device_projection_follows_the_reference():
    """With loss weights the device loop takes the reference's steps and reaches its iterate."""
    queries, targets, params = _projection_problem(11)
    weights = np.random.default_rng(3).random(queries.n_queries) * 2.0 + 0.1
    config = ProjectionConfig(learning_rate=0.2, max_steps=5, patience=2, max_doublings=1)
    expected, expected_trace = project(params, queries, targets, reference, config, weights=weights)
    actual, trace = project(params, queries, targets, cuda_kernels, config, weights=weights)
    assert (trace.steps, trace.stages) == (expected_trace.steps, expected_trace.stages)
    assert trace.exact_loss == pytest.approx(expected_trace.exact_loss, rel=1e-5)
    np.testing.assert_allclose(actual.values, expected.values, rtol=1e-4, atol=1e-4)


def _exact_loss(params, queries, targets):
    answers = reference.answers_relaxed(params.relaxed(), queries, np.inf)
    return float(np.sum((answers.astype(np.float64) - targets) ** 2))


def test_device_projection_without_queries_matches_the_reference():
    """No queries: one step (zero gradient), one stage, the start returned unchanged."""
    rng = np.random.default_rng(8)
    queries = QuerySet.from_lists([], [], [], COLUMN_SIZES, N_NUMERIC)
    params = RelaxedParams.random(5, COLUMN_SIZES, N_NUMERIC, rng)
    expected, expected_trace = project(params, queries, np.zeros(0), reference)
    actual, trace = project(params, queries, np.zeros(0), cuda_kernels)
    assert trace == expected_trace
    np.testing.assert_array_equal(actual.values, params.values)


# -------------------------------------------------------------------------------- bench
def test_bench_script_smoke_run(tmp_path):
    """``bench/gpu_kernels.py --smoke`` runs end to end and writes its JSON record."""
    path = Path(__file__).resolve().parents[1] / "bench" / "gpu_kernels.py"
    spec = importlib.util.spec_from_file_location("gpu_kernels_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    output = bench.main(["--smoke", "--out-dir", str(tmp_path)])
    record = json.loads(Path(output).read_text())
    assert record["device"]["name"]
    assert record["kernels"] and all("error" not in case for case in record["kernels"])
    assert record["exact"] and "error" not in record["exact"]

