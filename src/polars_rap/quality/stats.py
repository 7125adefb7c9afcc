"""One pass of counts and sums over a table, from which the quality report's distances,
associations and workload errors follow exactly (:mod:`polars_rap.quality.report`).

:class:`TableStats` adds one batch at a time, keeping only:

- a categorical column: the count of each declared category (and of the null);
- a numeric column: the null count, a histogram over its public bounds (for the plots) and,
  for the Kolmogorov–Smirnov distance, an :class:`EmpiricalCdf`: the counts of values below
  and at or below each distinct synthetic value. Both empirical CDFs are step functions;
  between two consecutive synthetic values the synthetic CDF is constant while the real one
  rises, so the largest gap is reached at a synthetic value or just below one, and
  :func:`ks_statistic` is exact (the one KS implementation: :mod:`polars_rap.quality.evaluation`'s
  numeric metric uses it too);
- a pair of columns: a contingency table (categorical × categorical), per-category counts,
  sums and sums of squares (categorical × numeric), co-moment sums (numeric × numeric), from
  which :func:`association` gives Cramér's V, the correlation ratio or Pearson's r;
- a numeric column's :class:`~polars_rap.quality.shape.ValueShape` (whole numbers, skewness),
  for the declaration hints;
- optionally the workload's exact answers (a kernel backend's ``answers_exact``) and a
  uniform sample of rows (the ones with the smallest uniform keys).

Numeric values are clipped to their declared bounds, as synthesis sees them; NaN is a null.
Temporal columns are read in days or microseconds (:mod:`polars_rap.schema.temporal`); pair
statistics use values scaled linearly by the bounds, whatever the column's declared scale.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import encode
from polars_rap.schema.encoding import numeric_values as _internal_values
from polars_rap.schema.transforms import scale_points
from polars_rap.quality.shape import ValueShape
from polars_rap.workload.queries import QuerySet

__all__ = ["EmpiricalCdf", "TableStats", "association", "bin_edges", "ks_distance", "ks_points",
           "ks_statistic", "pair_sums"]

N_BINS = 60
"""Most histogram bins over a numeric column's bounds, for the plots."""
_CONSTANT = 1e-12
"""A sum of squares at or below this fraction of the row count is a constant column."""
ANSWER_CHUNK_ROWS = 1_000_000
"""Encoded rows (about 100 MB for 20 columns) gathered before the workload's answers are
counted: a table's (label, numerics) values repeat, and each call counts its distinct ones once."""


def ks_points(frame: pl.DataFrame, domain: Domain) -> dict[str, np.ndarray]:
    """float64[m]: the distinct non-null synthetic values of each numeric column, sorted."""
    return {spec.name: np.unique(numeric_values(frame.get_column(spec.name), spec)) for spec in domain.numeric_columns}


def numeric_values(column: pl.Series, spec) -> np.ndarray:
    """float64[n_present]: the non-null, non-NaN values of ``column`` in its internal units
    (days or microseconds for temporal dtypes), clipped to its bounds."""
    values = _internal_values(column, spec)
    values = values[~np.isnan(values)]
    return np.clip(values, spec.lower, spec.upper)


class EmpiricalCdf:
    """Counts of values below and at or below each of sorted ``points`` (float64[m]), added
    batch by batch: the empirical CDF at and just below every point, without keeping values.

    >>> cdf = EmpiricalCdf(np.array([1.0, 2.0]))
    >>> cdf.add(np.array([0.5, 1.0, 2.0, 3.0]))
    >>> cdf.n_values, cdf.at()
    (4, (array([0.5 , 0.75]), array([0.25, 0.5 ])))
    """

    def __init__(self, points: np.ndarray) -> None:
        self.points = np.asarray(points, dtype=np.float64)
        self.n_values = 0
        self.below = np.zeros(self.points.size + 1)
        self.at_or_below = np.zeros(self.points.size + 1)

    def add(self, values: np.ndarray) -> None:
        """Count float64 ``values`` (no NaN)."""
        # A value v counts in "at or below p" for every point p >= v, in "below p" for p > v.
        self.at_or_below += np.bincount(np.searchsorted(self.points, values, "left"), minlength=self.points.size + 1)
        self.below += np.bincount(np.searchsorted(self.points, values, "right"), minlength=self.points.size + 1)
        self.n_values += values.size

    def at(self) -> tuple[np.ndarray, np.ndarray]:
        """float64[m] each: the fraction of values at or below, and below, each point."""
        count = max(self.n_values, 1)
        return np.cumsum(self.at_or_below)[:-1] / count, np.cumsum(self.below)[:-1] / count


