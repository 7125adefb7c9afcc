"""CUDA kernels: hand-written ``numba.cuda`` kernels over the CSR query layout (design.md §6).

Same three functions and signatures as ``reference`` and ``cpu``, plus ``device_fit``: the
primitives (:mod:`polars_rap.kernels.cuda_fit`) with which ``projection.project`` runs its Adam
loop on the device:

- ``answers_exact`` (real data): :mod:`polars_rap.kernels.cuda_exact` (a histogram pass per
  marginal group, a tiled rows x queries kernel for the other queries).
- ``answers_relaxed``: one block per query (grid x, grid-stride), its threads striding over
  the relaxed rows of one row segment (grid y); a tree reduction per block and one partial
  sum per (segment, query), added in order by the residual kernel, which also forms the loss
  terms and the weights ``2 (answer - target) / n`` of the gradient. A marginal cell (at
  most three categorical factors, no halfspace) reads its coordinates once, not per row.
- ``loss_and_grad``: the answers above, then one thread per (query slice, relaxed row): it
  walks the queries of its slice, multiplies prefix and suffix products of the factors (the
  product of the *other* factors, never a division) and adds them into a private gradient
  slice; the slices are added in order afterwards. No atomics: every result is deterministic.
  The halfspace derivative is ``-sigma s (1 - s) theta``, with ``s (1 - s)`` computed as
  ``e / (1 + e)^2``, ``e = exp(-|z|)``, which keeps small slopes that ``1 - s`` would round
  away in float32.

A halfspace over nullable numeric columns is the expectation over their null indicators
(``polars_rap.workload.queries``): ``_gpu_halfspace_value`` sums its null patterns (bit masks over its
first ``EXACT_NULLABLE_PER_HALFSPACE`` nullable entries, each a dot product with those entries
left out and any further nullable entry at ``(1 - q) x``, weighted by the pattern's
probability from the null-code coordinates), and ``_gpu_null_halfspace_grad`` recomputes them
for the gradient with respect to the numerics and the null-code probabilities. A halfspace
without nullable columns takes the plain path, unchanged.

The relaxed matrix lives on the device transposed, ``XT`` = ``[n_coords, n_rows]``, so that
threads of a warp (consecutive rows) read and write consecutive addresses.

Numerics follow ``reference``: every halfspace dot product is accumulated in float64, term by
term, with a multiply that is never fused into an FMA (``libdevice.dmul_rn``), so hard
thresholds agree with the reference to the bit. Sigmoids, products and gradients run in the
precision of ``X`` (float32 normally; float64 ``X`` gives float64 kernels, which the
finite-difference tests use); row sums and losses are float64. Compile-time sizes (threads
per block of the shared reduction arrays, the most factors of a query in the local scratch)
and the compute precision are baked in by ``_relaxed_kernels``, a cached factory.

``device_fit`` keeps the parameters, Adam moments and a small state vector (step counts, stage
best, stop flag) on the device; the plateau and gradient-norm tests run there after every
step, and the host reads the state every ``PROJECTION_CHECK_EVERY`` steps. The kernels know the
query contract and the Adam arithmetic, never the projection's schedule (its stages and
best-iterate rule live in ``projection.project``).

This module is the host side (workspaces, launches, the public functions); the device
functions and the kernels without compile-time sizes are in
:mod:`polars_rap.kernels.cuda_device`, the relaxed kernels' factory in
:mod:`polars_rap.kernels.cuda_relaxed`. Launch sizes and math flags live in ``cuda_config``,
read at launch. Kernels never validate:
the host wrappers run the checks of ``_checks`` first. Kernels use comparisons, not the
``min``/``max`` builtins, which numba 0.68's built-in CUDA target fails to type ("Signature
mismatch"). Importing this module needs no GPU; kernels compile on first use.
``is_available`` is False under the simulator, so ``backend="auto"`` never picks it; the
tests run the kernels there on purpose.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from polars_rap.kernels._checks import (
    check_queries,
    check_real_data,
    check_relaxed_call,
    check_weights,
)
from polars_rap.kernels.cuda_device import _SIMULATED
from polars_rap.kernels.cuda_host import _DeviceQueries, _encode_sigma, _RelaxedWorkspace
from polars_rap.workload.queries import QuerySet

__all__ = ["answers_exact", "answers_relaxed", "is_available", "loss_and_grad", "device_fit"]


def is_available() -> bool:
    """True when a real CUDA GPU can run these kernels.

    False under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), which runs them correctly but
    thousands of times slower, so that ``backend="auto"`` never picks it.
    """
    if _SIMULATED:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:  # a broken driver install reads as "no GPU", never as a crash
        return False


# --------------------------------------------------------------------------- public API
def answers_exact(codes: np.ndarray, numerics: np.ndarray, queries: QuerySet) -> np.ndarray:
    """Exact answers (hard thresholds) of every query on real data.

    Parameters
    ----------
    codes : int32[n_rows, n_categorical_columns]
        Category code of each row in each categorical column.
    numerics : float64[n_rows, n_numeric]
        Numeric values scaled to ``[0, 1]``.
    queries : QuerySet

    Returns
    -------
    float64[n_queries]
        Fraction of rows satisfying each query. Rows go to the device in chunks of
        ``cuda_config.EXACT_CHUNK_ROWS``; marginal groups are counted in one histogram pass.
    """
    check_queries(queries)
    codes, numerics = check_real_data(codes, numerics, queries)
    if queries.n_queries == 0:
        return np.zeros(0, dtype=np.float64)
    from polars_rap.kernels.cuda_exact import ExactPlan, exact_counts

    counts = exact_counts(codes, numerics, _DeviceQueries(queries), ExactPlan(queries))
    return counts / codes.shape[0]


def answers_relaxed(X: np.ndarray, queries: QuerySet, sigma: np.ndarray | float) -> np.ndarray:
    """Relaxed answers (sigmoid thresholds) of every query on a relaxed matrix.

    Parameters
    ----------
    X : float32[n_rows, n_coords] (or float64)
        Category probabilities, then numerics at ``numeric_offset + j``.
    queries : QuerySet
    sigma : float32[n_queries] or scalar
        Inverse temperature of each query; ``inf`` means hard thresholds.

    Returns
    -------
    float32[n_queries]
        Mean over rows of each relaxed query (accumulated in float64).
    """
    X, sigma, _ = check_relaxed_call(X, queries, sigma)
    if queries.n_queries == 0:
        return np.zeros(0, dtype=np.float32)
    workspace = _RelaxedWorkspace(_DeviceQueries(queries), X.shape[0], X.dtype)
    XT = cuda.to_device(np.ascontiguousarray(X.T))
    targets = cuda.to_device(np.zeros(queries.n_queries, dtype=np.float64))
    workspace.relaxed_answers(XT, cuda.to_device(_encode_sigma(sigma)), targets)
    return workspace.answers.copy_to_host()[: queries.n_queries].astype(np.float32)


def loss_and_grad(
    X: np.ndarray, queries: QuerySet, targets: np.ndarray, sigma: np.ndarray | float,
    weights: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """Weighted squared-error loss of the relaxed answers and its gradient with respect to ``X``.

    ``L = sum_q w_q (answers_relaxed_q - targets_q) ** 2`` (``w_q = 1`` when ``weights`` is None).

    Parameters
    ----------
    X : float32[n_rows, n_coords] (or float64)
    queries : QuerySet
    targets : float64[n_queries]
    sigma : float32[n_queries] or scalar

    Returns
    -------
    (float, ndarray)
        The loss, and ``dL/dX`` with the dtype and shape of ``X`` (computed in that
        precision, summed over queries in float64 across slices).
    """
    X, sigma, targets = check_relaxed_call(X, queries, sigma, targets)
    weights = check_weights(weights, queries.n_queries)
    if queries.n_queries == 0:
        return 0.0, np.zeros_like(X)
    workspace = _RelaxedWorkspace(_DeviceQueries(queries), X.shape[0], X.dtype)
    XT = cuda.to_device(np.ascontiguousarray(X.T))
    sigma_device = cuda.to_device(_encode_sigma(sigma))
    workspace.relaxed_answers(XT, sigma_device, cuda.to_device(targets),
                              query_weights=cuda.to_device(weights))
    workspace.gradient(XT, sigma_device)
    grad_t = workspace.grad.copy_to_host()[: queries.n_coords]
    return workspace.loss(), np.ascontiguousarray(grad_t.T)



def device_fit(*args, **kwargs):
    """The projection's device-resident Adam state and step primitives
    (:class:`~polars_rap.kernels.cuda_fit.DeviceFit`; same arguments). Its presence tells
    :func:`polars_rap.fit.projection.project` to run its loop on the device."""
    from polars_rap.kernels.cuda_fit import DeviceFit

    return DeviceFit(*args, **kwargs)
