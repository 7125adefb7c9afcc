"""Where a synthetic table's macro F1 is lost (issue #20): margins or interactions.

    python -m bench.f1_diagnosis acs-income-CA adult --epsilon 1 --seeds 0 1 2
    python -m bench.f1_diagnosis acs-income-CA adult --epsilon 1 --seeds 0 1 2 \
        --peer aim-replace-one-fixed-sampler --peer-seeds 0      # + AIM fits (20-25 min each)
    python -m bench.f1_diagnosis acs-income-CA --peer-data aim=PATH.parquet   # a peer's saved rows

The suite's classifier (logistic regression on one-hot categories and scaled numerics,
:func:`polars_rap.quality.evaluation.ml_utility`) reads a table through how the label depends on the
features. A table built as *naive Bayes* (every column drawn on its own given the label) keeps
exactly the feature x label margins and nothing of the features' interactions, so comparing a
synthetic table with naive-Bayes tables splits its F1 gap to the real rows in two:

- ``synthetic``: the table as released;
- ``synthetic NB``: its own columns permuted within each label (its margins, no interactions);
- ``synthetic NB, true categorical margins``: the same with every categorical column drawn
  from the real rows of its label instead (what perfect margins would add);
- ``synthetic, real labels``: its feature rows with labels drawn from the logistic model of
  the real rows. The classifier then recovers that model whatever the feature rows' joint
  distribution (the labels are well specified for it), so this shows only that the rows cover
  the real model's support, not that their joint is right;
- ``synthetic, real margins``: its feature rows with labels drawn from the main-effects
  logistic model whose moments on them equal the real rows' ``E[x y]`` (``x`` the classifier's
  features), i.e. the real feature x label margins on the synthetic features' joint: the
  logistic fit's sufficient statistics are those moments and the features' joint, so what this
  scores below the real rows' F1 is the features' joint (binary labels only).

Beside them, for the real rows: ``real``, ``real NB`` and ``real NB, margins + noise s``
(each categorical column's label-conditional table perturbed by Gaussian noise of std ``s``
per cell, in proportion units): how much F1 margin noise alone costs. Then the relaxed rows'
sharpness per categorical block (mean largest probability) and the conditional mutual
information I(a; b | label) of the strongest pairs, real vs synthetic.

All of it reads the real training rows: a diagnostic for the bench, never part of a release.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
from sklearn.linear_model import LogisticRegression

from bench.diagnostics import shuffled_within_label
from bench.run import RESULTS, kept_notes, prepare_dataset

NOISE_STDS = (0.0005, 0.001, 0.002, 0.003)
"""Per-cell noise stds (proportion units) of the real rows' noisy naive-Bayes tables."""
REPEATS = 3
"""Draws averaged for every randomised table."""


