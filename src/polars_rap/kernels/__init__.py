"""Query kernels: one interface, several backends with the same signatures (design.md §6).

Every backend module defines::

    answers_exact(codes, numerics, queries)        -> float64[n_queries]
    answers_relaxed(X, queries, sigma)             -> float32[n_queries]
    loss_and_grad(X, queries, targets, sigma)      -> (float, dL/dX like X)

``get_backend(name)`` returns the module. Backends are imported on first use, so that a
missing optional dependency (Numba, CUDA) only matters to whoever asks for that backend.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["BACKENDS", "get_backend"]

#: Backend name -> module path. Add a backend by adding a line.
BACKENDS: dict[str, str] = {
    "reference": "polars_rap.kernels.reference",
    "cpu": "polars_rap.kernels.cpu",
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
        raise ValueError(msg) from None
    return importlib.import_module(module_path)
