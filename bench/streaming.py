"""Streaming benchmark: exact answers and synthesis on a Parquet file far larger than a batch
(issue #5).

Builds a 10-million-row Parquet file in a temporary folder by resampling, with replacement,
the person records of the 51 ACS 2018 state tables (``acs2018_1yr_person_*.parquet`` in
``$POLARS_RAP_DATA_DIR`` or ``../shared/data``), preprocessed exactly as the bundled
``acs-income-CA`` task is (so that task's public domain fits every row). Then, each in a fresh
process, it measures:

``answers``
    the single streaming pass of exact answers (:func:`polars_rap.io.source.exact_answers`) of the
    default synthesis workload over the file: seconds, rows/s, query-row evaluations/s, and
    the process's peak RSS;
``synthesize``
    a full ``polars_rap.synthesize(path, ...)`` with the task's domain and labels at ε = 1,
    δ = 1/n², default settings (as many synthetic rows as input rows): seconds, peak RSS,
    and the seconds and sampled peak RSS of its phases (exact answers, projections, decoding,
    report);
``decode``
    decoding ``DECODE_ROWS`` synthetic rows from a relaxed matrix, alone: the part whose
    memory grows with the number of output rows (the returned frame itself; decoding works
    in chunks), so that its cost per output row is on record.

Numba kernels are compiled (or loaded from Numba's cache) before the timed region. The
machine's 1-minute load average is recorded before and after each stage, since the cores
may be shared.

    python bench/streaming.py                     # 10M rows -> bench/results/streaming_cpu.json
    python bench/streaming.py --rows 1000000 --quick   # smaller, printed only
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

if __package__ in (None, ""):  # run as ``python bench/<script>.py``: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import RESULTS, acs_state_files, acs_state_tables, run_stage, write_record  # noqa: E402
from bench.host import own_peak_rss_mib  # noqa: E402
from polars_rap.quality.evaluation import ML_ROWS  # noqa: E402  (quality_report's default, against a million)

TASK = "acs-income-CA"
ROW_GROUP_ROWS = 100_000
WRITE_CHUNK_ROWS = 1_000_000
TARGET_PEAK_RSS_MIB = 2048
TARGET_QUALITY_SECONDS = 60
SYNTHESIZE_ROWS = None
"""Output rows of the synthesize stage: None, synthesize's default (as many as the input)."""
DECODE_ROWS = (1_000_000, 10_000_000)
NOTES = [
    "peak_rss_mib is VmHWM of the stage's own fresh process (its own memory's high-water mark; "
    "results before 2026-11-24 23:45 UTC used ru_maxrss, which a spawned process inherits from its parent); "
    "rss_before_mib is its RSS after imports and the warm-up call, before the timed call",
    "evaluations_per_second = rows * queries / seconds of the whole pass (reading, encoding "
    "and counting); read/encode/kernel seconds come from separate passes in the same process",
    "other_processes_cores: average number of cores other people's jobs kept busy during the "
    "stage (from /proc/stat minus the stage's own CPU time); above ~0.2 the stage shared the "
    "machine and its seconds are inflated",
    "synthesize phases: seconds and peak RSS sampled every 20 ms while exact_answers / project "
    "/ decode / build_report ran ('other': the rest, selection included)",
]


# ------------------------------------------------------------------------------ input file
def _state_files() -> list[Path]:
    """The 51 ACS state files (:func:`bench.harness.acs_state_files`), or an error."""
    files = acs_state_files()
    if len(files) != 51:
        msg = f"expected the 51 files acs2018_1yr_person_<ST>.parquet in {files[0].parent}, found {len(files)}"
        raise FileNotFoundError(msg)
    return files


def build_input(path: Path, n_rows: int, seed: int = 0) -> dict:
    """Write ``n_rows`` rows drawn with replacement from all 51 state tables to ``path``
    (zstd Parquet, row groups of ``ROW_GROUP_ROWS``), in chunks so that the sample itself is
    never held whole. Returns facts about the file."""
    from polars_rap.io import datasets

    task = datasets.load_task(TASK)
    pool = acs_state_tables(list(task.columns_spec), _state_files()[0].parent)
    rng = np.random.default_rng(seed)
    writer = None
    try:
        for start in range(0, n_rows, WRITE_CHUNK_ROWS):
            size = min(WRITE_CHUNK_ROWS, n_rows - start)
            chunk = pool[rng.integers(0, pool.height, size)].to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(path, chunk.schema, compression="zstd")
            writer.write_table(chunk, row_group_size=ROW_GROUP_ROWS)
    finally:
        if writer is not None:
            writer.close()
    return {"rows": n_rows, "pool_rows": pool.height, "state_files": len(_state_files()),
            "row_group_rows": ROW_GROUP_ROWS, "file_mib": round(path.stat().st_size / 2**20, 1),
            "in_memory_mib": round(pool.estimated_size() / pool.height * n_rows / 2**20, 1)}


