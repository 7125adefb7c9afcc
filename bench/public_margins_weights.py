"""The label's and the numeric margins' budget weights against the features', offline (issue 19).

The features' margins get about half of the margins' budget on acs-income-CA: the label's weight
(:data:`~polars_rap.public.margins.LABEL_WEIGHT`, 8) and the two numeric columns'
(:data:`~polars_rap.public.margins.NUMERIC_WEIGHT`, 4 each) take 16 of about 31. CM reads the
features' margins most, MM and LT the label's and the numerics'. This scans the two weights together
on :mod:`bench.public_margins_joint_variants`' simulation (the same noise draws for every row, the
library's prior and fit, 80% of the ε = 0.25 budget).

No release: the noise is simulated on CA's true margins.

    PYTHONPATH=src:. python -m bench.public_margins_weights    # -> bench/results/public_margins_weights.md
"""

from __future__ import annotations

WEIGHTS = ((8.0, 4.0), (4.0, 2.0), (2.0, 4.0), (2.0, 2.0), (4.0, 1.0), (1.0, 2.0), (2.0, 1.0))
"""(label weight, numeric weight) per row; (8, 4) is the library's."""
LIBRARY = "label 8, numeric 4"


def findings(ratios: dict) -> str:
    """The report's closing paragraph from ``ratios`` (:func:`~bench.public_margins_joint_variants.run`)."""
    best = min(ratios, key=lambda v: ratios[v][0])
    cm, mm, lt = ratios[best]
    base = ratios[LIBRARY]
    return (f"What it showed (2-core AMD EPYC, alone; errors only): the lower the label's and the numerics' weights, "
            f"the lower CM and the higher MM and LT. The lowest CM, {best}: CM {cm:.3f}x against the library's "
            f"{base[0]:.3f}x, for MM {mm:.3f}x against {base[1]:.3f}x and LT {lt:.3f}x against {base[2]:.3f}x. "
            "Not taken to the pipeline: the margins' share of the budget is set by the weights' sum "
            "(`margins_share`), so lighter weights would also measure less where the share is not capped (on Texas "
            "at ε = 1, with the whole budget the loop's, label 2 and numeric 1 take the share from 0.22 to 0.145, "
            "under the 15% floor: nothing measured), and no row reaches CM 0.5x offline, where the pipeline has "
            "scored as the simulation or higher.")


def main() -> int:
    from bench.public_margins_joint_variants import run

    variants = tuple((f"label {label:g}, numeric {numeric:g}", label, numeric, 1.0, None, 0.8)
                     for label, numeric in WEIGHTS)
    return run(variants, "public_margins_weights", "The label's and the numeric margins' budget weights", findings)


if __name__ == "__main__":
    raise SystemExit(main())
