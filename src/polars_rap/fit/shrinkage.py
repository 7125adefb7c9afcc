"""Shrinking noisy marginals toward conditional independence (empirical Bayes post-processing).

A categorical-marginal group over columns ``(A, B, C...)`` is a table ``y`` of normalised
counts measured once with Gaussian noise of known std ``sigma`` per cell. Most of its cells
carry the A-B *interaction* (given the trailing columns, e.g. the label), which no other
measured group shares, so the projection cannot average its noise away: it fits it. Where
the true interaction is weak against ``sigma``, a better estimate pulls the table toward its
own conditional-independence fit

    m[a, b, c] = y[a, +, c] * y[+, b, c] / y[+, +, c]

by the positive-part James-Stein factor

    y_hat = m + s * (y - m),   s = max(0, 1 - (d - 2) * sigma**2 / ||y - m||**2),

with ``d = (|A| - 1)(|B| - 1) prod |C|`` the interaction's degrees of freedom (the dimension
left once the ``A x C`` and ``B x C`` margins are fitted; to first order the noise in
``y - m`` has energy ``d * sigma**2``). James-Stein's estimate has lower expected squared
error than ``y`` itself for ``d >= 3`` whatever the true table, and ``s`` adapts per table:
near 1 where the interaction stands well above the noise, near 0 where it is noise.

Privacy: ``y_hat`` is a function of the released ``y`` and the public ``sigma`` only
(post-processing); it costs no budget and reads nothing private.
"""

from __future__ import annotations

import numpy as np

from polars_rap.fit.independence_prior import conditional_independence

__all__ = ["interaction_dof", "shrink_marginal"]


def interaction_dof(shape: tuple[int, ...]) -> int:
    """Degrees of freedom of the first two axes' interaction given the others: ``(a - 1)(b - 1)
    * prod(rest)``; 0 for a table with fewer than two axes."""
    if len(shape) < 2:
        return 0
    return (shape[0] - 1) * (shape[1] - 1) * int(np.prod(shape[2:], dtype=np.int64))


def shrink_marginal(noisy: np.ndarray, shape: tuple[int, ...], noise_std: float) -> tuple[np.ndarray, float]:
    """``(estimate, factor)``: ``noisy`` (float64[prod(shape)], cells in row-major order over
    ``shape``) pulled toward the independence of its first two axes given the rest, by the
    positive-part James-Stein ``factor`` in ``[0, 1]`` (1: unchanged). Tables with an
    interaction of fewer than 3 degrees of freedom are returned as they are (factor 1)."""
    noisy = np.asarray(noisy, dtype=np.float64)
    dof = interaction_dof(shape)
    if dof < 3 or noise_std <= 0.0:
        return noisy.copy(), 1.0
    independent = conditional_independence(noisy, shape)
    interaction = noisy - independent
    energy = float(np.square(interaction).sum())
    if energy <= 0.0:
        return independent, 0.0
    factor = max(0.0, 1.0 - (dof - 2) * noise_std**2 / energy)
    return independent + factor * interaction, factor
