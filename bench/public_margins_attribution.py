"""Where the joint fit's remaining CM error comes from, offline (issue 19).

``public_use="margins"`` leaves CA's CM at ε = 0.25 near 0.54x of the run without a public table;
the other states' rows raked to CA's true margins exactly score 0.34x (``public_margins_joint.md``).
This splits that gap: the library's fit (:func:`~polars_rap.public.tilt.tilted_weights`, told the
releases' stds as always) is given some margins' *true* values in place of their noisy releases,
group by group, and then all of them. Whatever a group's noise costs shows as the fall from the
all-noisy row; what is left with every margin true is the prior's shrinking of deviations it
cannot tell from noise at those stds.

The simulation is :mod:`bench.public_margins_joint`'s: CA's true margins as the library measures
them with the Gaussian noise of their share of 80% of the ε = 0.25 budget, 8 draws, n rows drawn
along :func:`~polars_rap.public.reweight.sampling_order` and scored by the suite; the same noise
and draw seeds for every row.

No release: the noise is simulated on CA's true margins.

    PYTHONPATH=src:. python -m bench.public_margins_attribution    # -> bench/results/public_margins_attribution.md
"""

from __future__ import annotations

import numpy as np

from bench.public_margins_joint import DRAWS, simulation

BIRTH = ("POBP", "RAC1P", "CIT")
"""Birthplace, race and citizenship: where CA's margins lie farthest from the other states'."""
BIRTH_TRUE = "birthplace's, race's and citizenship's true"
FINDINGS = (
    "What it showed (2-core AMD EPYC, alone; errors only): with every margin's true value the fit scores CM "
    "{all_true} of the run without a public table, against {noisy} with the noise and 0.34x for the rows raked to "
    "the true margins exactly: most of the gap to that floor is the prior's shrinking, not the noise. Of the "
    "noise's part, birthplace, race and citizenship hold the most ({birth}); the binary features x label tables "
    "next ({splits}); the label's, the numeric columns' and the two largest features' (OCCP, SCHL) little.")


def main() -> int:
    from polars_rap.public.margins import margin_names
    from polars_rap.public.tilt import tilted_weights

    from bench.public_margins_beyond import scored, write_report

    sim = simulation()
    setup = sim.setup
    names = margin_names(setup.domain)
    features = [m for m in names if m not in setup.numeric and " x " not in m and m != setup.label]
    groups = {"every margin noisy (the library)": [],
              "the label's true": [setup.label],
              "the binary features x label tables true": [m for m in names if " x " in m],
              "the numeric columns' true": list(setup.numeric),
              "OCCP's and SCHL's true": ["OCCP", "SCHL"],
              BIRTH_TRUE: list(BIRTH),
              "the other features' true": [m for m in features if m not in ("OCCP", "SCHL", *BIRTH)],
              "every margin true": names}
    scores = {}
    for group, exact in groups.items():
        scores[group] = []
        true_ones = {m for m, name in enumerate(names) if name in exact}
        for d in range(len(sim.noise)):
            scores[group].append(sim.scores(tilted_weights(sim.cells, sim.released(d, true_ones)), d))
            print(group, np.round(scores[group][-1], 6), flush=True)
    none = setup.none
    cm = {group: float(np.mean(s, axis=0)[0]) / none["CM"] for group, s in scores.items()}
    rows = [{"releases": group, **scored(np.mean(s, axis=0), none)} for group, s in scores.items()]
    findings = FINDINGS.format(all_true=f"{cm['every margin true']:.3f}x",
                               noisy=f"{cm['every margin noisy (the library)']:.3f}x",
                               birth=f"{cm[BIRTH_TRUE]:.3f}x",
                               splits=f"{cm['the binary features x label tables true']:.3f}x")
    write_report("public_margins_attribution", "Where the joint fit's remaining CM error comes from",
                 "; the library's margins (binary features split by the label), the fit told the releases' stds, "
                 "the same noise draws for each row", rows, none, findings, draws=DRAWS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