def ks_statistic(real: EmpiricalCdf, synthetic: EmpiricalCdf) -> float:
    """sup |F_real - F_synthetic| when both count values at the same points, which include
    every distinct synthetic value (see the module docstring); 1 when only one has values, 0
    when neither has.

    >>> real, synthetic = EmpiricalCdf(np.array([1.0, 2.0])), EmpiricalCdf(np.array([1.0, 2.0]))
    >>> real.add(np.array([1.0, 1.5, 3.0])); synthetic.add(np.array([1.0, 2.0]))
    >>> round(ks_statistic(real, synthetic), 6)
    0.333333
    """
    if not (real.n_values and synthetic.n_values):
        return float(bool(real.n_values) != bool(synthetic.n_values))
    real_le, real_lt = real.at()
    synthetic_le, synthetic_lt = synthetic.at()
    return float(max(np.abs(real_le - synthetic_le).max(), np.abs(real_lt - synthetic_lt).max()))


class TableStats:
    """Counts and sums of one table, added batch by batch (see the module docstring).

    Parameters
    ----------
    domain : Domain
        The public domain every batch is encoded with (a value outside it raises).
    points : dict of str to float64[m]
        Per numeric column, the sorted values at which the CDFs are compared (:func:`ks_points`).
    queries : QuerySet or None
        A workload whose exact answers to count, or None.
    backend : module or None
        The kernel backend counting ``queries``.
    sample_rows : int
        Size of the uniform row sample to keep (0: none).
    rng : np.random.Generator
        Draws the sample's keys.
    """

    def __init__(self, domain: Domain, points, queries: QuerySet | None, backend, sample_rows: int, rng) -> None:
        self.domain, self.points, self.queries, self.backend = domain, points, queries, backend
        self.sample_rows, self.rng = sample_rows, rng
        self.n_rows = 0
        self.category_counts = {c.name: np.zeros(c.n_codes) for c in domain.columns if c.is_categorical}
        self.null_counts = {c.name: 0 for c in domain.numeric_columns}
        self.edges = {c.name: bin_edges(c) for c in domain.numeric_columns}
        self.histograms = {c.name: np.zeros(self.edges[c.name].size - 1) for c in domain.numeric_columns}
        self.cdfs = {name: EmpiricalCdf(p) for name, p in points.items()}
        self.shapes = {c.name: ValueShape(c.lower, c.upper) for c in domain.numeric_columns}  # declaration hints
        self.pair_totals: dict[tuple[str, str], np.ndarray] = {}
        self._answer_counts = None if queries is None else np.zeros(queries.n_queries)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []  # encoded rows not counted yet
        self.sample: pl.DataFrame | None = None
        self.sample_keys = np.empty(0)

    def add(self, batch: pl.DataFrame) -> None:
        encoded = encode(batch, self.domain, clip_counts={})  # raises for data outside the domain
        columns = {}
        for spec in self.domain.columns:
            if spec.is_categorical:
                codes = encoded.codes[:, self.domain.block_index(spec.name)]
                self.category_counts[spec.name] += np.bincount(codes, minlength=spec.n_codes)
                columns[spec.name] = (codes, None)
            else:
                present = np.ones(batch.height, dtype=bool)
                if spec.nullable:
                    present = encoded.codes[:, self.domain.block_index(spec.name, indicator=True)] == 0
                self._add_numeric(spec, batch.get_column(spec.name))
                columns[spec.name] = (_linear(batch.get_column(spec.name), spec), present)
        self._add_pairs(columns)
        if self._answer_counts is not None:
            self._pending.append((encoded.codes, encoded.numerics))
            if sum(len(codes) for codes, _ in self._pending) >= ANSWER_CHUNK_ROWS:
                self._count_pending()
        if self.sample_rows:
            self._add_sample(batch)
        self.n_rows += batch.height

    @property
    def answer_counts(self) -> np.ndarray | None:
        """float64[n_queries]: rows satisfying each workload query so far (None: no workload)."""
        if self._answer_counts is not None:
            self._count_pending()
        return self._answer_counts

    def _count_pending(self) -> None:
        """Count the encoded rows kept since the last call, together: the CPU kernels count a
        footprint's distinct values once per call, so larger calls repeat less work."""
        if not self._pending:
            return
        codes = np.concatenate([codes for codes, _ in self._pending])
        numerics = np.concatenate([numerics for _, numerics in self._pending])
        self._pending = []
        self._answer_counts += np.rint(self.backend.answers_exact(codes, numerics, self.queries) * len(codes))

    def _add_numeric(self, spec, column: pl.Series) -> None:
        values = numeric_values(column, spec)
        self.null_counts[spec.name] += column.len() - values.size
        self.histograms[spec.name] += np.histogram(values, bins=self.edges[spec.name])[0]
        self.cdfs[spec.name].add(values)
        self.shapes[spec.name].add(values)

    def _add_pairs(self, columns: dict) -> None:
        names = self.domain.names
        for i, name_a in enumerate(names):
            for name_b in names[i + 1:]:
                values_a, present_a = columns[name_a]
                values_b, present_b = columns[name_b]
                sums = pair_sums(self.domain[name_a], values_a, present_a, self.domain[name_b], values_b, present_b)
                key = (name_a, name_b)
                self.pair_totals[key] = sums if key not in self.pair_totals else self.pair_totals[key] + sums

    def _add_sample(self, batch: pl.DataFrame) -> None:
        """Keep the rows with the ``sample_rows`` smallest uniform keys: a uniform sample."""
        keys = np.concatenate([self.sample_keys, self.rng.random(batch.height)])
        rows = batch if self.sample is None else pl.concat([self.sample, batch], how="vertical_relaxed")
        if rows.height > self.sample_rows:
            keep = np.sort(np.argpartition(keys, self.sample_rows - 1)[: self.sample_rows])
            rows, keys = rows[keep], keys[keep]
        self.sample, self.sample_keys = rows, keys

    def sample_frame(self, real) -> pl.DataFrame:
        """The real rows to train on: all of an in-memory frame that fits, else the sample."""
        if isinstance(real, pl.DataFrame) and real.height <= self.sample_rows:
            return real.select(self.domain.names)
        return self.sample

    def null_rate(self, spec) -> float:
        if spec.is_categorical:
            return float(self.category_counts[spec.name][-1] / self.n_rows) if spec.nullable else 0.0
        return self.null_counts[spec.name] / self.n_rows


