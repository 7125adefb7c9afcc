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
(``polars_rap.queries``): ``_gpu_halfspace_value`` sums its null patterns (bit masks over its
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

import numba
import numpy as np
from numba import cuda

from polars_rap.errors import ParameterError
from polars_rap.kernels import cuda_config
from polars_rap.kernels._checks import (
    check_queries,
    check_real_data,
    check_relaxed_call,
    check_weights,
)
from polars_rap.kernels.cuda_device import _SIMULATED, _sum_slices_kernel
from polars_rap.kernels.cuda_relaxed import _relaxed_kernels
from polars_rap.queries import QuerySet

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


# ----------------------------------------------------------------------------- host side
def _threads_per_block() -> int:
    threads = int(cuda_config.THREADS_PER_BLOCK)
    if threads < 1 or threads & (threads - 1):
        msg = (
            f"cuda_config.THREADS_PER_BLOCK must be a power of two >= 1 (the block reductions "
            f"halve it); got {threads}"
        )
        raise ParameterError(msg)
    return threads


def _blocks(n_items: int, threads: int, cap: int) -> int:
    """Blocks of a grid-stride launch over ``n_items``: enough for one item per thread, at
    most ``cap``, at least one."""
    return max(1, min(int(cap), -(-int(n_items) // threads)))


def _upload(array: np.ndarray):
    """Device copy of a host array; an empty array becomes one dummy element (never read)."""
    array = np.ascontiguousarray(array)
    if array.size == 0:
        array = np.zeros((1,) * max(array.ndim, 1), dtype=array.dtype)
    return cuda.to_device(array)


def _real_of(dtype: np.dtype):
    return numba.float64 if np.dtype(dtype) == np.float64 else numba.float32


def _encode_sigma(sigma: np.ndarray) -> np.ndarray:
    """float32 sigma with ``inf`` (hard threshold) encoded as 0: the kernels then never meet
    an infinity (checked sigma is > 0, so 0 is free)."""
    return np.where(np.isinf(sigma), np.float32(0.0), sigma).astype(np.float32)


class _DeviceQueries:
    """The CSR arrays of a ``QuerySet`` copied to the device once."""

    def __init__(self, queries: QuerySet):
        self.n_queries = queries.n_queries
        self.numeric_offset = int(queries.numeric_offset)
        self.n_numeric = int(queries.n_numeric)
        self.n_coords = queries.n_coords
        for name in ("cat_offsets", "cat_coords", "coord_column", "coord_code",
                     "halfspace_offsets", "theta_offsets", "theta_index", "theta_weight", "tau",
                     "null_coord"):
            setattr(self, name, _upload(getattr(queries, name)))
        n_factors = np.diff(queries.cat_offsets) + np.diff(queries.halfspace_offsets)
        most = int(n_factors.max(initial=0))
        self.max_factors = 1 << max(2, (most - 1).bit_length())  # bucketed: fewer builds
        self.has_threshold = np.diff(queries.halfspace_offsets) > 0

    def csr(self) -> tuple:
        """The arguments every relaxed kernel takes after ``numeric_offset``."""
        return (self.cat_offsets, self.cat_coords, self.halfspace_offsets, self.theta_offsets,
                self.theta_index, self.theta_weight, self.tau, self.null_coord)


class _RelaxedWorkspace:
    """Device buffers and launch sizes for relaxed answers, loss and gradient of one
    workload on ``n_rows`` relaxed rows in precision ``dtype``; reused across Adam steps."""

    def __init__(self, device_queries: _DeviceQueries, n_rows: int, dtype: np.dtype):
        self.queries = device_queries
        self.n_rows = int(n_rows)
        self.dtype = np.dtype(dtype)
        self.threads = _threads_per_block()
        self.kernels = _relaxed_kernels(self.threads, _real_of(dtype), device_queries.max_factors)
        n_queries = device_queries.n_queries
        n_coords = device_queries.n_coords
        # relaxed sums: one block per query (grid x), rows split in segments (grid y)
        self.sum_grid_x = _blocks(n_queries, 1, cuda_config.MAX_BLOCKS)
        wanted = -(-int(cuda_config.RELAXED_TARGET_BLOCKS) // self.sum_grid_x)
        self.sum_grid_y = max(1, min(wanted, -(-self.n_rows // self.threads), 65535))
        self.partials = cuda.device_array((self.sum_grid_y, max(n_queries, 1)), np.float64)
        # residuals: one partial loss per block
        self.residual_grid = _blocks(n_queries, self.threads, cuda_config.REDUCTION_BLOCKS)
        self.answers = cuda.device_array(max(n_queries, 1), np.float64)
        self.weights = cuda.device_array(max(n_queries, 1), np.float64)
        self.loss_partials = cuda.device_array(self.residual_grid, np.float64)
        # gradient: one thread per (query slice, row), slices added afterwards
        slice_bytes = max(1, n_coords * self.n_rows * self.dtype.itemsize)
        n_slices = -(-int(cuda_config.GRAD_TARGET_THREADS) // self.n_rows)
        n_slices = min(n_slices, max(n_queries, 1), int(cuda_config.GRAD_SLICE_BYTES) // slice_bytes)
        self.n_slices = max(1, n_slices)
        self.grad_grid = _blocks(self.n_slices * self.n_rows, self.threads, cuda_config.MAX_BLOCKS)
        self.sum_slices_grid = _blocks(n_coords * self.n_rows, self.threads, cuda_config.MAX_BLOCKS)
        self.grad_slices = cuda.device_array((self.n_slices, max(n_coords, 1), self.n_rows), self.dtype)
        self.grad = self.grad_slices[0]  # the summed gradient, [n_coords, n_rows]
        self.never = cuda.to_device(np.zeros(1, dtype=np.float64))  # a halt flag never set
        self.ones = cuda.to_device(np.ones(max(n_queries, 1), dtype=np.float64))  # unweighted loss

    def relaxed_answers(self, XT, sigma, targets, *, query_weights=None, round_to_float32=False,
                        halt=None):
        """Launch the sums and residual kernels: answers, weights and loss partials
        (``query_weights``: a device float64[n_queries] of loss weights; None: all ones)."""
        halt = self.never if halt is None else halt
        query_weights = self.ones if query_weights is None else query_weights
        dq = self.queries
        self.kernels.relaxed_sums[(self.sum_grid_x, self.sum_grid_y), self.threads](
            XT, self.n_rows, dq.n_queries, dq.numeric_offset, *dq.csr(), sigma, self.partials,
            halt)
        self.kernels.residual[self.residual_grid, self.threads](
            self.partials, self.n_rows, dq.n_queries, targets, query_weights, int(round_to_float32),
            self.answers,
            self.weights, self.loss_partials, halt)

    def gradient(self, XT, sigma, *, halt=None):
        """Launch the gradient kernel (after ``relaxed_answers``); the summed gradient is
        left in ``grad`` (``grad_slices[0]``)."""
        halt = self.never if halt is None else halt
        dq = self.queries
        self.kernels.grad[self.grad_grid, self.threads](
            XT, self.n_rows, dq.n_queries, dq.numeric_offset, *dq.csr(), sigma, self.weights,
            self.grad_slices, halt)
        if self.n_slices > 1:
            _sum_slices_kernel[self.sum_slices_grid, self.threads](
                self.grad_slices, self.grad, halt)

    def loss(self) -> float:
        """The loss of the last ``relaxed_answers`` (float64 partials added in order)."""
        total = 0.0
        for value in self.loss_partials.copy_to_host():
            total += float(value)
        return total


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
    :func:`polars_rap.projection.project` to run its loop on the device."""
    from polars_rap.kernels.cuda_fit import DeviceFit

    return DeviceFit(*args, **kwargs)
