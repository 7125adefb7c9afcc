"""Offline diagnostics of one rap++ fit (the headline split, defaults, one seed).

    python -m bench.diagnostics cm acs-income-CA --epsilon 1 --seed 0
    python -m bench.diagnostics nulls acs-income-CA --epsilon 1 --seed 0
    python -m bench.diagnostics numeric acs-income-CA --epsilon 1 --seed 0
    python -m bench.diagnostics mediation acs-income-CA adult   # no fit; writes bench/results/mediation_oracle.md
    python -m bench.diagnostics ties acs-income-CA adult        # no fit; writes bench/results/numeric_ties.md

``cm``: each class-conditional 3-way table's mean cell error of the synthetic rows beside that
of conditional independence given the label built from the *true* feature x label margins
(what a model that never measured the table's interaction could reach at best).
``numeric``: per numeric column, the KS distance and where it is reached, the most common values
real vs synthetic, and the share of relaxed rows pinned at each bound by the projection's
clipping; then the relaxed rows' workload errors before and after rounding integer columns (what
decoding's rounding costs, without category sampling).
``nulls``: the relaxed rows' expected MM/LT errors under the kernels' semantics (a numeric
counts whatever its null indicator) and under the decoded semantics (a row is null with its
indicator's probability, and a null numeric counts as scaled 0, as ``encode`` puts it).
``ties``: logistic regression's macro F1 (the suite's) trained on the real training rows with
some ties broken by shuffling columns within each label value: what a synthetic table that
kept every other relation but those would lose at best.
All read the real training rows: diagnostics for the bench, never part of a release.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from bench.run import prepare_dataset


def fit(name: str, epsilon: float, seed: int):
    import polars_rap

    train, test, task = prepare_dataset(name, None)
    result = polars_rap.synthesize(train, epsilon=epsilon, delta=1.0 / train.height**2, domain=task.domain,
                                   labels=task.labels, seed=seed, progress=False, rounds_mm=0)
    return train, task, result


def cm_tables(train: pl.DataFrame, synthetic: pl.DataFrame, task) -> pl.DataFrame:
    """One row per (feature a, feature b): cells, the synthetic rows' mean cell error and the
    conditional-independence oracle's, over a x b x label (nulls as their own category)."""
    label = task.labels[0]
    features = [k for k, v in task.domain.items() if k != label and not isinstance(v, (tuple, dict))]
    features += [f"{k}_null" for k, v in task.domain.items() if isinstance(v, dict) and v.get("nullable")]

    def prepare(frame: pl.DataFrame) -> pl.DataFrame:
        nulls = [pl.col(c.removesuffix("_null")).is_null().alias(c) for c in features if c.endswith("_null")]
        return frame.with_columns(nulls).select(pl.col(c).cast(pl.String).fill_null("<null>") for c in [*features, label])

    real, synth = prepare(train), prepare(synthetic)
    values = {c: sorted(set(real[c].to_list()) | set(synth[c].to_list())) for c in [*features, label]}

    def table(frame: pl.DataFrame, a: str, b: str) -> np.ndarray:
        counts = {(r[a], r[b], r[label]): r["len"] for r in frame.group_by(a, b, label).len().iter_rows(named=True)}
        cube = [[[counts.get((x, y, z), 0) for z in values[label]] for y in values[b]] for x in values[a]]
        return np.asarray(cube, dtype=np.float64) / frame.height

    rows = []
    for a, b in itertools.combinations(features, 2):
        true, fitted = table(real, a, b), table(synth, a, b)
        p_label, p_a, p_b = true.sum((0, 1)), true.sum(1), true.sum(0)
        independent = p_a[:, None, :] * p_b[None, :, :] / np.where(p_label > 0, p_label, 1.0)
        rows.append({"a": a, "b": b, "cells": true.size, "error": np.abs(true - fitted).mean(),
                     "independence_error": np.abs(true - independent).mean()})
    return pl.DataFrame(rows).sort("cells", descending=True)


def _suite_workload(train: pl.DataFrame, task, classes: tuple[str, ...]):
    """(domain, CPU backend, the suite's evaluation workload of ``classes``, its true answers on
    ``train``): what the diagnostics of the relaxed rows compare against."""
    from polars_rap import kernels
    from polars_rap.schema.domain import Domain
    from polars_rap.schema.encoding import encode
    from polars_rap.quality.evaluation import _benchmark_workload

    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    cpu = kernels.get_backend("cpu")
    queries = _benchmark_workload(domain, 0, classes, 20_000, 200_000)
    encoded = encode(train.select(domain.names), domain)
    return domain, cpu, queries, cpu.answers_exact(encoded.codes, encoded.numerics, queries)


