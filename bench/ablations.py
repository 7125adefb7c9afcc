"""One change against the default, on the headline datasets, seed by seed.

    python -m bench.ablations NAME --change JSON [--epsilons 0.25 1] [--seeds 0 1 2] [--datasets ...]
    python -m bench.ablations NAME --table-only            # the table again, from the CSV

    python -m bench.ablations steps_30 --change '{"strategy": {"projection": {"max_steps": 30}}}'
    python -m bench.ablations base_share_2 --change '{"strategy": {"base_share": 0.2}}'
    python -m bench.ablations numeric --change '{"domain_updates": {"adult": {"capital-gain": {"scale": "log"}}}}'
    python -m bench.ablations public_margins --datasets acs-income-CA --epsilons 0.1 0.25 1 \\
        --change '{"public": "matched", "public_use": ["margins"]}'

``--change`` is a JSON object of one or more of:

- ``"synthesize"``: ``synthesize`` keywords merged over the suite's (``confidence``, say);
- ``"strategy"``: the strategy's settings (polars_rap's mapping form: ``name``, its settings,
  ``rounds``, ``workload`` and ``projection`` tables) merged over the suite's, a nested table
  key by key;
- ``"domain_updates"``: per dataset, keys merged into numeric columns' declared domains (a
  column's ``scale`` or ``atoms``); the change then runs on the datasets it names only;
- ``"public"`` and ``"public_use"``: a public table for ``synthesize(public=...)``
  (:func:`bench.mechanisms.public_table`: ``"matched"``, ``"mismatched"``, ``"state:<ST>"``;
  acs-income-CA only).

Both the default (the headline suite's ``rap++``: its split, evaluation workload and
δ = 1/n_train²) and the change run through ``bench.run``'s harness (a fresh process each, one row
appended at once, a rerun skipping what is done) into ``bench/results/ablation_<NAME>.csv``, on
the same machine and commit, so that each seed's pair compares like with like;
``--default-rows CSV`` reads the default's rows from another results file instead (e.g. the
headline suite's, when they ran at this commit). The table (``ablation_<NAME>.md``) gives per
dataset and ε the default's mean over seeds, the change's, the mean of the per-seed ratios and on
how many seeds the change is lower; a section from ``## What it showed`` on, written by hand
after the run, is kept when the table is rewritten. What earlier ablations showed is in
``docs/findings.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from bench.harness import (
    ERROR_CLASSES, RESULTS, completed_keys, git_commit, merged, read_results, spec_key, table_markdown,
)

DATASETS = ("acs-income-CA", "adult")
EPSILONS = (0.25, 1.0)
SEEDS = (0, 1, 2)
METRICS = (*(f"{c}_mean_error" for c in ERROR_CLASSES), "numeric_ks_mean", "macro_f1", "gb_macro_f1", "rf_macro_f1",
           "seconds")
CHANGE_KEYS = ("synthesize", "strategy", "domain_updates", "public", "public_use")
NOTES_HEADING = "## What it showed"


def check_change(change: dict) -> dict:
    """``change`` itself, or an error naming the keys it may hold."""
    if not isinstance(change, dict) or not change:
        raise SystemExit("--change must be a non-empty JSON object")
    unknown = sorted(set(change) - set(CHANGE_KEYS))
    if unknown:
        raise SystemExit(f"--change holds {unknown}; it may hold {list(CHANGE_KEYS)}")
    if ("public" in change) != ("public_use" in change):
        raise SystemExit('--change names a public table with "public" and its uses with "public_use", both')
    return change


def parameters(change: dict | None) -> dict:
    """The ``parameters`` of a run: the headline suite's ``rap++``, with ``change`` merged."""
    from bench.run import SUITES, mechanism_parameters

    suite = SUITES["headline"]
    planned = mechanism_parameters(suite, "rap++", None, 0.0)
    for key, value in (change or {}).items():
        if key in ("synthesize", "strategy"):
            planned[key] = merged(planned[key], value)
        else:
            planned[key] = json.loads(json.dumps(value))  # a deep copy
    return planned


def plan(change: dict, datasets: Sequence[str], epsilons: Sequence[float], seeds: Sequence[int],
         default: bool = True) -> list[dict]:
    """Every run, seed by seed and ε by ε (so that a run stopped early has whole pairs): the
    default's (unless ``default`` is False) and the change's, as ``bench.run --one`` specs."""
    named = change.get("domain_updates")
    mechanism = "rap++public" if "public" in change else "rap++"
    runs = []
    for seed in seeds:
        for epsilon in epsilons:
            for dataset in datasets:
                if named is not None and dataset not in named:
                    continue
                point = {"dataset": dataset, "epsilon": float(epsilon), "seed": int(seed)}
                if default:
                    runs.append({**point, "mechanism": "rap++", "parameters": parameters(None)})
                runs.append({**point, "mechanism": mechanism, "parameters": parameters(change)})
    return runs


def run(name: str, change: dict, datasets: Sequence[str], epsilons: Sequence[float], seeds: Sequence[int],
        default_rows: Path | None = None, quiet: bool = False) -> None:
    """The runs of :func:`plan` not yet in the ablation's CSV (nor, for the default's, in
    ``default_rows``), one fresh process each."""
    from bench.run import run_suite

    elsewhere = set() if default_rows is None else completed_keys(read_results(default_rows))
    specs = [s for s in plan(change, datasets, epsilons, seeds)
             if not (s["parameters"] == parameters(None) and spec_key(s) in elsewhere)]
    run_suite(lambda chosen: specs, RESULTS / f"ablation_{name}.csv", True, quiet, {})


