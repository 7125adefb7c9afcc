"""What the peer modules share about the frames they hand to a worker, and the workers themselves.

A peer runs in its own virtual environment (:mod:`bench.venvs`), so a frame crosses as Parquet
plus a JSON spec that names each column's Polars dtype; :func:`dtype_name` writes that name and
:func:`dtype_from` reads it back. :func:`worker_module` loads a worker from its file so that the
tests reach its pure-Python helpers without the peer's venv.
"""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

import polars as pl

__all__ = ["dtype_from", "dtype_name", "worker_module"]


def dtype_name(dtype: pl.DataType) -> str:
    """The name of ``dtype``'s base type (``"Enum"``, ``"Int64"``, ...), for the worker's spec."""
    return dtype.base_type().__name__


def dtype_from(name: str, categories: list) -> pl.DataType:
    """The Polars dtype :func:`dtype_name` named; an ``Enum`` over ``categories`` (a ``None``
    entry, the null, left out)."""
    if name == "Enum":
        return pl.Enum([c for c in categories if c is not None])
    return getattr(pl, name)()


def worker_module(path: Path, name: str | None = None) -> types.ModuleType:
    """The worker script at ``path`` as a module (its top level imports the standard library and
    NumPy at most; its ``main()`` needs the peer's venv)."""
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
