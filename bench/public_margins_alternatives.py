"""Other ways to spend ``public_use="margins"``' budget on CA, offline (issue 19).

The margins' CM at ε = 0.25 stayed above half the run without a public table. This asks whether
another split of the same budget, or other margins, would get there: CA's true margins get the
Gaussian noise a release at a share of the ε = 0.25 budget would add (δ = 1/n², L2 sensitivity
sqrt(2)/n a margin, margin i at ``rho_i``), each is pulled toward the public rows' own by the
library's :func:`~polars_rap.public.shrinkage.shrunk_margin`, the other states' rows are raked to
them and n are drawn along :func:`~polars_rap.public.reweight.sampling_order`, and the suite's
evaluation scores them (3 noise draws each). The splits:

- the library's: ``rho_i`` in proportion to its weights (1 a categorical feature,
  :data:`~polars_rap.public.margins.LABEL_WEIGHT` a label, :data:`~polars_rap.public.margins.NUMERIC_WEIGHT`
  a numeric column on :data:`~polars_rap.public.margins.NUMERIC_CELLS` cells and a null cell);
- a categorical feature's weight in proportion to the square root of its cells (the split that
  minimises the summed noise energy ``sum k_i sigma_i^2`` of margins that differ from the public
  ones beyond their noise), normalised to the same mean;
- water-filling on each margin's deviation from the public one, ``S_i = |true_i - public_i|^2``:
  ``rho_i = max(0, a sqrt(k_i) - k_i / (n^2 S_i))``, the split that minimises the summed
  James-Stein risk ``k_i sigma_i^2 S_i / (S_i + k_i sigma_i^2)``. With the true ``S_i`` it is an
  oracle no mechanism has; with ``S_i`` estimated from a first tenth measured by the library's
  weights (``max(0, |noisy - public|^2 - k sigma^2)``), the other nine tenths water-filled and the
  two parts combined by inverse variance, it is one a mechanism could run;
- each feature's margin crossed with the label instead of the one-way margins (the label's margin
  is in each), weighted as the library weights the feature.

A last table sets each feature's two-way association with the label that the public rows miss
(``|true - raked|^2`` over the feature × label cells, the public rows raked to CA's true one-way
margins) beside the noise such a margin would be measured with (``k sigma^2`` at a feature's
share of the budget when every feature × label margin is measured).

No release: the noise is simulated on CA's true margins.

    PYTHONPATH=src:. python -m bench.public_margins_alternatives  # -> bench/results/public_margins_alternatives.md
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
DRAWS = 3
SHARE = 0.8
"""Of the ε = 0.25 budget, as :data:`~polars_rap.public.margins.MAX_SHARE` gives on CA."""


def water_fill(cells: np.ndarray, deviation: np.ndarray, n: int, total: float) -> np.ndarray:
    """float64[margins]: ``rho_i = max(0, a sqrt(k_i) - k_i / (n^2 S_i))`` summing to ``total``
    (``a`` by bisection; a margin with ``S_i = 0`` gets nothing)."""
    floor = np.divide(cells / float(n) ** 2, deviation, out=np.full(len(cells), np.inf), where=deviation > 0)

    def spent(a: float) -> np.ndarray:
        return np.maximum(0.0, a * np.sqrt(cells) - floor)

    low, high = 0.0, 1.0
    while spent(high).sum() < total:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if spent(middle).sum() < total else (low, middle)
    return spent(high) * (total / spent(high).sum())


def main() -> int:
    import polars as pl

    from polars_rap.privacy.accounting import rho_from_epsilon_delta
    from polars_rap.public.margins import LABEL_WEIGHT, NUMERIC_CELLS, NUMERIC_WEIGHT
    from polars_rap.public.reweight import rake
    from polars_rap.public.shrinkage import shrunk_margin

    from bench.public_margins_probe import drawn_scores, probe_setup
    from bench.public_rake_oracle import _codes
    from bench.run import table_markdown

    setup = probe_setup(0.25)
    train, test, task, label, domain, public = \
        setup.train, setup.test, setup.task, setup.label, setup.domain, setup.public
    categorical, numeric, n, none, order = setup.categorical, setup.numeric, setup.n, setup.none, setup.order
    rho = SHARE * rho_from_epsilon_delta(0.25, 1.0 / n**2)
    true_codes = _codes(train, task.domain, categorical, numeric, NUMERIC_CELLS)
    public_codes = _codes(public, task.domain, categorical, numeric, NUMERIC_CELLS)

    def joint(codes: dict, columns: tuple[str, ...]) -> tuple[np.ndarray, int]:
        cell, size = np.zeros(len(codes[columns[0]][0]), dtype=np.int64), 1
        for c in columns:
            cell, size = cell * codes[c][1] + codes[c][0], size * codes[c][1]
        return cell, size

    def weight(columns: tuple[str, ...]) -> float:
        return NUMERIC_WEIGHT if any(c in numeric for c in columns) else LABEL_WEIGHT if columns == (label,) else 1.0

    def score(weights: np.ndarray, rng) -> list[float]:
        return drawn_scores(public, weights, order, train, test, domain, label, rng)

    def release(truth: list[np.ndarray], rhos: np.ndarray, rng) -> list[tuple[np.ndarray, float] | None]:
        """(noisy shares, std) per margin at its ``rho`` (None where it gets nothing)."""
        out = []
        for t, r in zip(truth, rhos, strict=True):
            std = float(np.sqrt(1.0 / (n**2 * r))) if r > 0 else 0.0
            out.append((t + rng.normal(0.0, std, len(t)), std) if r > 0 else None)
        return out

    def measured(margins: list[tuple[str, ...]], split: str) -> dict:
        """CM, MM, LT, macro F1 (means of DRAWS) of the public rows raked to ``margins`` measured
        with ``split`` of the budget."""
        cells = [joint(public_codes, m) for m in margins]
        truth = [np.bincount(joint(true_codes, m)[0], minlength=k) / n for m, (_, k) in zip(margins, cells)]
        prior = [np.bincount(x, minlength=k) / len(x) for x, k in cells]
        k = np.array([float(size) for _, size in cells])
        weights = np.array([weight(m) for m in margins])
        if split == "sqrt cells":
            feature = np.array([weight(m) == 1.0 for m in margins])
            weights[feature] = np.sqrt(k[feature]) / np.sqrt(k[feature]).mean()
        rng = np.random.default_rng(100)
        scores = []
        for _ in range(DRAWS):
            if split == "water-filled, true deviations":
                rhos = water_fill(k, np.array([np.square(t - p).sum() for t, p in zip(truth, prior)]), n, rho)
                parts = [release(truth, rhos, rng)]
            else:
                first = 0.1 if split == "water-filled, a first tenth's estimates" else 1.0
                rhos = first * rho * weights / weights.sum()
                parts = [release(truth, rhos, rng)]
                if first < 1.0:
                    estimated = np.array([max(0.0, np.square(m - p).sum() - len(m) * s**2)
                                          for (m, s), p in zip(parts[0], prior)])
                    rest = water_fill(k, estimated, n, (1.0 - first) * rho)
                    parts.append(release(truth, rest, rng))
            targets = []
            for i, p in enumerate(prior):
                releases = [part[i] for part in parts if part[i] is not None]
                if not releases:
                    targets.append(p)
                    continue
                precision = sum(1.0 / s**2 for _, s in releases)
                noisy = sum(m / s**2 for m, s in releases) / precision
                targets.append(shrunk_margin(noisy, precision**-0.5, p))
            scores.append(score(rake([x for x, _ in cells], targets), rng))
        mean = np.mean(scores, axis=0)
        return {**{f"{c} (x none)": f"{m:.6f} ({m / none[c]:.2f}x)" for c, m in zip(("CM", "MM", "LT"), mean)},
                "macro F1": round(float(mean[3]), 4)}

    one_way = [(c,) for c in categorical + numeric]
    crossed = [(c, label) for c in categorical + numeric if c != label]
    rows = []
    for margins, name, split in (
            (one_way, "one-way", "the library's weights"), (one_way, "one-way", "sqrt cells"),
            (one_way, "one-way", "water-filled, true deviations"),
            (one_way, "one-way", "water-filled, a first tenth's estimates"),
            (crossed, "feature x label", "the library's weights")):
        rows.append({"margins": name, "split of the budget": split, **measured(margins, split)})
        print(rows[-1], flush=True)

    columns = categorical + numeric
    raked = rake([public_codes[c][0] for c in columns],
                 [np.bincount(true_codes[c][0], minlength=true_codes[c][1]) / n for c in columns])
    weights = np.array([weight(m) for m in crossed])
    gaps = []
    for m, w in zip(crossed, weights, strict=True):
        x, k = joint(public_codes, m)
        truth = np.bincount(joint(true_codes, m)[0], minlength=k) / n
        sigma2 = 1.0 / (n**2 * rho * w / weights.sum())
        missed = float(np.square(truth - np.bincount(x, weights=raked, minlength=k)).sum())
        gaps.append({"feature": m[0], "cells": k, "association missed": f"{missed:.2e}",
                     "noise (k sigma^2)": f"{k * sigma2:.2e}"})

    lines = ["# Other splits of the margins' budget, other margins (bench/public_margins_alternatives.py)", "",
             f"acs-income-CA, {SHARE:.0%} of the ε = 0.25 budget (δ = 1/n²), {DRAWS} noise draws a row; ratios to "
             f"polars-rap's default without a public table at ε = 0.25 (headline.csv, 3 seeds: CM {none['CM']:.6f}, "
             f"MM {none['MM']:.5f}, LT {none['LT']:.5f}). Run {time.strftime('%Y-%m-%d')}.", "",
             table_markdown(pl.DataFrame(rows)), "",
             "## Each feature's association with the label that the raked public rows miss, and the noise of its "
             "two-way margin", "", table_markdown(pl.DataFrame(gaps))]
    (RESULTS / "public_margins_alternatives.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
