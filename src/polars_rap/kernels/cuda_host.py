"""Host-side helpers the CUDA modules share: launch sizes, uploads, the query layout and the
relaxed workspace on the device (:mod:`polars_rap.kernels.cuda` launches them for its public
functions, :mod:`polars_rap.kernels.cuda_exact` and :mod:`polars_rap.kernels.cuda_fit` for
theirs). Importing this module needs no GPU."""

from __future__ import annotations

import numba
import numpy as np
from numba import cuda

from polars_rap.errors import ParameterError
from polars_rap.kernels import cuda_config
from polars_rap.kernels.cuda_device import _sum_slices_kernel
from polars_rap.kernels.cuda_relaxed import _relaxed_kernels
from polars_rap.workload.queries import QuerySet


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
