"""What raking the other states' rows to *measured* one-way margins can reach on CA (issue 19).

The offline study behind ``public_use="margins"`` (:mod:`polars_rap.public.margins`): CA's
true one-way margins (every categorical column, each numeric column on equal cells of its
bounds plus a null cell) get Gaussian noise as a release spending a share of the ε budget would
(δ = 1/n², replace-one: L2 sensitivity sqrt(2)/n a margin, margin i at ``rho * w_i / sum(w)``),
each is pulled toward the public rows' margin by one James-Stein factor per margin (the
library's rule before 2026-11-29), by the library's empirical-Bayes factor per cell
(:func:`~polars_rap.public.shrinkage.shrunk_margin`), or not at all, the public rows are raked to
them, n rows are drawn by weight, and the suite's evaluation scores them (CM, MM, LT, macro F1;
three noise draws each; drawn systematically along
:func:`~polars_rap.public.reweight.sampling_order`, as the library draws). Which numeric cells,
numeric weight, label weight and share to measure with are chosen here; an attribution puts one
column's true margin in place of its measurement at a time (which margin's noise costs most);
and the draw's order is compared with the table's own and a random one. A last table asks
whether a public table's associations beat none at all: the public rows raked to CA's *true*
margins against every column independent with those margins, on the CM workload (mean |error|
per cell, exact weights), which is what the margins' check tests.

No release: the noise is simulated on CA's true margins.

    PYTHONPATH=src:. python -m bench.public_margins_probe    # -> bench/results/public_margins_probe.md
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
DRAWS = 3
VARIANTS = (  # (label, numeric cells, numeric weight, label weight, share of the budget, shrink)
    ("CA's true margins", 8, 4.0, 1.0, 1.0, "true"),
    ("measured, raked as released", 20, 1.0, 1.0, 1.0, "none"),
    ("James-Stein", 20, 1.0, 1.0, 1.0, "js"),
    ("James-Stein", 8, 1.0, 1.0, 1.0, "js"),
    ("James-Stein", 4, 1.0, 1.0, 1.0, "js"),
    ("James-Stein", 8, 3.0, 1.0, 1.0, "js"),
    ("James-Stein", 8, 4.0, 1.0, 1.0, "js"),
    ("James-Stein", 8, 6.0, 1.0, 1.0, "js"),
    ("James-Stein", 8, 4.0, 1.0, 0.8, "js"),
    ("James-Stein", 8, 4.0, 1.0, 0.5, "js"),
    ("empirical Bayes", 8, 4.0, 1.0, 1.0, "eb"),
    ("empirical Bayes", 8, 4.0, 1.0, 0.8, "eb"),
    ("empirical Bayes", 8, 4.0, 4.0, 0.8, "eb"),
    ("empirical Bayes", 8, 4.0, 8.0, 0.8, "eb"),
    ("empirical Bayes", 8, 4.0, 16.0, 0.8, "eb"),
)


def _james_stein(noisy: np.ndarray, std: float, public: np.ndarray) -> np.ndarray:
    """The positive-part James-Stein estimate toward ``public`` (one factor for every cell of the
    margin), clipped at 0 and rescaled: the library's estimate before the empirical-Bayes one."""
    gap = noisy - public
    spread = float(np.square(gap).sum())
    estimate = np.clip(public + (0.0 if spread == 0 else max(0.0, 1 - len(gap) * std**2 / spread)) * gap, 0, None)
    return estimate / estimate.sum()


