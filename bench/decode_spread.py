"""How much of a run's error is its decoding's draw (issue 19): each fit decoded several times.

    python -m bench.decode_spread                                  # none / matched / mismatched labels, eps 1
    python -m bench.decode_spread --conditions none mismatched/labels --seeds 0 --decodes 2
    python -m bench.decode_spread --table-only

A run's errors are measured on one decoding of its relaxed rows: ``n_train`` rows drawn from
them. Two runs that differ only in how they decode (a public label model redraws labels) differ
also by that draw. Here every fit of ``bench.public_prior``'s conditions (same data, split,
settings and evaluation) is decoded again ``--decodes`` times from its model
(:meth:`polars_rap.SyntheticModel.sample`, seeds 1000, 1001, ...) beside the run's own rows
(decode 0); each decoding's CM/MM/LT errors and macro F1 are one CSV row
(``bench/results/decode_spread.csv``; a rerun skips the fits already there). The table
(``decode_spread.md``) gives, per condition, the mean over seeds and decodings, the mean over
seeds of each fit's own decoding alone, the spread of decodings within a fit (the mean over
seeds of their standard deviation) and the ratios of the means to the run without a public
table.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from bench.public_prior import CONDITIONS, DATASET, parameters
from bench.run import RESULTS, kept_notes, prepare_dataset, report_table, run_resumable, table_markdown

OUT = RESULTS / "decode_spread.csv"
METRICS = ("CM_mean_error", "MM_mean_error", "LT_mean_error", "macro_f1")


def fit_and_decode(condition: str, epsilon: float, seed: int, decodes: int) -> list[dict]:
    """One row per decoding (0: the run's own rows) of one fit of ``condition``."""
    import polars_rap
    from polars_rap.quality import evaluation
    from polars_rap.schema.domain import Domain

    from bench.mechanisms import _projection_config
    from bench.public_prior import public_table

    settings = parameters(condition, smoke=False)
    train, test, task = prepare_dataset(DATASET, settings.get("train_rows"))
    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    options = dict(settings.get("synthesize") or {})
    if "public" in settings:
        options.update(public=public_table(settings["public"], train.columns), public_use=settings["public_use"])
    result = polars_rap.synthesize(train, epsilon=epsilon, delta=1.0 / train.height**2, domain=task.domain,
                                   labels=task.labels, seed=seed, progress=False,
                                   projection=_projection_config(settings), **options)
    rows = []
    frames = [result.data, *(result.model.sample(train.height, seed=1000 + k) for k in range(decodes))]
    for decode, frame in enumerate(frames):
        errors = evaluation.workload_errors(train, frame, domain, seed=0, **settings.get("eval", {}))
        row = {"condition": condition, "epsilon": epsilon, "seed": seed, "decode": decode,
               **{f"{r['query_class']}_mean_error": r["mean_error"] for r in errors.iter_rows(named=True)},
               "macro_f1": evaluation.ml_utility_for_domain(frame, test, task.labels[0], domain)["macro_f1"]}
        rows.append(row)
    return rows


def summary(results: pl.DataFrame) -> pl.DataFrame:
    """Per condition and ε: means over seeds and decodings (the metrics' names), of the runs' own
    decodings (``*_own``), the mean within-fit standard deviation over decodings (``*_sd``), and
    the means' ratios (differences for F1) to ``none``'s."""
    per_fit = results.group_by("condition", "epsilon", "seed").agg(
        *(pl.col(m).mean().alias(m) for m in METRICS), *(pl.col(m).std().alias(f"{m}_sd") for m in METRICS),
        *(pl.col(m).filter(pl.col("decode") == 0).first().alias(f"{m}_own") for m in METRICS),
        pl.len().alias("decodes"))
    table = per_fit.group_by("condition", "epsilon").agg(
        *(pl.col(c).mean() for m in METRICS for c in (m, f"{m}_own", f"{m}_sd")),
        pl.col("seed").n_unique().alias("seeds"), pl.col("decodes").min())
    none = table.filter(pl.col("condition") == "none").select(
        "epsilon", *(pl.col(m).alias(f"{m}_none") for m in METRICS))
    table = table.join(none, on="epsilon", how="left").with_columns(
        *(pl.col(f"{c}_mean_error").truediv(pl.col(f"{c}_mean_error_none")).alias(f"{c}_vs_none")
          for c in ("CM", "MM", "LT")),
        (pl.col("macro_f1") - pl.col("macro_f1_none")).alias("F1_minus_none"))
    shown = ["condition", "epsilon", *METRICS, "MM_mean_error_own", "LT_mean_error_own", "macro_f1_own",
             "MM_mean_error_sd", "LT_mean_error_sd", "macro_f1_sd", "CM_vs_none", "MM_vs_none", "LT_vs_none",
             "F1_minus_none", "seeds", "decodes"]
    return table.select(shown).sort("epsilon", "condition")


def write_outputs(out: Path) -> Path:
    results = pl.read_csv(out)
    table = summary(results)
    markdown = out.with_suffix(".md")
    text = table_markdown(table, f"Decoding's spread ({out.name}; {DATASET}, bench.decode_spread)")
    markdown.write_text(text + kept_notes(markdown))
    return markdown


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.decode_spread", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conditions", nargs="+", choices=list(CONDITIONS),
                        default=["none", "matched/labels", "mismatched/labels"])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--decodes", type=int, default=5, help="decodings beside the run's own")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.table_only:
        run_resumable(args.out, ("condition", "epsilon", "seed"),
                      [(condition, args.epsilon, seed) for seed in args.seeds for condition in args.conditions],
                      lambda condition, epsilon, seed: fit_and_decode(condition, epsilon, seed, args.decodes),
                      lambda key, rows, seconds: {"condition": key[0], "seed": key[2], "seconds": round(seconds),
                                                  "LT": [round(r["LT_mean_error"], 6) for r in rows]})
    return report_table(args.out, write_outputs)


if __name__ == "__main__":
    raise SystemExit(main())
