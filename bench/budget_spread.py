"""How far the default's errors move with a nearby budget, one seed (issue 19).

A public table whose margins' check fails leaves the loop a few per cent less of the budget
(the check and the margins' first part), so a run with it is compared with a run without it at
the same seed but not the same rho. This asks how much that alone moves the errors: the default
without a public table on one state's ACS income task (:func:`bench.other_state_check.state_split`),
one seed, at each ε given, everything else alike (δ = 1/n²).

    PYTHONPATH=src:. python -m bench.budget_spread --state NY --seed 0 --epsilons 1 0.99 0.98 0.96 0.92
    # -> bench/results/budget_spread_NY.md
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import polars as pl

from bench.run import RESULTS, table_markdown


def errors_at(state: str, epsilons: Sequence[float], seed: int) -> pl.DataFrame:
    """One row per ε: CM, MM, LT mean errors (:func:`~bench.public_margins_probe.suite_errors`) of the
    default run without a public table on ``state``'s training rows at that ε and ``seed``."""
    import polars_rap
    from polars_rap.schema.domain import Domain

    from bench.other_state_check import state_split
    from bench.public_margins_probe import suite_errors

    task, train, _, _ = state_split(state)
    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    rows = []
    for epsilon in epsilons:
        result = polars_rap.synthesize(train, epsilon=epsilon, delta=1 / train.height**2, domain=task.domain,
                                       labels=task.labels, seed=seed, progress=False)
        rows.append({"epsilon": epsilon, **suite_errors(result.data, train, domain)})
        print(rows[-1], flush=True)
    return pl.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", default="NY")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 0.99, 0.98, 0.97, 0.96, 0.94, 0.92, 0.9])
    parser.add_argument("--findings", default="", help="a paragraph on what it showed, written under the table")
    args = parser.parse_args(argv)
    frame = errors_at(args.state, args.epsilons, args.seed)
    spread = frame.select(pl.col("CM", "MM", "LT").max() / pl.col("CM", "MM", "LT").min()).row(0, named=True)
    text = (f"# The default's errors at nearby budgets (bench/budget_spread.py)\n\n"
            f"acs-income-{args.state} (the other-state check's split), no public table, seed {args.seed}, δ = 1/n²; "
            f"run {time.strftime('%Y-%m-%d')}. Largest over smallest across these ε: CM {spread['CM']:.2f}x, "
            f"MM {spread['MM']:.2f}x, LT {spread['LT']:.2f}x.\n\n" + table_markdown(frame.select(
                "epsilon", *(pl.col(c).round(6) for c in ("CM", "MM", "LT"))))
            + (f"\n{args.findings}\n" if args.findings else ""))
    out = RESULTS / f"budget_spread_{args.state}.md"
    out.write_text(text)
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
