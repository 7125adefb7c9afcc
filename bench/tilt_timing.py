"""Seconds per joint fit of the public rows' weights (``polars_rap.public.tilt.tilted_weights``).

``public_use="margins"`` fits the public rows' weights twice a synthesis (for the public table's
check and for the candidate). This times one fit on acs-income-CA's setting: the other states'
260,818 rows, the library's 20 margins, CA's true margins with the Gaussian noise of their share
of 80% of the ε = 0.25 budget (one draw, seed 100, as ``bench/public_margins_joint.py``'s
first), after a warm-up fit that compiles or loads the kernel. It records the median wall-clock
and process CPU seconds of ``--repeats`` fits, the Numba threads, the L-BFGS iterations, the
machine's load before and after, and the commit, as one row appended to
``bench/results/tilt_timing.csv`` (and printed). ``--threads`` sets Numba's threads.

No release: the noise is simulated on CA's true margins.

    PYTHONPATH=src:. python -m bench.tilt_timing --label serial [--threads 1]
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
FINDINGS = (
    "What it showed (2-core AMD EPYC, each run alone): the serial kernel took 7.1 s a fit (511 L-BFGS "
    "iterations, 14.0 ms each). In parallel over 64 fixed parts of the rows it takes 4.2 s on 2 threads (541 "
    "iterations: the sums' order moves the optimizer's path, not the mode, weights within 3e-4 relative, shares "
    "within 2e-7; 7.7 ms an iteration, 1.8x) and 8.1 s on 1 (15.0 ms an iteration: the parts cost 7%). Left "
    "free, OpenBLAS's threads spun beside the kernel's through L-BFGS-B's small algebra: 14 s of CPU for the "
    "serial 7.1 s, and 13.0 s a fit with the parallel kernel; the fit now holds BLAS to one thread. A synthesis "
    "with `public_use=[\"margins\"]` fits twice: through `bench.public_prior` (CA, the other states' table, "
    "`tilt_timing_pipeline.csv` against `public_margins_joint_fit.csv`, the same seeds) a synthesis at ε = 0.25 "
    "took 14.2-15.1 s instead of 18.9-19.0 s, at ε = 0.1 10.1 s instead of 20.0 s (seed 0), its errors alike to "
    "the third digit (CM 0.000648 / 0.000713 at ε = 0.25, as before).")


def main(argv=None) -> int:
    import numba
    from scipy import optimize

    from polars_rap.public.tilt import tilted_weights

    from bench.host import git_commit
    from bench.public_margins_joint import simulation
    from bench.run import machine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True, help="names the code timed (e.g. serial / parallel)")
    parser.add_argument("--threads", type=int, default=None, help="Numba threads (default: all)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if args.threads is not None:
        numba.set_num_threads(args.threads)

    sim = simulation(draws=1)
    cells, released = sim.cells, sim.released(0)
    iterations = []
    original = optimize.minimize

    def counted(*a, **k):
        found = original(*a, **k)
        iterations.append(int(found.nit))
        return found

    import polars_rap.public.tilt as public_tilt
    public_tilt.minimize = counted
    tilted_weights(cells, released)  # compiles or loads the kernel
    load_before = os.getloadavg()[0]
    walls, cpus = [], []
    for _ in range(args.repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        fitted = tilted_weights(cells, released)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    public_tilt.minimize = original
    row = {"label": args.label, "threads": numba.get_num_threads(), "rows": len(cells[0]), "margins": len(cells),
           "iterations": iterations[-1], "wall_s": round(float(np.median(walls)), 3),
           "cpu_s": round(float(np.median(cpus)), 3), "weights_sum": round(float(fitted.sum()), 12),
           "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
           "machine": machine(), "commit": git_commit(), "date": time.strftime("%Y-%m-%d")}
    out = RESULTS / "tilt_timing.csv"
    new = not out.exists()
    with out.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(row))
        if new:
            writer.writeheader()
        writer.writerow(row)
    print(row)
    write_report(out)
    return 0


def write_report(table: Path) -> None:
    """``bench/results/tilt_timing.md``: every timing row of ``table`` and :data:`FINDINGS`."""
    import polars as pl

    from bench.run import table_markdown

    rows = pl.read_csv(table).with_columns(pl.col("commit").str.slice(0, 7))
    lines = ["# Seconds per joint fit of the public rows' weights (bench/tilt_timing.py)", "",
             "acs-income-CA's margins setting at ε = 0.25 (the other states' 260,818 rows, 20 margins, one noise "
             "draw); median of the repeats after a warm-up fit.", "", table_markdown(rows), "", FINDINGS]
    (RESULTS / "tilt_timing.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