def systematic_draw(weights: np.ndarray, along: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """int64[n]: row indices drawn by ``weights`` (float64[rows], summing to 1) systematically
    along ``along`` (row indices in the order drawn; one uniform offset from ``rng``), as the
    library draws (:func:`~polars_rap.public.reweight.reweighted_candidate`)."""
    cumulative = np.cumsum(weights[along])
    return along[np.minimum(np.searchsorted(cumulative, (rng.random() + np.arange(n)) / n, side="right"),
                            len(along) - 1)]


def suite_errors(synthetic, train, domain) -> dict[str, float]:
    """{query class: mean error} of the ``synthetic`` rows (a Polars frame): the suite's headline
    evaluation against ``train`` (``SUITES["headline"]["eval"]``, seed 0)."""
    from polars_rap.quality import evaluation

    from bench.run import SUITES

    return {r["query_class"]: r["mean_error"] for r in evaluation.workload_errors(
        train, synthetic, domain, seed=0, **SUITES["headline"]["eval"]).iter_rows(named=True)}


def scores_of(synthetic, train, test, domain, label: str) -> list[float]:
    """[CM, MM, LT, macro F1] of the ``synthetic`` rows (a Polars frame): :func:`suite_errors`
    against ``train``, logistic regression's macro F1 on ``test``."""
    from polars_rap.quality import evaluation

    errors = suite_errors(synthetic, train, domain)
    f1 = evaluation.ml_utility_for_domain(synthetic, test, label, domain)["macro_f1"]
    return [errors["CM"], errors["MM"], errors["LT"], f1]


def drawn_scores(public, weights: np.ndarray, along: np.ndarray, train, test, domain, label: str,
                 rng: np.random.Generator, size: int | None = None) -> list[float]:
    """:func:`scores_of` ``size`` rows (``train.height`` unless given) of ``public`` (a Polars
    frame) drawn by ``weights`` systematically along ``along`` (:func:`systematic_draw`) and
    shuffled."""
    drawn = systematic_draw(weights, along, size or train.height, rng)
    return scores_of(public[rng.permutation(drawn)], train, test, domain, label)


@dataclass(frozen=True)
class ProbeSetup:
    """What the offline probes of ``public_use="margins"`` on CA share (:func:`probe_setup`):
    the task's ``train``/``test`` split and ``task``, its ``label``, ``categorical`` and
    ``numeric`` column names (``columns`` both, categorical first), ``n`` training rows, the
    encoded ``domain``, the other states' rows ``public`` (a Polars frame), their draw ``order``
    (:func:`~polars_rap.public.reweight.sampling_order`, as the library draws) and ``none``: the
    headline's CM, MM and LT mean errors without a public table at the probe's ε (3 seeds)."""

    train: object
    test: object
    task: object
    label: str
    categorical: list
    numeric: list
    columns: list
    n: int
    domain: object
    public: object
    order: np.ndarray
    none: dict


def probe_setup(epsilon: float, state: str = "CA") -> ProbeSetup:
    """:class:`ProbeSetup` of acs-income-CA with the other states' rows, ``none`` at ``epsilon``
    (the headline's runs). Another ``state`` (two letters): its rows split and its public table
    built as :mod:`bench.other_state_check` does (every other state's rows), ``none`` the mean of
    that check's runs without a public table at ``epsilon`` (the latest per seed)."""
    import polars as pl

    from polars_rap.schema.domain import Domain
    from polars_rap.public.prior import open_public, read_public
    from polars_rap.public.reweight import sampling_order

    from bench.other_state_check import state_split
    from bench.public_prior import DATASET, public_table
    from bench.run import prepare_dataset

    if state == "CA":
        train, test, task = prepare_dataset(DATASET, None)
        public = public_table("matched", train.columns)
        headline = pl.read_csv(RESULTS / "headline.csv").filter(
            (pl.col("dataset") == DATASET) & (pl.col("mechanism") == "rap++") & (pl.col("epsilon") == epsilon))
        none = {c: float(headline[f"{c}_mean_error"].mean()) for c in ("CM", "MM", "LT")}
    else:
        task, train, test, public = state_split(state)
        runs = pl.read_csv(RESULTS / "other_state_check.csv").filter(
            (pl.col("state") == state) & (pl.col("variant") == "none") & (pl.col("eps") == epsilon)
        ).sort("date").unique("seed", keep="last")
        if runs.is_empty():
            msg = f"no run without a public table for {state} at ε = {epsilon} in other_state_check.csv"
            raise ValueError(msg)
        none = {c: float(runs[c].mean()) for c in ("CM", "MM", "LT")}
    categorical = [c for c, spec in task.domain.items() if isinstance(spec, list)]
    numeric = [c for c in task.domain if c not in categorical]
    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    encoded = read_public(open_public(public, task.domain, list(train.columns)), domain)
    return ProbeSetup(train, test, task, task.labels[0], categorical, numeric, categorical + numeric, train.height,
                      domain, public, sampling_order(encoded.codes, encoded.numerics, domain), none)


def probe_codes(setup: ProbeSetup) -> tuple[dict, dict]:
    """(CA's training rows, the public rows) as ``{column: (int cell per row, number of cells)}``:
    categories by index, numerics on :data:`~polars_rap.public.margins.NUMERIC_CELLS` equal cells
    of their bounds and a null cell (:func:`~bench.public_rake_oracle._codes`)."""
    from polars_rap.public.margins import NUMERIC_CELLS

    from bench.public_rake_oracle import _codes

    return tuple(_codes(frame, setup.task.domain, setup.categorical, setup.numeric, NUMERIC_CELLS)
                 for frame in (setup.train, setup.public))


def write_markdown(name: str, title: str, setting: str, frame, findings: str) -> None:
    """``bench/results/<name>.md``: the heading ``title`` (and the probe's path), the ``setting``
    paragraph, the table of ``frame`` (a Polars frame) and ``findings``."""
    from bench.run import table_markdown

    lines = [f"# {title} (bench/{name}.py)", "", setting, "", table_markdown(frame), "", findings, ""]
    (RESULTS / f"{name}.md").write_text("\n".join(lines))


def shares(cells: np.ndarray, size: int, weights: np.ndarray | None = None) -> np.ndarray:
    """float64[size] summing to 1: the share of each of ``size`` cells among ``cells`` (int per
    row), each row counted with its ``weights`` (1 without)."""
    counts = np.bincount(cells, weights=weights, minlength=size)
    return counts / counts.sum()


def main() -> int:
    import polars as pl

    from polars_rap.privacy.accounting import rho_from_epsilon_delta
    from polars_rap.public.reweight import rake
    from polars_rap.public.shrinkage import shrunk_margin

    from bench.public_prior import public_table
    from bench.public_rake_oracle import _codes
    from bench.run import table_markdown

    setup = probe_setup(0.25)
    train, test, task, label, domain, public = \
        setup.train, setup.test, setup.task, setup.label, setup.domain, setup.public
    categorical, numeric, columns, n, none, order = \
        setup.categorical, setup.numeric, setup.columns, setup.n, setup.none, setup.order
    rho = rho_from_epsilon_delta(0.25, 1.0 / n**2)

    def score(weights: np.ndarray, along: np.ndarray, rng) -> list[float]:
        return drawn_scores(public, weights, along, train, test, domain, label, rng)

    def ratios(mean) -> dict:
        return {**{f"{c} (x none)": f"{m:.6f} ({m / none[c]:.2f}x)" for c, m in zip(("CM", "MM", "LT"), mean)},
                "macro F1": round(float(mean[3]), 4)}

    def measured(n_cells: int, weight: float, label_weight: float, share: float, shrink: str,
                 exact: str | None = None) -> np.ndarray:
        """CM, MM, LT, macro F1 (means of DRAWS): the public rows raked to margins measured as the
        arguments say (``exact``: the one column whose true margin replaces its measurement)."""
        true_cells = _codes(train, task.domain, categorical, numeric, n_cells)
        public_cells = _codes(public, task.domain, categorical, numeric, n_cells)
        weights = np.array([weight if c in numeric else label_weight if c == label else 1.0 for c in columns])
        rng = np.random.default_rng(100)
        scores = []
        for _ in range(DRAWS):
            targets = []
            for c, w in zip(columns, weights, strict=True):
                truth, prior = shares(*true_cells[c]), shares(*public_cells[c])
                sigma = np.sqrt(2.0) / n / np.sqrt(2 * rho * share * w / weights.sum())
                noisy = truth + rng.normal(0.0, sigma, len(truth))
                if shrink == "true" or c == exact:
                    target = truth
                elif shrink == "js":
                    target = _james_stein(noisy, sigma, prior)
                elif shrink == "eb":
                    target = shrunk_margin(noisy, sigma, prior)
                else:
                    target = np.clip(noisy, 0, None) / np.clip(noisy, 0, None).sum()
                targets.append(target)
            scores.append(score(rake([public_cells[c][0] for c in columns], targets), order, rng))
        return np.mean(scores, axis=0)

    rows = []
    for name, n_cells, weight, label_weight, share, shrink in VARIANTS:
        rows.append({"targets": name, "numeric cells": n_cells, "numeric weight": weight, "label weight": label_weight,
                     "share": share, **ratios(measured(n_cells, weight, label_weight, share, shrink))})
        print(rows[-1], flush=True)

    # which margin's noise costs most: each column's true margin in place of its measurement in turn
    attribution = []
    for exact in (None, *columns):
        attribution.append({"true margin of": exact or "(none: every margin measured)",
                            **ratios(measured(8, 4.0, 1.0, 0.8, "eb", exact))})
        print(attribution[-1], flush=True)

    # the draw's order, on CA's true margins (8 numeric cells)
    true_cells = _codes(train, task.domain, categorical, numeric, 8)
    public_cells = _codes(public, task.domain, categorical, numeric, 8)
    weights = rake([public_cells[c][0] for c in columns], [shares(*true_cells[c]) for c in columns])
    orders = []
    for name, along in (("the table's own", lambda rng: np.arange(public.height)),
                        ("random", lambda rng: rng.permutation(public.height)),
                        ("sampling_order (labels, numeric cells, blocks)", lambda rng: order)):
        rng = np.random.default_rng(100)
        mean = np.mean([score(weights, along(rng), rng) for _ in range(DRAWS)], axis=0)
        orders.append({"order": name, **ratios(mean)})
        print(orders[-1], flush=True)

    # the margins' check: a public table's associations against none, on CA's true margins
    cells = _codes(train, task.domain, categorical, numeric, 8)
    features = [c for c in categorical if c != label]
    pairs = list(itertools.combinations(features, 2))

    def table(codes: dict, a: str, b: str, weights: np.ndarray) -> np.ndarray:
        (xa, ka), (xb, kb), (y, ky) = codes[a], codes[b], codes[label]
        return np.bincount((xa * kb + xb) * ky + y, weights=weights, minlength=ka * kb * ky) / weights.sum()

    truth = {p: table(cells, *p, np.ones(n)) for p in pairs}
    size = sum(t.size for t in truth.values())
    margins = {c: shares(*cells[c]) for c in columns}
    independent = sum(np.abs(np.einsum("i,j,k->ijk", margins[a], margins[b], margins[label]).ravel()
                             - truth[(a, b)]).sum() for a, b in pairs) / size
    check = [{"rows": "every column independent, CA's true margins", "CM mean error": f"{independent:.6f}"}]
    for kind, name in (("matched", "the other states' rows"), ("mismatched", "Puerto Rico's rows")):
        other = _codes(public_table(kind, train.columns), task.domain, categorical, numeric, 8)
        weights = rake([other[c][0] for c in columns], [margins[c] for c in columns])
        error = sum(np.abs(table(other, a, b, weights) - truth[(a, b)]).sum() for a, b in pairs) / size
        check.append({"rows": f"{name} raked to CA's true margins", "CM mean error": f"{error:.6f}"})

    lines = ["# Raking the other states' rows to measured one-way margins (bench/public_margins_probe.py)", "",
             f"acs-income-CA, ε = 0.25 (δ = 1/n²), {DRAWS} noise draws a row; ratios to polars-rap's default "
             f"without a public table at ε = 0.25 (headline.csv, 3 seeds: CM {none['CM']:.6f}, MM {none['MM']:.5f}, "
             f"LT {none['LT']:.5f}). Share: of the whole budget. Run {time.strftime('%Y-%m-%d')}.", "",
             table_markdown(pl.DataFrame(rows)), "",
             "## Which margin's noise costs most (empirical Bayes, 8 numeric cells, numeric weight 4, label weight 1, "
             "share 0.8; one column's true margin in place of its measurement)", "",
             table_markdown(pl.DataFrame(attribution)), "",
             "## The order of the systematic draw (the other states' rows raked to CA's true margins)", "",
             table_markdown(pl.DataFrame(orders)), "",
             "## The margins' check: the public table's associations or none (CM workload, exact weights)", "",
             table_markdown(pl.DataFrame(check))]
    (RESULTS / "public_margins_probe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
