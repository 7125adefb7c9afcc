"""The gradient's gather index: for each coordinate of the relaxed matrix, the query factors
that read it (host side, NumPy; used by the CUDA backend, design.md §6).

The gradient of the loss with respect to ``X[r, c]`` is a sum over the *entries* of
coordinate ``c``: every categorical factor ``x_c`` of a query, and every term ``theta_t x_j``
of a halfspace with ``c = numeric_offset + j``. With the index, one GPU thread per
``(c, r)`` walks the entries of ``c`` and adds their terms in a register: each gradient
element is written once, with no read-modify-write of a shared buffer and no atomics, and the
threads of a warp (consecutive rows of one coordinate) follow the same entries.

Entry ``e`` of coordinate ``c`` (entries ``offsets[c]:offsets[c + 1]``, sorted by query):

- ``query[e]``: the query ``q``;
- ``halfspace[e]``: ``-1`` for a categorical factor, else the halfspace ``h`` of ``q``;
- ``slot[e]``: the factor's position in ``cat_coords`` (categorical) or in the theta arrays
  (the term ``t`` of ``h``: ``theta_index[t] == c - numeric_offset``);
- ``others[e, :]``: for a categorical factor of a query with no halfspace and at most
  ``MAX_FAST_FACTORS`` categorical factors, the query's other coordinates (``-1`` pads), so
  the term is ``w_q * prod X[r, others]`` without walking the query; ``others[e, 0] == -2``
  marks every other entry.

Queries with a halfspace over nullable numeric columns are left out (``scatter_queries``):
their gradient sums null patterns and goes through the per-query scatter kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from polars_rap.queries import QuerySet

__all__ = ["MAX_FAST_FACTORS", "GradientIndex", "gradient_index"]

#: Categorical factors of the largest query whose entries carry their other coordinates.
MAX_FAST_FACTORS = 4
_GENERIC = -2


@dataclass(frozen=True)
class GradientIndex:
    """See the module docstring; ``n_coords`` entries lists, ``n_entries`` entries in all."""

    offsets: np.ndarray  # int64[n_coords + 1]
    query: np.ndarray  # int32[n_entries]
    slot: np.ndarray  # int32[n_entries]
    halfspace: np.ndarray  # int32[n_entries]
    others: np.ndarray  # int32[n_entries, MAX_FAST_FACTORS - 1]
    scatter_queries: np.ndarray  # int64[n_scatter]: queries over nullable columns

    @property
    def longest(self) -> int:
        """Entries of the coordinate with the most."""
        return int(np.diff(self.offsets).max(initial=0))


def _owner(offsets: np.ndarray) -> np.ndarray:
    """int64[offsets[-1]]: the segment of each position of a CSR array."""
    return np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))


def gradient_index(queries: QuerySet) -> GradientIndex:
    """The gather index of ``queries`` (see the module docstring)."""
    m = queries.n_queries
    cat_offsets = np.asarray(queries.cat_offsets, dtype=np.int64)
    cat_coords = np.asarray(queries.cat_coords, dtype=np.int64)
    halfspace_offsets = np.asarray(queries.halfspace_offsets, dtype=np.int64)
    theta_offsets = np.asarray(queries.theta_offsets, dtype=np.int64)
    theta_index = np.asarray(queries.theta_index, dtype=np.int64)
    null_coord = np.asarray(queries.null_coord, dtype=np.int64)

    h_of_t = _owner(theta_offsets)
    q_of_h = _owner(halfspace_offsets)
    nullable_h = np.zeros(len(theta_offsets) - 1, dtype=bool)
    np.logical_or.at(nullable_h, h_of_t, null_coord[theta_index] >= 0)
    scatter = np.zeros(m, dtype=bool)
    np.logical_or.at(scatter, q_of_h, nullable_h)

    # categorical entries
    q_of_p = _owner(cat_offsets)
    keep_p = ~scatter[q_of_p]
    p = np.flatnonzero(keep_p)
    cat_q = q_of_p[p]
    n_cat = np.diff(cat_offsets)[cat_q]
    fast = (np.diff(halfspace_offsets)[cat_q] == 0) & (n_cat <= MAX_FAST_FACTORS)
    others = np.full((len(p), MAX_FAST_FACTORS - 1), _GENERIC, dtype=np.int64)
    position = p - cat_offsets[cat_q]
    for j in range(MAX_FAST_FACTORS - 1):
        other = j + (j >= position)  # the j-th factor of q after leaving this one out
        present = fast & (other < n_cat)
        others[fast, j] = -1
        others[present, j] = cat_coords[cat_offsets[cat_q[present]] + other[present]]
    # halfspace entries
    q_of_t = q_of_h[h_of_t]
    t = np.flatnonzero(~scatter[q_of_t])
    numeric_others = np.full((len(t), MAX_FAST_FACTORS - 1), _GENERIC, dtype=np.int64)

    coord = np.concatenate([cat_coords[p], queries.numeric_offset + theta_index[t]])
    query = np.concatenate([cat_q, q_of_t[t]])
    order = np.lexsort((query, coord))
    counts = np.bincount(coord, minlength=queries.n_coords)[: queries.n_coords]
    return GradientIndex(
        offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        query=query[order].astype(np.int32),
        slot=np.concatenate([p, t])[order].astype(np.int32),
        halfspace=np.concatenate([np.full(len(p), -1), h_of_t[t]])[order].astype(np.int32),
        others=np.ascontiguousarray(np.vstack([others, numeric_others])[order].astype(np.int32)),
        scatter_queries=np.flatnonzero(scatter).astype(np.int64),
    )
