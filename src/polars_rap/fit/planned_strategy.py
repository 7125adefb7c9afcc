"""The planned strategy (``strategy="planned"``, the default): a budget per query class,
measured where it pays. Its settings are the budget's shares and the switches that tell it from
the paper's algorithm (:class:`~polars_rap.fit.strategy.PaperStrategy`); the values measured and
kept are module constants, each citing its finding (``bench/results/ablation_*``; the settings
that lost are listed in ``docs/findings.md``). See :mod:`polars_rap.fit.strategy` for what a
strategy is."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from polars_rap.errors import ParameterError
from polars_rap.fit.loop_settings import LoopSettings, check_loop_settings
from polars_rap.fit.plan_steps import CLASSES, Step, capped_rounds, fixed_steps
from polars_rap.fit.strategy_checks import check_planned_settings

__all__ = ["CM_ANNEAL_SELECTION_SHARE", "CM_OUTRIGHT_L1", "DEFAULT_CLASS_SHARES", "MAX_STEPS", "PlannedStrategy",
           "WARM_DOUBLINGS", "class_budget_shares", "planned_steps"]

DEFAULT_CLASS_SHARES = {"CM": 2.0, "MM": 1.0, "LT": 1.0}
"""The planned strategy's relative budget per class: the categorical marginals twice the others
(``bench/results/ablation_class_shares.md``: CM -7 to -10% at every eps on both datasets)."""

CM_ANNEAL_SELECTION_SHARE = 0.1
"""Part of an annealed CM round's budget its selection pays (AIM's; the run's ``selection_share``
pays the threshold rounds' selections). The default since ``bench/results/ablation_mediated_prior.md``
(annealed CM with the mediated prior: CM -21 to -25% on acs-income-CA and -3 to -12% on Adult at
eps <= 1 against every table measured outright)."""

CM_OUTRIGHT_L1 = 0.15
"""When the CM share would measure every CM table with an expected noise L1 norm of at most this
on average (a table's answers sum to 1; public: the budget, the row count, the tables' sizes and
sensitivities), the annealed step measures them all in one round instead (``Step.outright_l1``):
annealing measures a few tables well where noise is large; where every table can be measured
precisely, measuring them all is better. 0.15 lies between both headline datasets' 0.07-0.08 at
eps = 5 and 0.33-0.36 at eps = 1 (chosen on them). Only where every table fits one slice of
:mod:`polars_rap.fit.table_turns` (every suite table): a wider table's step anneals."""

WARM_DOUBLINGS = 1
"""A threshold round after the first starts from rows already fitted to sharp thresholds, so its
projection runs only the last ``WARM_DOUBLINGS + 1`` stages of the annealing schedule (sigma 256
and 512) instead of re-annealing from sigma 8 (the paper's, :class:`~polars_rap.fit.strategy.PaperStrategy`'s
None). On both headline datasets at eps 0.25, 1 and 5 (3 seeds) fits are 11-17x shorter, CM is
level and MM and LT are 4-18% lower, but for Adult at eps = 0.25 (MM +12%); 0 (sigma 512 alone)
lowers CM 1-5% but raises MM and LT 13-32% at eps = 5 (``bench/results/ablation_warm.md``). A
run's ``ProjectionConfig(warm_doublings=...)`` overrides it."""

MAX_STEPS = 30
"""Adam steps a temperature stage may run (the paper's 60: :data:`~polars_rap.fit.projection.PAPER_MAX_STEPS`).
On both headline datasets at eps 0.25 and 1 (3 seeds) fits take 0.57-0.65x the time (Adult at
eps = 1 0.92x) with every error class within 0.93-1.12x and F1 within -0.003..+0.011
(``bench/results/ablation_steps_30.md``): a warm threshold round's last stage had run to the cap
of 60 in most rounds. At eps = 5 CA's MM is 1.39x the 60-step fits' (``rerun_2026-11-27b.md``). A
run's ``ProjectionConfig(max_steps=...)`` overrides it."""


def class_budget_shares(class_shares: Mapping[str, float] | str | None,
                        capped: Mapping[str, int]) -> dict[str, float]:
    """Each class's share of the loop's budget (summing to 1), for the classes with rounds
    (``capped``: the rounds each class can run, :func:`~polars_rap.fit.plan_steps.capped_rounds`),
    as ``class_shares`` sets them (a mapping of relative shares, ``"rounds"`` or None: equal);
    a class its mapping leaves out gets none. Empty when no class has rounds."""
    active = [c for c in CLASSES if capped.get(c, 0) > 0]
    if not active:
        return {}
    if class_shares is None:
        raw = {c: 1.0 for c in active}
    elif class_shares == "rounds":
        raw = {c: float(capped[c]) for c in active}
    else:
        raw = {c: float(class_shares.get(c, 0.0)) for c in active}
    if sum(raw.values()) <= 0.0:
        msg = f"class_shares gives no budget to any class with rounds ({', '.join(active)})"
        raise ParameterError(msg)
    total = math.fsum(raw.values())
    return {c: raw[c] / total for c in active if raw[c] > 0}


