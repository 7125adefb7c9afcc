"""Selection scores, exactly: each candidate group's L1 error in count units on a float grid
(:func:`selection_scores`), the public noise shift a noise-aware score subtracts
(:func:`noise_shift_counts`), and the record of a released selection that its bounds use
(:func:`selection_record`).

The scores are exact floats so that their stated sensitivity (2 for a marginal, 1 for a single
query, under replacing one row) holds for the very numbers the exact exponential mechanisms
(:mod:`polars_rap.privacy.selection`) read.
"""

from __future__ import annotations

import numpy as np

from polars_rap.workload.queries import QuerySet
from polars_rap.privacy.report import SelectionRecord

__all__ = ["expected_noise_l1", "noise_shift_counts", "selection_record", "selection_scores"]


def expected_noise_l1(l2_sensitivity: np.ndarray, sizes: np.ndarray, group_rho: float) -> np.ndarray:
    """float64[groups]: the expected L1 norm of each group's Gaussian noise if measured with
    ``group_rho``: ``sqrt(2/pi) * sigma * cells``, ``sigma = l2 / sqrt(2 rho)`` (per answer;
    ``l2_sensitivity`` float64[groups], ``sizes`` int[groups] answers per group). Public."""
    sigma = np.asarray(l2_sensitivity, dtype=np.float64) / np.sqrt(2.0 * group_rho)
    return np.sqrt(2.0 / np.pi) * sigma * np.asarray(sizes, dtype=np.float64)


def noise_shift_counts(l2_sensitivity: np.ndarray, sizes: np.ndarray, group_rho: float,
                       n_rows: int) -> np.ndarray:
    """float64[groups]: what a noise-aware score subtracts from each group's L1 error (count
    units): its :func:`expected_noise_l1` at ``group_rho``, in counts, capped at the group's
    largest possible error (``n_rows * cells``) and rounded to whole counts.

    Whole counts lie on the grid of :func:`selection_scores` (a multiple of ``2**-bits``,
    below ``n_rows * (cells + 1)``), so ``score - shift`` is exact too; the shift is public
    (sizes, sensitivities, the planned rho and n), so it leaves the score's sensitivity as is.
    """
    noise_counts = expected_noise_l1(l2_sensitivity, sizes, group_rho) * n_rows
    return np.rint(np.minimum(noise_counts, float(n_rows) * np.asarray(sizes, dtype=np.float64)))


def selection_scores(true_counts: np.ndarray, synthetic: np.ndarray, sizes: np.ndarray,
                     n_rows: int) -> np.ndarray:
    """float64[n_groups]: each group's L1 error in count units, exact floats.

    Score of group g: sum over its queries j of |c_j - r_j / 2**bits|, with c_j the true
    count (float64 holding an integer) and r_j = rint(n s_j 2**bits) the synthetic answer s_j
    (clipped to [0, 1]) on a grid of 2**-bits counts: a post-processing of public values,
    fixed before the true counts are read. Every term and sum is an integer multiple of
    2**-bits below 2**53 of them (``bits`` is chosen for that from n and the largest group),
    so the floats are exact; replacing one row moves c by one in at most two cells of a
    marginal (one for a single query), so a score moves by at most 2 (1) exactly.
    ``sizes``: int64[n_groups], queries per group, concatenated in group order.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    if len(sizes) == 0:
        return np.zeros(0)
    largest = int(sizes.max())
    bits = max(0, 52 - (n_rows * (largest + 1) + largest).bit_length())
    scale = float(1 << bits)
    grid = np.rint(np.clip(np.asarray(synthetic, dtype=np.float64), 0.0, 1.0) * (n_rows * scale))
    terms = np.abs(np.asarray(true_counts, dtype=np.float64) * scale - grid).astype(np.int64)
    sums = np.add.reduceat(terms, np.concatenate([[0], np.cumsum(sizes)[:-1]]))
    return sums.astype(np.float64) / scale


def selection_record(round_index, class_name, queries: QuerySet, candidates, synthetic,
                      selected_local, scale, noisy_parts, stds, lattice_step,
                      shift=None) -> SelectionRecord:
    """Keep what a Gumbel round released and compared against, for the unmeasured bounds
    (``shift``: float64[candidates] subtracted from the errors, answer units, or None)."""
    sizes = queries.group_sizes[candidates]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    gaps = np.array([
        np.abs(noisy - synthetic[starts[i]:starts[i + 1]]).sum()
        for i, noisy in zip(selected_local, noisy_parts, strict=True)
    ])
    return SelectionRecord(
        round=round_index, query_class=class_name, candidates=np.asarray(candidates, dtype=np.int64),
        candidate_answers=np.asarray(synthetic, dtype=np.float64), gumbel_scale=float(scale),
        selected=np.asarray(candidates[selected_local], dtype=np.int64),
        selected_gap=gaps, selected_std=np.asarray(stds, dtype=np.float64),
        selected_size=np.asarray(sizes[selected_local], dtype=np.int64), lattice_step=lattice_step,
        candidate_shift=None if shift is None else np.asarray(shift, dtype=np.float64),
    )
