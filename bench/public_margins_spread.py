"""The features' share of the margins' budget water-filled on the states' spread, offline (issue 19).

``public_margins_alternatives.md`` water-filled the margins' budget on each margin's deviation
from the public one: on CA's *true* deviations (an oracle) CM fell to 0.52x of the run without
a public table, on deviations estimated from a first tenth of the budget to 0.57x. A public table
made of several populations (here the other states) says, for free, how far one population's
margin typically lies from the pooled one: ``S_i = sum_s (n_s / N) max(0, |m_si - m_i|^2 -
sum_c m_ic (1 - m_ic) / n_s)`` over the states ``s`` (the state's own sampling variance taken
off). This water-fills the categorical features' part of the budget on that spread
(:func:`~bench.public_margins_alternatives.water_fill`; the label's and the numeric columns'
parts as the library's), and on CA's true deviations for reference, in the probes' simulation
(CA's true margins with the Gaussian noise of their share of 80% of the ε = 0.25 budget, δ =
1/n², shrunk by :func:`~polars_rap.public.shrinkage.shrunk_margin`, the other states' rows raked to
them, n drawn and scored by the suite). The noise is drawn alike for every split (the same
standard normal draws scaled by each margin's std), so that the splits compare draw by draw.

No release: the noise is simulated on CA's true margins.

    PYTHONPATH=src:. python -m bench.public_margins_spread    # -> bench/results/public_margins_spread.md
"""

from __future__ import annotations

import numpy as np

from bench.public_margins_beyond import EPSILON, MARGINS_SHARE

DRAWS = 8
FINDINGS = (
    "What it showed (2-core AMD EPYC, alone; errors only): the states' spread is a better split than the square "
    "roots of the cells, but a small one: CM {spread_cm} of none against {library_cm} with the library's split "
    "(lower on {lower} of {draws} draws; MM {spread_mm} against {library_mm}, LT {spread_lt} against {library_lt}), "
    "and CA's true deviations, an oracle, {true_cm}. It moves budget to the margins on which states differ (POBP, "
    "RAC1P, CIT, SCHL, JWTR) and takes it from the disability flags and ESP, on which they do not. The library "
    "does not know where a public table's rows come from, so it would need a column naming them: not built for "
    "3% of CM.")


def main() -> int:
    import polars as pl

    from polars_rap.privacy.accounting import rho_from_epsilon_delta
    from polars_rap.public.reweight import rake
    from polars_rap.public.shrinkage import shrunk_margin

    from bench.public_margins_alternatives import water_fill
    from bench.public_margins_beyond import one_way_weights, public_states, scored, write_report
    from bench.public_margins_probe import drawn_scores, probe_codes, probe_setup, shares
    from bench.run import table_markdown

    setup = probe_setup(EPSILON)
    train, label, public, columns, n, none = \
        setup.train, setup.label, setup.public, setup.columns, setup.n, setup.none
    rho = MARGINS_SHARE * rho_from_epsilon_delta(EPSILON, 1.0 / n**2)
    truth, codes = probe_codes(setup)
    weight = one_way_weights(setup.domain)
    features = [c for c in setup.categorical if c != label]
    state = public_states(public.height)
    rows = np.bincount(state)
    pooled = {c: shares(codes[c][0], codes[c][1]) for c in columns}
    spread = {}
    for c in features:
        sampling = float((pooled[c] * (1.0 - pooled[c])).sum())
        spread[c] = sum(rows[s] * max(0.0, float(np.square(shares(codes[c][0][state == s], codes[c][1]) - pooled[c])
                                                 .sum()) - sampling / rows[s]) for s in range(len(rows))) / rows.sum()
    deviation = {c: float(np.square(shares(truth[c][0], codes[c][1]) - pooled[c]).sum()) for c in features}
    total = sum(weight.values())
    features_rho = rho * sum(weight[c] for c in features) / total
    cells = np.array([float(codes[c][1]) for c in features])

    def split(by: dict | None) -> dict:
        out = {c: rho * weight[c] / total for c in columns}
        if by is not None:
            out.update(zip(features, water_fill(cells, np.array([by[c] for c in features]), n, features_rho),
                           strict=True))
        return out

    splits = {"the library's (square roots of the cells)": split(None), "the states' spread": split(spread),
              "CA's true deviations (oracle)": split(deviation)}
    scores = {}
    for name, rhos in splits.items():
        rng, scores[name] = np.random.default_rng(100), []
        for _ in range(DRAWS):
            targets = []
            for c in columns:
                true, z = shares(truth[c][0], codes[c][1]), rng.standard_normal(codes[c][1])
                std = float(np.sqrt(1.0 / (n**2 * rhos[c]))) if rhos[c] > 0 else 0.0
                targets.append(shrunk_margin(true + std * z, std, pooled[c]) if rhos[c] > 0 else pooled[c])
            scores[name].append(drawn_scores(public, rake([codes[c][0] for c in columns], targets), setup.order,
                                             train, setup.test, setup.domain, label, rng))
        print(name, np.mean(scores[name], axis=0), flush=True)
    table = [{"features' split": name, **scored(np.mean(s, axis=0), none)} for name, s in scores.items()]
    mean = {name: np.mean(s, axis=0) / [none["CM"], none["MM"], none["LT"], 1.0] for name, s in scores.items()}
    library, states, oracle = (mean[name] for name in splits)
    lower = int((np.array(scores["the states' spread"])[:, 0]
                 < np.array(scores["the library's (square roots of the cells)"])[:, 0]).sum())
    shares_table = pl.DataFrame([{"feature": c, "codes": codes[c][1], "states' spread": f"{spread[c]:.2e}",
                                  "CA's deviation": f"{deviation[c]:.2e}", **{
                                      name: round(rhos[c] / (features_rho / len(features)), 2)
                                      for name, rhos in splits.items()}} for c in features])

    findings = FINDINGS.format(
        spread_cm=f"{states[0]:.3f}x", library_cm=f"{library[0]:.3f}x", lower=lower, draws=DRAWS,
        spread_mm=f"{states[1]:.3f}x", library_mm=f"{library[1]:.3f}x", spread_lt=f"{states[2]:.3f}x",
        library_lt=f"{library[2]:.3f}x", true_cm=f"{oracle[0]:.3f}x")
    write_report("public_margins_spread", "The features' budget water-filled on the states' spread",
                 "; the features' part split as named, the same noise draws for every split", table, none,
                 findings + "\n\n## Each feature's deviation and its budget (1 = the features' mean)\n\n"
                 + table_markdown(shares_table), draws=DRAWS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
