"""Each margin's prior variance taken from what its own tilt must explain, offline (issue 19). Dropped.

:func:`~polars_rap.public.tilt.tilted_weights` estimated each margin's ``tau^2`` from its release's
gap to the public table's margin. But in the joint fit a margin's own log-factors need explain only
the gap to the margin the *other* margins' tilts give it: CA's birthplace margin lies far from the
other states' (its ``tau^2`` was large, its noise kept), yet the race and citizenship releases
carry most of that gap already. Commit ``22aebf6`` found the mode again with ``tau^2`` from that gap
(``public_tilt.REFITS``, ``public_tilt.others_margins``); this compares no refit, one and two (that
commit's). Through the pipeline it lowered CA's errors a little but raised Texas's CM on every seed
and failed Texas's check at ε = 1 in 2 of 3 runs (``public_margins_refit_fit.md``): it was reverted,
so this probe runs at ``22aebf6`` only.

The simulation is :mod:`bench.public_margins_joint`'s: CA's true margins as the library measures
them with the Gaussian noise of their share of 80% of the ε = 0.25 budget, 8 draws, n rows drawn
along :func:`~polars_rap.public.reweight.sampling_order` and scored by the suite; the same noise and
draw seeds for every row.

No release: the noise is simulated on CA's true margins.

    git worktree add /tmp/refit 22aebf6 && cd /tmp/refit && \
        PYTHONPATH=src:. python -m bench.public_margins_refit    # -> bench/results/public_margins_refit.md
    ... python -m bench.public_margins_refit --state TX    # -> bench/results/public_margins_refit_TX.md

(At ``22aebf6`` the bench folder lacks ``--state``: copy this checkout's ``bench/`` over it first.)
"""

from __future__ import annotations

import numpy as np

from bench.public_margins_joint import DRAWS, private_state, simulation

VARIANTS = {"no refit (tau^2 from the gap to the public margins, before)": 0,
            "one refit": 1,
            "two refits (22aebf6's library)": 2}
FINDINGS = (
    "What it showed (2-core AMD EPYC, alone; errors only): one refit takes CM from {before} to {after} of the run "
    "without a public table (lower on {lower} of {draws} draws), MM {mm_before} -> {mm_after}, LT {lt_before} -> "
    "{lt_after}; a second refit (22aebf6's library) {second}.")


def main(argv: list[str] | None = None) -> int:
    import polars as pl

    from polars_rap.public import tilt as public_tilt

    from bench.public_margins_beyond import scored, write_report
    from bench.run import table_markdown

    state = private_state(argv, __doc__.splitlines()[0])
    sim = simulation(state=state)
    library = public_tilt.REFITS
    scores = {}
    try:
        for variant, refits in VARIANTS.items():
            public_tilt.REFITS = refits
            scores[variant] = [sim.scores(public_tilt.tilted_weights(sim.cells, sim.released(d)), d)
                               for d in range(len(sim.noise))]
            print(variant, np.round(np.mean(scores[variant], axis=0), 6), flush=True)
    finally:
        public_tilt.REFITS = library
    none = sim.setup.none
    ratio = {v: np.mean(s, axis=0) / [none["CM"], none["MM"], none["LT"], 1.0] for v, s in scores.items()}
    before, after, second = VARIANTS
    cm = {v: np.array(s)[:, 0] for v, s in scores.items()}
    rows = [{"tau^2": v, **scored(np.mean(s, axis=0), none)} for v, s in scores.items()]
    per_draw = [{"draw": d, **{f"{v} CM (x none)": round(cm[v][d] / none["CM"], 3) for v in VARIANTS}}
                for d in range(DRAWS)]
    findings = FINDINGS.format(
        before=f"{ratio[before][0]:.3f}x", after=f"{ratio[after][0]:.3f}x", lower=int((cm[after] < cm[before]).sum()),
        draws=DRAWS, mm_before=f"{ratio[before][1]:.3f}x", mm_after=f"{ratio[after][1]:.3f}x",
        lt_before=f"{ratio[before][2]:.3f}x", lt_after=f"{ratio[after][2]:.3f}x",
        second=f"scores CM {ratio[second][0]:.3f}x, MM {ratio[second][1]:.3f}x, LT {ratio[second][2]:.3f}x")
    write_report("public_margins_refit",
                 "Each margin's prior variance from what its own tilt must explain",
                 "; the library's margins (binary features split by the label), the same noise draws for each row",
                 rows, none, findings + "\n\n## CM per draw\n\n" + table_markdown(pl.DataFrame(per_draw)),
                 draws=DRAWS, state=state)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
