"""Probe (issues #19, #20): relabel the default's synthetic rows with a logistic model of the
label on the features, fitted on those rows themselves (``self``) or with a public table's
conditional as an offset (``public``, acs-income-CA only: the 50 other states and PR).

For each (dataset, ε, seed): ``polars_rap.synthesize`` with the defaults (the headline suite's
split, δ = 1/n², seed), then for each variant a logistic regression of the label (binary) on
the synthetic rows' features (one-hot categories with a null slot, each numeric column in
``NUMERIC_BINS`` equal cells of its mapped ``[0, 1]`` plus a null cell, an intercept), fitted
by Newton's method on the synthetic rows' own labels with an offset ``o`` (0 for ``self``, the
public model's logit for ``public``) and a ridge ``ridge * n`` on the coefficients; every
synthetic row's label is then drawn from the fitted probability. At the optimum without ridge
the rows' feature x label margins are unchanged (the moment equations), so what moves is the
labels' dependence on several features at once: toward an additive logit (``self``) or toward
the public table's conditional tilted to the synthetic margins (``public``). Post-processing:
the synthetic rows and a public table only, no budget.

    python -m bench.label_model_probe --datasets acs-income-CA adult --epsilons 0.25 1 --seeds 0 1 2
    python -m bench.label_model_probe --table-only

Writes ``bench/results/probe_label_model.{csv,md}``; the suite's evaluation (CM, MM, LT mean
errors on the training rows, macro F1 of logistic regression on the test rows).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "probe_label_model.csv"
NUMERIC_BINS = 10
SELF_RIDGES = (1e-4, 1e-3, 1e-2)
PUBLIC_RIDGES = (1e-2, 1e-1)


def design(frame: pl.DataFrame, domain, label: str) -> tuple[np.ndarray, np.ndarray]:
    """(float64[n, 1 + d] intercept and one-hot features, int[n] label codes) of ``frame``."""
    from polars_rap.schema.encoding import encode

    encoded = encode(frame.select(domain.names), domain)
    blocks, y = [], None
    for j, column in enumerate(c for c in domain.columns if c.is_categorical):
        codes = encoded.codes[:, j]
        if column.name == label:
            y = codes
            continue
        blocks.append(np.eye(len(column.categories) + 1)[np.minimum(codes, len(column.categories))])
    for j in range(encoded.numerics.shape[1]):
        x = encoded.numerics[:, j]
        cell = np.where(np.isnan(x), NUMERIC_BINS,
                        np.minimum((np.nan_to_num(x) * NUMERIC_BINS).astype(int), NUMERIC_BINS - 1))
        blocks.append(np.eye(NUMERIC_BINS + 1)[cell])
    return np.hstack([np.ones((len(encoded.codes), 1)), *blocks]), y


def offset_fit(x: np.ndarray, offset: np.ndarray, y: np.ndarray, ridge: float, iterations: int = 30) -> np.ndarray:
    """Coefficients float64[d] of ``P(y = 1) = sigmoid(offset + x b)`` minimising the log-loss
    plus ``ridge / 2 * ||b||^2`` (Newton's method)."""
    beta = np.zeros(x.shape[1])
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-(offset + x @ beta)))
        gradient = x.T @ (p - y) + ridge * beta
        hessian = (x * (p * (1 - p))[:, None]).T @ x + ridge * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta


