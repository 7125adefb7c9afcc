"""Anchored decoding: rows placed by an unconditioned reference population's ranks.

After the categories are drawn, decoding moves the numeric values with steps that look at the
whole batch of decoded rows within each label value: the ``"label"`` coupling permutes each
column among them, the numeric ties hand the values out in the order of latent scores, the
histogram margins move each row by its rank, the rank pairs permute again. A row's value thus
depends on which other rows share its batch. An unconditioned sample is a batch drawn from the
whole fitted distribution; a *conditioned* sample (:mod:`polars_rap.decode.conditional`) is not,
and running the same steps among its rows alone gives a law that is not the unconditioned
sample's law given the condition (the rows of women would hand out only the values that
women's relaxed rows hold, and the histogram margins would pull any sample back to the whole
population's histogram).

Anchoring fixes the population: the batch is an unconditioned reference drawn as an
unconditioned sample is (the *anchors*, flagged by a boolean mask) together with the
conditioned rows, and every step computes its ranks, pools and fits among the anchors alone.
The anchors are decoded exactly as they would be without company; every other row takes the
value the anchors' step gives at its own position among them (its key's quantile among the
anchors' keys, :func:`placed`), so that its value given its categories follows the
unconditioned law. Post-processing of released values: no privacy cost.
"""

from __future__ import annotations

import numpy as np

from polars_rap.kernels.cpu_sampling import ranks_among

__all__ = ["placed", "quantiles_among"]


def quantiles_among(sorted_keys: np.ndarray, keys: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """float64[len(keys)] in ``(0, 1)``: each key's quantile among ``sorted_keys`` (float64[m],
    ascending, m >= 1), ``(below + U (equal + 1)) / (m + 1)`` with ``U`` uniform: a key that
    equals anchors falls anywhere among them, a continuous key uniformly in its gap."""
    m = len(sorted_keys)
    below, equal = ranks_among(sorted_keys, keys)
    return (below + rng.random(len(keys)) * (equal + 1)) / (m + 1)


def placed(sorted_keys: np.ndarray, sorted_values: np.ndarray, keys: np.ndarray,
           rng: np.random.Generator) -> np.ndarray:
    """float64[len(keys)]: the anchors' value at each key's position among their keys: the
    anchors hand out ``sorted_values`` (float64[m]) in the order of ``sorted_keys`` (float64[m],
    ascending), and a key between the anchors of ranks ``r`` and ``r + 1`` gets one of their
    two values (:func:`quantiles_among`; ``m`` >= 1).

    >>> placed(np.array([0.0, 1.0, 2.0]), np.array([10.0, 20.0, 30.0]), np.array([-5.0, 9.0]),
    ...        np.random.default_rng(0)).tolist()
    [10.0, 30.0]
    """
    m = len(sorted_keys)
    index = np.floor(quantiles_among(sorted_keys, keys, rng) * m).astype(np.int64)
    return sorted_values[np.clip(index, 0, m - 1)]
