"""What every benchmark shares: the results rows (one CSV format, resumable), a stage in a fresh
process, a JSON record headed by the machine and commit, Markdown tables, and the ACS state
tables the large-input benchmarks read.

- :func:`append_row` / :func:`read_results` / :func:`completed_keys`: the tidy results CSV of
  ``bench.run`` and ``bench.ablations`` (``COLUMNS``; a rerun skips what is done);
- :func:`execute`: one run of a mechanism in a fresh ``python -m bench.run --one`` process;
- :func:`run_stage`: any other stage in a fresh process (its peak RSS its own), with the load
  the machine carried meanwhile; :func:`write_record`: the JSON record of such stages;
- :func:`workload_scores` (the suite's errors), :func:`table_markdown`, :func:`acs_state_tables`.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from bench.host import SHARED_DATA, cpu_model, git_commit
from bench.sdmetrics_eval import SDMETRICS_METRICS

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS = BENCH_DIR / "results"

COLUMNS = (
    "dataset", "mechanism", "parameters", "epsilon", "delta", "seed", "n_train", "status",
    "message", "CM_mean_error", "CM_max_error", "MM_mean_error", "MM_max_error",
    "LT_mean_error", "LT_max_error", "numeric_ks_mean", "numeric_decile_error", "pearson_mean_delta",
    "pearson_max_delta", "spearman_mean_delta", "spearman_max_delta", "eta_kept_mean", "eta_kept_min",
    "median_error_max", "macro_f1", "accuracy", "real_macro_f1", "real_accuracy", "gb_macro_f1", "rf_macro_f1",
    "real_gb_macro_f1", "real_rf_macro_f1", *SDMETRICS_METRICS, "seconds", "peak_rss_mib", "load_1m_at_start",
    "details", "machine", "version", "commit", "date",
)
FLOAT_COLUMNS = ("epsilon", "delta", *COLUMNS[COLUMNS.index("CM_mean_error"):COLUMNS.index("details")])
"""The float columns: ε, δ and every metric (the errors through the load at start), as COLUMNS orders them."""
NUMERIC_METRICS = ("numeric_ks_mean", "numeric_decile_error")
"""Issue #14's numeric metric (``polars_rap.quality.evaluation.numeric_summary``), in every row."""
RELATION_METRICS = ("pearson_mean_delta", "pearson_max_delta", "spearman_mean_delta", "spearman_max_delta",
                    "eta_kept_mean", "eta_kept_min", "median_error_max")
"""Issues #77 and #78's relation figures (``polars_rap.quality.relations.relation_summary``), in
every row from the commit that added them on (older rows hold nulls there)."""
TREE_MODELS = {"gb": "gradient_boosting", "rf": "random_forest"}
"""Issue #74's classifiers beside logistic regression (``quality.ml_utility.ML_MODELS``): each
row's ``{prefix}_macro_f1`` and ``real_{prefix}_macro_f1``, from the commit that added them on
(older rows hold nulls there)."""
DONE_STATUSES = ("ok", "timeout")
ERROR_CLASSES = ("CM", "MM", "LT")


# ============================================================================================
# The results CSV
# ============================================================================================


def canonical_json(value: Any) -> str:
    """The one JSON spelling of ``value`` (sorted keys, no spaces): the parameters key."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def run_key(dataset: str, mechanism: str, parameters: str | dict, epsilon: float, seed: int) -> tuple:
    """Identity of a run: (dataset, mechanism, canonical parameters JSON, ε, seed)."""
    if isinstance(parameters, str):
        parameters = json.loads(parameters)
    return (str(dataset), str(mechanism), canonical_json(parameters), float(epsilon), int(seed))


def merged(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``change`` merged, a nested table (a strategy's ``rounds``, ``workload``,
    ``projection``) key by key; a deep copy, neither argument changed."""
    out = json.loads(json.dumps(base))
    for key, value in change.items():
        both = isinstance(out.get(key), dict) and isinstance(value, dict)
        out[key] = {**out[key], **value} if both else json.loads(json.dumps(value))
    return out


def spec_key(spec: dict[str, Any]) -> tuple:
    """:func:`run_key` of a planned run (a ``--one`` spec)."""
    return run_key(spec["dataset"], spec["mechanism"], spec["parameters"], spec["epsilon"], spec["seed"])


def read_results(path: Path) -> pl.DataFrame:
    """The results CSV as a frame with the harness's columns and dtypes (empty if absent)."""
    schema = {c: (pl.Float64 if c in FLOAT_COLUMNS else pl.Int64 if c in ("seed", "n_train") else pl.String)
              for c in COLUMNS}
    if not Path(path).is_file() or Path(path).stat().st_size == 0:
        return pl.DataFrame(schema=schema)
    frame = pl.read_csv(path, infer_schema=False)
    for column in COLUMNS:
        if column not in frame.columns:
            frame = frame.with_columns(pl.lit(None, dtype=pl.String).alias(column))
    return frame.select(COLUMNS).with_columns(
        pl.col(c).str.strip_chars().replace("", None).cast(dtype) for c, dtype in schema.items()
    )