def null_semantics(train: pl.DataFrame, relaxed: np.ndarray, task) -> pl.DataFrame:
    """MM/LT errors of the relaxed rows' expected answers, kernel vs decoded semantics."""
    from polars_rap.schema.encoding import block_slices
    from polars_rap.quality.evaluation import _errors_by_class

    domain, cpu, queries, true = _suite_workload(train, task, ("MM", "LT"))
    X = np.asarray(relaxed, dtype=np.float32)
    kernel = cpu.answers_relaxed(X, queries, np.inf).astype(np.float64)
    slices = block_slices(domain)
    labels = [slices[i] for i, block in enumerate(domain.blocks) if block.is_label]
    nullable = [j for j, spec in enumerate(domain.numeric_columns) if spec.nullable]
    if len(nullable) != 1 or not labels:
        msg = "this diagnostic handles one nullable numeric column and class-conditional queries"
        raise ValueError(msg)
    j = nullable[0]
    indicator = slices[domain.block_index(domain.numeric_columns[j].name, indicator=True)]
    probs = np.clip(X[:, indicator], 0.0, None)
    q = probs[:, 1] / probs.sum(axis=1)
    present, null = X.copy(), X.copy()
    null[:, domain.n_categorical_coords + j] = 0.0
    for label in labels:  # every query has one label factor: weigh each row's two states by it
        present[:, label] *= (1.0 - q)[:, None]
        null[:, label] *= q[:, None]
    decoded = (cpu.answers_relaxed(present, queries, np.inf).astype(np.float64)
               + cpu.answers_relaxed(null, queries, np.inf).astype(np.float64))
    both = [_errors_by_class(queries, np.abs(true - kernel)).with_columns(pl.lit("kernel").alias("semantics")),
            _errors_by_class(queries, np.abs(true - decoded)).with_columns(pl.lit("decoded").alias("semantics"))]
    return pl.concat(both)


def numeric_columns(train: pl.DataFrame, synthetic: pl.DataFrame, relaxed: np.ndarray, task,
                    worst: int = 3, top: int = 5) -> pl.DataFrame:
    """One row per numeric column: KS distance, the ``worst`` values where the real and
    synthetic CDFs differ most (value, real CDF, synthetic CDF), the ``top`` most common values
    of each (value, share), and the share of relaxed rows at each bound (mapped 0 or 1)."""
    from polars_rap.schema.domain import Domain

    domain = Domain.from_mapping(train.schema, task.domain, task.labels)
    rows = []
    for j, spec in enumerate(domain.numeric_columns):
        real = np.sort(train[spec.name].drop_nulls().cast(pl.Float64).to_numpy())
        fake = np.sort(synthetic[spec.name].drop_nulls().cast(pl.Float64).to_numpy())
        grid = np.unique(np.concatenate([real, fake]))
        gap = (np.searchsorted(real, grid, side="right") / real.size
               - np.searchsorted(fake, grid, side="right") / fake.size)
        order = np.argsort(-np.abs(gap))[:worst]
        real_cdf = np.searchsorted(real, grid[order], side="right") / real.size
        coordinate = relaxed[:, domain.n_categorical_coords + j]

        def common(frame: pl.DataFrame) -> list:
            counts = frame[spec.name].drop_nulls().value_counts(normalize=True).sort("proportion", descending=True)
            return [(float(v), round(float(p), 3)) for v, p in counts.head(top).rows()]

        rows.append({"column": spec.name, "ks": float(np.abs(gap).max()),
                     "worst (value, real, synthetic)": str([(float(grid[k]), round(float(r), 3), round(float(r - gap[k]), 3))
                                                            for k, r in zip(order, real_cdf, strict=True)]),
                     "real top": str(common(train)), "synthetic top": str(common(synthetic)),
                     "relaxed at lower": float(np.mean(coordinate <= 0.0)),
                     "relaxed at upper": float(np.mean(coordinate >= 1.0))})
    return pl.DataFrame(rows)


