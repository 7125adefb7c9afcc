"""Projection (Alg. 1): parameterisation, chain rule, and that it fits reachable targets."""

import numpy as np
import pytest

from polars_rap.kernels import get_backend
from polars_rap.fit.projection import ProjectionConfig, RelaxedParams, project
from polars_rap.workload.queries import QuerySet

from plans import OUTRIGHT  # tests/plans.py

BLOCKS = [3, 2]
N_NUMERIC = 2


def small_queries():
    """Marginal of the two blocks, plus four class-conditional thresholds."""
    cells = [([a, 3 + b], []) for a in range(3) for b in range(2)]
    thresholds = [
        ([3 + b], [([0, 1], [w0, w1], t)])
        for b, w0, w1, t in [(0, 1.0, 0.5, 0.6), (1, -0.7, 1.0, 0.1), (0, 0.3, -1.0, -0.2), (1, 1.0, 1.0, 1.1)]
    ]
    return QuerySet.from_lists(cells + thresholds, [6, 1, 1, 1, 1], [[0, 1], [], [], [], []],
                               BLOCKS, N_NUMERIC, query_class=[0] * 6 + [2] * 4)


def test_relaxed_blocks_are_distributions_and_numerics_pass_through():
    params = RelaxedParams.random(50, BLOCKS, N_NUMERIC, np.random.default_rng(0))
    relaxed = params.relaxed()
    np.testing.assert_allclose(relaxed[:, :3].sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(relaxed[:, 3:5].sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(relaxed[:, 5:], params.values[:, 5:])
    assert np.all((relaxed[:, 5:] >= 0) & (relaxed[:, 5:] <= 1))


def test_chain_gradient_matches_finite_differences_of_the_logits():
    rng = np.random.default_rng(1)
    params = RelaxedParams.random(4, BLOCKS, N_NUMERIC, rng)
    params.values = params.values.astype(np.float64)
    weights = rng.standard_normal(params.values.shape)

    def objective(values):
        return float(np.sum(weights * RelaxedParams(values, params.block_starts, 5).relaxed().astype(np.float64)))

    analytic = params.chain_gradient(params.relaxed(), weights)
    step = 1e-3
    numeric = np.zeros_like(params.values)
    for index in np.ndindex(params.values.shape):
        up, down = params.values.copy(), params.values.copy()
        up[index] += step
        down[index] -= step
        numeric[index] = (objective(up) - objective(down)) / (2 * step)
    np.testing.assert_allclose(analytic, numeric, rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_projection_fits_targets_of_a_hidden_dataset(backend):
    """Targets that some discrete dataset answers exactly: the exact loss must fall by far."""
    module = get_backend(backend)
    rng = np.random.default_rng(2)
    queries = small_queries()
    hidden = np.zeros((200, 7), dtype=np.float32)
    hidden[np.arange(200), rng.integers(0, 3, 200)] = 1
    hidden[np.arange(200), 3 + rng.integers(0, 2, 200)] = 1
    hidden[:, 5:] = rng.random((200, 2))
    targets = module.answers_relaxed(hidden, queries, np.inf).astype(np.float64)
    start = RelaxedParams.random(100, BLOCKS, N_NUMERIC, rng)
    start_loss = float(np.sum((module.answers_relaxed(start.relaxed(), queries, np.inf) - targets) ** 2))
    best, trace = project(start, queries, targets, module, ProjectionConfig(max_steps=300))
    assert trace.exact_loss < start_loss / 20
    assert trace.stages > 1  # thresholds were measured, so the temperature was annealed
    final = module.answers_relaxed(best.relaxed(), queries, np.inf).astype(np.float64)
    assert float(np.sum((final - targets) ** 2)) == pytest.approx(trace.exact_loss, rel=1e-5)


def test_projection_never_returns_worse_than_its_start():
    """Keeping the best iterate by exact loss: a start that already fits stays as good."""
    module = get_backend("reference")
    queries = small_queries()
    start = RelaxedParams.random(30, BLOCKS, N_NUMERIC, np.random.default_rng(3))
    targets = module.answers_relaxed(start.relaxed(), queries, np.inf).astype(np.float64)
    _, trace = project(start, queries, targets, module, ProjectionConfig(max_steps=20, max_doublings=1))
    assert trace.exact_loss <= 1e-12


@pytest.mark.parametrize("name, value", [("learning_rate", 0.0), ("sigma_initial", -1.0),
                                         ("max_steps", 0), ("max_doublings", -1)])
def test_bad_projection_settings_name_the_parameter(name, value):
    with pytest.raises(ValueError, match=name):
        ProjectionConfig(**{name: value})


def test_without_annealing_one_stage_runs_at_the_final_temperature():
    """A round that only adds categorical queries projects at the final temperature only."""
    module = get_backend("reference")
    queries = small_queries()
    start = RelaxedParams.random(30, BLOCKS, N_NUMERIC, np.random.default_rng(4))
    targets = np.full(queries.n_queries, 0.1)
    config = ProjectionConfig(max_steps=5, max_doublings=3)
    _, annealed = project(start, queries, targets, module, config)
    _, single = project(start, queries, targets, module, config, anneal=False)
    assert annealed.stages == 4 and single.stages == 1


def test_a_warm_projection_runs_the_last_warm_doublings_plus_one_stages():
    """``warm_doublings = k``: a warm projection runs stages max_doublings - k .. max_doublings
    (k beyond the schedule: all of it); a cold one, or k None, the whole schedule; without
    annealing, or without thresholds, one stage as before."""
    from polars_rap.fit.projection import temperature_stages

    config = ProjectionConfig(max_steps=5, max_doublings=3, warm_doublings=1)
    assert temperature_stages(config, True, warm=True) == [2, 3]
    assert temperature_stages(config, True) == [0, 1, 2, 3]
    assert temperature_stages(config, True, anneal=False, warm=True) == [3]
    assert temperature_stages(config, False, warm=True) == [0]
    assert temperature_stages(ProjectionConfig(max_doublings=3, warm_doublings=9), True, warm=True) == [0, 1, 2, 3]
    assert temperature_stages(ProjectionConfig(max_doublings=3), True, warm=True) == [0, 1, 2, 3]
    module = get_backend("reference")
    queries = small_queries()
    start = RelaxedParams.random(30, BLOCKS, N_NUMERIC, np.random.default_rng(4))
    targets = np.full(queries.n_queries, 0.1)
    _, warm = project(start, queries, targets, module, config, warm=True)
    _, cold = project(start, queries, targets, module, config)
    assert warm.stages == 2 and cold.stages == 4
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="warm_doublings"):
            ProjectionConfig(warm_doublings=bad)


def test_compiled_softmax_and_adam_step_match_plain_numpy():
    """The Numba row kernels equal the obvious NumPy formulas (softmax per block, the
    softmax chain rule, Adam with bias correction, numerics clipped to [0, 1])."""
    from polars_rap.fit.projection import _adam_step

    rng = np.random.default_rng(5)
    params = RelaxedParams.random(6, BLOCKS, N_NUMERIC, rng)
    logits = params.values[:, :5].astype(np.float64)
    expected = np.concatenate([np.exp(logits[:, :3]) / np.exp(logits[:, :3]).sum(1, keepdims=True),
                               np.exp(logits[:, 3:]) / np.exp(logits[:, 3:]).sum(1, keepdims=True),
                               params.values[:, 5:]], axis=1)
    relaxed = params.relaxed()
    np.testing.assert_allclose(relaxed, expected, rtol=1e-6)

    grad_relaxed = rng.standard_normal(relaxed.shape).astype(np.float32)
    first = rng.standard_normal(relaxed.shape).astype(np.float32) * 0.1
    second = rng.random(relaxed.shape).astype(np.float32) * 0.1
    grad = params.chain_gradient(relaxed, grad_relaxed).astype(np.float64)
    m = 0.9 * first + 0.1 * grad
    v = 0.999 * second + 0.001 * grad**2
    step = 3
    want = params.values - 0.05 * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    want[:, 5:] = np.clip(want[:, 5:], 0, 1)
    values = params.values.copy()
    norm_sq = _adam_step(values, relaxed, grad_relaxed, first, second, params.block_starts, 5,
                         0.05, 0.9, 0.999, 1e-8, step)
    np.testing.assert_allclose(values, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(first, m, rtol=1e-5, atol=1e-7)
    assert norm_sq == pytest.approx(float(np.sum(grad**2)), rel=1e-5)


def test_the_loop_projects_warm_after_its_first_threshold_projection():
    """In a run, the categorical step and the first threshold round project cold; every later
    threshold round projects warm (and so runs the short schedule when it is set)."""
    from unittest import mock

    import polars as pl

    import polars_rap
    from polars_rap.fit import rounds

    rng = np.random.default_rng(0)
    frame = pl.DataFrame({"age": rng.integers(18, 90, 500), "sex": rng.choice(["F", "M"], 500).tolist(),
                          "y": rng.choice(["no", "yes"], 500).tolist()})
    calls, real = [], rounds.project

    def recording(*args, **kwargs):
        params, trace = real(*args, **kwargs)
        calls.append((kwargs["anneal"], kwargs["warm"], trace.stages))
        return params, trace

    with mock.patch.object(rounds, "project", recording):
        polars_rap.synthesize(
            frame, epsilon=1.0, delta=1e-6, domain={"age": (18, 90), "sex": ["F", "M"], "y": ["no", "yes"]},
            labels=["y"], seed=0, progress=False,
            strategy=OUTRIGHT.but(relaxed_rows=20, rounds={"LT": 3}, workload={"n_linear_thresholds": 40},
                                  projection=ProjectionConfig(max_steps=3, max_doublings=3, warm_doublings=1)),
        )
    assert calls == [(False, False, 1), (True, False, 4), (True, True, 2), (True, True, 2)]


def test_stage_length_is_the_strategys_unless_the_run_sets_it():
    """``max_steps`` None: the planned strategy's 30 steps a stage, the paper's 60 (and 60 for a
    direct call); the strategy's ``projection=ProjectionConfig(max_steps=...)`` wins."""
    from unittest import mock

    import polars as pl

    import polars_rap
    from polars_rap.fit import rounds
    from polars_rap.fit.projection import PAPER_MAX_STEPS
    from polars_rap.fit.planned_strategy import MAX_STEPS
    from polars_rap.fit.strategy import PlannedStrategy

    assert ProjectionConfig().stage_steps == PAPER_MAX_STEPS == 60 and ProjectionConfig(max_steps=7).stage_steps == 7
    assert PlannedStrategy().max_steps == MAX_STEPS == 30
    rng = np.random.default_rng(0)
    frame = pl.DataFrame({"age": rng.integers(18, 90, 300), "y": rng.choice(["no", "yes"], 300).tolist()})
    real = rounds.project

    def stage_steps(name, projection=None):
        strategy = {"name": name, "relaxed_rows": 10, "rounds": {"LT": 2}, "workload": {"n_linear_thresholds": 20}}
        if projection is not None:
            strategy["projection"] = projection
        seen = set()

        def recording(*args, **kwargs):
            seen.add(args[4].stage_steps)
            return real(*args, **kwargs)

        with mock.patch.object(rounds, "project", recording):
            result = polars_rap.synthesize(frame, epsilon=1.0, delta=1e-6, domain={"age": (18, 90), "y": ["no", "yes"]},
                                           labels=["y"], seed=0, progress=False, strategy=strategy)
        return seen, result.report.parameters["max_steps"]

    assert stage_steps("planned") == ({30}, 30)
    assert stage_steps("paper") == ({60}, 60)
    assert stage_steps("planned", ProjectionConfig(max_steps=7)) == ({7}, 7)


