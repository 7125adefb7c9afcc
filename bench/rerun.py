"""Replace one mechanism's rows of a suite CSV by a rerun's, and record what changed.

When a change to the library changes a mechanism's output (a correctness fix, new metrics),
its suite rows are rerun into a separate CSV; this module compares the two sets of rows (mean
over seeds per dataset × ε, old / new and their ratio) into a committed Markdown note, then
puts the new rows in place of the old ones, so the headline table and every ablation that
reads the suite's default rows see the current library::

    python -m bench.rerun --new bench/results/rerun_rap.csv --mechanism rap++ \
        --why "merge of exact samplers, nullable halfspaces and the numeric metric" \
        --note bench/results/rerun_2026-11-23.md
    python -m bench.run --plots-only             # redraw headline.md and the plots

The old rows stay in git history; only runs present in both files are compared, and only the
(dataset, ε, seed) points the rerun holds are replaced (``--datasets`` takes only some
datasets' rows of it, e.g. when another dataset's rerun is incomplete).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from bench.harness import COLUMNS, ERROR_CLASSES, RESULTS, read_results, table_markdown, with_bins, write_results

__all__ = ["compare", "splice"]

KEY = ("dataset", "epsilon", "seed")
METRICS = (*(f"{c}_mean_error" for c in ERROR_CLASSES), "macro_f1", "gb_macro_f1", "rf_macro_f1", "numeric_ks_mean",
           "pearson_max_delta", "spearman_max_delta", "eta_kept_min", "seconds")


def compare(old: pl.DataFrame, new: pl.DataFrame, mechanism: str) -> pl.DataFrame:
    """Dataset × ε (× bins, for a binned mechanism): mean over the seeds both hold of each metric,
    old, new and new / old. A binned peer's rows at the suite's tuning point hold every bins value
    tried; each bins value is its own row here, so the chosen value's seeds are never averaged
    with the values it was chosen over."""
    on = [*KEY, "bins"]
    old, new = (with_bins(frame).filter(pl.col("mechanism") == mechanism) for frame in (old, new))
    shared = old.select(on).unique().join(new.select(on).unique(), on=on, nulls_equal=True)

    def means(frame: pl.DataFrame) -> pl.DataFrame:
        return (frame.join(shared, on=on, nulls_equal=True).filter(pl.col("status") == "ok")
                .group_by("dataset", "epsilon", "bins").agg(*(pl.col(m).mean() for m in METRICS),
                                                           pl.col("seed").n_unique().alias("seeds")))

    joined = means(old).join(means(new), on=["dataset", "epsilon", "bins"], suffix="_new", nulls_equal=True)
    columns = []
    for metric in METRICS:
        columns += [pl.col(metric).alias(f"{metric} old"), pl.col(f"{metric}_new").alias(f"{metric} new"),
                    (pl.col(f"{metric}_new") / pl.col(metric)).round(3).alias(f"{metric} new/old")]
    table = joined.select("dataset", "epsilon", "bins", *columns, "seeds_new").rename({"seeds_new": "seeds"}).sort(
        "dataset", "epsilon", "bins")
    return table if table["bins"].is_not_null().any() else table.drop("bins")


def splice(suite_csv: Path, new: pl.DataFrame, mechanism: str) -> int:
    """Rewrite ``suite_csv`` with ``mechanism``'s rows at the rerun's points replaced by the
    rerun's rows (other rows untouched, in order); returns the number of rows replaced."""
    old = read_results(suite_csv)
    rows = new.filter(pl.col("mechanism") == mechanism)
    points = rows.select(KEY).unique()
    replaced = old.join(points, on=list(KEY), how="semi").filter(pl.col("mechanism") == mechanism)
    kept = old.join(replaced.select(KEY).with_columns(pl.lit(mechanism).alias("mechanism")),
                    on=[*KEY, "mechanism"], how="anti")
    write_results(suite_csv, pl.concat([kept, rows.select(COLUMNS)], how="vertical_relaxed"))
    return replaced.height


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite-csv", type=Path, default=RESULTS / "headline.csv")
    parser.add_argument("--new", type=Path, required=True, help="the rerun's results CSV")
    parser.add_argument("--mechanism", required=True)
    parser.add_argument("--why", required=True, help="what changed in the library, for the note")
    parser.add_argument("--note", type=Path, required=True, help="Markdown note to write")
    parser.add_argument("--finding", default="", help="one line on what the rerun showed")
    parser.add_argument("--datasets", nargs="+", help="take only these datasets' rows of the rerun (the others "
                                                      "keep their old rows)")
    args = parser.parse_args(argv)
    old, new = read_results(args.suite_csv), read_results(args.new)
    if args.datasets:
        new = new.filter(pl.col("dataset").is_in(args.datasets))
    table = compare(old, new, args.mechanism)
    args.note.write_text(
        f"# Rerun of `{args.mechanism}` in {args.suite_csv.name}: {args.why}\n\n"
        f"Mean over seeds of the old rows (before the rerun) and the new ones ({args.new.name}), "
        "same split, seeds and evaluation.\n\n" + table_markdown(table) + "\n"
        + (f"\n{args.finding}\n" if args.finding else ""))
    count = splice(args.suite_csv, new, args.mechanism)
    print(f"note -> {args.note}; {count} row(s) of {args.mechanism} replaced in {args.suite_csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
