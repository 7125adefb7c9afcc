"""A state the label model was not tuned on (issue 19): private = one state's ACS income task
(80/20 split, seed 0), public = every other state's and Puerto Rico's rows (CA included), the
default synthesis with and without the public table (``public_use`` default: ``"labels"``).

    python -m bench.other_state_check --state TX --epsilons 0.25 1 --seed 0
    python -m bench.other_state_check --state TX --public-use reweight --no-none   # beside the rows above
    python -m bench.other_state_check --state NY --epsilons 1 --public-use margins --no-none --checks-forced

Prints one JSON row per (ε, variant) and appends it to ``bench/results/other_state_check.csv``:
the suite's evaluation (CM, MM, LT mean errors on the training rows, macro F1 of logistic
regression on the state's test rows, and on its real training rows), the run's date (the
first rows, before the column existed, are from 2026-11-25's default and have none) and the
code's commit (``-dirty`` with uncommitted changes; none before 2026-11-29's empirical-Bayes margins).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence

import polars as pl

from bench.host import git_commit
from bench.public_margins_check_stakes import checks_forced
from bench.public_margins_probe import suite_errors
from bench.public_prior import state_tables
from bench.run import RESULTS

OUT = RESULTS / "other_state_check.csv"


def state_split(state: str) -> tuple[object, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(the ACS income task, ``state``'s training and test rows, every other state's rows): the
    check's private table (80/20 split, seed 0) and public table."""
    from polars_rap.io import datasets

    task = datasets.load_task("acs-income-CA")  # its domain (TOML) holds every state's codes
    frame = state_tables(task.frame.columns, only=state, what=f"{state}'s table")
    train, test = datasets.train_test_split(frame, test_fraction=0.2, seed=0)
    return task, train, test, state_tables(task.frame.columns, but=state, what="the public table")


def run(state: str, epsilons: Sequence[float], seed: int, public_use: Sequence[str] | None = None,
        with_none: bool = True, forced: bool = False) -> list[dict]:
    """The check's rows (module docstring); with ``forced`` the run with the public table has both of
    ``"margins"``' checks choose the public rows (its variant ``"public, checks forced"``): what
    releasing them would have given where a check kept the loop's rows."""
    import contextlib

    import polars_rap
    from polars_rap.quality import evaluation
    from polars_rap.schema.domain import Domain

    task, train, test, public = state_split(state)
    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    real_f1 = evaluation.ml_utility_for_domain(train, test, task.labels[0], domain)["macro_f1"]
    commit = git_commit()
    rows = []
    for epsilon in epsilons:
        variants = [("none", {})] if with_none else []
        variants.append(("public, checks forced" if forced else "public",
                         {"public": public, "public_use": None if public_use is None else list(public_use)}))
        for variant, extra in variants:
            started = time.perf_counter()
            with checks_forced() if forced and extra else contextlib.nullcontext():
                result = polars_rap.synthesize(train, epsilon=epsilon, delta=1 / train.height**2, domain=task.domain,
                                               labels=task.labels, seed=seed, progress=False, **extra)
            seconds = time.perf_counter() - started
            row = {"state": state, "train_rows": train.height, "public_rows": public.height, "eps": epsilon,
                   "seed": seed, "variant": variant,
                   "uses": ",".join((result.report.public_data or {}).get("uses", [])),
                   **suite_errors(result.data, train, domain),
                   "F1": evaluation.ml_utility_for_domain(result.data, test, task.labels[0], domain)["macro_f1"],
                   "real_F1": real_f1, "seconds": seconds, "date": time.strftime("%Y-%m-%d"), "commit": commit}
            record = result.report.public_data or {}
            if "reweight_released" in record:
                margins = f", {record['reweight_margins']} margins" if record.get("reweight_margins") else ""
                row["uses"] += f" ({record['reweight_released']}{margins} released)"
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", default="TX")
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.25, 1.0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--public-use", nargs="+", help="the public table's uses (default: synthesize's)")
    parser.add_argument("--no-none", action="store_true", help="skip the run without a public table")
    parser.add_argument("--checks-forced", action="store_true",
                        help="both of the margins' checks choose the public rows (bench only: what releasing "
                             "them gives)")
    args = parser.parse_args(argv)
    new = pl.DataFrame(run(args.state, args.epsilons, args.seed, args.public_use, not args.no_none,
                           args.checks_forced))
    old = pl.read_csv(OUT) if OUT.exists() else None
    (new if old is None else pl.concat([old, new], how="diagonal_relaxed")).write_csv(OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
