"""Per-seed pairs of the default and tree_share's 20% step over seeds 0-5 (issue #20).

    python -m bench.tree_share_pairs     # writes bench/results/tree_share_pairs.md

Each seed's two runs come from one environment: seeds 0-2 from ``ablation_tree_share.csv``
(the 20% step) beside the default rows of that day (``rerun_rap_2026-11-25.csv``), seeds 3-5
from ``ablation_tree_share_seeds.csv`` (both steps). Every ratio is the 20% step's metric over
the default's for the same dataset, ε and seed; ``dF1`` is the difference in macro F1. The
means over seeds are what ``ablation_findings.FINDINGS["tree_share_seeds"]`` quotes.
"""

from __future__ import annotations

import json

import polars as pl

from bench.run import RESULTS, read_results, table_markdown

METRICS = {"CM_mean_error": "CM_ratio", "MM_mean_error": "MM_ratio", "LT_mean_error": "LT_ratio",
           "numeric_ks_mean": "KS_ratio"}
KEY = ["dataset", "epsilon", "seed"]


def _histogram_share(parameters: str) -> float | None:
    strategy = (json.loads(parameters).get("synthesize") or {}).get("strategy") or {}
    return strategy.get("histogram_share")


def pairs() -> pl.DataFrame:
    """One row per dataset × ε × seed: the 20% step's ratios to the default and dF1."""
    def load(name: str) -> pl.DataFrame:
        rows = read_results(RESULTS / name).filter(pl.col("status") == "ok")
        return rows.with_columns(pl.col("parameters").map_elements(_histogram_share, return_dtype=pl.Float64)
                                 .alias("share"))

    first = load("ablation_tree_share.csv").filter(pl.col("share") == 0.2)
    first_default = (read_results(RESULTS / "rerun_rap_2026-11-25.csv")
                     .filter((pl.col("status") == "ok") & (pl.col("mechanism") == "rap++")))
    later = load("ablation_tree_share_seeds.csv")
    step = pl.concat([first, later.filter(pl.col("share") == 0.2)], how="vertical_relaxed")
    default = pl.concat([first_default.join(first.select(KEY), on=KEY),
                         later.filter(pl.col("share").is_null()).drop("share")], how="vertical_relaxed")
    both = default.join(step, on=KEY, suffix="_20")
    return (both.select(*KEY, *((pl.col(f"{m}_20") / pl.col(m)).round(3).alias(name)
                                for m, name in METRICS.items()),
                        (pl.col("macro_f1_20") - pl.col("macro_f1")).round(4).alias("dF1"))
            .sort(KEY))


def main() -> int:
    frame = pairs()
    means = (frame.group_by("dataset", "epsilon")
             .agg(*(pl.col(c).mean().round(3) for c in METRICS.values()), pl.col("dF1").mean().round(4),
                  (pl.col("MM_ratio") < 1).sum().alias("MM_lower"), (pl.col("dF1") < 0).sum().alias("F1_lower"),
                  pl.len().alias("seeds"))
             .sort("dataset", "epsilon"))
    path = RESULTS / "tree_share_pairs.md"
    path.write_text("# The 20% step against the default, seed by seed (bench/tree_share_pairs.py)\n\n"
                    + (__doc__ or "").split("\n\n")[2].replace("\n", " ") + "\n\n## Means over seeds\n\n"
                    + table_markdown(means) + "\n\n## Per seed\n\n" + table_markdown(frame) + "\n")
    print(f"table -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