def with_bins(results: pl.DataFrame) -> pl.DataFrame:
    """``results`` with ``bins`` (Int64, null when the run has none) from its parameters JSON."""
    return results.with_columns(
        pl.col("parameters").str.json_path_match("$.bins").cast(pl.Int64, strict=False).alias("bins"))


def completed_keys(results: pl.DataFrame) -> set[tuple]:
    """Keys of the runs whose rows say ok or timeout; errors are retried."""
    done = results.filter(pl.col("status").is_in(DONE_STATUSES))
    return {run_key(r["dataset"], r["mechanism"], r["parameters"], r["epsilon"], r["seed"])
            for r in done.iter_rows(named=True)}


def append_row(path: Path, row: dict[str, Any]) -> None:
    """Append one row to the results CSV (header first when the file is new). A file written
    before a column was added is first rewritten with the current header, its old rows empty
    in the new columns, so that every line has the header's fields."""
    path.parent.mkdir(parents=True, exist_ok=True)
    is_new = not path.is_file() or path.stat().st_size == 0
    if not is_new:
        with path.open(newline="") as handle:
            header = next(csv.reader(handle), [])
        if header != list(COLUMNS):
            write_results(path, read_results(path))
    with path.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        if is_new:
            writer.writeheader()
        writer.writerow({c: _csv_cell(row.get(c)) for c in COLUMNS})


def write_results(path: Path, results: pl.DataFrame) -> None:
    """Write ``results`` (the harness's columns, as :func:`read_results` gives them) as the
    results CSV at ``path``, header first, replacing the file."""
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in results.iter_rows(named=True):
            writer.writerow({c: _csv_cell(row[c]) for c in COLUMNS})


def _csv_cell(value: Any) -> Any:
    return "" if value is None else value


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ============================================================================================
# Fresh processes
# ============================================================================================


def machine() -> str:
    """CPU model and core count, e.g. ``AMD EPYC 7B13 x2``."""
    return f"{cpu_model() or platform.processor() or 'unknown CPU'} x{os.cpu_count()}"


def machine_facts() -> dict[str, Any]:
    """The machine and the versions a JSON record is headed by."""
    import numpy as np

    facts = {"cpu": cpu_model() or platform.processor(), "cores": os.cpu_count(),
             "python": platform.python_version(), "polars": pl.__version__, "numpy": np.__version__,
             "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)}
    try:
        import numba

        facts["numba"] = numba.__version__
    except ImportError:
        pass
    return facts


def _child_timeout(spec: dict[str, Any]) -> float | None:
    cap = spec["parameters"].get("time_cap_s")
    return None if cap is None else 2.0 * float(cap) + 1800.0  # peer setup and evaluation on top


def execute(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Run ``spec`` in a fresh ``python -m bench.run --one`` process and return its rows; a
    crash becomes an error row carrying the tail of its stderr."""
    command = [sys.executable, "-m", "bench.run", "--one", json.dumps(spec)]
    started = time.perf_counter()
    base = {c: None for c in COLUMNS}
    base.update(dataset=spec["dataset"], mechanism=spec["mechanism"],
                parameters=canonical_json(spec["parameters"]), epsilon=spec["epsilon"],
                seed=spec["seed"], machine=machine(), commit=git_commit(), date=utc_now())
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT,
                              timeout=_child_timeout(spec))
    except subprocess.TimeoutExpired:
        base.update(status="timeout", seconds=time.perf_counter() - started,
                    message="the run's process outlived the harness's limit and was killed")
        return [base]
    lines = done.stdout.strip().splitlines()
    if done.returncode == 0 and lines:
        try:
            return list(json.loads(lines[-1]))
        except json.JSONDecodeError:
            pass
    tail = " | ".join(done.stderr.strip().splitlines()[-6:])
    base.update(status="error", seconds=time.perf_counter() - started,
                message=f"child exited with {done.returncode}: {tail}")
    return [base]


def _busy_cpu_seconds() -> float:
    """CPU seconds all processes have spent busy since boot (``/proc/stat``, all cores)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_stage(script: Path | str, *arguments: str) -> dict[str, Any]:
    """``python <script> --stage <arguments>`` in a fresh interpreter (so that its peak RSS is
    its own), its last stdout line read as the stage's JSON row, with the machine's 1-minute
    load before and after and ``other_processes_cores``: the cores other processes kept busy
    meanwhile (all busy CPU time less the stage's own, over its wall time; above ~0.2 the
    stage shared the machine and its seconds are inflated). A failed stage is a row with
    ``error``."""
    load_before = round(os.getloadavg()[0], 2)
    busy, own, started = _busy_cpu_seconds(), _children_cpu_seconds(), time.perf_counter()
    done = subprocess.run([sys.executable, str(script), "--stage", *map(str, arguments)],
                          capture_output=True, text=True)
    wall = time.perf_counter() - started
    other_cores = (_busy_cpu_seconds() - busy - (_children_cpu_seconds() - own)) / wall
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        return {"stage": arguments[0], "error": done.stderr.strip().splitlines()[-1:]}
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row.update(load_average_1min_before=load_before, load_average_1min_after=round(os.getloadavg()[0], 2),
               other_processes_cores=round(max(other_cores, 0.0), 2))
    return row


def write_record(path: Path, benchmark: str, **payload: Any) -> Path:
    """``path`` (JSON): ``benchmark``, the commit, the machine, the date, then ``payload``."""
    record = {"benchmark": benchmark, "commit": git_commit(), "machine": machine_facts(),
              "date": time.strftime("%Y-%m-%d"), **payload}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, default=str) + "\n")
    return path


