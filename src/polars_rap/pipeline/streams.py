"""The random streams of one run, each a child of its seed.

Every stream is spawned from ``seed`` in a fixed order, so a seeded run is reproducible stream
by stream: the numeric ties' noise has a stream of its own, so that the loop's noise is the same
with and without them. Without a seed (a release) the streams that add privacy noise read the
operating system's cryptographic source instead (:class:`~polars_rap.privacy.samplers.SecureRandom`);
with one they are seeded PCG64 generators, predictable, for research and tests only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from polars_rap.privacy.samplers import SecureRandom

__all__ = ["RandomStreams"]


@dataclass(frozen=True, slots=True)
class RandomStreams:
    """One generator per use: ``workload`` (thresholds drawn), ``init`` (the relaxed rows'
    start), ``noise`` (the loop's measurements and selections), ``decode``, ``inference``,
    ``labels`` (a public label model's fit), ``reweight`` (the public rows' draws), ``ties`` and
    ``ranks`` (the numeric pairs' noise)."""

    workload: np.random.Generator
    init: np.random.Generator
    noise: Any
    decode: np.random.Generator
    inference: Any
    labels: np.random.Generator
    reweight: np.random.Generator
    ties: Any
    ranks: Any

    @classmethod
    def from_seed(cls, seed: int | None) -> RandomStreams:
        """The streams of a run seeded by ``seed`` (None: the noise streams are secure).

        >>> int(RandomStreams.from_seed(0).noise.integers(100)) == int(RandomStreams.from_seed(0).noise.integers(100))
        True
        >>> type(RandomStreams.from_seed(None).noise).__name__
        'SecureRandom'
        """
        # spawn(9)'s first eight children are spawn(8)'s: the ninth stream changes none of the others
        workload, init, noise, decode, inference, labels, reweight, ties, ranks = np.random.default_rng(seed).spawn(9)
        if seed is None:  # a release: the noise reads the OS's cryptographic source, no seed at all
            noise, inference, ties, ranks = SecureRandom(), SecureRandom(), SecureRandom(), SecureRandom()
        return cls(workload, init, noise, decode, inference, labels, reweight, ties, ranks)
