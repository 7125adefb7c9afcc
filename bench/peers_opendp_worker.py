"""Fit OpenDP's AIM (opendp 0.16.0, ``opendp.extras.mbi``; mbi 1.1.0) on integer codes; runs
INSIDE ``bench/.venv-peers-opendp``.

Started by ``bench/peers.py``'s ``run_peer``; not imported by the project (its helpers above
``main`` need only NumPy, so the tests import them). Reads the codes (Parquet, one Int64
column per original column) and the spec (JSON, each column's declared number of codes), and:

* declares every column's keys as ``0 .. n_codes-1`` from the spec, so the domain is public
  and never read off the rows. OpenDP appends a null key to every key set (one more cell per
  column); the codes hold no nulls, so those cells' true counts are zero;
* measures through ``dp.Context.compositor`` with ``privacy_unit=dp.unit_of(changes=1)``
  (replace-one neighbours, the project's; OpenDP bounds it as two add/remove changes, so a
  marginal gets L2 sensitivity 2 where sqrt 2 holds) and ``privacy_loss=dp.loss_of(rho=ρ)``:
  zero-concentrated DP, because OpenDP refuses δ > 0 when keys span every column. ``--rho``
  is the suite's ρ(ε, δ) from polars-rap's tight conversion; the worker checks that the
  measurement's own privacy map charges at most ρ and that OpenDP's zCDP → (ε, δ) conversion
  of it gives at most ``--epsilon`` at ``--delta``, and exits with an error otherwise;
* gives AIM the existing smartnoise peers' workload (:func:`pair_workload`: every pair of
  columns with at most 10,000 cells, AIM's downward closure weights added by OpenDP); every
  other AIM setting is OpenDP's default (half the budget on all one-way marginals first,
  measure/select split 0.9, 80 MB model cap, 16 × columns rounds);
* samples ``--rows`` rows: ``aim-opendp`` with ``ContingencyTable.synthesize`` (mbi 1.1's
  ``synthetic_data``, as shipped), ``aim-opendp-fixed-sampler`` with ``peers_worker``'s exact
  junction-tree sampler on the same model. Rows that land in an OpenDP null cell (outside
  the declared domain) are redrawn (:func:`keep_declared`: the model conditioned on the
  public domain; post-processing). NumPy's global generator is seeded (mbi's sampler uses
  it); OpenDP's noise and selection come from its own CSPRNG and cannot be seeded;
* writes the synthetic codes as Parquet (input names and order) and prints one JSON line:
  fit seconds, rows, cliques (column names), the privacy figures, rows redrawn.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

MAX_CELLS = 10_000
"""smartnoise AIMSynthesizer's default ``max_cells``: the existing peers' workload filter."""


def log(message: str) -> None:
    print(f"[peers_opendp_worker {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def pair_workload(names: Sequence[str], sizes: Sequence[int], degree: int = 2,
                  max_cells: int = MAX_CELLS) -> list[tuple[str, ...]]:
    """Every ``degree``-way clique of ``names`` (in column order) whose declared cell count
    (product of ``sizes``) is at most ``max_cells``: what smartnoise's
    ``AIMSynthesizer.get_workload`` gives the existing ``aim`` peer (degree 2, 10,000 cells)."""
    size = dict(zip(names, sizes, strict=True))
    return [clique for clique in itertools.combinations(names, degree)
            if math.prod(size[c] for c in clique) <= max_cells]


def keep_declared(draw: Callable[[int], dict[str, np.ndarray]], rows: int, rng: np.random.Generator,
                  max_draws: int = 50) -> tuple[dict[str, np.ndarray], int]:
    """``rows`` records whose every code is >= 0, from ``draw(count)`` (column -> int64[count],
    -1 for a cell outside the declared domain), and how many drawn records were dropped.

    The first draw asks for ``rows``; if it holds no -1 it is returned as drawn. Otherwise the
    kept records are topped up with further draws (25% spare), a uniform subset of ``rows``
    of them is kept and shuffled: i.i.d. rows of the model conditioned on the domain.
    """
    def valid_of(batch: dict[str, np.ndarray]) -> np.ndarray:
        return np.logical_and.reduce([np.asarray(v) >= 0 for v in batch.values()]).reshape(-1)

    first = draw(rows)
    valid = valid_of(first)
    if valid.all():
        return {c: np.asarray(v, dtype=np.int64) for c, v in first.items()}, 0
    kept = [{c: np.asarray(v, dtype=np.int64)[valid] for c, v in first.items()}]
    have, dropped = int(valid.sum()), int((~valid).sum())
    for _ in range(max_draws - 1):
        if have >= rows:
            break
        batch = draw(math.ceil((rows - have) * 1.25) + 16)
        valid = valid_of(batch)
        kept.append({c: np.asarray(v, dtype=np.int64)[valid] for c, v in batch.items()})
        have, dropped = have + int(valid.sum()), dropped + int((~valid).sum())
    if have < rows:
        msg = f"only {have} of {rows} rows inside the declared domain after {max_draws} draws"
        raise RuntimeError(msg)
    joined = {c: np.concatenate([k[c] for k in kept]) for c in kept[0]}
    pick = rng.permutation(have)[:rows]
    return {c: v[pick] for c, v in joined.items()}, dropped


# ============================================================================================
# Fitting (OpenDP) and sampling
# ============================================================================================


def fit(frame, sizes: dict[str, int], workload: list[tuple[str, ...]], epsilon: float, delta: float,
        rho: float):
    """Release OpenDP's AIM ``ContingencyTable`` of the codes ``frame`` (pl.DataFrame) at
    ``rho``-zCDP under replace-one; returns (table, privacy figures)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    keys = {c: list(range(k)) for c, k in sizes.items()}
    context = dp.Context.compositor(data=frame.lazy(), privacy_unit=dp.unit_of(changes=1),
                                    privacy_loss=dp.loss_of(rho=rho), split_evenly_over=1)
    query = context.query().contingency_table(
        keys=keys, algorithm=dp.mbi.AIM(queries=[dp.mbi.Count(clique) for clique in workload]))
    measurement = query.resolve()
    charged = float(measurement.map(1))
    to_approx = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(measurement), delta)
    epsilon_opendp, delta_opendp = to_approx.map(1)
    privacy = {"privacy_unit": "changes=1 (replace-one)", "measure": "zCDP", "rho": rho,
               "rho_charged": charged, "epsilon_opendp": float(epsilon_opendp),
               "delta_opendp": float(delta_opendp)}
    if charged > rho or epsilon_opendp > epsilon * (1 + 1e-9):
        msg = f"OpenDP's measurement charges more than the budget: {privacy} (epsilon {epsilon})"
        raise SystemExit(msg)
    return query.release(), privacy