def planned_steps(class_shares: Mapping[str, float] | str | None, group_counts: Mapping[str, int],
                  rounds: Mapping[str, int], k: int, *, margin_reserve: float = 0.0) -> list[Step]:
    """The planned strategy's plan (:meth:`PlannedStrategy.plan`): the CM class's share spent
    by one annealed step (K = 1, T0 = the CM groups, :mod:`polars_rap.fit.annealing`; the
    selection and outright parts :data:`CM_ANNEAL_SELECTION_SHARE` and :data:`CM_OUTRIGHT_L1`,
    ``margin_reserve`` kept for the margin refresh), the other classes by
    :func:`~polars_rap.fit.plan_steps.fixed_steps`."""
    capped = {c: capped_rounds(group_counts, {c: r}, k)[c] for c, r in rounds.items()}
    share = class_budget_shares(class_shares, capped)
    annealed = ["CM"] if "CM" in share else []
    steps = [Step(c, share[c], 1, max(1, int(group_counts[c])), selection_share=CM_ANNEAL_SELECTION_SHARE,
                  outright_l1=CM_OUTRIGHT_L1, margin_reserve=float(margin_reserve)) for c in annealed]
    return steps + fixed_steps({c: w for c, w in share.items() if c not in annealed}, rounds, capped,
                               group_counts, k)


