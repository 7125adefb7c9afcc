"""Where the numeric pairs' test reads its counts, judged against the real rows.

    python -m bench.pair_counts_probe                  # cps1988, CA, Adult; eps 1 and 5; seeds 0-2
    python -m bench.pair_counts_probe --table-only

The test (:mod:`polars_rap.decode.numeric_pairs`) predicts each released pair sum as a cell's count
times a mean: the relaxed rows' mean of ``x_j`` in the cell (their pairing) or the label's (none).
This probe fits the default (``rap++``, the benchmark's split and budget) and reads the inputs
the fit hands to :func:`~polars_rap.decode.numeric_pairs.fitted_ties` (relaxed rows, released sums and
std) and the released histograms, then, per pair table:

- ``count_error_*``: the summed absolute error, over the table's cells, of the counts the test
  would use (the relaxed rows' masses, or the released histograms regrouped into the bins) against
  the real rows' counts (rows whose ``x_j`` is not null, as shares of the rows);
- ``evidence_*``: the test's statistic with those counts, and with the real rows' own counts;
- ``loss_drop`` / ``loss_keep``: how far the decoding's targets would be from the real rows'
  (mean of ``x_j`` in each cell less the label's), squared and weighted by the real counts,
  times 1e4, with the pair dropped (targets 0) or kept (the relaxed rows' deviations).

The table: per dataset and ε, the mean count errors and the summed loss of each rule (drop
every pair, keep every pair, the test with each kind of counts, the better of the two per pair).
``bench/results/pair_counts_probe.{csv,md}``; a rerun skips the (dataset, ε, seed) triples there.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from bench.run import RESULTS, kept_notes, prepare_dataset, report_table, run_resumable, table_markdown

OUT = RESULTS / "pair_counts_probe.csv"
RULES = ("drop", "keep", "test_relaxed_counts", "test_released_counts", "test_real_counts", "better")


def _fit_inputs(dataset: str, epsilon: float, seed: int) -> tuple[dict, pl.DataFrame]:
    """The inputs the default's fit hands to ``fitted_ties`` (keys relaxed, domain, layout,
    noisy, std, histograms) and the training rows."""
    import polars_rap.pipeline.synthesis as mechanism

    from bench.mechanisms import MECHANISMS

    seen: dict = {}
    original = mechanism.fitted_ties

    def spy(relaxed, domain, layout, noisy, std, histograms=None, **keywords):
        seen.update(relaxed=np.asarray(relaxed, dtype=np.float64), domain=domain, layout=layout,
                    noisy=np.asarray(noisy), std=float(std), histograms=histograms)
        return original(relaxed, domain, layout, noisy, std, histograms=histograms, **keywords)

    train, _, task = prepare_dataset(dataset, None)
    mechanism.fitted_ties = spy
    try:
        MECHANISMS["rap++"](train, task.domain, task.labels, epsilon, 1.0 / train.height**2, seed, {})
    finally:
        mechanism.fitted_ties = original
    return seen, train


def probe(dataset: str, epsilon: float, seed: int) -> list[dict]:
    """One row per pair table the fit tested (none where the ties were not measured)."""
    from polars_rap.schema.encoding import encode
    from polars_rap.decode.numeric_pairs import _cell_counts, _evidence, _pair_cells, _pair_name, pair_deviations

    seen, train = _fit_inputs(dataset, epsilon, seed)
    if not seen or not seen["layout"].bins:
        return [{"dataset": dataset, "epsilon": epsilon, "seed": seed, "pair": None}]
    domain, layout, relaxed = seen["domain"], seen["layout"], seen["relaxed"]
    encoded = encode(train, domain)
    codes, numerics = encoded.codes, np.nan_to_num(encoded.numerics)
    rows = np.column_stack([*(np.eye(block.n_codes)[codes[:, i]] for i, block in enumerate(domain.blocks)), numerics])
    real, cells = _pair_cells(rows, domain, layout), _pair_cells(relaxed, domain, layout)
    counts = {"relaxed": _cell_counts(domain, layout, cells, len(relaxed), None),
              "released": _cell_counts(domain, layout, cells, len(relaxed), seen["histograms"]),
              "real": {t: (real[t][0] / len(rows), np.zeros(len(real[t][0]))) for t in real}}
    evidence = {name: _evidence(layout, cells, c, seen["noisy"], seen["std"])[0] for name, c in counts.items()}
    deviations = pair_deviations(relaxed, domain, layout)
    out = []
    for t in sorted(cells):
        mass, sums, means, _ = real[t]
        share = mass / len(rows)
        truth = np.divide(sums, mass, out=np.zeros(len(mass)), where=mass > 0) - means
        kept = deviations[layout.offsets[t]:layout.offsets[t + 1]]
        out.append({"dataset": dataset, "epsilon": epsilon, "seed": seed, "pair": _pair_name(domain, layout.tables[t]),
                    **{f"count_error_{name}": float(np.abs(counts[name][t][0] - share).sum())
                       for name in ("relaxed", "released")},
                    **{f"evidence_{name}": float(evidence[name][t]) for name in counts},
                    "loss_drop": float(share @ truth**2) * 1e4, "loss_keep": float(share @ (kept - truth) ** 2) * 1e4})
    return out


def summary(results: pl.DataFrame) -> pl.DataFrame:
    """Per dataset and ε: mean count errors and each rule's summed loss over pairs and seeds."""
    from polars_rap.decode.numeric_pairs import PAIR_EVIDENCE

    tested = results.filter(pl.col("pair").is_not_null())

    def rule(evidence: str) -> pl.Expr:
        return pl.when(pl.col(evidence) > PAIR_EVIDENCE).then(pl.col("loss_keep")).otherwise(pl.col("loss_drop"))

    losses = {"drop": pl.col("loss_drop"), "keep": pl.col("loss_keep"),
              "test_relaxed_counts": rule("evidence_relaxed"), "test_released_counts": rule("evidence_released"),
              "test_real_counts": rule("evidence_real"), "better": pl.min_horizontal("loss_drop", "loss_keep")}
    return (tested.group_by("dataset", "epsilon")
            .agg(pl.col("count_error_relaxed").mean().round(4), pl.col("count_error_released").mean().round(4),
                 *(expr.sum().round(2).alias(f"loss_{name}") for name, expr in losses.items()),
                 pl.col("seed").n_unique().alias("seeds"), pl.len().alias("pairs"))
            .sort("dataset", "epsilon"))


def write_outputs(out: Path) -> Path:
    markdown = out.with_suffix(".md")
    results = pl.read_csv(out)
    text = table_markdown(summary(results), f"The numeric pairs' test by where it reads its counts ({out.name}; "
                                            "bench.pair_counts_probe)")
    rows = results.filter(pl.col("pair").is_not_null()).sort("dataset", "epsilon", "seed", "pair")
    text += "\n" + table_markdown(rows.with_columns(pl.col(pl.Float64).round(4)), "Each tested pair")
    markdown.write_text(text + kept_notes(markdown))
    return markdown


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pair_counts_probe", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["cps1988", "acs-income-CA", "adult"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 5.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.table_only:
        keys = [(d, e, s) for d in args.datasets for e in args.epsilons for s in args.seeds]
        run_resumable(args.out, ("dataset", "epsilon", "seed"), keys, probe,
                      lambda key, rows, seconds: {"dataset": key[0], "epsilon": key[1], "seed": key[2],
                                                  "pairs": len(rows), "seconds": round(seconds, 1)})
    return report_table(args.out, write_outputs)


if __name__ == "__main__":
    raise SystemExit(main())
