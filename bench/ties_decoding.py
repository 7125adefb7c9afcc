"""The numeric ties' decoding at scale: fit the latent scores once, or on every chunk?

    python -m bench.ties_decoding                      # CA and Adult, eps 1, seeds 0-2, 500,000 rows
    python -m bench.ties_decoding --table-only

Decoding works in chunks of 100,000 rows. The ties (:mod:`polars_rap.decode.numeric_ties`) hand each
numeric column's values out within each label in the order of latent scores backfitted so that
each tie cell's mean meets its target: ``BACKFIT_SWEEPS`` times the column's tie tables
assignments, each an argsort of the chunk. Fitted on every chunk, that made sampling a million
CA rows 7.6x slower than without ties. Each fit of the default strategy (the suite's split and
evaluation, ``bench.run.prepare_dataset``) is decoded to ``--rows`` rows three ways, from the
same model and decoding seed:

``none``
    without the ties (the label coupling alone), for scale;
``every chunk``
    the scores backfitted on every chunk (the decoding before ``TieScores``);
``first chunk``
    the scores backfitted on the first chunk and reused, one assignment a chunk (the default).

Each row: seconds of the decoding, the tie tables' error (mean |cell sum / n| of the decoded rows
minus the real rows', mapped units, over every tie cell), the suite's CM / MM / LT mean errors
and macro F1 (logistic regression on the decoded rows, scored on the held-out real rows).
``bench/results/ties_decoding.{csv,md}``; a rerun skips the (dataset, seed) pairs already there.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from bench.run import RESULTS, kept_notes, prepare_dataset, report_table, run_resumable, table_markdown

OUT = RESULTS / "ties_decoding.csv"
WAYS = ("none", "every chunk", "first chunk")
METRICS = ("seconds", "tie_error", "CM_mean_error", "MM_mean_error", "LT_mean_error", "macro_f1")


class _Forgetful(dict):
    """A dict that keeps nothing."""

    def get(self, key, default=None):
        return None

    def setdefault(self, key, default=None):
        return default


class _RefitEveryChunk:
    """A :class:`~polars_rap.decode.numeric_ties.TieScores` stand-in that keeps nothing, so that every
    chunk backfits its own scores."""

    def __init__(self) -> None:
        self.by_column = _Forgetful()


def tie_error(frame: pl.DataFrame, real_sums: np.ndarray, domain, layout) -> float:
    """Mean |tie sum per row| difference of ``frame`` from the real rows' (mapped units)."""
    from polars_rap.schema.encoding import encode
    from polars_rap.decode.numeric_ties import TIE_QUANTUM, tie_sums

    encoded = encode(frame, domain)
    sums = tie_sums(encoded.codes, np.nan_to_num(encoded.numerics), domain, layout) / (TIE_QUANTUM * frame.height)
    return float(np.abs(sums - real_sums).mean())


def fit_and_decode(dataset: str, epsilon: float, seed: int, rows: int) -> list[dict]:
    """One row per way of decoding one fit."""
    import polars_rap
    import polars_rap.decode.numeric_ties as ties_module
    from polars_rap.schema import encoding
    from polars_rap.quality import evaluation
    from polars_rap.schema.domain import Domain
    from polars_rap.decode.numeric_ties import TIE_QUANTUM, tie_sums

    train, test, task = prepare_dataset(dataset, None)
    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    result = polars_rap.synthesize(train, epsilon=epsilon, delta=1.0 / train.height**2, domain=task.domain,
                                   labels=task.labels, seed=seed, progress=False)
    model = result.model
    if model.numeric_ties is None:
        raise SystemExit(f"{dataset} at eps {epsilon}: the default measured no ties")
    layout = model.numeric_ties.layout
    real = encoding.encode(train, domain)
    real_sums = tie_sums(real.codes, np.nan_to_num(real.numerics), domain, layout) / (TIE_QUANTUM * train.height)
    model.sample(1_000, seed=0)  # compile before timing
    out = []
    for way in WAYS:
        used = dataclasses.replace(model, numeric_ties=None) if way == "none" else model
        original = ties_module.TieScores
        if way == "every chunk":
            ties_module.TieScores = _RefitEveryChunk
        try:
            started = time.perf_counter()
            frame = used.sample(rows, seed=1000 + seed)
            seconds = time.perf_counter() - started
        finally:
            ties_module.TieScores = original
        errors = evaluation.workload_errors(train, frame, domain, seed=0)
        out.append({"dataset": dataset, "epsilon": epsilon, "seed": seed, "rows": rows, "way": way,
                    "seconds": round(seconds, 2), "tie_error": tie_error(frame, real_sums, domain, layout),
                    **{f"{r['query_class']}_mean_error": r["mean_error"] for r in errors.iter_rows(named=True)},
                    "macro_f1": evaluation.ml_utility_for_domain(frame, test, task.labels[0], domain)["macro_f1"]})
    return out


def summary(results: pl.DataFrame) -> pl.DataFrame:
    """Per dataset and way: means over seeds, and each metric's ratio to ``every chunk``'s."""
    table = results.group_by("dataset", "epsilon", "rows", "way").agg(
        *(pl.col(m).mean() for m in METRICS), pl.col("seed").n_unique().alias("seeds"))
    base = table.filter(pl.col("way") == "every chunk").select(
        "dataset", "epsilon", *(pl.col(m).alias(f"_{m}") for m in METRICS))
    table = table.join(base, on=["dataset", "epsilon"], how="left").with_columns(
        *(pl.col(m).truediv(pl.col(f"_{m}")).alias(f"{m}_vs_every_chunk") for m in METRICS if m != "macro_f1"),
        (pl.col("macro_f1") - pl.col("_macro_f1")).alias("F1_minus_every_chunk"))
    order = {w: i for i, w in enumerate(WAYS)}
    return (table.drop([f"_{m}" for m in METRICS])
            .with_columns(pl.col("way").replace_strict(order).alias("_order"))
            .sort("dataset", "epsilon", "_order").drop("_order"))


def write_outputs(out: Path) -> Path:
    markdown = out.with_suffix(".md")
    text = table_markdown(summary(pl.read_csv(out)), f"Ties' decoding at scale ({out.name}; bench.ties_decoding)")
    markdown.write_text(text + kept_notes(markdown))
    return markdown


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ties_decoding", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["acs-income-CA", "adult"])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.table_only:
        run_resumable(args.out, ("dataset", "seed"),
                      [(dataset, seed) for dataset in args.datasets for seed in args.seeds],
                      lambda dataset, seed: fit_and_decode(dataset, args.epsilon, seed, args.rows),
                      lambda key, rows, _: {"dataset": key[0], "seed": key[1],
                                            **{r["way"]: [r["seconds"], round(r["tie_error"], 6),
                                                          round(r["macro_f1"], 4)] for r in rows}})
    return report_table(args.out, write_outputs)


if __name__ == "__main__":
    raise SystemExit(main())
