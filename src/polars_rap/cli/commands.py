"""Command line: synthesize a table, sample a saved model, print a report.

Commands
--------
``polars-rap synthesize IN -o OUT --epsilon E --delta D --config spec.toml [--rows N]
[--seed S] [--model DIR] [--report-json FILE] [--json] [--full] [--quiet] [--overwrite] [--engine E]
[--public TABLE] [--block-rows B]``
    Synthesize IN (Parquet, CSV or Arrow IPC, by suffix) into OUT (the same formats; with
    ``--block-rows``, a folder or URI of Parquet parts of B rows, written block by block,
    by Ray tasks on ``--engine ray``: ``synthesize(output=...)``). A CSV
    file's column types come from the config's domain, never from its rows
    (:func:`polars_rap.io.source.csv_dtype`). ``--engine ray`` reads IN (Parquet files, a
    folder or a URI such as ``s3://bucket/table/``) per block on a Ray cluster.
    ``--model DIR`` saves the released model (with the whole report), ``--report-json FILE``
    the report's JSON summary; ``--json`` prints that summary on stdout and nothing else
    there, otherwise a few lines of text. ``--full``: the whole report as JSON instead of the
    summary (every ledger charge, measured query and unmeasured bound; megabytes).
    ``--public TABLE`` (or ``public = "TABLE"`` at the top of the config) gives a public table
    of IN's columns or a subset, used as a prior at no privacy cost (``[options] public_use``
    says how; :mod:`polars_rap.public.prior`).
``polars-rap init IN -o spec.toml [--overwrite]``
    A config template for IN from its schema alone (no value is read): one ``[domain.NAME]``
    table per column, TODO where public bounds, categories and labels must be filled in.
``polars-rap sample MODEL -n ROWS -o OUT [--seed S] [--where EXPR] [--engine polars|ray] [--block-rows B]``
    More rows from a saved model: post-processing, no privacy cost. With ``--engine ray`` or
    ``--block-rows``, OUT is a folder (or URI) of Parquet parts, one per block of B rows
    (:func:`polars_rap.io.blocks.write_parquet`), written by Ray tasks or in this process.
    ``--where EXPR`` (one file only): every row satisfies EXPR, a SQL expression over the
    columns (``"SEX = 2 AND AGEP >= 60"``, read by :func:`polars.sql_expr`, as
    ``model.sample(where="...")`` reads it), drawn from the model conditioned on it
    (:mod:`polars_rap.decode.conditional`).
``polars-rap report MODEL [--json [--full]]``
    The saved model's privacy report: text, its JSON summary, or (``--full``) all of it.
``polars-rap export TASK -o OUT [--config FILE] [--rows N]``
    A bundled task's table (e.g. ``acs-income-CA``) and a config file with its public domain.
``polars-rap evaluate REAL SYNTHETIC -o report.html [--config spec.toml] [--test TEST]
[--model DIR] [--seed S] [--backend B] [--overwrite]``
    A static HTML quality report of SYNTHETIC (a table or a saved model) against REAL:
    per-column distances and plots, the change in association of every pair of columns, the
    workload errors (with labels) and ML utility (with ``--test``), and the privacy report of
    ``--model``. It reads the real rows, so it is not private. The domain and labels come from
    the config, else from the model. It prints the worst columns and pair, and a hint for a
    numeric column whose real values suggest declaring ``integer = true`` (all whole) or
    ``scale = "log"`` (strongly right-skewed; :mod:`polars_rap.quality.shape`).
``polars-rap demo [--report demo-report.html]``
    Synthesize the bundled ACS income table (California), evaluate the result and write its
    quality report.

Every command takes ``--quiet`` (no progress bar, no info logs) and ``--debug`` (tracebacks).

Config file (TOML)
------------------
``--config`` names a TOML file of labels, ``[privacy]``, ``[domain.NAME]`` tables,
``[options]`` and ``[strategy]``: see :mod:`polars_rap.cli.config`, which reads it (and writes
the one ``export`` gives).

Exit status
-----------
0
    Success.
1
    Unexpected internal error; the traceback is printed with ``--debug`` or
    ``POLARS_RAP_DEBUG=1``.
2
    Usage, configuration or parameter error (a :class:`~polars_rap.errors.ParameterError`):
    bad flags, bad TOML, an unknown option or a bad option value, bad epsilon/delta, a bad
    domain declaration (bounds with lower >= upper, a column left without a domain, a label
    that is not a column), an output that exists (without ``--overwrite``). Fix the command
    or the config; no data was the cause.
3
    Data error (a :class:`~polars_rap.errors.DataError`, or a file that cannot be read): a
    missing or unreadable input file or model, data that do not fit the declared domain (a
    value outside its categories, an undeclared null, a column of the wrong type or missing),
    an input without rows or with too few for the privacy settings, an output that cannot be
    written. Other ``ValueError``/``TypeError`` (e.g. from a file reader) count here too.
4
    Privacy budget error: a charge would exceed the budget; nothing was released.
130
    Interrupted.

Errors are written to stderr as one line, ``polars-rap: error: ...``, followed, when the fix
is a config entry, by the ``[domain.NAME]`` lines that make it (indented); warnings as
``polars-rap: warning: ...``.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from polars_rap.cli.hints import toml_hints
from polars_rap.cli.parser import build_parser
from polars_rap.cli.config import Config, ConfigError, config_text, read_config
from polars_rap.errors import DataError, ParameterError

__all__ = ["main"]

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_DATA, EXIT_BUDGET, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130

_FRAME_WRITERS = {".parquet": "write_parquet", ".csv": "write_csv", ".arrow": "write_ipc",
                  ".ipc": "write_ipc", ".feather": "write_ipc"}


class _UsageError(Exception):
    """A bad flag, config file or output path: exit status 2, before any budget is spent."""


# ---------------------------------------------------------------- config
def _read_config(path: str | None) -> Config:
    """The config file at ``path`` (none: an empty config); a bad one is a usage error."""
    try:
        return read_config(path)
    except ConfigError as error:
        raise _UsageError(str(error)) from error


def _privacy_parameters(args: argparse.Namespace, config: Config) -> tuple[float, float]:
    """(epsilon, delta) from the flags, else the config's [privacy] table; checked."""
    epsilon = args.epsilon if args.epsilon is not None else config.privacy.get("epsilon")
    delta = args.delta if args.delta is not None else config.privacy.get("delta")
    for name, value in (("epsilon", epsilon), ("delta", delta)):
        if value is None:
            msg = f"{name} is required: pass --{name} or set {name} in the config's [privacy] table"
            raise _UsageError(msg)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            msg = f"{name} must be a finite number. Got {value!r}"
            raise _UsageError(msg)
    if epsilon <= 0:
        msg = f"epsilon must be > 0. Got {epsilon!r}"
        raise _UsageError(msg)
    if not 0 < delta < 1:
        msg = f"delta must be in (0, 1), e.g. 1e-9 or 1/n^2 for n rows. Got {delta!r}"
        raise _UsageError(msg)
    return float(epsilon), float(delta)


