"""The order the public rows are drawn along, offline (issue 19): many-code columns first?

The fitted public rows are released as ``n`` rows drawn by weight systematically along
:func:`~polars_rap.public.reweight.sampling_order`: the labels, then each numeric column's cell,
then the other categorical columns, fewest codes first. Systematic sampling balances the leading
keys best, and the workload's CM mean is over cells, most of them in the tables of the columns with
the most codes (OCCP, SCHL). This puts the categorical columns first, most codes first, and the
numeric cells last, on :mod:`bench.public_margins_joint`'s simulation (CA's true margins with the
noise of 80% of the ε = 0.25 budget, 8 noise draws, the library's fit), each noise draw's weights
drawn 4 times (the same 4 draw seeds for both orders).

No release: the noise is simulated on CA's true margins.

    PYTHONPATH=src:. python -m bench.public_sampling_order    # -> bench/results/public_sampling_order.md
"""

from __future__ import annotations

import numpy as np

from bench.public_margins_joint import DRAWS, simulation

REPEATS = 4
"""Draws of n rows per noise draw and order (draw seeds ``1000 r + 7 + draw``)."""
FINDINGS = (
    "What it showed (2-core AMD EPYC, alone; errors only): the many-code columns first lower CM from {lib_cm} to "
    "{alt_cm} of the run without a public table (lower on {lower} of {draws} noise draws) but raise MM {lib_mm} -> "
    "{alt_mm} and LT {lib_lt} -> {alt_lt}: the numeric cells, last, are balanced less. Not taken: 1% of CM "
    "traded for 3% of MM and LT, not a better draw.")


def main() -> int:
    from polars_rap.public.reweight import SAMPLING_CELLS, margin_cells
    from polars_rap.public.tilt import tilted_weights

    from bench.public_margins_beyond import scored, write_report
    from bench.public_margins_probe import drawn_scores

    sim = simulation()
    setup = sim.setup
    domain, encoded = setup.domain, sim.encoded  # the public rows as the simulation read them
    cells = margin_cells(encoded.codes, encoded.numerics, domain, numeric_cells=SAMPLING_CELLS)
    labels = [b for b, block in enumerate(domain.blocks) if block.is_label]
    many_first = sorted((b for b in range(len(domain.blocks)) if b not in labels),
                        key=lambda b: -domain.block_sizes[b])
    keys = [*labels, *many_first, *range(len(domain.blocks), len(cells))]
    orders = {"the library's (labels, numeric cells, fewest codes first)": setup.order,
              "labels, most codes first, numeric cells last": np.lexsort([cells[k] for k in reversed(keys)])}
    scores = {name: [] for name in orders}
    for d in range(len(sim.noise)):
        weights = tilted_weights(sim.cells, sim.released(d))
        for name, order in orders.items():
            scores[name].append(np.mean([drawn_scores(setup.public, weights, order, setup.train, setup.test, domain,
                                                      setup.label, np.random.default_rng(1000 * r + 7 + d))
                                         for r in range(REPEATS)], axis=0))
        print(d, {name: round(s[-1][0] / setup.none["CM"], 3) for name, s in scores.items()}, flush=True)
    none = setup.none
    (lib, lib_scores), (alt, alt_scores) = scores.items()
    ratio = {name: np.mean(s, axis=0)[:3] / [none["CM"], none["MM"], none["LT"]] for name, s in scores.items()}
    findings = FINDINGS.format(
        lib_cm=f"{ratio[lib][0]:.3f}x", alt_cm=f"{ratio[alt][0]:.3f}x", draws=DRAWS,
        lower=int((np.array(alt_scores)[:, 0] < np.array(lib_scores)[:, 0]).sum()),
        lib_mm=f"{ratio[lib][1]:.3f}x", alt_mm=f"{ratio[alt][1]:.3f}x",
        lib_lt=f"{ratio[lib][2]:.3f}x", alt_lt=f"{ratio[alt][2]:.3f}x")
    rows = [{"drawn along": name, **scored(np.mean(s, axis=0), none)} for name, s in scores.items()]
    write_report("public_sampling_order", "The order the public rows are drawn along",
                 f"; the library's margins and fit, each noise draw's weights drawn {REPEATS} times", rows, none,
                 findings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
