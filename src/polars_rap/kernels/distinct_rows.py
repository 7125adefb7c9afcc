"""Count each distinct row once: exact answers over the rows' distinct values, weighted.

An exact answer reads only the columns its query names: a linear threshold reads the label
and the numeric columns, a mixed marginal one feature, the label and one numeric column. Real
tables repeat those few values constantly (acs-income-CA: 3,353 distinct (label, AGEP, JWMNP)
among 34,425 rows), so the exact kernels may count each distinct combination once, times the
number of rows that hold it, and get the same integer counts with far fewer evaluations.

:func:`footprint_plan` sorts the queries a kernel call would count into *footprints* (the
categorical and numeric columns they read, from the public query set alone), keeping the
footprints that hold enough work to pay for a pass over the rows. :func:`distinct_rows`
reduces the rows of one footprint to its distinct values (a Polars ``group_by``), with int64
multiplicities; columns outside the footprint are zero-filled, as no query of it reads them.
The counts stay whole numbers summed in int64, so answers equal the row-by-row counts to the
bit, whatever the order of the distinct rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from polars_rap.workload.queries import QuerySet, _ranges

__all__ = ["Footprint", "distinct_rows", "footprint_plan"]

#: Work units (marginal groups plus single queries) a footprint needs before its rows are
#: reduced: a reduction costs about one pass over the rows, as one marginal group does.
MIN_WORK = 16
#: Reduce only when the distinct rows are at most this share of the rows.
MAX_DISTINCT_SHARE = 0.5


@dataclass(frozen=True)
class Footprint:
    """The columns a set of queries reads: ``categorical`` (int64, indices into ``codes``'
    columns) and ``numeric`` (int64, into ``numerics``' columns); ``groups`` (int64) the
    marginal groups and ``queries`` (int64) the single queries that read exactly these."""

    categorical: np.ndarray
    numeric: np.ndarray
    groups: np.ndarray
    queries: np.ndarray


def footprint_plan(queries: QuerySet, groups: np.ndarray, csr: np.ndarray) -> list[Footprint]:
    """The footprints of ``groups`` (marginal groups counted whole) and ``csr`` (queries
    counted one by one) that hold at least :data:`MIN_WORK` units; the rest is left out (the
    caller counts it over all rows). Reads the query set only."""
    n_cat, n_num = len(queries.column_sizes), int(queries.n_numeric)
    first_of_group = queries.group_offsets[:-1][groups]
    units = np.concatenate([first_of_group, csr]).astype(np.int64)  # one query stands for each unit
    if len(units) == 0:
        return []
    reads = np.zeros((len(units), n_cat + n_num), dtype=bool)
    cat_lengths = queries.cat_offsets[units + 1] - queries.cat_offsets[units]
    cat_rows = np.repeat(np.arange(len(units)), cat_lengths)
    cat_items = _ranges(queries.cat_offsets[units], queries.cat_offsets[units + 1])
    reads[cat_rows, queries.coord_column[queries.cat_coords[cat_items]]] = True
    h_lengths = queries.halfspace_offsets[units + 1] - queries.halfspace_offsets[units]
    h_rows = np.repeat(np.arange(len(units)), h_lengths)
    halfspaces = _ranges(queries.halfspace_offsets[units], queries.halfspace_offsets[units + 1])
    t_lengths = queries.theta_offsets[halfspaces + 1] - queries.theta_offsets[halfspaces]
    t_rows = np.repeat(h_rows, t_lengths)
    thetas = _ranges(queries.theta_offsets[halfspaces], queries.theta_offsets[halfspaces + 1])
    reads[t_rows, n_cat + queries.theta_index[thetas]] = True
    packed = np.packbits(reads, axis=1, bitorder="little")  # uint8[n_units, ceil(columns / 8)]
    packed = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, first, inverse, counts = np.unique(packed, return_index=True, return_inverse=True, return_counts=True)
    keys, inverse = reads[first], inverse.ravel()
    plan = []
    for k in np.flatnonzero(counts >= MIN_WORK):
        members = np.flatnonzero(inverse == k)
        plan.append(Footprint(
            categorical=np.flatnonzero(keys[k, :n_cat]).astype(np.int64),
            numeric=np.flatnonzero(keys[k, n_cat:]).astype(np.int64),
            groups=groups[members[members < len(groups)]],
            queries=csr[members[members >= len(groups)] - len(groups)],
        ))
    return plan


def distinct_rows(codes: np.ndarray, numerics: np.ndarray, footprint: Footprint
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(codes, numerics, weights)`` of the distinct values of ``footprint``'s columns, or
    None when they are more than :data:`MAX_DISTINCT_SHARE` of the rows (no gain).

    ``codes`` int32[n_distinct, n_categorical_columns] and ``numerics``
    float64[n_distinct, n_numeric] hold the distinct combinations in the footprint's columns
    and 0 elsewhere; ``weights`` int64[n_distinct] how many rows hold each (summing to the
    rows). Numeric values compare by their float64 value (the scaled values ``encode`` gives).
    """
    n_rows = codes.shape[0]
    columns = {f"c{c}": codes[:, c] for c in footprint.categorical}
    columns.update({f"x{j}": numerics[:, j] for j in footprint.numeric})
    if not columns:
        return None
    distinct = pl.DataFrame(columns).group_by(list(columns)).len(name="rows")
    if distinct.height > MAX_DISTINCT_SHARE * n_rows:
        return None
    reduced_codes = np.zeros((distinct.height, codes.shape[1]), dtype=codes.dtype)
    reduced_numerics = np.zeros((distinct.height, numerics.shape[1]), dtype=numerics.dtype)
    for c in footprint.categorical:
        reduced_codes[:, c] = distinct.get_column(f"c{c}").to_numpy()
    for j in footprint.numeric:
        reduced_numerics[:, j] = distinct.get_column(f"x{j}").to_numpy()
    return reduced_codes, reduced_numerics, distinct.get_column("rows").to_numpy().astype(np.int64)