def _check_backend(options: dict[str, Any]) -> None:
    """A named backend that cannot run here is a usage error, found before any work."""
    from polars_rap import kernels

    if "backend" in options:
        try:
            kernels.resolve_backend(options["backend"])
        except (ValueError, RuntimeError) as error:
            raise _UsageError(str(error)) from error


# ---------------------------------------------------------------- files
def _check_output(path: Path, overwrite: bool, suffixes: Sequence[str] | None = tuple(_FRAME_WRITERS)) -> None:
    """Raise a usage error unless ``path`` can be written (checked before spending budget)."""
    if suffixes is not None and path.suffix.lower() not in suffixes:
        msg = f"cannot write {str(path)!r}: the output must end in one of {list(suffixes)}"
        raise _UsageError(msg)
    if not path.parent.is_dir():
        msg = f"cannot write {str(path)!r}: the directory {str(path.parent)!r} does not exist; create it first"
        raise _UsageError(msg)
    if path.is_dir():
        msg = f"cannot write {str(path)!r}: it is a directory"
        raise _UsageError(msg)
    if path.exists() and not overwrite:
        msg = f"{str(path)!r} exists; pass --overwrite to replace it"
        raise _UsageError(msg)


def _usage_error(error: FileExistsError) -> _UsageError:
    """A library's refusal to overwrite, its fix said as the command line's flag."""
    return _UsageError(str(error).replace("overwrite=True (--overwrite)", "--overwrite"))


def _check_model_target(path: Path, overwrite: bool) -> None:
    from polars_rap.pipeline.model import _check_target

    try:
        _check_target(path, overwrite)
    except FileExistsError as error:
        raise _usage_error(error) from error


def _write_frame(frame, path: Path) -> None:
    getattr(frame, _FRAME_WRITERS[path.suffix.lower()])(path)


def _note(args: argparse.Namespace, text: str) -> None:
    """An info line: stdout, or stderr when stdout is reserved for JSON; none when quiet."""
    if not args.quiet:
        print(text, file=sys.stderr if getattr(args, "json", False) else sys.stdout)