@dataclass(frozen=True, slots=True)
class PlannedStrategy(LoopSettings):
    """A budget per query class, measured where it pays (the default).

    By default: 10% of the budget measures every feature x label margin first; the categorical
    marginals' share (twice each threshold class's) is spent by AIM's budget annealing, a few
    tables measured sharply where noise is large, every table where it is small
    (:data:`CM_OUTRIGHT_L1`), a tenth of it kept to measure again the margins of the features
    no table it measured holds (``cm_margin_reserve=0.1``); the tables left unmeasured are
    fitted toward the maximum-entropy table given the measured tables that link their
    features; the threshold classes are measured as the paper does, by rounds of selection
    (a class whose rounds would measure all its groups anyway is measured outright, in one
    step with no selection charge), 10 of linear thresholds unless ``rounds`` sets ``"LT"``
    (the paper's 50: over 6 seeds on both headline datasets at eps 0.25 and 1,
    CM level, MM 0.90-0.98x, macro F1 +0.002 to +0.006, a third of the fit time, the numeric KS
    1.10-1.12x at eps 1; ``bench/results/lt_rounds_10_pairs.md``); last, each numeric column's
    histogram x label takes 20% of the budget out of the thresholds' share. Decoding permutes
    each numeric column within each label value (``numeric_coupling="label"``) and moves it
    toward its released histogram where it is off by more than the histogram's noise, after
    handing each column's values out within each label to follow the released numeric ties
    (10% of the budget, where their noise allows: ``tie_share``), and last reorders each
    label's numeric columns so that every pair's rank covariance meets its release (5% of the
    budget, where its noise allows: ``rank_share``).

    Parameters
    ----------
    relaxed_rows, queries_per_round, rounds, workload, projection
        The loop's size (keyword-only), as for every strategy:
        :class:`~polars_rap.fit.loop_settings.LoopSettings`.
    class_shares : mapping, "rounds" or None
        Relative budget of each class that has rounds; the default, ``{"CM": 2, "MM": 1,
        "LT": 1}``, gives the categorical marginals twice the others' (CM error -7 to -10% at
        every ε on both datasets, MM/LT +5-12% at ε <= 1 and lower at ε = 5:
        ``bench/results/ablation_class_shares.md``). None gives every such class an equal
        share; ``"rounds"`` a share in proportion to its rounds, as the paper's even split per
        round does. Shares of classes without rounds are ignored; a class with rounds that the
        mapping leaves out gets none.
    inverse_variance : bool
        Weigh measurements by ``1 / noise_std**2`` in the projection loss.
    decoding : {"controlled", "independent"}
        How relaxed rows become discrete rows (:func:`polars_rap.decode.decoding.decode`).
    selection_share : float
        Part of a selection round's budget spent on its Gumbel top-K, the rest measuring what
        it picks (0.5, the paper's; 0.2 lowers LT error 11% on acs-income-CA and leaves Adult
        unchanged at ε = 1: ``bench/results/ablation_selection.md``).
    base_share : float
        Part of the loop's budget spent first on the base marginals, every categorical feature
        block times each label, measured outright (:mod:`polars_rap.fit.base_marginals`; AIM's
        one-way marginals; default 0.1, the margins the annealed CM rounds and the prior build
        on); 0 measures none. The numeric histograms' step is added after, out of the
        thresholds' share at the defaults, so the base marginals keep 0.1 of the loop. Past
        20 feature blocks it grows with them, up to 0.3
        (:func:`polars_rap.fit.base_marginals.wide_base_share`).
    histogram_share : float
        Part of the loop's budget spent on the numeric histograms: each numeric column's
        one-way distribution times each label, on a public grid of at most 200 cells
        (:data:`~polars_rap.fit.numeric_histograms.DEFAULT_MAX_BINS`; every whole value of a
        small integer column), one Gaussian release each, the projection fitting their
        cumulative sums (:mod:`polars_rap.fit.numeric_histograms`); default 0.2, out of the
        thresholds' share (:data:`~polars_rap.fit.numeric_histograms.HISTOGRAM_FROM`); 0
        measures none. Decoding moves each numeric column toward its released histogram
        (:data:`~polars_rap.decode.histogram_margins.HISTOGRAM_MATCH`). Random thresholds
        almost never separate 19 from 20 minutes, so heaped and pinned values otherwise go unseen
        (``bench/results/ablation_histograms_now.md``: at 5% of every class's budget,
        mixed-marginal error -28% on acs-income-CA and -39% on Adult at epsilon = 1, KS -39%
        and -83%; ``ablation_tree_share_seeds.md``: 20% out of the thresholds', MM -17 to -31%
        more over 6 seeds).
    cm_margin_reserve : float
        With the base marginals: the part of the annealed CM step's budget kept
        from its rounds for one last measurement of the base marginals whose feature no table
        the rounds measured holds (all of them when every feature is held), split evenly, then
        a projection (:mod:`polars_rap.fit.annealing`: the margin refresh). A feature the rounds never
        reach keeps the base step's margin alone, and every table of it left to the prior
        inherits its noise (Adult at eps 0.25: native-country, 84 cells, on most seeds). Default
        0.1; 0: none kept (the default until the rerun of 2026-11-28e); a step measured outright
        in one round keeps none either. Against 0, 6 seeds at eps 0.25 and 1
        (``bench/results/cm_margin_reserve_pairs.md``): CM 0.96x / 0.97x on acs-income-CA and
        0.93x / 1.01x on Adult (lower in 6 of 6 runs on Adult at 0.25), macro F1 +0.002 but for
        Adult at eps 1 (-0.003), MM 1.15x / 1.06x on CA (its noisiest cell, seed by seed
        0.83-1.83x) and 0.99x / 1.03x on Adult; 0.2 cut CM no further and cost more MM.
    independence_prior : bool or "mediated"
        Fit every CM table not measured (yet) toward an inferred table, weighed as a
        measurement as noisy as the noisiest categorical one, recomputed from the relaxed
        data's own tables before each projection (:mod:`polars_rap.fit.independence_prior`;
        post-processing, free): with True, the conditional independence of its two features
        given the label; with ``"mediated"`` (the default), where a third feature has a
        measured table with each of the two, their independence given it and the label (the
        maximum-entropy table given those two tables), else as with True. It matters only
        where tables go unmeasured, as with the annealed CM step, standing in for AIM's inference of
        those tables. False: unmeasured tables are whatever the projection leaves them.
    numeric_coupling : {"fitted", "label"}
        ``"fitted"``: each decoded row keeps its relaxed row's numeric values together;
        ``"label"``: each numeric column's values are permuted among the decoded rows of the
        same label value, so that the numeric columns are independent of each other and of the
        categorical features given the label (:mod:`polars_rap.decode.numeric_coupling`;
        post-processing, free; tables without a label keep ``"fitted"``, and so do released
        public rows (``public_use`` ``"reweight"``); after a public label model's redraw the
        values follow the new labels). Within a label the
        fitted pairing comes from relaxed rows that are partly of each label, not from the
        data: at the default ``"label"``, 3 seeds at ε = 0.25 and 1
        (``bench/results/ablation_numeric_coupling.md``), LT error falls 36% and 45% on
        acs-income-CA and 10% and 6% on Adult, MM 12% and 9% on CA (Adult +2% and +0.4%), CM
        and the numeric KS distance are unchanged (the categories and each column's values
        within each label are the same), macro F1 moves -0.002 to +0.002.
    tie_share : float
        Part of the loop's budget (in ``[0, 1)``; default 0.1, 0 turns it off) spent, before the
        loop, on the numeric ties: each numeric column's sums by feature and label, one Gaussian
        release (:mod:`polars_rap.decode.numeric_ties`); decoding then hands each column's values out
        within each label so that its mean in each (feature, label) cell follows them, as far as
        their noise supports. The label coupling otherwise leaves every numeric column
        independent of the features given the label (on the real rows that costs 0.010 macro F1
        on acs-income-CA and 0.007 on Adult). Against off, over 6 seeds at ε = 1
        (``bench/results/ablation_numeric_ties.md``, ``numeric_ties_pairs.md``): F1 +0.004 on CA
        and +0.005 on Adult, CM 0.99x / 1.03x, MM 1.09x / 1.05x, LT 1.07x / 1.02x; at ε = 5 F1
        +0.005 / +0.0005, LT 0.93x / 0.87x. Only with ``numeric_coupling="label"`` and labels,
        and where their noise std per cell is at most
        :data:`~polars_rap.decode.numeric_ties.TIE_NOISE_CAP` (otherwise nothing is measured and
        nothing charged). The sums are read in the one pass over the rows, on Ray per block.
    rank_share : float
        The most of the loop's budget (in ``[0, 1)``; default 0.05, 0 turns it off) held back for
        every numeric pair's rank covariance within the labels, released after the loop with
        cell scores read from its rows (:mod:`polars_rap.decode.rank_pairs`); decoding then
        reorders each label's numeric columns to meet it. Where the numeric ties are not
        measured the pairs take what brings their noise std to
        :data:`~polars_rap.decode.rank_pairs.RANK_TARGET_STD` in Spearman units (a few
        millionths of the budget on acs-income-CA, a few per cent on a small table with many
        numeric columns) and are not measured where that exceeds the share; where the ties are
        measured the pairs are paid out of the ties' share instead, at most a quarter of it
        (:func:`~polars_rap.decode.rank_pairs.rank_pairs_rho_beside_ties`), and the loop's
        budget is the one without them. Without them the
        label coupling leaves the numeric columns independent of each other given the labels
        (SDNist's person and household weights, real r 0.874, came out at 0). Only with
        ``numeric_coupling="label"``, two numeric columns or more and at most
        :data:`~polars_rap.decode.rank_pairs.MAX_RANK_PAIRS` pairs.

    Notes
    -----
    Its ``warm_doublings`` and ``max_steps`` (:data:`WARM_DOUBLINGS`, :data:`MAX_STEPS`) are
    fixed, and so is ``rounds_lt``, the LT rounds when ``rounds`` does not set them: what the
    paper's strategy does differently.
    """

    class_shares: Mapping[str, float] | str | None = field(default_factory=lambda: dict(DEFAULT_CLASS_SHARES))
    selection_share: float = 0.5
    base_share: float = 0.1
    histogram_share: float = 0.2
    tie_share: float = 0.1
    rank_share: float = 0.05
    cm_margin_reserve: float = 0.1
    inverse_variance: bool = True
    decoding: str = "controlled"
    independence_prior: bool | str = "mediated"
    numeric_coupling: str = "label"
    name: str = field(default="planned", init=False)
    rounds_lt: int = field(default=10, init=False)
    warm_doublings: int | None = field(default=WARM_DOUBLINGS, init=False)
    max_steps: int | None = field(default=MAX_STEPS, init=False)

    def __post_init__(self) -> None:
        check_loop_settings(self)
        check_planned_settings(self)

    def plan(self, group_counts: Mapping[str, int], rounds: Mapping[str, int], k: int) -> list[Step]:
        return planned_steps(self.class_shares, group_counts, rounds, k,
                             margin_reserve=self.cm_margin_reserve if self.base_share > 0 else 0.0)

    def describe(self) -> dict[str, Any]:
        shares = dict(self.class_shares) if isinstance(self.class_shares, Mapping) else self.class_shares
        return {"name": self.name, "class_shares": shares, "selection_share": self.selection_share,
                "base_share": self.base_share, "histogram_share": self.histogram_share, "tie_share": self.tie_share,
                "rank_share": self.rank_share,
                "cm_margin_reserve": self.cm_margin_reserve, "inverse_variance": self.inverse_variance,
                "decoding": self.decoding, "independence_prior": self.independence_prior,
                "numeric_coupling": self.numeric_coupling}
