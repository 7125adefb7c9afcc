"""Decoding's per-row kernels on the CPU: categorical codes by inverse-CDF sampling
(:func:`block_cdfs`, :func:`draw_codes`), the stratified uniforms of controlled decoding
(:func:`stratify_column`), a batch's places among sorted anchors (:func:`ranks_among`), the
numeric ties' latent scores (:func:`tie_scores`) and their backfit (:func:`backfit_step`). Each
makes the same float64 operations in the same order as its NumPy form, so both give the same
rows bit for bit.

Codes: for output row ``r`` of relaxed row ``i = rows[r]`` and a block of coordinates
``start:stop``, the probabilities ``p_k = max(relaxed[i, start + k], 0) * mask_k`` (``mask`` one
row for all, or one per relaxed row; none: 1), their running sums ``c_k`` (left to right), and
the code is the number of ``k`` with ``c_k / c_last < u_r`` (``c_k / 1`` where ``c_last`` is 0),
at most ``stop - start - 1`` (:func:`codes_reference`). The normalised sums are computed once
per relaxed row and block, then each output row searches its relaxed row's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numba import njit, prange

__all__ = ["backfit_step", "value_then_key_order", "block_cdfs", "codes_reference", "draw_codes", "entries_by_row", "ranks_among",
           "stratify_column", "tie_scores"]


def block_cdfs(relaxed: np.ndarray, slices: Sequence[slice],
               masks: Mapping[int, np.ndarray] | None = None) -> np.ndarray:
    """float64[n_relaxed, slices[-1].stop]: each relaxed row's normalised running sums
    ``c_k / c_last`` within each block ``b`` of ``slices`` (contiguous blocks of coordinates from
    0; module docstring), its probabilities times ``masks[b]`` (float64[1 or n_relaxed, width])
    where given. ``relaxed`` float32 or float64[n_relaxed, >= slices[-1].stop]."""
    relaxed = np.ascontiguousarray(relaxed, dtype=np.float64)
    out = np.empty((relaxed.shape[0], slices[-1].stop if slices else 0), dtype=np.float64)
    for b, block in enumerate(slices):
        mask = None if masks is None else masks.get(b)
        mask = np.ones((1, block.stop - block.start)) if mask is None else np.ascontiguousarray(mask, dtype=np.float64)
        _cdf(relaxed, block.start, block.stop, mask, out)
    return out


def draw_codes(cdfs: np.ndarray, slices: Sequence[slice], rows: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """int32[len(rows), len(slices)]: each output row's code in each block, the count of its
    relaxed row's normalised sums (``cdfs``, :func:`block_cdfs`) below its uniform
    (``uniforms`` float64[len(rows), >= len(slices)] in ``[0, 1)``, any layout), at most the
    block's width less one. ``rows`` int64[n], indices into ``cdfs``."""
    bounds = np.array([[block.start, block.stop] for block in slices], dtype=np.int64).reshape(-1, 2)
    out = np.empty((len(rows), len(slices)), dtype=np.int32)
    _draw(cdfs, bounds, np.ascontiguousarray(rows, dtype=np.int64), uniforms, out)
    return out


def codes_reference(relaxed: np.ndarray, rows: np.ndarray, start: int, stop: int, uniform: np.ndarray,
                    mask: np.ndarray | None = None) -> np.ndarray:
    """The codes of one block ``start:stop`` in NumPy (module docstring): the reference
    :func:`block_cdfs` and :func:`draw_codes` are tested against. ``uniform`` float64[len(rows)],
    ``mask`` float64[1 or n_relaxed, stop - start] or None."""
    probs = np.clip(relaxed[rows, start:stop], 0.0, None)
    if mask is not None:
        probs = probs * (mask if mask.shape[0] == 1 else mask[rows])
    cumulative = np.cumsum(probs, axis=1)
    total = cumulative[:, -1:]
    cumulative /= np.where(total > 0, total, 1.0)
    chosen = (cumulative < uniform[:, None]).sum(axis=1)
    return np.minimum(chosen, stop - start - 1).astype(np.int32)