def _linear(column: pl.Series, spec) -> np.ndarray:
    """float64[n_rows]: ``column`` clipped and scaled linearly to [0, 1] by its bounds (a null
    as 0), for pair statistics in the column's own units whatever its declared map."""
    values = np.clip(_internal_values(column, spec), spec.lower, spec.upper)
    return np.nan_to_num((values - spec.lower) / (spec.upper - spec.lower), nan=0.0)


def pair_sums(spec_a, values_a, present_a, spec_b, values_b, present_b) -> np.ndarray:
    """The sufficient statistics of one pair in one batch (see :func:`_association`)."""
    if spec_a.is_categorical and spec_b.is_categorical:
        cells = values_a.astype(np.int64) * spec_b.n_codes + values_b
        return np.bincount(cells, minlength=spec_a.n_codes * spec_b.n_codes).astype(np.float64)
    if spec_a.is_categorical or spec_b.is_categorical:
        codes, n_codes, x, present = ((values_a, spec_a.n_codes, values_b, present_b) if spec_a.is_categorical
                                      else (values_b, spec_b.n_codes, values_a, present_a))
        codes, x = codes[present], x[present]
        return np.concatenate([np.bincount(codes, minlength=n_codes), np.bincount(codes, x, n_codes),
                               np.bincount(codes, x * x, n_codes)]).astype(np.float64)
    both = present_a & present_b
    x, y = values_a[both], values_b[both]
    return np.array([x.size, x.sum(), y.sum(), x @ x, y @ y, x @ y], dtype=np.float64)


