"""James-Stein shrinkage of noisy marginals (polars_rap.fit.shrinkage) and its use in the loop."""

from __future__ import annotations

import numpy as np
import pytest

import polars_rap
from polars_rap.fit import rounds
from polars_rap.fit.shrinkage import interaction_dof, shrink_marginal

from plans import OUTRIGHT  # tests/plans.py

FAST = dict(relaxed_rows=80, rounds_lt=2, n_linear_thresholds=200, progress=False,
            projection=polars_rap.ProjectionConfig(max_steps=5))


def _conditionally_independent(shape, rng) -> np.ndarray:
    """A table with A independent of B given C (C is the trailing axes), strong C effects."""
    a, b = shape[:2]
    rest = int(np.prod(shape[2:]))
    p_c = rng.dirichlet(np.ones(rest))
    p_a = rng.dirichlet(np.full(a, 0.7), size=rest).T  # [a, rest]
    p_b = rng.dirichlet(np.full(b, 0.7), size=rest).T  # [b, rest]
    return (p_a[:, None, :] * p_b[None, :, :] * p_c[None, None, :]).ravel()


@pytest.mark.parametrize(("shape", "dof"), [((4, 3, 2), 12), ((4, 3), 6), ((2, 2, 3), 3), ((5,), 0)])
def test_interaction_dof(shape, dof) -> None:
    assert interaction_dof(shape) == dof


def test_a_conditionally_independent_table_is_its_own_target() -> None:
    """Without noise the independence fit of a table with A ⊥ B | C is the table itself:
    nothing is left to shrink, and the estimate is the table to float precision."""
    table = _conditionally_independent((5, 4, 2), np.random.default_rng(0))
    estimate, factor = shrink_marginal(table, (5, 4, 2), noise_std=0.01)
    np.testing.assert_allclose(estimate, table, rtol=0, atol=1e-15)
    assert factor == 0.0


def test_zero_noise_and_small_interactions_leave_the_table_alone() -> None:
    table = np.random.default_rng(1).dirichlet(np.ones(24))
    same, factor = shrink_marginal(table, (4, 3, 2), noise_std=0.0)
    assert factor == 1.0 and np.array_equal(same, table)
    same, factor = shrink_marginal(table[:8], (2, 2, 2), noise_std=0.1)  # 2 dof: James-Stein needs 3
    assert factor == 1.0 and np.array_equal(same, table[:8])


def test_the_factor_follows_signal_against_noise() -> None:
    """A strong interaction measured with little noise keeps its factor near 1; the same table
    under noise as large as its cells is pulled most of the way to independence."""
    rng = np.random.default_rng(2)
    table = rng.dirichlet(np.full(40, 0.3))  # far from independent
    noisy = table + rng.normal(0.0, 1e-4, table.size)
    assert shrink_marginal(noisy, (5, 4, 2), 1e-4)[1] > 0.99
    noisy = table + rng.normal(0.0, 0.05, table.size)
    assert shrink_marginal(noisy, (5, 4, 2), 0.05)[1] < 0.5


@pytest.mark.parametrize(("interaction", "max_ratio"), [(0.0, 0.55), (0.3, 0.8), (1.0, 1.0)])
def test_shrinking_lowers_the_expected_squared_error(interaction, max_ratio) -> None:
    """Monte Carlo over 400 noise draws at a σ of the order of the cells (the regime of the
    benchmark's ε ≤ 1): the mean squared error of the estimate against the true table is
    well below the noisy table's when the interaction is weak, and not above it when it is
    strong (James-Stein's dominance). The (6 + 5 - 1) * 2 = 20 of 60 dimensions that fit the
    margins keep their noise, so even an independent table cannot go below 1/3 (measured:
    0.47-0.49 independent, 0.69-0.71 at 30% interaction, 0.90-0.94 fully dependent, seeds 3-5)."""
    rng = np.random.default_rng(3)
    shape = (6, 5, 2)
    independent = _conditionally_independent(shape, rng)
    dependent = rng.dirichlet(np.full(60, 0.5))
    table = (1.0 - interaction) * independent + interaction * dependent
    sigma = 0.5 * float(table.mean())
    raw, shrunk = [], []
    for _ in range(400):
        noisy = table + rng.normal(0.0, sigma, table.size)
        raw.append(np.square(noisy - table).sum())
        shrunk.append(np.square(shrink_marginal(noisy, shape, sigma)[0] - table).sum())
    ratio = np.mean(shrunk) / np.mean(raw)
    assert ratio < max_ratio


def test_shrinkage_is_post_processing_of_what_was_released(task, monkeypatch) -> None:
    """Shrinkage is post-processing: with it on, the run makes the same charges as with it off
    (same seed: the same mechanisms and ρ in the same order; which LT groups a selection
    picks may differ, since it compares against a different fit), the CM answers measured
    before any projection are the same, and the projection's CM targets are the shrunk
    estimates computed from the released answers and stds alone; LT targets are untouched."""
    targets = []
    real_project = rounds.project

    def spy(params, queries, answers, *args, **kwargs):
        targets.append((queries, np.array(answers, copy=True)))
        return real_project(params, queries, answers, *args, **kwargs)

    monkeypatch.setattr(rounds, "project", spy)
    rows = task.frame.sample(2_000, seed=7)
    common = dict(epsilon=0.5, delta=1e-8, domain=task.domain, labels=task.labels, seed=4, **FAST)
    shrunk = polars_rap.synthesize(rows, strategy=OUTRIGHT.but(shrinkage=True), **common)
    fitted_queries, final_targets = targets[-1]  # groups in measurement order
    plain = polars_rap.synthesize(rows, strategy=OUTRIGHT, **common)

    def charges(report):
        return [(e.description.split(" group")[0], e.rho) for e in report.events]

    assert charges(shrunk.report) == charges(plain.report)
    measured = shrunk.report.measurements
    cm = (measured["query_class"] == "CM").to_numpy()
    np.testing.assert_array_equal(measured["noisy_answer"].to_numpy()[cm],
                                  plain.report.measurements["noisy_answer"].to_numpy()[cm])
    assert shrunk.report.parameters["strategy"]["shrinkage"] is True

    expected = []
    for position, (_, part) in enumerate(measured.group_by("group", maintain_order=True)):
        noisy = part["noisy_answer"].to_numpy()
        if part["query_class"][0] == "CM":
            shape = fitted_queries.marginal_shape(position)
            noisy = shrink_marginal(noisy, shape, float(part["noise_std"][0]))[0]
        expected.append(noisy)
    np.testing.assert_array_equal(final_targets, np.concatenate(expected))
    assert not np.array_equal(final_targets[cm], measured["noisy_answer"].to_numpy()[cm])

