"""A small table with three categorical features, a numeric column and a label, and its plan:
small enough that the annealed CM step (three tables) and the base marginals (three groups)
can be followed group by group. Shared by the tests of options of the annealed step."""

import numpy as np
import polars as pl

from polars_rap.fit import planning
from polars_rap.schema.domain import Domain
from polars_rap.fit.projection import ProjectionConfig
from polars_rap.fit.strategy import PlannedStrategy

MAPPING = {"a": ["x", "y"], "b": ["p", "q", "r"], "c": ["u", "v", "w", "z"], "t": (0.0, 10.0), "y": ["0", "1"]}
LOOP = dict(relaxed_rows=50, rounds={"LT": 2}, workload={"n_linear_thresholds": 30},
            projection=ProjectionConfig(max_steps=8))
"""The strategy's loop settings of a short run on :func:`frame` (``PlannedStrategy(**LOOP)``)."""
RUN = dict(delta=1e-7, domain=MAPPING, labels=["y"], seed=3, backend="cpu", progress=False)
"""``synthesize`` keywords of a short run on :func:`frame` (its strategy set with :data:`LOOP`)."""


def frame(n: int = 800, seed: int = 0) -> pl.DataFrame:
    """``n`` rows: b depends on a, the label on a; c and t independent of both."""
    rng = np.random.default_rng(seed)
    a = rng.choice(["x", "y"], n)
    b = np.where(a == "x", rng.choice(["p", "q", "r"], n, p=[0.7, 0.2, 0.1]), rng.choice(["p", "q", "r"], n))
    return pl.DataFrame({"a": a, "b": b, "c": rng.choice(["u", "v", "w", "z"], n), "t": rng.uniform(0.0, 10.0, n),
                         "y": np.where(a == "x", "1", rng.choice(["0", "1"], n))})


def plan(**settings):
    """``(queries, plan, group counts)`` of :func:`frame`'s domain under ``PlannedStrategy(**settings)``
    (2 threshold rounds, K = 3, 30 threshold queries), as :func:`polars_rap.fit.planning.workload_and_plan`."""
    domain = Domain.from_mapping(frame().schema, MAPPING, ["y"])
    return planning.workload_and_plan(domain, PlannedStrategy(**settings), np.random.default_rng(0), rounds_cm=None,
                                      rounds_lt=2, rounds_mm=0, queries_per_round=3, n_mixed_marginals=0,
                                      n_linear_thresholds=30, max_marginal_cells=None)


def assert_precise_run_unchanged(option: dict, base: dict | None = None) -> None:
    """At epsilon 50 the CM share measures every table outright in one round (no selection):
    a run of :func:`frame` with the strategy setting ``option`` on top of ``base`` is then the
    run with ``base`` alone, bit for bit (ledger events, relaxed rows, decoded rows)."""
    import polars_rap

    strategy = {"name": "planned", **LOOP, **(base or {})}
    plain = polars_rap.synthesize(frame(), epsilon=50.0, strategy=strategy, **RUN)
    changed = polars_rap.synthesize(frame(), epsilon=50.0, strategy={**strategy, **option}, **RUN)
    assert not any(e.description == "CM selection" for e in plain.report.events)
    assert [(e.description, e.round, e.rho.hex()) for e in changed.report.events] == [
        (e.description, e.round, e.rho.hex()) for e in plain.report.events]
    np.testing.assert_array_equal(changed.relaxed, plain.relaxed)
    assert changed.data.equals(plain.data)
