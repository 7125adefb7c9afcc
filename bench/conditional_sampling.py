"""Time 1,000,000 conditioned rows against 1,000,000 unconditioned ones (issue #76: <= 10 s on 2 cores).

A small fit of the bundled CA table (1,000 relaxed rows, the reference n-hat; few rounds, so
the fit takes under a minute), then ``model.sample`` three times per condition (once where the
first call takes over 20 s: a condition met by rejection); prints a Markdown table with the
machine and its load. Run: ``python bench/conditional_sampling.py``.
"""

from __future__ import annotations

import os
import platform
import time

import polars as pl

import polars_rap
from polars_rap.decode.conditions import condition_expression
from polars_rap.io import datasets

ROWS = 1_000_000
CONDITIONS = {
    "none": None,
    "dict: SEX = 2": {"SEX": 2},
    "dict: AGEP >= 60": {"AGEP": (60, None)},
    "dict: SEX = 2, AGEP >= 60": {"SEX": 2, "AGEP": (60, None)},
    "SQL: SEX = 2 AND AGEP >= 60": "SEX = 2 AND AGEP >= 60",
    "dict, rare: OCCP = 'MIL', SEX = 2": {"OCCP": "MIL", "SEX": 2},
    "two columns (rejection): AGEP > JWMNP": pl.col("AGEP") > pl.col("JWMNP"),
}


def main() -> None:
    task = datasets.load_task("acs-income-CA")
    strategy = polars_rap.PlannedStrategy(relaxed_rows=1_000, rounds={"CM": 2, "LT": 2, "MM": 1},
                                          projection=polars_rap.ProjectionConfig(max_steps=20))
    model = polars_rap.synthesize(task.frame.sample(20_000, seed=0), epsilon=1.0, delta=1e-9, domain=task.domain,
                                  labels=task.labels, strategy=strategy, seed=0, progress=False).model
    model.sample(1_000, seed=0, where={"SEX": 2})  # compile and warm up
    print(f"{ROWS:,} rows from a {model.relaxed.shape[0]}-relaxed-row CA model; {platform.processor() or platform.machine()}, "
          f"{len(os.sched_getaffinity(0))} CPUs usable, load average before {os.getloadavg()}; polars {pl.__version__}\n")
    print(f"| condition | seconds (best of the calls) | calls | {ROWS:,} rows, all pass |\n|---|---|---|---|")
    for name, where in CONDITIONS.items():
        seconds = []
        for repeat in range(3):
            start = time.perf_counter()
            frame = model.sample(ROWS, seed=repeat, where=where)
            seconds.append(time.perf_counter() - start)
            if seconds[0] > 20.0:
                break
        passes = where is None or frame.select(condition_expression(where, model.domain).all()).item()
        print(f"| {name} | {min(seconds):.2f} | {len(seconds)} | {frame.height == ROWS and passes} |")
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
