"""Do two plans draw the same noise for the steps they share? (issue #20's ablations)

``numeric_off_categories`` found the categorical tables' error moving with the plan (the
numeric histograms' share) but not with the numeric queries' gradient, with a sign that
changes by seed. One noise stream serves the whole loop, consumed in plan order, so a plan
that changes a step may change the noise every later step draws. This fits one seed under
two plans and compares the categorical measurements the two releases hold (same group and
query): how many noisy answers are equal, and how far apart the others are in units of their
noise (a query measured in several rounds is compared at its last measurement). Writes
``bench/results/plan_noise_trace.md``.

    python -m bench.plan_noise_trace                  # adult, eps 0.25, seed 2 (the widest CM gap)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import polars as pl

from bench.run import RESULTS, prepare_dataset, table_markdown

FINDING = (
    "What it shows (adult, eps = 0.25, seed 2): no step the plans share is measured with the same noise std, "
    "from the first on. The 20% plan takes the histograms' budget from the thresholds alone, while the default's "
    "5% comes out of every step, the base marginals' included: so the base marginals' noise std is 0.975x the "
    "default's (69 of their 204 answers come out equal; the median difference is 0.05 std). The "
    "categorical "
    "marginals, spent by annealed rounds that adapt to how much each measurement moved the fit, then take another "
    "path: 8 rounds instead of 10, 522 queries measured in both plans and 64 only in the default, at 0.73x the "
    "default's noise std, their answers a median 0.75 std apart. The plans' categorical errors therefore differ "
    "by the spread of that adaptive path (Adult at eps 0.25: +6%, -5%, +15% over seeds 0-2), which three seeds "
    "cannot separate from an effect of the plan of a few per cent."
)

PLANS = {  # explicit keywords: the first was the default until the rerun of 2026-11-27, the second is since
    "5% out of every class's share (the default until 2026-11-27)":
        {"strategy": {"name": "planned", "histogram_share": 0.05, "histogram_from": None}},
    "numeric histograms (20%) out of the thresholds' share":
        {"strategy": {"name": "planned", "histogram_share": 0.2, "histogram_from": "LT"}},
}


def fit(dataset: str, epsilon: float, seed: int, keywords: dict):
    import polars_rap

    train, _, task = prepare_dataset(dataset, None)
    result = polars_rap.synthesize(train, epsilon=epsilon, delta=1.0 / train.height**2, domain=task.domain,
                                   labels=task.labels, seed=seed, progress=False, **keywords)
    return result.report.measurements


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="adult")
    parser.add_argument("--epsilon", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args(argv)
    (a_name, a_keywords), (b_name, b_keywords) = PLANS.items()
    a = fit(args.dataset, args.epsilon, args.seed, a_keywords)
    b = fit(args.dataset, args.epsilon, args.seed, b_keywords)
    keys = ["query_class", "group", "query"]
    # a query measured in several rounds (annealed categorical rounds) keeps its last measurement
    a, b = (m.sort("round").unique(subset=keys, keep="last", maintain_order=True) for m in (a, b))
    joined = a.join(b, on=keys, how="inner", suffix="_b")
    rows = []
    for (query_class,), part in joined.group_by("query_class", maintain_order=True):
        same_std = np.isclose(part["noise_std"].to_numpy(), part["noise_std_b"].to_numpy(), rtol=1e-12)
        equal = part["noisy_answer"].to_numpy() == part["noisy_answer_b"].to_numpy()
        gap = np.abs(part["noisy_answer"].to_numpy() - part["noisy_answer_b"].to_numpy()) / part["noise_std"].to_numpy()
        rows.append({"query_class": query_class, "queries in both": part.height,
                     "only in the default": a.filter(pl.col("query_class") == query_class).height - part.height,
                     "only in the other plan": b.filter(pl.col("query_class") == query_class).height - part.height,
                     "same noise std": int(same_std.sum()),
                     "median std ratio (other / default)": round(float(np.median(
                         part["noise_std_b"].to_numpy() / part["noise_std"].to_numpy())), 3),
                     "equal noisy answers": int(equal.sum()),
                     "median abs difference / std": round(float(np.median(gap)), 3) if part.height else None,
                     "rounds (default / other)": f"{part['round'].min()}-{part['round'].max()} / "
                                                 f"{part['round_b'].min()}-{part['round_b'].max()}"})
    table = pl.DataFrame(rows)
    out = RESULTS / "plan_noise_trace.md"
    lines = [f"# Do two plans draw the same noise? ({args.dataset}, eps = {args.epsilon}, seed {args.seed})", "",
             f"Plans: **{a_name}** {json.dumps(a_keywords)} and **{b_name}** {json.dumps(b_keywords)}. "
             "Measurements matched by (class, group, query) in the two releases' reports.", "",
             table_markdown(table).rstrip("\n")]
    if (args.dataset, args.epsilon, args.seed) == ("adult", 0.25, 2):
        lines += ["", FINDING]
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())
    return out


if __name__ == "__main__":
    main()
