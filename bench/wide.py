"""Wide tables: how fit time, memory and accuracy grow with the columns (issue #75).

Two kinds of table, both generated here from a seed:

``acs``
    the widened ACS table of the issue: ``rows`` rows drawn with replacement from the bundled
    ``acs-income-CA`` task (19 features and the label), then ``copies`` copies of the 19
    features beside them, each copy's rows shuffled on their own (``AGEP_c1``, ...): copies add
    columns, not structure. ``copies`` = 0, 1, 3, 7 give 20, 39, 77 and 153 columns.
``bn``
    a random Bayesian network of mixed types whose true marginals are known
    (:class:`BayesNet`): a binary label at the root, categorical nodes (2–8 categories, a fifth
    of them with a null category) each with one categorical parent, numeric leaves (a quarter of
    the columns; bounds 0–100, some nullable) drawn around a mean set by their parent's category.
    Its exact two-way marginals (:meth:`BayesNet.pair_marginal`) are what the synthetic rows are
    scored against (``tv2_truth``), beside the suite's metrics against the generated rows.

Stages, each in a fresh process (:func:`bench.harness.run_stage`, so that peak RSS is the fit's):

``profile``
    one default ``synthesize`` under :mod:`cProfile` at ε = 1: the seconds of each pipeline stage
    (domain and pass set-up, workload and plan, the pass over the rows, the fit, decoding, the
    report) and the library functions with the most own time. ``python bench/wide.py profile``
    writes ``bench/results/wide_profile.{json,md}`` for the widened ACS table at 20, 39, 77 and
    153 columns (the issue's 40, 80 and 160).
``fit``
    one mechanism (``rap++`` default, ``independent``) on one table, written to Parquet and
    fitted in a process of its own (the table's generation and the scoring are not counted
    in its peak RSS; the fit reads the file into a frame, or scans it past 100,000 rows):
    seconds, peak RSS, CM
    (class-conditional 3-way marginals on a fixed sample of column pairs), MM (the suite's
    mixed marginals), ``tv2_truth`` (bn tables) and logistic / gradient-boosting macro F1 on
    held-out generated rows. ``python bench/wide.py fit`` appends to
    ``bench/results/wide.csv`` (resumable) and writes ``wide.md``.

Run one at a time on a shared 2-core machine (the profile at 153 columns takes ~10 minutes)::

    python bench/wide.py profile                         # -> wide_profile.{json,md}
    python bench/wide.py profile --columns 20 39         # a quicker subset, printed
    python bench/wide.py fit                             # the size grid -> wide.{csv,md}
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pickle
import pstats
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

if __package__ in (None, ""):  # run as ``python bench/wide.py``: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import RESULTS, machine, run_stage, write_record  # noqa: E402
from bench.host import git_commit, own_peak_rss_mib  # noqa: E402

ACS_TASK = "acs-income-CA"
ACS_COPIES = {20: 0, 39: 1, 77: 3, 153: 7}
"""Columns of the widened ACS table -> copies of its 19 features."""
PROFILE_COLUMNS = (20, 39, 77, 153)
EPSILON = 1.0
NUMERIC_SHARE = 0.25
NULL_CATEGORY_SHARE = 0.2
NULLABLE_NUMERIC_SHARE = 0.3
PIPELINE_STAGES = ("open_inputs", "workload_and_plan", "answer_workload", "fit_relaxed", "decode_release",
                   "release_report")
"""The functions :func:`polars_rap.pipeline.synthesis.synthesize` calls in turn."""


# ============================================================================================
# Tables
# ============================================================================================


@dataclass(frozen=True)
class Table:
    """A generated table: its rows, its ``domain=`` mapping and its label column."""

    name: str
    frame: pl.DataFrame
    domain: dict[str, Any]
    labels: list[str]
    truth: BayesNet | None = None


def widened_acs(copies: int, rows: int, seed: int = 0, part: str = "train") -> Table:
    """``rows`` rows drawn with replacement from the ``acs-income-CA`` task's ``part`` (the
    suite's 80/20 split, seed 0: ``"train"`` or ``"test"``), with ``copies`` row-shuffled copies
    of its features beside them (20 + 19 * copies columns)."""
    from polars_rap.io.datasets import load_task, train_test_split

    task = load_task(ACS_TASK)
    source = train_test_split(task.frame, test_fraction=0.2, seed=0)[part == "test"]
    rng = np.random.default_rng(seed)
    base = source[rng.integers(0, source.height, rows)]
    features = [c for c in base.columns if c not in task.labels]
    domain = dict(task.domain)
    parts = [base]
    for copy in range(1, copies + 1):
        order = rng.permutation(rows)
        parts.append(base.select(features)[order].rename({c: f"{c}_c{copy}" for c in features}))
        domain.update({f"{c}_c{copy}": task.domain[c] for c in features})
    return Table(f"acs-{20 + 19 * copies}", pl.concat(parts, how="horizontal"), domain, list(task.labels))


@dataclass(frozen=True)
class BayesNet:
    """A tree-shaped Bayesian network over categorical and numeric columns.

    Node 0 is the binary label ``y`` (the root). Every other node has one categorical parent
    (``parents[i] < i``). A categorical node ``c{i}`` has ``cpts[i]`` (float64[parent
    categories, categories], rows summing to 1; its last category is null when ``null_category[i]``);
    a numeric leaf ``x{i}`` is ``clip(N(means[i][parent category], sds[i]), 0, 100)``, null with
    probability ``null_rates[i][parent category]``.
    """

    parents: list[int]
    names: list[str]
    cardinalities: list[int]  # 0 for a numeric node
    null_category: list[bool]
    cpts: dict[int, np.ndarray] = field(default_factory=dict)
    means: dict[int, np.ndarray] = field(default_factory=dict)
    sds: dict[int, float] = field(default_factory=dict)
    null_rates: dict[int, np.ndarray] = field(default_factory=dict)

    @classmethod
    def random(cls, columns: int, seed: int) -> BayesNet:
        """A network of ``columns`` nodes drawn from ``seed``: about :data:`NUMERIC_SHARE` numeric
        leaves; each CPT row Dirichlet(0.5) mixed half-and-half with one shared row (so that
        children depend on their parents without being determined by them)."""
        rng = np.random.default_rng(seed)
        net = cls(parents=[-1], names=["y"], cardinalities=[2], null_category=[False])
        net.cpts[0] = np.array([[0.6, 0.4]])
        categorical = [0]
        for i in range(1, columns):
            parent = int(rng.choice(categorical))
            parent_card = net.cardinalities[parent]
            net.parents.append(parent)
            if rng.random() < NUMERIC_SHARE:
                net.names.append(f"x{i}")
                net.cardinalities.append(0)
                net.null_category.append(False)
                net.means[i] = rng.uniform(15, 85, parent_card)
                net.sds[i] = float(rng.uniform(4, 15))
                nullable = rng.random() < NULLABLE_NUMERIC_SHARE
                net.null_rates[i] = rng.uniform(0, 0.3, parent_card) if nullable else np.zeros(parent_card)
                continue
            card = int(rng.integers(2, 9))
            net.names.append(f"c{i}")
            net.cardinalities.append(card)
            net.null_category.append(bool(rng.random() < NULL_CATEGORY_SHARE))
            shared = rng.dirichlet(np.ones(card))
            net.cpts[i] = 0.5 * rng.dirichlet(np.full(card, 0.5), parent_card) + 0.5 * shared
            categorical.append(i)
        return net

    def categories(self, i: int) -> list[str | None]:
        values: list[str | None] = [f"v{k}" for k in range(self.cardinalities[i])]
        if self.null_category[i]:
            values[-1] = None
        return values

    def domain(self) -> dict[str, Any]:
        out: dict[str, Any] = {"y": [False, True]}
        for i in range(1, len(self.names)):
            if self.cardinalities[i]:
                out[self.names[i]] = self.categories(i)
            else:
                nullable = bool(self.null_rates[i].any())
                out[self.names[i]] = {"bounds": (0.0, 100.0), "nullable": nullable} if nullable else (0.0, 100.0)
        return out

    def sample(self, rows: int, seed: int) -> pl.DataFrame:
        """``rows`` rows drawn from the network with ``seed``."""
        rng = np.random.default_rng(seed)
        codes: dict[int, np.ndarray] = {0: (rng.random(rows) < self.cpts[0][0, 1]).astype(np.int64)}
        columns: dict[str, pl.Series] = {"y": pl.Series("y", codes[0].astype(bool))}
        for i in range(1, len(self.names)):
            parent = codes[self.parents[i]]
            if self.cardinalities[i]:
                cumulative = np.cumsum(self.cpts[i], axis=1)[parent]
                drawn = (rng.random((rows, 1)) > cumulative).sum(axis=1)
                codes[i] = np.minimum(drawn, self.cardinalities[i] - 1)
                labels = np.array(self.categories(i), dtype=object)
                columns[self.names[i]] = pl.Series(self.names[i], labels[codes[i]].tolist(), dtype=pl.String)
            else:
                values = np.clip(rng.normal(self.means[i][parent], self.sds[i]), 0.0, 100.0)
                null = rng.random(rows) < self.null_rates[i][parent]
                columns[self.names[i]] = pl.Series(self.names[i], np.where(null, np.nan, values)).fill_nan(None)
        return pl.DataFrame(list(columns.values()))

    def marginal(self, i: int) -> np.ndarray:
        """P(node i) (float64[categories]) of a categorical node."""
        if i == 0:
            return self.cpts[0][0]
        return self.marginal(self.parents[i]) @ self.cpts[i]

    def _path(self, i: int) -> list[int]:
        path = [i]
        while path[-1] != 0:
            path.append(self.parents[path[-1]])
        return path[::-1]

    def _transition(self, ancestor: int, path: list[int]) -> np.ndarray:
        """P(node path[-1] | node ancestor) along ``path`` below ``ancestor``."""
        matrix = np.eye(self.cardinalities[ancestor])
        for node in path[path.index(ancestor) + 1:]:
            matrix = matrix @ self.cpts[node]
        return matrix

    def pair_marginal(self, u: int, v: int) -> np.ndarray:
        """Exact P(node u, node v) (float64[cats u, cats v]) of two categorical nodes."""
        path_u, path_v = self._path(u), self._path(v)
        common = [a for a, b in zip(path_u, path_v) if a == b][-1]
        top = self.marginal(common)
        return self._transition(common, path_u).T @ (top[:, None] * self._transition(common, path_v))


def bayes_net_table(columns: int, rows: int, seed: int = 0) -> Table:
    """``rows`` rows of a random :class:`BayesNet` of ``columns`` columns (network and rows from
    ``seed``)."""
    net = BayesNet.random(columns, seed)
    return Table(f"bn-{columns}", net.sample(rows, seed + 1), net.domain(), ["y"], net)


# ============================================================================================
# Profile
# ============================================================================================


def profile_fit(table: Table, seed: int = 0, top: int = 25) -> dict[str, Any]:
    """One default ``synthesize`` of ``table`` at ε = 1 under cProfile: total seconds, each
    pipeline stage's seconds and the library's functions with the most own (and cumulative) time."""
    import polars_rap
    from polars_rap.pipeline import synthesis

    _warm_up(table)
    timings: dict[str, float] = {}
    for name in PIPELINE_STAGES:
        original = getattr(synthesis, name)

        def timed(*args, _original=original, _name=name, **kwargs):
            started = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                timings[_name] = round(time.perf_counter() - started, 3)

        setattr(synthesis, name, timed)
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    result = polars_rap.synthesize(table.frame, epsilon=EPSILON, delta=1.0 / table.frame.height**2,
                                   domain=table.domain, labels=table.labels, seed=seed, progress=False)
    profiler.disable()
    seconds = time.perf_counter() - started
    stats = pstats.Stats(profiler)
    functions = []
    for (path, line, function), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if "polars_rap" in path:
            short = path.split("polars_rap/")[-1]
            functions.append({"function": f"{short}:{line}({function})", "calls": calls,
                              "own_s": round(own, 3), "cumulative_s": round(cumulative, 3)})
    by_own = sorted(functions, key=lambda f: -f["own_s"])[:top]
    by_cumulative = sorted(functions, key=lambda f: -f["cumulative_s"])[:top]
    return {"stage": "profile", "table": table.name, "rows": table.frame.height, "columns": table.frame.width,
            "seconds": round(seconds, 2), "peak_rss_mib": round(own_peak_rss_mib(), 1), "stages": timings,
            "queries": int(result.report.parameters.get("n_queries", 0) or 0),
            "by_own_time": by_own, "by_cumulative_time": by_cumulative}


def _warm_up(table: Table) -> None:
    """Compile (or load from Numba's cache) the kernels outside the timed region."""
    import polars_rap

    polars_rap.synthesize(table.frame.head(20_000), epsilon=1.0, delta=1e-6, domain=table.domain,
                          labels=table.labels, seed=0, progress=False,
                          strategy=polars_rap.PlannedStrategy(relaxed_rows=20, rounds={"CM": 1, "LT": 1},
                                                              workload={"n_linear_thresholds": 20}))


def profile_markdown(rows: list[dict[str, Any]]) -> str:
    """The stage table (seconds per stage per width) and each width's top functions."""
    lines = ["# Where a default fit's time goes as the columns grow (issue #75)", "",
             f"Widened ACS table ({ACS_TASK}'s rows drawn with replacement, its 19 features copied and "
             f"row-shuffled beside them), ε = {EPSILON}, default settings, one process under cProfile "
             "(which adds some overhead to Python-heavy stages).", ""]
    header = ["columns", "rows", "total s", *PIPELINE_STAGES, "peak RSS MiB"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row["columns"], row["rows"], row["seconds"], *(row["stages"].get(s, "") for s in PIPELINE_STAGES),
                 row["peak_rss_mib"]]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    for row in rows:
        lines += ["", f"## {row['columns']} columns: library functions by own time", "",
                  "| function | calls | own s | cumulative s |", "|---|---|---|---|"]
        lines += [f"| `{f['function']}` | {f['calls']} | {f['own_s']} | {f['cumulative_s']} |"
                  for f in row["by_own_time"][:15]]
    return "\n".join(lines) + "\n"


# ============================================================================================
# Fit and score
# ============================================================================================

CM_PAIRS = 400
"""Column pairs (with the label: class-conditional 3-way marginals) the CM error is the mean over."""
TRUTH_PAIRS = 400
"""Categorical column pairs ``tv2_truth`` is the mean over (bn tables)."""
MECHANISMS = ("rap++", "independent")
TEST_ROWS = 20_000
BLOCK_ROWS = 100_000
GRID = ([("bn", c, 100_000, m) for c in (50, 100, 200, 300) for m in MECHANISMS]
        + [("acs", c, 100_000, m) for c in (20, 39, 77, 153) for m in MECHANISMS]
        + [("bn", c, 1_000_000, "rap++") for c in (50, 100, 200, 300)])
"""(kind, columns, rows, mechanism) of ``python bench/wide.py fit``; the independent baseline
reads its rows in memory, so it runs at 100,000 rows only."""
RESULTS_FILE = RESULTS / "wide.jsonl"
ML_MODELS = {"logistic": "logistic", "gb": "gradient_boosting"}


def class_conditional_errors(real: pl.DataFrame, synthetic: pl.DataFrame, domain: dict[str, Any], label: str,
                             pairs: int = CM_PAIRS, seed: int = 0) -> dict[str, float]:
    """The suite's CM error on a fixed random sample of ``pairs`` categorical feature pairs:
    every cell of each pair's 3-way marginal with ``label`` (the domain's cells, null a
    category), as a fraction of the rows; ``CM_mean_error`` the mean over all those cells,
    ``CM_max_error`` the largest."""
    features = [c for c, d in domain.items() if isinstance(d, list) and c != label]
    rng = np.random.default_rng(seed)
    chosen = {tuple(sorted(rng.choice(len(features), 2, replace=False))) for _ in range(pairs)}
    total, cells, worst = 0.0, 0, 0.0
    for i, j in sorted(chosen):
        a, b = features[i], features[j]
        keys = [a, b, label]
        counts = [frame.group_by(keys).len().with_columns(pl.col("len") / frame.height) for frame in (real, synthetic)]
        joined = counts[0].join(counts[1], on=keys, how="full", coalesce=True, nulls_equal=True).fill_null(0.0)
        difference = (joined["len"] - joined["len_right"]).abs()
        total += float(difference.sum())
        cells += len(domain[a]) * len(domain[b]) * len(domain[label])
        worst = max(worst, float(difference.max() or 0.0))
    return {"CM_mean_error": total / cells, "CM_max_error": worst, "CM_pairs": len(chosen)}


def truth_distance(net: BayesNet, synthetic: pl.DataFrame, pairs: int = TRUTH_PAIRS, seed: int = 0) -> float:
    """Mean total-variation distance of ``pairs`` random categorical pairs' two-way margins of
    ``synthetic`` from the network's exact ones."""
    categorical = [i for i in range(len(net.names)) if net.cardinalities[i]]
    rng = np.random.default_rng(seed)
    distances = []
    for _ in range(pairs):
        u, v = (int(x) for x in rng.choice(categorical, 2, replace=False))
        exact = net.pair_marginal(u, v)
        codes = []
        for node in (u, v):
            values = net.categories(node) if node else [False, True]
            series = synthetic.get_column(net.names[node])
            codes.append(series.replace_strict(values, list(range(len(values))), return_dtype=pl.Int64).to_numpy()
                         if node else series.cast(pl.Int64).to_numpy())
        observed = np.zeros_like(exact)
        np.add.at(observed, (codes[0], codes[1]), 1.0)
        distances.append(0.5 * np.abs(observed / synthetic.height - exact).sum())
    return float(np.mean(distances))


def _write_blocks(kind: str, columns: int, rows: int, folder: Path) -> Table:
    """``rows`` rows of the table written as Parquet parts of :data:`BLOCK_ROWS` rows (so that a
    million-row wide table never sits in memory); returns the first block as the table."""
    first = None
    for block in range(-(-rows // BLOCK_ROWS)):
        part = _table(kind, columns, min(BLOCK_ROWS, rows - block * BLOCK_ROWS), block)
        part.frame.write_parquet(folder / f"part-{block:04d}.parquet")
        first = part if first is None else first
    assert first is not None
    return first


def synthesize_files(folder: Path, domain_file: Path, mechanism: str, seed: int) -> dict[str, Any]:
    """The fit alone, as a user runs it: ``mechanism`` on the Parquet parts in ``folder`` (read
    into one frame when there is one part, scanned in batches past it), its domain from
    ``domain_file`` (a pickle of ``domain`` and ``labels``: JSON would turn bounds into lists);
    the synthetic rows go to ``folder/synthetic.parquet``. Seconds (kernels compiled or loaded before) and the process's
    peak RSS, which so counts the fit and its input, not the generation of the table."""
    import polars_rap

    from bench.mechanisms import independent

    spec = pickle.loads(domain_file.read_bytes())
    parts = sorted(folder.glob("part-*.parquet"))
    on_disk = len(parts) > 1
    data: str | pl.DataFrame = str(folder / "part-*.parquet") if on_disk else pl.read_parquet(parts[0])
    rows = pl.scan_parquet(parts).select(pl.len()).collect().item()
    table = Table("fit", pl.read_parquet(parts[0], n_rows=20_000), spec["domain"], spec["labels"])
    if mechanism == "rap++":
        _warm_up(table)
    started = time.perf_counter()
    if mechanism == "rap++":
        synthetic = polars_rap.synthesize(data, epsilon=EPSILON, delta=1.0 / rows**2, domain=spec["domain"],
                                          labels=spec["labels"], seed=seed, progress=False,
                                          rows=BLOCK_ROWS if on_disk else None).data
    elif on_disk:
        raise ValueError("the independent baseline reads its rows in memory: give it at most BLOCK_ROWS rows")
    else:
        synthetic = independent(data, spec["domain"], spec["labels"], EPSILON, 1.0 / rows**2, seed, {}).data
    seconds = round(time.perf_counter() - started, 2)
    synthetic.write_parquet(folder / "synthetic.parquet")
    return {"seconds": seconds, "peak_rss_mib": round(own_peak_rss_mib(), 1)}


def fit_and_score(kind: str, columns: int, rows: int, mechanism: str, seed: int) -> dict[str, Any]:
    """One fit of ``mechanism`` on the generated table and its scores (see the module docstring).
    The table is written to Parquet parts of :data:`BLOCK_ROWS` rows and fitted in a process of
    its own (:func:`synthesize_files`: its seconds and peak RSS are the fit's); past one part it
    is synthesized from the files (:data:`BLOCK_ROWS` synthetic rows out) and scored against
    its first part."""
    import tempfile

    from polars_rap.quality.evaluation import ml_utility_for_domain, workload_errors
    from polars_rap.schema.domain import Domain

    folder = tempfile.TemporaryDirectory()
    table = _write_blocks(kind, columns, rows, Path(folder.name))
    domain_file = Path(folder.name) / "domain.pickle"
    domain_file.write_bytes(pickle.dumps({"domain": table.domain, "labels": table.labels}))
    fitted = run_stage(__file__, "synthesize", folder.name, domain_file, mechanism, seed)
    if "error" in fitted:
        raise RuntimeError(f"the fit failed: {fitted['error']}")
    synthetic = pl.read_parquet(Path(folder.name) / "synthetic.parquet")
    test = _table(kind, columns, TEST_ROWS, 1000, part="test").frame
    label = table.labels[0]
    row: dict[str, Any] = {"table": table.name, "kind": kind, "columns": table.frame.width, "rows": rows,
                           "mechanism": mechanism, "epsilon": EPSILON, "seed": seed,
                           "seconds": fitted["seconds"], "peak_rss_mib": fitted["peak_rss_mib"],
                           "fit_other_processes_cores": fitted["other_processes_cores"]}
    domain = Domain.from_mapping(table.frame.schema, table.domain, table.labels)
    row.update(class_conditional_errors(table.frame, synthetic, table.domain, label))
    for scores in workload_errors(table.frame, synthetic, domain, seed=0, classes=("MM",)).iter_rows(named=True):
        row["MM_mean_error"], row["MM_max_error"] = scores["mean_error"], scores["max_error"]
    if table.truth is not None:
        row["tv2_truth"] = truth_distance(table.truth, synthetic)
        row["tv2_truth_real"] = truth_distance(table.truth, table.frame)  # the generated rows' own distance
    for prefix, model in ML_MODELS.items():
        row[f"{prefix}_macro_f1"] = ml_utility_for_domain(synthetic, test, label, domain, model=model)["macro_f1"]
        row[f"real_{prefix}_macro_f1"] = ml_utility_for_domain(table.frame, test, label, domain,
                                                               model=model)["macro_f1"]
    return row


FIT_COLUMNS = ("seconds", "peak_rss_mib", "CM_mean_error", "MM_mean_error", "tv2_truth", "logistic_macro_f1",
               "gb_macro_f1", "real_logistic_macro_f1", "real_gb_macro_f1")


def _still_failed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The failed rows of ``rows`` (in file order) that no later row of the same kind, columns,
    rows, mechanism and seed replaced with a result: a failure fixed and rerun is history."""
    def key(r):
        return tuple(r.get(k) for k in ("kind", "columns", "rows", "mechanism", "seed"))

    last_ok = {key(r): i for i, r in enumerate(rows) if "error" not in r}
    return [r for i, r in enumerate(rows) if "error" in r and last_ok.get(key(r), -1) < i]


def _latest(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The successful rows of ``rows`` less those a later row of the same machine, table,
    mechanism and seed superseded (a rerun with ``--rerun`` after a change)."""
    def key(r):
        return tuple(r.get(k) for k in ("machine", "kind", "columns", "rows", "mechanism", "seed"))

    ok = [r for r in rows if "error" not in r]
    last = {key(r): i for i, r in enumerate(ok)}
    return [r for i, r in enumerate(ok) if last[key(r)] == i]


def fit_markdown(rows: list[dict[str, Any]]) -> str:
    """Each (machine, table, rows, mechanism)'s mean over its seeds of :data:`FIT_COLUMNS`
    (the latest row of each seed: :func:`_latest`), the commits they ran at and the machine's
    load while they ran."""
    frame = pl.DataFrame(_latest(rows), infer_schema_length=None)
    present = [c for c in FIT_COLUMNS if c in frame.columns]
    for name in ("machine", "commit"):
        if name not in frame.columns:
            frame = frame.with_columns(pl.lit(None, dtype=pl.String).alias(name))
    # the fit's own process since the fit ran apart from the scoring; the stage's before
    other = (pl.coalesce("fit_other_processes_cores", "other_processes_cores")
             if "fit_other_processes_cores" in frame.columns else pl.col("other_processes_cores"))
    table = (frame.group_by("machine", "kind", "columns", "rows", "mechanism", maintain_order=True)
             .agg(pl.len().alias("seeds"), *(pl.col(c).mean().round(4) for c in present),
                  other.max().alias("other_cores_max"),
                  pl.col("commit").str.slice(0, 7).unique(maintain_order=True).str.join(" ").alias("commits"))
             .sort("machine", "kind", "rows", "columns", "mechanism", nulls_last=True))
    lines = ["# Wide tables: fit time, memory and accuracy against the columns (issue #75)", "",
             "`python bench/wide.py fit`; ε = 1, δ = 1/n², default settings; means over the seeds. "
             "CM: class-conditional 3-way marginals on a fixed sample of column pairs; MM: the suite's mixed "
             "marginals; tv2_truth: the mean total-variation distance of categorical pairs' 2-way margins "
             "from the network's exact ones (bn tables); F1 on held-out generated rows. "
             "`other_cores_max`: cores other processes kept busy meanwhile (above ~0.2 the seconds are inflated); "
             "`commits`: the code the rows ran (a later run of the same machine, table and seed supersedes an "
             "earlier one; `wide.jsonl` keeps both).",
             "", "| " + " | ".join(table.columns) + " |", "|" + "---|" * table.width]
    lines += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in table.iter_rows()]
    failed = _still_failed(rows)
    if failed:
        lines += ["", "Failed runs (no later run of the same table, mechanism and seed succeeded):", ""] + [
            f"- {r.get('kind')} {r.get('columns')} x {r.get('rows')} {r.get('mechanism')} seed {r.get('seed')}: "
            f"{r['error']}" for r in failed]
    return "\n".join(lines) + "\n"


# ============================================================================================
# Command line
# ============================================================================================


def _table(kind: str, columns: int, rows: int, seed: int, part: str = "train") -> Table:
    """A generated table; ``seed`` picks its rows (a block of a larger table, or the held-out
    rows), never its columns: ``part="test"`` gives held-out rows of the same table (the ACS
    task's test split), and a network is always the one of seed 0, so that every block and the
    held-out rows are rows of one network (seed 0 gives :func:`bayes_net_table`'s rows)."""
    if kind == "acs":
        return widened_acs(ACS_COPIES[columns], rows, seed, part)
    net = BayesNet.random(columns, 0)
    return Table(f"bn-{columns}", net.sample(rows, seed + 1), net.domain(), ["y"], net)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stage", nargs="+", help=argparse.SUPPRESS)  # a child process's stage
    parser.add_argument("command", nargs="?", choices=("profile", "fit"))
    parser.add_argument("--columns", type=int, nargs="+", help="only these widths (default: all)")
    parser.add_argument("--rows", type=int, default=100_000, help="profile: the table's rows")
    parser.add_argument("--kind", choices=("acs", "bn"), help="fit: only this kind of table")
    parser.add_argument("--only-rows", type=int, help="fit: only the grid's tables of this many rows")
    parser.add_argument("--mechanism", choices=MECHANISMS, help="fit: only this mechanism")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--rerun", action="store_true",
                        help="fit: run the chosen tables again though the file has them (the new rows supersede "
                             "the old ones on the same machine in wide.md; the file keeps both)")
    args = parser.parse_args(argv)
    if args.stage:
        name, *rest = args.stage
        if name == "profile":
            kind, columns, rows = rest[0], int(rest[1]), int(rest[2])
            print(json.dumps(profile_fit(_table(kind, columns, rows, 0))))
        elif name == "synthesize":
            print(json.dumps(synthesize_files(Path(rest[0]), Path(rest[1]), rest[2], int(rest[3]))))
        elif name == "fit":
            kind, columns, rows, mechanism, seed = rest[0], int(rest[1]), int(rest[2]), rest[3], int(rest[4])
            print(json.dumps(fit_and_score(kind, columns, rows, mechanism, seed)))
        return 0
    if args.command == "profile":
        rows, widths = [], args.columns or list(PROFILE_COLUMNS)
        for columns in widths:
            row = run_stage(__file__, "profile", "acs", columns, args.rows)
            print(json.dumps({k: v for k, v in row.items() if not k.startswith("by_")}), flush=True)
            rows.append(row)
        if tuple(widths) == PROFILE_COLUMNS and all("error" not in r for r in rows):
            write_record(RESULTS / "wide_profile.json", "wide_profile", runs=rows)
            (RESULTS / "wide_profile.md").write_text(profile_markdown(rows))
        else:
            print(profile_markdown([r for r in rows if "error" not in r]))
        return 0
    if args.command == "fit":
        done = set()
        if RESULTS_FILE.is_file() and not args.rerun:
            done = {(r["kind"], r["columns"], r["rows"], r["mechanism"], r["seed"])
                    for r in map(json.loads, RESULTS_FILE.read_text().splitlines()) if "error" not in r}
        for kind, columns, rows, mechanism in GRID:
            if ((args.kind and kind != args.kind) or (args.columns and columns not in args.columns)
                    or (args.only_rows and rows != args.only_rows) or (args.mechanism and mechanism != args.mechanism)):
                continue
            for seed in args.seeds:
                if (kind, columns, rows, mechanism, seed) in done:
                    continue
                row = run_stage(__file__, "fit", kind, columns, rows, mechanism, seed)
                row.update(kind=kind, columns=columns, rows=rows, mechanism=mechanism, seed=seed,
                           commit=git_commit(), date=time.strftime("%Y-%m-%d"), machine=machine())
                print(json.dumps(row), flush=True)
                with RESULTS_FILE.open("a") as handle:
                    handle.write(json.dumps(row) + "\n")
        (RESULTS / "wide.md").write_text(fit_markdown([json.loads(x) for x in RESULTS_FILE.read_text().splitlines()]))
        return 0
    parser.error("name a command: profile or fit")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