class Task:
    """One dataset's split, label, column roles and the suite's F1 on a frame."""

    def __init__(self, name: str):
        from polars_rap.schema.domain import Domain
        from polars_rap.quality.evaluation import _feature_matrix, _union_levels

        self.name = name
        self.train, self.test, task = prepare_dataset(name, None)
        self.task = task
        self.label = task.labels[0]
        self.domain = Domain.from_mapping(self.train.schema, task.domain, task.labels)
        self.numeric = {spec.name: (spec.lower, spec.upper) for spec in self.domain.numeric_columns}
        self.categorical = [c for c in self.train.columns if c not in self.numeric and c != self.label]
        levels = {c: _union_levels(self.train, self.test, c) for c in self.categorical}
        self.features = lambda frame: _feature_matrix(frame, levels, self.numeric)
        self.y = self.train[self.label].to_numpy()

    def f1(self, frame: pl.DataFrame) -> float:
        from polars_rap.quality.evaluation import ml_utility_for_domain

        return float(ml_utility_for_domain(frame, self.test, self.label, self.domain)["macro_f1"])

    def mean_f1(self, make) -> float:
        """Mean F1 over :data:`REPEATS` tables ``make(rng)``."""
        return float(np.mean([self.f1(make(np.random.default_rng(r))) for r in range(REPEATS)]))

    def columns_from_real(self, frame: pl.DataFrame, columns: Sequence[str], rng: np.random.Generator) -> pl.DataFrame:
        """``frame`` with each of ``columns`` drawn from a real row of the same label (one
        draw per column: their ties to every other column broken, their margins the real ones)."""
        labels = frame[self.label].to_numpy()
        replaced = []
        for column in columns:
            rows = np.empty(frame.height, dtype=np.int64)
            for value in np.unique(labels):
                mask = labels == value
                rows[mask] = rng.choice(np.flatnonzero(self.y == value), mask.sum())
            replaced.append(self.train[column].gather(rows))
        return frame.with_columns(replaced)

    def naive_bayes(self, frame: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
        singles = [[c] for c in self.categorical + list(self.numeric)]
        return shuffled_within_label(frame, self.label, singles, rng)

    def noisy_naive_bayes(self, std: float, rng: np.random.Generator) -> pl.DataFrame:
        """Naive Bayes from the real rows with every categorical column's label-conditional
        table perturbed by N(0, std^2) per cell (clipped at 0); numerics drawn per label."""
        n = self.train.height
        labels = self.y[rng.choice(n, n)]
        frame = self.columns_from_real(self.train.with_columns(pl.Series(self.label, labels)),
                                       list(self.numeric), rng)
        columns = []
        for column in self.categorical:
            values = self.train[column]
            categories = values.unique(maintain_order=True)
            codes = values.to_frame().join(categories.to_frame().with_row_index("code"), on=column,
                                           how="left", nulls_equal=True)["code"].to_numpy()
            drawn = np.empty(n, dtype=np.int64)
            for value in np.unique(labels):
                cell = np.bincount(codes[self.y == value], minlength=len(categories)) / n
                cell = np.clip(cell + rng.normal(0.0, std, cell.shape), 0.0, None)
                mask = labels == value
                drawn[mask] = rng.choice(len(categories), mask.sum(), p=cell / cell.sum())
            columns.append(categories.gather(drawn))
        return frame.with_columns(columns).select(self.train.columns)

    def real_labels(self, frame: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
        """``frame``'s feature rows with labels drawn from the real rows' logistic model."""
        model = getattr(self, "_real_model", None)
        if model is None:
            model = self._real_model = LogisticRegression(max_iter=5000).fit(self.features(self.train), self.y)
        p = model.predict_proba(self.features(frame))
        drawn = (rng.random(frame.height)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
        return frame.with_columns(pl.Series(self.label, model.classes_[drawn]).cast(self.train[self.label].dtype))

    def real_margin_labels(self, frame: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
        """``frame``'s feature rows with binary labels drawn from ``sigmoid(b0 + x b)``, ``(b0, b)``
        solving ``mean_frame[sigmoid(b0 + x b) (1, x)] = mean_real[[y = 1] (1, x)]`` (the
        minimiser of ``mean_frame[log(1 + exp(z))] - b . m_real``, a ridge of 1e-6 for
        uniqueness)."""
        from scipy.optimize import minimize

        classes = np.unique(self.y)
        if len(classes) != 2:
            raise ValueError(f"{self.name}: real margins need a binary label, not {len(classes)} classes")
        design = np.column_stack([np.ones(frame.height), self.features(frame)])
        real = np.column_stack([np.ones(self.train.height), self.features(self.train)])
        target = real.T @ (self.y == classes[1]) / self.train.height

        def objective(b):
            z = design @ b
            loss = np.mean(np.logaddexp(0.0, z)) - b @ target + 1e-6 * b @ b
            return loss, design.T @ (0.5 * (1.0 + np.tanh(0.5 * z))) / len(z) - target + 2e-6 * b

        b = minimize(objective, np.zeros(design.shape[1]), jac=True, method="L-BFGS-B",
                     options={"maxiter": 5000}).x
        p = 0.5 * (1.0 + np.tanh(0.5 * (design @ b)))
        drawn = classes[(rng.random(frame.height) < p).astype(int)]
        return frame.with_columns(pl.Series(self.label, drawn).cast(self.train[self.label].dtype))

    def conditional_mi(self, frame: pl.DataFrame, a: str, b: str) -> float:
        """I(a; b | label) of ``frame``'s rows, in nats (nulls a value of their own)."""
        label = self.label
        cube = frame.group_by([a, b, label]).len()
        for keys in ([a, label], [b, label], [label]):
            part = frame.group_by(keys).len().rename({"len": "len_" + "_".join(keys)})
            cube = cube.join(part, on=keys, how="left", nulls_equal=True)
        p = cube["len"].to_numpy() / frame.height
        ratio = (cube["len"] * cube[f"len_{label}"] / (cube[f"len_{a}_{label}"] * cube[f"len_{b}_{label}"])).to_numpy()
        return float(np.sum(p * np.log(ratio)))


def decomposition(task: Task, frame: pl.DataFrame) -> dict[str, float]:
    """The five F1 figures of a synthetic ``frame`` (module docstring)."""
    return {
        "synthetic": task.f1(frame),
        "synthetic NB": task.mean_f1(lambda rng: task.naive_bayes(frame, rng)),
        "synthetic NB, true categorical margins": task.mean_f1(
            lambda rng: task.columns_from_real(task.naive_bayes(frame, rng), task.categorical, rng)),
        "synthetic, real labels": task.mean_f1(lambda rng: task.real_labels(frame, rng)),
        "synthetic, real margins": task.mean_f1(lambda rng: task.real_margin_labels(frame, rng)),
    }


def sharpness(result) -> dict[str, float]:
    """Mean largest probability of each categorical block over the relaxed rows."""
    out, start = {}, 0
    for block in result.domain.blocks:
        probabilities = result.relaxed[:, start:start + block.n_codes]
        start += block.n_codes
        if not block.indicator:
            out[block.source] = float(probabilities.max(axis=1).mean())
    return out


def fit_default(task: Task, epsilon: float, seed: int):
    import polars_rap

    return polars_rap.synthesize(task.train, epsilon=epsilon, delta=1.0 / task.train.height**2,
                                 domain=task.task.domain, labels=task.task.labels, seed=seed, progress=False)


def _table(rows: list[dict], columns: Sequence[str]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = [f"{row[c]:.4f}" if isinstance(row[c], float) else str(row[c]) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def report(names: Sequence[str], epsilon: float, seeds: Sequence[int], peer_data: dict[str, list[Path]],
           top_pairs: int = 8) -> list[str]:
    lines = [f"# Where macro F1 is lost (bench.f1_diagnosis, eps = {epsilon:g}, seeds {list(seeds)})", "",
             __doc__.split("\n\n", 2)[2].split("All of it")[0].strip(), ""]
    for name in names:
        task = Task(name)
        real = {"real": task.f1(task.train), "real NB": task.mean_f1(lambda rng: task.naive_bayes(task.train, rng))}
        for std in NOISE_STDS:
            real[f"real NB, margins + noise {std:g}"] = task.mean_f1(lambda rng, s=std: task.noisy_naive_bayes(s, rng))
        lines += [f"## {name}", "", "Real rows (mean of draws where randomised):", ""]
        lines += _table([{"table": k, "macro F1": v} for k, v in real.items()], ["table", "macro F1"])
        rows, sharp, pairs = [], [], None
        for seed in seeds:
            result = fit_default(task, epsilon, seed)
            rows.append({"source": "rap++", "seed": seed, **decomposition(task, result.data)})
            sharp.append(sharpness(result))
            if pairs is None:
                candidates = [(task.conditional_mi(task.train, a, b), a, b)
                              for a, b in itertools.combinations(task.categorical, 2)]
                pairs = sorted(candidates, reverse=True)[:top_pairs]
                frames = {"real": task.train}
            frames[f"rap++ seed {seed}"] = result.data
        for source, paths in peer_data.items():
            for i, path in enumerate(paths):
                frame = pl.read_parquet(path).select(task.train.columns)
                rows.append({"source": source, "seed": i, **decomposition(task, frame)})
                frames[f"{source} {i}"] = frame
        columns = ["source", "seed", *[k for k in rows[0] if k not in ("source", "seed")]]
        lines += ["", "Synthetic tables:", ""] + _table(rows, columns)
        mean_sharp = {k: float(np.mean([s[k] for s in sharp])) for k in sharp[0]}
        lines += ["", "Relaxed rows, mean largest probability per block (rap++, mean over seeds):", "",
                  ", ".join(f"{k} {v:.2f}" for k, v in mean_sharp.items()), "",
                  f"Conditional mutual information I(a; b | label) of the {top_pairs} strongest real pairs (nats):", ""]
        cmi_rows = [{"pair": f"{a} x {b}", **{key: task.conditional_mi(frame, a, b) for key, frame in frames.items()}}
                    for _, a, b in pairs]
        lines += _table(cmi_rows, ["pair", *frames])
        lines.append("")
    return lines


def fit_peer(mechanism: str, name: str, epsilon: float, seed: int, bins: int, folder: Path) -> Path:
    """Fit ``mechanism`` (:data:`bench.peers.MECHANISMS`) on ``name``'s training rows as the suite
    does (its venv, the binned public domain, delta = 1/n^2) and save its rows under ``folder``."""
    from bench.peers import ensure_env_for, run_peer

    train, _, task = prepare_dataset(name, None)
    ensure_env_for(mechanism)
    result = run_peer(mechanism, train, task.domain, epsilon=epsilon, delta=1.0 / train.height**2, seed=seed,
                      bins=bins, rows=train.height, time_cap_s=3600, workdir=folder / f"work_{seed}")
    if result.status != "ok":
        raise RuntimeError(f"{mechanism} on {name} (seed {seed}): {result.status}: {result.message}")
    path = folder / f"{mechanism}_{name}_{epsilon:g}_{seed}.parquet"
    result.data.write_parquet(path)
    print(f"{mechanism} seed {seed}: {result.seconds:.0f} s -> {path}", flush=True)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="+")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--peer-data", nargs="*", default=[], metavar="NAME=PATH",
                        help="a peer's synthetic rows of the first dataset (Parquet), decomposed the same way")
    parser.add_argument("--peer", help="a peer mechanism to fit on the first dataset and decompose too")
    parser.add_argument("--peer-seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--peer-bins", type=int, default=30, help="the suite's bins for the first dataset")
    parser.add_argument("--out", type=Path, default=RESULTS / "f1_diagnosis.md")
    args = parser.parse_args(argv)
    peers: dict[str, list[Path]] = {}
    if args.peer:
        folder = Path(tempfile.mkdtemp(prefix="f1_diagnosis_"))
        peers[args.peer] = [fit_peer(args.peer, args.dataset[0], args.epsilon, seed, args.peer_bins, folder)
                            for seed in args.peer_seeds]
    for item in args.peer_data:
        key, _, path = item.partition("=")
        peers.setdefault(key, []).append(Path(path))
    lines: list[str] = []
    for i, name in enumerate(args.dataset):
        part = report([name], args.epsilon, args.seeds, peers if i == 0 else {})
        lines += part if i == 0 else part[4:]
    args.out.write_text("\n".join(lines) + "\n" + kept_notes(args.out))
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
