"""Query kernels: one interface, several backends with the same signatures (design.md §6).

Every backend module defines::

    answers_exact(codes, numerics, queries)        -> float64[n_queries]
    answers_relaxed(X, queries, sigma)             -> float32[n_queries]
    loss_and_grad(X, queries, targets, sigma)      -> (float, dL/dX like X)

Halfspaces over nullable numeric columns (``QuerySet.null_coord >= 0``) are relaxed as the
expectation over the columns' null indicators, as decoding realises them (a null reads as
scaled 0): a sum over null patterns weighted by the null-code probabilities of the row, with
gradients to the numerics and to those probabilities (``polars_rap.workload.queries`` has the formula;
exact over the first ``EXACT_NULLABLE_PER_HALFSPACE`` nullable columns of a halfspace, further
ones at their expected value). Exact answers are unchanged: a null row is encoded at 0
already.

``get_backend(name)`` returns the module. Backends are imported on first use, so that a
missing optional dependency (Numba, CUDA) only matters to whoever asks for that backend.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from polars_rap.errors import ParameterError

__all__ = ["BACKENDS", "get_backend", "resolve_backend"]

#: Backend name -> module path. Add a backend by adding a line.
BACKENDS: dict[str, str] = {
    "reference": "polars_rap.kernels.reference",
    "cpu": "polars_rap.kernels.cpu",
    "cuda": "polars_rap.kernels.cuda",
}


def get_backend(name: str) -> ModuleType:
    """The kernel module of backend ``name``.

    Parameters
    ----------
    name : str
        One of ``BACKENDS`` (``"reference"``: plain NumPy, for tests; ``"cpu"``: Numba).

    Returns
    -------
    module
        Exposes ``answers_exact``, ``answers_relaxed`` and ``loss_and_grad``.

    Examples
    --------
    >>> get_backend("reference").__name__
    'polars_rap.kernels.reference'
    """
    try:
        module_path = BACKENDS[name]
    except (KeyError, TypeError):
        valid = ", ".join(repr(key) for key in BACKENDS)
        msg = f"unknown kernel backend {name!r}; choose one of {valid}"
        raise ParameterError(msg) from None
    return importlib.import_module(module_path)


def resolve_backend(name: str) -> ModuleType:
    """The backend a user's ``backend=`` names: ``"auto"`` is CUDA when a real GPU is usable
    (never the simulator), else the CPU, saying so once in the log; ``"cuda"`` without a GPU
    is an error that says how to fix it."""
    import logging

    if not isinstance(name, str) or name not in ("auto", *BACKENDS):  # an array's `in` would ask its truth
        valid = ", ".join(repr(key) for key in ("auto", *BACKENDS))
        msg = f"unknown kernel backend {name!r}; choose one of {valid}"
        raise ParameterError(msg)
    if name not in ("auto", "cuda"):
        return get_backend(name)
    try:
        cuda = get_backend("cuda")
        available = cuda.is_available()
    except ImportError as error:  # numba built without its CUDA target
        cuda, available = None, False
        reason = f"numba's CUDA target cannot be imported ({error})"
    else:
        reason = "numba.cuda finds no usable NVIDIA GPU"
    if available:
        return cuda
    if name == "cuda":
        msg = (
            f"backend='cuda' needs an NVIDIA GPU with a working driver, but {reason}. "
            "Install the CUDA extra (pip install 'polars-rap[cuda]') on a GPU machine, "
            "or use backend='cpu' (or 'auto', which falls back to the CPU)"
        )
        raise RuntimeError(msg)
    logging.getLogger(__name__).info("backend='auto' runs on the CPU: %s", reason)
    return get_backend("cpu")
