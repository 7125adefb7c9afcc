"""The projection's Adam loop on the device, as primitives (CUDA): parameters, Adam moments, the
best iterate and a small stop state stay on the device; :func:`polars_rap.fit.projection.project`
drives the schedule (its temperature stages and best-by-exact-loss rule) with them.

One step on the device: softmax -> relaxed sums -> residuals (loss partials) -> gradient
slices -> slice sum -> chain rule + Adam (gradient-norm partials) -> stage control, which adds
the partial sums in order and sets a stop flag on a plateau, a small gradient norm or the
stage's last step, as the host loop decides. :meth:`DeviceFit.run_steps` launches steps and
reads the state once (steps launched after a stop do nothing), so the trajectory is the host
loop's up to floating-point rounding, with one host round trip per ``check_every`` steps.
Knows the query contract (:class:`~polars_rap.workload.queries.QuerySet`) and Adam's arithmetic only.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from polars_rap.errors import ParameterError
from polars_rap.kernels import cuda_config
from polars_rap.kernels._checks import check_queries, check_targets, check_weights
from polars_rap.kernels.cuda_host import (
    _blocks,
    _DeviceQueries,
    _encode_sigma,
    _RelaxedWorkspace,
    _threads_per_block,
    _upload,
)
from polars_rap.kernels.cuda_device import (
    _N_STATE,
    _SINCE_BEST,
    _STAGE_BEST,
    _STAGE_STEPS,
    _STEP,
    _STOPPED,
    _softmax_kernel,
    _stage_control_kernel,
)
from polars_rap.workload.queries import QuerySet

__all__ = ["DeviceFit"]


class DeviceFit:
    """One projection's state on the device.

    Parameters
    ----------
    values : float32[n_rows, n_coords]
        Starting logits (categorical blocks) and numerics, as ``RelaxedParams.values``.
    block_starts : int64[n_blocks]
    numeric_offset : int
    queries : QuerySet
    targets : float64[n_queries]
    weights : float64[n_queries] or None
        Loss weight of each query (all ones when None), in the Adam and the exact loss alike.
    adam : (beta1, beta2, learning_rate, epsilon)
    stopping : (min_improvement, grad_tolerance, patience, max_steps)
        A stage stops after ``patience`` steps without a relative improvement of
        ``min_improvement``, at a gradient norm ``<= grad_tolerance``, or after ``max_steps``.
    """

    def __init__(self, values: np.ndarray, block_starts: np.ndarray, numeric_offset: int, queries: QuerySet,
                 targets: np.ndarray, weights: np.ndarray | None, *, adam: tuple, stopping: tuple):
        check_queries(queries)
        targets = check_targets(targets, queries.n_queries)
        weights = check_weights(weights, queries.n_queries)
        values = np.asarray(values)
        if values.ndim != 2 or values.shape[1] != queries.n_coords or values.shape[0] == 0:
            msg = (
                f"params.values must have shape (n_rows >= 1, {queries.n_coords}) to match the "
                f"queries; got {values.shape}"
            )
            raise ParameterError(msg)
        if int(numeric_offset) != queries.numeric_offset:
            msg = (
                f"params.numeric_offset ({numeric_offset}) must equal "
                f"queries.numeric_offset ({queries.numeric_offset})"
            )
            raise ParameterError(msg)
        self.threads = _threads_per_block()
        self.check_every = max(1, int(cuda_config.PROJECTION_CHECK_EVERY))
        """Steps launched between two reads of the device state."""
        n_rows = values.shape[0]
        self._queries = _DeviceQueries(queries)
        self.has_threshold = self._queries.has_threshold
        """bool[n_queries]: the queries with a temperature (a halfspace)."""
        self._workspace = _RelaxedWorkspace(self._queries, n_rows, np.float32)
        self._current = cuda.to_device(np.ascontiguousarray(values.T, dtype=np.float32))
        self._best = cuda.to_device(np.ascontiguousarray(values.T, dtype=np.float32))
        self._relaxed = cuda.device_array_like(self._current)
        self._first = cuda.to_device(np.zeros(self._current.shape, dtype=np.float32))
        self._second = cuda.to_device(np.zeros(self._current.shape, dtype=np.float32))
        self._block_starts = _upload(np.asarray(block_starts, dtype=np.int64))
        self._numeric_offset = int(numeric_offset)
        self._n_blocks = len(block_starts) if self._numeric_offset else 0
        self._targets = _upload(targets)
        self._weights = _upload(weights)
        self._hard = cuda.to_device(np.zeros(max(queries.n_queries, 1), dtype=np.float32))
        self._sigma = self._hard
        self._row_grid = _blocks(n_rows, self.threads, cuda_config.MAX_BLOCKS)
        self._adam_grid = _blocks(n_rows, self.threads, cuda_config.REDUCTION_BLOCKS)
        self._norm_partials = cuda.device_array(self._adam_grid, np.float64)
        self._state_host = np.zeros(_N_STATE, dtype=np.float64)
        self._state = cuda.to_device(self._state_host)
        self._adam = tuple(float(a) for a in adam)
        min_improvement, grad_tolerance, patience, max_steps = stopping
        self._stopping = (1.0 - float(min_improvement), float(grad_tolerance), float(patience), float(max_steps))

    @property
    def steps(self) -> int:
        """Adam steps taken so far, over every stage (as last read from the device)."""
        return int(self._state_host[_STEP])

    def exact_loss(self) -> float:
        """Weighted squared error of the current parameters with hard thresholds and
        float32-rounded answers, as the reference's exact loss."""
        _softmax_kernel[self._row_grid, self.threads](self._current, self._block_starts, self._n_blocks,
                                                      self._numeric_offset, self._relaxed, self._workspace.never)
        self._workspace.relaxed_answers(self._relaxed, self._hard, self._targets, query_weights=self._weights,
                                        round_to_float32=True)
        return self._workspace.loss()

    def start_stage(self, sigma: float) -> None:
        """A new stage at inverse temperature ``sigma`` on the queries with a halfspace (the
        others stay hard): its step count, best loss and stop flag start afresh."""
        stage_sigma = np.where(self.has_threshold, sigma, np.inf).astype(np.float32)
        self._sigma = _upload(_encode_sigma(stage_sigma))
        self._state_host[[_STOPPED, _STAGE_STEPS, _SINCE_BEST]] = 0.0
        self._state_host[_STAGE_BEST] = np.inf
        self._state.copy_to_device(self._state_host)

    def run_steps(self, n_steps: int) -> bool:
        """Launch ``n_steps`` Adam steps, then read the state once; True when the stage has
        stopped (the steps after its stop did nothing)."""
        workspace, kernels = self._workspace, self._workspace.kernels
        for _ in range(int(n_steps)):
            _softmax_kernel[self._row_grid, self.threads](self._current, self._block_starts, self._n_blocks,
                                                          self._numeric_offset, self._relaxed, self._state)
            workspace.relaxed_answers(self._relaxed, self._sigma, self._targets, query_weights=self._weights,
                                      halt=self._state)
            workspace.gradient(self._relaxed, self._sigma, halt=self._state)
            kernels.adam[self._adam_grid, self.threads](
                self._current, self._relaxed, workspace.grad, self._first, self._second, self._block_starts,
                self._n_blocks, self._numeric_offset, self._state, *self._adam, self._norm_partials)
            _stage_control_kernel[1, 1](self._state, workspace.loss_partials, self._norm_partials, *self._stopping)
        self._state_host = self._state.copy_to_host()
        return bool(self._state_host[_STOPPED])

    def keep_best(self) -> None:
        """Remember the current parameters as the best iterate (a device copy)."""
        self._best.copy_to_device(self._current)

    def best_values(self) -> np.ndarray:
        """float32[n_rows, n_coords]: the best iterate kept (the start if none was)."""
        return np.ascontiguousarray(self._best.copy_to_host().T)
