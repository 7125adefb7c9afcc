"""GPU benchmark of the CUDA kernels (design.md §7); writes ``bench/results/gpu_<device>.json``.

On a GPU machine, ``bash bench/gpu_session.sh`` runs the CUDA tests and then this script
section by section, each with its own time limit (a command there may run 10 minutes at
most). The JSON is rewritten after every section and every exact-answer part, so a run cut
short keeps what it measured; runs of other sections merge into the same file:
``python bench/gpu_kernels.py --sections kernels exact`` then ``--sections e2e``.
``--set NAME=VALUE`` overrides a ``cuda_config`` value for the run; ``--e2e-tag`` and
``--e2e-profile`` record an end-to-end variant and its cProfile summary under their own key.

Smoke run of this script under the CUDA simulator (tiny sizes, no JAX/PyTorch, no ACS; the
test suite runs it):

    NUMBA_ENABLE_CUDASIM=1 python bench/gpu_kernels.py --smoke

What it measures
----------------
``kernels``
    For n_rel in {1e3, 1e4, 1e5} relaxed rows x m in {1e3, 1e5, 1e6} queries (60% cells of
    class-conditional 3-way marginals, 40% class-conditional linear thresholds over 3-6 of 6
    numerics): relaxed answers and the fused loss + gradient on device-resident data, timed
    with CUDA events (3 warm-up calls, median of 20; at least 5 where 20 would take over
    ``BUDGET_S``). Reports query.row evaluations per second and the fraction of the FP32
    peak reached by a nominal FLOP count (see ``FLOP_MODEL``).
    Up to 1e7 evaluations the loss and gradient are also checked against the Numba CPU
    backend; up to 1e9, the seconds per Adam step of the device projection are measured.
    No combination is skipped for memory here: the workload's CSR arrays (~60 MB at m = 1e6)
    and the gradient slices (capped by ``GRAD_SLICE_BYTES``) fit any data-centre GPU.
``baselines``
    The same relaxed loss and gradient written densely with JAX
    (``jax.jit(jax.value_and_grad(...))``) and PyTorch autograd on the same GPU, over chunks
    of as many queries as keep their dense n x chunk x k intermediates under ``CHUNK_BYTES``
    (JAX: ``lax.map`` of a rematerialised chunk loss), up to n_rel x m = 1e10; timed by wall
    clock after synchronisation, median of 20, next to ours timed the same way.
    Also records how far their loss and gradient are from ours.
``tune``
    Relaxed answers and the gradient under one-at-a-time changes of the launch geometry
    (``TUNE_VARIANTS``) at three (n_rel, m) cells.
``exact``
    Exact answers (hard thresholds) on ``bench/kernels_cpu.py``'s exact workload (35,000 rows
    x 413,982 queries, rebuilt from its seed) beside the committed 2-core CPU figure, then on
    n = 1e6 real rows x m = 1e5 queries; host-to-device copy included, and timed alone.
``e2e``
    ``polars_rap.synthesize`` on all 51 ACS person files (``--data-dir``), preprocessed as
    the acs-income-CA task and with its public domain, at epsilon = 1, delta = 1e-9, for each
    of ``--e2e-backends`` and ``--e2e-seeds``: seconds each, and the synthetic tables in
    ``e2e_synthetic.parquet`` (scored by ``bench/gpu_e2e.py`` beside the 2-core CPU runs).

FP32 peak = SM count x FP32 cores per SM x 2 (an FMA is two FLOPs) x clock (the device's
reported clock rate, boost on data-centre parts); cores per SM from ``FP32_CORES_PER_SM``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import re
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import numba  # noqa: E402
from numba import cuda  # noqa: E402

from polars_rap.kernels import cuda as cuda_kernels  # noqa: E402
from polars_rap.kernels import cuda_config, cuda_exact  # noqa: E402
from polars_rap.queries import QueryClass, QuerySet, _offsets  # noqa: E402

SIMULATED = bool(numba.config.ENABLE_CUDASIM)

#: FP32 cores per SM by compute capability (CUDA C Programming Guide, "Arithmetic
#: Instructions" throughput table).
FP32_CORES_PER_SM = {
    (6, 0): 64, (6, 1): 128, (7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128,
    (8, 9): 128, (9, 0): 128, (10, 0): 128, (12, 0): 128,
}
PEAK_FORMULA = "fp32_peak_flops = sm_count * fp32_cores_per_sm * 2 * clock_hz"

#: Nominal FLOPs per query.row evaluation, used only for the "fraction of FP32 peak" figure.
FLOP_MODEL = {
    "forward": "1 per categorical factor; per halfspace 2 per weight (float64 dot) + 8 "
               "(sigmoid: scale, exp, add, divide, product); 1 for the row sum",
    "loss_and_grad": "3 x forward (forward pass, then prefix/suffix products and gradient "
                     "accumulation, which recompute the factors)",
    "exact": "1 per categorical compare; per halfspace 2 per weight + 1 compare",
}

FULL = {
    "n_rel": [1_000, 10_000, 100_000],
    "m": [1_000, 100_000, 1_000_000],
    "exact": (1_000_000, 100_000),
    "warmup": 3,
    "repeats": 20,
}
SMOKE = {"n_rel": [9], "m": [12, 30], "exact": (40, 12), "warmup": 1, "repeats": 1}
SMOKE_GEOMETRY = {
    "THREADS_PER_BLOCK": 4, "MAX_BLOCKS": 3, "REDUCTION_BLOCKS": 2, "RELAXED_TARGET_BLOCKS": 6,
    "GRAD_TARGET_THREADS": 32, "EXACT_ROWS_PER_TILE": 8, "EXACT_TARGET_BLOCKS": 4,
    "EXACT_CHUNK_ROWS": 32,
}

#: Categorical feature sizes of the synthetic benchmark layout (plus a 2-valued label).
FEATURE_SIZES = [2, 3, 4, 5, 6, 8, 9, 10, 16, 24]
N_NUMERIC = 6
SIGMA = 8.0


# ------------------------------------------------------------------------------- device
def device_info() -> dict:
    """Name, compute capability, SM count, clock, and the FP32 peak with its formula."""
    if SIMULATED:
        return {"name": "CUDA simulator", "simulator": True, "fp32_peak_flops": None,
                "peak_formula": PEAK_FORMULA}
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    capability = tuple(device.compute_capability)
    sm_count = int(device.MULTIPROCESSOR_COUNT)
    clock_khz = int(device.CLOCK_RATE)
    cores = FP32_CORES_PER_SM.get(capability)
    peak = sm_count * cores * 2 * clock_khz * 1e3 if cores else None
    free, total = cuda.current_context().get_memory_info()
    return {
        "name": name, "simulator": False, "compute_capability": list(capability),
        "sm_count": sm_count, "clock_khz": clock_khz, "fp32_cores_per_sm": cores,
        "fp32_peak_flops": peak, "peak_formula": PEAK_FORMULA,
        "memory_total_bytes": int(total), "memory_free_bytes_at_start": int(free),
    }


def free_memory() -> int:
    if SIMULATED:
        return 1 << 30
    return int(cuda.current_context().get_memory_info()[0])


def _timing_event():
    try:
        return cuda.event(timing=True)
    except TypeError:  # the simulator's events take no arguments (and time nothing)
        return cuda.event()


#: Seconds of timed calls one measurement may take: a call slower than BUDGET_S / repeats is
#: repeated fewer times (never under MIN_REPEATS), and the record says so.
BUDGET_S = 12.0
MIN_REPEATS = 5


def _repeats_within_budget(seconds_per_call: float, repeats: int) -> int:
    if seconds_per_call * repeats <= BUDGET_S:
        return repeats
    return max(MIN_REPEATS, min(repeats, int(BUDGET_S / max(seconds_per_call, 1e-9))))


def time_events(launch, warmup: int, repeats: int) -> dict:
    """Median seconds of ``launch()`` (device work only) by CUDA events; fewer repeats
    (at least ``MIN_REPEATS``) when ``repeats`` calls would take over ``BUDGET_S``."""
    wanted = repeats
    for i in range(warmup):
        started = time.perf_counter()
        launch()
        cuda.synchronize()
        elapsed = time.perf_counter() - started
        repeats = _repeats_within_budget(elapsed, wanted)
        if i >= 1 and elapsed > 1.0:  # compiled and slow: more warm-ups only cost time
            break
    cuda.synchronize()
    seconds = []
    for _ in range(repeats):
        start, stop = _timing_event(), _timing_event()
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        with warnings.catch_warnings():  # the simulator warns that its timings are bogus
            warnings.simplefilter("ignore")
            seconds.append(start.elapsed_time(stop) / 1e3)
    return {"median_s": statistics.median(seconds), "min_s": min(seconds), "repeats": repeats,
            "repeats_wanted": wanted, "timer": "cuda events"}


def time_wall(call, synchronize, warmup: int, repeats: int) -> dict:
    """Median wall-clock seconds of ``call(); synchronize()`` (repeats capped as in
    ``time_events``)."""
    wanted = repeats
    for i in range(warmup):
        started = time.perf_counter()
        call()
        synchronize()
        elapsed = time.perf_counter() - started
        repeats = _repeats_within_budget(elapsed, wanted)
        if i >= 1 and elapsed > 1.0:
            break
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        synchronize()
        seconds.append(time.perf_counter() - start)
    return {"median_s": statistics.median(seconds), "min_s": min(seconds), "repeats": repeats,
            "repeats_wanted": wanted, "timer": "wall clock after synchronize"}


# ----------------------------------------------------------------------------- workload
def make_workload(n_queries: int, rng: np.random.Generator) -> QuerySet:
    """A realistic mix: 60% cells of class-conditional 3-way marginals (two features x the
    label, whole marginals cycling over feature pairs), 40% linear thresholds (one label value
    times one halfspace over 3-6 of the numerics, theta ~ N(0, I)/sqrt(w), tau = theta . u)."""
    column_sizes = np.array([*FEATURE_SIZES, 2], dtype=np.int32)
    starts = np.cumsum(column_sizes) - column_sizes
    label = len(column_sizes) - 1
    n_cells = int(round(0.6 * n_queries))
    pairs = [(i, j) for i in range(len(FEATURE_SIZES)) for j in range(i + 1, len(FEATURE_SIZES))]
    order = rng.permutation(len(pairs))
    cat_parts, group_sizes, group_columns, made = [], [], [], 0
    k = 0
    while made < n_cells:
        i, j = pairs[order[k % len(pairs)]]
        k += 1
        shape = (column_sizes[i], column_sizes[j], 2)
        cells = np.indices(shape).reshape(3, -1).T + starts[[i, j, label]]
        take = min(len(cells), n_cells - made)
        cat_parts.append(cells[:take].astype(np.int32))
        if take == len(cells):
            group_sizes.append(take)
            group_columns.append([i, j, label])
        else:  # a partial marginal: its cells as single-query groups
            group_sizes.extend([1] * take)
            group_columns.extend([[]] * take)
        made += take
    n_thresholds = n_queries - n_cells
    widths = rng.integers(3, N_NUMERIC + 1, size=n_thresholds)
    chosen = np.argsort(rng.random((n_thresholds, N_NUMERIC)), axis=1)
    keep = np.arange(N_NUMERIC)[None, :] < widths[:, None]
    theta_index = chosen[keep].astype(np.int32)
    theta_weight = (rng.standard_normal(len(theta_index)) / np.repeat(np.sqrt(widths), widths))
    point = rng.random(len(theta_index))
    tau = np.add.reduceat(theta_weight * point, _offsets(widths)[:-1]) if n_thresholds else np.zeros(0)
    label_coords = (starts[label] + rng.integers(0, 2, size=n_thresholds)).astype(np.int32)
    cat_coords = np.concatenate([*(c.ravel() for c in cat_parts), label_coords]).astype(np.int32)
    cat_lengths = np.concatenate([np.full(n_cells, 3), np.ones(n_thresholds)]).astype(np.int64)
    hs_lengths = np.concatenate([np.zeros(n_cells), np.ones(n_thresholds)]).astype(np.int64)
    group_sizes.extend([1] * n_thresholds)
    group_columns.extend([[]] * n_thresholds)
    classes = np.concatenate([np.full(n_cells, QueryClass.CATEGORICAL_MARGINAL),
                              np.full(n_thresholds, QueryClass.LINEAR_THRESHOLD)]).astype(np.int8)
    coord_column = np.repeat(np.arange(len(column_sizes), dtype=np.int32), column_sizes)
    return QuerySet(
        cat_offsets=_offsets(cat_lengths), cat_coords=cat_coords,
        halfspace_offsets=_offsets(hs_lengths), theta_offsets=_offsets(widths.astype(np.int64)),
        theta_index=theta_index, theta_weight=theta_weight.astype(np.float32),
        tau=np.asarray(tau, dtype=np.float32), query_class=classes,
        group_offsets=_offsets(np.asarray(group_sizes, dtype=np.int64)),
        group_column_offsets=_offsets(np.array([len(c) for c in group_columns], dtype=np.int64)),
        group_columns=np.array([c for cs in group_columns for c in cs], dtype=np.int32),
        coord_column=coord_column,
        coord_code=(np.arange(int(column_sizes.sum())) - np.repeat(starts, column_sizes)).astype(np.int32),
        column_sizes=column_sizes, numeric_offset=int(column_sizes.sum()), n_numeric=N_NUMERIC,
    )


def relaxed_matrix(queries: QuerySet, n_rows: int, rng: np.random.Generator) -> np.ndarray:
    blocks = [rng.dirichlet(np.ones(int(k)), size=n_rows) for k in queries.column_sizes]
    return np.hstack([*blocks, rng.random((n_rows, queries.n_numeric))]).astype(np.float32)


def flops_per_evaluation(queries: QuerySet) -> dict:
    n_cat = np.diff(queries.cat_offsets).mean() if queries.n_queries else 0.0
    widths = np.diff(queries.theta_offsets)
    per_halfspace = (2 * widths.sum() + 8 * len(widths)) / max(queries.n_queries, 1)
    forward = float(n_cat + per_halfspace + 1)
    exact = float(n_cat + (2 * widths.sum() + len(widths)) / max(queries.n_queries, 1))
    return {"forward": forward, "loss_and_grad": 3 * forward, "exact": exact}


def rates(evaluations: float, seconds: float, flops_each: float, peak) -> dict:
    per_second = evaluations / seconds if seconds > 0 else None
    fraction = (per_second * flops_each / peak) if (per_second and peak) else None
    return {"evaluations_per_s": per_second, "fraction_of_fp32_peak": fraction}


# ------------------------------------------------------------------------------ sections
def bench_kernels(sizes: dict, info: dict, rng, cases: list, save) -> list[dict]:
    for m in sizes["m"]:
        queries = make_workload(m, rng)
        flops = flops_per_evaluation(queries)
        device_queries = cuda_kernels._DeviceQueries(queries)
        for n_rel in sizes["n_rel"]:
            case = {"n_rel": n_rel, "m": m, "evaluations": n_rel * m, "flops_per_evaluation": flops}
            print(f"kernels: n_rel={n_rel:>7} m={m:>8}", flush=True)
            try:
                X = relaxed_matrix(queries, n_rel, rng)
                workspace = cuda_kernels._RelaxedWorkspace(device_queries, n_rel, np.float32)
                case["query_slices"] = workspace.n_slices
                case["row_segments"] = workspace.sum_grid_y
                XT = cuda.to_device(np.ascontiguousarray(X.T))
                sigma = cuda.to_device(np.full(m, SIGMA, dtype=np.float32))
                targets = cuda.to_device(rng.random(m) * 0.1)

                def forward():
                    workspace.relaxed_answers(XT, sigma, targets)

                def forward_and_gradient():
                    workspace.relaxed_answers(XT, sigma, targets)
                    workspace.gradient(XT, sigma)

                repeats = sizes["repeats"]
                for name, launch, kind in (("relaxed_answers", forward, "forward"),
                                           ("loss_and_grad", forward_and_gradient, "loss_and_grad")):
                    timing = time_events(launch, sizes["warmup"], repeats)
                    timing.update(rates(n_rel * m, timing["median_s"], flops[kind],
                                        info["fp32_peak_flops"]))
                    case[name] = timing
                    print(f"    {name:>16}: {timing['median_s'] * 1e3:9.3f} ms  "
                          f"{(timing['evaluations_per_s'] or 0):.3e} eval/s", flush=True)
                if n_rel * m <= CHECK_EVALUATIONS:
                    checked = "reference" if sizes is SMOKE else "cpu"
                    case[f"check_against_{checked}_backend"] = _check_against(
                        checked, workspace, XT, sigma, targets, X, queries)
                del workspace, XT
                if n_rel * m <= PROJECTION_EVALUATIONS and not (sizes is SMOKE and cases):
                    case["projection_step"] = _time_projection_steps(queries, X, rng, sizes)
            except Exception as error:  # record and go on: one failure must not hide the rest
                case["error"] = f"{type(error).__name__}: {error}"
                traceback.print_exc()
            cases.append(case)
            save()
    return cases


#: Cases small enough to check against the Numba CPU backend, and to time projection steps.
CHECK_EVALUATIONS = 10_000_000
PROJECTION_EVALUATIONS = 1_000_000_000


def _check_against(backend: str, workspace, XT, sigma, targets, X, queries) -> dict:
    """Loss and gradient against another backend (the Numba CPU one on a GPU: correctness
    at scale): relative loss difference and largest gradient difference over the largest
    gradient entry."""
    from polars_rap.kernels import get_backend

    workspace.relaxed_answers(XT, sigma, targets)
    workspace.gradient(XT, sigma)
    loss = workspace.loss()
    grad = workspace.grad.copy_to_host()[: queries.n_coords].T
    expected_loss, expected_grad = get_backend(backend).loss_and_grad(
        X, queries, targets.copy_to_host(), sigma.copy_to_host()[: queries.n_queries])
    scale = max(float(np.abs(expected_grad).max()), 1e-30)
    return {"loss_relative_difference": abs(loss - expected_loss) / max(abs(expected_loss), 1e-30),
            "grad_max_difference_over_max": float(np.abs(grad - expected_grad).max() / scale)}


def _time_projection_steps(queries: QuerySet, X: np.ndarray, rng, sizes: dict) -> dict:
    """Seconds per Adam step of the device projection: wall time of ``project`` with S and
    3S steps (one stage, no early stop), difference over 2S (setup and exact losses cancel)."""
    from polars_rap.projection import ProjectionConfig, RelaxedParams, project

    sizes_of_blocks = [int(k) for k in queries.column_sizes]
    params = RelaxedParams.random(X.shape[0], sizes_of_blocks, queries.n_numeric, rng)
    targets = rng.random(queries.n_queries) * 0.1
    steps = 1 if sizes is SMOKE else 10
    seconds = []
    for n_steps in (steps, 3 * steps):
        config = ProjectionConfig(max_steps=n_steps, patience=10**9, min_improvement=1e-300,
                                  grad_tolerance=1e-300, max_doublings=0)
        if sizes is not SMOKE:
            project(params, queries, targets, cuda_kernels, config)  # warm-up (compiles)
        start = time.perf_counter()
        _, trace = project(params, queries, targets, cuda_kernels, config)
        seconds.append(time.perf_counter() - start)
        if trace.steps != n_steps:
            return {"error": f"expected {n_steps} steps, the projection ran {trace.steps}"}
    per_step = (seconds[1] - seconds[0]) / (2 * steps)
    return {"seconds_per_step": per_step, "check_every": int(cuda_config.PROJECTION_CHECK_EVERY),
            "timer": "wall clock, difference of two runs"}


def _dense_problem(queries: QuerySet):
    """Padded dense form of a workload with at most one halfspace per query: categorical
    indices padded with a column of ones, one dense theta row and tau per query."""
    lengths = np.diff(queries.cat_offsets)
    k_max = max(int(lengths.max(initial=0)), 1)
    pad = queries.n_coords  # index of the appended ones column
    index = np.full((queries.n_queries, k_max), pad, dtype=np.int64)
    rows = np.repeat(np.arange(queries.n_queries), lengths)
    slots = np.arange(len(queries.cat_coords)) - np.repeat(queries.cat_offsets[:-1], lengths)
    index[rows, slots] = queries.cat_coords
    n_halfspaces = np.diff(queries.halfspace_offsets)
    if n_halfspaces.max(initial=0) > 1:
        raise ValueError("the dense baseline handles at most one halfspace per query")
    theta = np.zeros((queries.n_queries, queries.n_numeric), dtype=np.float32)
    tau = np.zeros(queries.n_queries, dtype=np.float32)
    has = n_halfspaces > 0
    owners = np.flatnonzero(has)
    for h, q in enumerate(owners):  # halfspaces are stored in query order
        lo, hi = queries.theta_offsets[h], queries.theta_offsets[h + 1]
        theta[q, queries.theta_index[lo:hi]] = queries.theta_weight[lo:hi]
        tau[q] = queries.tau[h]
    return index, theta, tau, has


#: Bytes of one chunk of the frameworks' dense intermediates: queries go through JAX and
#: PyTorch in chunks of as many queries as fit, so that every size runs (the gathered
#: n x chunk x k factors and a few n x chunk float32 intermediates, forward and backward).
CHUNK_BYTES = 4 << 30
#: Largest n_rel x m the framework baselines run (beyond it a call takes several seconds).
BASELINE_EVALUATIONS = 10_000_000_000


def _chunk_queries(n_rel: int, n_queries: int, k_max: int) -> int:
    per_query = n_rel * (k_max + 6) * 4 * 2
    return int(max(1, min(n_queries, CHUNK_BYTES // per_query)))


def _chunked(index, theta, tau, has, targets, chunk: int, pad_index: int):
    """The dense problem padded to whole chunks of ``chunk`` queries and reshaped to
    ``[n_chunks, chunk, ...]``. Padding queries are the empty product (answer exactly 1)
    with target 1: zero residual, no loss and no gradient."""
    m = index.shape[0]
    n_chunks = -(-m // chunk)
    extra = n_chunks * chunk - m

    def pad(array, value):
        if extra == 0:
            return array
        filler = np.full((extra, *array.shape[1:]), value, dtype=array.dtype)
        return np.concatenate([array, filler])

    parts = (pad(index, pad_index), pad(theta, 0.0), pad(tau, 0.0), pad(has, False),
             pad(targets.astype(np.float32), 1.0))
    return [a.reshape(n_chunks, chunk, *a.shape[1:]) for a in parts]


def bench_baselines(sizes: dict, info: dict, rng, results: list, save) -> list[dict]:
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave memory to numba
    frameworks = {}
    for name in ("jax", "torch"):
        try:
            if name == "jax":
                import jax
                import jax.numpy as jnp

                frameworks[name] = (jax, jnp)
            else:
                import torch

                if not torch.cuda.is_available():
                    raise RuntimeError("torch.cuda.is_available() is False")
                frameworks[name] = torch
        except Exception as error:
            frameworks[name] = f"unavailable: {type(error).__name__}: {error}"
    for m in sizes["m"]:
        queries = make_workload(m, rng)
        index, theta, tau, has = _dense_problem(queries)
        device_queries = cuda_kernels._DeviceQueries(queries)
        for n_rel in sizes["n_rel"]:
            case = {"n_rel": n_rel, "m": m}
            if n_rel * m > BASELINE_EVALUATIONS:
                case["skipped"] = f"n_rel x m over {BASELINE_EVALUATIONS:.0e} (seconds per call)"
                results.append(case)
                continue
            print(f"baselines: n_rel={n_rel:>7} m={m:>8}", flush=True)
            X = relaxed_matrix(queries, n_rel, rng)
            targets = (rng.random(m) * 0.1).astype(np.float64)
            # ours, by the same wall clock
            try:
                workspace = cuda_kernels._RelaxedWorkspace(device_queries, n_rel, np.float32)
                XT = cuda.to_device(np.ascontiguousarray(X.T))
                sigma = cuda.to_device(np.full(m, SIGMA, dtype=np.float32))
                targets_device = cuda.to_device(targets)

                def ours():
                    workspace.relaxed_answers(XT, sigma, targets_device)
                    workspace.gradient(XT, sigma)

                case["polars_rap_cuda"] = time_wall(ours, cuda.synchronize, sizes["warmup"],
                                                    sizes["repeats"])
                our_loss = workspace.loss()
                our_grad = workspace.grad.copy_to_host()[: queries.n_coords].T
                del workspace, XT
            except Exception as error:
                case["polars_rap_cuda"] = {"error": f"{type(error).__name__}: {error}"}
                results.append(case)
                save()
                continue
            chunk = _chunk_queries(n_rel, m, index.shape[1])
            case["framework_query_chunk"] = chunk
            dense = _chunked(index, theta, tau, has, targets, chunk, queries.n_coords)
            for name, framework in frameworks.items():
                if isinstance(framework, str):
                    case[name] = framework
                    continue
                try:
                    runner = _jax_runner if name == "jax" else _torch_runner
                    timing, loss, grad = runner(framework, X, dense, queries.numeric_offset, sizes)
                    scale = max(float(np.abs(our_grad).max()), 1e-30)
                    timing["loss_relative_difference"] = abs(loss - our_loss) / max(abs(our_loss), 1e-30)
                    timing["grad_max_difference_over_max"] = float(np.abs(grad - our_grad).max() / scale)
                    timing["speedup_of_polars_rap"] = timing["median_s"] / case["polars_rap_cuda"]["median_s"]
                    case[name] = timing
                except Exception as error:
                    case[name] = f"error: {type(error).__name__}: {error}"
                    traceback.print_exc()
            results.append(case)
            save()
            print(f"    {json.dumps({k: v for k, v in case.items() if k not in ('n_rel', 'm')}, default=str)[:400]}",
                  flush=True)
    return results


def _jax_runner(framework, X, dense, numeric_offset, sizes):
    """``jax.jit(jax.value_and_grad(loss))``, the loss a sum over query chunks
    (``lax.map`` of a rematerialised chunk loss, so that the backward pass keeps one chunk's
    intermediates at a time)."""
    jax, jnp = framework

    def chunk_loss(padded, numerics, chunk):
        index, theta, tau, has, targets = chunk
        categorical = jnp.prod(padded[:, index], axis=2)
        z = SIGMA * (tau[None, :] - numerics @ theta.T)
        halfspace = jnp.where(has[None, :], jax.nn.sigmoid(z), 1.0)
        answers = jnp.mean(categorical * halfspace, axis=0)
        return jnp.sum((answers - targets) ** 2)

    def loss_fn(values, index, theta, tau, has, targets):
        padded = jnp.concatenate([values, jnp.ones((values.shape[0], 1), values.dtype)], axis=1)
        numerics = values[:, numeric_offset:]
        per_chunk = jax.checkpoint(lambda chunk: chunk_loss(padded, numerics, chunk))
        return jnp.sum(jax.lax.map(per_chunk, (index, theta, tau, has, targets)))

    step = jax.jit(jax.value_and_grad(loss_fn))
    arrays = [jnp.asarray(a) for a in (X, *dense)]
    out = {}

    def call():
        out["result"] = step(*arrays)

    def synchronize():
        jax.block_until_ready(out["result"])

    timing = time_wall(call, synchronize, sizes["warmup"], sizes["repeats"])
    loss, grad = out["result"]
    return timing, float(loss), np.asarray(grad)


def _torch_runner(torch, X, dense, numeric_offset, sizes, device="cuda"):
    """PyTorch autograd, one chunk of queries at a time (``backward`` per chunk adds into
    ``values.grad``)."""
    device = torch.device(device)
    synchronize = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    values = torch.tensor(X, device=device, requires_grad=True)
    chunks = [torch.tensor(a, device=device) for a in dense]
    ones = torch.ones((X.shape[0], 1), device=device)
    out = {}

    def call():
        values.grad = None
        total = 0.0
        for index_t, theta_t, tau_t, has_t, targets_t in zip(*chunks):
            padded = torch.cat([values, ones], dim=1)
            categorical = padded[:, index_t].prod(dim=2)
            z = SIGMA * (tau_t[None, :] - values[:, numeric_offset:] @ theta_t.T)
            halfspace = torch.where(has_t[None, :], torch.sigmoid(z), torch.ones_like(z))
            answers = (categorical * halfspace).mean(dim=0)
            loss = ((answers - targets_t) ** 2).sum()
            loss.backward()
            total = total + loss.detach()
        out["loss"] = total

    timing = time_wall(call, synchronize, sizes["warmup"], sizes["repeats"])
    loss = float(out["loss"].item())
    grad = values.grad.detach().cpu().numpy()
    del values, chunks, ones, out
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return timing, loss, grad


def _time_exact(queries: QuerySet, codes, numerics, info: dict, sizes: dict) -> dict:
    """Exact answers of ``queries`` on these rows: host-to-device copy included, the copy
    alone, and the kernels alone (the difference)."""
    n_rows, m = codes.shape[0], queries.n_queries
    device_queries = cuda_kernels._DeviceQueries(queries)
    plan = cuda_exact.ExactPlan(queries)
    flops = flops_per_evaluation(queries)["exact"]

    def with_transfers():
        cuda_exact.exact_counts(codes, numerics, device_queries, plan)

    def transfers_only():
        cuda.to_device(codes)
        cuda.to_device(numerics)

    result = {"n_rows": n_rows, "m": m, "evaluations": n_rows * m,
              "marginal_groups": plan.n_groups, "tiled_queries": plan.n_listed,
              "chunk_rows": int(cuda_config.EXACT_CHUNK_ROWS), "flops_per_evaluation": flops}
    timing = time_events(with_transfers, 1, sizes["repeats"])
    timing.update(rates(n_rows * m, timing["median_s"], flops, info["fp32_peak_flops"]))
    result["answers_exact"] = timing
    result["host_to_device_copy"] = time_events(transfers_only, 1, min(sizes["repeats"], 5))
    kernel_seconds = timing["median_s"] - result["host_to_device_copy"]["median_s"]
    result["kernel_only_estimate"] = rates(n_rows * m, kernel_seconds, flops, info["fp32_peak_flops"])
    print(f"    {timing['median_s'] * 1e3:.2f} ms  {(timing['evaluations_per_s'] or 0):.3e} eval/s "
          f"({plan.n_groups} groups by histogram, {plan.n_listed} queries tiled)", flush=True)
    return result


def bench_exact(sizes: dict, info: dict, rng, result: dict, save) -> dict:
    """Exact answers on ``bench/kernels_cpu.py``'s exact workload (35,000 rows x ~414,000
    queries), whose 2-core CPU figure is committed in ``kernels_cpu.json``: the
    same-workload comparison; then at n = 1e6 rows x m = 1e5 queries (this benchmark's
    workload). ``result`` is filled in place and saved after each part."""
    if sizes is not SMOKE:
        try:
            result["cpu_workload"] = _exact_on_cpu_workload(info, sizes)
        except Exception as error:
            result["cpu_workload"] = {"error": f"{type(error).__name__}: {error}"}
            traceback.print_exc()
        save()
    n_rows, m = sizes["exact"]
    print(f"exact: n={n_rows} m={m}", flush=True)
    try:
        queries = make_workload(m, rng)
        codes = np.stack([rng.integers(0, k, size=n_rows) for k in queries.column_sizes],
                         axis=1).astype(np.int32)
        numerics = rng.random((n_rows, queries.n_numeric))
        result.update(_time_exact(queries, codes, numerics, info, sizes))
        if n_rows * m <= 1e5:  # smoke sizes: check against the reference too
            from polars_rap.kernels import reference

            expected = reference.answers_exact(codes, numerics, queries)
            actual = cuda_kernels.answers_exact(codes, numerics, queries)
            result["matches_reference"] = bool(np.array_equal(actual, expected))
    except Exception as error:
        result["error"] = f"{type(error).__name__}: {error}"
        traceback.print_exc()
    return result


def _exact_on_cpu_workload(info: dict, sizes: dict) -> dict:
    """``kernels_cpu.py``'s exact workload, built by its own code and seed, on the GPU; the
    CPU figure read from the committed ``kernels_cpu.json`` (its ``public_all`` entry)."""
    sys.path.insert(0, str(ROOT))
    from bench import kernels_cpu

    rng = np.random.default_rng(20240601)  # kernels_cpu.main's draws, in its order
    column_sizes = kernels_cpu.make_domain(rng)
    relaxed_queries = kernels_cpu.make_queries(column_sizes, 50_000, 500, rng)
    kernels_cpu.relaxed_matrix(column_sizes, 1000, rng)
    rng.random(relaxed_queries.n_queries)
    queries = kernels_cpu.make_queries(column_sizes, 400_000, 20_000, rng)
    n = 35_000
    codes = np.stack([rng.integers(0, k, size=n) for k in column_sizes], axis=1).astype(np.int32)
    numerics = rng.random((n, kernels_cpu.N_NUMERIC))
    print(f"exact on kernels_cpu's workload: n={n} m={queries.n_queries}", flush=True)
    result = _time_exact(queries, codes, numerics, info, sizes)
    from polars_rap.kernels import cpu

    result["matches_cpu_backend"] = bool(np.array_equal(
        cuda_kernels.answers_exact(codes, numerics, queries), cpu.answers_exact(codes, numerics, queries)))
    committed = json.loads((ROOT / "bench" / "results" / "kernels_cpu.json").read_text())
    cpu_rate = committed["exact"]["public_all"]["evaluations_per_second"]
    result["cpu_2core_evaluations_per_s"] = cpu_rate
    result["cpu_2core_source"] = "bench/results/kernels_cpu.json exact.public_all"
    result["speedup_over_cpu_2core"] = result["answers_exact"]["evaluations_per_s"] / cpu_rate
    result["speedup_over_cpu_2core_kernel_only"] = (
        (result["kernel_only_estimate"]["evaluations_per_s"] or 0) / cpu_rate)
    return result


def load_all_acs(data_dir: Path):
    """All ACS person files, preprocessed exactly as the acs-income-CA task, with its domain."""
    import polars as pl

    from polars_rap import datasets

    files = sorted(data_dir.glob("acs2018_1yr_person_*.parquet"))
    if not files:
        raise FileNotFoundError(f"no acs2018_1yr_person_*.parquet under {data_dir.resolve()}")
    task = datasets.load_task("acs-income-CA")
    raw = pl.concat([pl.read_parquet(f) for f in files], how="vertical_relaxed")
    frame = datasets._nan_to_null(raw).with_columns(
        (pl.col("PINCP") > 50_000).alias("PINCP_gt_50000"),
        pl.col(*datasets._ACS_INT_CODED, "JWMNP").cast(pl.Int32),
    )
    frame = datasets._recode_ranges(frame, "OCCP", datasets.OCCP_GROUPS)
    frame = datasets._recode_ranges(frame, "POBP", datasets.POBP_AREAS)
    frame = frame.select(list(task.columns_spec))
    return frame, task, len(files)


def bench_e2e(data_dir: Path, result: dict, save, backends=("cuda", "cpu"), seeds=(0,),
              out_dir: Path | None = None, tag: str = "", profile: bool = False) -> dict:
    """``synthesize`` on every ACS state with each backend and seed: seconds each; with
    ``out_dir``, the synthetic tables go to ``e2e_synthetic.parquet`` (columns ``backend``
    and ``seed`` added) so that their errors can be evaluated on another machine."""
    import polars as pl

    import polars_rap

    result.update({"epsilon": 1.0, "delta": 1e-9, "seeds": list(seeds)})
    try:
        frame, task, n_files = load_all_acs(data_dir)
    except Exception as error:
        result["error"] = f"{type(error).__name__}: {error}"
        return result
    result.update({"rows": frame.height, "files": n_files, "task_domain": task.name})
    outputs = []
    for backend in backends:
        for seed in seeds:
            key = f"{backend}_seed{seed}"
            print(f"e2e: synthesize backend={backend} seed={seed} on {frame.height} rows", flush=True)
            try:
                profiler = cProfile.Profile() if profile else None
                start = time.perf_counter()
                if profiler:
                    profiler.enable()
                synthetic = polars_rap.synthesize(
                    frame, epsilon=1.0, delta=1e-9, domain=task.domain, labels=task.labels,
                    seed=seed, backend=backend, progress=False)
                result[f"{key}_seconds"] = time.perf_counter() - start
                if profiler:
                    profiler.disable()
                    text = io.StringIO()
                    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(25)
                    result[f"{key}_profile"] = text.getvalue().splitlines()
                print(f"    {result[f'{key}_seconds']:.1f} s", flush=True)
                outputs.append(synthetic.data.with_columns(pl.lit(backend).alias("backend"),
                                                           pl.lit(seed).alias("seed")))
            except Exception as error:
                result[f"{key}_error"] = f"{type(error).__name__}: {error}"
                traceback.print_exc()
            save()
    if out_dir is not None and outputs:
        path = out_dir / f"e2e_synthetic{'_' + tag if tag else ''}.parquet"
        pl.concat(outputs, how="vertical_relaxed").write_parquet(path, compression="zstd")
        result["synthetic_tables"] = path.name
    return result


#: Launch-geometry variants timed by ``tune`` (one name changed from the defaults at a time).
TUNE_VARIANTS = (
    {},
    {"THREADS_PER_BLOCK": 64},
    {"THREADS_PER_BLOCK": 256},
    {"RELAXED_TARGET_BLOCKS": 1024},
    {"RELAXED_TARGET_BLOCKS": 16384},
    {"GRAD_TARGET_THREADS": 1 << 16},
    {"GRAD_TARGET_THREADS": 1 << 20},
    {"GRAD_SLICE_BYTES": 1 << 28},
)
TUNE_CELLS = ((1_000, 100_000), (10_000, 100_000), (100_000, 10_000))


def bench_tune(sizes: dict, rng, results: list, save) -> list[dict]:
    """Relaxed answers and the gradient under each ``TUNE_VARIANTS`` geometry, at
    ``TUNE_CELLS`` (n_rel, m): CUDA events, 2 warm-ups, median of 10 (one call each, and two
    variants, in a smoke run)."""
    cells, variants = (((9, 30),), ({}, {"GRAD_TARGET_THREADS": 64})) if sizes is SMOKE else (
        TUNE_CELLS, TUNE_VARIANTS)
    for n_rel, m in cells:
        queries = make_workload(m, rng)
        device_queries = cuda_kernels._DeviceQueries(queries)
        X = relaxed_matrix(queries, n_rel, rng)
        XT = cuda.to_device(np.ascontiguousarray(X.T))
        sigma = cuda.to_device(np.full(m, SIGMA, dtype=np.float32))
        targets = cuda.to_device(rng.random(m) * 0.1)
        for variant in variants:
            case = {"n_rel": n_rel, "m": m, "variant": variant or "defaults"}
            saved = {name: getattr(cuda_config, name) for name in variant}
            try:
                for name, value in variant.items():
                    setattr(cuda_config, name, value)
                workspace = cuda_kernels._RelaxedWorkspace(device_queries, n_rel, np.float32)
                case.update(query_slices=workspace.n_slices, row_segments=workspace.sum_grid_y)

                def forward():
                    workspace.relaxed_answers(XT, sigma, targets)

                def gradient():
                    workspace.gradient(XT, sigma)

                forward()
                warmup, repeats = (1, 1) if sizes is SMOKE else (2, 10)
                case["relaxed_answers_ms"] = time_events(forward, warmup, repeats)["median_s"] * 1e3
                case["gradient_ms"] = time_events(gradient, warmup, repeats)["median_s"] * 1e3
                print(f"tune n_rel={n_rel} m={m} {variant or 'defaults'}: answers "
                      f"{case['relaxed_answers_ms']:.3f} ms, gradient {case['gradient_ms']:.3f} ms",
                      flush=True)
                del workspace
            except Exception as error:
                case["error"] = f"{type(error).__name__}: {error}"
                traceback.print_exc()
            finally:
                for name, value in saved.items():
                    setattr(cuda_config, name, value)
            results.append(case)
            save()
    return results


# ---------------------------------------------------------------------------------- main
SECTIONS = ("kernels", "tune", "exact", "baselines", "e2e")


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes, no JAX/PyTorch, no ACS (for the CUDA simulator)")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=None)
    parser.add_argument("--out-dir", type=Path, default=None,
                        help="default bench/results (a temporary folder with --smoke)")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--e2e-backends", nargs="+", default=["cuda", "cpu"],
                        help="backends of the end-to-end runs (the CPU baseline of the issue is "
                             "the 2-core machine's: run it there with bench/gpu_e2e_cpu.py)")
    parser.add_argument("--e2e-seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--e2e-tag", default="",
                        help="suffix of the e2e record's key and tables file (e.g. a variant's name)")
    parser.add_argument("--e2e-profile", action="store_true",
                        help="profile the e2e runs (cProfile): the 25 largest cumulative entries")
    parser.add_argument("--set", nargs="+", default=[], metavar="NAME=VALUE",
                        help="cuda_config overrides for this run (integers), e.g. GRAD_TARGET_THREADS=1048576")
    args = parser.parse_args(argv)
    if not cuda.is_available():
        parser.error("no CUDA device (set NUMBA_ENABLE_CUDASIM=1 for --smoke on a machine without one)")
    sizes = SMOKE if args.smoke else FULL
    sections = args.sections or (("kernels", "tune", "exact") if args.smoke else SECTIONS)
    overrides = dict(item.split("=", 1) for item in args.set)
    saved_geometry = {name: getattr(cuda_config, name) for name in (*SMOKE_GEOMETRY, *overrides)}
    for name, value in overrides.items():
        if not hasattr(cuda_config, name):
            parser.error(f"cuda_config has no {name}")
        setattr(cuda_config, name, int(value))
    if args.smoke:
        for name, value in SMOKE_GEOMETRY.items():
            setattr(cuda_config, name, value)
    try:
        return _run(args, argv, sizes, sections)
    finally:
        for name, value in saved_geometry.items():
            setattr(cuda_config, name, value)


def _run(args, argv, sizes: dict, sections) -> Path:
    out_dir = args.out_dir or (Path(tempfile.mkdtemp(prefix="gpu_bench_")) if args.smoke
                               else ROOT / "bench" / "results")
    out_dir.mkdir(parents=True, exist_ok=True)
    info = device_info()
    slug = re.sub(r"[^a-z0-9]+", "_", info["name"].lower()).strip("_")
    output = out_dir / f"gpu_{slug}{'_smoke' if args.smoke else ''}.json"
    record = json.loads(output.read_text()) if output.exists() and not args.smoke else {}
    record.update({
        "device": info,
        "command": " ".join(["python", "bench/gpu_kernels.py",
                             *(sys.argv[1:] if argv is None else argv)]),
        "python": platform.python_version(),
        "numba": __import__("numba").__version__,
        "config": {name: getattr(cuda_config, name) for name in dir(cuda_config) if name.isupper()},
        "sigma": SIGMA,
        "flop_model": FLOP_MODEL,
        "workload": "60% class-conditional 3-way marginal cells (feature sizes "
                    f"{FEATURE_SIZES} x label 2), 40% label x halfspace over 3-6 of {N_NUMERIC} numerics",
    })
    record.setdefault("finished", {})

    def save():
        output.write_text(json.dumps(record, indent=2, default=str) + "\n")

    rng = np.random.default_rng(0)
    for section in SECTIONS:
        if section not in sections:
            continue
        started = time.perf_counter()
        if section == "kernels":
            record["kernels"] = []
            bench_kernels(sizes, info, rng, record["kernels"], save)
        elif section == "baselines":
            record["baselines"] = []
            bench_baselines(sizes, info, rng, record["baselines"], save)
        elif section == "exact":
            record["exact"] = {}
            bench_exact(sizes, info, rng, record["exact"], save)
        elif section == "tune":
            record["tune"] = []
            bench_tune(sizes, rng, record["tune"], save)
        elif section == "e2e":
            key = f"e2e{'_' + args.e2e_tag if args.e2e_tag else ''}"
            record[key] = {"config_overrides": args.set}
            bench_e2e(args.data_dir, record[key], save, backends=args.e2e_backends,
                      seeds=args.e2e_seeds, out_dir=out_dir, tag=args.e2e_tag,
                      profile=args.e2e_profile)
        record["finished"][section] = {"seconds": time.perf_counter() - started,
                                       "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        save()
    save()
    print(f"wrote {output}", flush=True)
    return output


if __name__ == "__main__":
    main()
