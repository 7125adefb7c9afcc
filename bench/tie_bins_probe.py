"""What the numeric ties by numeric bins can give back, on the real rows (no noise, no fit).

    python -m bench.tie_bins_probe                     # cps1988, CA, Adult; permutations 0-1
    python -m bench.tie_bins_probe --table-only

The default decodes each numeric column permuted within each label (the label coupling), which
drops every tie of a numeric column, to the categorical features and to the other numeric
columns; the numeric ties (:mod:`polars_rap.decode.numeric_ties`) hand the values out again to follow
released sums. This probe bounds what that can restore: the real training rows themselves,
their numerics permuted within each label (``label``), then handed out by ties fitted
(:func:`polars_rap.decode.tie_ridge.fit_ties`, the real rows as one-hot relaxed rows) to the *exact* tie
sums with 0 (``ties 0``: the default's tables), 8 or 16 bins of each earlier numeric column.
Each row: the suite's MM / LT mean errors against the real rows (CM is unchanged: the
categories are the real ones) and the macro F1 of its logistic regression on the held-out rows.
``bench/results/tie_bins_probe.{csv,md}``; a rerun skips the (dataset, permutation) pairs there.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from bench.run import RESULTS, kept_notes, prepare_dataset, report_table, run_resumable, table_markdown

OUT = RESULTS / "tie_bins_probe.csv"
BINS = (0, 8, 16)
METRICS = ("MM_mean_error", "LT_mean_error", "macro_f1")


def _with_numerics(train: pl.DataFrame, numerics: np.ndarray, domain) -> pl.DataFrame:
    """``train`` with its numeric columns decoded from ``numerics`` (float64[n, n_numeric],
    mapped units), nulls where they were."""
    from polars_rap.decode.decoding import decoded_values

    columns = []
    for j, spec in enumerate(domain.numeric_columns):
        values = pl.Series(spec.name, decoded_values(numerics[:, j], spec))
        columns.append(pl.when(train[spec.name].is_null()).then(None).otherwise(pl.lit(values))
                       .cast(train.schema[spec.name]).alias(spec.name))
    return train.with_columns(columns)


def probe(dataset: str, permutation: int) -> list[dict]:
    """One row per way (``real``, ``label``, ``ties B``) for one permutation of one dataset."""
    from polars_rap.quality import evaluation
    from polars_rap.schema.domain import Domain
    from polars_rap.schema.encoding import encode
    from polars_rap.decode.numeric_coupling import decouple_numerics
    from polars_rap.decode.numeric_ties import TIE_QUANTUM, tie_layout, tie_sums
    from polars_rap.decode.tie_ridge import fit_ties

    train, test, task = prepare_dataset(dataset, None)
    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    encoded = encode(train, domain)
    codes, numerics = encoded.codes, np.nan_to_num(encoded.numerics)
    relaxed = np.column_stack([*(np.eye(block.n_codes)[codes[:, i]] for i, block in enumerate(domain.blocks)),
                               numerics]).astype(np.float32)
    shuffled = decouple_numerics(codes, numerics, domain, np.random.default_rng(permutation))
    ways = {"real": numerics, "label": shuffled}
    for bins in BINS:
        layout = tie_layout(domain, bins)
        exact = tie_sums(codes, numerics, domain, layout) / (len(codes) * TIE_QUANTUM)
        ties = fit_ties(relaxed, domain, layout, exact, 1e-6)
        ways[f"ties {bins}"] = ties.apply(codes, shuffled, domain, np.random.default_rng(permutation + 10))
    rows = []
    for way, values in ways.items():
        frame = _with_numerics(train, values, domain)
        errors = evaluation.workload_errors(train, frame, domain, seed=0, classes=("MM", "LT"))
        rows.append({"dataset": dataset, "permutation": permutation, "way": way,
                     **{f"{r['query_class']}_mean_error": r["mean_error"] for r in errors.iter_rows(named=True)},
                     "macro_f1": evaluation.ml_utility_for_domain(frame, test, task.labels[0], domain)["macro_f1"]})
    return rows


def summary(results: pl.DataFrame) -> pl.DataFrame:
    """Per dataset and way: means over the permutations."""
    order = {w: i for i, w in enumerate(("real", "label", *(f"ties {b}" for b in BINS)))}
    return (results.group_by("dataset", "way").agg(*(pl.col(m).mean() for m in METRICS),
                                                   pl.col("permutation").n_unique().alias("permutations"))
            .with_columns(pl.col("way").replace_strict(order).alias("_order"))
            .sort("dataset", "_order").drop("_order"))


def write_outputs(out: Path) -> Path:
    markdown = out.with_suffix(".md")
    text = table_markdown(summary(pl.read_csv(out)),
                          f"Numeric ties by numeric bins on the real rows ({out.name}; bench.tie_bins_probe)")
    markdown.write_text(text + kept_notes(markdown))
    return markdown


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tie_bins_probe", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["cps1988", "acs-income-CA", "adult"])
    parser.add_argument("--permutations", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.table_only:
        run_resumable(args.out, ("dataset", "permutation"),
                      [(dataset, permutation) for dataset in args.datasets for permutation in args.permutations],
                      probe, lambda key, rows, _: {"dataset": key[0], "permutation": key[1],
                                                   **{r["way"]: [round(r[m], 6) for m in METRICS] for r in rows}})
    return report_table(args.out, write_outputs)


if __name__ == "__main__":
    raise SystemExit(main())
