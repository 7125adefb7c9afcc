"""The ``polars-rap`` command line's arguments: one subparser per command (see
:mod:`polars_rap.cli.commands` for what each does, and its exit statuses)."""

from __future__ import annotations

import argparse

__all__ = ["build_parser"]

# quality.ml_utility.ML_MODELS, spelled out: importing it would load scikit-learn for --help
# (tests/test_cli_evaluate.py checks the two agree).
_ML_MODELS = ("logistic", "gradient_boosting", "random_forest")


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors as one line and exit status 2."""

    def error(self, message: str):  # one line on stderr, exit status 2
        self.exit(2, f"polars-rap: error: {message} (see '{self.prog} --help')\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"must be an int >= 1. Got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``polars-rap`` argument parser: ``args.command`` names the command to run."""
    from polars_rap.io.datasets import list_tasks

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--quiet", "-q", action="store_true", help="no progress bar or info logs")
    common.add_argument("--debug", action="store_true", help="print tracebacks (or set POLARS_RAP_DEBUG=1)")
    parser = _Parser(prog="polars-rap", description="Differentially private synthetic data (RAP++).",
                     epilog="exit status: 0 ok, 1 internal error, 2 usage, config or parameter error "
                            "(bad flags, options or domain declarations: fix the command), 3 data error "
                            "(unreadable input, or data that do not fit the declared domain: fix the "
                            "data), 4 privacy budget error, 130 interrupted")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    synth = commands.add_parser("synthesize", parents=[common], help="synthesize a Parquet/CSV/IPC table")
    synth.add_argument("input", metavar="IN", help="the sensitive table (.parquet, .csv, .arrow/.ipc): one file, a glob pattern "
                            "in quotes or a directory of parts")
    synth.add_argument("--output", "-o", required=True, metavar="OUT",
                       help="synthetic table (.parquet, .csv, .arrow/.ipc)")
    synth.add_argument("--epsilon", type=float, default=None, help="epsilon of (epsilon, delta)-DP")
    synth.add_argument("--delta", type=float, default=None, help="delta of (epsilon, delta)-DP")
    synth.add_argument("--config", "-c", default=None, metavar="TOML",
                       help="labels, [domain], [options], [strategy], [privacy]")
    synth.add_argument("--rows", type=_positive_int, default=None, metavar="N",
                       help="synthetic rows (default: as many as IN)")
    synth.add_argument("--seed", type=int, default=None,
                       help="fixed seed, for research and tests only (reproducible noise, not secure)")
    synth.add_argument("--model", default=None, metavar="DIR",
                       help="save the model here (sample more rows later)")
    synth.add_argument("--report-json", default=None, metavar="FILE", help="write the privacy report's JSON summary")
    synth.add_argument("--json", action="store_true", help="print the report's JSON summary on stdout")
    synth.add_argument("--full", action="store_true",
                       help="the whole report as JSON (every charge, query and bound), not its summary")
    synth.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    synth.add_argument("--engine", choices=["auto", "polars", "ray"], default=None,
                       help="ray: read IN (Parquet files, folder or URI) per block on a Ray cluster")
    synth.add_argument("--block-rows", type=_positive_int, default=None, metavar="B",
                       help="OUT is a folder (or URI) of Parquet parts of B rows each, written block by block "
                            "(by Ray tasks with --engine ray)")
    synth.add_argument("--public", default=None, metavar="TABLE",
                       help="a public table (.parquet, .csv, .arrow/.ipc) of IN's columns or a subset, used "
                            "as a prior at no privacy cost (overrides the config's public = \"...\")")

    init = commands.add_parser("init", parents=[common],
                               help="write a config template from a table's schema (reads no value)")
    init.add_argument("input", metavar="IN", help="the table (.parquet, .csv, .arrow/.ipc); only its schema is read")
    init.add_argument("--output", "-o", required=True, metavar="TOML", help="the config template (.toml)")
    init.add_argument("--overwrite", action="store_true", help="replace the template if it exists")

    sample = commands.add_parser("sample", parents=[common],
                                 help="more rows from a saved model (no privacy cost)")
    sample.add_argument("model", metavar="MODEL", help="a directory written by synthesize --model")
    sample.add_argument("--rows", "-n", type=_positive_int, required=True, metavar="ROWS")
    sample.add_argument("--output", "-o", required=True, metavar="OUT", help=".parquet, .csv or .arrow/.ipc")
    sample.add_argument("--seed", type=int, default=None)
    sample.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    sample.add_argument("--where", default=None, metavar="EXPR",
                        help="only rows satisfying EXPR, a SQL expression over the columns such as "
                             "\"SEX = 2 AND AGEP >= 60\" (drawn from the model conditioned on it)")
    sample.add_argument("--engine", choices=["polars", "ray"], default="polars",
                        help="ray: OUT is a folder of Parquet parts written by Ray tasks")
    sample.add_argument("--block-rows", type=_positive_int, default=None, metavar="B",
                        help="OUT is a folder of Parquet parts of B rows each (default 1,000,000)")

    report = commands.add_parser("report", parents=[common], help="print a saved model's privacy report")
    report.add_argument("model", metavar="MODEL")
    report.add_argument("--json", action="store_true", help="the report's summary as JSON")
    report.add_argument("--full", action="store_true",
                        help="with --json: the whole report (every charge, query and bound; megabytes)")

    export = commands.add_parser("export", parents=[common],
                                 help="write a task's table and config (unbundled ones: $POLARS_RAP_DATA_DIR)")
    export.add_argument("task", metavar="TASK", choices=list_tasks(), help=" or ".join(list_tasks()))
    export.add_argument("--output", "-o", required=True, metavar="OUT", help=".parquet, .csv or .arrow/.ipc")
    export.add_argument("--config", "-c", default=None, metavar="TOML", help="write the task's config here")
    export.add_argument("--rows", type=_positive_int, default=None, metavar="N",
                        help="a random subset of N rows")
    export.add_argument("--seed", type=int, default=0, help="seed of the subset (default 0)")
    export.add_argument("--overwrite", action="store_true")

    demo = commands.add_parser("demo", parents=[common],
                               help="synthesize the bundled ACS income (CA) table and write its quality report")
    demo.add_argument("--task", default="acs-income-CA", help="bundled task (default acs-income-CA)")
    demo.add_argument("--epsilon", type=float, default=1.0)
    demo.add_argument("--delta", type=float, default=None, help="default 1/n^2")
    demo.add_argument("--seed", type=int, default=None, help="fixed seed (research only)")
    demo.add_argument("--output", "-o", default=None, help="write the synthetic rows here (Parquet)")
    demo.add_argument("--report", default="demo-report.html", metavar="HTML",
                      help="write the quality report here (default demo-report.html; replaced if it exists)")

    evaluate = commands.add_parser("evaluate", parents=[common],
                                   help="an HTML quality report of a synthetic table (reads the real rows: not private)")
    evaluate.add_argument("real", metavar="REAL", help="the real table (.parquet, .csv, .arrow/.ipc)")
    evaluate.add_argument("synthetic", metavar="SYNTHETIC", help="the synthetic table, or a saved model directory")
    evaluate.add_argument("--output", "-o", required=True, metavar="HTML", help="the report (.html)")
    evaluate.add_argument("--config", "-c", default=None, metavar="TOML", help="labels and [domain] (as for synthesize)")
    evaluate.add_argument("--test", default=None, metavar="TEST", help="held-out real rows: ML utility per label")
    evaluate.add_argument("--model", default=None, metavar="DIR", help="saved model: its privacy report is shown")
    evaluate.add_argument("--seed", type=int, default=0, help="seed of the workload and samples (default 0)")
    evaluate.add_argument("--ml-rows", type=int, default=None, metavar="N",
                          help="training rows of each reference classifier with --test (default: quality_report's)")
    evaluate.add_argument("--ml-models", nargs="+", default=None, metavar="M", choices=_ML_MODELS,
                          help="classifiers trained with --test: logistic, gradient_boosting, random_forest "
                               "(default all three; random_forest is the slow one)")
    evaluate.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"],
                          help="kernels of the workload answers (default auto: a GPU when usable)")
    evaluate.add_argument("--overwrite", action="store_true", help="replace the report if it exists")
    return parser
