"""The measured public rows mixed with the loop's own, through the pipeline (issue 19).

When the check releases the public rows raked to the measured margins (``public_use="margins"``),
the loop's rows (fitted with what the margins left, 18% of the budget at ε = 0.25 on
acs-income-CA) are thrown away. Their errors are the noise's, the public rows' are the public
table's associations: if the two were independent, a mixture (a share ``alpha`` of the released
rows from the public candidate, the rest from the loop's rows) would answer every query with a
convex combination of the two answers and could beat both. This runs
:func:`bench.run.run_one` on the matched public table (``bench.public_prior``'s
``matched/margins``) with :func:`polars_rap.public.release.checked_release` wrapped to release
that mixture whenever it released the public rows (post-processing of released rows: no budget),
at each ``alpha`` and seed, and writes ``bench/results/public_margins_mixture.md``. A probe, not
a use: the library releases ``alpha = 1``.

    PYTHONPATH=src:. python -m bench.public_margins_mixture    # -> bench/results/public_margins_mixture.csv, .md
    PYTHONPATH=src:. python -m bench.public_margins_mixture --table-only    # the .md from the CSV
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
ALPHAS = (1.0, 0.9, 0.8, 0.0)
FINDINGS = (
    "What it showed (2-core AMD EPYC, alone; errors only): no mixture reaches CM 0.5x. With alpha = 1 the "
    "pipeline's own rows are reproduced to the digit (CM 0.578x, MM 0.405x, LT 0.421x, as public_margins_split.md). "
    "The loop's rows alone, on 18% of the budget, score CM 1.95x, MM 2.4x, LT 3.1x of the run without a public "
    "table, and a tenth or a fifth of them moves CM by 1% at most (0.573x / 0.577x): their errors do not offset "
    "the public rows'. MM and LT at alpha = 0.9 fall on 2 seeds of 3 and rise on the third (0.405x -> 0.392x, "
    "0.421x -> 0.392x in the mean), within the seeds' spread, for macro F1 0.002 lower. Dropped.")
SEEDS = (0, 1, 2)
EPSILON = 0.25


def mixed(rows: np.ndarray, loop_rows: np.ndarray, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """float32[len(rows), n_coords]: ``round(alpha * len(rows))`` of the candidate's ``rows``
    (already shuffled) and the rest drawn without replacement from ``loop_rows``, shuffled."""
    keep = int(round(alpha * len(rows)))
    loop = loop_rows[rng.permutation(len(loop_rows))[:len(rows) - keep]]
    out = np.concatenate([rows[:keep], loop]).astype(rows.dtype)
    rng.shuffle(out)
    return out


def main() -> int:
    import polars as pl

    import polars_rap.public.release as public_release

    from bench.public_prior import plan
    from bench.run import run_one

    original, alpha_now = public_release.checked_release, {}

    def wrapped(relaxed, candidates, effective, *args, **kwargs):
        released, record = original(relaxed, candidates, effective, *args, **kwargs)
        if record["reweight_margins"] is not None:  # the public rows were released
            released = mixed(released, relaxed, alpha_now["alpha"], np.random.default_rng(7))
        return released, record

    public_release.checked_release = wrapped
    rows = []
    for seed in SEEDS:
        for alpha in ALPHAS:
            alpha_now["alpha"] = alpha
            started = time.time()
            result = run_one(plan(["matched/margins"], [EPSILON], [seed], False)[0])[0]
            rows.append({"alpha": alpha, "seed": seed, **{c: result[f"{c}_mean_error"] for c in ("CM", "MM", "LT")},
                         "macro_f1": result["macro_f1"]})
            print(rows[-1], f"{time.time() - started:.0f}s", flush=True)
    pl.DataFrame(rows).write_csv(RESULTS / "public_margins_mixture.csv")
    write_table()
    return 0


def write_table() -> None:
    """``bench/results/public_margins_mixture.md`` from the runs' CSV."""
    import polars as pl

    from bench.run import table_markdown

    runs = pl.read_csv(RESULTS / "public_margins_mixture.csv")
    none = pl.read_csv(RESULTS / "public_margins_sqrt.csv").filter(
        (pl.col("epsilon") == EPSILON) & (pl.col("mechanism") == "rap++")).select(
        [f"{c}_mean_error" for c in ("CM", "MM", "LT")]).mean().row(0, named=True)
    table = runs.group_by("alpha").agg(pl.col("CM", "MM", "LT", "macro_f1").mean()).sort("alpha", descending=True)
    table = table.with_columns(*(pl.col(c).truediv(none[f"{c}_mean_error"]).round(3).alias(f"{c} (x none)")
                                 for c in ("CM", "MM", "LT")))
    lines = ["# The public rows mixed with the loop's (bench/public_margins_mixture.py)", "",
             f"acs-income-CA, ε = {EPSILON}, the other states' table, `public_use=['margins']`, seeds "
             f"{', '.join(map(str, SEEDS))}; `alpha`: the released rows' share from the public candidate, the rest "
             f"the loop's rows. Ratios to the run without a public table (`public_margins_sqrt.csv`, the same seeds). "
             f"Run {time.strftime('%Y-%m-%d')}.", "", table_markdown(table), "", "Per seed:", "",
             table_markdown(runs), "", FINDINGS, ""]
    (RESULTS / "public_margins_mixture.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    import sys

    if "--table-only" in sys.argv:
        write_table()
        raise SystemExit(0)
    raise SystemExit(main())
