"""Histogram margins: decoded numeric columns moved toward their released histograms.

The projection places each relaxed row's numeric value with sigmoid thresholds whose sharpness
stops at a finite inverse temperature: on acs-income-CA one minute of commute time is 0.005 of
JWMNP's mapped range, so at the last stage (512) a row at 10 minutes counts only 0.78 below 10.5
and the fit cannot pin rows on a heap (10, 15, 30 minutes); decoding keeps what the relaxed rows
hold. The numeric histograms (:mod:`polars_rap.fit.numeric_histograms`) released each column's
distribution within each label value, heaps included.

Where a run released histograms, every decoded block's numeric values are moved,
within each label value and among the rows whose value is not null, to a target distribution on
the histogram's edges ``t_1 < ... < t_K``: the released prefixes ``P(label = y, x <= t_k)``, less
the block's own share of rows of that label whose value is null (a null reads as 0, below every
edge), over what is left, give the histogram's CDF ``H_k`` with noise std ``s_k``; the target
is the rows' own CDF clipped to ``H_k +- Z s_k`` (``Z`` = :data:`HISTOGRAM_MATCH`; 0: ``H`` itself), made
nondecreasing (pool adjacent violators). Each row keeps its rank: the row of rank ``r`` of
``n`` goes to the cell its quantile ``(r + 1/2) / n`` falls in (cells of an integer column's
histogram are its whole values, their edges half-integers, so decoding's rounding keeps the
cell). Ranks keep whatever dependence the coupling left between the columns, to the cell.

Within its cell every value is a uniform point of the cell, wherever the relaxed row had put it:
no release says where inside a cell the rows lie, and the relaxed rows' positions there are
an artefact of the fit that tree models learn as signal. On sdnist-national one cell of person
weights (51-100) held 41% of the rows; the decoded rows of one label sat in its upper half and
the other's in its lower, where the real rows are spread alike, and gradient boosting trained
on them lost 0.07 of macro F1 (``bench/results/ablation_cell_redraw_generalization.md``).

Post-processing: the released prefixes and their public stds, the public edges and the decoded
rows. It costs no budget and reads nothing private. A saved model keeps the targets
(``histogram_margins.arrow``, :meth:`HistogramMargins.to_frame`) and applies them to every
block it samples or writes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from polars_rap.decode.anchors import quantiles_among
from polars_rap.kernels.cpu_sampling import value_then_key_order
from polars_rap.schema.domain import Domain
from polars_rap.fit.numeric_histograms import _label_block, _threshold_column, histogram_runs
from polars_rap.workload.queries import QueryClass, QuerySet
from polars_rap.schema.transforms import equal_bin, to_unit

__all__ = ["HISTOGRAM_MATCH", "HistogramMargins", "histogram_margins", "monotone"]

HISTOGRAM_MATCH = 1.0
"""``Z``: the decoded rows' own distribution is clipped to this many noise stds of each released
histogram's. Against no move, 3 seeds on both headline datasets at eps 0.25 and 1
(``bench/results/ablation_histogram_match.md``): MM 0.90-0.98x and LT 0.91-0.97x in every cell,
the numeric KS 0.57x (acs-income-CA) and 0.70x (Adult) at eps 1 and 0.98-1.02x at 0.25, CM
unchanged, macro F1 -0.001 on Adult; 0.5 moves more (MM 0.86-0.96x) for F1 -0.002 to -0.003 on
Adult."""


def monotone(values: np.ndarray) -> np.ndarray:
    """float64[k]: the nondecreasing sequence closest to ``values`` in squared error (pool
    adjacent violators, equal weights).

    >>> monotone(np.array([0.1, 0.3, 0.2, 0.4])).tolist()
    [0.1, 0.25, 0.25, 0.4]
    """
    means: list[float] = []
    counts: list[int] = []
    for value in np.asarray(values, dtype=np.float64):
        means.append(float(value))
        counts.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            total = counts[-2] + counts[-1]
            means[-2:] = [(means[-2] * counts[-2] + means[-1] * counts[-1]) / total]
            counts[-2:] = [total]
    return np.repeat(np.asarray(means), counts)


@dataclass(frozen=True, slots=True, eq=False)
class HistogramMargins:
    """The released histograms a decoding moves its numeric columns toward (module docstring).

    ``band`` is ``Z`` (noise stds; 0: the histograms' own CDF). Per histogram ``h``:
    ``columns[h]`` its numeric column (index among the domain's numeric columns),
    ``label_blocks[h]`` its label block (-1: the column alone), ``edges[h]`` float64[K] its
    upper edges on the mapped ``[0, 1]`` coordinate, ``prefixes[h]`` float64[K, L] the released
    ``P(label = code, x <= edge)`` and ``stds[h]`` float64[K] their noise stds. Only the first
    label block's histograms of a column are kept: one ranking per column."""

    band: float
    columns: tuple[int, ...]
    label_blocks: tuple[int, ...]
    edges: tuple[np.ndarray, ...]
    prefixes: tuple[np.ndarray, ...]
    stds: tuple[np.ndarray, ...]

    def apply(self, codes: np.ndarray, numerics: np.ndarray, domain: Domain, rng: np.random.Generator,
              anchor: np.ndarray | None = None) -> np.ndarray:
        """float64[n, n_numeric]: ``numerics`` (decoded rows' mapped values; ``codes``
        int32[n, n_blocks] their categories and null indicators) moved toward the histograms.
        With ``anchor`` (bool[n], :mod:`polars_rap.decode.anchors`) the anchors alone give the
        rows' own distribution and null share, and every other row moves by its value's quantile
        among the anchors'."""
        out = np.array(numerics, dtype=np.float64, copy=True)
        n_rows = len(codes)
        n_anchors = n_rows if anchor is None else int(np.count_nonzero(anchor))
        for h, j in enumerate(self.columns):
            spec = domain.numeric_columns[j]
            null = (codes[:, domain.block_index(spec.name, indicator=True)] == 1) if spec.nullable \
                else np.zeros(n_rows, dtype=bool)
            block = self.label_blocks[h]
            label = codes[:, block] if block >= 0 else np.zeros(n_rows, dtype=np.int64)
            for code in range(self.prefixes[h].shape[1]):
                rows = np.flatnonzero((label == code) & ~null)
                if not len(rows):
                    continue
                if anchor is None:
                    out[rows, j] = self._moved(h, code, out[rows, j], np.count_nonzero((label == code) & null) / n_rows,
                                               rng)
                elif n_anchors and anchor[rows].any():
                    null_share = np.count_nonzero((label == code) & null & anchor) / n_anchors
                    out[rows, j] = self._moved(h, code, out[rows, j], null_share, rng, anchor[rows])
        return out

    def _moved(self, h: int, code: int, values: np.ndarray, null_share: float, rng: np.random.Generator,
               anchor: np.ndarray | None = None) -> np.ndarray:
        """float64[m]: one label value's non-null ``values`` moved to histogram ``h``'s target
        (``anchor``: bool[m], the rows whose ranks set the move)."""
        edges, prefix = self.edges[h], self.prefixes[h][:, code]
        mass = float(prefix[-1]) - null_share
        if not mass > 0.0:
            return values
        target, std = (prefix - null_share) / mass, self.stds[h] / mass
        if anchor is None:
            order = value_then_key_order(values, rng.random(len(values)))  # ascending, ties in random order
            own = np.searchsorted(values[order], edges, side="right") / len(values)
            low, high = self._cells(edges, own, target, std, (np.arange(len(values)) + 0.5) / len(values))
            moved = np.empty_like(values)
            moved[order] = low + rng.random(len(values)) * (high - low)
            return moved
        anchors = values[anchor]
        order = value_then_key_order(anchors, rng.random(len(anchors)))
        sorted_anchors = anchors[order]
        own = np.searchsorted(sorted_anchors, edges, side="right") / len(anchors)
        quantile = quantiles_among(sorted_anchors, values, rng)
        quantile[np.flatnonzero(anchor)[order]] = (np.arange(len(anchors)) + 0.5) / len(anchors)
        low, high = self._cells(edges, own, target, std, quantile)
        return low + rng.random(len(values)) * (high - low)

    def _cells(self, edges: np.ndarray, own: np.ndarray, target: np.ndarray, std: np.ndarray,
               quantile: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(float64[m] low, float64[m] high): the cell of the target distribution (``own``, the
        rows' CDF at the edges, clipped to ``target +- band std``, made monotone) that each
        row's ``quantile`` falls in."""
        target = np.clip(own, target - self.band * std, target + self.band * std)
        target = np.clip(monotone(target), 0.0, 1.0)
        target[-1] = 1.0
        cell = np.minimum(np.searchsorted(target, quantile), len(edges) - 1)
        return np.concatenate([[0.0], edges[:-1]])[cell], edges[cell]

    def binned(self, domain: Domain, column: int, label_block: int, bins: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The released histogram of numeric ``column`` within ``label_block`` regrouped into
        ``bins`` equal bins of its mapped ``[0, 1]`` (:func:`~polars_rap.schema.transforms.equal_bin`):
        (float64[bins, L] shares of the rows by bin and label code, a null in bin 0 as in the
        histogram; float64[bins, L] their noise variances), or None where the column has no
        histogram of that label block.

        Each cell's mass is split over the bins as its values are: an integer column's whole
        values (the histogram's cells hold whole values, so none is split), else uniformly over
        the cell's width. The variances take the cells as independent, each with the first
        prefix's (one cell's) variance: exact for a flat release, an overstatement for a tree's
        sums of many cells. Post-processing of the release and the public edges."""
        if column not in self.columns or self.label_blocks[self.columns.index(column)] != label_block:
            return None
        h = self.columns.index(column)
        edges = np.asarray(self.edges[h], dtype=np.float64)
        cells = np.diff(self.prefixes[h], axis=0, prepend=0.0)  # [K, L]
        shares = _cell_bin_shares(domain.numeric_columns[column], edges, bins)  # [K, bins]
        variance = (shares**2).sum(axis=0)[:, None] * float(self.stds[h][0]) ** 2
        return shares.T @ cells, np.broadcast_to(variance, (bins, cells.shape[1])).copy()

    def to_frame(self, domain: Domain) -> pl.DataFrame:
        """One row per (histogram, label code, edge): ``column``, ``label`` (null: none),
        ``code``, ``edge`` (mapped), ``prefix``, ``std`` and ``band``: what a saved model keeps."""
        parts = []
        for h, j in enumerate(self.columns):
            k, n_codes = self.prefixes[h].shape
            block = self.label_blocks[h]
            parts.append(pl.DataFrame({
                "column": [domain.numeric_columns[j].name] * (k * n_codes),
                "label": [domain.blocks[block].source if block >= 0 else None] * (k * n_codes),
                "code": np.repeat(np.arange(n_codes), k).astype(np.int32),
                "edge": np.tile(self.edges[h], n_codes),
                "prefix": self.prefixes[h].T.ravel(),
                "std": np.tile(self.stds[h], n_codes),
                "band": [self.band] * (k * n_codes),
            }, schema={"column": pl.String, "label": pl.String, "code": pl.Int32, "edge": pl.Float64,
                       "prefix": pl.Float64, "std": pl.Float64, "band": pl.Float64}))
        return pl.concat(parts)

    @classmethod
    def from_frame(cls, frame: pl.DataFrame, domain: Domain) -> HistogramMargins:
        """The margins :meth:`to_frame` wrote, for the ``domain`` it was written with."""
        names = [spec.name for spec in domain.numeric_columns]
        columns, blocks, edges, prefixes, stds = [], [], [], [], []
        for (column, label), part in frame.group_by("column", "label", maintain_order=True):
            part = part.sort("code", "edge")
            n_codes = part["code"].n_unique()
            k = part.height // n_codes
            columns.append(names.index(column))
            blocks.append(domain.block_index(label) if label is not None else -1)
            edges.append(part["edge"].to_numpy()[:k].copy())
            prefixes.append(part["prefix"].to_numpy().reshape(n_codes, k).T.copy())
            stds.append(part["std"].to_numpy()[:k].copy())
        return cls(float(frame["band"][0]), tuple(columns), tuple(blocks), tuple(edges), tuple(prefixes), tuple(stds))


WHOLE_VALUES_LISTED = 2_000_000
"""An integer column with at most this many whole values has each one placed in its bin
(:meth:`HistogramMargins.binned`); a wider one is spread uniformly over each cell."""


def _cell_bin_shares(spec, edges: np.ndarray, bins: int) -> np.ndarray:
    """float64[K, bins]: the share of histogram cell ``k`` (``edges[k - 1] < x <= edges[k]``,
    the first from 0) that lies in each of ``bins`` equal bins of ``[0, 1]`` (module docstring of
    :meth:`HistogramMargins.binned`); rows sum to 1 (0 for a cell holding no whole value)."""
    out = np.zeros((len(edges), bins))
    first, last = math.ceil(spec.lower), math.floor(spec.upper)
    if spec.is_integer and last - first + 1 <= WHOLE_VALUES_LISTED:
        x = to_unit(np.arange(first, last + 1, dtype=np.float64), spec)
        cell = np.minimum(np.searchsorted(edges, x, side="left"), len(edges) - 1)
        np.add.at(out, (cell, equal_bin(x, bins)), 1.0)
    else:
        lows = np.concatenate([[0.0], edges[:-1]])
        for b in range(bins):
            out[:, b] = np.clip(np.minimum(edges, (b + 1) / bins) - np.maximum(lows, b / bins), 0.0, None)
    total = out.sum(axis=1, keepdims=True)
    return np.divide(out, total, out=np.zeros_like(out), where=total > 0)


def histogram_margins(record, queries: QuerySet, band: float = HISTOGRAM_MATCH) -> HistogramMargins | None:
    """The margins of ``record``'s released numeric histograms (its ``"NH"`` prefix groups, a
    :class:`~polars_rap.fit.loop_record.LoopRecord`) at ``band`` (``Z``), or None without
    histograms."""
    measured = {int(g): (np.asarray(noisy, dtype=np.float64), float(std))
                for g, noisy, std in zip(record.groups, record.noisy_parts, record.noise_stds, strict=True)
                if queries.group_class[g] == QueryClass.NUMERIC_HISTOGRAM}
    if not measured:
        return None
    columns, blocks, edges, prefixes, stds = [], [], [], [], []
    for run in histogram_runs(queries, np.array(sorted(measured), dtype=np.int64)):
        column, block = int(_threshold_column(queries, run[:1])[0]), _label_block(queries, int(run[0]))
        if column in columns:  # one ranking per column: its first label block's histogram
            continue
        columns.append(column)
        blocks.append(block)
        halfspaces = queries.halfspace_offsets[queries.group_offsets[run]]
        edges.append(queries.tau[halfspaces].astype(np.float64))
        prefixes.append(np.stack([measured[int(g)][0] for g in run]))
        stds.append(np.array([measured[int(g)][1] for g in run]))
    return HistogramMargins(float(band), tuple(columns), tuple(blocks), tuple(edges), tuple(prefixes), tuple(stds))
