"""Where a default fit's seconds go on the CPU (issue #20's time target), in two views.

    python -m bench.profile_fit                          # acs-income-CA, ε = 0.25, seed 0
    python -m bench.profile_fit --dataset adult --epsilon 1 --out /tmp/profile.md

1. ``cProfile`` of one ``synthesize`` on the task's training rows (``bench.run``'s split, δ =
   1/n²) after a small warm-up fit (Numba compiles on first use): the functions with the most
   time of their own.
2. The last ``loss_and_grad`` call of a fit on the first ``--capture-rows`` training rows (the
   projection's final workload, every measurement so far), its relaxed answers and gradient
   timed per part: marginal groups by query class and the single-query (CSR) loop, median of
   ``--repeats`` calls.

Writes a Markdown table (``bench/results/profile_fit.md`` by default) headed by the machine
and its load.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.kernels_cpu import median_seconds
from bench.run import RESULTS, machine, prepare_dataset

TOP = 12
"""Functions listed by their own time."""


def profile_fit(train, task, epsilon: float, seed: int) -> tuple[float, list[tuple[str, int, float, float]]]:
    """Seconds of one fit and its top functions: (name, calls, own seconds, cumulative)."""
    import polars_rap

    options = dict(domain=task.domain, labels=task.labels, seed=seed, progress=False)
    polars_rap.synthesize(train.head(20_000), epsilon=epsilon, delta=1.0 / 20_000**2, **options)  # compile
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.runcall(polars_rap.synthesize, train, epsilon=epsilon, delta=1.0 / train.height**2, **options)
    seconds = time.perf_counter() - started
    stats = pstats.Stats(profile).stats
    rows = sorted(((f"{Path(file).name}:{line}({name})", calls, own, cumulative)
                   for (file, line, name), (_, calls, own, cumulative, _) in stats.items()),
                  key=lambda row: -row[2])
    return seconds, rows[:TOP]


def last_projection_call(train, task, epsilon: float, seed: int):
    """(X, queries, sigma, targets, query_weights) of a fit's last ``loss_and_grad`` call."""
    import polars_rap
    from polars_rap.kernels import cpu

    last = {}
    relaxed = cpu._relaxed

    def spy(X, queries, sigma, targets, **keywords):
        if targets is not None:
            last["call"] = (X.copy(), queries, np.array(sigma, copy=True), np.array(targets, copy=True),
                            keywords.get("query_weights"))
        return relaxed(X, queries, sigma, targets, **keywords)

    cpu._relaxed = spy
    try:
        polars_rap.synthesize(train, epsilon=epsilon, delta=1.0 / train.height**2, domain=task.domain,
                              labels=task.labels, seed=seed, progress=False)
    finally:
        cpu._relaxed = relaxed
    return last["call"]


def kernel_parts(call, repeats: int) -> list[tuple[str, int, int, float, float]]:
    """Per part of the workload: (part, groups or queries, cells, answers ms, gradient ms)."""
    from polars_rap.kernels import cpu_relaxed
    from polars_rap.kernels.cpu_halfspaces import _plan
    from polars_rap.workload.queries import CLASS_CODES

    X, queries, sigma, targets, _ = call
    groups, csr = _plan(queries, sigma, True)
    XT = np.ascontiguousarray(X.T)
    answers = cpu_relaxed._relaxed_sums(XT, queries, sigma, groups, csr) / X.shape[0]
    weights = 2.0 * (answers - targets) / X.shape[0]
    grad = np.empty_like(X)

    def gradient(part_groups, part_csr):
        cpu_relaxed._gradient(XT, queries, sigma, part_groups, part_csr, weights, grad)

    names = {code: name for name, code in CLASS_CODES.items()}
    parts = [(f"groups {names[code]}", groups[queries.group_class[groups] == code], csr[:0])
             for code in np.unique(queries.group_class[groups])]
    parts.append(("single queries (CSR)", groups[:0], csr))
    parts.append(("all", groups, csr))
    rows = []
    for name, part_groups, part_csr in parts:
        cells = int(queries.group_sizes[part_groups].sum()) + len(part_csr)
        rows.append((name, len(part_groups) + len(part_csr), cells,
                     1e3 * median_seconds(lambda: cpu_relaxed._relaxed_sums(XT, queries, sigma, part_groups,
                                                                             part_csr), repeats),
                     1e3 * median_seconds(lambda: gradient(part_groups, part_csr), repeats)))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="acs-income-CA")
    parser.add_argument("--epsilon", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--capture-rows", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path, default=RESULTS / "profile_fit.md")
    args = parser.parse_args(argv)
    train, _, task = prepare_dataset(args.dataset, None)
    load = os.getloadavg()[0]
    seconds, top = profile_fit(train, task, args.epsilon, args.seed)
    captured = train.head(args.capture_rows)
    call = last_projection_call(captured, task, args.epsilon, args.seed)
    parts = kernel_parts(call, args.repeats)
    X, queries = call[0], call[1]
    lines = [f"# Where a default fit's seconds go ({args.dataset}, ε = {args.epsilon}, seed {args.seed})", "",
             f"`python -m bench.profile_fit --dataset {args.dataset} --epsilon {args.epsilon} --seed {args.seed}` on "
             f"{machine()}, 1-min load {load:.2f} at the start. The fit: {seconds:.1f} s under cProfile "
             f"({train.height:,} training rows).", "", "## Functions by their own time", "",
             "| function | calls | own s | share of the fit | cumulative s |", "|---|---:|---:|---:|---:|"]
    lines += [f"| `{name}` | {calls:,} | {own:.1f} | {own / seconds:.0%} | {cumulative:.1f} |"
              for name, calls, own, cumulative in top]
    lines += ["", f"## The last projection's kernels, by part (a fit on {captured.height:,} training rows; "
                  f"relaxed rows {X.shape[0]:,} x {X.shape[1]} coordinates, {queries.n_queries:,} queries; "
                  f"median of {args.repeats} calls)", "",
              "| part | groups or queries | answers (cells) | answers ms | gradient ms |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {name} | {count:,} | {cells:,} | {answers:.2f} | {gradient:.2f} |"
              for name, count, cells, answers, gradient in parts]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"table -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