# ---------------------------------------------------------------- commands
def _synthesize(args: argparse.Namespace) -> int:
    from polars_rap.pipeline.synthesis import synthesize
    from polars_rap.io.source import scan_file

    config = _read_config(args.config)
    epsilon, delta = _privacy_parameters(args, config)
    options = dict(config.options)
    if config.strategy is not None:
        options["strategy"] = config.strategy
    if config.constraints:
        options["constraints"] = config.constraints
    if args.rows is not None:
        options["rows"] = args.rows
    if args.seed is not None:
        options["seed"] = args.seed
    if args.engine is not None:
        options["engine"] = args.engine
    public = args.public if args.public is not None else config.public
    if public is not None:
        options["public"] = public
    _check_backend(options)
    if options.get("engine") == "ray":
        _require_extra("ray", "Ray", "--engine ray", "ray")
    output = Path(args.output)
    if args.block_rows is None:
        _check_output(output, args.overwrite)
    else:  # a folder of parts, written by synthesize itself (from Ray tasks on --engine ray)
        options.update(output=args.output, output_block_rows=args.block_rows)
        _clear_parts(args.output, args.overwrite)
    if args.model is not None:
        _check_model_target(Path(args.model), args.overwrite)
    if args.report_json is not None:
        _check_output(Path(args.report_json), args.overwrite, suffixes=None)

    started = time.perf_counter()
    # A lazy scan typed by the declared domain: a CSV's column types never come from its rows.
    # Ray reads Parquet paths and URIs itself, on the cluster.
    data = args.input if options.get("engine") == "ray" else scan_file(args.input, config.domain)
    result = synthesize(
        data, epsilon=epsilon, delta=delta, domain=config.domain, labels=config.labels,
        progress=not args.quiet and sys.stderr.isatty(), **options,
    )
    seconds = time.perf_counter() - started
    if args.model is not None:
        result.save(args.model, overwrite=args.overwrite)
    if result.files is None:
        _write_frame(result.data, output)
    if args.report_json is not None:
        Path(args.report_json).write_text(result.report.to_json(full=args.full) + "\n", encoding="utf-8")

    if args.json:
        print(result.report.to_json(full=args.full))
    else:
        print(result.report.summary())
    parts = "" if result.files is None else f" in {len(result.files)} Parquet parts"
    _note(args, f"wrote {result.report.parameters['rows']} synthetic rows{parts} to {args.output!r} in {seconds:.1f} s")
    if args.model is not None:
        _note(args, f"saved the model to {args.model!r}; more rows at no privacy cost: "
                    f"polars-rap sample {args.model} -n ROWS -o more.parquet")
    if args.report_json is not None:
        _note(args, f"wrote the report to {args.report_json!r}")
    return EXIT_OK


def _clear_parts(folder: str, overwrite: bool) -> None:
    """Refuse (a usage error) a parts folder that is a file, holds other files, or holds an
    earlier write's parts without ``--overwrite``; with it, delete those parts first."""
    from polars_rap.io.blocks import clear_folder

    try:
        clear_folder(folder, overwrite)
    except FileExistsError as error:
        raise _usage_error(error) from error


def _sample(args: argparse.Namespace) -> int:
    from polars_rap.pipeline.model import load

    if args.engine == "ray" or args.block_rows is not None:
        if args.where is not None:
            msg = "--where samples into one file: drop --engine ray and --block-rows, or drop --where"
            raise _UsageError(msg)
        return _sample_partitioned(args)
    output = Path(args.output)
    _check_output(output, args.overwrite)
    model = load(args.model)
    frame = model.sample(args.rows, seed=args.seed, where=args.where)
    _write_frame(frame, output)
    _note(args, f"wrote {frame.height} rows to {str(output)!r} (sampled from the saved model: no privacy cost)")
    return EXIT_OK


def _sample_partitioned(args: argparse.Namespace) -> int:
    from polars_rap.io.blocks import DEFAULT_BLOCK_ROWS, write_parquet
    from polars_rap.pipeline.model import load

    if args.engine == "ray":
        _require_extra("ray", "Ray", "--engine ray", "ray")
    model = load(args.model)
    block_rows = DEFAULT_BLOCK_ROWS if args.block_rows is None else args.block_rows
    try:
        files = write_parquet(model, args.output, args.rows, seed=args.seed, block_rows=block_rows,
                              engine=args.engine, overwrite=args.overwrite)
    except FileExistsError as error:
        raise _usage_error(error) from error
    _note(args, f"wrote {args.rows} rows in {len(files)} Parquet parts to {args.output!r} "
                "(sampled from the saved model: no privacy cost)")
    return EXIT_OK


