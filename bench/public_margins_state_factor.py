"""A log-factor per public state in the joint fit, offline (issue 19). Dropped.

The public table is fifty tables: every state but CA, each with its own associations. CA is not
their pooled mix; the rows of states whose margins go CA's way (many born in Asia and Latin
America, many not citizens) might carry associations closer to CA's. So here the tilt
(:func:`~polars_rap.public.tilt.mode_weights`) gets one more log-factor per row, its state's,
measured by nothing (precision 0) and held by a prior ``theta_s ~ N(0, v / p_s)``, ``p_s`` the
state's share of the public rows: the fit may then move weight between states where that explains
the releases better than the one-way factors alone. The library would need a column naming each
public row's source for it; the benchmark rebuilds it from the files' order
(:func:`~bench.public_margins_beyond.public_states`).

The simulation is :mod:`bench.public_margins_joint`'s: CA's true margins as the library measures
them, with the Gaussian noise of their share of 80% of the ε = 0.25 budget, 8 draws, n rows drawn
along :func:`~polars_rap.public.reweight.sampling_order` and scored by the suite; the same noise
and draw seeds for every row.

No release: the noise is simulated on CA's true margins.

    PYTHONPATH=src:. python -m bench.public_margins_state_factor    # -> ..._state_factor.md
"""

from __future__ import annotations

import numpy as np

from bench.public_margins_joint import DRAWS, simulation

VARIANCES = (None, 0.1, 1.0)
"""The state factor's prior variance ``v`` (None: no state factor, the library's fit)."""
FINDINGS = (
    "What it showed (2-core AMD EPYC, alone; errors only): against the library's fit (CM {base}, MM {base_mm}, LT "
    "{base_lt}), a state factor of prior variance 0.1 scores CM {cm_01}, MM {mm_01}, LT {lt_01}, and of variance 1 "
    "CM {cm_1} (lower on {wins_1} of {draws} draws), MM {mm_1}, LT {lt_1}, its effective public rows {eff_1} against "
    "{eff_base}. Moving weight between states buys little CM and costs the numeric columns much. Dropped.")


def state_factor_weights(sim, states: np.ndarray, released: list, variance: float | None) -> np.ndarray:
    """float64[public rows] summing to 1: the library's joint fit of ``released`` (``variance``
    None) or the same with each row's state factor (``states``, prior variance ``variance``)."""
    from polars_rap.public.tilt import mode_weights, prior_variance, tilt_arrays, tilted_weights

    if variance is None:
        return tilted_weights(sim.cells, released)
    share = np.bincount(states) / len(states)
    index, target, precision, publics = tilt_arrays(list(sim.cells) + [states], list(released) + [(share, 1.0)])
    precision[-len(share):] = 0.0  # measured by nothing: only the prior holds it
    penalty = np.concatenate([public / prior_variance(noisy, std, public)
                              for (noisy, std), public in zip(released, publics[:-1], strict=True)]
                             + [share / variance])
    return mode_weights(index, target, precision, penalty, publics)


def main() -> int:
    import polars as pl

    from bench.public_margins_beyond import public_states, scored, write_report
    from bench.run import table_markdown

    sim = simulation()
    states = public_states(len(sim.cells[0]))
    scores, effective = {}, {}
    for variance in VARIANCES:
        scores[variance], rows = [], []
        for d in range(len(sim.noise)):
            weights = state_factor_weights(sim, states, sim.released(d), variance)
            rows.append(1.0 / np.square(weights).sum())
            scores[variance].append(sim.scores(weights, d))
        effective[variance] = float(np.mean(rows))
        print(variance, np.round(np.mean(scores[variance], axis=0), 6), round(effective[variance]), flush=True)
    none = sim.setup.none
    ratio = {v: np.mean(s, axis=0) / [none["CM"], none["MM"], none["LT"], 1.0] for v, s in scores.items()}
    cm = {v: np.array(s)[:, 0] for v, s in scores.items()}
    name = {None: "none (the library's fit)", 0.1: "v = 0.1", 1.0: "v = 1"}
    rows = [{"state factor": name[v], "effective public rows": round(effective[v]),
             **scored(np.mean(s, axis=0), none)} for v, s in scores.items()]
    per_draw = [{"draw": d, **{f"{name[v]} CM (x none)": round(cm[v][d] / none["CM"], 3) for v in VARIANCES}}
                for d in range(DRAWS)]
    findings = FINDINGS.format(
        base=f"{ratio[None][0]:.3f}x", base_mm=f"{ratio[None][1]:.3f}x", base_lt=f"{ratio[None][2]:.3f}x",
        cm_01=f"{ratio[0.1][0]:.3f}x", mm_01=f"{ratio[0.1][1]:.3f}x", lt_01=f"{ratio[0.1][2]:.3f}x",
        cm_1=f"{ratio[1.0][0]:.3f}x", mm_1=f"{ratio[1.0][1]:.3f}x", lt_1=f"{ratio[1.0][2]:.3f}x",
        wins_1=int((cm[1.0] < cm[None]).sum()), draws=DRAWS, eff_1=f"{effective[1.0]:,.0f}",
        eff_base=f"{effective[None]:,.0f}")
    write_report("public_margins_state_factor", "A log-factor per public state in the joint fit",
                 "; the library's margins (binary features split by the label), the same noise draws for each row",
                 rows, none, findings + "\n\n## CM per draw\n\n" + table_markdown(pl.DataFrame(per_draw)),
                 draws=DRAWS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
