"""Every margin at once: the public rows' weights as one posterior mode, offline (issue 19).

Until 2026-11-29 ``public_use="margins"`` estimated each released margin alone
(:func:`~polars_rap.public.shrinkage.measured_margins`: pulled toward the public table's by an
empirical-Bayes factor per cell, a binary feature's table toward the public association) and
raked the public rows to the estimates. :func:`~polars_rap.public.tilt.tilted_weights` fits the
rows' weights to every release at once instead (an exponential tilt of the public rows, the same
prior on each margin's deviation), so that the public rows' associations carry each release to
the margins they go with.

Both read the same simulated releases: CA's true margins as the library measures them
(:func:`~polars_rap.public.margins._cells`, the binary features split by the label) with the
Gaussian noise of their weights' share (:func:`~polars_rap.public.margins._weights`) of 80% of
the ε = 0.25 budget (δ = 1/n², L2 sensitivity sqrt(2)/n), 8 draws, n rows drawn along
:func:`~polars_rap.public.reweight.sampling_order` and scored by the suite. The rows raked to CA's
true margins are the floor no estimate of them passes.

No release: the noise is simulated on CA's true margins.

    PYTHONPATH=src:. python -m bench.public_margins_joint    # -> bench/results/public_margins_joint.md
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

import numpy as np

from bench.public_margins_beyond import EPSILON, MARGINS_SHARE

DRAWS = 8
FINDINGS = (
    "What it showed (2-core AMD EPYC, alone; errors only): fitting every margin at once lowers CM from {two_cm} to "
    "{joint_cm} of the run without a public table, on {lower} of {draws} draws (MM {two_mm} -> {joint_mm}, LT "
    "{two_lt} -> {joint_lt}, the latter within the draws' spread); CA's true margins give {true_cm}. Taken into the "
    "library (`measured_candidate`).")


def library_margins(setup) -> tuple[object, list[np.ndarray], list[np.ndarray]]:
    """(the public rows encoded, :class:`~polars_rap.public.prior.PublicTable`; their cell per row
    of each margin the library measures, int64[rows] per margin; CA's true shares of each,
    float64[cells] per margin) for ``setup`` (:func:`~bench.public_margins_probe.probe_setup`):
    :func:`~polars_rap.public.margins._cells`, the binary features split by the label."""
    from polars_rap.public import margins as pm
    from polars_rap.public.prior import open_public, read_public

    train, domain = setup.train, setup.domain
    public, private = (read_public(open_public(frame, setup.task.domain, list(train.columns)), domain)
                       for frame in (setup.public, train))
    sizes = pm._sizes(domain)
    true = [np.bincount(cell, minlength=k) / setup.n
            for cell, k in zip(pm._cells(private.codes, private.numerics, domain), sizes, strict=True)]
    return public, pm._cells(public.codes, public.numerics, domain), true


class Simulation(NamedTuple):
    """The joint probes' simulated releases (:func:`simulation`): the probe's ``setup``
    (:class:`~bench.public_margins_probe.ProbeSetup`), the public rows ``encoded``, their
    ``cells`` and CA's ``true`` shares per library margin (:func:`library_margins`), each margin's
    noise ``stds`` (float, a share per cell) and ``noise``: per draw, standard normal
    float64[cells] per margin."""

    setup: object
    encoded: object
    cells: list
    true: list
    stds: list
    noise: list

    def released(self, draw: int, exact: Collection[int] = ()) -> list[tuple[np.ndarray, float]]:
        """``(shares float64[cells], std)`` per margin for noise draw ``draw``: CA's true shares
        plus ``std`` times the draw's standard normals, or the true shares alone for the margins
        (indices) in ``exact``; the std is the margin's either way (the fit is told it)."""
        return [(t if m in exact else t + s * z, s)
                for m, (t, s, z) in enumerate(zip(self.true, self.stds, self.noise[draw], strict=True))]

    def scores(self, weights: np.ndarray, draw: int) -> list[float]:
        """[CM, MM, LT, macro F1] of n public rows drawn by ``weights`` for noise draw ``draw``
        (:func:`~bench.public_margins_probe.drawn_scores`, seed ``7 + draw``: every method's rows
        for one draw are drawn alike)."""
        from bench.public_margins_probe import drawn_scores

        setup = self.setup
        return drawn_scores(setup.public, weights, setup.order, setup.train, setup.test, setup.domain, setup.label,
                            np.random.default_rng(7 + draw))


