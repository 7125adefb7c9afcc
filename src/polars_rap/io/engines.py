"""Which engine reads the sensitive input: this process (:class:`~polars_rap.io.source.DataSource`)
or a Ray cluster (:class:`~polars_rap.io.ray_engine.RaySource`), chosen from the ``engine``
parameter and the input's type."""

from __future__ import annotations

from collections.abc import Mapping

from polars_rap.errors import ParameterError
from polars_rap.io.source import DataSource

__all__ = ["ENGINES", "open_source"]

ENGINES = ("auto", "polars", "ray")
"""Values of ``synthesize(engine=...)``: ``"polars"`` reads in this process, ``"ray"`` counts
per block on a Ray cluster (:mod:`polars_rap.io.ray_engine`), ``"auto"`` picks Ray for a Ray
Dataset and Polars for everything else."""


def open_source(data, domain: Mapping[str, object] | None = None, engine: str = "auto"):
    """The sensitive input as a :class:`DataSource` (read in this process) or, for a Ray
    Dataset or ``engine="ray"``, a :class:`~polars_rap.io.ray_engine.RaySource` (read per block
    on the cluster). Both offer ``schema``, ``inference_counts`` and :func:`exact_answers`.
    ``domain`` (the user's ``domain=`` mapping) types the columns whose input has no type of its
    own (a CSV file's, columns of Python objects), never their values.

    >>> import polars as pl
    >>> open_source(pl.DataFrame({"x": [1]})).schema
    Schema([('x', Int64)])
    """
    if not isinstance(engine, str) or engine not in ENGINES:
        msg = f"The 'engine' parameter must be one of {list(ENGINES)}. Got {engine!r}"
        raise ParameterError(msg)
    is_dataset = any(cls.__module__.startswith("ray.data") and cls.__name__ == "Dataset"
                     for cls in type(data).__mro__)  # without importing Ray (an optional extra)
    if engine == "ray" or (engine == "auto" and is_dataset):
        from polars_rap.io.ray_engine import RaySource

        return RaySource.from_input(data, domain=domain)
    if is_dataset:
        msg = "a Ray Dataset is read by the Ray engine: pass engine='ray' (or 'auto'), not 'polars'"
        raise TypeError(msg)
    return DataSource.from_input(data, domain)
