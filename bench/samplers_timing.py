"""Seconds per synthesis with the noise samplers of the checked-out code (issue #15).

One fresh process times ``polars_rap.synthesize`` on the bundled acs-income-CA task at the
defaults (all 34,425 rows, epsilon = 1, delta = 1/n^2, seed 0) after a small warm-up call that
compiles or loads the Numba kernels: wall-clock seconds, and CPU seconds of the process (all
its threads; the fairer figure on a shared machine), and, inside that run, the CPU seconds
spent in the charged noise mechanisms the loop calls (``rounds.gaussian_mechanism`` and ``rounds.gumbel_top_k``,
wrapped with a timer) and the number of noisy cells they drew. It prints one JSON object;
``--label`` names the code it ran (e.g. ``before`` / ``after``). The machine's load averages
before and after are recorded: on a shared machine the seconds are inflated.

    PYTHONPATH=src nice -n 19 python bench/samplers_timing.py --label after [--secure]
    PYTHONPATH=src nice -n 19 python bench/samplers_timing.py --label micro --micro

``--micro`` instead times the samplers alone on both word sources (CPU seconds): 15,124
discrete Gaussian draws (the cells of the CA run) at sigma = 10, 100 and 1,000 counts, and 50
exact top-10 selections among 20,000 candidates with scores spread like L1 errors.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time


def micro() -> dict:
    """CPU seconds of the exact samplers alone, per word source."""
    from fractions import Fraction

    import numpy as np

    from polars_rap.privacy.samplers import SecureRandom, discrete_gaussian, seeded_words
    from polars_rap.privacy.selection import exponential_top_k, selection_epsilon

    out = {}
    scores = np.random.default_rng(0).gamma(2.0, 300.0, 20_000)  # L1 errors in counts
    for name, make in (("seeded", lambda: seeded_words(np.random.default_rng(0))), ("secure", SecureRandom)):
        words = make()
        for sigma in (10, 100, 1000):
            started = time.process_time()
            discrete_gaussian(Fraction(sigma * sigma) * Fraction(1.0000001), 15_124, words)
            out[f"{name}_gaussian_15124_cells_sigma_{sigma}_cpu_seconds"] = round(time.process_time() - started, 3)
        started = time.process_time()
        for _ in range(50):
            exponential_top_k(scores, 10, 2.0, selection_epsilon(1e-4, 10), words)
        out[f"{name}_top10_of_20000_cpu_seconds_each"] = round((time.process_time() - started) / 50, 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True)
    parser.add_argument("--secure", action="store_true", help="seed=None: the OS's random source")
    parser.add_argument("--micro", action="store_true", help="time the samplers alone")
    args = parser.parse_args()
    if args.micro:
        print(json.dumps({"label": args.label, **micro(), "load_average": [round(x, 2) for x in os.getloadavg()]}))
        return

    import polars_rap
    from polars_rap.io import datasets
    from polars_rap.fit import rounds

    task = datasets.load_task("acs-income-CA")
    frame = task.frame
    spent = {"gaussian_mechanism": 0.0, "gumbel_top_k": 0.0}
    cells = [0]

    def timed(name, function):
        def wrapper(*a, **k):
            started = time.process_time()
            try:
                return function(*a, **k)
            finally:
                spent[name] += time.process_time() - started
                if name == "gaussian_mechanism":
                    cells[0] += len(a[0])
        return wrapper

    polars_rap.synthesize(frame.head(300), epsilon=1.0, delta=1e-6, domain=task.domain,
                          labels=task.labels, seed=0, rounds_cm=1, rounds_lt=1, progress=False)
    rounds.gaussian_mechanism = timed("gaussian_mechanism", rounds.gaussian_mechanism)
    rounds.gumbel_top_k = timed("gumbel_top_k", rounds.gumbel_top_k)
    load_before = os.getloadavg()
    started, cpu_started = time.perf_counter(), time.process_time()
    result = polars_rap.synthesize(frame, epsilon=1.0, delta=1.0 / frame.height**2, domain=task.domain,
                                   labels=task.labels, seed=None if args.secure else 0, progress=False)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    print(json.dumps({
        "label": args.label, "task": "acs-income-CA", "rows": frame.height, "epsilon": 1.0,
        "seed": None if args.secure else 0, "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu_seconds, 2), "mechanism_cpu_seconds": {k: round(v, 3) for k, v in spent.items()},
        "noisy_cells": cells[0], "measured_answers": result.report.measurements.height,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "cores": os.cpu_count(), "python": platform.python_version(),
    }))


if __name__ == "__main__":
    main()
