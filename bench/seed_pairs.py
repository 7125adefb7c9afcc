"""Per-seed pairs of the default and one ablation step over six seeds (issue #20).

    python -m bench.seed_pairs tree_share        # writes bench/results/tree_share_pairs.md
    python -m bench.seed_pairs base_from_cm_20   # writes bench/results/base_from_cm_20_pairs.md
    python -m bench.seed_pairs lt_rounds_10      # writes bench/results/lt_rounds_10_pairs.md
    python -m bench.seed_pairs numeric_ties      # writes bench/results/numeric_ties_pairs.md
    python -m bench.seed_pairs tie_numeric_bins  # writes bench/results/tie_numeric_bins_pairs.md
    python -m bench.seed_pairs tie_pair_counts   # writes bench/results/tie_pair_counts_pairs.md
    python -m bench.seed_pairs tie_pair_separation  # writes bench/results/tie_pair_separation_pairs.md

Three seeds cannot separate a few per cent from the annealed CM rounds' per-seed spread
(``plan_noise_trace.md``), so a candidate default runs at three more seeds beside the default
of its day, and each seed's two runs are compared: every ratio is the step's metric over the
default's for the same dataset, ε and seed; ``dF1`` the difference in macro F1. A
:class:`Comparison` says where each side's rows come from; the means over seeds are what
``ablation_findings.FINDINGS`` quotes. The default's rows at seeds 3-5 of 2026-11-27 (and, the
same command into ``rerun_rap_2026-11-28_seeds345.csv``, of 2026-11-28)::

    python -m bench.run --suite headline --mechanisms rap++ --datasets acs-income-CA adult \
        --epsilons 0.25 1 --seeds 3 4 5 --out bench/results/rerun_rap_2026-11-27_seeds345.csv
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from bench.run import RESULTS, read_results, table_markdown

METRICS = {"CM_mean_error": "CM_ratio", "MM_mean_error": "MM_ratio", "LT_mean_error": "LT_ratio",
           "numeric_ks_mean": "KS_ratio"}
KEY = ["dataset", "epsilon", "seed"]


def _synthesize(parameters: str) -> dict:
    """The run's ``synthesize`` keywords (empty for the default)."""
    return json.loads(parameters).get("synthesize") or {}


def _strategy(synthesize: dict) -> dict:
    return synthesize.get("strategy") or {}


@dataclass(frozen=True)
class Source:
    """Rows of one side from one results CSV: ``rap++`` rows whose ``synthesize`` keywords pass ``keep``."""

    csv: str
    keep: Callable[[dict], bool]

    def rows(self, directory: Path = RESULTS) -> pl.DataFrame:
        rows = read_results(directory / self.csv).filter((pl.col("status") == "ok") & (pl.col("mechanism") == "rap++"))
        kept = rows["parameters"].map_elements(lambda p: self.keep(_synthesize(p)), return_dtype=pl.Boolean)
        return rows.filter(kept)


@dataclass(frozen=True)
class Comparison:
    """A step against the default: pairs of (step, default) sources, each pair run in one
    environment (the same code and day), the step's rows joined to the default's by key."""

    title: str
    why: str
    pairs: tuple[tuple[Source, Source], ...]
    out: str

    def frame(self, directory: Path = RESULTS) -> pl.DataFrame:
        """One row per dataset × ε × seed (the points both sides of a pair hold): the step's
        ratios to the default and dF1, the CSVs read from ``directory``."""
        parts = [step.rows(directory).join(default.rows(directory), on=KEY, suffix="_default")
                 for step, default in self.pairs]
        both = pl.concat(parts, how="vertical_relaxed")
        return (both.select(*KEY, *((pl.col(m) / pl.col(f"{m}_default")).round(3).alias(name)
                                    for m, name in METRICS.items()),
                            (pl.col("macro_f1") - pl.col("macro_f1_default")).round(4).alias("dF1"))
                .sort(KEY))


def _setting(key: str, value) -> Callable[[dict], bool]:
    """Rows whose strategy sets ``key`` to ``value`` (None: leaves it out)."""
    return lambda synthesize: _strategy(synthesize).get(key) == value


def _base_from_cm(synthesize: dict) -> bool:
    strategy = _strategy(synthesize)
    return strategy.get("base_share") == 0.2 and strategy.get("base_from") == "CM"


def _lt_rounds_10(synthesize: dict) -> bool:
    return synthesize == {"rounds_lt": 10}


def _default(synthesize: dict) -> bool:
    return not synthesize


def _histograms_only(synthesize: dict) -> bool:
    """The histograms' counts without a separation floor."""
    strategy = _strategy(synthesize)
    return strategy.get("tie_pair_counts") == "histograms" and "tie_pair_separation" not in strategy


