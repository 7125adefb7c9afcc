"""End-to-end synthesis benchmark on the CPU (issue #2).

For each task (the bundled ACS income table for California, and Adult) × ε × seed, one fresh
process synthesizes the 80% training split and reports: wall-clock seconds of ``synthesize``
(Numba kernels already compiled and cached), the process's peak RSS, CM/MM/LT mean and max
error on the benchmark workload (benchmarks.md: all class-conditional 3-way categorical
marginals, 20,000 mixed marginals, 200,000 linear thresholds), and logistic-regression macro F1
on the held-out 20%, beside the same model trained on the real training rows.

    python bench/synthesis.py                 # full grid -> bench/results/synthesis_cpu.{json,csv}
    python bench/synthesis.py --quick         # one small run per task, printed only

Adult is read from ``$POLARS_RAP_DATA_DIR`` or ``../shared/data``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as ``python bench/<script>.py``: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.host import cpu_model, git_commit  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TASKS = ("acs-income-CA", "adult")
EPSILONS = (0.5, 1.0, 5.0)
SEEDS = (0, 1, 2)


def machine() -> dict:
    import numba

    return {"cpu": cpu_model() or platform.processor(), "cores": os.cpu_count(),
            "python": platform.python_version(), "numba": numba.__version__,
            "threading_layer": os.environ.get("NUMBA_THREADING_LAYER", "default")}


def run_one(task_name: str, epsilon: float, seed: int, quick: bool) -> dict:
    """Synthesize once in this process and measure it."""
    import polars_rap
    from polars_rap.io import datasets
    from polars_rap.quality import evaluation

    task = datasets.load_task(task_name)
    train, test = datasets.train_test_split(task.frame, test_fraction=0.2, seed=0)
    delta = 1.0 / train.height**2
    options = dict(rounds_lt=5, rounds_cm=3) if quick else {}
    # compile (or load from Numba's cache) outside the timed region
    polars_rap.synthesize(train.head(300), epsilon=1.0, delta=1e-6, domain=task.domain,
                          labels=task.labels, seed=0, rounds_cm=1, rounds_lt=1, progress=False)
    started = time.perf_counter()
    result = polars_rap.synthesize(train, epsilon=epsilon, delta=delta, domain=task.domain,
                                   labels=task.labels, seed=seed, progress=False, **options)
    seconds = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    errors = evaluation.workload_errors(
        train, result.data, result.domain, seed=0,
        n_mixed_marginals=2_000 if quick else 20_000,
        n_linear_thresholds=20_000 if quick else 200_000,
    )
    label = task.labels[0]
    synthetic = evaluation.ml_utility_for_domain(result.data, test, label, result.domain)
    real = evaluation.ml_utility_for_domain(train, test, label, result.domain)
    row = {
        "task": task_name, "epsilon": epsilon, "delta": delta, "seed": seed,
        "n_train": train.height, "seconds": round(seconds, 2), "peak_rss_mib": round(peak_mib, 1),
        "macro_f1": round(synthetic["macro_f1"], 4), "accuracy": round(synthetic["accuracy"], 4),
        "real_macro_f1": round(real["macro_f1"], 4), "real_accuracy": round(real["accuracy"], 4),
        "rho_budget": result.report.rho_budget, "rho_spent": result.report.rho_spent,
        "parameters": result.report.parameters,
    }
    for item in errors.iter_rows(named=True):
        row[f"{item['query_class']}_mean_error"] = round(item["mean_error"], 6)
        row[f"{item['query_class']}_max_error"] = round(item["max_error"], 5)
        row[f"{item['query_class']}_queries"] = item["queries"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one short run per task, not saved")
    parser.add_argument("--one", nargs=3, metavar=("TASK", "EPSILON", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        task, epsilon, seed = args.one
        print(json.dumps(run_one(task, float(epsilon), int(seed), args.quick)))
        return 0
    grid = [(t, 1.0, 0) for t in TASKS] if args.quick else [(t, e, s) for t in TASKS for e in EPSILONS for s in SEEDS]
    rows = []
    for task, epsilon, seed in grid:
        command = [sys.executable, __file__, "--one", task, str(epsilon), str(seed)] + (["--quick"] if args.quick else [])
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            rows.append({"task": task, "epsilon": epsilon, "seed": seed, "error": done.stderr.strip().splitlines()[-1:]})
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"{task:14s} eps={epsilon:<4g} seed={seed} {row['seconds']:7.1f}s "
              f"F1 {row['macro_f1']:.3f} (real {row['real_macro_f1']:.3f}) "
              f"CM {row.get('CM_mean_error', float('nan')):.4f} MM {row.get('MM_mean_error', float('nan')):.4f} "
              f"LT {row.get('LT_mean_error', float('nan')):.4f} peak {row['peak_rss_mib']:.0f} MiB", flush=True)
    if args.quick:
        return 0
    RESULTS.mkdir(exist_ok=True)
    payload = {"commit": git_commit(), "machine": machine(), "date": time.strftime("%Y-%m-%d"), "runs": rows}
    (RESULTS / "synthesis_cpu.json").write_text(json.dumps(payload, indent=1))
    import polars as pl

    flat = pl.DataFrame([{k: v for k, v in r.items() if k != "parameters"} for r in rows])
    flat.write_csv(RESULTS / "synthesis_cpu.csv")
    summary = (flat.group_by("task", "epsilon").agg(
        pl.col("seconds").mean(), pl.col("macro_f1").mean(), pl.col("macro_f1").min().alias("f1_min"),
        pl.col("macro_f1").max().alias("f1_max"), pl.col("real_macro_f1").first(),
        pl.col("CM_mean_error").mean(), pl.col("MM_mean_error").mean(), pl.col("LT_mean_error").mean(),
        pl.col("peak_rss_mib").max()).sort("task", "epsilon"))
    print(summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
