"""The relaxed loss and gradient of ``bench/gpu_kernels.py``'s workload in JAX
(``jax.jit(jax.value_and_grad(...))``) and PyTorch autograd, on the same GPU and timed the
same way as polars-rap's fused CUDA kernels (wall clock after synchronisation), with how far
their loss and gradient are from ours.

Both frameworks get the natural dense formulation: each query's categorical coordinates
gathered (padded with a column of ones), their product, times a sigmoid of one halfspace
(dense theta row), mean over rows; queries go through in chunks of as many as keep the
n x chunk x k intermediates under ``CHUNK_BYTES`` (JAX: ``lax.map`` of a rematerialised
chunk loss), so every size up to ``BASELINE_EVALUATIONS`` runs.
"""

from __future__ import annotations

import json
import os
import traceback

import numpy as np
from numba import cuda

from bench.gpu_common import SIGMA, make_workload, relaxed_matrix, time_wall  # puts src/ on the path
from polars_rap.kernels import cuda as cuda_kernels
from polars_rap.workload.queries import QuerySet


def _dense_problem(queries: QuerySet):
    """Padded dense form of a workload with at most one halfspace per query: categorical
    indices padded with a column of ones, one dense theta row and tau per query."""
    lengths = np.diff(queries.cat_offsets)
    k_max = max(int(lengths.max(initial=0)), 1)
    pad = queries.n_coords  # index of the appended ones column
    index = np.full((queries.n_queries, k_max), pad, dtype=np.int64)
    rows = np.repeat(np.arange(queries.n_queries), lengths)
    slots = np.arange(len(queries.cat_coords)) - np.repeat(queries.cat_offsets[:-1], lengths)
    index[rows, slots] = queries.cat_coords
    n_halfspaces = np.diff(queries.halfspace_offsets)
    if n_halfspaces.max(initial=0) > 1:
        raise ValueError("the dense baseline handles at most one halfspace per query")
    theta = np.zeros((queries.n_queries, queries.n_numeric), dtype=np.float32)
    tau = np.zeros(queries.n_queries, dtype=np.float32)
    has = n_halfspaces > 0
    owners = np.flatnonzero(has)
    for h, q in enumerate(owners):  # halfspaces are stored in query order
        lo, hi = queries.theta_offsets[h], queries.theta_offsets[h + 1]
        theta[q, queries.theta_index[lo:hi]] = queries.theta_weight[lo:hi]
        tau[q] = queries.tau[h]
    return index, theta, tau, has


#: Bytes of one chunk of the frameworks' dense intermediates: queries go through JAX and
#: PyTorch in chunks of as many queries as fit, so that every size runs (the gathered
#: n x chunk x k factors and a few n x chunk float32 intermediates, forward and backward).
CHUNK_BYTES = 4 << 30
#: Largest n_rel x m the framework baselines run (beyond it a call takes several seconds).
BASELINE_EVALUATIONS = 10_000_000_000


