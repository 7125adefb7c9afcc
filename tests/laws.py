"""Exact laws the privacy tests compare samplers against (a helper module, not a test file)."""

from __future__ import annotations

import itertools

import numpy as np


def plackett_luce(scores: np.ndarray, scale: float, k: int) -> dict[tuple[int, ...], float]:
    """Exact law of ordered draws without replacement with weights exp(score / scale): that of
    one-shot Gumbel top-k (the Gumbel-max trick) and of k peeling exponential mechanisms."""
    weights = np.exp((scores - scores.max()) / scale)
    law = {}
    for order in itertools.permutations(range(len(scores)), k):
        probability, remaining = 1.0, weights.sum()
        for index in order:
            probability *= weights[index] / remaining
            remaining -= weights[index]
        law[order] = probability
    return law
