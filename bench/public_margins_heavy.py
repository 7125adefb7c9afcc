"""The joint fit's prior with heavy tails, offline (issue 19).

:func:`~polars_rap.public_tilt.tilted_weights` puts a prior on each measured cell's log-factor
whose variance is the margin's moment estimate. Where California differs from the other states
it differs by much in a few cells (the foreign-born by birthplace and race): a Gaussian of one
variance a margin shrinks those large deviations as it shrinks the small ones' noise. This
compares Student-t priors of the same variance (``df`` degrees of freedom; ``inf``: the
Gaussian) and, at 3 degrees, half and twice that variance; and both priors fitted to CA's true
margins as if they were the releases (the fit told the releases' stds): what the prior's
shrinking costs without any noise, against the rows raked to them exactly
(``public_margins_joint.md``: CM 0.34x).

The simulation is :mod:`bench.public_margins_joint`'s: CA's true margins as the library measures
them with the Gaussian noise of their share of 80% of the ε = 0.25 budget, 8 draws, n rows drawn
along :func:`~polars_rap.public_reweight.sampling_order` and scored by the suite; the same noise
and draw seeds for every prior.

No release: the noise is simulated on CA's true margins.

    PYTHONPATH=src:. python -m bench.public_margins_heavy    # -> bench/results/public_margins_heavy.md
"""

from __future__ import annotations

import numpy as np

from bench.public_margins_beyond import EPSILON, MARGINS_SHARE
from bench.public_margins_joint import DRAWS, library_margins

PRIORS = {"Gaussian (before)": (np.inf, 1.0, 1.0), "t, 5 degrees": (5.0, 1.0, 1.0),
          "t, 3 degrees (now)": (3.0, 1.0, 1.0), "t, 2.5 degrees": (2.5, 1.0, 1.0),
          "t, 3 degrees, half the variance": (3.0, 0.5, 1.0), "t, 3 degrees, twice the variance": (3.0, 2.0, 1.0),
          "Gaussian, CA's true margins as the releases": (np.inf, 1.0, 0.0),
          "t, 3 degrees, CA's true margins as the releases": (3.0, 1.0, 0.0)}
"""Each prior's (degrees of freedom, factor on :func:`~polars_rap.public_tilt.prior_variance`,
factor on the noise: 0 releases CA's true margins, the fit told their stds)."""
FINDINGS = (
    "What it showed (2-core AMD EPYC, alone; errors only): heavier tails lower every error. Three degrees score CM "
    "{t3_cm} of the run without a public table against the Gaussian's {gauss_cm} (lower on {lower} of {draws} "
    "draws), MM {t3_mm} against {gauss_mm}, LT {t3_lt} against {gauss_lt}; 2.5 to 5 degrees and half or twice the "
    "variance land within the draws' spread of it. Given CA's true margins as the releases (the fit told their "
    "stds), the Gaussian scores CM {gauss_true} and 3 degrees {t3_true}, against 0.34x raked to them exactly: most "
    "of the gap to that floor is the prior's shrinking, not the noise, and the t's stiffer peak shrinks CA's small "
    "real deviations more than the Gaussian does; it wins where the noise is. Taken into the library "
    "(`public_tilt.PRIOR_DF`).")


def main() -> int:
    import polars as pl

    from polars_rap import public_margins as pm
    from polars_rap import public_tilt
    from polars_rap.accounting import rho_from_epsilon_delta

    from bench.public_margins_beyond import scored, write_report
    from bench.public_margins_probe import drawn_scores, probe_setup
    from bench.run import table_markdown

    setup = probe_setup(EPSILON)
    domain, n = setup.domain, setup.n
    rho = MARGINS_SHARE * rho_from_epsilon_delta(EPSILON, 1.0 / n**2)
    _, cells, true = library_margins(setup)
    weights = pm._weights(domain)
    stds = [float(np.sqrt(2.0) / n / np.sqrt(2 * rho * w / weights.sum())) for w in weights]
    noise_rng = np.random.default_rng(100)
    noise = [[noise_rng.standard_normal(len(t)) for t in true] for _ in range(DRAWS)]
    moment = public_tilt.prior_variance

    scores = {}
    for name, (df, factor, noisy) in PRIORS.items():
        public_tilt.prior_variance = lambda noisy, std, public, factor=factor: factor * moment(noisy, std, public)
        scores[name] = []
        for d, draw in enumerate(noise):
            released = [(t + noisy * s * z, s) for t, s, z in zip(true, stds, draw, strict=True)]
            scores[name].append(drawn_scores(setup.public, public_tilt.tilted_weights(cells, released, df=df),
                                             setup.order, setup.train, setup.test, domain, setup.label,
                                             np.random.default_rng(7 + d)))
            print(name, np.round(scores[name][-1], 6), flush=True)
    public_tilt.prior_variance = moment
    none = setup.none
    ratio = {m: np.mean(s, axis=0) / [none["CM"], none["MM"], none["LT"], 1.0] for m, s in scores.items()}
    gauss, t3 = "Gaussian (before)", "t, 3 degrees (now)"
    lower = int((np.array(scores[t3])[:, 0] < np.array(scores[gauss])[:, 0]).sum())
    rows = [{"prior": name, **scored(np.mean(scores[name], axis=0), none)} for name in PRIORS]
    per_draw = [{"draw": d, **{f"{m} CM (x none)": round(scores[m][d][0] / none["CM"], 3) for m in (gauss, t3)}}
                for d in range(DRAWS)]
    findings = FINDINGS.format(
        t3_cm=f"{ratio[t3][0]:.3f}x", gauss_cm=f"{ratio[gauss][0]:.3f}x", lower=lower, draws=DRAWS,
        t3_mm=f"{ratio[t3][1]:.3f}x", gauss_mm=f"{ratio[gauss][1]:.3f}x",
        t3_lt=f"{ratio[t3][2]:.3f}x", gauss_lt=f"{ratio[gauss][2]:.3f}x",
        gauss_true=f"{ratio[list(PRIORS)[-2]][0]:.3f}x", t3_true=f"{ratio[list(PRIORS)[-1]][0]:.3f}x")
    write_report("public_margins_heavy", "The joint fit's prior with heavy tails",
                 "; the library's margins (binary features split by the label), the same noise draws for each prior",
                 rows, none, findings + "\n\n## CM per draw\n\n" + table_markdown(pl.DataFrame(per_draw)),
                 draws=DRAWS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
