"""The public tables of #19 taken as the synthetic table themselves: how far a prior can go.

``bench/public_prior.py`` starts polars-rap from a public table (every other state's ACS rows,
or Puerto Rico's alone) and measures what that gains on acs-income-CA. Before asking a prior
for CM and MM errors at half of the run without it, this asks what the public table alone
scores on CA's evaluation: the suite's workload errors (``evaluation.workload_errors``, the
same seed and queries as ``bench.run``), the numeric KS and decile errors, and the macro F1 of
logistic regression trained on it and scored on CA's held-out rows. No privacy is involved
(the public table reads no private row; the evaluation reads CA's training rows, as every
benchmark row does).

    PYTHONPATH=src:. python -m bench.public_baseline      # -> bench/results/public_baseline.{json,md}
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl

from bench.host import git_commit
from bench.public_prior import DATASET, public_table
from bench.run import machine, prepare_dataset, read_results

RESULTS = Path(__file__).resolve().parent / "results"


def score(synthetic: pl.DataFrame, train: pl.DataFrame, test: pl.DataFrame, task) -> dict:
    """The suite's metrics of ``synthetic`` against CA's training rows (and its test rows)."""
    from polars_rap.quality import evaluation
    from polars_rap.schema.domain import Domain

    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    errors = evaluation.workload_errors(train, synthetic, domain, seed=0)
    row = {f"{r['query_class']}_mean_error": r["mean_error"] for r in errors.iter_rows(named=True)}
    row.update(evaluation.numeric_summary(train, synthetic, domain))
    row["macro_f1"] = evaluation.ml_utility_for_domain(synthetic, test, task.labels[0], domain)["macro_f1"]
    return row


def main() -> int:
    from polars_rap.quality import evaluation
    from polars_rap.schema.domain import Domain

    train, test, task = prepare_dataset(DATASET, None)
    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    rows = []
    for kind in ("matched", "mismatched"):
        started = time.perf_counter()
        public = public_table(kind, train.columns)
        rows.append({"table": f"{kind} public table as the synthetic table", "rows": public.height,
                     **score(public, train, test, task), "seconds": round(time.perf_counter() - started, 1)})
    headline = read_results(RESULTS / "headline.csv").filter(
        (pl.col("status") == "ok") & (pl.col("dataset") == DATASET) & (pl.col("mechanism") == "rap++"))
    metrics = ["CM_mean_error", "MM_mean_error", "LT_mean_error", "numeric_ks_mean", "numeric_decile_error",
               "macro_f1"]
    for epsilon, group in sorted(headline.group_by("epsilon"), key=lambda g: g[0][0]):
        rows.append({"table": f"rap++ default at eps = {epsilon[0]:g} (headline.csv, 3 seeds)",
                     "rows": int(group["n_train"][0]), **{m: float(group[m].mean()) for m in metrics}})
    real = evaluation.ml_utility_for_domain(train, test, task.labels[0], domain)["macro_f1"]
    rows.append({"table": "CA's training rows themselves", "rows": train.height, "macro_f1": real})
    payload = {"benchmark": "public_baseline", "dataset": DATASET, "commit": git_commit(), "machine": machine(),
               "date": time.strftime("%Y-%m-%d"), "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "public_baseline.json").write_text(json.dumps(payload, indent=1))
    table = pl.DataFrame(rows).select("table", "rows", *metrics)
    lines = ["# The public tables of #19 as synthetic tables for acs-income-CA (bench/public_baseline.py)", "",
             "Each row scored by the suite's evaluation against CA's training rows (F1: logistic regression "
             "scored on CA's held-out rows).", "",
             "| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    for row in table.iter_rows():
        lines.append("| " + " | ".join("–" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)
                                       for v in row) + " |")
    (RESULTS / "public_baseline.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