@njit(parallel=True, cache=True)
def _cdf(relaxed, start, stop, mask, out):
    """out[:, start:stop]: each relaxed row's normalised running sums in the block (one pass for
    the total, one for the sums in the same order, so the same floats)."""
    width = stop - start
    per_row = mask.shape[0] > 1
    for i in prange(relaxed.shape[0]):
        m = np.int64(i) if per_row else np.int64(0)
        total = 0.0
        for k in range(width):
            total += max(relaxed[i, start + k], 0.0) * mask[m, k]
        divisor = total if total > 0.0 else 1.0
        running = 0.0
        for k in range(width):
            running += max(relaxed[i, start + k], 0.0) * mask[m, k]
            out[i, start + k] = running / divisor


@njit(parallel=True, cache=True)
def _draw(cdfs, bounds, rows, uniforms, out):
    """Per output row and block, a binary search for the first normalised sum not below its
    uniform: the count of sums below it, as the sums never decrease (running sums of
    probabilities times 0/1 masks, divided by one positive total)."""
    for r in prange(len(rows)):
        row = cdfs[rows[r]]
        for b in range(bounds.shape[0]):
            start, stop = bounds[b, 0], bounds[b, 1]
            u = uniforms[r, b]
            low, high = start, stop
            while low < high:
                middle = (low + high) >> 1
                if row[middle] < u:
                    low = middle + 1
                else:
                    high = middle
            out[r, b] = min(low - start, stop - start - 1)


def stratify_column(order: np.ndarray, starts: np.ndarray, counts: np.ndarray, uniform: np.ndarray,
                    offset: np.ndarray, out: np.ndarray) -> None:
    """Write ``out[e] = (rank + offset[i]) / counts[i]`` (float64[n]) for every entry ``e`` of
    relaxed row ``i``, where ``rank`` is ``e``'s place among the entries of ``i`` in ascending
    ``uniform`` (float64[n]; equal uniforms keep the entries' order): the controlled decoding's
    stratified uniforms, one column (:func:`~polars_rap.decode.decoding.stratified_uniforms`).
    ``order`` (int64[n]) lists
    the entries grouped by relaxed row, the entries of ``i`` at ``starts[i]:starts[i] +
    counts[i]`` (:func:`entries_by_row`); ``offset`` float64[len(counts)]; ``out`` contiguous."""
    _stratify(order, starts, counts, uniform, offset, out)