def rounding_cost(train: pl.DataFrame, relaxed: np.ndarray, task) -> pl.DataFrame:
    """CM/MM/LT errors of the relaxed rows' expected answers, as fitted and with integer columns
    rounded as decoding rounds them: what rounding alone costs."""
    from polars_rap.decode.decoding import decoded_values
    from polars_rap.quality.evaluation import _errors_by_class
    from polars_rap.schema.transforms import to_unit

    domain, cpu, queries, true = _suite_workload(train, task, ("CM", "MM", "LT"))
    rounded = np.array(relaxed, dtype=np.float64)
    for j, spec in enumerate(domain.numeric_columns):
        if spec.is_integer:
            column = domain.n_categorical_coords + j
            rounded[:, column] = to_unit(decoded_values(rounded[:, column], spec), spec)
    parts = []
    for name, rows in (("relaxed", relaxed), ("rounded", rounded)):
        expected = cpu.answers_relaxed(np.asarray(rows, dtype=np.float32), queries, np.inf).astype(np.float64)
        parts.append(_errors_by_class(queries, np.abs(true - expected)).with_columns(pl.lit(name).alias("rows")))
    return pl.concat(parts)


def mediation_oracle(train: pl.DataFrame, task) -> pl.DataFrame:
    """One row per (feature a, feature b): cells and the mean cell error of conditional
    independence given the label, of the mediated table through the rule's c, through the
    best c (oracle), and the mutual information I(a; b | label) (nats), all from true tables."""
    from polars_rap.fit.independence_prior import conditional_mutual_information, mediated_interaction

    label = task.labels[0]
    features = [k for k, v in task.domain.items() if k != label and not isinstance(v, (tuple, dict))]
    frame = train.select(pl.col(c).cast(pl.String).fill_null("<null>") for c in [*features, label])
    codes = {c: np.unique(frame[c].to_numpy(), return_inverse=True)[1] for c in frame.columns}
    sizes = {c: int(codes[c].max()) + 1 for c in frame.columns}

    def table(a: str, b: str) -> np.ndarray:
        shape = (sizes[a], sizes[b], sizes[label])
        flat = np.ravel_multi_index((codes[a], codes[b], codes[label]), shape)
        return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape) / frame.height

    tables = {(a, b): table(a, b) for a, b in itertools.permutations(features, 2)}
    strength = {key: conditional_mutual_information(t) for key, t in tables.items()}
    rows = []
    for a, b in itertools.combinations(features, 2):
        true = tables[a, b]
        independent = conditional_independence_of(true)
        mediated = {c: mediated_interaction(tables[a, c], tables[b, c]) for c in features if c not in (a, b)}
        errors = {c: float(np.abs(true - m).mean()) for c, m in mediated.items()}
        rule = max(mediated, key=lambda c: min(strength[a, c], strength[b, c]))
        rows.append({"a": a, "b": b, "cells": true.size, "independence_error": float(np.abs(true - independent).mean()),
                     "mediated_error": errors[rule], "mediator": rule, "oracle_error": min(errors.values()),
                     "information": strength[a, b]})
    return pl.DataFrame(rows).sort("information", descending=True)


def conditional_independence_of(cube: np.ndarray) -> np.ndarray:
    """float64[a, b, r]: the independence fit of ``cube``'s first two axes given the third."""
    from polars_rap.fit.independence_prior import conditional_independence

    return conditional_independence(cube.ravel(), cube.shape).reshape(cube.shape)


def write_mediation(names: Sequence[str]) -> Path:
    """``bench/results/mediation_oracle.md``: per dataset, the cell-weighted mean errors of
    :func:`mediation_oracle` and its ten most associated pairs."""
    from bench.run import RESULTS

    lines = ["# Inferring a 3-way table from the others, with true tables (bench.diagnostics mediation)", "",
             "Mean cell error over every (a, b, label) table, weighted by cells: conditional independence given "
             "the label (independence_prior=True with noiseless margins), the mediated table through the c of "
             "the prior's rule (independence_prior=\"mediated\" with every other table measured without noise) "
             "and through the best c (an oracle). The ceiling of each prior, not what noisy runs reach.", ""]
    for name in names:
        train, _, task = prepare_dataset(name, None)
        tables = mediation_oracle(train, task)
        cells = tables["cells"]
        mean = {c: float((tables[c] * cells).sum() / cells.sum()) for c in ("independence_error", "mediated_error",
                                                                             "oracle_error")}
        lines += [f"## {name} ({tables.height} tables)", "",
                  f"independence given the label {mean['independence_error']:.6f}; mediated (rule) "
                  f"{mean['mediated_error']:.6f} ({mean['independence_error'] / mean['mediated_error']:.2f}x lower); "
                  f"mediated (oracle c) {mean['oracle_error']:.6f}; the rule's c is better than independence on "
                  f"{int((tables['mediated_error'] < tables['independence_error']).sum())} of {tables.height} tables.",
                  "", "| a | b | cells | I(a; b given label) | independence | mediated (rule) | mediator | oracle |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r['a']} | {r['b']} | {r['cells']} | {r['information']:.3f} | {r['independence_error']:.6f} | "
                  f"{r['mediated_error']:.6f} | {r['mediator']} | {r['oracle_error']:.6f} |"
                  for r in tables.head(10).iter_rows(named=True)]
        lines.append("")
    path = RESULTS / "mediation_oracle.md"
    path.write_text("\n".join(lines))
    return path