# ------------------------------------------------------------------------------ measuring
def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _task_domain_and_workload(path: Path):
    """The task, its Domain on the file's schema, and the workload a default ``synthesize``
    builds (categorical marginals and 20,000 linear thresholds; mixed marginals are off by
    default)."""
    from polars_rap.io import datasets
    from polars_rap.schema.domain import Domain
    from polars_rap.io.source import DataSource
    from polars_rap.workload.builders import build_workload

    task = datasets.load_task(TASK)
    data_source = DataSource.from_input(path)
    domain = Domain.from_mapping(data_source.schema, task.domain, task.labels)
    queries = build_workload(domain, np.random.default_rng(0), classes=("CM", "LT"))
    return task, data_source, domain, queries


def stage_answers(path: Path) -> dict:
    """Time the streaming exact-answers pass over ``path``, then (for the breakdown) a pass
    that only reads and one that reads and encodes."""
    from polars_rap import kernels
    from polars_rap.schema.encoding import encode
    from polars_rap.io.source import DataSource, default_batch_rows, exact_answers

    task, data_source, domain, queries = _task_domain_and_workload(path)
    backend = kernels.get_backend("cpu")
    exact_answers(DataSource.from_input(task.frame.head(2_000)), domain, queries, backend)  # compile
    rss_before = _rss_mib()
    started = time.perf_counter()
    answers, n_rows = exact_answers(data_source, domain, queries, backend)
    seconds = time.perf_counter() - started
    peak = own_peak_rss_mib()
    batch_rows = default_batch_rows(domain)
    started = time.perf_counter()
    n_batches = sum(1 for _ in data_source.batches(domain.names, batch_rows))
    read_seconds = time.perf_counter() - started
    started = time.perf_counter()
    for batch in data_source.batches(domain.names, batch_rows):
        encode(batch, domain, clip_counts={})
    encode_seconds = time.perf_counter() - started - read_seconds
    return {
        "stage": "answers", "rows": n_rows, "queries": queries.n_queries, "groups": queries.n_groups,
        "batch_rows": batch_rows, "batches": n_batches, "seconds": round(seconds, 2),
        "rows_per_second": round(n_rows / seconds), "evaluations_per_second": float(f"{n_rows * queries.n_queries / seconds:.4g}"),
        "read_seconds": round(read_seconds, 2), "encode_seconds": round(encode_seconds, 2),
        "kernel_seconds": round(seconds - read_seconds - encode_seconds, 2),
        "rss_before_mib": round(rss_before, 1), "peak_rss_mib": round(peak, 1),
        "answers_checksum": float(answers.sum()),
    }


def stage_quality(path: Path, options: dict | None = None) -> dict:
    """Time :func:`polars_rap.quality.report.quality_report` of the file against the bundled task's
    rows standing in for a synthetic table, with the task's labels (so the benchmark
    workload's exact answers run: 220,000 queries by default), on the CPU backend. With
    ``options["ml_rows"]``, the task's rows are split (``train_test_split``, seed 0): the
    train part stands in for the synthetic table and the test part is the held-out rows of
    the ML utility, whose reference classifiers train on ``ml_rows`` rows each."""
    from polars_rap.io.datasets import train_test_split
    from polars_rap.quality.report import quality_report

    options = options or {}
    task, _, _, _ = _task_domain_and_workload(path)
    synthetic, test = (task.frame, None)
    extra = {}
    if "ml_rows" in options:
        synthetic, test = train_test_split(task.frame, seed=0)
        extra = {"ml_rows": options["ml_rows"]}
    quality_report(task.frame.head(2_000), synthetic.head(500), domain=task.domain, labels=task.labels,
                   test=None if test is None else test.head(200), backend="cpu", **extra)  # compile
    rss_before = _rss_mib()
    started = time.perf_counter()
    report = quality_report(path, synthetic, domain=task.domain, labels=task.labels, test=test, backend="cpu",
                            **extra)
    seconds = time.perf_counter() - started
    run = {
        "stage": "quality", "rows": report.n_real, "synthetic_rows": report.n_synthetic,
        "queries": int(report.workload_errors.height) if report.workload_errors is not None else 0,
        "seconds": round(seconds, 2), "rows_per_second": round(report.n_real / seconds),
        "rss_before_mib": round(rss_before, 1), "peak_rss_mib": round(own_peak_rss_mib(), 1),
    }
    if report.ml_utility is not None:
        run["test_rows"] = test.height
        run["ml_utility"] = report.ml_utility.select("label", "model", "trained_on", "macro_f1",
                                                        "n_train").to_dicts()
        run.update(extra)
    return run