def _check_keys(table, sizes: dict[str, int]) -> None:
    """OpenDP's keys must be our codes 0..k-1 in order, then its null: index i is code i."""
    for c, k in sizes.items():
        key = table.keys[c].to_list()
        if key[:k] != list(range(k)) or key[k:] != [None]:
            raise SystemExit(f"unexpected OpenDP key set for {c}: {key[:5]}... ({len(key)} keys)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--codes", required=True)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--mechanism", required=True, choices=["aim-opendp", "aim-opendp-fixed-sampler"])
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--delta", type=float, required=True)
    parser.add_argument("--rho", type=float, required=True, help="zCDP budget: the suite's rho(epsilon, delta)")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--also-fixed-out", default=None,
                        help="also sample the SAME fitted model with the fixed sampler into this file")
    args = parser.parse_args()

    import polars as pl

    from peers_worker import sample_model  # the exact sampler of the smartnoise peers' rows

    np.random.seed(args.seed)
    spec = json.loads(open(args.spec).read())
    names = [c["name"] for c in spec["columns"]]
    frame = pl.read_parquet(args.codes)
    if frame.columns != names:
        raise SystemExit(f"codes columns {frame.columns} differ from the spec's {names}")
    attrs = [f"col{i}" for i in range(len(names))]  # positional: names may hold any character
    sizes = {a: int(c["n_codes"]) for a, c in zip(attrs, spec["columns"])}
    frame = frame.rename(dict(zip(names, attrs))).cast(pl.Int64)
    for a, n in zip(attrs, names):
        column = frame[a]
        if column.null_count() or (column.len() and (column.min() < 0 or column.max() >= sizes[a])):
            raise SystemExit(f"column {n!r}: codes outside its declared [0, {sizes[a]})")
    workload = pair_workload(attrs, [sizes[a] for a in attrs])
    log(f"{args.mechanism}: {frame.height} rows, domain sizes {dict(zip(names, sizes.values()))}, "
        f"epsilon={args.epsilon}, delta={args.delta:.3g}, rho={args.rho:.6g}, seed={args.seed}, "
        f"{len(workload)} workload pairs")

    started = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):  # keep stdout for the one JSON line
        table, privacy = fit(frame, sizes, workload, args.epsilon, args.delta, args.rho)
    fit_seconds = time.perf_counter() - started
    _check_keys(table, sizes)
    model = table.model
    log(f"fitted in {fit_seconds:.1f}s; {privacy}; cliques {[tuple(c) for c in model.cliques]}")

    def shipped(count: int) -> dict[str, np.ndarray]:
        drawn = table.synthesize(rows=count)
        return {a: drawn[a].fill_null(-1).to_numpy().astype(np.int64) for a in attrs}

    def fixed(count: int) -> dict[str, np.ndarray]:
        drawn = sample_model(model, count, sampler_rng)
        return {a: np.where(drawn[a] >= sizes[a], -1, drawn[a]) for a in attrs}  # index k: null key

    sampler_rng = np.random.default_rng([args.seed, 1])
    jobs = [(args.out, args.mechanism.endswith("-fixed-sampler"))]
    if args.also_fixed_out and not jobs[0][1]:
        jobs.append((args.also_fixed_out, True))
    redrawn = {}
    for path, use_fixed in jobs:
        started = time.perf_counter()
        with contextlib.redirect_stdout(sys.stderr):
            codes, dropped = keep_declared(fixed if use_fixed else shipped, args.rows,
                                           np.random.default_rng([args.seed, 2 + use_fixed]))
        kind = "fixed" if use_fixed else "shipped"
        redrawn[kind] = dropped
        pl.DataFrame({n: codes[a] for a, n in zip(attrs, names)}).write_parquet(path)
        log(f"sampled {args.rows} rows ({kind} sampler, {dropped} rows in null cells redrawn) "
            f"in {time.perf_counter() - started:.1f}s")
    name_of = dict(zip(attrs, names))
    cliques = [[name_of[a] for a in clique] for clique in model.cliques]
    print(json.dumps({"fit_seconds": fit_seconds, "rows": args.rows, "cliques": cliques,
                      "details": {**privacy, "workload_pairs": len(workload), "rows_redrawn": redrawn}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