# ============================================================================================
# Tables and data
# ============================================================================================


def workload_scores(real: pl.DataFrame, synthetic: pl.DataFrame, domain, **evaluation_settings: Any) -> dict:
    """The suite's scores of ``synthetic`` against ``real``: each query class's mean and max
    error on the benchmark workload (``workload_errors(..., seed=0)``, its defaults unless
    ``evaluation_settings`` say otherwise), as ``<class>_mean_error`` / ``<class>_max_error``."""
    from polars_rap.quality.evaluation import workload_errors

    scores = {}
    for row in workload_errors(real, synthetic, domain, seed=0, **evaluation_settings).iter_rows(named=True):
        scores[f"{row['query_class']}_mean_error"] = row["mean_error"]
        scores[f"{row['query_class']}_max_error"] = row["max_error"]
    return scores


def table_markdown(table: pl.DataFrame, title: str = "") -> str:
    """``table`` as a GitHub Markdown table (floats to 4 significant digits)."""
    import math

    def cell(value: Any) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "–"
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value).replace("|", "\\|")

    lines = [f"# {title}", ""] if title else []
    lines.append("| " + " | ".join(table.columns) + " |")
    lines.append("|" + "|".join("---" for _ in table.columns) + "|")
    lines.extend("| " + " | ".join(cell(v) for v in row) + " |" for row in table.iter_rows())
    return "\n".join(lines) + "\n"


def acs_dir(data_dir: Path | str | None = None) -> Path:
    """The folder of ``acs2018_1yr_person_<ST>.parquet``: ``data_dir``, else
    ``$POLARS_RAP_DATA_DIR``, else ``../shared/data`` beside the repository."""
    from polars_rap.io.datasets import DATA_DIR_ENV

    return Path(data_dir or os.environ.get(DATA_DIR_ENV) or SHARED_DATA)


def acs_state_files(data_dir: Path | str | None = None, *, only: str | None = None,
                    but: str | None = None) -> list[Path]:
    """The ACS 2018 person files of :func:`acs_dir`, sorted: state ``only``'s, or every one but
    ``but``'s; an error naming the folder when none is there."""
    folder = acs_dir(data_dir)
    files = [f for f in sorted(folder.glob("acs2018_1yr_person_*.parquet"))
             if (only is None or f.stem.endswith(f"_{only}")) and (but is None or not f.stem.endswith(f"_{but}"))]
    if not files:
        msg = (f"no acs2018_1yr_person_<ST>.parquet{f' for {only}' if only else ''} in {folder.resolve()}; "
               "set $POLARS_RAP_DATA_DIR (or --data-dir) to the folder that holds them")
        raise FileNotFoundError(msg)
    return files


def acs_state_tables(columns: Sequence[str], data_dir: Path | str | None = None, *, only: str | None = None,
                     but: str | None = None) -> pl.DataFrame:
    """The ``acs-income-CA`` task's preprocessing (:func:`polars_rap.io.datasets.preprocess_acs_income`)
    of :func:`acs_state_files`' tables, concatenated, ``columns`` in order: a table that fits the
    task's public domain (as a large input, or as a public table for another state's task)."""
    from polars_rap.io.datasets import preprocess_acs_income

    raw = pl.concat([pl.read_parquet(f) for f in acs_state_files(data_dir, only=only, but=but)],
                    how="vertical_relaxed")
    return preprocess_acs_income(raw).select(columns)