def entries_by_row(rows: np.ndarray, n_relaxed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order int64[len(rows)], starts int64[n_relaxed], counts int64[n_relaxed]): the entries of
    ``rows`` (int64, relaxed-row indices below ``n_relaxed``) grouped by relaxed row in a counting
    sort, each group in position order, at ``order[starts[i]:starts[i] + counts[i]]``."""
    counts = np.bincount(rows, minlength=n_relaxed).astype(np.int64)
    starts = np.cumsum(counts) - counts
    return _group_entries(np.ascontiguousarray(rows, dtype=np.int64), starts), starts, counts


@njit(cache=True)
def _group_entries(rows, starts):
    fill = starts.copy()
    order = np.empty(len(rows), dtype=np.int64)
    for e in range(len(rows)):
        order[fill[rows[e]]] = e
        fill[rows[e]] += 1
    return order


@njit(parallel=True, cache=True)
def _stratify(order, starts, counts, uniform, offset, out):
    """Each relaxed row's entries sorted by their uniforms and given their strata. The sort is a
    bucket sort (``c`` entries into ``c`` buckets by ``floor(u c)``, each bucket by insertion),
    expected O(c) for uniform keys; both parts are stable, so equal uniforms keep position order
    as a lexsort would. Groups are taken in contiguous runs, one scratch buffer per run."""
    n_groups = len(counts)
    widest = 0
    for i in range(n_groups):
        widest = max(widest, counts[i])
    n_runs = min(n_groups, 64)
    for run in prange(n_runs):
        fill = np.empty(widest + 1, dtype=np.int64)
        ranked = np.empty(widest, dtype=np.int64)
        keys = np.empty(widest, dtype=np.float64)  # the group's uniforms, gathered once
        for i in range(run * n_groups // n_runs, (run + 1) * n_groups // n_runs):
            c = counts[i]
            if c == 0:
                continue
            entries = order[starts[i]:starts[i] + c]
            for t in range(c):
                keys[t] = uniform[entries[t]]
            fill[:c + 1] = 0
            for t in range(c):
                fill[_bucket(keys[t], c) + 1] += 1
            for b in range(c):
                fill[b + 1] += fill[b]
            for t in range(c):
                b = _bucket(keys[t], c)
                ranked[fill[b]] = t
                fill[b] += 1
            for t in range(1, c):  # insertion sort: each bucket is in place after the buckets before
                e = ranked[t]
                key = keys[e]
                s = t - 1
                while s >= 0 and keys[ranked[s]] > key:
                    ranked[s + 1] = ranked[s]
                    s -= 1
                ranked[s + 1] = e
            for rank in range(c):
                out[entries[ranked[rank]]] = (np.float64(rank) + offset[i]) / np.float64(c)


@njit(cache=True, inline="always")
def _bucket(u, c):
    """``floor(u c)`` within ``0 .. c - 1`` (a product that rounds up to ``c`` stays in the last)."""
    return min(np.int64(u * c), c - 1)


def ranks_among(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(below int64[n], equal int64[n]): for each of ``keys`` (float64[n]) the number of
    ``sorted_keys`` (float64[m], ascending) below it and equal to it: NumPy's
    ``searchsorted(side="left")`` and ``side="right"`` minus it (NaN sorted last, as NumPy
    does), the keys searched in parallel."""
    below = np.empty(len(keys), dtype=np.int64)
    equal = np.empty(len(keys), dtype=np.int64)
    _ranks_among(np.ascontiguousarray(sorted_keys, dtype=np.float64), np.ascontiguousarray(keys, dtype=np.float64),
                 below, equal)
    return below, equal


@njit(cache=True, inline="always")
def _less(a, b):
    """NumPy's sort order: NaN after every number."""
    return a < b or (b != b and a == a)


@njit(parallel=True, cache=True)
def _ranks_among(sorted_keys, keys, below, equal):
    m = len(sorted_keys)
    for r in prange(len(keys)):
        key = keys[r]
        low, high = 0, m  # first index whose key is not below ``key``
        while low < high:
            middle = (low + high) >> 1
            if _less(sorted_keys[middle], key):
                low = middle + 1
            else:
                high = middle
        first = low
        high = m  # first index whose key is above ``key``: none to seek unless one equals it
        if first == m or _less(key, sorted_keys[first]):
            high = low
        while low < high:
            middle = (low + high) >> 1
            if _less(key, sorted_keys[middle]):
                high = middle
            else:
                low = middle + 1
        below[r] = first
        equal[r] = low - first


def tie_scores(codes: np.ndarray, numerics: np.ndarray, rows: np.ndarray, tables: np.ndarray, betas: np.ndarray,
               null_blocks: np.ndarray, bins: int, noise: np.ndarray) -> np.ndarray:
    """float64[len(rows)]: ``noise`` (float64[len(rows)]) plus, for row ``r = rows[i]``, the sum
    over tie tables (in order, from 0.0) of ``betas[offset + v * L + c]``, one table per row of
    ``tables`` (int64[T, 4]: feature ``a``, label block ``l``, its code count ``L``, ``offset``
    into ``betas``): ``c`` is ``codes[r, l]`` and ``v`` the row's code of feature ``a``, block
    ``a`` of ``codes`` (int32[n, n_blocks]) below ``n_blocks``, else numeric ``k = a -
    n_blocks``'s equal bin of ``numerics[r, k]`` (float64[n, n_numeric], mapped to ``[0, 1]``;
    ``bins`` bins as :func:`~polars_rap.schema.transforms.equal_bin` cuts them), ``bins`` where
    its null indicator block ``null_blocks[k]`` (int64; -1: not nullable) holds 1. The same
    float64 additions in the same order as NumPy's ``noise + sum(beta[cell] for ...)``."""
    return _tie_scores(np.ascontiguousarray(codes), np.ascontiguousarray(numerics, dtype=np.float64),
                       np.ascontiguousarray(rows, dtype=np.int64), np.ascontiguousarray(tables, dtype=np.int64),
                       np.ascontiguousarray(betas, dtype=np.float64), np.ascontiguousarray(null_blocks, dtype=np.int64),
                       bins, np.ascontiguousarray(noise, dtype=np.float64))