def _separated(synthesize: dict) -> bool:
    """The histograms' counts, pairs kept only one noise std apart."""
    strategy = _strategy(synthesize)
    return strategy.get("tie_pair_counts") == "histograms" and strategy.get("tie_pair_separation") == 1.0


def _pair_count_pairs(step: Callable[[dict], bool]) -> tuple[tuple[Source, Source], ...]:
    """The pairs of the numeric pairs' count ablations (``tie_pair_counts``): the ``step`` rows
    of each file beside the default of 2026-11-29 run with them (seeds 0-5 on CA and Adult, 0-5
    at epsilon 1 and 0-2 at 5 on cps1988, held-out seeds 6-8)."""
    relaxed, before = _setting("tie_pair_counts", "relaxed"), _setting("tie_numeric_bins", 8)
    return ((Source("ablation_tie_pair_counts.csv", step), Source("rerun_rap_2026-11-29.csv", _default)),
            (Source("pair_counts_seeds345.csv", step), Source("tie_pairs_seeds345.csv", before)),
            (Source("pair_counts_cps1988.csv", step), Source("tie_pairs_cps1988.csv", before)),
            (Source("pair_counts_cps1988.csv", step), Source("tie_pairs_cps1988_seeds345.csv", before)),
            (Source("pair_counts_cps1988.csv", step), Source("pair_counts_cps1988.csv", relaxed)),
            (Source("pair_counts_seeds678.csv", step), Source("pair_counts_seeds678.csv", relaxed)))


