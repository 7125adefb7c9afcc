"""The benchmark harness: one command per suite (benchmarks.md, issue #4).

    python -m bench.run --suite quick                  # CA, 3,000 rows, ε=1, seed 0: minutes
    python -m bench.run --suite headline               # CA + Adult, ε 0.25/1/5, seeds 0-2
    python -m bench.run --suite generalization         # CPS 1988 + NIST excerpt (tuned on neither), ε 0.25/1
    python -m bench.run --plots-only                   # plots + table from the results CSV

Each run (dataset × mechanism × parameters × ε × seed) executes in a fresh subprocess
(``python -m bench.run --one <json>``) so that its peak RSS is its own, and appends one tidy
row to the results CSV at once. A rerun skips the runs already there with status ok or
timeout (``--no-resume`` starts the file over, keeping the old one as ``<out>.bak``).

Datasets: the task's public domain from its committed TOML (:mod:`polars_rap.io.datasets`), an
80/20 split with ``train_test_split(seed=0)``, δ = 1/n_train². Every mechanism is scored on
the same benchmark workload (``workload_errors(train, synthetic, domain, seed=0)``), by the
numeric metric (``numeric_summary``: the mean over numeric columns of the Kolmogorov–Smirnov
distance and of the decile error, as a fraction of the declared range; issue #14), by the
relations between columns (``relation_summary``: Pearson's and Spearman's |Δr| over numeric
pairs, the correlation ratio kept over numeric × categorical pairs and the worst per-category
median; issues #77, #78) and by the macro F1 on the test rows of logistic regression, gradient
boosting and a random forest (``macro_f1``, ``gb_macro_f1``, ``rf_macro_f1``; issue #74), each
beside the same model trained on real rows (``real_*``, computed once per run).
``--domain-updates`` (ablations) changes the declared domain that polars-rap's own
mechanisms synthesize with, per dataset (e.g. a column's ``scale`` or ``atoms``); the scores
always use the task's committed domain.

Binned mechanisms (rap-binned, AIM, MST) try every bins value of the suite (10/20/30/50)
at the suite's tuning point (ε = 1, seed 0) and then run, at every other ε and seed, only
the bins value that gave the lowest mean of the CM, MM and LT mean errors there (a peer's
fixed-sampler row follows its shipped row's choice: it is the same fit). The choice looks at
the training rows' errors, as the paper's "best of 10/20/30/50" does; it is a benchmark
convenience, not a private procedure. Runs waiting for that choice are planned as soon as
the tuning point is complete.

Peers (AIM, MST and their fixed-sampler rows from smartnoise-synth, as shipped: calibrated to
add/remove neighbours; ``aim-replace-one``, smartnoise's AIM at the budget that makes it
ρ-zCDP under polars-rap's replace-one neighbours, which takes ``aim``'s bins choice; ``aim-opendp``
and its fixed-sampler row from OpenDP, issue #20; ``dpmm-aim``, ``dpmm-mst`` and ``dpmm-privbayes``
from dpmm 0.1.9 with PrivTree binning, at polars-rap's guarantee, issue #74) come from ``bench/peers.py``; each fit is
capped at ``--peer-time-cap`` seconds (default 1800, 30 minutes: AIM took 22 minutes on the
CA task at ε = 1 with 10 bins here), past which the row reads ``timeout``. When that module
or its virtual environment is missing the row reads ``error`` with the reason.

Outputs: ``bench/results/<suite>.csv``, ``<suite>.md`` (the headline table) beside it, and
PNG plots in ``bench/results/plots/`` (``plots/quick/`` for the quick suite).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from bench.harness import (  # noqa: F401  (the harness's names, as bench.run has always offered them)
    BENCH_DIR, COLUMNS, DONE_STATUSES, ERROR_CLASSES, FLOAT_COLUMNS, NUMERIC_METRICS, RELATION_METRICS, REPO_ROOT,
    RESULTS, TREE_MODELS,
    append_row, canonical_json, completed_keys, execute, machine, merged, read_results, run_key, spec_key,
    table_markdown, utc_now, with_bins, workload_scores, write_results,
)
from bench.host import SHARED_DATA, git_commit, own_peak_rss_mib

ALL_MECHANISMS = ("rap++", "rap++paper", "rap++mm", "rap-binned", "independent", "rap++fixed-sigma",
                  "aim", "mst", "aim-fixed-sampler", "mst-fixed-sampler",
                  "aim-replace-one", "aim-replace-one-fixed-sampler",
                  "aim-opendp", "aim-opendp-fixed-sampler",
                  "dpmm-aim", "dpmm-mst", "dpmm-privbayes")
SMARTNOISE_PEERS = ("aim", "mst", "aim-fixed-sampler", "mst-fixed-sampler",
                    "aim-replace-one", "aim-replace-one-fixed-sampler")
DPMM_PEERS = ("dpmm-aim", "dpmm-mst", "dpmm-privbayes")
"""dpmm 0.1.9 (issue #74): raw columns, PrivTree binning inside the budget (its ``bins`` is
PrivTree's most bins), ρ-zCDP under replace-one (bench/peers_dpmm.py)."""
PEERS = (*SMARTNOISE_PEERS, "aim-opendp", "aim-opendp-fixed-sampler", *DPMM_PEERS)
AIM_PEERS = ("aim-replace-one", "aim-replace-one-fixed-sampler", "aim-opendp", "aim-opendp-fixed-sampler",
             "dpmm-aim")
"""Issue #20's "AIM": the better of its samplers and of the AIM implementations with rows, at
polars-rap's privacy guarantee (ρ-zCDP under replace-one neighbours). smartnoise's ``aim`` as
shipped calibrates to add/remove neighbours and so spends 2.2 ρ in those terms
(``bench/peers_worker.py``, ``aim_replace_one_rho``); it is compared in ``CM_vs_AIM_add_remove``."""
ADD_REMOVE_AIM = ("aim", "aim-fixed-sampler")
MM_PEERS = tuple(p for p in PEERS if p not in ADD_REMOVE_AIM)
"""The peers ``MM_vs_best_peer`` compares with: AIM at polars-rap's guarantee, and MST as shipped
(add/remove, so it spends more than ρ in polars-rap's terms: a stricter comparison)."""
BINNED = ("rap-binned", *PEERS)
SAME_FIT_AS = {"aim-fixed-sampler": "aim", "mst-fixed-sampler": "mst",
               "aim-replace-one-fixed-sampler": "aim-replace-one",
               "aim-opendp-fixed-sampler": "aim-opendp"}
"""Companion rows come out of their parent's fit, so they share its bins choice."""
BINS_FROM = {"aim-replace-one": "aim"}
"""Mechanisms that run only the bins value chosen for another (the same algorithm at another
budget), with no tuning fits of their own."""
PEER_TIME_CAP_S = 1800.0
DOMAIN_UPDATE_MECHANISMS = ("rap++", "rap++paper", "rap++mm", "rap++fixed-sigma")
"""The mechanisms that synthesize with ``--domain-updates`` (polars-rap on numeric columns)."""

SUITES: dict[str, dict[str, Any]] = {
    "headline": {
        "datasets": ("acs-income-CA", "adult"),
        "epsilons": (0.25, 1.0, 5.0),
        "seeds": (0, 1, 2),
        "tuning": (1.0, 0),  # (ε, seed) where binned mechanisms try every bins value
        "bins": (10, 20, 30, 50),
        "peer_bins": (10, 20, 30, 50),
        "train_rows": None,
        "synthesize": {},  # synthesize's defaults
        "strategy": {},  # the strategy's settings (polars_rap's mapping form), over each mechanism's
        "rounds_mm": 10,
        "independent_bins": 20,
        "eval": {"n_mixed_marginals": 20_000, "n_linear_thresholds": 200_000},
    },
    "generalization": {  # tables none of the defaults were tuned on (benchmarks.md's other datasets)
        "datasets": ("cps1988", "sdnist-national"),
        "epsilons": (0.25, 1.0),
        "seeds": (0, 1, 2),
        "tuning": (1.0, 0),
        "bins": (10, 20, 30, 50),
        "peer_bins": (10, 20, 30, 50),
        "train_rows": None,
        "synthesize": {},
        "strategy": {},
        "rounds_mm": 10,
        "independent_bins": 20,
        "eval": {"n_mixed_marginals": 20_000, "n_linear_thresholds": 200_000},
    },
    "quick": {
        "datasets": ("acs-income-CA",),
        "epsilons": (1.0,),
        "seeds": (0,),
        "tuning": (1.0, 0),
        "bins": (10, 20, 30, 50),
        "peer_bins": (20,),
        "train_rows": 3_000,
        "synthesize": {},
        "strategy": {"relaxed_rows": 200, "rounds": {"LT": 5}, "workload": {"n_linear_thresholds": 2_000},
                     "projection": {"max_steps": 20}},
        "rounds_mm": 3,
        "independent_bins": 20,
        "eval": {"n_mixed_marginals": 2_000, "n_linear_thresholds": 20_000},
    },
}

# ============================================================================================
# Planning and resuming
# ============================================================================================


def mechanism_parameters(suite: dict[str, Any], mechanism: str, bins: int | None,
                         peer_time_cap_s: float) -> dict[str, Any]:
    """The planned parameters of one mechanism in a suite (the ``parameters`` column)."""
    parameters: dict[str, Any] = {"train_rows": suite["train_rows"], "eval": dict(suite["eval"])}
    if mechanism in PEERS:
        parameters.update(bins=bins, time_cap_s=peer_time_cap_s)
        return parameters
    if mechanism == "independent":
        parameters["bins"] = suite["independent_bins"]
        return parameters
    parameters.update(synthesize=dict(suite["synthesize"]), strategy=merged({}, suite["strategy"]))
    if suite.get("domain_updates") and mechanism in DOMAIN_UPDATE_MECHANISMS:
        parameters["domain_updates"] = json.loads(json.dumps(suite["domain_updates"]))  # a deep copy
    if mechanism == "rap++mm":
        parameters["rounds_mm"] = suite["rounds_mm"]
    if mechanism == "rap-binned":
        parameters["bins"] = bins
    return parameters


def _score() -> pl.Expr:
    """What a bins choice minimises: the mean of the CM, MM and LT mean errors of a row."""
    return pl.mean_horizontal(*(pl.col(f"{c}_mean_error") for c in ERROR_CLASSES))


def bins_values(suite: dict[str, Any], mechanism: str) -> tuple:
    """The bins values a suite tries for ``mechanism``: ``(None,)`` when it is not binned."""
    if mechanism in PEERS:
        return tuple(suite["peer_bins"])
    if mechanism in BINNED:
        return tuple(suite["bins"])
    return (None,)


def plan_runs(suite: dict[str, Any], datasets: Sequence[str], mechanisms: Sequence[str],
              epsilons: Sequence[float], seeds: Sequence[int], peer_time_cap_s: float,
              chosen_bins: dict[tuple[str, str], int] | None = None) -> list[dict]:
    """Every run of a suite that can be planned now, as ``--one`` specs, in execution order.

    Per dataset, the suite's tuning point (ε, seed) comes first, then seed by seed every ε
    (so that a suite stopped early still has whole curves); a mechanism with several
    bins values runs all of them there (even when that point is outside ``epsilons`` ×
    ``seeds``) and, elsewhere, only ``chosen_bins[(dataset, mechanism)]`` (a companion row
    uses its parent's entry, see ``SAME_FIT_AS``); without an entry those runs are left out
    until the tuning point is complete (:func:`choose_bins`).
    """
    chosen_bins = chosen_bins or {}
    tuning = (float(suite["tuning"][0]), int(suite["tuning"][1]))
    grid = [(float(e), int(s)) for s in seeds for e in epsilons]  # a partial run covers every ε
    runs = []
    for dataset in datasets:
        for epsilon, seed in [tuning, *(point for point in grid if point != tuning)]:
            in_grid = (epsilon, seed) in grid
            for mechanism in mechanisms:
                values = bins_values(suite, mechanism)
                tuned = len(values) > 1
                fit = SAME_FIT_AS.get(mechanism, mechanism)  # the mechanism whose fit gives its rows
                borrowed = fit in BINS_FROM
                if not (in_grid or (tuned and not borrowed)):
                    continue
                if tuned and (borrowed or (epsilon, seed) != tuning):
                    choice = chosen_bins.get((dataset, fit))
                    if choice is None:
                        continue
                    values = (choice,)
                for bins in values:
                    runs.append({
                        "dataset": dataset, "mechanism": mechanism, "epsilon": epsilon, "seed": seed,
                        "parameters": mechanism_parameters(suite, mechanism, bins, peer_time_cap_s),
                    })
    return runs


def choose_bins(results: pl.DataFrame, required: dict[str, Sequence[int]] | None = None) -> dict[tuple[str, str], int]:
    """The bins value per (dataset, mechanism) with the lowest mean, over ok rows, of the
    CM, MM and LT mean errors, compared only at the (ε, seed) points where every bins value
    has a finished (ok or timeout) row — the tuning point, in the headline suite. An error is
    retried (a resumed suite runs it again), but a value whose run failed twice where another
    value's run at the same point was ok counts as finished (and lost): the mechanism fails at
    that value (dpmm's PrivTree at 50 bins on sdnist-national), and waiting for it would leave
    the rest of the grid unplanned. Errors at a point with no ok row (a broken environment
    fails every value) do not count.

    ``required`` maps a mechanism to the bins values that must all be finished before it
    gets a choice (the planner passes the suite's); without it, the values present count.
    Ties go to fewer bins; a mechanism with no ok row at those points gets its fewest bins.
    Companion rows (``SAME_FIT_AS``) get their parent's choice when the parent has one.
    """
    frame = (with_bins(results).with_columns(_score().alias("_score"))
             .filter(pl.col("mechanism").is_in(BINNED) & pl.col("bins").is_not_null()
                     & pl.col("status").is_in((*DONE_STATUSES, "error"))))
    has_ok = (pl.col("status") == "ok").any().over("dataset", "mechanism", "epsilon", "seed")
    failed_twice = (pl.col("status") == "error").sum().over("dataset", "mechanism", "epsilon", "seed", "bins") >= 2
    frame = frame.filter(pl.col("status").is_in(DONE_STATUSES) | (has_ok & failed_twice))
    chosen: dict[tuple[str, str], int] = {}
    for (dataset, mechanism), part in frame.group_by("dataset", "mechanism", maintain_order=True):
        wanted = set(required.get(mechanism, ())) if required else set(part["bins"].unique())
        points = (part.group_by("epsilon", "seed").agg(pl.col("bins").unique())
                  .filter(pl.col("bins").list.set_intersection(list(wanted)).list.len() == len(wanted)))
        if not wanted or points.height == 0:
            continue
        at_points = part.join(points.select("epsilon", "seed"), on=["epsilon", "seed"])
        at_points = at_points.filter(pl.col("bins").is_in(list(wanted)))
        scores = (at_points.filter((pl.col("status") == "ok") & pl.col("_score").is_not_null())
                  .group_by("bins").agg(pl.col("_score").mean()).sort("_score", "bins"))
        chosen[(dataset, mechanism)] = int(scores["bins"][0] if scores.height else min(wanted))
    for mechanism, source in BINS_FROM.items():
        for dataset in {d for d, m in chosen if m == source}:
            chosen[(dataset, mechanism)] = chosen[(dataset, source)]
    for (dataset, mechanism) in list(chosen):
        parent = SAME_FIT_AS.get(mechanism)
        if parent and (dataset, parent) in chosen:
            chosen[(dataset, mechanism)] = chosen[(dataset, parent)]
    return chosen


# ============================================================================================
# One run (in a child process)
# ============================================================================================


def prepare_dataset(name: str, train_rows: int | None):
    """(train, test, task): the task's split 80/20 with seed 0; ``train_rows`` keeps a
    fixed-seed sample of the training rows (quick suite)."""
    from polars_rap.io import datasets

    data_dir = None  # bundled tasks read their bundled copy; the others $POLARS_RAP_DATA_DIR, else ../shared/data
    if name in datasets.TASKS and not datasets.TASKS[name].bundled and not os.environ.get(datasets.DATA_DIR_ENV):
        data_dir = SHARED_DATA
    task = datasets.load_task(name, data_dir=data_dir)
    train, test = datasets.train_test_split(task.frame, test_fraction=0.2, seed=0)
    if train_rows is not None and train_rows < train.height:
        train = train.sample(train_rows, seed=0)
    return train, test, task


def updated_domain(task_domain: dict[str, Any], updates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``task_domain`` with each numeric column named in ``updates`` (column -> keys such as
    ``{"scale": "log", "atoms": [0]}``) declared in the table form with those keys set.

    >>> updated_domain({"gain": (0, 99999), "sex": ["F", "M"]}, {"gain": {"scale": "log"}})
    {'gain': {'bounds': (0, 99999), 'scale': 'log'}, 'sex': ['F', 'M']}
    """
    out = dict(task_domain)
    for column, keys in updates.items():
        declared = task_domain.get(column)
        if isinstance(declared, tuple):
            declared = {"bounds": declared}
        if not isinstance(declared, dict) or "bounds" not in declared:
            msg = f"domain update {keys!r} names {column!r}, which is not a numeric column of the task"
            raise ValueError(msg)
        out[column] = {**declared, **keys}
    return out


def _warm_up(train, task, mechanism: str) -> None:
    """Compile (or load from Numba's cache) the kernels outside the timed region."""
    if mechanism in PEERS or mechanism == "independent":
        return
    import polars_rap

    polars_rap.synthesize(train.head(1_000), epsilon=1.0, delta=1e-6, domain=task.domain,
                          labels=task.labels, seed=0, progress=False,
                          strategy=polars_rap.PlannedStrategy(relaxed_rows=20, rounds={"CM": 1, "LT": 1},
                                                              workload={"n_linear_thresholds": 20}))


def run_one(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Run one mechanism once in this process and return its results rows: one, or more when
    the same fit also gave another mechanism's data (a peer's fixed-sampler row)."""
    import polars_rap
    from polars_rap.quality import evaluation
    from polars_rap.quality.relations import relation_summary
    from polars_rap.schema.domain import Domain

    from bench.mechanisms import MECHANISMS
    from bench.sdmetrics_eval import sdmetrics_scores

    parameters = spec["parameters"]
    row: dict[str, Any] = {c: None for c in COLUMNS}
    row.update(dataset=spec["dataset"], mechanism=spec["mechanism"], parameters=canonical_json(parameters),
               epsilon=float(spec["epsilon"]), seed=int(spec["seed"]), machine=machine(),
               version=polars_rap.__version__, commit=git_commit(), date=utc_now(),
               load_1m_at_start=os.getloadavg()[0])  # other work on the machine, for honest timings
    train, test, task = prepare_dataset(spec["dataset"], parameters.get("train_rows"))
    delta = 1.0 / train.height**2
    row.update(delta=delta, n_train=train.height)
    label = task.labels[0]
    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    real = evaluation.ml_utility_for_domain(train, test, label, domain)
    row.update(real_macro_f1=real["macro_f1"], real_accuracy=real["accuracy"])
    for prefix, model in TREE_MODELS.items():  # the real-row references, once per run
        real_tree = evaluation.ml_utility_for_domain(train, test, label, domain, model=model)
        row[f"real_{prefix}_macro_f1"] = real_tree["macro_f1"]
    synthesis_domain = updated_domain(task.domain, parameters.get("domain_updates", {}).get(spec["dataset"], {}))
    try:
        _warm_up(train, task, spec["mechanism"])
        run = MECHANISMS[spec["mechanism"]](train, synthesis_domain, task.labels, float(spec["epsilon"]),
                                            delta, int(spec["seed"]), dict(parameters))
    except Exception as error:  # a failed fit is a row, not a gap
        import traceback

        row.update(status="error", message=f"{type(error).__name__}: {error} | "
                   + traceback.format_exc(limit=4).replace("\n", " | "))
        row["peak_rss_mib"] = own_peak_rss_mib()
        return [row]
    rows = []
    for mechanism, result in [(spec["mechanism"], run), *run.companions.items()]:
        item = {**row, "mechanism": mechanism}
        item.update(status=result.status, message=result.message, seconds=result.seconds,
                    details=canonical_json(result.parameters))
        if result.status == "ok" and result.data is not None:
            item.update(workload_scores(train, result.data, domain, **parameters.get("eval", {})))
            item.update(evaluation.numeric_summary(train, result.data, domain))  # every mechanism
            item.update(relation_summary(train, result.data, domain))
            item.update(sdmetrics_scores(train, result.data, domain))  # nulls without the extra
            if result.relaxed is not None:  # what the projection reached, before decoding
                relaxed_errors = evaluation.relaxed_workload_errors(
                    train, result.relaxed, domain, seed=0, **parameters.get("eval", {}))
                item["details"] = canonical_json({**result.parameters, "relaxed_mean_error": {
                    r["query_class"]: r["mean_error"] for r in relaxed_errors.iter_rows(named=True)}})
            utility = evaluation.ml_utility_for_domain(result.data, test, label, domain)
            item.update(macro_f1=utility["macro_f1"], accuracy=utility["accuracy"])
            for prefix, model in TREE_MODELS.items():
                tree = evaluation.ml_utility_for_domain(result.data, test, label, domain, model=model)
                item[f"{prefix}_macro_f1"] = tree["macro_f1"]
            if utility.get("note"):
                item["message"] = "; ".join(filter(None, [item["message"], utility["note"]]))
        own_peak = own_peak_rss_mib()  # VmHWM: not the parent's high-water mark ru_maxrss inherits
        item["peak_rss_mib"] = result.peak_rss_mib if result.peak_rss_mib is not None else own_peak
        rows.append(item)
    return rows


# ============================================================================================
# The suite loop (parent)
# ============================================================================================


def run_suite(plan: Callable[[dict[tuple[str, str], int]], list[dict]], out: Path, resume: bool,
              quiet: bool, required_bins: dict[str, Sequence[int]]) -> list[dict]:
    """Execute, one by one, the planned runs not yet done, appending each row as it comes;
    returns the new rows. ``plan(chosen_bins)`` is asked again after every run, so that the
    runs waiting on a bins choice join as soon as their tuning point is complete. A run that
    errors is not retried in the same invocation (a rerun retries it)."""
    from tqdm.auto import tqdm

    if not resume and out.is_file():
        shutil.move(out, out.with_suffix(out.suffix + ".bak"))
    attempted: set[tuple] = set()
    rows: list[dict] = []
    bar = None
    while True:
        results = read_results(out)
        skip = completed_keys(results) | attempted
        chosen = choose_bins(results, required_bins)
        runs = plan(chosen)
        todo = [(spec, key) for spec in runs if (key := spec_key(spec)) not in skip]
        total = len(plan(_any_choice(plan, chosen)))  # waiting runs count as one bins value each
        waiting = total - len(runs)  # runs that cannot be planned yet for want of a bins choice
        if bar is None:
            bar = tqdm(total=total, disable=quiet, unit="run", desc="bench", dynamic_ncols=True)
        bar.total, bar.n = total, total - len(todo) - waiting
        bar.refresh()
        if not todo:
            break
        spec, key = todo[0]
        attempted.add(key)
        bins = spec["parameters"].get("bins")
        bar.set_postfix_str(f"{spec['dataset']} {spec['mechanism']}{'' if bins is None else f' bins={bins}'} "
                            f"eps={spec['epsilon']:g} seed={spec['seed']}")
        for row in execute(spec):
            append_row(out, row)
            rows.append(row)
            if not quiet:
                bar.write(_summary_line(row))
    if waiting and not quiet:
        bar.write(f"{waiting} run(s) still wait for a bins choice: a run at the tuning point "
                  "failed; rerun to retry it")
    bar.close()
    return rows


def _any_choice(plan: Callable[[dict], list[dict]], chosen: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """``chosen`` completed with a placeholder choice (the first bins value) for every
    (dataset, mechanism) still waiting, so that the plan shows its eventual size."""
    filled = dict(chosen)
    for spec in plan({}):
        bins = spec["parameters"].get("bins")
        if bins is not None:
            filled.setdefault((spec["dataset"], SAME_FIT_AS.get(spec["mechanism"], spec["mechanism"])), bins)
    return filled


def _summary_line(row: dict[str, Any]) -> str:
    def number(key: str, spec: str) -> str:
        value = row.get(key)
        return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)

    bins = json.loads(row["parameters"]).get("bins")
    name = row["mechanism"] + ("" if bins is None else f"[{bins}]")
    text = (f"{row['dataset']:14s} {name:22s} eps={row['epsilon']:<5g} seed={row['seed']} "
            f"{row['status']:7s} {number('seconds', '7.1f')}s F1 {number('macro_f1', '.3f')} "
            f"CM {number('CM_mean_error', '.4f')} MM {number('MM_mean_error', '.4f')} "
            f"LT {number('LT_mean_error', '.4f')} KS {number('numeric_ks_mean', '.3f')} "
            f"peak {number('peak_rss_mib', '.0f')} MiB")
    if row["status"] != "ok" and row.get("message"):
        text += f"\n    {str(row['message'])[:300]}"
    return text


# ============================================================================================
# Headline table and plots (from the results CSV)
# ============================================================================================

def with_variants(results: pl.DataFrame) -> pl.DataFrame:
    """``results`` with ``bins`` (from the parameters JSON) and ``variant``, the name a plot
    or table shows; for mechanisms run over several bins, only the chosen bins per dataset
    is kept (:func:`choose_bins`: best at the points where every bins value ran), named in
    the variant."""
    frame = with_bins(results)
    chosen = choose_bins(results)
    best = pl.DataFrame({"dataset": [d for d, _ in chosen], "mechanism": [m for _, m in chosen],
                         "best_bins": list(chosen.values())},
                        schema={"dataset": pl.String, "mechanism": pl.String, "best_bins": pl.Int64})
    frame = frame.join(best, on=["dataset", "mechanism"], how="left")
    frame = frame.filter(pl.col("best_bins").is_null() | (pl.col("bins") == pl.col("best_bins")))
    variant = (pl.when(pl.col("best_bins").is_not_null())
               .then(pl.format("{} (bins={})", pl.col("mechanism"), pl.col("best_bins")))
               .otherwise(pl.col("mechanism")))
    return frame.with_columns(variant.alias("variant")).drop("best_bins")


def bins_table(results: pl.DataFrame) -> pl.DataFrame:
    """How each bins value did where every one of them ran (the tuning point): dataset,
    mechanism, bins, ε, seeds, mean CM/MM/LT error and their mean (the choice's score),
    macro F1, seconds, and ``chosen`` (the value the table and plots use)."""
    frame = with_bins(results).filter(pl.col("mechanism").is_in(BINNED) & pl.col("bins").is_not_null())
    points = (frame.filter(pl.col("status").is_in(DONE_STATUSES))
              .group_by("dataset", "mechanism", "epsilon", "seed").agg(pl.col("bins").n_unique().alias("_n")))
    most = frame.group_by("dataset", "mechanism").agg(pl.col("bins").n_unique().alias("_all"))
    points = points.join(most, on=["dataset", "mechanism"]).filter(pl.col("_n") == pl.col("_all"))
    chosen = choose_bins(results)
    ok = pl.col("status") == "ok"
    table = (frame.join(points.select("dataset", "mechanism", "epsilon", "seed"),
                        on=["dataset", "mechanism", "epsilon", "seed"])
             .group_by("dataset", "mechanism", "bins")
             .agg(pl.col("epsilon").first(), pl.col("seed").unique().sort().cast(pl.String).str.join(",").alias("seeds"),
                  *(pl.col(f"{c}_mean_error").filter(ok).mean() for c in ERROR_CLASSES),
                  pl.col("macro_f1").filter(ok).mean(), pl.col("seconds").mean(),
                  pl.format("{}/{} ok", ok.sum(), pl.len()).alias("runs"))
             .with_columns(_score().alias("score"),
                           _mechanism_order(frame).alias("_order")))
    marks = [(chosen.get((d, m)) == b) for d, m, b in table.select("dataset", "mechanism", "bins").iter_rows()]
    return (table.with_columns(pl.Series("chosen", marks, dtype=pl.Boolean))
            .sort("dataset", "_order", "bins").drop("_order")
            .select("dataset", "mechanism", "bins", "epsilon", "seeds", *(f"{c}_mean_error" for c in ERROR_CLASSES),
                    "score", "macro_f1", "seconds", "runs", "chosen"))


def _mechanism_order(frame: pl.DataFrame) -> pl.Expr:
    order = {name: index for index, name in enumerate(ALL_MECHANISMS)}
    return pl.col("mechanism").replace_strict(order, default=len(order), return_dtype=pl.Int64)


def headline_table(results: pl.DataFrame) -> pl.DataFrame:
    """Dataset × ε × mechanism: means over seeds (ok runs only) of the CM/MM/LT mean error,
    macro F1 of logistic regression and of gradient boosting (each with its real-data F1),
    SDMetrics' overall quality score, seconds and peak RSS, with how many runs were ok.

    Mechanisms run over several bins show their best bins only (see :func:`with_variants`).
    """
    frame = with_variants(results)
    ok = pl.col("status") == "ok"
    shown = (*(f"{k}_mean_error" for k in ERROR_CLASSES), *NUMERIC_METRICS, *RELATION_METRICS, "macro_f1",
             "real_macro_f1", "gb_macro_f1", "real_gb_macro_f1", "sdm_overall", "seconds", "peak_rss_mib")
    means = [pl.col(c).filter(ok).mean().alias(c) for c in shown]
    table = (
        frame.group_by("dataset", "epsilon", "variant")
        .agg(pl.col("mechanism").first(), *means, ok.sum().alias("runs_ok"), pl.len().alias("runs"),
             pl.col("status").filter(~ok).first().alias("other_status"))
        .with_columns(_mechanism_order(frame).alias("_order"))
        .sort("dataset", "epsilon", "_order", "variant")
    )
    status = pl.format("{}/{} ok", pl.col("runs_ok"), pl.col("runs"))
    status = pl.when(pl.col("other_status").is_null()).then(status).otherwise(
        pl.format("{} ({})", status, pl.col("other_status")))
    return table.select("dataset", "epsilon", pl.col("variant").alias("mechanism"), *shown, status.alias("runs"))


SPREAD_METRICS = (*(f"{k}_mean_error" for k in ERROR_CLASSES), "numeric_ks_mean", "pearson_mean_delta",
                  "eta_kept_mean", "macro_f1", "gb_macro_f1", "rf_macro_f1", "sdm_overall")
SPREAD_SEEDS = 5
"""Issue #74: a metric's seed spread is its max / min over at least this many seeds."""


def spread_table(results: pl.DataFrame) -> pl.DataFrame:
    """Dataset × ε × mechanism (variant, as :func:`headline_table`): each of
    :data:`SPREAD_METRICS`' seed spread, max / min over the ok runs' seeds (1 when every seed
    agrees; null with fewer than :data:`SPREAD_SEEDS` seeds, or a minimum of 0), and how
    many seeds that is. A spread near 1 says one seed's figure stands for the others."""
    frame = with_variants(results).filter(pl.col("status") == "ok")
    enough = pl.col("seed").n_unique() >= SPREAD_SEEDS

    def spread(column: str) -> pl.Expr:
        low, high = pl.col(column).min(), pl.col(column).max()
        return pl.when(enough & (low > 0)).then(high / low).otherwise(None).alias(column.removesuffix("_mean_error"))

    present = [c for c in SPREAD_METRICS if c in frame.columns]
    return (frame.group_by("dataset", "epsilon", "variant")
            .agg(pl.col("mechanism").first(), *(spread(c) for c in present), pl.col("seed").n_unique().alias("seeds"))
            .with_columns(_mechanism_order(frame).alias("_order"))
            .sort("dataset", "epsilon", "_order", "variant")
            .drop("_order", "mechanism").rename({"variant": "mechanism"}))


TARGETS = {
    "MM_vs_best_peer": ("MM mean error ÷ the best peer's (AIM at polars-rap's guarantee as for `CM_vs_AIM`, "
                        "MST as shipped, or dpmm's AIM, MST and PrivBayes; shipped or fixed sampler)", "<=", 0.5),
    "CM_vs_AIM": ("CM mean error ÷ AIM's at polars-rap's guarantee (the best of `aim-replace-one`, "
                  "`aim-opendp`, shipped and fixed sampler, and `dpmm-aim`, where they have rows)", "<=", 1.0),
    "F1_minus_AIM": ("macro F1 − AIM's at polars-rap's guarantee (as for `CM_vs_AIM`)", ">=", 0.0),
    "LT_vs_AIM": ("LT mean error ÷ AIM's at polars-rap's guarantee (as for `CM_vs_AIM`)", "<=", 1.0),
    "time_vs_AIM": ("seconds ÷ smartnoise AIM's seconds (the shipped fit; a fit stopped at the time cap counts at "
                    "the cap, so with AIM_timeouts > 0 this is an upper bound)", "<=", 0.2),
    "RSS_vs_AIM": ("peak RSS ÷ smartnoise AIM's (the shipped fit, as for `time_vs_AIM`: a capped fit's peak is a "
                   "lower bound of its whole fit's, so the ratio is then an upper bound)", "<=", 0.5),
    "KS_vs_AIM": ("mean Kolmogorov-Smirnov distance over numeric columns ÷ AIM's at polars-rap's guarantee "
                  "(as for `CM_vs_AIM`; issue #14)", "<=", 0.5),
}
"""Issues #4, #20 and #14's headline targets: column -> (meaning, comparison, threshold)."""


def targets_table(results: pl.DataFrame) -> pl.DataFrame:
    """The targets (issues #4, #14, #20) per dataset × ε, for rap++ (the default), rap++paper
    and rap++mm, from the means over seeds of ok runs (best bins for binned mechanisms): the
    ratios or differences of :data:`TARGETS` and ``met``, how many of those that could be computed
    hold. A missing peer leaves its cells empty.

    AIM's seconds also count its fits stopped at the time cap (at the cap: a lower bound on
    what the fit would have taken), so ``time_vs_AIM`` is then an upper bound and still
    decides the target soundly; ``AIM_timeouts`` says how many such fits entered it."""
    variants = with_variants(results)
    frame = variants.filter(pl.col("status") == "ok")
    means = (frame.group_by("dataset", "epsilon", "mechanism")
             .agg(pl.col("MM_mean_error", "CM_mean_error", "LT_mean_error", "numeric_ks_mean", "macro_f1", "seconds",
                         "peak_rss_mib").mean()))

    def best(mechanisms: tuple[str, ...], column: str, how: str, name: str) -> pl.DataFrame:
        """Per dataset and ε, the best mean of ``column`` among ``mechanisms``, as ``_{column}_{name}``."""
        part = means.filter(pl.col("mechanism").is_in(mechanisms))
        value = pl.col(column).min() if how == "min" else pl.col(column).max()
        return part.group_by("dataset", "epsilon").agg(value.alias(f"_{column}_{name}"))

    aim_time = (variants.filter((pl.col("mechanism") == "aim") & pl.col("status").is_in(("ok", "timeout")))
                .group_by("dataset", "epsilon")
                .agg(pl.col("seconds").mean().alias("_seconds_aim"),
                     pl.col("peak_rss_mib").mean().alias("_peak_rss_mib_aim"),
                     (pl.col("status") == "timeout").sum().alias("AIM_timeouts")))
    peers = best(MM_PEERS, "MM_mean_error", "min", "peer")
    for part in (best(ADD_REMOVE_AIM, "CM_mean_error", "min", "add_remove"),
                 best(AIM_PEERS, "CM_mean_error", "min", "aim"), best(AIM_PEERS, "macro_f1", "max", "aim"),
                 best(AIM_PEERS, "LT_mean_error", "min", "aim"),
                 best(AIM_PEERS, "numeric_ks_mean", "min", "aim"), aim_time):
        peers = peers.join(part, on=["dataset", "epsilon"], how="full", coalesce=True)
    ours = means.filter(pl.col("mechanism").is_in(("rap++", "rap++paper", "rap++mm")))
    table = ours.join(peers, on=["dataset", "epsilon"], how="left").with_columns(
        (pl.col("MM_mean_error") / pl.col("_MM_mean_error_peer")).alias("MM_vs_best_peer"),
        (pl.col("CM_mean_error") / pl.col("_CM_mean_error_aim")).alias("CM_vs_AIM"),
        (pl.col("CM_mean_error") / pl.col("_CM_mean_error_add_remove")).alias("CM_vs_AIM_add_remove"),
        (pl.col("macro_f1") - pl.col("_macro_f1_aim")).alias("F1_minus_AIM"),
        (pl.col("LT_mean_error") / pl.col("_LT_mean_error_aim")).alias("LT_vs_AIM"),
        (pl.col("seconds") / pl.col("_seconds_aim")).alias("time_vs_AIM"),
        (pl.col("peak_rss_mib") / pl.col("_peak_rss_mib_aim")).alias("RSS_vs_AIM"),
        (pl.col("numeric_ks_mean") / pl.col("_numeric_ks_mean_aim")).alias("KS_vs_AIM"),
    )
    checks = [(pl.col(c) <= t) if op == "<=" else (pl.col(c) >= t) for c, (_, op, t) in TARGETS.items()]
    met = pl.sum_horizontal(*(check.fill_null(False).cast(pl.Int64) for check in checks))
    known = pl.sum_horizontal(*(pl.col(c).is_not_null().cast(pl.Int64) for c in TARGETS))
    return (table.with_columns(pl.format("{}/{}", met, known).alias("met"))
            .sort("dataset", "epsilon", "mechanism")
            .select("dataset", "epsilon", pl.col("mechanism").alias("polars_rap"), *TARGETS, "met",
                    "CM_vs_AIM_add_remove", "AIM_timeouts"))


def _seed_stats(frame: pl.DataFrame, column: str, by: Sequence[str] = ("variant", "epsilon")) -> pl.DataFrame:
    """Mean, min and max of ``column`` over seeds (ok rows with a value), per ``by``."""
    return (frame.filter((pl.col("status") == "ok") & pl.col(column).is_not_null())
            .group_by(*by).agg(pl.col(column).mean().alias("mean"), pl.col(column).min().alias("low"),
                               pl.col(column).max().alias("high"), pl.col("seconds").mean().alias("seconds"),
                               pl.col("mechanism").first())
            .with_columns(_mechanism_order(frame).alias("_order"))
            .sort("_order", *by).drop("_order"))


_MARKERS = "osD^v<>"


def _draw_mean_range(axis, stats: pl.DataFrame, x: str = "epsilon") -> None:
    """One line per variant with its seeds' range; 20 colours and a marker per ten variants, so
    that no two of the suite's variants look alike (matplotlib's default cycle repeats after 10)."""
    from matplotlib import colormaps

    palette = colormaps["tab20"]
    for index, ((variant,), part) in enumerate(stats.group_by("variant", maintain_order=True)):
        part = part.sort(x)
        mean = part["mean"].to_numpy()
        axis.errorbar(part[x].to_numpy(), mean, yerr=[mean - part["low"].to_numpy(), part["high"].to_numpy() - mean],
                      marker=_MARKERS[(index // 10) % len(_MARKERS)], color=palette(index % 20), capsize=3,
                      label=variant)


def _epsilon_ticks(axis, stats: pl.DataFrame) -> None:
    """Ticks at the ε values drawn, labelled plainly (after the log scale is set: setting a
    scale resets the tick formatters)."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    values = sorted(set(stats["epsilon"].to_list())) if stats.height else []
    if values:
        axis.xaxis.set_major_locator(FixedLocator(values))
        axis.set_xticklabels([f"{v:g}" for v in values])
        axis.xaxis.set_minor_formatter(NullFormatter())


def _file_name(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in text)


def _pyplot():
    import matplotlib.pyplot as plt

    return plt


def figure_error_vs_epsilon(results: pl.DataFrame, dataset: str):
    """Paper Fig. 2: CM, MM and LT mean error against ε for one dataset, one line per
    mechanism (best bins), means over seeds with min–max bars; a matplotlib Figure."""
    part = with_variants(results).filter(pl.col("dataset") == dataset)
    figure, axes = _pyplot().subplots(1, 3, figsize=(15, 4.5))
    for axis, query_class in zip(axes, ERROR_CLASSES, strict=True):
        stats = _seed_stats(part, f"{query_class}_mean_error")
        _draw_mean_range(axis, stats)
        axis.set(xscale="log", yscale="log", xlabel="ε", ylabel="mean |q(D) − q(D̂)|",
                 title=f"{dataset}: {query_class} error")
        _epsilon_ticks(axis, stats)
    axes[0].legend(fontsize=7)
    figure.tight_layout()
    return figure


def figure_f1_vs_epsilon(results: pl.DataFrame, dataset: str):
    """Paper Fig. 3: logistic-regression macro F1 on the real test rows against ε, with the
    model trained on the real training rows as a dashed line; a matplotlib Figure."""
    part = with_variants(results).filter(pl.col("dataset") == dataset)
    figure, axis = _pyplot().subplots(figsize=(7, 4.5))
    stats = _seed_stats(part, "macro_f1")
    _draw_mean_range(axis, stats)
    real = part["real_macro_f1"].drop_nulls()
    if real.len():
        axis.axhline(real.mean(), color="black", linestyle="--", label="real training rows")
    axis.set(xscale="log", xlabel="ε", ylabel="macro F1 (logistic regression)", title=f"{dataset}: ML utility")
    _epsilon_ticks(axis, stats)
    axis.legend(fontsize=7)
    figure.tight_layout()
    return figure


def figure_f1_vs_runtime(results: pl.DataFrame, dataset: str):
    """Paper Fig. 4: macro F1 against seconds per fit (log scale), one point per mechanism
    and ε (means over seeds); a matplotlib Figure."""
    part = with_variants(results).filter(pl.col("dataset") == dataset)
    figure, axis = _pyplot().subplots(figsize=(7, 4.5))
    stats = _seed_stats(part, "macro_f1")
    for (variant,), group in stats.group_by("variant", maintain_order=True):
        axis.scatter(group["seconds"].to_numpy(), group["mean"].to_numpy(), label=variant)
        for x_value, y_value, epsilon in group.select("seconds", "mean", "epsilon").iter_rows():
            axis.annotate(f"ε={epsilon:g}", (x_value, y_value), fontsize=6, xytext=(3, 3), textcoords="offset points")
    axis.set(xscale="log", xlabel="seconds per fit (mean over seeds)", ylabel="macro F1",
             title=f"{dataset}: F1 vs runtime")
    axis.legend(fontsize=7)
    figure.tight_layout()
    return figure


ANNEALING_PAIR = ("rap++paper", "rap++fixed-sigma")
"""Fig. 1: the paper's algorithm with and without σ annealing."""


def annealing_datasets(results: pl.DataFrame) -> list[str]:
    """Datasets with ok rows of both rap++paper and rap++fixed-sigma (what Fig. 1 needs)."""
    pair = results.filter(pl.col("mechanism").is_in(ANNEALING_PAIR) & (pl.col("status") == "ok"))
    return [d for d in pair["dataset"].unique().sort().to_list()
            if pair.filter(pl.col("dataset") == d)["mechanism"].n_unique() == 2]


def figure_annealing_vs_fixed_sigma(results: pl.DataFrame):
    """Paper Fig. 1: RAP++ with its σ annealing schedule against a fixed σ (the schedule's
    last value, same step budget): LT error, CM error and macro F1 against ε, one row of
    panels per dataset; a matplotlib Figure (None when no dataset has both)."""
    datasets = annealing_datasets(results)
    if not datasets:
        return None
    pair = with_variants(results).filter(pl.col("mechanism").is_in(ANNEALING_PAIR))
    panels = ("LT_mean_error", "CM_mean_error", "macro_f1")
    figure, axes = _pyplot().subplots(len(datasets), len(panels), figsize=(15, 4.2 * len(datasets)), squeeze=False)
    for row_axes, dataset in zip(axes, datasets, strict=True):
        part = pair.filter(pl.col("dataset") == dataset)
        for axis, column in zip(row_axes, panels, strict=True):
            stats = _seed_stats(part, column)
            _draw_mean_range(axis, stats)
            axis.set(xscale="log", xlabel="ε", ylabel=column, title=f"{dataset}: annealing vs fixed σ")
            _epsilon_ticks(axis, stats)
        row_axes[0].legend(fontsize=7)
    figure.tight_layout()
    return figure


def write_plots(results: pl.DataFrame, plots_dir: Path) -> list[Path]:
    """The four figures above as PNGs in ``plots_dir`` (per dataset where they are per
    dataset); returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    plt = _pyplot()
    plots_dir = Path(plots_dir)
    plots_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def save(figure, name: str) -> None:
        path = plots_dir / name
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)

    ok = results.filter(pl.col("status") == "ok")
    for dataset in ok["dataset"].unique().sort().to_list():
        name = _file_name(dataset)
        save(figure_error_vs_epsilon(results, dataset), f"error_vs_epsilon_{name}.png")
        save(figure_f1_vs_epsilon(results, dataset), f"f1_vs_epsilon_{name}.png")
        save(figure_f1_vs_runtime(results, dataset), f"f1_vs_runtime_{name}.png")
    figure = figure_annealing_vs_fixed_sigma(results)
    if figure is not None:
        save(figure, "annealing_vs_fixed_sigma.png")
    return written


# ============================================================================================
# Command line
# ============================================================================================


def default_plots_dir(suite: str, out: Path) -> Path:
    """Where the plots of ``out`` go without ``--plots-dir``: the suite's folder for the suite's
    own CSV (``plots/``, or ``plots/<suite>`` but for the headline), else ``<out's stem>_plots``
    beside it, so that a rerun or a scratch CSV never redraws the committed figures from its
    few rows."""
    if Path(out).resolve() == (RESULTS / f"{suite}.csv").resolve():
        return RESULTS / "plots" if suite == "headline" else RESULTS / "plots" / suite
    return Path(out).parent / f"{Path(out).stem}_plots"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", choices=sorted(SUITES), default="headline")
    parser.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                        help="skip runs already in --out with status ok/timeout (default); "
                             "--no-resume moves the old file to <out>.bak and starts over")
    parser.add_argument("--datasets", nargs="+", help="override the suite's datasets")
    parser.add_argument("--mechanisms", nargs="+", choices=ALL_MECHANISMS, help="override the suite's mechanisms")
    parser.add_argument("--epsilons", nargs="+", type=float, help="override the suite's ε grid")
    parser.add_argument("--seeds", nargs="+", type=int, help="override the suite's seeds")
    parser.add_argument("--out", type=Path, help="results CSV (default bench/results/<suite>.csv)")
    parser.add_argument("--plots-dir", type=Path,
                        help="PNG folder (default bench/results/plots, plots/quick for the quick suite; "
                             "<out stem>_plots beside --out for any other CSV)")
    parser.add_argument("--peer-time-cap", type=float, default=PEER_TIME_CAP_S,
                        help="seconds per peer fit before its row reads timeout (default 1800)")
    parser.add_argument("--synthesize", type=json.loads, default=None, metavar="JSON",
                        help="synthesize keywords merged over the suite's, e.g. '{\"confidence\": 0.9}'")
    parser.add_argument("--strategy", type=json.loads, default=None, metavar="JSON",
                        help="strategy settings merged over the suite's (an ablation), e.g. "
                             "'{\"base_share\": 0.2, \"projection\": {\"warm_doublings\": 2}}'")
    parser.add_argument("--domain-updates", type=json.loads, default=None, metavar="JSON",
                        help="per dataset, keys merged into numeric columns' declared domains for "
                             "polars-rap's mechanisms (an ablation), e.g. "
                             "'{\"adult\": {\"capital-gain\": {\"scale\": \"log\", \"atoms\": [0]}}}'")
    parser.add_argument("--plots-only", action="store_true", help="only redraw plots and the table from --out")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or per-run lines")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.one:
        rows = run_one(json.loads(args.one))
        print(json.dumps(rows, default=float))
        return 0
    suite = SUITES[args.suite]
    if args.synthesize:
        suite = {**suite, "synthesize": {**suite["synthesize"], **args.synthesize}}
    if args.strategy:
        suite = {**suite, "strategy": merged(suite["strategy"], args.strategy)}
    if args.domain_updates:
        suite = {**suite, "domain_updates": args.domain_updates}
    out = args.out or RESULTS / f"{args.suite}.csv"
    plots_dir = args.plots_dir or default_plots_dir(args.suite, out)
    if not args.plots_only:
        def plan(chosen: dict[tuple[str, str], int]) -> list[dict]:
            return plan_runs(suite, args.datasets or suite["datasets"], args.mechanisms or ALL_MECHANISMS,
                             args.epsilons or suite["epsilons"], args.seeds or suite["seeds"],
                             args.peer_time_cap, chosen)

        required = {m: bins_values(suite, m) for m in ALL_MECHANISMS if bins_values(suite, m) != (None,)}
        started = time.perf_counter()
        rows = run_suite(plan, out, args.resume, args.quiet, required)
        if not args.quiet:
            print(f"{len(rows)} run(s) in {time.perf_counter() - started:.0f} s -> {out}", flush=True)
    results = read_results(out)
    if results.height == 0:
        print(f"no results in {out}; nothing to plot", file=sys.stderr)
        return 1
    table = headline_table(results)
    tuning = bins_table(results)
    out.with_suffix(".md").write_text(
        table_markdown(table, title=f"{args.suite} suite ({out.name})") + "\n"
        + "## Targets (issues #4, #14, #20)\n\n"
        + "".join(f"- `{c}` {op} {t:g}: {meaning}\n" for c, (meaning, op, t) in TARGETS.items())
        + "- `met`: targets held of those computable; `AIM_timeouts`: AIM fits stopped at the cap\n"
        + "- `CM_vs_AIM_add_remove` (not a target): CM mean error ÷ smartnoise's AIM as shipped (`aim`, "
          "`aim-fixed-sampler`), calibrated to add/remove neighbours: 2.2 ρ under polars-rap's replace-one\n\n"
        + table_markdown(targets_table(results)) + "\n"
        + "## Bins tried where every value ran (the chosen one is used above)\n\n"
        + table_markdown(tuning) + "\n"
        + f"## Seed spread: max / min over the seeds (issue #74; mechanisms with {SPREAD_SEEDS} seeds or more)\n\n"
        + table_markdown(spread_table(results).filter(pl.col("seeds") >= SPREAD_SEEDS)))
    written = write_plots(results, plots_dir)
    if not args.quiet:
        print(f"table -> {out.with_suffix('.md')}; {len(written)} plot(s) -> {plots_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