class BackgroundSampler:
    """A context manager that calls ``sample()`` every ``interval_s`` seconds in a daemon
    thread while its block runs (subclasses define ``sample``)."""

    interval_s = 0.02

    def __enter__(self):
        import threading

        self._running = True
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._running = False
        self._thread.join()

    def _loop(self) -> None:
        while self._running:
            self.sample()
            time.sleep(self.interval_s)

    def sample(self) -> None:
        raise NotImplementedError


class _PhaseMeter(BackgroundSampler):
    """Seconds and peak RSS of named phases of ``synthesize``: wraps module-level functions
    that ``polars_rap.pipeline.synthesis`` calls, while a thread samples VmRSS every 20 ms. Only for
    attributing memory; the overall peak is ``ru_maxrss``."""

    def __init__(self) -> None:
        self.current = "other"
        self.seconds: dict[str, float] = {}
        self.peak_mib: dict[str, float] = {}

    def wrap(self, module, name: str) -> None:
        original = getattr(module, name)

        def wrapped(*args, **kwargs):
            previous, self.current = self.current, name
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started
                self.current = previous

        setattr(module, name, wrapped)

    def sample(self) -> None:
        rss, phase = _rss_mib(), self.current
        self.peak_mib[phase] = max(self.peak_mib.get(phase, 0.0), rss)

    def summary(self) -> dict:
        return {name: {"seconds": round(self.seconds[name], 2) if name in self.seconds else None,
                       "sampled_peak_rss_mib": round(peak, 1)}
                for name, peak in self.peak_mib.items()}


def stage_synthesize(path: Path, options: dict) -> dict:
    """Time a full ``synthesize(path, ...)`` at ε = 1, δ = 1/n², default settings, with the
    seconds and sampled peak RSS of its phases: the streaming exact answers, the projections,
    decoding, and the report (which encodes the synthetic rows)."""
    import polars_rap
    from polars_rap.io import datasets
    from polars_rap.fit import rounds
    from polars_rap.pipeline import decoding, fitting, release

    task = datasets.load_task(TASK)
    n_rows = pq.ParquetFile(path).metadata.num_rows  # public under replace-one
    polars_rap.synthesize(task.frame.head(300), epsilon=1.0, delta=1e-6, domain=task.domain,
                          labels=task.labels, seed=0, progress=False,
                          strategy=polars_rap.PlannedStrategy(rounds={"CM": 1, "LT": 1}))
    meter = _PhaseMeter()
    for module, name in ((fitting, "exact_answers"), (rounds, "project"), (decoding, "decode"),
                         (release, "build_report")):  # where the pipeline's stages look them up
        meter.wrap(module, name)
    rss_before = _rss_mib()
    with meter:
        started = time.perf_counter()
        result = polars_rap.synthesize(path, epsilon=1.0, delta=1.0 / n_rows**2, domain=task.domain,
                                       labels=task.labels, seed=0, progress=False, **options)
        seconds = time.perf_counter() - started
    return {
        "stage": "synthesize", "rows": n_rows, "rows_out": result.data.height, "options": options,
        "seconds": round(seconds, 2), "rss_before_mib": round(rss_before, 1),
        "peak_rss_mib": round(own_peak_rss_mib(), 1), "phases": meter.summary(),
        "rho_spent": result.report.rho_spent, "measured_queries": result.report.measurements.height,
    }


def stage_decode(rows_out: int) -> dict:
    """Time and peak RSS of decoding ``rows_out`` synthetic rows from a 1,000-row relaxed
    matrix of the task's domain: the part of ``synthesize`` whose memory grows with the
    output, not the input."""
    from polars_rap.io import datasets
    from polars_rap.schema.domain import Domain
    from polars_rap.decode.decoding import decode

    task = datasets.load_task(TASK)
    domain = Domain.from_mapping(task.frame.schema, task.domain, task.labels)
    relaxed = np.random.default_rng(0).random((1_000, domain.n_coords)).astype(np.float32)
    rss_before = _rss_mib()
    started = time.perf_counter()
    frame = decode(relaxed, domain, rows_out, np.random.default_rng(1))
    seconds = time.perf_counter() - started
    return {"stage": "decode", "rows_out": rows_out, "n_coords": domain.n_coords,
            "seconds": round(seconds, 2), "rss_before_mib": round(rss_before, 1),
            "peak_rss_mib": round(own_peak_rss_mib(), 1),
            "output_frame_mib": round(frame.estimated_size() / 2**20, 1)}


