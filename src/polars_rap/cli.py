"""Command line: ``polars-rap demo`` synthesizes the bundled ACS income table (California)."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from polars_rap import datasets, evaluation
    from polars_rap.mechanism import synthesize

    task = datasets.load_task(args.task)
    train, test = datasets.train_test_split(task.frame, test_fraction=0.2, seed=0)
    delta = args.delta if args.delta is not None else 1.0 / train.height**2
    print(f"polars-rap demo: task {task.name!r}, {train.height} training rows "
          f"({test.height} held out), epsilon={args.epsilon:g}, delta={delta:.3g}")
    started = time.perf_counter()
    result = synthesize(
        train, epsilon=args.epsilon, delta=delta, domain=task.domain, labels=task.labels,
        seed=args.seed, progress=not args.quiet and sys.stderr.isatty(),
    )
    seconds = time.perf_counter() - started
    print(f"synthesized {result.data.height} rows in {seconds:.1f} s\n")
    print(result.report.summary())
    if args.output:
        result.data.write_parquet(args.output)
        print(f"\nwrote {args.output}")
    print("\nEvaluation (reads the real rows; not part of the release):")
    errors = evaluation.workload_errors(train, result.data, result.domain, seed=0)
    for row in errors.iter_rows(named=True):
        print(f"  {row['query_class']}: mean error {row['mean_error']:.4f}, "
              f"max error {row['max_error']:.4f} over {row['queries']} queries")
    label = task.labels[0]
    real = evaluation.ml_utility_for_domain(train, test, label, result.domain)
    synthetic = evaluation.ml_utility_for_domain(result.data, test, label, result.domain)
    print(f"  logistic regression macro F1 on held-out rows: synthetic {synthetic['macro_f1']:.3f}"
          f" vs real {real['macro_f1']:.3f}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="polars-rap", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="synthesize the bundled ACS income (CA) table")
    demo.add_argument("--task", default="acs-income-CA", help="bundled task (default acs-income-CA)")
    demo.add_argument("--epsilon", type=float, default=1.0)
    demo.add_argument("--delta", type=float, default=None, help="default 1/n^2")
    demo.add_argument("--seed", type=int, default=None, help="fixed seed (research only)")
    demo.add_argument("--output", "-o", default=None, help="write the synthetic rows here (Parquet)")
    demo.add_argument("--quiet", action="store_true")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if getattr(args, "quiet", False) else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
