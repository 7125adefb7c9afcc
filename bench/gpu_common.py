"""What the GPU benchmark's sections share (``bench/gpu_kernels.py``, ``bench/gpu_baselines.py``):
the device's description and FP32 peak, timers (CUDA events; wall clock after
synchronisation) with a time budget on repeats, the sizes of a full and a smoke run, and the
synthetic workload (class-conditional marginal cells and linear thresholds) with its nominal
FLOP counts.
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import numba  # noqa: E402
from numba import cuda  # noqa: E402

from polars_rap.workload.queries import QueryClass, QuerySet, _offsets  # noqa: E402

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
