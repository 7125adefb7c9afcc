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
import json
import platform
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from numba import cuda  # noqa: E402

from polars_rap.kernels import cuda as cuda_kernels  # noqa: E402
from polars_rap.kernels import cuda_config, cuda_exact  # noqa: E402
from polars_rap.workload.queries import QuerySet  # noqa: E402

from bench.gpu_baselines import bench_baselines  # noqa: E402
from bench.gpu_common import (  # noqa: E402
    FEATURE_SIZES, FLOP_MODEL, FULL, N_NUMERIC, SIGMA, SMOKE, SMOKE_GEOMETRY, device_info,
    flops_per_evaluation,
    make_workload, rates, relaxed_matrix, time_events,
)
from bench.gpu_e2e import bench_e2e  # noqa: E402

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
    from polars_rap.fit.projection import ProjectionConfig, RelaxedParams, project

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
              "sort_key_column": plan.key_column,
              "chunk_rows": int(cuda_config.EXACT_CHUNK_ROWS), "flops_per_evaluation": flops}
    timing = time_events(with_transfers, 1, sizes["repeats"])
    timing.update(rates(n_rows * m, timing["median_s"], flops, info["fp32_peak_flops"]))
    result["answers_exact"] = timing
    result["host_to_device_copy"] = time_events(transfers_only, 1, min(sizes["repeats"], 5))
    kernel_seconds = timing["median_s"] - result["host_to_device_copy"]["median_s"]
    result["kernel_only_estimate"] = rates(n_rows * m, kernel_seconds, flops, info["fp32_peak_flops"])
    chunk = min(n_rows, int(cuda_config.EXACT_CHUNK_ROWS))  # the parts of one chunk
    result["parts"] = _time_exact_parts(queries, codes[:chunk], numerics[:chunk], device_queries,
                                        plan, sizes)
    counting = result["parts"]["count_on_device"]["median_s"]
    result["counting_only"] = rates(chunk * m, counting, flops, info["fp32_peak_flops"])
    print(f"    {timing['median_s'] * 1e3:.2f} ms  {(timing['evaluations_per_s'] or 0):.3e} eval/s "
          f"({plan.n_groups} groups by histogram, {plan.n_listed} queries tiled)", flush=True)
    return result


def _time_exact_parts(queries: QuerySet, codes, numerics, device_queries, plan, sizes: dict) -> dict:
    """CUDA-event seconds of each part of one exact count of one chunk (``parts["rows"]``
    rows): the rows' upload and transposition (grouped by the plan's key column when it has
    one), the counting on the device (counts zeroed, the marginal groups' histogram kernel,
    the other queries' kernel, warp-per-query or tiled as ``cuda_config`` says, each kernel
    also alone; records before 2026-11-27's third GPU call name the latter ``tiled_kernel``),
    and the counts' copy back to the pinned host buffer."""
    repeats = sizes["repeats"]
    counts, host_counts = plan.counts()
    chunk = cuda_exact.upload_transposed(codes, numerics, plan)

    def zero():
        cuda_exact.zero_counts(counts)

    def count():
        zero()
        cuda_exact.count_chunk(chunk, device_queries, plan, counts)

    def only(groups: bool):
        n_groups, n_listed = plan.n_groups, plan.n_listed
        try:
            plan.n_groups, plan.n_listed = (n_groups, 0) if groups else (0, n_listed)
            cuda_exact.count_chunk(chunk, device_queries, plan, counts)
        finally:
            plan.n_groups, plan.n_listed = n_groups, n_listed

    parts = {
        "upload_and_transpose": time_events(
            lambda: cuda_exact.upload_transposed(codes, numerics, plan), 1, min(repeats, 10)),
        "count_on_device": time_events(count, 2, repeats),
        "zero_counts": time_events(zero, 1, min(repeats, 10)),
        "histogram_kernel": time_events(lambda: only(True), 1, repeats),
        "threshold_kernel": time_events(lambda: only(False), 1, repeats),
        "counts_to_pinned_host": time_events(lambda: counts.copy_to_host(host_counts), 1,
                                             min(repeats, 10)),
    }
    parts["rows"] = int(codes.shape[0])
    print("    parts (ms): " + ", ".join(f"{name} {part['median_s'] * 1e3:.3f}"
                                          for name, part in parts.items() if name != "rows"),
          flush=True)
    return parts


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


def bench_tune(sizes: dict, rng, results: list, save, defaults_only: bool = False) -> list[dict]:
    """Relaxed answers and the gradient under each ``TUNE_VARIANTS`` geometry, at
    ``TUNE_CELLS`` (n_rel, m): CUDA events, 2 warm-ups, median of 10 (one call each, and two
    variants, in a smoke run)."""
    cells, variants = (((9, 30),), ({}, {"GRAD_TARGET_THREADS": 64})) if sizes is SMOKE else (
        TUNE_CELLS, TUNE_VARIANTS)
    if defaults_only:
        variants = ({},)
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
    parser.add_argument("--n-rel", nargs="+", type=int, default=None,
                        help="relaxed row counts of the kernels and baselines grid (default: all)")
    parser.add_argument("--m", nargs="+", type=int, default=None,
                        help="query counts of the kernels and baselines grid (default: all)")
    parser.add_argument("--exact", nargs=2, type=int, default=None, metavar=("ROWS", "QUERIES"),
                        help="size of the exact section's own workload (default 1e6 rows x 1e5 queries)")
    parser.add_argument("--tune-defaults-only", action="store_true",
                        help="tune times the default geometry only (a before/after comparison)")
    parser.add_argument("--set", nargs="+", default=[], metavar="NAME=VALUE",
                        help="cuda_config overrides for this run (integers), e.g. GRAD_TARGET_THREADS=1048576")
    args = parser.parse_args(argv)
    if not cuda.is_available():
        parser.error("no CUDA device (set NUMBA_ENABLE_CUDASIM=1 for --smoke on a machine without one)")
    sizes = SMOKE if args.smoke else FULL
    if not args.smoke and (args.n_rel or args.m or args.exact):
        sizes = {**FULL, "n_rel": args.n_rel or FULL["n_rel"], "m": args.m or FULL["m"],
                 "exact": tuple(args.exact) if args.exact else FULL["exact"]}
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
            bench_tune(sizes, rng, record["tune"], save, args.tune_defaults_only)
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
