"""CUDA kernels at sizes the simulator cannot reach (a real GPU only), against the Numba CPU
backend: n_rel = 10,000 relaxed rows and m = 100,000 queries (the benchmark's workload: 60%
class-conditional 3-way marginal cells, 40% label x linear threshold), 100,000 real rows over
several chunks, default launch geometry (many blocks per grid, several row segments and
gradient slices); and one small ``synthesize(backend="cuda")`` end to end.

Skipped without a GPU and under the simulator (``tests/test_kernels_cuda.py`` covers every
code path there at tiny sizes). On a GPU machine::

    python -m pytest tests/test_kernels_cuda.py tests/test_kernels_cuda_scale.py -q
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numba
import numpy as np
import pytest
from numba import cuda

if numba.config.ENABLE_CUDASIM or not cuda.is_available():
    pytest.skip("needs a real CUDA GPU (sizes the simulator cannot reach)", allow_module_level=True)

from polars_rap.kernels import cpu, cuda_config  # noqa: E402
from polars_rap.kernels import cuda as cuda_kernels  # noqa: E402
from polars_rap.kernels import cuda_exact  # noqa: E402
from polars_rap.fit.projection import ProjectionConfig, RelaxedParams, project  # noqa: E402

N_REL = 10_000
N_QUERIES = 100_000
N_REAL = 100_000


def _bench_module():
    path = Path(__file__).resolve().parents[1] / "bench" / "gpu_kernels.py"
    spec = importlib.util.spec_from_file_location("gpu_kernels_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def workload():
    bench = _bench_module()
    rng = np.random.default_rng(2026)
    queries = bench.make_workload(N_QUERIES, rng)
    X = bench.relaxed_matrix(queries, N_REL, rng)
    return bench, rng, queries, X


def test_exact_answers_at_scale_equal_the_cpu_backend(workload, monkeypatch):
    """100,000 real rows in 4 chunks; marginal groups by histogram, the rest tiled: the
    counts equal the CPU backend's exactly."""
    _, rng, queries, _ = workload
    monkeypatch.setattr(cuda_config, "EXACT_CHUNK_ROWS", 32_768)
    codes = np.stack([rng.integers(0, k, size=N_REAL) for k in queries.column_sizes],
                     axis=1).astype(np.int32)
    numerics = rng.random((N_REAL, queries.n_numeric))
    plan = cuda_exact.ExactPlan(queries)
    assert plan.n_groups > 100 and plan.n_listed > 10_000
    actual = cuda_kernels.answers_exact(codes, numerics, queries)
    expected = cpu.answers_exact(codes, numerics, queries)
    np.testing.assert_array_equal(actual, expected)
    assert 0 < np.count_nonzero(actual) < len(actual)


@pytest.mark.parametrize("sigma_kind", ["sigma8", "mixed"])
def test_relaxed_answers_loss_and_grad_at_scale_match_the_cpu_backend(workload, sigma_kind):
    """Answers, loss and gradient at n_rel = 1e4, m = 1e5 on a grid of many blocks, row
    segments and gradient slices agree with the CPU backend to float32 rounding."""
    _, rng, queries, X = workload
    sigma = np.full(queries.n_queries, 8.0, dtype=np.float32)
    if sigma_kind == "mixed":
        sigma[rng.random(queries.n_queries) < 0.3] = np.inf
        sigma[rng.random(queries.n_queries) < 0.3] = 40.0
    targets = rng.random(queries.n_queries) * 0.05
    workspace = cuda_kernels._RelaxedWorkspace(cuda_kernels._DeviceQueries(queries), N_REL,
                                               np.float32)
    assert workspace.sum_grid_x > 1000 and workspace.grad_grid > 100 and workspace.n_slices > 1

    answers = cuda_kernels.answers_relaxed(X, queries, sigma)
    expected_answers = cpu.answers_relaxed(X, queries, sigma)
    np.testing.assert_allclose(answers, expected_answers, rtol=1e-4, atol=1e-7)

    loss, grad = cuda_kernels.loss_and_grad(X, queries, targets, sigma)
    expected_loss, expected_grad = cpu.loss_and_grad(X, queries, targets, sigma)
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    scale = float(np.abs(expected_grad).max())
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-3, atol=1e-4 * scale)


def test_device_projection_at_scale_follows_the_cpu_backend(workload):
    """Ten Adam steps of the device loop at n_rel = 1e4, m = 1e5 reach the CPU backend's
    iterate and exact loss up to float32 rounding."""
    _, _, queries, _ = workload
    rng = np.random.default_rng(7)
    params = RelaxedParams.random(N_REL, [int(k) for k in queries.column_sizes],
                                  queries.n_numeric, rng)
    targets = rng.random(queries.n_queries) * 0.05
    config = ProjectionConfig(max_steps=10, patience=10**9, min_improvement=1e-300,
                              grad_tolerance=1e-300, max_doublings=0)
    expected, expected_trace = project(params, queries, targets, cpu, config)
    actual, trace = project(params, queries, targets, cuda_kernels, config)
    assert (trace.steps, trace.stages) == (expected_trace.steps, expected_trace.stages) == (10, 1)
    assert trace.exact_loss == pytest.approx(expected_trace.exact_loss, rel=1e-4)
    np.testing.assert_allclose(actual.values, expected.values, rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------------------- end to end
def test_synthesize_runs_end_to_end_on_the_cuda_backend():
    """``synthesize(backend="cuda")`` runs every step (exact answers, selection, device
    projection, decoding) through this backend. GPU only: under the simulator, whose block
    barriers poll every thread, this small run takes over ten minutes (measured: 763 s)."""
    import polars as pl

    import polars_rap

    rng = np.random.default_rng(4)
    n = 200  # the default plan's thresholds refuse under 74 rows here (too-few-rows check)
    frame = pl.DataFrame({
        "a": rng.integers(0, 3, n), "b": rng.choice(["u", "v"], n),
        "x": rng.random(n), "y": rng.random(n) * 10.0, "label": rng.random(n) < 0.4,
    })
    result = polars_rap.synthesize(
        frame, epsilon=2.0, delta=1e-6, domain={"a": [0, 1, 2], "b": ["u", "v"],
                                               "x": (0.0, 1.0), "y": (0.0, 10.0)},
        labels=["label"], seed=0, backend="cuda", rows=30, progress=False,
        strategy=polars_rap.PlannedStrategy(
            relaxed_rows=6, rounds={"LT": 2},
            workload=polars_rap.WorkloadSize(n_linear_thresholds=12, n_mixed_marginals=6),
            projection=ProjectionConfig(max_steps=4, max_doublings=1)))
    assert result.data.height == 30
    assert result.data.columns == frame.columns
    assert result.data["x"].is_between(0.0, 1.0).all() and result.data["y"].is_between(0.0, 10.0).all()
