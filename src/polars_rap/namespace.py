"""The ``dp`` namespace on Polars DataFrames and LazyFrames: thin methods over
:func:`polars_rap.synthesize`, registered when the package is imported."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from polars_rap.pipeline.synthesis import synthesize
from polars_rap.pipeline.result import SynthesisResult

__all__ = ["DataFrameDP", "LazyFrameDP"]


@pl.api.register_dataframe_namespace("dp")
class DataFrameDP:
    """``df.dp``: differentially private synthesis of this frame."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self._frame = frame

    def synthesize(
        self,
        *,
        epsilon: float,
        delta: float,
        domain: Mapping[str, Any] | None = None,
        labels: Sequence[str] = (),
        rows: int | None = None,
        seed: int | None = None,
        backend: str = "auto",
        public: pl.DataFrame | pl.LazyFrame | str | os.PathLike | None = None,
        **options: Any,
    ) -> SynthesisResult:
        """RAP++ synthetic data of this frame; see :func:`polars_rap.synthesize` (``public``: a
        public table of this frame's columns or a subset, a prior at no privacy cost)."""
        return synthesize(self._frame, epsilon=epsilon, delta=delta, domain=domain,
                          labels=labels, rows=rows, seed=seed, backend=backend, public=public,
                          **options)


@pl.api.register_lazyframe_namespace("dp")
class LazyFrameDP:
    """``lf.dp``: differentially private synthesis of this query's result."""

    def __init__(self, frame: pl.LazyFrame) -> None:
        self._frame = frame

    def synthesize(
        self,
        *,
        epsilon: float,
        delta: float,
        domain: Mapping[str, Any] | None = None,
        labels: Sequence[str] = (),
        rows: int | None = None,
        seed: int | None = None,
        backend: str = "auto",
        public: pl.DataFrame | pl.LazyFrame | str | os.PathLike | None = None,
        **options: Any,
    ) -> SynthesisResult:
        """RAP++ synthetic data of this lazy frame; see :func:`polars_rap.synthesize` (``public``:
        a public table of its columns or a subset, a prior at no privacy cost)."""
        return synthesize(self._frame, epsilon=epsilon, delta=delta, domain=domain,
                          labels=labels, rows=rows, seed=seed, backend=backend, public=public,
                          **options)
