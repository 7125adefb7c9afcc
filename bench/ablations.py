"""Ablations of the synthesis strategy: one change at a time, both headline datasets, 3 seeds.

    python -m bench.ablations --run strategy      # the runs (resumable), then the table
    python -m bench.ablations --table strategy    # only the table, from the committed CSV

Each step of an ablation adds one change to the one before it (``STEPS``); every run goes
through ``bench.run`` (a fresh subprocess, the headline suite's split, evaluation workload and
δ = 1/n²), as the ``rap++`` mechanism with the step's ``synthesize`` keywords, into
``bench/results/ablation_<name>.csv``. The table (``ablation_<name>.md``) gives the mean over
seeds of each metric per dataset and step, beside the paper's algorithm (the headline suite's
``rap++paper`` rows at the same ε and seeds) and each step's ratio to it. A step with no
keywords is the default, whose rows are the headline suite's ``rap++`` rows (not rerun here),
except in the ablations of ``RERUN_DEFAULT``, whose metrics are newer than those rows, and in
those of ``DEFAULT_ROWS``, run under an earlier default whose rows it names.

A step's keywords may hold ``"domain_updates"``: per dataset, keys merged into numeric
columns' declared domains (``bench.run --domain-updates``, e.g. a column's ``scale`` or
``atoms``). Such a step runs on the datasets it names only. ``"projection"`` holds
:class:`~polars_rap.ProjectionConfig` keywords (``--projection``); the other keywords go to
``synthesize`` (``--synthesize``).

    python -m bench.ablations --run numeric       # declared scales and atoms (issue #14)
    python -m bench.ablations --run cm_anneal     # AIM's budget annealing of the CM share (issue #20)
    python -m bench.ablations --run class_shares  # budget moved from LT to CM (issue #20)
    python -m bench.ablations --run histograms    # numeric one-way histograms x label (issues #14, #20)
    python -m bench.ablations --run warm          # a short annealing schedule for warm rounds (fit time)
    python -m bench.ablations --run independence_prior  # AIM's loop and its inference of unmeasured tables (#20)
    python -m bench.ablations --run mediated_prior      # unmeasured tables inferred through a measured third feature (#20)
    python -m bench.ablations --run base_from_cm        # the base marginals paid by the categorical share alone (#20)
    python -m bench.ablations --run cm_prefixes         # numeric prefixes x feature x label in the CM loop (#20)
    python -m bench.ablations --run histograms_now      # the numeric histograms again, on the current default (#14, #20)
    python -m bench.ablations --run histograms_from_lt  # the histograms paid by the thresholds' share alone (#14, #20)
    python -m bench.ablations --run mm_rounds           # mixed marginals in the training workload (#20)
    python -m bench.ablations --run histogram_trees     # the numeric histograms released on trees (#14, #20)
    python -m bench.ablations --run tree_share          # twice the trees' budget, out of the thresholds' (#14, #20)
    python -m bench.ablations --run histogram_nodes     # the histograms' tree nodes fitted, not their prefixes (#20)
    python -m bench.ablations --run cm_share_3          # CM:LT shares 3:1 instead of 2:1 (#20)
    python -m bench.ablations --run lt_selection        # threshold rounds paying a fifth for selection (#20)
    python -m bench.ablations --run numeric_off_categories  # numeric queries' gradient kept off the categories (#20)
    python -m bench.ablations --run tree_share_seeds --seeds 3 4 5 --epsilons 0.25 1  # tree_share's 20% step, more seeds
    python -m bench.ablations --run tree_share_25 --epsilons 0.25 1  # 25% of the loop to the histograms (#20)
    python -m bench.ablations --run base_share --epsilons 0.25 1     # the base marginals' budget doubled (#20)
    python -m bench.ablations --run base_from_cm_20 --epsilons 0.25 1  # ... paid by the categorical share (#20)
    python -m bench.ablations --run base_from_cm_20 --epsilons 0.25 1 --seeds 3 4 5  # paired: bench.seed_pairs
    python -m bench.ablations --run base_from_cm_20 --epsilons 5
    python -m bench.ablations --run patience_5 --epsilons 0.25 1     # shorter stages, for the time target (#20)
    python -m bench.ablations --run noise_floor_1 --epsilons 0.25 1  # stages stop at the noise's loss (#20)
    python -m bench.ablations --run steps_30 --epsilons 0.25 1       # at most 30 Adam steps a stage (#20)
    python -m bench.ablations --run relaxed_rows --epsilons 0.25 1   # 500 relaxed rows (#20)
    python -m bench.ablations --run numeric_coupling --epsilons 0.25 1  # numerics permuted within labels (#20)
    python -m bench.ablations --run lt_rounds_off --epsilons 0.25 1  # no threshold rounds: histograms instead (#20)
    python -m bench.ablations --run lt_rounds_off --epsilons 0.25 1 --seeds 3 4 5 --steps "10 threshold rounds"
    python -m bench.ablations --run histogram_weight --epsilons 0.25 1  # histograms weighed more (#14, #20)
    python -m bench.ablations --run steps_60 --epsilons 0.25 1 5     # the paper's 60 Adam steps a stage again (#20)
    python -m bench.ablations --run lt_class_k --epsilons 0.25 1     # 50 threshold groups a round (#20)
    python -m bench.ablations --run lt_rounds_5 --epsilons 0.25 1    # 5 threshold rounds (#20)
    python -m bench.ablations --run cm_anneal_margins --epsilons 0.25 1  # margins as annealed candidates (#20)
    python -m bench.ablations --run histogram_match --epsilons 0.25 1  # numerics moved to their histograms (#14)
    python -m bench.ablations --run base_size_exponent --epsilons 0.25 1  # base budget by cells^(2/3) (#20)
    python -m bench.ablations --run cm_margin_reserve --epsilons 0.25 1  # unheld margins measured again (#20)
    python -m bench.ablations --run tie_noise_cap --epsilons 0.25     # numeric ties where noisier (small tables)
    python -m bench.ablations --run cm_anneal_pairs --epsilons 0.25 1  # feature pairs as annealed candidates (#20)
    python -m bench.ablations --run numeric_ties --epsilons 0.25 1  # numeric x feature ties released, decoded (#20)
    python -m bench.ablations --run tie_numeric_bins --epsilons 0.25 1 5  # numeric pairs the release supports, kept
    python -m bench.ablations --run tie_pair_counts --epsilons 1 5  # the pairs test reads released histogram counts

(``--steps`` runs only the steps of those labels: one candidate at more seeds or another ε.)

(A step another ablation ran on the same default is read from its CSV and not rerun, at the ε
and seeds it ran:
``cm_anneal``'s base has ε = 1 rows only, in ``ablation_selection.csv``.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from bench.ablation_findings import FINDINGS, SECONDS_NOTES
from bench.run import ERROR_CLASSES, RESULTS, read_results, table_markdown

PLANNED = {"name": "planned"}
STEPS: dict[str, list[tuple[str, dict, str]]] = {
    "strategy": [
        ("outright, shares by rounds",
         {"strategy": {**PLANNED, "class_shares": "rounds", "outright": True, "inverse_variance": False,
                       "decoding": "independent"}},
         "the paper's class shares, but a class whose rounds measure every group anyway is "
         "measured outright, without paying for selection"),
        ("+ equal class shares",
         {"strategy": {**PLANNED, "outright": True, "inverse_variance": False, "decoding": "independent"}},
         "each query class gets the same budget, whatever its number of rounds"),
        ("+ inverse-variance weights",
         {"strategy": {**PLANNED, "inverse_variance": True, "decoding": "independent"}},
         "the projection weighs each measured answer by 1 / noise variance (maximum likelihood)"),
        ("+ controlled decoding (the default)",
         {},
         "systematic sampling of the categories of each relaxed row's copies"),
    ],
    "shrinkage": [
        ("planned default", {}, "the default planned strategy (the headline suite's rap++ rows)"),
        ("+ James-Stein shrinkage of CM",
         {"strategy": {**PLANNED, "shrinkage": True}},
         "the projection fits each categorical marginal's positive-part James-Stein estimate "
         "toward conditional independence (post-processing) instead of its noisy answers"),
    ],
    "selection": [
        ("planned default", {}, "the default planned strategy (the headline suite's rap++ rows): "
                                "each LT round pays half its budget for its Gumbel selection"),
        ("+ selection share 0.2", {"selection_share": 0.2},
         "each selection round pays a fifth of its budget for the Gumbel top-K, four fifths "
         "for measuring the groups it picks"),
        ("+ CM budget by cells^(2/3)",
         {"selection_share": 0.2, "strategy": {**PLANNED, "size_exponent": 2 / 3}},
         "each CM group's share of the CM budget in proportion to its cells ** (2/3), which "
         "minimises the expected total absolute noise over all the workload's cells"),
    ],
}
STEPS["cm_selection"] = [
    ("selection share 0.2", {"selection_share": 0.2},
     "the base of this ablation: selection rounds pay a fifth of their budget for the Gumbel top-K"),
    ("+ CM by noise-aware selection (6 rounds x 5)",
     {"selection_share": 0.2, "rounds_cm": 6,
      "strategy": {**PLANNED, "noise_aware": True, "class_k": {"CM": 5}}},
     "instead of measuring all CM tables outright, 6 rounds each select 5 tables by their L1 error minus "
     "their expected noise norm (AIM's score) and measure them with 5x the budget each"),
    ("+ base marginals (10%)",
     {"selection_share": 0.2, "rounds_cm": 6,
      "strategy": {**PLANNED, "noise_aware": True, "class_k": {"CM": 5}, "base_share": 0.1}},
     "every feature x label marginal measured outright first with 10% of the budget (AIM's one-ways)"),
]
STEPS["cm_anneal"] = [
    ("selection share 0.2", {"selection_share": 0.2},
     "the base of this ablation (the rows of bench/results/ablation_selection.csv, not rerun): every "
     "CM table measured outright, selection rounds paying a fifth of their budget for the Gumbel top-K"),
    ("+ CM by annealed rounds (AIM's budget annealing)",
     {"selection_share": 0.2, "strategy": {**PLANNED, "cm_anneal": True}},
     "the CM share is spent by adaptive rounds instead of one outright step: each selects one table "
     "among all CM tables by its L1 error minus its expected noise norm (AIM's score), measures it "
     "and projects; rounds start at 1/T0 of the share (T0 = the CM tables) and a round whose "
     "measurement moved the synthetic answers by less than the noise's expected L1 norm quadruples "
     "the next round's budget, so the number of tables measured follows the noise level "
     "(polars_rap.fit.annealing)"),
]
STEPS["class_shares"] = [
    ("planned default", {}, "the default planned strategy then: CM and LT get equal shares (the headline "
                            "suite's rap++ rows until 2026-11-24, rerun_rap_2026-11-23.csv)"),
    ("CM:LT shares 2:1", {"strategy": {**PLANNED, "class_shares": {"CM": 2, "LT": 1}}},
     "two thirds of the loop's budget to the categorical marginals, one third to the thresholds: "
     "LT error is 0.3-0.6x AIM's on Adult while CM is 1.1-1.3x AIM's at polars-rap's guarantee, so "
     "this measures what budget moved from LT to CM buys"),
]
CM2 = {**PLANNED, "class_shares": {"CM": 2, "LT": 1}}
STEPS["histograms"] = [
    ("CM:LT 2:1 (the default then)", {"strategy": CM2},
     "the planned strategy with CM:LT shares 2:1, the default when this ran (before warm rounds), with "
     "explicit keywords (rows of ablation_class_shares.csv, not rerun)"),
    ("+ numeric histograms (10%), last, a tenth of the weight",
     {"strategy": {**CM2, "histogram_share": 0.1, "histogram_position": "last", "histogram_weight": 0.1}},
     "the same histograms and budget, their step after every other (the thresholds shape the joint "
     "distribution first) and their answers' inverse-variance weights in the projection loss times "
     "0.1 (post-processing): the variant that kept LT level in probe_histograms.md (one seed)"),
]
STEPS["warm"] = [
    ("whole schedule (the default until 2026-11-24)", {"strategy": {**PLANNED, "warm_doublings": None}},
     "the planned strategy as it was: every threshold round's projection anneals the whole schedule, "
     "sigma 8 to 512 in 7 stages, from rows the previous round already fitted (these rows ran as the "
     "default, with no keyword, before warm_doublings existed: the same runs)"),
    ("+ warm rounds run the last 3 stages", {"projection": {"warm_doublings": 2}},
     "every threshold round after the first projects at sigma 128, 256 and 512 only (the warm start "
     "is already sharp), a fit-time cut: LT rounds are most of the fit and each re-annealed from "
     "sigma 8 (polars_rap.fit.projection.temperature_stages)"),
    ("+ warm rounds run the last 2 stages", {"projection": {"warm_doublings": 1}},
     "the same, shorter still: sigma 256 and 512 only (instead of the step above, not on top of it); "
     "the default since 2026-11-24"),
    ("+ warm rounds run the last stage", {"projection": {"warm_doublings": 0}},
     "the same at sigma 512 alone, as a round of categorical queries does (instead of the steps above)"),
    ("+ LT in 10 rounds of 50", {"projection": {"warm_doublings": 2}, "rounds_lt": 10, "queries_per_round": 50},
     "on top of the last 3 stages: the 500 LT groups in 10 selection rounds of 50 instead of 50 of 10, "
     "so 10 projections instead of 50 (and a fifth of the Gumbel selections, each of 50)"),
]
ADULT_LOG = {column: {"scale": "log"} for column in ("capital-gain", "capital-loss", "fnlwgt")}
ADULT_ATOMS = {column: {"scale": "log", "atoms": [0]} for column in ("capital-gain", "capital-loss")}
STEPS["numeric"] = [
    ("planned default", {}, "the default planned strategy, every numeric column on a linear scale "
                            "(the headline suite's rap++ rows, rerun after the merge of the numeric "
                            "metric, exact samplers and nullable halfspaces)"),
    ("+ declared scales",
     {"domain_updates": {"adult": ADULT_LOG, "acs-income-CA": {"JWMNP": {"scale": "sqrt"}}}},
     "Adult's capital-gain, capital-loss and fnlwgt on the log scale, CA's JWMNP (commute "
     "minutes, 1-200) on the square-root scale: the threshold workload and the projection follow "
     "the declared map, so thresholds land where the rows are (polars_rap.schema.transforms)"),
    ("+ atoms at 0 (Adult)",
     {"domain_updates": {"adult": {**ADULT_LOG, **ADULT_ATOMS}}},
     "capital-gain and capital-loss also declare the atom 0 (held by about 92% and 95% of the "
     "rows): a slab of the coordinate that decodes to exactly 0; CA has no such column"),
]
STEPS["integer_cells"] = [
    ("planned default", {}, "the default planned strategy: integer columns counted at their whole "
                            "values (the headline suite's rap++ rows)"),
    ("+ integer cells", {"strategy": {**PLANNED, "integer_cells": True}},
     "each whole value of an integer column spread over its rounding cell [x - 1/2, x + 1/2] by a "
     "hash of its row before the real rows are counted, so that decoding's rounding to the nearest "
     "integer keeps the cell masses the projection fitted (polars_rap.schema.encoding.spread_integer_cells)"),
]
AIM_LOOP = {**PLANNED, "base_share": 0.1, "cm_anneal": True, "cm_anneal_selection_share": 0.1}
STEPS["independence_prior"] = [
    ("planned default", {}, "the default planned strategy: every CM table measured outright (the headline "
                            "suite's rap++ rows)"),
    ("+ AIM's loop for CM", {"strategy": AIM_LOOP},
     "every feature x label margin measured first with 10% of the budget (base marginals, AIM's one-ways), "
     "then the CM share spent by annealed rounds (AIM's budget annealing, one table a round chosen by the "
     "noise-aware score, paying AIM's 0.1 of the round for it) instead of measuring every table outright"),
    ("+ independence prior", {"strategy": {**AIM_LOOP, "independence_prior": True}},
     "the projection fits every CM table not measured (yet) toward the conditional independence of its two "
     "features given the label, from the relaxed data's own margins (polars_rap.fit.independence_prior; "
     "post-processing), as AIM's graphical model infers the tables it never measures"),
    ("+ annealing from a quarter", {"strategy": {**AIM_LOOP, "independence_prior": True, "cm_anneal_start": 0.25}},
     "T0 four times the CM tables: the annealed rounds start at a quarter of an outright step's budget per table "
     "(noise std doubled) and anneal up, so more tables can be measured (AIM starts at rho / 16d)"),
]
STEPS["mediated_prior"] = [
    ("outright default (until this change)", {},
     "the planned strategy's default before this ablation: every CM table measured outright (the headline "
     "suite's rap++ rows of the rerun of 2026-11-24c)"),
    ("AIM's loop + independence prior", {"strategy": {**AIM_LOOP, "independence_prior": True}},
     "ablation_independence_prior's best step: unmeasured CM tables fitted toward independence of their two "
     "features given the label"),
    ("+ mediated prior", {"strategy": {**AIM_LOOP, "independence_prior": "mediated"}},
     "an unmeasured table (a, b, label) whose features each share a measured table with a third feature c "
     "is fitted toward a and b independent given (c, label), the maximum-entropy table given those two "
     "(through the c of strongest association; polars_rap.fit.independence_prior.mediated_targets), as AIM's "
     "graphical model infers a table through the cliques it measured"),
    ("+ mediator gate 1", {"strategy": {**AIM_LOOP, "independence_prior": "mediated", "mediator_gate": 1.0}},
     "a measured table links two features only where its interaction's energy is more than twice its noise's, "
     "||y - m(y)||^2 > 2 cells sigma^2 (polars_rap.fit.independence_prior.significant_links): at low eps a table "
     "measured mostly as noise otherwise passes its noise on to the tables it mediates"),
    ("+ every table where precise (L1 0.15)",
     {"strategy": {**AIM_LOOP, "independence_prior": "mediated", "mediator_gate": 1.0, "cm_outright_l1": 0.15}},
     "the CM step measures every table outright, in one round, when that would add an expected noise L1 norm "
     "of at most 0.15 per table (a table sums to 1; public). Both datasets have 0.07-0.08 at eps = 5 and "
     "0.33-0.36 at eps = 1, so it acts at eps = 5 only (rows at eps <= 1 are the step before's, by construction)"),
]
STEPS["base_from_cm"] = [
    ("planned default", {}, "the default since the rerun of 2026-11-24d: base marginals' 10% out of every class's "
                            "share (the headline suite's rap++ rows)"),
    ("+ base marginals from the CM share", {"strategy": {"name": "planned", "base_from": "CM"}},
     "the base marginals' 10% comes out of the categorical share alone, so the threshold classes keep the "
     "budget they had before the base marginals (their noise std was about 5% higher)"),
]
CM_PREFIXES = [0.125, 0.25, 0.5, 0.75]
STEPS["cm_prefixes"] = [
    ("planned default", {}, "the default since the rerun of 2026-11-24d: the annealed CM loop first, after the "
                            "base marginals (the headline suite's rap++ rows)"),
    ("+ CM loop after the thresholds", {"strategy": {"name": "planned", "cm_anneal_last": True}},
     "the annealed CM step runs after the linear thresholds' step, so that its selections see the numeric "
     "columns as the thresholds fitted them"),
    ("+ categorical prefixes", {"strategy": {"name": "planned", "cm_anneal_last": True, "cm_prefixes": CM_PREFIXES}},
     "on top of the step before: every feature x label x numeric prefix x_j <= t (t at 1/8, 1/4, 1/2, 3/4 of the "
     "mapped range, half-integers on integer columns; polars_rap.fit.categorical_prefixes) joins the CM loop's "
     "candidates, so its noise-aware selection can measure how a numeric column moves with a feature, as AIM's "
     "3-way marginals of binned numerics do (nothing in the workload tied them before)"),
    ("+ categorical prefixes, a step of their own last (10%)",
     {"strategy": {"name": "planned", "cm_prefixes": CM_PREFIXES, "cm_prefixes_share": 0.1}},
     "instead of the two steps above, on the default: the same prefixes measured by annealed rounds of their "
     "own, after the thresholds' step, with 10% of the budget out of every class's"),
]
STEPS["histograms_now"] = [
    ("planned default", {}, "the default since the rerun of 2026-11-24d: base marginals, the annealed CM loop, "
                            "then the thresholds (the headline suite's rap++ rows)"),
    ("+ numeric histograms (10%), last, a tenth of the weight",
     {"strategy": {"name": "planned", "histogram_share": 0.1, "histogram_position": "last", "histogram_weight": 0.1}},
     "ablation_histograms' step again on the current default: each numeric column's one-way histogram x label "
     "measured once with 10% of the loop's budget after every other step, its answers weighed a tenth of their "
     "inverse variance (the base marginals and annealed CM loop did not exist when it was dropped for CM)"),
    ("+ numeric histograms (5%), last, a tenth of the weight",
     {"strategy": {"name": "planned", "histogram_share": 0.05, "histogram_position": "last", "histogram_weight": 0.1}},
     "the same with half the budget (instead of the step above, not on top of it): the 10% cost CM 3-4% on CA, "
     "as the budget it takes from the CM share would"),
]
STEPS["histograms_from_lt"] = [
    ("planned default", {}, "the default since the rerun of 2026-11-24e: numeric histograms with 5% of the whole "
                            "loop's budget, last, a tenth of the weight (the headline suite's rap++ rows)"),
    ("numeric histograms (10%) out of the thresholds' share",
     {"strategy": {"name": "planned", "histogram_share": 0.1, "histogram_from": "LT"}},
     "twice the histograms' budget, all of it out of the LT steps (histogram_from='LT'): the base marginals and "
     "the CM loop keep the budget they have without histograms (the 10% step of histograms_now cost CM 2-4%)"),
    ("numeric histograms (5%) out of the thresholds' share",
     {"strategy": {"name": "planned", "histogram_from": "LT"}},
     "instead: the default's 5%, out of the LT steps alone, so that the categorical steps get back the 5% they "
     "pay for the histograms today"),
]
STEPS["mm_rounds"] = [
    ("planned default", {}, "the default since the rerun of 2026-11-24e (the headline suite's rap++ rows): no "
                            "mixed marginals in the training workload, only CM, LT and the numeric histograms"),
    ("+ mixed marginals (10 rounds x 10), paid by the thresholds",
     {"rounds_mm": 10, "strategy": {"name": "planned", "class_shares": {"CM": 2, "MM": 0.5, "LT": 0.5}}},
     "the MM class joins the plan (2,000 random two-numeric-prefix x label groups, 10 selection rounds of 10, "
     "as rap++mm) with half of the thresholds' share, so the categorical steps keep theirs: the suite's MM "
     "error (two prefixes x a label) is 0.56-0.85x the best peer's, #20 asks for half, and nothing in the "
     "default's workload measures two numeric columns jointly but the 1-d projections of LT"),
]
STEPS["histogram_trees"] = [
    ("planned default", {}, "the default since the rerun of 2026-11-24e (the headline suite's rap++ rows): each "
                            "numeric histogram released flat, its k-th prefix the sum of k noisy cells"),
    ("+ histograms released on trees (auto branching)",
     {"strategy": {"name": "planned", "histogram_branching": "auto"}},
     "the same budget spent on the nodes of a tree over each histogram's cells (binary for CA's and Adult's "
     "columns), the prefixes read back by least squares: the mean prefix's noise variance falls from 100 cells' "
     "to 9 at 200 cells (JWMNP), from about 40 to 7 at AGEP's 79; the histograms' weight stays a tenth of the "
     "(now larger) inverse variance"),
    ("+ the histograms' weight 0.3",
     {"strategy": {"name": "planned", "histogram_branching": "auto", "histogram_weight": 0.3}},
     "instead of the next step: the trees' prefixes weigh three times more again (0.01 raised every error)"),
    ("+ the histograms' weight 0.01",
     {"strategy": {"name": "planned", "histogram_branching": "auto", "histogram_weight": 0.01}},
     "instead: the trees' prefixes weigh about ten times what the flat ones did; a tenth of the 0.1 keeps their "
     "pull on the fit where it was tuned"),
]
STEPS["tree_share"] = [
    ("planned default", {}, "the default since the rerun of 2026-11-25 (the headline suite's rap++ rows): numeric "
                            "histograms on trees with 5% of the whole loop's budget, last, a tenth of the weight"),
    ("numeric histograms (10%) out of the thresholds' share",
     {"strategy": {"name": "planned", "histogram_share": 0.1, "histogram_from": "LT"}},
     "histograms_from_lt's 10% step again now that the histograms are released on trees (each unit of their "
     "budget buys about ten times less prefix noise variance than when that step cost LT 5-18%): the categorical "
     "steps keep their budget, the thresholds pay"),
    ("numeric histograms (20%) out of the thresholds' share",
     {"strategy": {"name": "planned", "histogram_share": 0.2, "histogram_from": "LT"}},
     "most of the thresholds' share to the histograms (LT keeps about a third of its own): mm_margins.md finds MM "
     "and LT error almost all in the one-way numeric margins per label (true margins with the columns "
     "independent given the label: MM 0.0005, a seventh of the fit's)"),
]
STEPS["histogram_nodes"] = [
    ("planned default", {}, "the default since the rerun of 2026-11-25 (the headline suite's rap++ rows): each "
                            "histogram's least-squares prefixes fitted, each by its own inverse variance, a tenth of it"),
    ("nodes fitted, weight 1 (maximum likelihood)",
     {"strategy": {"name": "planned", "histogram_fit": "nodes", "histogram_weight": 1.0}},
     "the projection fits each histogram's tree nodes, the independent noisy counts the release drew, each by "
     "its inverse variance and no other factor, instead of the prefixes read back from them (which share their "
     "nodes' noise, counted once per prefix by a diagonal loss): the maximum-likelihood fit, same release"),
    ("nodes fitted, weight 0.3",
     {"strategy": {"name": "planned", "histogram_fit": "nodes", "histogram_weight": 0.3}},
     "the nodes fitted at 0.3 of their inverse variance"),
]
STEPS["cm_share_3"] = [
    ("planned default", {}, "the default since the rerun of 2026-11-25 (the headline suite's rap++ rows): CM:LT "
                            "shares 2:1"),
    ("CM:LT shares 3:1",
     {"strategy": {"name": "planned", "class_shares": {"CM": 3.0, "MM": 1.0, "LT": 1.0}}},
     "the categorical marginals three times the thresholds' budget instead of twice (their share of the two "
     "classes 3/4 instead of 2/3): CM is 1.01x AIM's on Adult at eps = 0.25 and 0.99x on CA at eps = 1, where LT "
     "is 0.60-0.87x AIM's"),
]
STEPS["lt_selection"] = [
    ("planned default", {}, "the default since the rerun of 2026-11-25 (the headline suite's rap++ rows): each LT "
                            "round pays half its budget for its Gumbel selection"),
    ("LT selection share 0.2",
     {"strategy": {"name": "planned", "selection_share": 0.2}},
     "each threshold round pays a fifth of its budget for its Gumbel top-K and four fifths for measuring what it "
     "picks (ablation_selection.md's step, on the current default: there it cut LT 11% and MM 7% on CA, F1 "
     "+0.004, and changed nothing on Adult at eps = 1)"),
]
STEPS["numeric_off_categories"] = [
    ("planned default", {}, "the default since the rerun of 2026-11-25 (the headline suite's rap++ rows): every "
                            "measured query's gradient moves every coordinate it reads"),
    ("numeric queries move no categories",
     {"projection": {"numeric_moves_categories": False}},
     "the queries with a threshold (LT, MM, histogram prefixes; all label x numerics here) add nothing to the "
     "gradient of the category probabilities, the label's included: tree_share's 20% step raised Adult's CM "
     "through small tables with the label, which a one-seed trace put down to the numeric queries' gradient on "
     "the rows' label probabilities"),
    ("+ numeric histograms (20%) out of the thresholds' share",
     {"strategy": {"name": "planned", "histogram_share": 0.2, "histogram_from": "LT"},
      "projection": {"numeric_moves_categories": False}},
     "tree_share's 20% step (MM -17 to -34%, Adult's CM +2/+5%) again with the numeric queries kept off the "
     "categories"),
]
STEPS["tree_share_seeds"] = [
    ("planned default", {}, "the default when this ran (numeric histograms on trees with 5% of every class's "
                            "budget), run at seeds 3-5 here; the 20% step below is the default since. Its rows "
                            "are in this ablation's CSV (parameters {}): running it again would skip them"),
    ("numeric histograms (20%) out of the thresholds' share",
     {"strategy": {"name": "planned", "histogram_share": 0.2, "histogram_from": "LT"}},
     "tree_share's 20% step at three more seeds: plan_noise_trace.md puts Adult's CM gap between the plans "
     "within the annealed CM rounds' per-seed spread, which three seeds cannot separate from a cost of a few "
     "per cent"),
]
STEPS["tree_share_25"] = [
    ("planned default", {}, "the default of rerun_rap_2026-11-27.csv (60 steps a stage): numeric "
                            "histograms on trees with 20% of the loop's budget, out of the thresholds' share"),
    ("numeric histograms (25%) out of the thresholds' share",
     {"strategy": {"name": "planned", "histogram_share": 0.25, "histogram_from": "LT"}},
     "the largest share the thresholds alone can pay (they keep a sixth of their own): tree_share's 10% -> 20% "
     "doubled the MM gain; CA's MM is 0.55x the best peer's at eps = 0.25 and its KS 0.53x AIM's, where #20 asks "
     "for half, and LT has room there (0.77x AIM's)"),
]
STEPS["base_share"] = [
    ("planned default", {}, "the default of rerun_rap_2026-11-27.csv (60 steps a stage): every "
                            "feature x label margin measured with 10% of the budget, every class paying its part"),
    ("base marginals 20%",
     {"strategy": {"name": "planned", "base_share": 0.2}},
     "twice the base marginals' budget: macro F1 comes from a logistic regression on one-hot features, which "
     "reads mostly the feature x label margins; CA's F1 trails AIM's by 0.006 at eps = 1 (0.767 vs 0.773)"),
]
STEPS["base_from_cm_20"] = [
    ("planned default", {}, "the default of rerun_rap_2026-11-27.csv (60 steps a stage): the base "
                            "marginals 10%, every class paying its part"),
    ("base marginals 20%, paid by the categorical share",
     {"strategy": {"name": "planned", "base_share": 0.2, "base_from": "CM"}},
     "base_share's 20% step (F1 up in every cell, Adult's CM -8% at eps = 0.25, but MM and LT up to +17/+22% on "
     "CA, the numeric classes paying their part) with the categorical share alone paying, so that the numeric "
     "classes keep their budget"),
]
STEPS["patience_5"] = [
    ("planned default", {}, "the default of rerun_rap_2026-11-27.csv (60 steps a stage): a "
                            "temperature stage stops after 8 Adam steps without a 0.1% better loss (or 60 steps)"),
    ("a stage stops after 5 steps without a better loss", {"projection": {"patience": 5}},
     "#20's time target at eps = 0.25 (fit <= 1/5 of AIM's; CA 0.28x, Adult 0.35x): the gradient and answer "
     "kernels are 85% of a fit (bench/results/profile_fit.md), so the fit's time is its number of Adam steps "
     "(4,123 in 67 projections on CA at 0.25), and each stage ends with at least `patience` steps that did not "
     "improve it; the best iterate by exact loss is kept either way"),
]
STEPS["noise_floor_1"] = [
    ("planned default", {}, "the default of rerun_rap_2026-11-27.csv (60 steps a stage): a "
                            "temperature stage stops after 8 Adam steps without a 0.1% better loss (or 60 steps)"),
    ("a stage also stops at the noise's loss", {"projection": {"noise_floor": 1.0}},
     "#20 (a stopping rule that does not fit measurements below their noise level; the time target at eps = "
     "0.25): a stage also ends once its loss sum_i w_i r_i**2 falls to sum_i w_i std_i**2, what the true "
     "answers would score against the noisy ones (the discrepancy principle), so projections stop where the "
     "noise is large and run on where it is small, unlike patience_5's shorter stages everywhere"),
]
STEPS["steps_30"] = [
    ("planned default", {}, "the default of rerun_rap_2026-11-27.csv (60 steps a stage): every "
                            "temperature stage runs at most 60 Adam steps"),
    ("every stage at most 30 steps", {"projection": {"max_steps": 30}},
     "#20's time target at eps = 0.25: on Adult (seed 0) the warm threshold rounds' projections end their last "
     "stage at the 60-step cap (69 steps: ~9 at sigma 256, 60 at 512) in 40 of 50 rounds, so patience (patience_5) "
     "barely shortens them there; the cap does"),
    ("every projection but the last at most 30 steps a stage", {"projection": {"max_steps_between": 30}},
     "instead of the step above: the projections before the last only warm-start the next round and score its "
     "selection, so they stop at 30 steps a stage; the last, the released fit, keeps 60"),
]
STEPS["relaxed_rows"] = [
    ("planned default", {}, "the default (headline rap++ rows): 1,000 relaxed rows"),
    ("500 relaxed rows", {"relaxed_rows": 500},
     "#20 (CA MM and Adult CM at eps = 0.25): the projection keeps about 0.75 sigma of each measurement's "
     "noise (ca_cm_diagnosis.md); fewer relaxed rows fit the noisy answers less closely (a coarser family), "
     "which may shrink toward smoother tables where the noise is large"),
]
STEPS["numeric_coupling"] = [
    ("planned default", {}, "the default (headline rap++ rows): each decoded row keeps its relaxed row's numerics"),
    ("numerics permuted within each label", {"strategy": {**PLANNED, "numeric_coupling": "label"}},
     "#20 (CA MM 0.56x the best peer's at eps = 0.25, #20 asks for half): a probe of the default's rows with "
     "their numeric columns permuted within each label value (each column on its own) lowered CA's MM 6-16% and "
     "LT 31-49% at eps 0.25 and 1: the fitted pairing of numerics within a label is worse than none "
     "(polars_rap.decode.numeric_coupling says why); null patterns stay in place"),
]
STEPS["lt_rounds_off"] = [
    ("planned default", {}, "the default (headline rap++ rows since the rerun of 2026-11-28): 50 threshold rounds, "
                            "the numeric histograms 20% of the loop out of their share, numerics permuted within "
                            "each label at decoding"),
    ("no threshold rounds", {"rounds_lt": 0},
     "#20: decoding now keeps of the numerics only each column's distribution within each label "
     "(numeric_coupling), which the histograms measure directly; the threshold rounds' joint fit is permuted away. "
     "Without them the histograms' 20% comes out of every class's share, so the categorical steps get more "
     "(CM 0.72 of the loop instead of 0.6) and the fit is shorter"),
    ("no threshold rounds, histograms 30%", {"rounds_lt": 0, "strategy": {**PLANNED, "histogram_share": 0.3}},
     "instead: the thresholds' budget to the histograms (30% of the loop; the categorical steps keep about "
     "their default share, 0.63)"),
    ("no threshold rounds, histograms weighed 1", {"rounds_lt": 0, "strategy": {**PLANNED, "histogram_weight": 1.0}},
     "after the first two: without thresholds Adult's MM and KS rose 2.7x and 3.7x at eps = 1, the numerics then "
     "fitted by the histograms alone at a tenth of their inverse-variance weight (set so that the thresholds were "
     "served first); at 1 each histogram answer counts as its noise says"),
    ("no threshold rounds, the released fit to convergence",
     {"rounds_lt": 0, "projection": {"min_improvement": 1e-6, "patience": 50, "max_steps": 400,
                                     "max_steps_between": 30}},
     "weighing them 1 did not help (Adult MM 0.0063 at eps = 1, seed 0): a one-seed probe found the histograms "
     "fitted to 2.3x their noise std (mean |synthetic - noisy| 0.0071 vs 0.0031 over hours-per-week's prefixes), "
     "the stages ending on the whole loss's relative improvement, which the categorical answers dominate; run to "
     "1e-6 (patience 50, at most 400 steps a stage) the gap is 0.0030 (0.0034 as run here). Only the released "
     "projection runs long: the ones between keep 30 steps"),
    ("10 threshold rounds", {"rounds_lt": 10},
     "after the four above: the thresholds kept to spread the numerics (without them Adult's capital gain stays at "
     "0), but 10 rounds of the same share instead of 50, so that most of the loop's projections and selections go "
     "to the other classes"),
]
STEPS["histogram_weight"] = [
    ("planned default", {}, "the default (headline rap++ rows since the rerun of 2026-11-28c): 10 threshold rounds, "
                            "the numeric histograms 20% of the loop out of the thresholds' share, weighed a tenth"),
    ("histograms weighed 0.3", {"strategy": {**PLANNED, "histogram_weight": 0.3}},
     "#14/#20: the histograms' answers were weighed a tenth of their inverse variance so that the thresholds were "
     "served first; with a fifth of the threshold rounds the numeric KS rose 1.10-1.12x at eps = 1 (six seeds) "
     "and CA's at eps = 0.25 is 0.504x AIM's (target 0.5): fewer thresholds pin each column's distribution "
     "within a label, which the histograms measure directly"),
    ("histograms weighed 1", {"strategy": {**PLANNED, "histogram_weight": 1.0}},
     "instead: each histogram answer counts as its noise says (the maximum-likelihood weight)"),
]
STEPS["steps_60"] = [
    ("planned default", {}, "the default (headline rap++ rows since the rerun of 2026-11-28c): 10 threshold rounds, "
                            "every temperature stage at most 30 Adam steps"),
    ("every stage at most 60 steps", {"strategy": {**PLANNED, "max_steps": None}},
     "#20: stages were cut to 30 steps for the time target (steps_30: errors within seed noise at eps <= 1, but "
     "CA's MM 1.39x and KS 1.17x at eps = 5, rerun_2026-11-27b.md); with 10 threshold rounds the fits take "
     "0.04-0.06x AIM's seconds at eps = 0.25, so the paper's 60 steps are affordable again"),
]
STEPS["lt_class_k"] = [
    ("planned default", {}, "the default (headline rap++ rows since the rerun of 2026-11-28c): 10 threshold rounds "
                            "of 10 groups each"),
    ("10 threshold rounds of 50 groups", {"strategy": {**PLANNED, "class_k": {"LT": 50}}},
     "#20: 10 rounds instead of 50 cut the threshold groups measured from 500 to 100 and the projections from 50 "
     "to 10 at once, and the numeric KS rose 1.10-1.12x at eps = 1; 50 groups a round measure 500 again (each with "
     "the 50-round default's budget) in 10 projections, telling the two apart"),
]
STEPS["lt_rounds_5"] = [
    ("planned default", {}, "the default (headline rap++ rows since the rerun of 2026-11-28c): 10 threshold rounds"),
    ("5 threshold rounds", {"rounds_lt": 5},
     "#20: 50 -> 10 rounds (the same share) lowered MM and raised F1 (lt_rounds_10_pairs.md), and 10 rounds of 50 "
     "groups lost it again (ablation_lt_class_k.md): fewer, sharper threshold measurements pay. Half again"),
]
STEPS["cm_anneal_margins"] = [
    ("planned default", {}, "the default (headline rap++ rows since the rerun of 2026-11-28c)"),
    ("margins join the annealed CM rounds", {"strategy": {**PLANNED, "cm_anneal_margins": True}},
     "#20: on Adult at eps 0.25 the tables left unmeasured carry 80% of the CM error, and their error is mostly "
     "their feature x label margins' (a feature no measured table holds keeps the base step's noisy margin): let "
     "the annealed rounds measure a margin again, as AIM may select a marginal below the workload's tables"),
]
STEPS["histogram_match"] = [
    ("planned default", {}, "the default (headline rap++ rows since the rerun of 2026-11-28c)"),
    ("numerics moved within 1 noise std of their histograms", {"strategy": {**PLANNED, "histogram_match": 1.0}},
     "#14, #20: the numeric KS swings with the seed (CA at eps 1: 0.012-0.024) on JWMNP's heaps, which the "
     "projection's soft thresholds cannot pin and the released histograms saw (probe_numeric_margins.md): the "
     "decoded numerics moved within each label where their distribution is off the histogram's by more than "
     "its noise (the histograms' own distribution raised CA's KS 8% at eps 0.25 in the probe)"),
    ("numerics moved within half a noise std of their histograms", {"strategy": {**PLANNED, "histogram_match": 0.5}},
     "the same, closer to the histograms (in the probe: CA's KS 0.52x at eps 1, 1.04x at 0.25)"),
]
RERUN_DEFAULT: set[str] = {"tree_share_seeds"}
"""Ablations whose default step is run again (its metrics are not in the headline rows)."""
EQUAL_SHARES_ROWS = RESULTS / "rerun_rap_2026-11-23.csv"
"""The ``rap++`` rows of the planned default before CM:LT 2:1 (equal class shares), the
headline rows from 2026-11-23 until the rerun that made 2:1 the default."""
STEPS["base_size_exponent"] = [
    ("planned default", {}, "the default (headline rap++ rows since the rerun of 2026-11-28d)"),
    ("base marginals' budget by cells^(2/3)", {"strategy": {**PLANNED, "base_size_exponent": 2 / 3}},
     "#20: on Adult at eps 0.25, native-country (42 values, 84 cells x label) is held by no measured table and its "
     "tables are 63% of the CM cells; their error is 2-4.5x the conditional-independence oracle's, from its noisy "
     "base margin (L1 0.13-0.17), measured with the same budget as sex's 4 cells: split the base step's budget by "
     "cells^(2/3), the split that minimises the margins' summed expected noise L1 norm"),
    ("base marginals' budget by cells^(1/3)", {"strategy": {**PLANNED, "base_size_exponent": 1 / 3}},
     "cells^(2/3) cut CM at eps 1 (CA 0.97x, Adult 0.95x) and on Adult at 0.25 (0.97x) but raised CA's CM 10% and "
     "MM 14% at 0.25 (the 4-cell margins lost half their budget): half the exponent"),
]
STEPS["cm_margin_reserve"] = [
    ("planned default", {}, "the default (headline rap++ rows since the rerun of 2026-11-28d)"),
    ("10% of the CM share refreshes the unheld margins", {"strategy": {**PLANNED, "cm_margin_reserve": 0.1}},
     "#20: base_size_exponent showed that the margins needing budget are those of the features the annealed "
     "rounds leave unmeasured (native-country on Adult at eps 0.25), known only after the rounds: keep 10% of the "
     "CM step's budget from its rounds and measure those margins once more after them (all margins when every "
     "feature is held)"),
    ("20% of the CM share refreshes the unheld margins", {"strategy": {**PLANNED, "cm_margin_reserve": 0.2}},
     "twice the reserve"),
]
STEPS["cm_anneal_pairs"] = [
    ("planned default", {}, "the default (headline rap++ rows since the rerun of 2026-11-28e)"),
    ("feature pairs join the annealed CM rounds", {"strategy": {**PLANNED, "cm_anneal_pairs": True}},
     "#20: f1_diagnosis.md found CA's strongest interactions among the label's best predictors missing (COW x "
     "OCCP: conditional MI 0.18 real, 0.01 rap++, 0.19 AIM, which measured the 225-cell 2-way COW x OCCP); its "
     "label-crossed table (450 cells) is never worth its noise: the 2-way feature pairs, half the cells, compete "
     "in the annealed rounds (AIM's downward closure), and a table whose pair is measured leaves the prior"),
]
STEPS["numeric_ties"] = [
    ("planned default", {}, "the default (headline rap++ rows since the rerun of 2026-11-28e): each numeric column "
                            "permuted within each label, so independent of every feature given the label"),
    ("numeric ties, 10% of the loop", {"strategy": {**PLANNED, "tie_share": 0.1}},
     "#20: on the real rows that permutation alone costs 0.010 macro F1 on CA and 0.007 on Adult "
     "(numeric_ties.md, 'each numeric shuffled'); each numeric column's sums by feature x label released (10% of "
     "the loop's budget, before it, where their noise std per cell is at most 0.01: eps >= 1 on both datasets) and "
     "decoding hands each column's values out within each label to follow them, shrunk by a Bayesian ridge where "
     "the noise hides them (polars_rap.decode.numeric_ties)"),
]
STEPS["tie_numeric_bins"] = [
    ("planned default", {}, "the default (headline rap++ rows since the rerun of 2026-11-28f): numeric ties by "
                            "feature x label, the numeric columns independent of each other given the label"),
    ("numeric pairs kept where the release supports them, 8 bins", {"strategy": {**PLANNED, "tie_numeric_bins": 8}},
     "the label coupling leaves the numeric columns independent of each other within each label, which the "
     "mixed marginals (two numeric prefixes x label) measure: on cps1988's real rows that costs an MM error "
     "of 0.0054 and 0.008 macro F1 (tie_bins_probe.md). Fitted from released sums by bins alone the pairs were too "
     "noisy (tie_bins_released.md); taken from the relaxed rows everywhere they won on cps1988 (MM 0.41x at eps 1) "
     "and lost on CA (LT 1.14-1.27x: tie_pairs_everywhere.md). Here the ties' release also holds each numeric "
     "column's sums by 8 bins of every earlier numeric, and a pair keeps the relaxed rows' pairing only where "
     "those sums are more than e times as likely under it as under none (polars_rap.decode.numeric_pairs)"),
]
STEPS["tie_pair_counts"] = [
    ("planned default", {}, "the default (headline rap++ rows since the rerun of 2026-11-29): the numeric pairs' test "
                            "predicts each cell's sum from the relaxed rows' cell mass"),
    ("pair test counts from the released histograms", {"strategy": {**PLANNED, "tie_pair_counts": "histograms"}},
     "the test compares two predictions of the released sums that both use the relaxed rows' bin counts; on "
     "cps1988 those are off by 0.08-0.15 (summed over the cells) against the released histograms' 0.006-0.035, and "
     "the test dropped pairings the sums support (eps 5 seed 0: evidence -69, 392 with the real counts: "
     "pair_counts_probe.md). Here each cell's count is the earlier column's released histogram regrouped into the "
     "bins (its noise in the predictions' variance), no new budget"),
    ("+ kept only where the hypotheses are one noise std apart",
     {"strategy": {**PLANNED, "tie_pair_counts": "histograms", "tie_pair_separation": 1.0}},
     "with the histograms' counts CA's age x commute time pair passed on eps 1 seed 0 (evidence 2.0, LT 1.35x) where "
     "the release separates the relaxed rows' pairing from none by 0.93 noise std (D^2 = 0.86): a test that cannot "
     "tell the two apart keeps whichever noise favours, and the relaxed rows' means in small cells are far off. "
     "Below one std apart the pair is dropped untested"),
]
STEPS["tie_noise_cap"] = [
    ("planned default", {}, "the default (headline rap++ rows; Adult's since the rerun of 2026-11-29c): numeric "
                            "ties measured where their noise std per cell is at most 0.01 (eps >= 1 here)"),
    ("numeric ties where their noise is at most 0.025 a cell", {"strategy": {**PLANNED, "tie_noise_cap": 0.025}},
     "on the NIST Massachusetts excerpt (7,244 rows, tuned on nothing) at eps = 2 the ties' noise std would be "
     "0.0118 and they are not measured: the rows lose MSP null <=> AGEP < 15 (real 1.00 / 0.00, synthetic 0.17 / "
     "0.15; 0.56 / 0.07 with the ties). At 0.025 they are measured at eps 0.25 on CA (0.0212) and Adult (0.0202), "
     "at eps 1 on sdnist-national (0.0136) and at eps 0.25 on cps1988 (0.0128)"),
]
WARM_DEFAULT_ROWS = RESULTS / "rerun_rap_2026-11-24c.csv"
"""The ``rap++`` rows of the planned default with warm threshold rounds and every CM table
measured outright, the headline rows from the rerun of 2026-11-24c until the annealed,
mediated default replaced them."""
MEDIATED_DEFAULT_ROWS = RESULTS / "rerun_rap_2026-11-24d.csv"
"""The ``rap++`` rows of the annealed, mediated default without numeric histograms, the
headline rows from the rerun of 2026-11-24d until the histograms joined the default."""
FLAT_HISTOGRAM_ROWS = RESULTS / "rerun_rap_2026-11-24e.csv"
"""The ``rap++`` rows of the default with flat numeric histograms, the headline rows from the
rerun of 2026-11-24e until the histograms were released on trees (2026-11-25)."""
TREE_DEFAULT_ROWS = RESULTS / "rerun_rap_2026-11-25.csv"
"""The ``rap++`` rows of the default with numeric histograms on trees (their prefixes fitted,
CM:LT 2:1), the headline rows from the rerun of 2026-11-25."""
SIXTY_STEPS_ROWS = RESULTS / "rerun_rap_2026-11-27.csv"
"""The ``rap++`` rows of the default with 60 Adam steps a stage (histograms paid 20% out of LT),
the headline rows from the rerun of 2026-11-27 until stages took 30 steps (2026-11-27b)."""
WALK_ORDER_ROWS = RESULTS / "rerun_rap_2026-11-27c.csv"
"""The ``rap++`` rows of the default with numerics decoded as fitted (each row keeping its relaxed
row's), the headline rows from the rerun of 2026-11-27c until numerics were permuted within each
label (2026-11-28)."""
FIFTY_LT_ROUNDS_ROWS = RESULTS / "rerun_rap_2026-11-28b.csv"
"""The ``rap++`` rows of the default with 50 threshold rounds (numerics permuted within each label),
the headline rows from the quiet rerun of 2026-11-28b until the planned strategy ran 10 (2026-11-28c)."""
TEN_LT_ROUNDS_ROWS = RESULTS / "rerun_rap_2026-11-28c.csv"
"""The ``rap++`` rows of the default with 10 threshold rounds, the headline rows from the rerun of
2026-11-28c."""
HISTOGRAM_MATCH_ROWS = RESULTS / "rerun_rap_2026-11-28d.csv"
"""The default's rows once decoded numerics met their histograms (``histogram_match=1``), before the
margin refresh (the headline's rap++ rows until the rerun of 2026-11-28e)."""
MARGIN_RESERVE_ROWS = RESULTS / "rerun_rap_2026-11-28e.csv"
"""The default's rows once the categorical step kept a reserve for the unheld margins, before the
numeric ties (the headline's rap++ rows from the rerun of 2026-11-28e)."""
NUMERIC_TIES_ROWS = RESULTS / "rerun_rap_2026-11-28f.csv"
"""The default's rows with the numeric ties, before the numeric pairs (the rerun of 2026-11-28f)."""
NUMERIC_PAIRS_ROWS = RESULTS / "rerun_rap_2026-11-29.csv"
"""The default's rows with the numeric pairs tested on the relaxed rows' counts (the rerun of
2026-11-29), before the released histograms' counts (2026-11-29b)."""
DEFAULT_ROWS = {
    **{name: EQUAL_SHARES_ROWS for name in ("strategy", "shrinkage", "selection", "cm_selection", "cm_anneal",
                                            "class_shares", "numeric", "integer_cells")},
    **{name: WARM_DEFAULT_ROWS for name in ("independence_prior", "mediated_prior")},
    **{name: MEDIATED_DEFAULT_ROWS for name in ("base_from_cm", "cm_prefixes", "histograms_now")},
    **{name: FLAT_HISTOGRAM_ROWS for name in ("histograms_from_lt", "mm_rounds", "histogram_trees")},
    **{name: TREE_DEFAULT_ROWS for name in ("tree_share", "histogram_nodes", "cm_share_3",
                                                   "lt_selection", "numeric_off_categories")},
    **{name: SIXTY_STEPS_ROWS for name in ("tree_share_25", "base_share", "base_from_cm_20", "patience_5",
                                           "noise_floor_1", "steps_30")},
    **{name: WALK_ORDER_ROWS for name in ("relaxed_rows", "numeric_coupling")},
    **{name: FIFTY_LT_ROUNDS_ROWS for name in ("lt_rounds_off", "lt_rounds_10_eps5")},  # the latter: its eps-5 CSV
    **{name: TEN_LT_ROUNDS_ROWS for name in ("histogram_weight", "steps_60", "lt_class_k", "lt_rounds_5",
                                               "cm_anneal_margins", "histogram_match")},
    **{name: HISTOGRAM_MATCH_ROWS for name in ("base_size_exponent", "cm_margin_reserve")},
    **{name: MARGIN_RESERVE_ROWS for name in ("cm_anneal_pairs", "numeric_ties")},
    "tie_numeric_bins": NUMERIC_TIES_ROWS,
    "tie_pair_counts": NUMERIC_PAIRS_ROWS,
}
"""Where an ablation's default step reads its rows, when not from ``headline.csv``: those run
under an earlier default compare against that default's rows. A step's keywords say what it
changes from its ablation's default, so two ablations share a step's rows only when they share
that default (:func:`same_default`)."""


MORE_DEFAULT_ROWS = {"base_from_cm_20": ((RESULTS / "rerun_rap_2026-11-27_seeds345.csv", {}),),
                     "lt_rounds_off": ((RESULTS / "rerun_rap_2026-11-28_seeds345.csv", {}),),
                     "cm_anneal_margins": ((RESULTS / "ablation_lt_rounds_off.csv", {"rounds_lt": 10}),),
                     "cm_margin_reserve": ((RESULTS / "rerun_rap_2026-11-28e_seeds345.csv", {}),)}
"""Rows of an ablation's default at more seeds than its default rows hold (the default rerun at
seeds 3-5 beside a candidate's, for :mod:`bench.seed_pairs`), joined to them in its table: per file,
the ``synthesize`` keywords its rows of the default ran with (``rounds_lt=10``: the 10-round step
of ``lt_rounds_off``, the default since, equal to it to the last float)."""


def same_default(name: str, other: str) -> bool:
    """Whether ablations ``name`` and ``other`` ran their steps on the same default (the same
    :data:`DEFAULT_ROWS` entry, or both on the headline's current rows)."""
    return DEFAULT_ROWS.get(name) == DEFAULT_ROWS.get(other)
EPSILONS = (1.0,)
SEEDS = (0, 1, 2)
DATASETS = ("acs-income-CA", "adult")
METRICS = (*(f"{c}_mean_error" for c in ERROR_CLASSES), "macro_f1", "seconds")
NUMERIC_METRICS = ("numeric_ks_mean", "numeric_decile_error")
NUMERIC_ABLATIONS = frozenset({"numeric", "integer_cells", "histograms", "histograms_now", "histograms_from_lt",
                               "mm_rounds", "histogram_trees", "tree_share", "histogram_nodes", "lt_selection",
                               "numeric_off_categories", "tree_share_seeds", "tree_share_25", "histogram_weight",
                               "steps_60", "lt_class_k", "lt_rounds_5", "histogram_match"})
"""Ablations whose tables show the numeric metric too (they are about the numeric columns)."""


def metrics(name: str) -> tuple[str, ...]:
    """The table's metrics: the numeric metric too where the ablation is about it."""
    return (*METRICS[:3], *NUMERIC_METRICS, *METRICS[3:]) if name in NUMERIC_ABLATIONS else METRICS


def step_command(name: str, step: dict, epsilons: Sequence[float], seeds: Sequence[int]) -> list[str] | None:
    """The ``bench.run`` command of one step (None: the default, taken from the headline rows)."""
    if not step and name not in RERUN_DEFAULT:
        return None
    synthesize = {key: value for key, value in step.items() if key not in ("domain_updates", "projection")}
    updates = step.get("domain_updates")
    datasets = [d for d in DATASETS if d in updates] if updates else list(DATASETS)
    command = [sys.executable, "-m", "bench.run", "--suite", "headline", "--mechanisms", "rap++",
               "--datasets", *datasets, "--epsilons", *map(str, epsilons), "--seeds", *map(str, seeds),
               "--out", str(RESULTS / f"ablation_{name}.csv"),
               "--plots-dir", str(RESULTS / "plots" / f"ablation_{name}")]
    if synthesize:
        command += ["--synthesize", json.dumps(synthesize)]
    if updates:
        command += ["--domain-updates", json.dumps(updates)]
    if step.get("projection"):
        command += ["--projection", json.dumps(step["projection"])]
    return command


def run(name: str, epsilons: Sequence[float], seeds: Sequence[int], steps: Sequence[str] | None = None) -> None:
    """Every step's runs, or those labelled in ``steps`` (``bench.run`` skips those already in
    the CSV; a step another ablation ran on the same default, with the same keywords, is not rerun)."""
    labels = [label for label, _, _ in STEPS[name]]
    unknown = sorted(set(steps or ()) - set(labels))
    if unknown:
        msg = f"ablation {name!r} has no step {unknown[0]!r}; its steps are {labels}"
        raise SystemExit(msg)
    for label, step, _ in STEPS[name]:
        if steps and label not in steps:
            continue
        command = step_command(name, step, epsilons, seeds)
        ran_elsewhere = bool(step) and any(step == other_step for other in STEPS
                                           if other != name and same_default(name, other)
                                           for _, other_step, _ in STEPS[other])
        if command is None or ran_elsewhere:  # the headline rows, or another ablation's CSV
            continue
        print(f"== {label}", flush=True)
        subprocess.run(command, check=True)


def _step_of(parameters: str, name: str) -> str | None:
    parsed = json.loads(parameters)
    step_keys = {**(parsed.get("synthesize") or {})}
    if parsed.get("domain_updates"):
        step_keys["domain_updates"] = parsed["domain_updates"]
    if parsed.get("projection"):
        step_keys["projection"] = parsed["projection"]
    for label, step, _ in STEPS[name]:
        if step_keys == step:
            return label
    return None


def table(name: str) -> pl.DataFrame:
    """Mean over seeds per dataset × ε × step, with the paper's rows first and ratios to them."""
    # A step already run in another ablation on the same default (same keywords) is read from
    # there, not rerun. An ablation that reran its default (RERUN_DEFAULT) keeps its rows to
    # itself: its default step ({}) is the default of its day, which a later ablation's {} is not.
    def shares_rows(other: str) -> bool:
        return other == name or (same_default(name, other) and not {name, other} & RERUN_DEFAULT)

    paths = [path for path in sorted(RESULTS.glob("ablation_*.csv"))
             if shares_rows(path.stem.removeprefix("ablation_"))]
    rows = pl.concat([read_results(path) for path in paths], how="vertical_relaxed").filter(pl.col("status") == "ok")
    rows = rows.with_columns(pl.col("parameters").map_elements(lambda p: _step_of(p, name),
                                                               return_dtype=pl.String).alias("step"))
    rows = rows.filter(pl.col("step").is_not_null())
    points = rows.select("dataset", "epsilon", "seed").unique()
    headline = read_results(RESULTS / "headline.csv").filter(pl.col("status") == "ok").join(
        points, on=["dataset", "epsilon", "seed"])
    paper = (headline.filter(pl.col("mechanism") == "rap++paper")
             .with_columns(pl.lit("paper (rap++paper, headline.csv)").alias("step")))
    default = [label for label, step, _ in STEPS[name] if not step and name not in RERUN_DEFAULT]
    default_rows = headline if name not in DEFAULT_ROWS else read_results(DEFAULT_ROWS[name]).filter(
        pl.col("status") == "ok").join(points, on=["dataset", "epsilon", "seed"])
    more = [read_results(path).filter((pl.col("status") == "ok") & pl.col("parameters").map_elements(
                lambda text, keywords=keywords: json.loads(text)["synthesize"] == keywords, return_dtype=pl.Boolean))
            .join(points, on=["dataset", "epsilon", "seed"]) for path, keywords in MORE_DEFAULT_ROWS.get(name, ())]
    default_rows = pl.concat([default_rows, *more], how="vertical_relaxed")
    planned = (default_rows.filter(pl.col("mechanism") == "rap++")
               .with_columns(pl.lit(default[0] if default else None, dtype=pl.String).alias("step"))
               .filter(pl.col("step").is_not_null()))
    frame = pl.concat([paper.select(rows.columns), rows, planned.select(rows.columns)], how="vertical_relaxed")
    order = {"paper (rap++paper, headline.csv)": 0, **{s[0]: i + 1 for i, s in enumerate(STEPS[name])}}
    columns = metrics(name)
    means = (frame.group_by("dataset", "epsilon", "step")
             .agg(*(pl.col(m).mean() for m in columns), pl.col("seed").n_unique().alias("seeds"))
             .with_columns(pl.col("step").replace_strict(order, return_dtype=pl.Int64).alias("_order"))
             .sort("dataset", "epsilon", "_order"))
    base = means.filter(pl.col("_order") == 0).select(
        "dataset", "epsilon", *(pl.col(m).alias(f"_{m}") for m in METRICS[:3]))
    return (means.join(base, on=["dataset", "epsilon"], how="left")
            .with_columns(*((pl.col(f"{c}_mean_error") / pl.col(f"_{c}_mean_error")).round(3).alias(f"{c}_vs_paper")
                            for c in ERROR_CLASSES))
            .select("dataset", "epsilon", "step", *columns, *(f"{c}_vs_paper" for c in ERROR_CLASSES), "seeds"))


def write_table(name: str) -> Path:
    path = RESULTS / f"ablation_{name}.md"
    lines = [f"# Ablation: {name} (bench/ablations.py; mean over seeds, one change per step)", ""]
    lines += [f"- **{label}**: {why}" for label, _, why in STEPS[name]]
    findings = ["", "What each step showed:", ""] + [f"- {line}" for line in FINDINGS.get(name, [])]
    path.write_text("\n".join(lines) + "\n\n" + table_markdown(table(name)) + "\n"
                    + "\n".join(findings) + "\n\n" + SECONDS_NOTES.get(name, "") + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", choices=sorted(STEPS), help="run an ablation, then write its table")
    parser.add_argument("--table", choices=sorted(STEPS), help="only write the table of an ablation")
    parser.add_argument("--epsilons", nargs="+", type=float, default=EPSILONS)
    parser.add_argument("--seeds", nargs="+", type=int, default=SEEDS)
    parser.add_argument("--steps", nargs="+", metavar="LABEL", help="run only these steps (their labels in STEPS)")
    args = parser.parse_args(argv)
    name = args.run or args.table
    if name is None:
        parser.error("give --run NAME or --table NAME")
    if args.run:
        run(name, args.epsilons, args.seeds, args.steps)
    print(f"table -> {write_table(name)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