def paired(results: pl.DataFrame, change: dict) -> pl.DataFrame:
    """One row per dataset, ε and seed where both the default and the change have an ok row:
    each metric's value for both (``<metric>`` and ``<metric>_default``)."""
    ok = results.filter(pl.col("status") == "ok").with_columns(
        pl.col("parameters").map_elements(lambda p: json.loads(p) == parameters(None), return_dtype=pl.Boolean)
        .alias("_default"),
        pl.col("parameters").map_elements(lambda p: json.loads(p) == parameters(change), return_dtype=pl.Boolean)
        .alias("_change"))
    on = ["dataset", "epsilon", "seed"]
    base = ok.filter("_default").unique(on, keep="last").select(*on, *(pl.col(m).alias(f"{m}_default") for m in METRICS))
    return ok.filter("_change").unique(on, keep="last").select(*on, *METRICS).join(base, on=on).sort(on)


def summary(pairs: pl.DataFrame) -> pl.DataFrame:
    """Per dataset and ε: the default's mean, the change's, the mean of the per-seed ratios
    (``dF1``, ``dGB F1``, ``dRF F1``: the mean difference in each classifier's macro F1) and on
    how many seeds the change is lower."""
    columns = []
    for metric in METRICS:
        short = metric.removesuffix("_mean_error").removesuffix("_mean").replace("numeric_ks", "KS")
        if metric.endswith("macro_f1"):  # logistic regression's, gradient boosting's, the forest's
            name = {"macro_f1": "F1", "gb_macro_f1": "GB F1", "rf_macro_f1": "RF F1"}[metric]
            columns += [pl.col(f"{metric}_default").mean().alias(f"{name} default"), pl.col(metric).mean().alias(name),
                        (pl.col(metric) - pl.col(f"{metric}_default")).mean().round(4).alias(f"d{name}")]
        else:
            ratio = pl.col(metric) / pl.col(f"{metric}_default")
            columns += [pl.col(f"{metric}_default").mean().alias(f"{short} default"), pl.col(metric).mean().alias(short),
                        ratio.mean().round(3).alias(f"{short} ratio")]
            if metric != "seconds":
                columns.append((pl.col(metric) < pl.col(f"{metric}_default")).sum().alias(f"{short} lower"))
    return (pairs.group_by("dataset", "epsilon").agg(*columns, pl.len().alias("seeds"))
            .sort("dataset", "epsilon"))


def write_table(name: str, change: dict, default_rows: Path | None = None) -> Path:
    """``ablation_<name>.md`` from its CSV (and ``default_rows``), keeping its notes."""
    out = RESULTS / f"ablation_{name}.csv"
    results = read_results(out)
    if default_rows is not None:
        results = pl.concat([results, read_results(default_rows)])
    pairs = paired(results, change)
    markdown = out.with_suffix(".md")
    notes = markdown.read_text() if markdown.exists() else ""
    notes = notes[notes.find(NOTES_HEADING):] if NOTES_HEADING in notes else ""
    commits = sorted(set(read_results(out)["commit"].drop_nulls()))
    text = (f"# Ablation {name}: one change against the default (bench/ablations.py)\n\n"
            f"Change: `{json.dumps(change)}`. Default: the headline suite's `rap++`"
            + (f" (its rows from `{default_rows.name}`)" if default_rows else "")
            + f". Commits: {', '.join(commits) or git_commit()}. Ratios are means of per-seed ratios "
            "(change / default); `lower`: seeds on which the change is lower; KS: the numeric metric's "
            "mean Kolmogorov-Smirnov distance.\n\n" + table_markdown(summary(pairs)) + "\n## Per seed\n\n"
            + table_markdown(pairs) + ("\n" + notes if notes else ""))
    markdown.write_text(text)
    return markdown


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ablations", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", help="the ablation's name: bench/results/ablation_<name>.{csv,md}")
    parser.add_argument("--change", type=json.loads, metavar="JSON", help="what differs from the default")
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--epsilons", nargs="+", type=float, default=EPSILONS)
    parser.add_argument("--seeds", nargs="+", type=int, default=SEEDS)
    parser.add_argument("--default-rows", type=Path, help="a results CSV holding the default's rows")
    parser.add_argument("--table-only", action="store_true", help="only the table, from the CSV")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    out = RESULTS / f"ablation_{args.name}.csv"
    if args.change is None:  # the change the CSV's rows were run with
        changed = [json.loads(p) for p in read_results(out)["parameters"].unique() if json.loads(p) != parameters(None)]
        if len(changed) != 1:
            raise SystemExit(f"name the change with --change ({out} holds {len(changed)} other than the default)")
        args.change = {k: v for k, v in changed[0].items() if k in CHANGE_KEYS and v != parameters(None).get(k)}
    change = check_change(args.change)
    if not args.table_only:
        run(args.name, change, args.datasets, args.epsilons, args.seeds, args.default_rows, args.quiet)
    if read_results(out).height == 0:
        print(f"no rows in {out}", file=sys.stderr)
        return 1
    print(f"table -> {write_table(args.name, change, args.default_rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
