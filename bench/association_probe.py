"""How much of each numeric column's association with the categorical features the rows keep.

No query class of the benchmark suite pairs a numeric column with a categorical feature (CM is
categorical only, MM two numeric prefixes x the label, LT numeric halfspaces x the label), and
below the numeric ties' noise cap decoding permutes each numeric column within each label
(:mod:`polars_rap.decode.numeric_coupling`). This probe reads what the suite cannot: for every pair of
a numeric column and a categorical column, the quality report's correlation ratio (eta) on the
real training rows and on the synthetic ones (:func:`polars_rap.quality.report.quality_report`), and
reports per dataset, ε and strategy

- ``eta_error``: the mean of ``|eta_real - eta_synthetic|`` over those pairs;
- ``strong_kept``: the mean of ``eta_synthetic / eta_real`` over the pairs with ``eta_real >=``
  :data:`STRONG` (1 keeps them all, 0 none).

    PYTHONPATH=src:. python -m bench.association_probe    # -> bench/results/association_probe.md
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
STRONG = 0.2
RUNS = (  # (dataset, ε, strategy label, synthesize keywords)
    *((d, 0.25, "default", {}) for d in ("acs-income-CA", "adult")),
    *((d, 0.25, "tie_noise_cap 0.025", {"strategy": {"name": "planned", "tie_noise_cap": 0.025}})
      for d in ("acs-income-CA", "adult")),
    *((d, 1.0, "default (ties measured)", {}) for d in ("acs-income-CA", "adult")),
)
SEEDS = (0, 1, 2)
FINDING = ("What it showed: below the ties' cap the rows keep about a third to two fifths of the strong "
           "associations (CA's AGEP x MAR: eta 0.55 real, 0.06 synthetic on seed 0); the ties at a 0.025 cap do "
           "not bring them back (the ridge shrinks noise this large to little); at eps = 1, where they are measured, "
           "about three fifths are kept. A cheaper measurement of these associations at small eps is open.")


def association_scores(pairs, strong: float = STRONG) -> tuple[float, float]:
    """(eta_error, strong_kept) of a quality report's ``pairs`` frame (module docstring).

    >>> import polars as pl
    >>> pairs = pl.DataFrame({"measure": ["correlation ratio", "correlation ratio", "Cramer's V"],
    ...                       "real": [0.5, 0.1, 0.9], "synthetic": [0.25, 0.1, 0.0]})
    >>> association_scores(pairs)
    (0.125, 0.5)
    """
    import polars as pl

    eta = pairs.filter(pl.col("measure") == "correlation ratio")
    error = float((eta["real"] - eta["synthetic"]).abs().mean())
    strong_pairs = eta.filter(pl.col("real") >= strong)
    kept = float((strong_pairs["synthetic"] / strong_pairs["real"]).mean()) if strong_pairs.height else float("nan")
    return error, kept


def main() -> int:
    import polars as pl

    import polars_rap
    from polars_rap.quality.report import quality_report

    from bench.run import prepare_dataset, table_markdown

    rows = []
    for dataset, epsilon, label, keywords in RUNS:
        train, _, task = prepare_dataset(dataset, None)
        scores = []
        for seed in SEEDS:
            result = polars_rap.synthesize(train, epsilon=epsilon, delta=1.0 / train.height**2, domain=task.domain,
                                           labels=task.labels, seed=seed, progress=False, **keywords)
            report = quality_report(train, result.data, domain=task.domain, labels=task.labels, seed=0)
            scores.append(association_scores(report.pairs))
        error, kept = np.mean(scores, axis=0)
        rows.append({"dataset": dataset, "epsilon": epsilon, "strategy": label, "eta_error": round(float(error), 4),
                     "strong_kept": round(float(kept), 3), "seeds": len(SEEDS)})
        print(rows[-1], flush=True)
    lines = ["# Numeric x categorical associations kept (bench/association_probe.py)", "",
             f"Correlation ratio of every numeric x categorical pair, real training rows vs synthetic; mean over "
             f"seeds {list(SEEDS)}; `strong_kept` over pairs with eta_real >= {STRONG}. Run "
             f"{time.strftime('%Y-%m-%d')} on a 2-core AMD EPYC.", "", table_markdown(pl.DataFrame(rows)), "", FINDING]
    (RESULTS / "association_probe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