def _require_extra(module: str, name: str, feature: str, extra: str) -> None:
    """Refuse, before any data is read, a ``feature`` whose optional ``module`` (``name`` in
    the message) is missing, naming the extra that installs it."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        msg = f"{feature} needs {name}: pip install 'polars-rap[{extra}]'"
        raise _UsageError(msg)


def _report(args: argparse.Namespace) -> int:
    from polars_rap.pipeline.model import load

    model = load(args.model)
    if args.json:
        print(model.report.to_json(full=args.full))
        return EXIT_OK
    print(model.report.summary())
    names = model.domain.names
    print(f"model: {model.relaxed.shape[0]} relaxed rows, {len(names)} columns "
          f"({', '.join(names[:8])}{', ...' if len(names) > 8 else ''}), "
          f"written by polars-rap {model.library_version}")
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    from polars_rap.io import datasets

    output = Path(args.output)
    _check_output(output, args.overwrite)
    if args.config is not None:
        _check_output(Path(args.config), args.overwrite, suffixes=(".toml",))
    task = datasets.load_task(args.task)
    frame = task.frame
    if args.rows is not None and args.rows < frame.height:
        frame = frame.sample(args.rows, seed=args.seed)
    _write_frame(frame, output)
    _note(args, f"wrote {frame.height} rows of task {task.name!r} to {str(output)!r}")
    if args.config is not None:
        Path(args.config).write_text(config_text(task), encoding="utf-8")
        _note(args, f"wrote its domain and labels to {args.config!r} (use it with --config)")
    return EXIT_OK


def _init(args: argparse.Namespace) -> int:
    from polars_rap.cli.template import write_template

    output = Path(args.output)
    _check_output(output, args.overwrite, suffixes=(".toml",))
    todo = write_template(args.input, output)
    _note(args, f"wrote a config template for {args.input!r} to {str(output)!r}, from its schema "
                f"alone; fill in the TODOs of {len(todo)} columns with public bounds and "
                f"categories, choose the labels, then: polars-rap synthesize {args.input} "
                f"-o synthetic.parquet --config {output} --epsilon E --delta D")
    return EXIT_OK


def _evaluate(args: argparse.Namespace) -> int:
    import polars as pl

    from polars_rap.pipeline.model import load
    from polars_rap.quality.ml_utility import ML_MODELS, ML_ROWS
    from polars_rap.quality.report import quality_report

    config = _read_config(args.config)
    output = Path(args.output)
    _check_output(output, args.overwrite, suffixes=(".html", ".htm"))
    _require_extra("matplotlib", "matplotlib", "the quality report", "report")
    _check_backend({"backend": args.backend})
    domain = config.domain
    if domain is None and args.model is None and not Path(args.synthetic).is_dir():
        msg = ("evaluate needs the public domain: pass --config spec.toml with its [domain] tables "
               "(polars-rap export writes one), or a saved model (--model DIR or as SYNTHETIC)")
        raise _UsageError(msg)
    if domain is None and args.model is not None:
        domain = load(args.model).domain
    if args.test is not None and args.config is not None and not config.labels:
        msg = f"--test is for the ML utility, which needs labels: add labels = [...] to {args.config!r}"
        raise _UsageError(msg)
    started = time.perf_counter()
    report = quality_report(args.real, args.synthetic, domain=domain, labels=config.labels or None,
                            test=args.test, model=args.model, seed=args.seed, backend=args.backend,
                            ml_rows=ML_ROWS if args.ml_rows is None else args.ml_rows,
                            ml_models=ML_MODELS if args.ml_models is None else args.ml_models,
                            drop=config.options.get("drop", ()),  # the columns synthesize left out
                            constraints=config.constraints)
    report.to_html(output)
    worst = report.summary().head(3)
    print("worst columns: " + ", ".join(f"{row['column']} ({row['metric']} {row['distance']:.3f})"
                                        for row in worst.iter_rows(named=True)))
    if report.pairs.height:
        row = report.pairs.row(0, named=True)
        print(f"worst pair: {row['column_a']} x {row['column_b']} ({row['measure']} "
              f"{row['real']:.3f} real, {row['synthetic']:.3f} synthetic)")
    for hint in report.hints:  # what the real values suggest declaring (quality.shape)
        print(f"hint: {hint.text(hint.config_fix)}")
    broken = [] if report.constraints is None else report.constraints.filter(pl.col("real_broken") > 0).rows(named=True)
    for rule in broken:
        print(f"constraint {rule['name']!r} ({rule['rule']}) is broken by {rule['real_broken']:,} real rows "
              f"({rule['real_broken_share']:.2%}); the synthetic rows keep it, so they differ from the real ones there")
    _note(args, f"wrote the quality report to {str(output)!r} in {time.perf_counter() - started:.1f} s; "
                "it reads the real rows, so it is NOT private: share it only with people allowed to see them")
    return EXIT_OK


def _demo(args: argparse.Namespace) -> int:
    import importlib.util

    import polars as pl

    from polars_rap.io import datasets
    from polars_rap.pipeline.synthesis import synthesize
    from polars_rap.quality.report import quality_report

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
    report = quality_report(train, result, test=test, seed=0)
    for row in report.workload.iter_rows(named=True):
        print(f"  {row['query_class']}: mean error {row['mean_error']:.4f}, "
              f"max error {row['max_error']:.4f} over {row['queries']} queries")
    label = task.labels[0]
    print("  macro F1 on held-out rows, trained on synthetic vs on real rows:")
    scores = report.ml_utility.filter(pl.col("label") == label)
    for model in scores.get_column("model").unique(maintain_order=True):
        f1 = dict(scores.filter(pl.col("model") == model).select("trained_on", "macro_f1").iter_rows())
        print(f"    {model.replace('_', ' '):<18} {f1['synthetic']:.3f} vs {f1['real']:.3f}")
    if importlib.util.find_spec("matplotlib") is None:
        print("\nno quality report written: it needs matplotlib (pip install 'polars-rap[report]')")
        return EXIT_OK
    path = report.to_html(args.report)
    print(f"\nwrote the quality report (plots per column and pair; not private) to "
          f"{str(path.resolve())!r}: open it in a browser")
    return EXIT_OK


# ---------------------------------------------------------------- errors
def _exit_status(error: BaseException) -> int:
    """The exit status of ``error`` (see the module docstring): by its class, never its text."""
    from polars_rap.privacy.ledger import BudgetExceededError

    if isinstance(error, (_UsageError, ParameterError)):
        return EXIT_USAGE
    if isinstance(error, BudgetExceededError):
        return EXIT_BUDGET
    if isinstance(error, (DataError, OSError, ValueError, TypeError)):
        return EXIT_DATA
    return EXIT_INTERNAL


def _fail(error: BaseException, debug: bool) -> int:
    status = _exit_status(error)
    if debug:
        traceback.print_exception(error, file=sys.stderr)
    text, fix = toml_hints(" ".join(str(error).split()) or type(error).__name__)
    if status == EXIT_INTERNAL:
        hint = "" if debug else "; rerun with --debug (or POLARS_RAP_DEBUG=1) for the traceback"
        text = f"internal error ({type(error).__name__}: {text}){hint}"
    print(f"polars-rap: error: {text}", file=sys.stderr)
    for line in fix:  # the config lines that fix it, indented under the message
        print(f"    {line}".rstrip(), file=sys.stderr)
    return status


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A library warning as one line on stderr, its fixes in config terms (not a source line)."""
    text, fix = toml_hints(" ".join(str(message).split()))
    print("\n".join([f"polars-rap: warning: {text}", *(f"    {line}".rstrip() for line in fix)]), file=sys.stderr)


def _configure_logging(quiet: bool) -> int:
    """Info logs of polars_rap on stderr unless quiet; returns the package logger's old level."""
    logging.basicConfig(level=logging.WARNING, format="polars-rap: %(levelname)s: %(message)s")
    package_logger = logging.getLogger("polars_rap")
    previous = package_logger.level
    package_logger.setLevel(logging.WARNING if quiet else logging.INFO)
    return previous


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # --help (0), or a usage error argparse already printed (2)
        return stop.code if isinstance(stop.code, int) else (EXIT_OK if stop.code is None else EXIT_USAGE)
    debug = args.debug or os.environ.get("POLARS_RAP_DEBUG", "") not in ("", "0")
    previous_level = _configure_logging(args.quiet)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("polars-rap: error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:  # noqa: BLE001  (every error becomes one line and a status)
        return _fail(error, debug)
    finally:
        logging.getLogger("polars_rap").setLevel(previous_level)


_COMMANDS = {"synthesize": _synthesize, "init": _init, "sample": _sample, "report": _report, "export": _export,
             "demo": _demo, "evaluate": _evaluate}