def simulation(draws: int = DRAWS, state: str = "CA") -> Simulation:
    """The private rows' true margins (CA's unless ``state`` says,
    :func:`~bench.public_margins_probe.probe_setup`) as the library measures them, with the Gaussian
    noise of their weights' share (:func:`~polars_rap.public.margins._weights`) of
    :data:`MARGINS_SHARE` of the ε = :data:`EPSILON` budget (δ = 1/n², L2 sensitivity sqrt(2)/n a
    margin): ``draws`` draws from seed 100, margin by margin within a draw."""
    from polars_rap.public import margins as pm
    from polars_rap.privacy.accounting import rho_from_epsilon_delta

    from bench.public_margins_probe import probe_setup

    setup = probe_setup(EPSILON, state)
    n = setup.n
    rho = MARGINS_SHARE * rho_from_epsilon_delta(EPSILON, 1.0 / n**2)
    encoded, cells, true = library_margins(setup)
    weights = pm._weights(setup.domain)
    stds = [float(np.sqrt(2.0) / n / np.sqrt(2 * rho * w / weights.sum())) for w in weights]
    noise_rng = np.random.default_rng(100)
    noise = [[noise_rng.standard_normal(len(t)) for t in true] for _ in range(draws)]
    return Simulation(setup, encoded, cells, true, stds, noise)


def private_state(argv: list[str] | None, description: str) -> str:
    """The ``--state`` a probe was given on its command line ``argv`` (two letters; CA, the
    headline's task, by default): whose true margins :func:`simulation` noises."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--state", default="CA", help="the private state (CA: the headline's task)")
    return parser.parse_args(argv).state


def main() -> int:
    import polars as pl

    from polars_rap.public.reweight import rake
    from polars_rap.public.shrinkage import measured_margins
    from polars_rap.public.tilt import tilted_weights

    from bench.public_margins_beyond import scored, write_report
    from bench.public_margins_probe import drawn_scores
    from bench.run import table_markdown

    sim = simulation()
    setup, encoded, cells = sim.setup, sim.encoded, sim.cells
    train, public, domain = setup.train, setup.public, setup.domain

    def estimate(method: str, released: list) -> np.ndarray:
        if method == "true":
            return rake(cells, sim.true)
        if method == "two-stage":
            return rake(*measured_margins(encoded, released, domain))
        return tilted_weights(cells, released)

    methods = {"two-stage": "each margin shrunk alone, the rows raked to the estimates (before)",
               "joint": "every margin at once (tilted_weights, now)", "true": "raked to CA's true margins (floor)"}
    scores = {}
    for method in methods:
        rng, scores[method] = np.random.default_rng(7), []
        for d in range(len(sim.noise)):
            weights = estimate(method, sim.released(d))
            scores[method].append(drawn_scores(public, weights, setup.order, train, setup.test, domain, setup.label,
                                               rng))
            print(method, np.round(scores[method][-1], 6), flush=True)
    none = setup.none
    ratio = {m: np.mean(s, axis=0) / [none["CM"], none["MM"], none["LT"], 1.0] for m, s in scores.items()}
    lower = int((np.array(scores["joint"])[:, 0] < np.array(scores["two-stage"])[:, 0]).sum())
    rows = [{"weights": label, **scored(np.mean(scores[m], axis=0), none)} for m, label in methods.items()]
    per_draw = [{"draw": d, **{f"{m} CM (x none)": round(scores[m][d][0] / none["CM"], 3) for m in methods}}
                for d in range(DRAWS)]
    findings = FINDINGS.format(
        two_cm=f"{ratio['two-stage'][0]:.3f}x", joint_cm=f"{ratio['joint'][0]:.3f}x", lower=lower, draws=DRAWS,
        two_mm=f"{ratio['two-stage'][1]:.3f}x", joint_mm=f"{ratio['joint'][1]:.3f}x",
        two_lt=f"{ratio['two-stage'][2]:.3f}x", joint_lt=f"{ratio['joint'][2]:.3f}x",
        true_cm=f"{ratio['true'][0]:.3f}x")
    write_report("public_margins_joint", "Every margin at once", "; the library's margins (binary features split "
                 "by the label), the same noise draws for each method", rows, none,
                 findings + "\n\n## CM per draw\n\n" + table_markdown(pl.DataFrame(per_draw)), draws=DRAWS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