COMPARISONS = {
    "tree_share": Comparison(
        title="The 20% step against the default, seed by seed",
        why="tree_share's 20% step (numeric histograms on trees, 20% of the loop out of the thresholds' share) "
            "against the default of its day (5% of every class's budget). Seeds 0-2: "
            "``ablation_tree_share.csv`` (the 20% step) beside the default rows of that day "
            "(``rerun_rap_2026-11-25.csv``); seeds 3-5: ``ablation_tree_share_seeds.csv`` (both steps).",
        pairs=((Source("ablation_tree_share.csv", _setting("histogram_share", 0.2)),
                Source("rerun_rap_2026-11-25.csv", _default)),
               (Source("ablation_tree_share_seeds.csv", _setting("histogram_share", 0.2)),
                Source("ablation_tree_share_seeds.csv", _setting("histogram_share", None)))),
        out="tree_share_pairs.md"),
    "base_from_cm_20": Comparison(
        title="Base marginals at 20%, paid by the categorical share, against the default, seed by seed",
        why="base_from_cm_20's step (``base_share=0.2, base_from='CM'``) against the default of 2026-11-27 "
            "(the base marginals 10%, every class paying). Seeds 0-2 (epsilon 0.25, 1 and 5): "
            "``ablation_base_from_cm_20.csv`` beside the default's rows of the rerun of 2026-11-27 "
            "(``rerun_rap_2026-11-27.csv``, the same code, the headline's rap++ rows until stages took 30 steps); "
            "seeds 3-5 (epsilon 0.25 and 1): the same CSV beside the default rerun at those seeds "
            "(``rerun_rap_2026-11-27_seeds345.csv``).",
        pairs=((Source("ablation_base_from_cm_20.csv", _base_from_cm), Source("rerun_rap_2026-11-27.csv", _default)),
               (Source("ablation_base_from_cm_20.csv", _base_from_cm),
                Source("rerun_rap_2026-11-27_seeds345.csv", _default))),
        out="base_from_cm_20_pairs.md"),
    "lt_rounds_10": Comparison(
        title="10 threshold rounds instead of 50 against the default, seed by seed",
        why="lt_rounds_off's step ``rounds_lt=10`` (the same share, a fifth of the rounds) against the default of "
            "2026-11-28 (50 threshold rounds, numerics permuted within each label). Seeds 0-2: "
            "``ablation_lt_rounds_off.csv`` (epsilon 0.25 and 1) and ``ablation_lt_rounds_10_eps5.csv`` (epsilon 5) "
            "beside the default's rows of the quiet rerun of 2026-11-28 (``rerun_rap_2026-11-28b.csv``, the "
            "headline's rap++ rows); seeds 3-5 (epsilon 0.25 and 1): ``ablation_lt_rounds_off.csv`` beside the "
            "default rerun at those seeds (``rerun_rap_2026-11-28_seeds345.csv``).",
        pairs=((Source("ablation_lt_rounds_off.csv", _lt_rounds_10), Source("rerun_rap_2026-11-28b.csv", _default)),
               (Source("ablation_lt_rounds_10_eps5.csv", _lt_rounds_10),
                Source("rerun_rap_2026-11-28b.csv", _default)),
               (Source("ablation_lt_rounds_off.csv", _lt_rounds_10),
                Source("rerun_rap_2026-11-28_seeds345.csv", _default))),
        out="lt_rounds_10_pairs.md"),
    "cm_anneal_margins": Comparison(
        title="Margins as candidates of the annealed CM rounds against the default, seed by seed",
        why="cm_anneal_margins's step (``cm_anneal_margins=True``: the base marginals join the annealed CM rounds' "
            "candidates) against the default of 2026-11-28 (10 threshold rounds), seeds 0-5: "
            "``ablation_cm_anneal_margins.csv`` beside lt_rounds_off's 10-round step (``ablation_lt_rounds_off.csv``, "
            "``rounds_lt=10``: the default since, its seeds 0-2 equal to the headline's rap++ rows to the last float).",
        pairs=((Source("ablation_cm_anneal_margins.csv", _setting("cm_anneal_margins", True)),
                Source("ablation_lt_rounds_off.csv", _lt_rounds_10)),),
        out="cm_anneal_margins_pairs.md"),
    "cm_margin_reserve": Comparison(
        title="The margin refresh (10% of the CM share) against the default, seed by seed",
        why="cm_margin_reserve's 10% step (``cm_margin_reserve=0.1``: the annealed CM step keeps a tenth of its "
            "budget to measure again the base marginals no measured table holds) against the default of 2026-11-28d "
            "(numerics moved to their histograms). Seeds 0-2: ``ablation_cm_margin_reserve.csv`` beside the "
            "default's rows of the rerun of 2026-11-28d (``rerun_rap_2026-11-28d.csv``); seeds 3-5: the same CSV "
            "beside the default rerun at those seeds (``rerun_rap_2026-11-28e_seeds345.csv``).",
        pairs=((Source("ablation_cm_margin_reserve.csv", _setting("cm_margin_reserve", 0.1)),
                Source("rerun_rap_2026-11-28d.csv", _default)),
               (Source("ablation_cm_margin_reserve.csv", _setting("cm_margin_reserve", 0.1)),
                Source("rerun_rap_2026-11-28e_seeds345.csv", _default))),
        out="cm_margin_reserve_pairs.md"),
    "numeric_ties": Comparison(
        title="Numeric ties (10% of the loop) against the default, seed by seed",
        why="numeric_ties's step (``tie_share=0.1``: each numeric column's sums by feature x label released where "
            "their noise std per cell is at most 0.01, followed at decoding) against the default of 2026-11-28e. "
            "Seeds 0-2 (epsilon 1 and 5; at 0.25 the cap measures nothing and the rows are the default's to the last "
            "float): ``ablation_numeric_ties.csv`` beside the default's rows of the rerun of 2026-11-28e "
            "(``rerun_rap_2026-11-28e.csv``, the headline's rap++ rows); seeds 3-5 (epsilon 1): the same CSV beside "
            "the default rerun at those seeds (``rerun_rap_2026-11-28e_seeds345.csv``). The ties' noise has a stream "
            "of its own, so each pair's loop draws the same noise (scaled to 90% of the budget).",
        pairs=((Source("ablation_numeric_ties.csv", _setting("tie_share", 0.1)),
                Source("rerun_rap_2026-11-28e.csv", _default)),
               (Source("ablation_numeric_ties.csv", _setting("tie_share", 0.1)),
                Source("rerun_rap_2026-11-28e_seeds345.csv", _default))),
        out="numeric_ties_pairs.md"),
    "tie_numeric_bins": Comparison(
        title="Numeric pairs (8 bins, kept where the release supports them) against the default, seed by seed",
        why="tie_numeric_bins's step (``tie_numeric_bins=8``: the ties' release also holds each numeric column's "
            "sums by 8 bins of every earlier numeric, and decoding keeps the relaxed rows' pairing where those sums "
            "favour it) against the default of 2026-11-28f (numeric ties by feature x label). Seeds 0-2 (epsilon "
            "0.25, 1 and 5): ``ablation_tie_numeric_bins.csv`` beside the default's rows of the rerun of 2026-11-28f "
            "(``rerun_rap_2026-11-28f.csv``); seeds 3-5 (epsilon 1 and 5): ``tie_pairs_seeds345.csv`` beside "
            "``tie_pairs_seeds345_default.csv`` (the same day and code); cps1988 (the generalization suite's split "
            "and evaluation), seeds 0-2 at epsilon 0.25 and 1 and 3-5 at 1: ``tie_pairs_cps1988.csv`` and "
            "``tie_pairs_cps1988_seeds345.csv`` beside the default's (``tie_pairs_cps1988_default.csv``, the "
            "suite's rap++ rows of 2026-11-29, and ``tie_pairs_cps1988_seeds345_default.csv``). At epsilon 0.25 "
            "the ties are above their noise cap, nothing is measured and the rows are the default's.",
        pairs=((Source("ablation_tie_numeric_bins.csv", _setting("tie_numeric_bins", 8)),
                Source("rerun_rap_2026-11-28f.csv", _default)),
               (Source("tie_pairs_seeds345.csv", _setting("tie_numeric_bins", 8)),
                Source("tie_pairs_seeds345_default.csv", _default)),
               (Source("tie_pairs_cps1988.csv", _setting("tie_numeric_bins", 8)),
                Source("tie_pairs_cps1988_default.csv", _default)),
               (Source("tie_pairs_cps1988_seeds345.csv", _setting("tie_numeric_bins", 8)),
                Source("tie_pairs_cps1988_seeds345_default.csv", _default))),
        out="tie_numeric_bins_pairs.md"),
    "tie_pair_counts": Comparison(
        title="The numeric pairs' test with the released histograms' counts against the default, seed by seed",
        why="tie_pair_counts's step (``tie_pair_counts='histograms'``: the test predicts each pair cell's sum from "
            "the earlier column's released histogram, regrouped into the bins, not from the relaxed rows' mass) "
            "against the default of 2026-11-29 (the relaxed rows' masses). Seeds 0-2 (epsilon 1 and 5): "
            "``ablation_tie_pair_counts.csv`` beside the rerun of 2026-11-29 (``rerun_rap_2026-11-29.csv``); seeds "
            "3-5: ``pair_counts_seeds345.csv`` beside ``tie_pairs_seeds345.csv`` (the default's rows, run as "
            "``tie_numeric_bins=8`` before it was the default); cps1988 (the generalization suite's split and "
            "evaluation), seeds 0-5 at epsilon 1: ``pair_counts_cps1988.csv`` beside ``tie_pairs_cps1988.csv`` and "
            "``tie_pairs_cps1988_seeds345.csv``, and seeds 0-2 at epsilon 5 beside the same day's "
            "``tie_pair_counts='relaxed'`` rows in ``pair_counts_cps1988.csv``. The test is post-processing: each "
            "pair's fits are the same up to the decision, and where it is the same the rows are equal to the last "
            "float.",
        pairs=_pair_count_pairs(_histograms_only),
        out="tie_pair_counts_pairs.md"),
    "tie_pair_separation": Comparison(
        title="The numeric pairs' test with the released histograms' counts, kept only where the hypotheses are one "
              "noise std apart, against the default, seed by seed",
        why="tie_pair_counts's second step (``tie_pair_counts='histograms'``, ``tie_pair_separation=1``: a pair the "
            "release separates from none by less than one noise std is dropped untested) against the default of "
            "2026-11-29, from the same files as ``tie_pair_counts_pairs.md``. Seeds 6-8 (``pair_counts_seeds678.csv``, "
            "all three settings) were run only after the floor was chosen on seeds 0-5, as held-out seeds.",
        pairs=_pair_count_pairs(_separated),
        out="tie_pair_separation_pairs.md"),
}


