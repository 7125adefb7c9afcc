"""Where the mixed-marginal error comes from: numeric margins or numeric dependence (issue 20).

    python -m bench.margins_diagnosis acs-income-CA:1 adult:0.25 --seed 0

For each ``dataset:epsilon``, one ``rap++`` fit with the defaults (the headline split, δ = 1/n²,
CM + LT as in the suite's rows: :func:`bench.diagnostics.fit`), then the suite's MM and LT
errors (``evaluation.workload_errors``, seed 0) of three tables:

- the synthetic rows as released;
- the synthetic rows with each numeric column mapped, within each label value, onto the real
  column's distribution given that label (quantile mapping of its non-null values, ranks and
  nulls kept): the synthetic dependence between columns, with true one-way margins;
- the real rows with each numeric column shuffled within each label value: true margins, the
  columns independent given the label (what a fit that knew the margins and nothing of the
  dependence would reach).

Then, per numeric column, how far from the real one-way prefixes ``P(label = y, x <= t)`` (on
the histogram's edges, each weighed by its cell's width on the mapped coordinate, as the suite's
uniform thresholds weigh them) the released noisy histogram prefixes and the synthetic rows are.
The output goes to ``bench/results/mm_margins.md`` (rewritten: its committed "What it shows"
section was written by hand after the run). Reads the real training rows: a diagnostic
for the bench, never part of a release.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np
import polars as pl

from bench.diagnostics import fit
from bench.run import RESULTS


def _errors(train: pl.DataFrame, frame: pl.DataFrame, domain) -> dict[str, float]:
    from polars_rap.quality.evaluation import workload_errors

    table = workload_errors(train, frame, domain, seed=0, classes=("MM", "LT"))
    return {row["query_class"]: row["mean_error"] for row in table.iter_rows(named=True)}


def true_margins(train: pl.DataFrame, synthetic: pl.DataFrame, label: str, columns: Sequence[str]) -> pl.DataFrame:
    """``synthetic`` with each of ``columns`` mapped within each label value onto the real
    column's distribution given that label (its non-null values by rank; nulls stay null)."""
    out = []
    for column in columns:
        values = synthetic[column].cast(pl.Float64).to_numpy().copy()
        mapped = values.copy()
        for value in synthetic[label].unique().to_list():
            rows = (synthetic[label] == value).to_numpy() & ~np.isnan(values)
            real = train.filter(pl.col(label) == value)[column].drop_nulls().cast(pl.Float64).to_numpy()
            if rows.sum() == 0 or len(real) == 0:
                continue
            ranks = (np.argsort(np.argsort(values[rows], kind="stable"), kind="stable") + 0.5) / rows.sum()
            mapped[rows] = np.quantile(real, ranks, method="inverted_cdf")
        out.append(pl.Series(column, mapped, nan_to_null=True).cast(synthetic[column].dtype))
    return synthetic.with_columns(out)


def independent_given_label(train: pl.DataFrame, label: str, columns: Sequence[str]) -> pl.DataFrame:
    """The real rows with each of ``columns`` shuffled within each label value."""
    return train.with_columns(pl.col(c).shuffle(seed=i).over(label) for i, c in enumerate(columns))


def margin_gaps(train: pl.DataFrame, result, domain) -> list[dict]:
    """Per numeric column: mean |released prefix - real| and |synthetic prefix - real| over
    its histogram's edges (weighed by cell width) and label values."""
    from polars_rap.schema.encoding import encode
    from polars_rap.fit.numeric_histograms import histogram_edges

    label_block = next(i for i, block in enumerate(domain.blocks) if block.is_label)
    n_values = len(domain[domain.blocks[label_block].source].categories)

    def prefixes(frame: pl.DataFrame) -> list[np.ndarray]:
        encoded = encode(frame.select(domain.names), domain)
        codes = encoded.codes[:, label_block]
        out = []
        for j, spec in enumerate(domain.numeric_columns):
            x = np.nan_to_num(encoded.numerics[:, j], nan=0.0)  # a null reads as 0, as in every exact answer
            edges = histogram_edges(spec).astype(np.float64)
            out.append(np.array([[np.mean((codes == v) & (x <= t)) for v in range(n_values)] for t in edges]))
        return out

    released = result.report.measurements.filter(pl.col("query_class") == "NH")["noisy_answer"].to_numpy()
    rows, position = [], 0
    for spec, real, synthetic in zip(domain.numeric_columns, prefixes(train), prefixes(result.data), strict=True):
        noisy = released[position:position + real.size].reshape(real.shape)
        position += real.size
        width = np.diff(histogram_edges(spec).astype(np.float64), prepend=0.0)[:, None]

        def gap(a: np.ndarray, b: np.ndarray) -> float:
            return float(np.sum(width * np.abs(a - b)) / np.sum(width) / real.shape[1])

        rows.append({"column": spec.name, "cells": real.shape[0], "released_vs_real": gap(noisy, real),
                     "synthetic_vs_real": gap(synthetic, real)})
    return rows


def diagnose(dataset: str, epsilon: float, seed: int) -> list[str]:
    """The markdown section of one fit."""
    from polars_rap.schema.domain import Domain

    train, task, result = fit(dataset, epsilon, seed)
    label = task.labels[0]
    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    numeric = [spec.name for spec in domain.numeric_columns]
    tables = {
        "synthetic, as released": result.data,
        "synthetic, true one-way margins per label": true_margins(train, result.data, label, numeric),
        "real margins, independent given the label": independent_given_label(train, label, numeric),
    }
    lines = [f"## {dataset}, ε = {epsilon:g}, seed {seed}", "", "| table | MM | LT |", "|---|---|---|"]
    for name, frame in tables.items():
        errors = _errors(train, frame, domain)
        lines.append(f"| {name} | {errors['MM']:.6f} | {errors['LT']:.6f} |")
    lines += ["", "| column | cells | released prefixes vs real | synthetic vs real |", "|---|---|---|---|"]
    for row in margin_gaps(train, result, domain):
        lines.append(f"| {row['column']} | {row['cells']} | {row['released_vs_real']:.5f} | "
                     f"{row['synthetic_vs_real']:.5f} |")
    return [*lines, ""]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="dataset:epsilon, e.g. adult:0.25")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    lines = ["# Where the mixed-marginal error comes from (`python -m bench.margins_diagnosis`)", ""]
    for run in args.runs:
        dataset, epsilon = run.rsplit(":", 1)
        lines += diagnose(dataset, float(epsilon), args.seed)
    path = RESULTS / "mm_margins.md"
    path.write_text("\n".join(lines) + "\n")
    print(f"-> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
