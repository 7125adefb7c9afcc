"""End to end on all 51 ACS state tables: ``backend="cuda"`` on a GPU against ``backend="cpu"``
on the 2-core machine (issue #18), seconds and workload errors; writes
``bench/results/gpu_e2e.{json,md}``.

The GPU half runs on the GPU machine (``bench/gpu_session.sh``: ``bench/gpu_kernels.py
--sections e2e --e2e-backends cuda``), which records seconds in ``gpu_<device>.json`` and
writes the synthetic tables to ``e2e_synthetic.parquet``. This script runs the CPU half here
and scores every table the same way (the suite's evaluation workload on the whole 295,243-row
input: all class-conditional 3-way categorical marginals, 20,000 mixed marginals, 200,000
linear thresholds; ``polars_rap.quality.evaluation.workload_errors``)::

    python bench/gpu_e2e.py --cpu-seeds 0 1 2 \\
        --gpu-record bench/results/gpu_nvidia_h100_80gb_hbm3.json \\
        --gpu-tables /path/to/e2e_synthetic.parquet

CPU runs are kept in ``bench/.gpu-e2e/`` (ignored), so a rerun only scores.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import statistics
import sys
import time
import traceback
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

import polars_rap  # noqa: E402
from bench.harness import acs_state_files, acs_state_tables, workload_scores, write_record  # noqa: E402
from bench.host import cpu_model  # noqa: E402
from polars_rap.schema.domain import Domain  # noqa: E402

WORK = ROOT / "bench" / ".gpu-e2e"
EPSILON, DELTA = 1.0, 1e-9


def load_all_acs(data_dir: Path):
    """All ACS person files, preprocessed exactly as the acs-income-CA task, with its domain."""
    from polars_rap.io import datasets

    task = datasets.load_task("acs-income-CA")
    frame = acs_state_tables(list(task.columns_spec), data_dir)
    return frame, task, len(acs_state_files(data_dir))


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


def run_cpu(frame: pl.DataFrame, task, seeds) -> dict:
    """``synthesize(backend="cpu")`` per seed, unless its table is already in ``WORK``."""
    WORK.mkdir(parents=True, exist_ok=True)
    timings_path = WORK / "cpu_timings.json"
    timings = json.loads(timings_path.read_text()) if timings_path.exists() else {}
    for seed in seeds:
        table = WORK / f"cpu_seed{seed}.parquet"
        if table.exists() and str(seed) in timings:
            continue
        print(f"cpu seed {seed}: synthesize on {frame.height} rows", flush=True)
        load_before = os.getloadavg()[0]
        start = time.perf_counter()
        result = polars_rap.synthesize(frame, epsilon=EPSILON, delta=DELTA, domain=task.domain,
                                       labels=task.labels, seed=seed, backend="cpu", progress=False)
        seconds = time.perf_counter() - start
        result.data.write_parquet(table)
        timings[str(seed)] = {
            "seconds": seconds, "load_average_1min_before": load_before,
            "load_average_1min_after": os.getloadavg()[0],
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
        timings_path.write_text(json.dumps(timings, indent=2))
        print(f"    {seconds:.1f} s", flush=True)
    return timings


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--gpu-record", type=Path, required=True)
    parser.add_argument("--gpu-tables", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "gpu_e2e.json",
                        help="the record to write (one per device)")
    args = parser.parse_args(argv)

    frame, task, n_files = load_all_acs(args.data_dir)
    cpu_timings = run_cpu(frame, task, args.cpu_seeds)
    gpu_record = json.loads(args.gpu_record.read_text())
    gpu_e2e = gpu_record["e2e"]
    gpu_tables = pl.read_parquet(args.gpu_tables)
    domain = Domain.from_mapping(frame.schema, task.domain, task.labels)
    runs = []
    for seed in args.cpu_seeds:
        row = {"backend": "cpu", "seed": seed, "machine": f"{cpu_model()}, 2 cores",
               **cpu_timings[str(seed)]}
        row.update(workload_scores(frame, pl.read_parquet(WORK / f"cpu_seed{seed}.parquet"), domain))
        runs.append(row)
    for seed in gpu_e2e.get("seeds", []):
        seconds = gpu_e2e.get(f"cuda_seed{seed}_seconds")
        if seconds is None:
            continue
        table = gpu_tables.filter((pl.col("backend") == "cuda") & (pl.col("seed") == seed))
        row = {"backend": "cuda", "seed": seed, "machine": gpu_record["device"]["name"],
               "seconds": seconds}
        row.update(workload_scores(frame, table.drop("backend", "seed"), domain))
        runs.append(row)
    summary = {}
    for backend in ("cpu", "cuda"):
        rows = [r for r in runs if r["backend"] == backend]
        if rows:
            summary[backend] = {key: statistics.mean(r[key] for r in rows)
                                for key in ("seconds", "CM_mean_error", "MM_mean_error", "LT_mean_error")
                                if all(key in r for r in rows)}
    if "cpu" in summary and "cuda" in summary:
        summary["speedup_cuda_over_cpu"] = summary["cpu"]["seconds"] / summary["cuda"]["seconds"]
    write_record(args.out, "gpu_e2e", task=task.name, rows=frame.height, files=n_files, epsilon=EPSILON,
                 delta=DELTA, runs=runs, summary=summary,
                 evaluation="polars_rap.quality.evaluation.workload_errors(real=all rows, seed=0)")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