def means(frame: pl.DataFrame) -> pl.DataFrame:
    """Mean per-seed ratios per dataset × ε, with how many seeds lowered MM and F1."""
    return (frame.group_by("dataset", "epsilon")
            .agg(*(pl.col(c).mean().round(3) for c in METRICS.values()), pl.col("dF1").mean().round(4),
                 (pl.col("CM_ratio") < 1).sum().alias("CM_lower"), (pl.col("MM_ratio") < 1).sum().alias("MM_lower"),
                 (pl.col("dF1") < 0).sum().alias("F1_lower"), pl.len().alias("seeds"))
            .sort("dataset", "epsilon"))


def write(name: str) -> str:
    comparison = COMPARISONS[name]
    frame = comparison.frame()
    if frame.is_empty():
        msg = f"{name}: no seed has both runs yet"
        raise SystemExit(msg)
    path = RESULTS / comparison.out
    path.write_text(f"# {comparison.title} (bench/seed_pairs.py {name})\n\n{comparison.why} Every ratio is the step's "
                    "metric over the default's for the same dataset, epsilon and seed; ``dF1`` the difference in "
                    "macro F1; ``*_lower`` count the seeds where the step's figure is lower.\n\n## Means over seeds\n\n"
                    + table_markdown(means(frame)) + "\n\n## Per seed\n\n" + table_markdown(frame) + "\n")
    return str(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(COMPARISONS))
    print(f"table -> {write(parser.parse_args(argv).name)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