def bin_edges(spec) -> np.ndarray:
    """float64[n_bins + 1] over the bounds, equal steps on the column's declared scale (a log
    column's bins widen toward its upper bound); whole-number bins centred on the integers of
    an integer column (bins that straddle integers unevenly draw a comb)."""
    if spec.scale != "linear":
        edges = scale_points(np.linspace(0.0, 1.0, N_BINS + 1), spec.lower, spec.upper, spec.scale)
        if spec.is_integer:  # whole-number edges, at least one integer per bin
            edges = np.unique(np.concatenate([[spec.lower - 0.5], np.floor(edges[1:-1]) + 0.5, [spec.upper + 0.5]]))
        return edges
    if spec.is_integer:
        width = max(1, math.ceil((spec.upper - spec.lower + 1) / N_BINS))
        n_bins = math.ceil((spec.upper - spec.lower + 1) / width)
        return spec.lower - 0.5 + width * np.arange(n_bins + 1, dtype=np.float64)
    return np.linspace(spec.lower, spec.upper, N_BINS + 1)


def association(spec_a, spec_b, sums: np.ndarray) -> tuple[str, float]:
    """(measure, value) of one pair: Cramér's V (categorical pair), the correlation ratio
    (categorical and numeric) or Pearson's r (numeric pair). A constant column, or no rows,
    associates with nothing: 0."""
    if spec_a.is_categorical and spec_b.is_categorical:
        table = sums.reshape(spec_a.n_codes, spec_b.n_codes)
        table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
        n_total = table.sum()
        if min(table.shape) < 2:
            return "Cramer's V", 0.0
        expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n_total
        chi2 = float(((table - expected) ** 2 / expected).sum())
        return "Cramer's V", min(1.0, math.sqrt(chi2 / n_total / (min(table.shape) - 1)))
    if spec_a.is_categorical or spec_b.is_categorical:
        counts, totals, squares = np.split(sums, 3)
        n_total, total = counts.sum(), totals.sum()
        if n_total == 0:
            return "correlation ratio", 0.0
        ss_total = squares.sum() - total * total / n_total
        filled = counts > 0
        ss_between = (totals[filled] ** 2 / counts[filled]).sum() - total * total / n_total
        if ss_total <= _CONSTANT * n_total:
            return "correlation ratio", 0.0
        return "correlation ratio", math.sqrt(min(1.0, max(0.0, ss_between / ss_total)))
    n_total, sx, sy, sxx, syy, sxy = sums
    if n_total == 0:
        return "Pearson", 0.0
    var_x, var_y = sxx - sx * sx / n_total, syy - sy * sy / n_total
    if var_x <= _CONSTANT * n_total or var_y <= _CONSTANT * n_total:
        return "Pearson", 0.0
    return "Pearson", max(-1.0, min(1.0, (sxy - sx * sy / n_total) / math.sqrt(var_x * var_y)))


def ks_distance(name: str, real: TableStats, synthetic: TableStats) -> float:
    """sup |F_real - F_synthetic| over non-null values of column ``name`` (:func:`ks_statistic`)."""
    return ks_statistic(real.cdfs[name], synthetic.cdfs[name])
