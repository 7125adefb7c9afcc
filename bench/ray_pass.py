"""Ray engine benchmark (issue #17): the pass over the rows on a local Ray vs in process, and
writing synthetic rows with Ray.

On the Parquet file of :mod:`bench.streaming` (``build_input``: rows resampled from the 51
ACS state tables), each stage in a fresh process:

``inprocess``
    :func:`polars_rap.io.source.exact_answers` of the default workload over the file, in this
    process: seconds, rows/s, peak RSS;
``ray``
    the same pass with :class:`polars_rap.io.ray_engine.RaySource` on a local Ray with
    ``--workers`` CPUs: seconds, rows/s, the driver's peak RSS, and the largest RSS any Ray
    worker process reached (sampled every 50 ms with psutil); the answers must equal the
    in-process ones bit for bit (their checksums are compared);
``write``
    ``model.write_parquet(folder, --write-rows, engine="ray")`` of a small model: seconds,
    rows/s, driver and worker peak RSS.

Targets (issue #17): Ray's seconds <= 1.5x in process on one machine; the driver's peak RSS
independent of the input's rows (run with ``--rows 1000000`` and the default 10,000,000);
worker peak <= 1 GB. Needs the ``ray`` and ``bench`` extras.

    python bench/ray_pass.py                          # 10M rows -> bench/results/ray_pass.json
    python bench/ray_pass.py --rows 200000 --write-rows 2000000 --quick   # smaller, printed only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as ``python bench/<script>.py``: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import RESULTS, run_stage, write_record  # noqa: E402
from bench.host import own_peak_rss_mib  # noqa: E402
from bench.streaming import _task_domain_and_workload, build_input  # noqa: E402


_METER_LOOP = """
import time, psutil
peak = 0.0
while True:
    for process in psutil.process_iter(["name", "cmdline", "memory_info"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if "default_worker.py" in cmdline or (process.info["name"] or "").startswith("ray::"):
            memory = process.info["memory_info"]
            if memory is not None:
                peak = max(peak, memory.rss / 2**20)
    print(peak, flush=True)
    time.sleep(0.05)
"""


class _WorkerMeter:
    """Largest RSS (MiB) of any Ray worker process, sampled every 50 ms with psutil by a
    *separate* process, so that the sampler's own memory never counts in the driver's peak.
    (The driver's 482 MiB at 10M rows, first blamed on a sampling thread, was the parent's
    RSS that ``ru_maxrss`` inherits: :func:`bench.host.own_peak_rss_mib`.)"""

    def __enter__(self):
        self._process = subprocess.Popen([sys.executable, "-c", _METER_LOOP], stdout=subprocess.PIPE, text=True)
        self._first = float(self._process.stdout.readline())  # sampling has started
        return self

    def __exit__(self, *exc) -> None:
        self._process.terminate()  # it prints its running peak after every sample
        lines = self._process.communicate()[0].split()
        self.peak_mib = max([self._first, *map(float, lines)])


def _start_ray(workers: int):
    import ray
    import ray.data

    src = str(Path(__file__).resolve().parents[1] / "src")
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": src}})
    ray.data.DataContext.get_current().enable_progress_bars = False
    return ray


def stage_inprocess(path: Path) -> dict:
    from polars_rap import kernels
    from polars_rap.io.source import DataSource, exact_answers

    task, data_source, domain, queries = _task_domain_and_workload(path)
    backend = kernels.get_backend("cpu")
    exact_answers(DataSource.from_input(task.frame.head(2_000)), domain, queries, backend)  # compile
    started = time.perf_counter()
    answers, n_rows = exact_answers(data_source, domain, queries, backend)
    seconds = time.perf_counter() - started
    return {"stage": "inprocess", "rows": n_rows, "queries": queries.n_queries, "seconds": round(seconds, 2),
            "rows_per_second": round(n_rows / seconds), "driver_peak_rss_mib": round(own_peak_rss_mib(), 1),
            "answers_checksum": float(answers.sum())}


def stage_ray(path: Path, workers: int) -> dict:
    from polars_rap import kernels
    from polars_rap.io.ray_engine import RaySource
    from polars_rap.io.source import exact_answers

    _start_ray(workers)
    task, _, domain, queries = _task_domain_and_workload(path)
    backend = kernels.get_backend("cpu")
    exact_answers(RaySource.from_input(str(path)), domain, queries, backend)  # warm: workers up, kernels loaded
    with _WorkerMeter() as meter:
        started = time.perf_counter()
        answers, n_rows = exact_answers(RaySource.from_input(str(path)), domain, queries, backend)
        seconds = time.perf_counter() - started
    return {"stage": "ray", "workers": workers, "rows": n_rows, "queries": queries.n_queries,
            "seconds": round(seconds, 2), "rows_per_second": round(n_rows / seconds),
            "driver_peak_rss_mib": round(own_peak_rss_mib(), 1), "worker_peak_rss_mib": round(meter.peak_mib, 1),
            "answers_checksum": float(answers.sum())}


def stage_write(rows: int, workers: int) -> dict:
    import polars_rap
    from polars_rap.io import datasets

    _start_ray(workers)
    task = datasets.load_task("acs-income-CA")
    # The model's quality does not matter here, only its shape: default relaxed rows, few rounds.
    result = polars_rap.synthesize(task.frame, epsilon=1.0, delta=1e-9, domain=task.domain, labels=task.labels,
                                   seed=0, rows=1_000, progress=False, strategy=polars_rap.PlannedStrategy(
                                       rounds={"CM": 1, "LT": 1}, workload={"n_linear_thresholds": 100},
                                       projection={"max_steps": 5}))
    with tempfile.TemporaryDirectory(prefix="polars_rap_ray_write_") as folder, _WorkerMeter() as meter:
        started = time.perf_counter()
        files = result.model.write_parquet(folder, rows, seed=0, engine="ray")
        seconds = time.perf_counter() - started
        size = sum(Path(f).stat().st_size for f in files)
    return {"stage": "write", "workers": workers, "rows": rows, "files": len(files), "seconds": round(seconds, 2),
            "rows_per_second": round(rows / seconds), "output_mib": round(size / 2**20, 1),
            "driver_peak_rss_mib": round(own_peak_rss_mib(), 1), "worker_peak_rss_mib": round(meter.peak_mib, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the generated input file")
    parser.add_argument("--write-rows", type=int, default=100_000_000, help="synthetic rows written with Ray")
    parser.add_argument("--workers", type=int, default=2, help="CPUs of the local Ray")
    parser.add_argument("--quick", action="store_true", help="print only, do not save")
    parser.add_argument("--stage", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        name, *rest = args.stage
        if name == "inprocess":
            run = stage_inprocess(Path(rest[0]))
        elif name == "ray":
            run = stage_ray(Path(rest[0]), int(rest[1]))
        else:
            run = stage_write(int(rest[0]), int(rest[1]))
        print(json.dumps(run))
        return 0
    with tempfile.TemporaryDirectory(prefix="polars_rap_ray_pass_") as folder:
        path = Path(folder) / "acs_income_resampled.parquet"
        input_facts = build_input(path, args.rows)
        print(f"input: {input_facts}", flush=True)
        runs = [run_stage(__file__, "inprocess", path), run_stage(__file__, "ray", path, args.workers)]
        for run in runs:
            print(json.dumps(run), flush=True)
    runs.append(run_stage(__file__, "write", args.write_rows, args.workers))
    print(json.dumps(runs[-1]), flush=True)
    inprocess, on_ray = runs[0], runs[1]
    findings = {
        "answers_equal": inprocess["answers_checksum"] == on_ray["answers_checksum"],
        "ray_over_inprocess_seconds": round(on_ray["seconds"] / inprocess["seconds"], 2),
        "per_core_rows_per_second": round(on_ray["rows_per_second"] / args.workers),
    }
    print(json.dumps(findings), flush=True)
    if args.quick:
        return 0
    import ray

    write_record(RESULTS / f"ray_pass_{args.rows}.json", "ray_pass", ray=ray.__version__,
                 load_average_1min=os.getloadavg()[0], input=input_facts, findings=findings, runs=runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