def _chunk_queries(n_rel: int, n_queries: int, k_max: int) -> int:
    per_query = n_rel * (k_max + 6) * 4 * 2
    return int(max(1, min(n_queries, CHUNK_BYTES // per_query)))


def _chunked(index, theta, tau, has, targets, chunk: int, pad_index: int):
    """The dense problem padded to whole chunks of ``chunk`` queries and reshaped to
    ``[n_chunks, chunk, ...]``. Padding queries are the empty product (answer exactly 1)
    with target 1: zero residual, no loss and no gradient."""
    m = index.shape[0]
    n_chunks = -(-m // chunk)
    extra = n_chunks * chunk - m

    def pad(array, value):
        if extra == 0:
            return array
        filler = np.full((extra, *array.shape[1:]), value, dtype=array.dtype)
        return np.concatenate([array, filler])

    parts = (pad(index, pad_index), pad(theta, 0.0), pad(tau, 0.0), pad(has, False),
             pad(targets.astype(np.float32), 1.0))
    return [a.reshape(n_chunks, chunk, *a.shape[1:]) for a in parts]


def bench_baselines(sizes: dict, info: dict, rng, results: list, save) -> list[dict]:
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave memory to numba
    frameworks = {}
    for name in ("jax", "torch"):
        try:
            if name == "jax":
                import jax
                import jax.numpy as jnp

                frameworks[name] = (jax, jnp)
            else:
                import torch

                if not torch.cuda.is_available():
                    raise RuntimeError("torch.cuda.is_available() is False")
                frameworks[name] = torch
        except Exception as error:
            frameworks[name] = f"unavailable: {type(error).__name__}: {error}"
    for m in sizes["m"]:
        queries = make_workload(m, rng)
        index, theta, tau, has = _dense_problem(queries)
        device_queries = cuda_kernels._DeviceQueries(queries)
        for n_rel in sizes["n_rel"]:
            case = {"n_rel": n_rel, "m": m}
            if n_rel * m > BASELINE_EVALUATIONS:
                case["skipped"] = f"n_rel x m over {BASELINE_EVALUATIONS:.0e} (seconds per call)"
                results.append(case)
                continue
            print(f"baselines: n_rel={n_rel:>7} m={m:>8}", flush=True)
            X = relaxed_matrix(queries, n_rel, rng)
            targets = (rng.random(m) * 0.1).astype(np.float64)
            # ours, by the same wall clock
            try:
                workspace = cuda_kernels._RelaxedWorkspace(device_queries, n_rel, np.float32)
                XT = cuda.to_device(np.ascontiguousarray(X.T))
                sigma = cuda.to_device(np.full(m, SIGMA, dtype=np.float32))
                targets_device = cuda.to_device(targets)

                def ours():
                    workspace.relaxed_answers(XT, sigma, targets_device)
                    workspace.gradient(XT, sigma)

                case["polars_rap_cuda"] = time_wall(ours, cuda.synchronize, sizes["warmup"],
                                                    sizes["repeats"])
                our_loss = workspace.loss()
                our_grad = workspace.grad.copy_to_host()[: queries.n_coords].T
                del workspace, XT
            except Exception as error:
                case["polars_rap_cuda"] = {"error": f"{type(error).__name__}: {error}"}
                results.append(case)
                save()
                continue
            chunk = _chunk_queries(n_rel, m, index.shape[1])
            case["framework_query_chunk"] = chunk
            dense = _chunked(index, theta, tau, has, targets, chunk, queries.n_coords)
            for name, framework in frameworks.items():
                if isinstance(framework, str):
                    case[name] = framework
                    continue
                try:
                    runner = _jax_runner if name == "jax" else _torch_runner
                    timing, loss, grad = runner(framework, X, dense, queries.numeric_offset, sizes)
                    scale = max(float(np.abs(our_grad).max()), 1e-30)
                    timing["loss_relative_difference"] = abs(loss - our_loss) / max(abs(our_loss), 1e-30)
                    timing["grad_max_difference_over_max"] = float(np.abs(grad - our_grad).max() / scale)
                    timing["speedup_of_polars_rap"] = timing["median_s"] / case["polars_rap_cuda"]["median_s"]
                    case[name] = timing
                except Exception as error:
                    case[name] = f"error: {type(error).__name__}: {error}"
                    traceback.print_exc()
            results.append(case)
            save()
            print(f"    {json.dumps({k: v for k, v in case.items() if k not in ('n_rel', 'm')}, default=str)[:400]}",
                  flush=True)
    return results


def _jax_runner(framework, X, dense, numeric_offset, sizes):
    """``jax.jit(jax.value_and_grad(loss))``, the loss a sum over query chunks
    (``lax.map`` of a rematerialised chunk loss, so that the backward pass keeps one chunk's
    intermediates at a time)."""
    jax, jnp = framework

    def chunk_loss(padded, numerics, chunk):
        index, theta, tau, has, targets = chunk
        categorical = jnp.prod(padded[:, index], axis=2)
        z = SIGMA * (tau[None, :] - numerics @ theta.T)
        halfspace = jnp.where(has[None, :], jax.nn.sigmoid(z), 1.0)
        answers = jnp.mean(categorical * halfspace, axis=0)
        return jnp.sum((answers - targets) ** 2)

    def loss_fn(values, index, theta, tau, has, targets):
        padded = jnp.concatenate([values, jnp.ones((values.shape[0], 1), values.dtype)], axis=1)
        numerics = values[:, numeric_offset:]
        per_chunk = jax.checkpoint(lambda chunk: chunk_loss(padded, numerics, chunk))
        return jnp.sum(jax.lax.map(per_chunk, (index, theta, tau, has, targets)))

    step = jax.jit(jax.value_and_grad(loss_fn))
    arrays = [jnp.asarray(a) for a in (X, *dense)]
    out = {}

    def call():
        out["result"] = step(*arrays)

    def synchronize():
        jax.block_until_ready(out["result"])

    timing = time_wall(call, synchronize, sizes["warmup"], sizes["repeats"])
    loss, grad = out["result"]
    return timing, float(loss), np.asarray(grad)


def _torch_runner(torch, X, dense, numeric_offset, sizes, device="cuda"):
    """PyTorch autograd, one chunk of queries at a time (``backward`` per chunk adds into
    ``values.grad``)."""
    device = torch.device(device)
    synchronize = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    values = torch.tensor(X, device=device, requires_grad=True)
    chunks = [torch.tensor(a, device=device) for a in dense]
    ones = torch.ones((X.shape[0], 1), device=device)
    out = {}

    def call():
        values.grad = None
        total = 0.0
        for index_t, theta_t, tau_t, has_t, targets_t in zip(*chunks):
            padded = torch.cat([values, ones], dim=1)
            categorical = padded[:, index_t].prod(dim=2)
            z = SIGMA * (tau_t[None, :] - values[:, numeric_offset:] @ theta_t.T)
            halfspace = torch.where(has_t[None, :], torch.sigmoid(z), torch.ones_like(z))
            answers = (categorical * halfspace).mean(dim=0)
            loss = ((answers - targets_t) ** 2).sum()
            loss.backward()
            total = total + loss.detach()
        out["loss"] = total

    timing = time_wall(call, synchronize, sizes["warmup"], sizes["repeats"])
    loss = float(out["loss"].item())
    grad = values.grad.detach().cpu().numpy()
    del values, chunks, ones, out
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return timing, loss, grad