def run(dataset: str, epsilon: float, seeds: Sequence[int], self_ridges: Sequence[float] = SELF_RIDGES,
        public_ridges: Sequence[float] = PUBLIC_RIDGES, publics: Sequence[str] = ("matched",)) -> list[dict]:
    from sklearn.linear_model import LogisticRegression

    import polars_rap
    from polars_rap.quality import evaluation
    from polars_rap.schema.domain import Domain

    from bench.public_prior import public_table
    from bench.run import prepare_dataset

    train, test, task = prepare_dataset(dataset, None)
    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    label = task.labels[0]
    categories = list(next(c for c in domain.columns if c.name == label).categories)
    public_models = {}
    if dataset == "acs-income-CA":
        for which in publics:
            public_x, public_y = design(public_table(which, train.columns), domain, label)
            public_models[which] = LogisticRegression(max_iter=2000, C=1.0).fit(public_x, public_y)
    rows = []
    for seed in seeds:
        synthetic = polars_rap.synthesize(train, epsilon=epsilon, delta=1 / train.height**2, domain=task.domain,
                                          labels=task.labels, seed=seed, progress=False).data
        x, y = design(synthetic, domain, label)
        fits = [("self", np.zeros(len(y)), r) for r in self_ridges]
        for which, model in public_models.items():
            name = "public" if which == "matched" else f"public {which}"
            fits += [(name, model.decision_function(x), r) for r in public_ridges]
        variants = [("default", synthetic)]
        for source, offset, ridge in fits:
            beta = offset_fit(x, offset, y.astype(float), ridge * len(y))
            p = 1 / (1 + np.exp(-(offset + x @ beta)))
            drawn = (np.random.default_rng(seed).random(len(p)) < p).astype(int)
            labels = pl.Series(label, [categories[k] for k in drawn], dtype=synthetic.schema[label])
            variants.append((f"{source} ridge {ridge:g}", synthetic.with_columns(labels)))
        for name, frame in variants:
            errors = evaluation.workload_errors(train, frame, domain, seed=0, n_mixed_marginals=20_000,
                                                n_linear_thresholds=200_000)
            row = {"dataset": dataset, "eps": epsilon, "seed": seed, "variant": name,
                   **{r["query_class"]: r["mean_error"] for r in errors.iter_rows(named=True)},
                   "F1": evaluation.ml_utility_for_domain(frame, test, label, domain)["macro_f1"]}
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def table(results: pl.DataFrame) -> pl.DataFrame:
    """Mean over seeds per dataset, ε and variant, with each error's ratio to the default's."""
    means = results.group_by("dataset", "eps", "variant", maintain_order=True).agg(
        *(pl.col(m).mean() for m in ("CM", "MM", "LT", "F1")), pl.col("seed").n_unique().alias("seeds"))
    base = means.filter(pl.col("variant") == "default").select(
        "dataset", "eps", *(pl.col(m).alias(f"_{m}") for m in ("CM", "MM", "LT", "F1")))
    return (means.join(base, on=["dataset", "eps"])
            .with_columns(*((pl.col(m) / pl.col(f"_{m}")).round(3).alias(f"{m}_vs_default") for m in ("CM", "MM", "LT")),
                          (pl.col("F1") - pl.col("_F1")).round(4).alias("F1_minus_default"))
            .drop("_CM", "_MM", "_LT", "_F1").sort("dataset", "eps", maintain_order=True))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["acs-income-CA", "adult"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.25, 1.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--self-ridges", nargs="*", type=float, default=list(SELF_RIDGES))
    parser.add_argument("--public-ridges", nargs="*", type=float, default=list(PUBLIC_RIDGES))
    parser.add_argument("--publics", nargs="*", default=["matched"], choices=["matched", "mismatched"])
    parser.add_argument("--out", type=Path, default=OUT, help="the CSV the rows are appended to")
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.table_only:
        for dataset in args.datasets:
            for epsilon in args.epsilons:
                new = pl.DataFrame(run(dataset, epsilon, args.seeds, args.self_ridges, args.public_ridges,
                                       args.publics))
                old = pl.read_csv(args.out) if args.out.exists() else None
                (new if old is None else pl.concat([old, new], how="vertical_relaxed")).write_csv(args.out)
    from bench.run import table_markdown

    summary = table(pl.read_csv(args.out))
    if args.out != OUT:
        args.out.with_suffix(".md").write_text(f"# Probe: label models ({' '.join(argv or [])})\n\n"
                                               + table_markdown(summary) + "\n")
        return 0
    (RESULTS / "probe_label_model.md").write_text(
        "# Probe: labels drawn from a logistic model of the synthetic rows (bench/label_model_probe.py)\n\n"
        + __doc__.split("\n\n", 1)[1].split("    python -m")[0] + "\n" + table_markdown(summary) + "\n" + FINDINGS + "\n")
    return 0


FINDINGS = """What it showed (3 seeds each; the `default` rows equal the headline suite's `rap++` rows to the
last digit; the rows were computed by this module's code run as a scratch script before it moved
here, and `run('adult', 1.0, [0])` from here reproduces its rows bit for bit; seconds not recorded):

- **`self` is not a default.** On acs-income-CA it helps (ε = 0.25, ridge 1e-3: LT -9%, MM -5%,
  CM -2%, F1 +0.008; ε = 1, ridge 1e-4: LT -10%, MM -4%, CM +3%, F1 +0.003), but on Adult it
  loses at ε = 1 (ridge 1e-4: CM +3%, MM +3%, LT +4%; 1e-3 worse) and is mixed at 0.25 (CM -1%,
  MM +3%, LT +2%, F1 +0.003). A ridge of 1e-2 loses everywhere (it pulls the labels toward
  the base rate).
- **`public` (acs-income-CA, the 50 other states and PR as the public table) reaches #19's
  F1 target**: at ε = 0.25 with ridge 1e-2, macro F1 0.773 (real rows 0.790: 0.018 below,
  target ≤ 0.02; the default 0.748), CM -6%, MM -13%, LT -13%; with ridge 1e-1, F1 0.782,
  MM -18%, LT -15%, CM level. At ε = 1 the same prior costs CM (ridge 1e-2: +9%, 1e-1: +37%)
  while F1 rises 0.012-0.017: the measured margins are less noisy there, so the public
  conditional should weigh less, as a Bayesian prior's would. #19's CM/MM targets (half the
  default's) are not reached this way.
- A one-seed probe of the same tilt applied to the 1,000 *relaxed* rows (their label
  probabilities, before decoding) instead of the decoded rows was worse (CA, ε = 0.25, seed 0:
  `self` ridge 1e-3 MM +27%, LT +11%; `public` ridge 1e-1 F1 0.768 vs 0.783 decoded): with as
  many one-hot features (about 1,000) as relaxed rows the fit is ill-posed. Its code was not
  kept.

Since then: the `public` variant is the library's `public_use="labels"`
(`polars_rap.public.labels`: fitted on 100,000 rows decoded from the relaxed rows and applied
to every decoded block, in process, in Parquet parts and on Ray writers, kept by saved
models), its ridge 150 s² from the measured label marginals' noise std s, measured in
`public_labels.md` (`bench/public_prior.py`, the mismatched table too).
"""

if __name__ == "__main__":
    raise SystemExit(main())
