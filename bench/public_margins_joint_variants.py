"""The joint fit's settings, offline (issue 19): budget weights, prior scale, a pooled prior, share.

:func:`~polars_rap.public.tilt.tilted_weights` took the two-stage estimate's settings as they were
(``public_margins_joint.md``). This asks whether the joint fit wants others, in the same
simulation and on the same noise draws (CA's true margins as the library measures them with the
Gaussian noise of their share of the ε = 0.25 budget, 8 draws, n rows drawn and scored by the
suite): the label's and the numeric margins' budget weights
(:data:`~polars_rap.public.margins.LABEL_WEIGHT`, :data:`~polars_rap.public.margins.NUMERIC_WEIGHT`),
the prior variance scaled, the prior variance pooled over the categorical margins (each margin's
moment estimate blended with the margins' mean, ``k0`` pseudo-cells), and the margins' share of the
budget (the library caps it at :data:`~polars_rap.public.margins.MAX_SHARE`, 80%).

No release: the noise is simulated on CA's true margins.

    PYTHONPATH=src:. python -m bench.public_margins_joint_variants
    # -> bench/results/public_margins_joint_variants.md
"""

from __future__ import annotations

import numpy as np

DRAWS = 8
VARIANTS = (  # (name, label weight, numeric weight, prior scale, pooled k0 or None, share of the budget)
    ("the library's (label 8, numeric 4)", 8.0, 4.0, 1.0, None, 0.8),
    ("numeric weight 2", 8.0, 2.0, 1.0, None, 0.8),
    ("label weight 4", 4.0, 4.0, 1.0, None, 0.8),
    ("prior variance x2", 8.0, 4.0, 2.0, None, 0.8),
    ("prior variance x0.5", 8.0, 4.0, 0.5, None, 0.8),
    ("prior variance pooled, k0 = 4", 8.0, 4.0, 1.0, 4.0, 0.8),
    ("prior variance pooled, k0 = 20", 8.0, 4.0, 1.0, 20.0, 0.8),
    ("share 95%", 8.0, 4.0, 1.0, None, 0.95),
    ("share 100% (no loop)", 8.0, 4.0, 1.0, None, 1.0),
)
FINDINGS = (
    "What it showed (2-core AMD EPYC, alone; errors only): no setting takes CM to 0.5x. The budget weights move "
    "CM by 0.01 at a cost in MM or LT; scaling the prior variance either way raises CM, and pooling it over the "
    "margins raises every error (a margin's own moments are the better guide); more of the budget on the margins "
    "lowers CM on every draw (0.54x -> 0.53x at 95%, 0.52x at 100%), but through the pipeline the 95% cap "
    "scored CM 0.99x / 1.02x of the 80% one at ε = 0.25 / 0.1 over six seeds "
    "(`public_margins_joint_cap95.md`), within the seeds' spread, as the cap did before the joint fit: the "
    "library keeps 80%.")


def run(variants: tuple, name: str, title: str, findings) -> int:
    """``bench/results/<name>.md`` headed ``title``: a row per ``variants`` entry (as
    :data:`VARIANTS`), ``findings`` below the table (a string, or a function of ``{variant: [CM,
    MM, LT] as ratios to the run without a public table]}`` that writes it), the per-draw CM last."""
    import polars as pl

    from polars_rap.public import margins as pm
    from polars_rap.public import tilt as public_tilt
    from polars_rap.privacy.accounting import rho_from_epsilon_delta

    from bench.public_margins_beyond import EPSILON, scored, write_report
    from bench.public_margins_joint import library_margins
    from bench.public_margins_probe import drawn_scores, probe_setup
    from bench.run import table_markdown

    setup = probe_setup(EPSILON)
    train, public, domain, n = setup.train, setup.public, setup.domain, setup.n
    _, cells, true = library_margins(setup)
    sizes = [len(t) for t in true]
    publics = [np.bincount(cell, minlength=k) / len(cell) for cell, k in zip(cells, sizes, strict=True)]
    categorical = len(sizes) - len(domain.numeric_columns)
    library = (pm.LABEL_WEIGHT, pm.NUMERIC_WEIGHT, public_tilt.prior_variance)
    rows, per_draw, ratios = [], {}, {}
    for variant, label_weight, numeric_weight, scale, k0, share in variants:
        pm.LABEL_WEIGHT, pm.NUMERIC_WEIGHT = label_weight, numeric_weight
        weights = pm._weights(domain)
        rho = share * rho_from_epsilon_delta(EPSILON, 1.0 / n**2)
        stds = [float(np.sqrt(2.0) / n / np.sqrt(2 * rho * w / weights.sum())) for w in weights]
        noise_rng, draw_rng, scores = np.random.default_rng(100), np.random.default_rng(7), []
        for _ in range(DRAWS):
            released = [(t + s * noise_rng.standard_normal(len(t)), s) for t, s in zip(true, stds, strict=True)]
            pooled = np.mean([max(0.0, float(np.square(y - p).sum()) - len(y) * s**2)
                              for (y, s), p in list(zip(released, publics, strict=True))[:categorical]])

            def prior(noisy, std, public, k0=k0, scale=scale, pooled=pooled):
                if k0 is None:
                    return library[2](noisy, std, public) * scale
                own = max(0.0, float(np.square(noisy - public).sum()) - len(noisy) * std**2) / float(public.sum())
                return max(public_tilt.TAU2_FLOOR, (len(noisy) * own + k0 * pooled) / (len(noisy) + k0))

            public_tilt.prior_variance = prior
            scores.append(drawn_scores(public, public_tilt.tilted_weights(cells, released, publics), setup.order,
                                       train, setup.test, domain, setup.label, draw_rng))
        pm.LABEL_WEIGHT, pm.NUMERIC_WEIGHT, public_tilt.prior_variance = library
        rows.append({"joint fit": variant, **scored(np.mean(scores, axis=0), setup.none)})
        per_draw[variant] = [round(s[0] / setup.none["CM"], 3) for s in scores]
        ratios[variant] = [float(m) / setup.none[c] for m, c in zip(np.mean(scores, axis=0), ("CM", "MM", "LT"))]
        print(rows[-1], flush=True)
    draws = pl.DataFrame({"draw": list(range(DRAWS)), **per_draw})
    closing = findings if isinstance(findings, str) else findings(ratios)
    write_report(name, title,
                 "; unless a row says otherwise: the library's margins, every margin fitted at once, the same noise "
                 "draws for every row", rows, setup.none,
                 closing + "\n\n## CM (x none) per draw\n\n" + table_markdown(draws), draws=DRAWS)
    return 0


def main() -> int:
    return run(VARIANTS, "public_margins_joint_variants", "The joint fit's settings", FINDINGS)


if __name__ == "__main__":
    raise SystemExit(main())
