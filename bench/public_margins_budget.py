"""How much budget the margins would need for CM ½ on CA, offline (issue 19).

Issue 19 asks for CM at most half the run without a public table at ε = 0.25. The library spends
80% of that budget on the margins (the rest on the first check, the loop the final check weighs
them against, and that check) and scores CM 0.545x. This asks what the same margins and the same
fit score with more of a budget: the margins' noise stds are scaled to a multiple of ε = 0.25's
*whole* rho (0.8: the library; 1: everything on the margins, no check and no loop; more: a budget ε
= 0.25 does not have), the same noise draws scaled, so that each row differs by the budget alone.
Where that curve crosses ½ is what the margins with the public rows' associations need; below it,
only other measurements or a closer public table get there.

The simulation is :mod:`bench.public_margins_joint`'s: the private state's true margins as the
library measures them (binary features split by the label), Gaussian noise at their weights' share,
:func:`~polars_rap.public.tilt.tilted_weights`, n rows drawn along
:func:`~polars_rap.public.reweight.sampling_order` and scored by the suite; 8 draws, the same noise
and draw seeds for every row.

No release: the noise is simulated on the private state's true margins.

    PYTHONPATH=src:. python -m bench.public_margins_budget    # -> bench/results/public_margins_budget.md
    PYTHONPATH=src:. python -m bench.public_margins_budget --state TX    # -> ..._budget_TX.md
"""

from __future__ import annotations

import numpy as np

from bench.public_margins_beyond import EPSILON, MARGINS_SHARE
from bench.public_margins_joint import DRAWS, private_state, simulation

BUDGETS = (0.8, 1.0, 1.4, 2.0, 4.0)
"""The margins' rho as a multiple of ε = 0.25's whole rho; 0.8 is the library's share."""
FINDINGS = (
    "What it showed (2-core AMD EPYC, alone; errors only): the library's 80% scores CM {library}; the whole "
    "budget on the margins, with no check and no loop to fall back on, {whole} (lower on {whole_lower} of {draws} "
    "draws); {crossing}Twice the budget gives {twice}, four times {four}. {verdict}")
VERDICTS = {
    "beyond": "At ε = 0.25 no split between the margins and the rest takes these margins, fitted with the public "
              "rows' associations, to CM ½: that needs other measurements or a closer public table.",
    "whole": "Only a larger share of the ε = 0.25 budget than the library's, at the price of the checks or the loop "
             "they fall back on, takes these margins to CM ½.",
    "met": "The library's share already takes these margins to CM ½ at ε = 0.25."}
"""The findings' last sentence, by where CM crosses ½: beyond ε = 0.25's whole rho, within it, or
below the library's share."""


def verdict(budgets: np.ndarray, cm: np.ndarray) -> str:
    """The key of :data:`VERDICTS` for CM (x none, float64[budgets]) at ``budgets`` (rising, the
    first the library's share, one of them 1.0)."""
    if cm[0] <= 0.5:
        return "met"
    return "whole" if cm[budgets <= 1.0].min() <= 0.5 else "beyond"


def crossing(budgets: np.ndarray, cm: np.ndarray, epsilon_of) -> str:
    """A sentence and a space, or nothing where CM is below ½ at the first budget: where CM (x none,
    float64[budgets], falling) crosses ½, interpolated on log budget, and the ε whose
    :data:`MARGINS_SHARE` that rho is (``epsilon_of(multiple)``)."""
    below = np.flatnonzero(cm <= 0.5)
    if len(below) == 0:
        return "CM stays above ½ at every budget tried. "
    if below[0] == 0:
        return ""
    i = below[0]
    t = (cm[i - 1] - 0.5) / (cm[i - 1] - cm[i])
    multiple = float(np.exp(np.log(budgets[i - 1]) + t * (np.log(budgets[i]) - np.log(budgets[i - 1]))))
    return (f"CM crosses ½ near {multiple:.2f}x ε = {EPSILON}'s rho on the margins, which the library's "
            f"{MARGINS_SHARE:.0%} share would have at ε ≈ {epsilon_of(multiple / MARGINS_SHARE):.2f}. ")


def main(argv: list[str] | None = None) -> int:
    import polars as pl

    from polars_rap.privacy.accounting import epsilon_from_rho_delta, rho_from_epsilon_delta
    from polars_rap.public.tilt import tilted_weights

    from bench.public_margins_beyond import scored, write_report
    from bench.run import table_markdown

    state = private_state(argv, __doc__.splitlines()[0])
    sim = simulation(state=state)
    none, n = sim.setup.none, sim.setup.n
    rho = rho_from_epsilon_delta(EPSILON, 1.0 / n**2)
    scores = {}
    for budget in BUDGETS:
        scale = np.sqrt(MARGINS_SHARE / budget)  # the simulation's stds are at MARGINS_SHARE of rho
        scores[budget] = [sim.scores(tilted_weights(sim.cells, scaled_release(sim, d, scale)), d)
                          for d in range(len(sim.noise))]
        print(budget, np.round(np.mean(scores[budget], axis=0), 6), flush=True)
    cm = {b: np.array(s)[:, 0] / none["CM"] for b, s in scores.items()}
    mean_cm = np.array([cm[b].mean() for b in BUDGETS])
    rows = [{"margins' rho (x ε = 0.25's)": b, "ε of an 80% share": round(epsilon_from_rho_delta(
        b / MARGINS_SHARE * rho, 1.0 / n**2), 3), **scored(np.mean(s, axis=0), none)} for b, s in scores.items()]
    per_draw = [{"draw": d, **{f"{b}x CM (x none)": round(float(cm[b][d]), 3) for b in BUDGETS}}
                for d in range(DRAWS)]
    findings = FINDINGS.format(
        library=f"{cm[MARGINS_SHARE].mean():.3f}x", whole=f"{cm[1.0].mean():.3f}x",
        whole_lower=int((cm[1.0] < cm[MARGINS_SHARE]).sum()), draws=DRAWS,
        crossing=crossing(np.array(BUDGETS), mean_cm,
                          lambda multiple: epsilon_from_rho_delta(multiple * rho, 1.0 / n**2)),
        twice=f"{cm[2.0].mean():.3f}x", four=f"{cm[4.0].mean():.3f}x",
        verdict=VERDICTS[verdict(np.array(BUDGETS), mean_cm)])
    write_report("public_margins_budget",
                 "The margins' CM against their budget",
                 "; here their noise is scaled to each row's budget (the same draws), the library's margins "
                 "(binary features split by the label)", rows, none,
                 findings + "\n\n## CM per draw\n\n" + table_markdown(pl.DataFrame(per_draw)),
                 draws=DRAWS, state=state)
    return 0


def scaled_release(sim, draw: int, scale: float) -> list[tuple[np.ndarray, float]]:
    """``(shares float64[cells], std)`` per margin: noise draw ``draw`` of ``sim``
    (:class:`~bench.public_margins_joint.Simulation`) with its noise and std times ``scale``."""
    return [(t + (noisy - t) * scale, std * scale) for (noisy, std), t in zip(sim.released(draw), sim.true,
                                                                              strict=True)]


if __name__ == "__main__":
    raise SystemExit(main())
