"""Relaxed projection with sigmoid temperature annealing (paper Alg. 1, design.md §4).

The relaxed data is parameterised as free logits per categorical block (the block's
probabilities are their softmax, so they always sum to one) and numeric coordinates kept in
``[0, 1]`` by clipping after each step (a projected gradient step: unlike a sigmoid
parameterisation it lets mass sit exactly on a bound, as for capital-gain = 0, without
vanishing gradients there).

Adam minimises ``L = sum_q w_q (q~_sigma(X) - a_q)^2`` over the measured queries (``w_q = 1``,
or the inverse noise variance of answer ``q`` scaled to mean 1: the maximum-likelihood fit
when the answers carry Gaussian noise of different scales). The inverse
temperature of threshold queries starts at ``sigma_initial`` and doubles when the relaxed
loss stops improving (plateau) or the gradient norm falls below ``grad_tolerance``, up to
``max_doublings`` times. The iterate kept is the best by the *exact* (hard-threshold) loss
against the noisy answers; the projection never sees the real data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from polars_rap.errors import ParameterError
from polars_rap.checks import check_int, check_positive_finite, check_range
from polars_rap.workload.queries import QuerySet

__all__ = ["ProjectionConfig", "RelaxedParams", "project", "temperature_stages"]


@dataclass(frozen=True, slots=True)
class ProjectionConfig:
    """Optimiser settings (defaults tuned on the bundled ACS and Adult tasks; see README).

    ``learning_rate`` is Adam's step for logits and numerics; ``max_steps`` bounds the steps
    of each temperature stage (None, default: the strategy's choice, the planned strategy's 30
    and the paper's 60; a projection called directly takes :data:`PAPER_MAX_STEPS`, 60;
    :attr:`stage_steps` is the bound in force); ``patience`` steps without a relative
    improvement of ``min_improvement`` end a stage; ``grad_tolerance`` is the paper's gamma. Stage ``s``
    runs at inverse temperature ``sigma_initial * 2**s``, ``s = 0 .. max_doublings``.
    ``warm_doublings`` shortens the schedule of a *warm* projection, one that starts from rows
    already fitted to thresholds (every threshold round after the first): it runs the last
    ``warm_doublings + 1`` stages only (:func:`temperature_stages`). None (default): the
    strategy's choice (the planned strategy's 1, the paper's whole schedule); ``max_doublings``
    or more: the whole schedule.
    """

    learning_rate: float = 0.05
    max_steps: int | None = None
    patience: int = 8
    min_improvement: float = 1e-3
    grad_tolerance: float = 1e-4
    sigma_initial: float = 8.0
    max_doublings: int = 6
    warm_doublings: int | None = None
    beta1: float = 0.9
    beta2: float = 0.999
    adam_epsilon: float = 1e-8

    def __post_init__(self) -> None:
        for name in ("learning_rate", "sigma_initial", "min_improvement", "grad_tolerance", "adam_epsilon"):
            check_positive_finite(name, getattr(self, name))
        for name in ("beta1", "beta2"):
            check_range(name, getattr(self, name), 0.0, 1.0, include_low=True)
        for name, low in (("patience", 1), ("max_doublings", 0)):
            check_int(name, getattr(self, name), low)
        if self.max_steps is not None:
            check_int("max_steps", self.max_steps, 1)
        if self.warm_doublings is not None:
            check_int("warm_doublings", self.warm_doublings, 0)
        if not float(self.sigma_initial) >= _SMALLEST_SIGMA:  # 0 once read as float32
            msg = (f"The 'sigma_initial' parameter must be at least {_SMALLEST_SIGMA:.3g} (float32's smallest "
                   f"normal: the kernels read the temperature as float32). Got {self.sigma_initial!r}; the "
                   "default is 8.0")
            raise ParameterError(msg)
        final = float(self.sigma_initial) * 2.0 ** min(int(self.max_doublings), 1023)  # inf past float64
        if not final <= _LARGEST_SIGMA:  # the kernels take the temperature as float32
            largest = math.floor(math.log2(_LARGEST_SIGMA / self.sigma_initial))
            msg = (f"max_doublings={self.max_doublings} with sigma_initial={self.sigma_initial:g} puts the last "
                   f"stage's inverse temperature sigma_initial * 2**max_doublings past float32's range "
                   f"({_LARGEST_SIGMA:.3g}); use max_doublings <= {largest} (thresholds are already sharp "
                   "long before: the default is 6)")
            raise ParameterError(msg)

    @property
    def stage_steps(self) -> int:
        """The steps a temperature stage may run: ``max_steps``, or 60 when it is None."""
        return PAPER_MAX_STEPS if self.max_steps is None else int(self.max_steps)


PAPER_MAX_STEPS = 60
"""Steps per temperature stage where no strategy chose (the paper's strategy, a direct call)."""

_LARGEST_SIGMA = float(np.finfo(np.float32).max)
"""The largest inverse temperature a stage may reach: the kernels read it as float32."""
_SMALLEST_SIGMA = float(np.finfo(np.float32).tiny)
"""The smallest first inverse temperature: below it, float32 reads it as 0 or a subnormal."""


def temperature_stages(config: ProjectionConfig, has_threshold: bool, anneal: bool = True,
                       warm: bool = False) -> list[int]:
    """The stages ``s`` (inverse temperature ``sigma_initial * 2**s``) a projection runs:
    ``0 .. max_doublings`` when ``anneal``, the last alone when not (or without thresholds:
    one stage, ``[0]``), the last ``warm_doublings + 1`` of them when ``warm`` and
    ``config.warm_doublings`` is set.

    >>> temperature_stages(ProjectionConfig(max_doublings=3, warm_doublings=1), True, warm=True)
    [2, 3]
    """
    if not has_threshold:
        return [0]
    stages = list(range(1 + config.max_doublings))
    if not anneal:
        return stages[-1:]
    if warm and config.warm_doublings is not None:
        return stages[-(min(config.warm_doublings, config.max_doublings) + 1):]
    return stages


class RelaxedParams:
    """Free parameters of the relaxed data: ``float32[n_rows, n_coords]``, logits in the
    categorical blocks and clipped numerics after them. ``block_starts`` int64[n_blocks]."""

    def __init__(self, values: np.ndarray, block_starts: np.ndarray, numeric_offset: int):
        self.values = np.ascontiguousarray(values, dtype=np.float32)
        self.block_starts = np.asarray(block_starts, dtype=np.int64)
        self.numeric_offset = int(numeric_offset)

    @classmethod
    def random(
        cls, n_rows: int, block_sizes: list[int], n_numeric: int, rng: np.random.Generator
    ) -> "RelaxedParams":
        """Uniformly random relaxed data (paper Alg. 2, line 3): small random logits (near
        uniform probabilities) and numerics uniform on ``[0, 1]``."""
        n_cat = int(sum(block_sizes))
        values = np.empty((n_rows, n_cat + n_numeric), dtype=np.float32)
        values[:, :n_cat] = rng.standard_normal((n_rows, n_cat))
        values[:, n_cat:] = rng.random((n_rows, n_numeric))
        starts = np.concatenate([[0], np.cumsum(block_sizes)[:-1]]) if block_sizes else np.zeros(0)
        return cls(values, starts.astype(np.int64), n_cat)

    def copy(self) -> "RelaxedParams":
        return RelaxedParams(self.values.copy(), self.block_starts, self.numeric_offset)

    def relaxed(self) -> np.ndarray:
        """float32[n_rows, n_coords]: block softmax of the logits, numerics as they are."""
        out = np.empty_like(self.values)
        _block_softmax(self.values, self.block_starts, self.numeric_offset, out)
        return out

    def chain_gradient(self, relaxed: np.ndarray, grad_relaxed: np.ndarray) -> np.ndarray:
        """Gradient w.r.t. the parameters from the gradient w.r.t. the relaxed data:
        ``p * (g - sum_block(p * g))`` in the blocks, identity for numerics."""
        out = grad_relaxed.astype(np.float32, copy=True)
        k = self.numeric_offset
        if k:
            p, g = relaxed[:, :k], grad_relaxed[:, :k]
            sizes = np.diff(np.append(self.block_starts, k))
            inner = np.add.reduceat(p * g, self.block_starts, axis=1)
            out[:, :k] = p * (g - np.repeat(inner, sizes, axis=1))
        return out


@dataclass(frozen=True, slots=True)
class ProjectionTrace:
    """What one projection did: steps run, final sigma multiplier, best exact loss."""

    steps: int
    stages: int
    exact_loss: float


def project(
    params: RelaxedParams,
    queries: QuerySet,
    targets: np.ndarray,
    backend,
    config: ProjectionConfig = ProjectionConfig(),
    anneal: bool = True,
    weights: np.ndarray | None = None,
    warm: bool = False,
) -> tuple[RelaxedParams, ProjectionTrace]:
    """Fit ``params`` to noisy ``targets`` (float64[m]) of ``queries`` (Alg. 1), each squared
    residual weighed by ``weights`` (float64[m], non-negative; all ones when None). ``warm``:
    ``params`` were already fitted to thresholds, so ``config.warm_doublings`` may shorten
    the schedule (:func:`temperature_stages`).

    With ``anneal=False`` a single stage runs at the final temperature
    ``sigma_initial * 2**max_doublings``: for a round that only added categorical queries,
    which have no temperature, the warm start's thresholds are already sharp and re-annealing
    them from ``sigma_initial`` would only undo and redo that fit.

    Returns the best parameters by exact loss (possibly the starting point) and a trace.
    ``backend`` is a kernels module (``answers_relaxed``, ``loss_and_grad``).
    """
    if hasattr(backend, "device_fit"):  # a device backend: the same loop over device-resident state
        return _project_on_device(params, queries, targets, backend, config, anneal, weights, warm)
    targets = np.asarray(targets, dtype=np.float64)
    scale = np.ones(len(targets)) if weights is None else np.asarray(weights, dtype=np.float64)
    loss_and_grad = backend.loss_and_grad
    has_threshold = np.diff(queries.halfspace_offsets) > 0
    stages = temperature_stages(config, bool(has_threshold.any()), anneal, warm)
    hard = np.full(queries.n_queries, np.inf, dtype=np.float32)

    def exact_loss(candidate: RelaxedParams) -> float:
        answers = backend.answers_relaxed(candidate.relaxed(), queries, hard)
        return float(np.sum(scale * (answers.astype(np.float64) - targets) ** 2))

    best, best_loss = params.copy(), exact_loss(params)
    current = params.copy()
    first = np.zeros_like(current.values)
    second = np.zeros_like(current.values)
    step_count, stages_run = 0, 0
    for stage in stages:
        stages_run += 1
        sigma = np.where(has_threshold, config.sigma_initial * 2.0**stage, np.inf).astype(np.float32)
        stage_best, since_best = np.inf, 0
        for _ in range(config.stage_steps):
            relaxed = current.relaxed()
            loss, grad_relaxed = loss_and_grad(relaxed, queries, targets, sigma, weights)
            step_count += 1
            grad_norm = math.sqrt(_adam_step(
                current.values, relaxed, grad_relaxed.astype(np.float32, copy=False), first, second,
                current.block_starts, current.numeric_offset, config.learning_rate, config.beta1,
                config.beta2, config.adam_epsilon, step_count,
            ))
            if loss < stage_best * (1 - config.min_improvement):
                stage_best, since_best = loss, 0
            else:
                since_best += 1
            if since_best >= config.patience or grad_norm <= config.grad_tolerance:
                break
        candidate_loss = exact_loss(current)
        if candidate_loss < best_loss:
            best, best_loss = current.copy(), candidate_loss
    return best, ProjectionTrace(step_count, stages_run, best_loss)


# ------------------------------------------------------------------ row kernels
def _project_on_device(params: RelaxedParams, queries: QuerySet, targets: np.ndarray, backend,
                       config: ProjectionConfig, anneal: bool, weights: np.ndarray | None,
                       warm: bool) -> tuple[RelaxedParams, ProjectionTrace]:
    """:func:`project` with the parameters, Adam moments and stop tests on the device
    (``backend.device_fit``, e.g. :class:`polars_rap.kernels.cuda_fit.DeviceFit`): the same
    stages, plateau and gradient-norm stops and best-by-exact-loss rule, the state read once
    per ``fit.check_every`` steps instead of after each."""
    fit = backend.device_fit(
        params.values, params.block_starts, params.numeric_offset, queries, targets, weights,
        adam=(config.beta1, config.beta2, config.learning_rate, config.adam_epsilon),
        stopping=(config.min_improvement, config.grad_tolerance, config.patience, config.stage_steps))
    best_loss = fit.exact_loss()
    stages = temperature_stages(config, bool(fit.has_threshold.any()), anneal, warm)
    for stage in stages:
        fit.start_stage(config.sigma_initial * 2.0**stage)
        launched = 0
        while launched < config.stage_steps:
            batch = min(fit.check_every, config.stage_steps - launched)
            launched += batch
            if fit.run_steps(batch):
                break
        candidate_loss = fit.exact_loss()
        if candidate_loss < best_loss:
            fit.keep_best()
            best_loss = candidate_loss
    best = RelaxedParams(fit.best_values(), params.block_starts, params.numeric_offset)
    return best, ProjectionTrace(fit.steps, len(stages), best_loss)


@njit(parallel=True, cache=True)
def _block_softmax(values, block_starts, numeric_offset, out):  # pragma: no cover - numba
    """``out`` = block softmax of ``values[:, :numeric_offset]``, numerics copied."""
    n_rows, n_coords = values.shape
    n_blocks = len(block_starts)
    for r in prange(n_rows):
        for b in range(n_blocks):
            start = block_starts[b]
            stop = block_starts[b + 1] if b + 1 < n_blocks else numeric_offset
            peak = values[r, start]
            for c in range(start + 1, stop):
                peak = max(peak, values[r, c])
            total = 0.0
            for c in range(start, stop):
                out[r, c] = math.exp(values[r, c] - peak)
                total += out[r, c]
            for c in range(start, stop):
                out[r, c] = out[r, c] / total
        for c in range(numeric_offset, n_coords):
            out[r, c] = values[r, c]


@njit(parallel=True, cache=True)
def _adam_step(values, relaxed, grad_relaxed, first, second, block_starts, numeric_offset,
               learning_rate, beta1, beta2, epsilon, step):  # pragma: no cover - numba
    """One Adam step on ``values`` in place, from the gradient w.r.t. the relaxed data.

    The parameter gradient is ``p * (g - sum_block(p * g))`` in the logit blocks (softmax
    chain rule) and ``g`` for numerics, which are clipped to ``[0, 1]`` after the step.
    Returns the squared norm of the parameter gradient (float64).
    """
    n_rows, n_coords = values.shape
    n_blocks = len(block_starts)
    correction1 = 1.0 - beta1**step
    correction2 = 1.0 - beta2**step
    norm_sq = 0.0
    for r in prange(n_rows):
        row_sq = 0.0
        for b in range(n_blocks + 1):
            if b < n_blocks:
                start = block_starts[b]
                stop = block_starts[b + 1] if b + 1 < n_blocks else numeric_offset
                inner = 0.0
                for c in range(start, stop):
                    inner += relaxed[r, c] * grad_relaxed[r, c]
            else:
                start, stop, inner = numeric_offset, n_coords, 0.0
            for c in range(start, stop):
                if b < n_blocks:
                    grad = relaxed[r, c] * (grad_relaxed[r, c] - inner)
                else:
                    grad = grad_relaxed[r, c]
                row_sq += grad * grad
                first[r, c] = beta1 * first[r, c] + (1.0 - beta1) * grad
                second[r, c] = beta2 * second[r, c] + (1.0 - beta2) * grad * grad
                update = (first[r, c] / correction1) / (math.sqrt(second[r, c] / correction2) + epsilon)
                value = values[r, c] - learning_rate * update
                if b == n_blocks:
                    value = min(max(value, 0.0), 1.0)
                values[r, c] = value
        norm_sq += row_sq
    return norm_sq