# ------------------------------------------------------------------------------ driver
def _findings(runs: list[dict], n_rows: int) -> list[str]:
    """Plain statements read off ``runs``: each stage against the 2 GiB peak-RSS target, and
    what decoding as many rows as the input (``synthesize``'s default) would hold."""
    findings = []
    for run in runs:
        if run.get("stage") in ("answers", "synthesize") and "peak_rss_mib" in run:
            verdict = "under" if run["peak_rss_mib"] < TARGET_PEAK_RSS_MIB else "OVER"
            findings.append(f"{run['stage']} over {run['rows']:,} input rows: peak RSS "
                            f"{run['peak_rss_mib']:.0f} MiB, {verdict} the {TARGET_PEAK_RSS_MIB} MiB target")
    for run in runs:
        if run.get("stage") == "quality" and "seconds" in run:
            verdict = "under" if run["seconds"] < TARGET_QUALITY_SECONDS else "OVER"
            ml = (f"with the ML utility ({run['test_rows']:,} test rows, classifiers on {run['ml_rows']:,} rows; "
                  + ", ".join(f"{m.get('model', 'logistic')} {m['trained_on']} F1 {m['macro_f1']:.4f}"
                             for m in run["ml_utility"]) + ")"
                  if "ml_utility" in run else "without test rows")
            findings.append(f"quality report over {run['rows']:,} rows {ml}: {run['seconds']:.1f} s, {verdict} "
                            f"the {TARGET_QUALITY_SECONDS} s target")
    decodes = [r for r in runs if r.get("stage") == "decode" and "peak_rss_mib" in r]
    if decodes:
        largest = max(decodes, key=lambda r: r["rows_out"])
        kib_per_row = (largest["peak_rss_mib"] - largest["rss_before_mib"]) * 1024 / largest["rows_out"]
        findings.append(
            f"decode of {largest['rows_out']:,} rows peaks at ~{kib_per_row:.2f} KiB per output "
            f"row above its starting RSS, against ~{largest['output_frame_mib'] * 1024 / largest['rows_out']:.2f} "
            "KiB per row of the frame it returns (it decodes in chunks of 100k rows; the "
            "returned frame is what grows with the output)")
    return findings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the generated file")
    parser.add_argument("--quick", action="store_true", help="print only, do not save")
    parser.add_argument("--skip-synthesize", action="store_true", help="only the answers stage")
    parser.add_argument("--synthesize-rows", type=int, default=SYNTHESIZE_ROWS,
                        help="rows= of the synthesize stage (output rows; see DECODE_ROWS)")
    parser.add_argument("--stage", nargs=2, metavar=("STAGE", "ARGUMENT"), help=argparse.SUPPRESS)
    parser.add_argument("--options", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        stage, argument = args.stage
        if stage == "answers":
            run = stage_answers(Path(argument))
        elif stage == "synthesize":
            run = stage_synthesize(Path(argument), json.loads(args.options))
        elif stage == "quality":
            run = stage_quality(Path(argument), json.loads(args.options))
        else:
            run = stage_decode(int(argument))
        print(json.dumps(run))
        return 0
    with tempfile.TemporaryDirectory(prefix="polars_rap_streaming_") as folder:
        path = Path(folder) / "acs_income_resampled.parquet"
        started = time.perf_counter()
        input_facts = build_input(path, args.rows)
        input_facts["build_seconds"] = round(time.perf_counter() - started, 1)
        print(f"input: {input_facts}", flush=True)
        stages = [("answers", path, {}), ("quality", path, {}), ("quality", path, {"ml_rows": ML_ROWS}),
                  ("quality", path, {"ml_rows": 1_000_000})]
        if not args.skip_synthesize:
            stages.append(("synthesize", path, {"rows": args.synthesize_rows}))
            stages += [("decode", rows_out, {}) for rows_out in DECODE_ROWS]
        runs = []
        for stage, argument, options in stages:
            runs.append(run_stage(__file__, stage, argument, "--options", json.dumps(options)))
            print(json.dumps(runs[-1]), flush=True)
    if args.quick:
        return 0
    write_record(RESULTS / "streaming_cpu.json", "streaming_cpu", input=input_facts, notes=NOTES,
                 findings=_findings(runs, args.rows), runs=runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
