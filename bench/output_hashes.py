"""Fingerprints of the released rows of seeded runs: a refactor must leave them equal.

    python -m bench.output_hashes                     # write bench/results/output_hashes.json
    python -m bench.output_hashes --check             # recompute and compare with the file

The runs are the headline suite's default runs (acs-income-CA and adult, ε ∈ {0.25, 1, 5},
seed 0) and the paper preset's (``strategy="paper"``, same grid), on the harness's own split
(:func:`bench.run.prepare_dataset`) with δ = 1/n_train². Each fingerprint is the SHA-256 of the
output's schema and of its rows written as CSV (Polars writes floats in their shortest
round-trip form, so equal text means equal bits), beside the SHA-256 of the relaxed matrix's
bytes. ``--check`` exits 1 and names every run whose rows changed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

from bench.run import RESULTS, prepare_dataset

DATASETS = ("acs-income-CA", "adult")
EPSILONS = (0.25, 1.0, 5.0)
STRATEGIES = ("planned", "paper")
SEED = 0
OUT = RESULTS / "output_hashes.json"


def rows_digest(frame: pl.DataFrame) -> str:
    """SHA-256 of ``frame``'s schema and rows (CSV text, floats in shortest round-trip form)."""
    digest = hashlib.sha256(repr(list(frame.schema.items())).encode())
    digest.update(frame.write_csv().encode())
    return digest.hexdigest()


def relaxed_digest(relaxed: np.ndarray) -> str:
    """SHA-256 of the relaxed matrix's dtype, shape and bytes."""
    array = np.ascontiguousarray(relaxed)
    digest = hashlib.sha256(f"{array.dtype}{array.shape}".encode())
    digest.update(array.tobytes())
    return digest.hexdigest()


def fingerprints() -> dict[str, dict[str, str]]:
    """``"dataset/strategy/eps=ε"`` -> the run's rows and relaxed digests."""
    import polars_rap

    out: dict[str, dict[str, str]] = {}
    for dataset in DATASETS:
        train, _, task = prepare_dataset(dataset, None)
        delta = 1.0 / train.height**2
        for strategy in STRATEGIES:
            for epsilon in EPSILONS:
                started = time.perf_counter()
                result = polars_rap.synthesize(train, epsilon=epsilon, delta=delta, domain=task.domain,
                                               labels=task.labels, seed=SEED, strategy=strategy,
                                               progress=False)
                key = f"{dataset}/{strategy}/eps={epsilon:g}"
                out[key] = {"rows": rows_digest(result.data), "relaxed": relaxed_digest(result.relaxed)}
                print(f"{key}: {out[key]['rows'][:16]} ({time.perf_counter() - started:.1f} s)", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    found = fingerprints()
    if not args.check:
        args.out.write_text(json.dumps(found, indent=2, sort_keys=True) + "\n")
        print(f"wrote {args.out}")
        return 0
    expected = json.loads(args.out.read_text())
    changed = [key for key in expected if found.get(key, {}).get("rows") != expected[key]["rows"]]
    for key in changed:
        print(f"CHANGED: {key}")
    print("all released rows equal" if not changed else f"{len(changed)} of {len(expected)} runs changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