def shuffled_within_label(frame: pl.DataFrame, label: str, groups: Sequence[Sequence[str]],
                          rng: np.random.Generator) -> pl.DataFrame:
    """``frame`` with each group of columns permuted within each label value, one permutation
    per group (a group's own joint distribution kept, its ties to the other columns broken)."""
    parts = []
    for _, part in frame.group_by(label, maintain_order=True):
        for group in groups:
            order = rng.permutation(part.height)
            part = part.with_columns([part[c].gather(order) for c in group])
        parts.append(part)
    return pl.concat(parts)


def write_ties(names: Sequence[str], seeds: Sequence[int] = (0, 1, 2)) -> Path:
    """``bench/results/numeric_ties.md``: per dataset, the macro F1 of the suite's logistic
    regression trained on the real rows, and on them with the numeric columns shuffled jointly
    within each label value (their ties to the categorical features broken), each numeric
    column shuffled alone, and each categorical feature shuffled alone (mean over ``seeds``)."""
    from bench.run import RESULTS
    from polars_rap.quality import evaluation
    from polars_rap.schema.domain import Domain

    lines = ["# What the ties between columns are worth to the suite's classifier (bench.diagnostics ties)", "",
             "Macro F1 of logistic regression trained on the real training rows, some columns shuffled within "
             "each label value (mean of 3 permutations), tested on the real test rows. The CM + LT workload "
             "measures feature x feature x label tables and numeric thresholds x label: nothing in it ties a "
             "numeric column to a categorical feature (what the 'numerics shuffled jointly' column loses).", "",
             "| dataset | real | numerics shuffled jointly | each numeric shuffled | each categorical shuffled |",
             "|---|---|---|---|---|"]
    for name in names:
        train, test, task = prepare_dataset(name, None)
        label = task.labels[0]
        domain = Domain.from_mapping(train.schema, task.domain, task.labels)
        numeric = [spec.name for spec in domain.numeric_columns]
        categorical = [c for c in train.columns if c not in numeric and c not in task.labels]

        def f1(frame: pl.DataFrame) -> float:
            return float(evaluation.ml_utility_for_domain(frame, test, label, domain)["macro_f1"])

        variants = [[numeric], [[c] for c in numeric], [[c] for c in categorical]]
        figures = [f1(train)] + [float(np.mean([f1(shuffled_within_label(train, label, groups,
                                                                         np.random.default_rng(seed)))
                                                for seed in seeds])) for groups in variants]
        lines.append(f"| {name} | " + " | ".join(f"{x:.4f}" for x in figures) + " |")
    path = RESULTS / "numeric_ties.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("cm", "nulls", "numeric", "mediation", "ties"))
    parser.add_argument("dataset", nargs="+")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.what in ("mediation", "ties"):
        print(f"-> {(write_mediation if args.what == 'mediation' else write_ties)(args.dataset)}")
        return 0
    if len(args.dataset) > 1:
        parser.error(f"{args.what} takes one dataset")
    train, task, result = fit(args.dataset[0], args.epsilon, args.seed)
    with pl.Config(tbl_rows=30, tbl_width_chars=160):
        if args.what == "cm":
            tables = cm_tables(train, result.data, task)
            cells = tables["cells"]
            print(tables.head(20))
            print(f"mean cell error: synthetic {(tables['error'] * cells).sum() / cells.sum():.6f}, "
                  f"independence given the label {(tables['independence_error'] * cells).sum() / cells.sum():.6f}; "
                  f"independence better on {(tables['independence_error'] < tables['error']).sum()} of {tables.height} tables")
        elif args.what == "numeric":
            with pl.Config(fmt_str_lengths=200):
                print(numeric_columns(train, result.data, result.relaxed, task))
            print(rounding_cost(train, result.relaxed, task))
        else:
            print(null_semantics(train, result.relaxed, task))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