@njit(parallel=True, cache=True)
def _tie_scores(codes, numerics, rows, tables, betas, null_blocks, bins, noise):
    n_blocks = codes.shape[1]
    out = np.empty(len(rows), dtype=np.float64)
    for i in prange(len(rows)):
        r = rows[i]
        total = 0.0
        for t in range(tables.shape[0]):
            a = tables[t, 0]
            if a < n_blocks:
                v = np.int64(codes[r, a])
            elif null_blocks[a - n_blocks] >= 0 and codes[r, null_blocks[a - n_blocks]] == 1:
                v = np.int64(bins)
            else:
                x = min(max(numerics[r, a - n_blocks], 0.0), 1.0)
                v = min(np.int64(np.floor(x * bins)), bins - 1)
            total += betas[tables[t, 3] + v * tables[t, 2] + codes[r, tables[t, 1]]]
        out[i] = noise[i] + total
    return out


def backfit_step(cells: np.ndarray, block: np.ndarray, offsets: np.ndarray, counts: np.ndarray, current: np.ndarray,
                 targets: np.ndarray, beta: np.ndarray, step: float, spread: float, score: np.ndarray) -> None:
    """One step of the numeric ties' backfit for the tables ``block`` (int64 indices into
    ``cells``, int64[n_tables, n]: each row's cell per table), all from one assignment
    ``current`` (float64[n]): table ``i``'s cell ``c`` (at ``offsets[i] + c`` of ``counts``,
    int64, ``targets`` and ``beta``, float64) steps by ``step * (target - mean) / spread``,
    ``mean`` its rows' mean of ``current`` (none where it holds no rows), added to ``beta`` and
    to each row's ``score`` (float64[n]) table by table in block order. In place; the sums run
    in row order, as ``np.bincount`` adds them."""
    _backfit_step(np.ascontiguousarray(cells), np.asarray(block, dtype=np.int64), offsets, counts, current, targets,
                  beta, float(step), float(spread), score)


@njit(parallel=True, cache=True)
def _backfit_step(cells, block, offsets, counts, current, targets, beta, step, spread, score):
    n = cells.shape[1]
    steps = np.zeros(offsets[-1])
    for a in prange(len(block)):  # each table's sums in row order, tables in parallel
        i = block[a]
        lo = offsets[i]
        sums = np.zeros(offsets[i + 1] - lo)
        for r in range(n):
            sums[cells[i, r]] += current[r]
        for c in range(len(sums)):
            if counts[lo + c] > 0:
                mean = sums[c] / np.float64(counts[lo + c])
                steps[lo + c] = step * (targets[lo + c] - mean) / spread
    for a in range(len(block)):
        i = block[a]
        for k in range(offsets[i], offsets[i + 1]):
            beta[k] += steps[k]
    for r in prange(n):
        total = score[r]
        for a in range(len(block)):
            i = block[a]
            total += steps[offsets[i] + cells[i, r]]
        score[r] = total


def value_then_key_order(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """int64[m]: ``np.lexsort((keys, values))`` (by value, equal values by key, then by position)
    to the element: the keys' quicksort, then a stable sort of the values in that order, two to
    three times faster than the lexsort on random keys; where two keys are equal (the quicksort
    would leave their order open) the keys' stable sort instead. NumPy, not Numba."""
    by_key = np.argsort(keys)
    ordered_keys = keys[by_key]
    if np.any(ordered_keys[1:] == ordered_keys[:-1]):
        by_key = np.argsort(keys, kind="stable")
    return by_key[np.argsort(values[by_key], kind="stable")]
